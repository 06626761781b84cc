"""graph.forget and `reverie forget`: delete on request, never learn it again from the same source."""

import json
from datetime import datetime, timezone

from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate.paths import agent_db_path
from reverie.consolidate.store import open_db
from reverie.graph import forget
from reverie.graph.merge import MergeSession
from reverie.graph.model import EntityRef, Evidence, NewCard, RelationRef

NOW = datetime(2025, 3, 1, tzinfo=timezone.utc)


def host_card(session="s1", source_key="k-s1-p3"):
    return NewCard(
        statement="auth-service runs on the mini-lola host.", category="fact", confidence=0.9, session=session,
        said_at="2025-01-10T09:00:00Z", source_key=source_key,
        entities=[EntityRef("auth-service", "service"), EntityRef("the mini-lola host", "host")],
        relations=[RelationRef("auth-service", "runs_on", "the mini-lola host")],
        evidence=[Evidence(session, 3, 4, "2025-01-10T09:00:00Z", "user:3")])


def other_card():
    return NewCard(statement="billing-worker depends on redis-01.", category="fact", confidence=0.9, session="s2",
                   said_at="2025-01-11T09:00:00Z", source_key="k-s2-p1",
                   entities=[EntityRef("billing-worker", "service"), EntityRef("redis-01", "host")],
                   relations=[RelationRef("billing-worker", "depends_on", "redis-01")])


def counts(db):
    return {t: db.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in
            ("cards", "evidence", "card_sessions", "card_entities", "entities", "entity_aliases",
             "relation_statements", "relations", "forgotten")}


def test_forget_card_then_merge_the_same_card_again_is_refused(db):
    s = MergeSession(db)
    a = s.merge(host_card(), now=NOW)
    s.merge(other_card(), now=NOW)
    out = forget.forget_cards(db, [a.card_id], now="2025-03-02T00:00:00.000Z")
    assert out == {"cards": 1, "evidence": 1, "statements": 1, "reactivated": 0, "entities": 2, "hashes": 2, "episodes": 0}
    assert counts(db) == {"cards": 1, "evidence": 0, "card_sessions": 1, "card_entities": 2, "entities": 2,
                          "entity_aliases": 2, "relation_statements": 1, "relations": 1, "forgotten": 2}
    again = s.merge(host_card(), now=NOW)
    assert (again.action, again.card_id) == ("forgotten", None)
    # the same passages rewritten differently by another writer: refused by the source key
    reworded = host_card()
    reworded.statement = "The auth service is hosted on mini-lola."
    assert s.merge(reworded, now=NOW).action == "forgotten"
    assert counts(db)["cards"] == 1
    # what is stored is a hash, never the text
    assert [len(h) for (h,) in db.conn.execute("SELECT hash FROM forgotten")] == [64, 64]
    assert db.conn.execute("SELECT count(*) FROM forgotten WHERE hash LIKE '%mini%'").fetchone()[0] == 0


def test_forget_entity_removes_it_and_everything_about_it(db):
    s = MergeSession(db)
    s.merge(host_card(), now=NOW)
    s.merge(host_card("s5", "k-s5"), now=NOW)
    s.merge(other_card(), now=NOW)
    eid = db.conn.execute("SELECT id FROM entities WHERE norm = 'mini-lola'").fetchone()[0]
    out = forget.forget_entity(db, eid, now="2025-03-02T00:00:00.000Z")
    assert out == {"cards": 1, "evidence": 2, "statements": 2, "reactivated": 0, "entities": 2, "hashes": 3, "episodes": 0}
    assert [tuple(r) for r in db.conn.execute("SELECT name FROM entities ORDER BY name")] == [("billing-worker",), ("redis-01",)]
    assert counts(db)["relations"] == 1
    assert s.merge(host_card("s5", "k-s5"), now=NOW).action == "forgotten"


def test_forgetting_the_superseding_card_reactivates_the_old_one(db):
    s = MergeSession(db)
    old = s.merge(NewCard("Use pnpm instead of npm", "preference", 0.9, "s1", "2025-01-01T00:00:00Z"), now=NOW)
    new = s.merge(NewCard("Never use pnpm, use npm", "preference", 0.9, "s2", "2025-02-01T00:00:00Z"), now=NOW)
    assert new.superseded == [old.card_id]
    out = forget.forget_cards(db, [new.card_id], now="2025-03-02T00:00:00.000Z")
    assert out["reactivated"] == 1
    assert [tuple(r) for r in db.conn.execute("SELECT id, status, superseded_by FROM cards")] == [(old.card_id, "active", None)]


def test_cli_forget_card_and_entity(tmp_path, reverie_home):
    db = open_db(agent_db_path(reverie_home, "demo"))
    s = MergeSession(db)
    a = s.merge(host_card(), now=NOW)
    s.merge(other_card(), now=NOW)
    db.close()
    runner = CliRunner()
    res = runner.invoke(build_cli(), ["forget", str(a.card_id), "--agent", "demo", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == {"agent": "demo", "forgotten": {"kind": "card", "id": a.card_id}, "cards": 1,
                                      "evidence": 1, "statements": 1, "reactivated": 0, "entities": 2, "hashes": 2, "episodes": 0}
    res = runner.invoke(build_cli(), ["forget", "Redis-01", "--agent", "demo"])
    assert res.exit_code == 0, res.output
    assert res.output == ("Forgot entity redis-01 (host): 1 card(s), 0 evidence row(s), 1 relation statement(s), "
                          "2 entit(y/ies). It will not be learned again from the same transcripts.\n")
    res = runner.invoke(build_cli(), ["forget", "nothing-like-this", "--agent", "demo"])
    assert res.exit_code == 1
    assert "No entity named 'nothing-like-this' in agent 'demo'" in res.output
    res = runner.invoke(build_cli(), ["forget", "3", "--agent", "ghost"])
    assert res.exit_code == 1 and "No memory for agent 'ghost' yet" in res.output


def _db_bytes(path):
    data = b""
    for suffix in ("", "-wal"):
        try:
            with open(str(path) + suffix, "rb") as fh:
                data += fh.read()
        except FileNotFoundError:
            pass
    return data


def test_forget_leaves_no_byte_of_the_statement_in_episodes_fts_or_wal(tmp_path):
    from reverie.graph import episodes as ep

    path = tmp_path / "agent.db"
    db = open_db(path)
    s = MergeSession(db)
    moved = s.merge(NewCard(statement="Moved auth-service off zebulon-quartz onto prod-k8s.", category="decision",
                            confidence=0.9, session="s1", said_at="2025-01-10T09:00:00Z", source_key="k1",
                            entities=[EntityRef("auth-service", "service")]), now=NOW)
    kept = s.merge(NewCard(statement="Nightly backups go to the cold-storage bucket.", category="fact",
                           confidence=0.9, session="s1", said_at="2025-01-10T09:05:00Z", source_key="k2"), now=NOW)
    summary = ep.summarize_offline("fix the auth outage", ep.session_card_statements(db, "s1"))
    assert "zebulon-quartz" in summary
    ep.record_episode(db, "s1", "2025-01-10T09:00:00Z", summary, now=NOW)
    db.conn.commit()
    # a model-written episode of another session that quotes the statement verbatim
    ep.record_episode(db, "s9", "2025-01-11T09:00:00Z",
                      "Reviewed the move: Moved auth-service off zebulon-quartz onto prod-k8s. Then lunch.",
                      now=NOW, writer="model")
    db.conn.commit()
    assert b"zebulon" in _db_bytes(path)

    out = forget.forget_cards(db, [moved.card_id], now="2025-03-01T00:00:00Z")

    assert out["episodes"] == 2
    assert db.conn.execute("SELECT session, summary, status FROM episodes ORDER BY id").fetchall() == [
        ("s1", "Worked on: fix the auth outage. Learned: Nightly backups go to the cold-storage bucket.", "active"),
        ("s9", "Reviewed the move: Then lunch.", "active")]
    assert [r["summary"] for r in ep.recent_context(db)] == [
        "Reviewed the move: Then lunch.",
        "Worked on: fix the auth outage. Learned: Nightly backups go to the cold-storage bucket."]
    assert db.conn.execute("SELECT id FROM cards").fetchall() == [(kept.card_id,)]
    db.close()
    data = _db_bytes(path)
    for word in (b"zebulon", b"quartz", b"Moved"):
        assert word not in data, word
