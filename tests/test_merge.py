"""graph.merge: reinforce, keep opposites apart, supersede with a link, one transaction per card."""

from datetime import datetime, timezone

import numpy as np
import pytest

from reverie.consolidate.store import open_db
from reverie.graph import relations
from reverie.graph.embed import Embedder, LexicalEmbedder, Model2VecEmbedder
from reverie.graph.entities import known_entities
from reverie.graph.merge import EVIDENCE_CAP, MergeSession, merge_card
from reverie.graph.model import EntityRef, Evidence, NewCard, RelationRef

from locations import SHARED_MODEL

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def model():
    if not SHARED_MODEL.exists():
        pytest.skip("../shared/models/minilm-l6-m2v-256 not present")
    return Model2VecEmbedder(SHARED_MODEL)


def card(statement, session="s1", said_at="2025-01-01T10:00:00Z", **kw):
    kw.setdefault("category", "preference")
    kw.setdefault("confidence", 0.9)
    kw.setdefault("evidence", [Evidence(session, 10, 11, said_at, "user:1")])
    return NewCard(statement=statement, session=session, said_at=said_at, **kw)


def rows(db, sql, *args):
    return [tuple(r) for r in db.conn.execute(sql, args).fetchall()]


def test_same_point_in_three_sessions_reinforces_one_card(db, model):
    session = MergeSession(db, embedder=model)
    texts = ["Use pnpm instead of npm for installing packages in this repo.",
             "In this repo, install packages with pnpm rather than npm.",
             "use pnpm instead of npm for installing packages in this repo"]
    results = [session.merge(card(t, f"s{i}", f"2025-01-0{i}T10:00:00Z", confidence=0.9), now=NOW)
               for i, t in enumerate(texts, 1)]
    assert [(r.action, r.card_id) for r in results] == [("inserted", 1), ("reinforced", 1), ("reinforced", 1)]
    assert rows(db, "SELECT id, sessions, status, said_at, last_seen_at, confidence, original_confidence FROM cards") == [
        (1, 3, "active", "2025-01-01T10:00:00.000Z", "2025-01-03T10:00:00.000Z", 0.9, 0.9)]
    assert rows(db, "SELECT card_id, session, said_at FROM card_sessions ORDER BY session") == [
        (1, "s1", "2025-01-01T10:00:00.000Z"), (1, "s2", "2025-01-02T10:00:00.000Z"), (1, "s3", "2025-01-03T10:00:00.000Z")]
    assert rows(db, "SELECT card_id, conversation, message_from, message_to FROM evidence ORDER BY id") == [
        (1, "s1", 10, 11), (1, "s2", 10, 11), (1, "s3", 10, 11)]


def test_same_session_again_counts_once(db):
    first = merge_card(db, card("Run make lint before committing."), now=NOW)
    again = merge_card(db, card("Run make lint before committing."), now=NOW)
    assert (first.action, again.action, again.card_id) == ("inserted", "unchanged", first.card_id)
    assert rows(db, "SELECT sessions FROM cards") == [(1,)]
    assert rows(db, "SELECT count(*) FROM evidence") == [(1,)]


def test_rule_and_its_opposite_stay_apart_and_the_newer_supersedes(db, model):
    session = MergeSession(db, embedder=model)
    a = session.merge(card("Use pnpm instead of npm", "s1", "2025-01-01T10:00:00Z"), now=NOW)
    b = session.merge(card("Never use pnpm, use npm", "s2", "2025-02-01T10:00:00Z"), now=NOW)
    assert (a.action, b.action, b.superseded) == ("inserted", "superseded", [a.card_id])
    assert rows(db, "SELECT id, statement, status, superseded_by, sessions FROM cards ORDER BY id") == [
        (1, "Use pnpm instead of npm", "superseded", 2, 1),
        (2, "Never use pnpm, use npm", "active", None, 1)]


def test_opposite_processed_out_of_order_is_stored_already_superseded(db, model):
    session = MergeSession(db, embedder=model)
    newer = session.merge(card("Never use pnpm, use npm", "s2", "2025-02-01T10:00:00Z"), now=NOW)
    older = session.merge(card("Use pnpm instead of npm", "s1", "2025-01-01T10:00:00Z"), now=NOW)
    assert (newer.action, older.action) == ("inserted", "outdated")
    assert rows(db, "SELECT id, status, superseded_by FROM cards ORDER BY id") == [
        (1, "active", None), (2, "superseded", 1)]


def test_superseded_rule_restated_later_comes_back(db, model):
    session = MergeSession(db, embedder=model)
    session.merge(card("Use pnpm instead of npm", "s1", "2025-01-01T10:00:00Z"), now=NOW)
    session.merge(card("Never use pnpm, use npm", "s2", "2025-02-01T10:00:00Z"), now=NOW)
    back = session.merge(card("Use pnpm instead of npm.", "s3", "2025-03-01T10:00:00Z"), now=NOW)
    assert (back.action, back.card_id, back.revived, back.superseded) == ("reinforced", 1, True, [2])
    assert rows(db, "SELECT id, status, superseded_by, sessions FROM cards ORDER BY id") == [
        (1, "active", None, 2), (2, "superseded", 1, 1)]


class _Misleading(Embedder):
    """An embedder whose vectors say nothing (random): exact text must still be found."""

    kind = "model2vec"
    dim = 64

    @property
    def id(self):
        return "test:random:64"

    def encode(self, texts):
        rng = np.random.default_rng(len(texts) * 7919 + sum(map(len, texts)))
        v = rng.normal(size=(len(texts), self.dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_exact_and_near_exact_text_found_whatever_the_embedding_says(db):
    session = MergeSession(db, embedder=_Misleading())
    for i in range(30):
        session.merge(card(f"Service number{i} writes its logs to bucket logs-{i}.", f"x{i}"), now=NOW)
    a = session.merge(card("Deploys to production go through the release workflow.", "s1"), now=NOW)
    b = session.merge(card("deploys to production go through the release workflow", "s2"), now=NOW)
    c = session.merge(card("Deploys to production go through the release workflows!", "s3"), now=NOW)
    assert (a.action, b.action, c.action) == ("inserted", "reinforced", "reinforced")
    assert b.card_id == c.card_id == a.card_id
    assert rows(db, "SELECT sessions FROM cards WHERE id = ?", a.card_id) == [(3,)]


def test_evidence_is_capped(db):
    for i in range(EVIDENCE_CAP + 5):
        merge_card(db, card("Keep pull requests under 400 changed lines.", f"s{i}",
                            evidence=[Evidence(f"s{i}", 1, 2, "2025-01-01T10:00:00Z", "user:1")]), now=NOW)
    assert rows(db, "SELECT sessions, confidence FROM cards") == [(EVIDENCE_CAP + 5, 0.9)]
    assert rows(db, "SELECT count(*) FROM evidence") == [(EVIDENCE_CAP,)]


def test_reinforcement_restores_confidence_up_to_the_original(db):
    first = merge_card(db, card("Run make lint before committing.", confidence=0.7), now=NOW)
    db.conn.execute("UPDATE cards SET confidence = 0.45 WHERE id = ?", (first.card_id,))
    db.conn.commit()
    merge_card(db, card("Run make lint before committing.", "s2", confidence=1.0), now=NOW)
    merge_card(db, card("Run make lint before committing.", "s3"), now=NOW)
    merge_card(db, card("Run make lint before committing.", "s4"), now=NOW)
    (conf, orig), = rows(db, "SELECT confidence, original_confidence FROM cards")
    assert (round(conf, 6), orig) == (0.7, 0.7)


def test_bad_cards_are_rejected_not_raised(db):
    results = [merge_card(db, c, now=NOW) for c in (
        card("   "), card("x", category="gossip"), card("x", said_at="yesterday"), card("x", session=""))]
    assert [(r.action, r.reason) for r in results] == [
        ("rejected", "empty statement"), ("rejected", "unknown category 'gossip'"),
        ("rejected", "said_at is not an ISO-8601 timestamp"), ("rejected", "no session")]
    assert rows(db, "SELECT count(*) FROM cards") == [(0,)]


def test_entities_and_relations_are_linked(db):
    res = merge_card(db, card(
        "The billing-worker depends on the redis queue at redis-01.", category="fact",
        entities=[EntityRef("billing-worker", "service"), EntityRef("redis-01", "host"), EntityRef("config", "other")],
        relations=[RelationRef("billing-worker", "depends_on", "redis-01"),
                   RelationRef("billing-worker", "likes", "redis-01"),
                   RelationRef("billing-worker", "uses", "the database")]), now=NOW)
    assert (res.action, res.statements, res.dropped) == (
        "inserted", 1, {"generic entity": 2, "unknown verb": 1, "relation to a generic word": 1})
    assert rows(db, "SELECT id, name, type FROM entities ORDER BY id") == [(1, "billing-worker", "service"), (2, "redis-01", "host")]
    assert rows(db, "SELECT card_id, entity_id FROM card_entities ORDER BY entity_id") == [(1, 1), (1, 2)]
    assert rows(db, "SELECT subject_id, verb, object_id, holds, weight FROM relations") == [(1, "depends_on", 2, 1, 1)]


def test_crash_between_card_and_relation_insert_leaves_db_consistent(db, monkeypatch):
    session = MergeSession(db, embedder=LexicalEmbedder())
    ok = session.merge(card("auth-service runs on mini-lola.", "s1", category="fact",
                            entities=[EntityRef("auth-service", "service"), EntityRef("mini-lola", "host")],
                            relations=[RelationRef("auth-service", "runs_on", "mini-lola")]), now=NOW)
    before = {t: rows(db, f"SELECT * FROM {t}") for t in
              ("cards", "card_sessions", "evidence", "entities", "entity_aliases", "card_entities",
               "relation_statements", "relations")}

    def boom(*args, **kwargs):
        raise RuntimeError("injected crash between card and relation insert")

    monkeypatch.setattr(relations, "add_statements", boom)
    with pytest.raises(RuntimeError):
        session.merge(card("billing-worker runs on prod-k8s.", "s2", category="fact",
                           entities=[EntityRef("billing-worker", "service"), EntityRef("prod-k8s", "host")],
                           relations=[RelationRef("billing-worker", "runs_on", "prod-k8s")]), now=NOW)
    after = {t: rows(db, f"SELECT * FROM {t}") for t in before}
    assert after == before
    assert rows(db, "SELECT count(*) FROM cards_fts WHERE cards_fts MATCH 'billing'") == [(0,)]
    monkeypatch.undo()
    # the same session object still works and the card goes in whole
    again = session.merge(card("billing-worker runs on prod-k8s.", "s2", category="fact",
                               entities=[EntityRef("billing-worker", "service"), EntityRef("prod-k8s", "host")],
                               relations=[RelationRef("billing-worker", "runs_on", "prod-k8s")]), now=NOW)
    assert (ok.card_id, again.action, again.card_id) == (1, "inserted", 2)
    assert rows(db, "SELECT s.name, r.verb, o.name, r.holds FROM relations r JOIN entities s ON s.id = r.subject_id "
                    "JOIN entities o ON o.id = r.object_id ORDER BY s.name") == [
        ("auth-service", "runs_on", "mini-lola", 1), ("billing-worker", "runs_on", "prod-k8s", 1)]


def test_merge_inside_callers_transaction_uses_a_savepoint(db):
    conn = db.conn
    conn.execute("BEGIN")
    merge_card(db, card("Run make lint before committing."), now=NOW)
    conn.execute("INSERT INTO progress(conversation, last_message_id) VALUES ('s1', 5)")
    conn.rollback()
    assert rows(db, "SELECT count(*) FROM cards") == [(0,)]
    assert rows(db, "SELECT count(*) FROM progress") == [(0,)]


def test_session_sees_cards_added_by_another_connection(db, tmp_path):
    session = MergeSession(db, embedder=LexicalEmbedder())
    other = open_db(tmp_path / "agent.db")
    merge_card(other, card("Format Python code with ruff format, not black.", "s1"), now=NOW)
    other.close()
    res = session.merge(card("Format Python code with ruff format, not black", "s2"), now=NOW)
    assert (res.action, res.card_id) == ("reinforced", 1)


def test_vectors_are_stored_as_float32_of_the_embedder(db, model):
    merge_card(db, card("Use httpx instead of requests."), now=NOW, embedder=model)
    blob, = rows(db, "SELECT vector FROM cards")[0]
    vec = np.frombuffer(blob, dtype="<f4")
    assert vec.shape == (model.dim,)
    assert np.allclose(vec, model.encode_one("Use httpx instead of requests."), atol=1e-6)
    assert rows(db, "SELECT value FROM graph_meta WHERE key = 'embedder'") == [(model.id,)]


def test_known_entities_lists_names_and_aliases(db):
    merge_card(db, card("auth-service runs on the mini-lola host.", category="fact",
                        entities=[EntityRef("auth-service", "service"), EntityRef("the mini-lola host", "host")]), now=NOW)
    merge_card(db, card("MiniLola has 16 GB of RAM.", "s2", category="fact",
                        entities=[EntityRef("MiniLola", "host")]), now=NOW)
    assert known_entities(db) == [("mini-lola", "host"), ("MiniLola", "host"), ("auth-service", "service")]
