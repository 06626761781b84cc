"""graph.recall: blocks, order, once-per-session, budgets, concurrency with a writer; the stdlib
embedders against the real ones."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reverie.consolidate.agents import assign_agent
from reverie.consolidate.paths import agent_db_path
from reverie.consolidate.store import open_db
from reverie.graph.entities import normalize_entity
import reverie.graph.nearest as nearest_mod
from reverie.graph.recall import HEADERS, MARKER, Budgets, SessionState, recall
from reverie.graph.relations import Statement, add_statements, recompute

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT.parent / "shared" / "models" / "minilm-l6-m2v-256"


class Store:
    """An agent with an agent.db built by SQL (graph schema via open_db)."""

    def __init__(self, home: Path, cwd: str = "/work/projects/shop") -> None:
        self.home = home
        self.cwd = cwd
        self.agent = assign_agent(home, cwd)
        self.path = agent_db_path(home, self.agent)
        self.db = open_db(self.path)
        self.conn = self.db.conn

    def card(self, statement: str, category: str = "fact", *, sessions: int = 1, status: str = "active",
             said_at: str = "2026-01-10T10:00:00Z", pinned: int = 0, importance: int = 2,
             entities: tuple[int, ...] = (), vector: bytes | None = None) -> int:
        with self.conn:
            cur = self.conn.execute(
                """INSERT INTO cards(statement, norm, category, importance, confidence, original_confidence,
                   status, sessions, pinned, writer, created_at, said_at, last_seen_at, updated_at, vector)
                   VALUES (?, ?, ?, ?, 0.8, 0.8, ?, ?, ?, 'offline', ?, ?, ?, ?, ?)""",
                (statement, statement.lower(), category, importance, status, sessions, pinned,
                 said_at, said_at, said_at, said_at, vector))
            cid = cur.lastrowid
            self.conn.executemany("INSERT INTO card_entities(card_id, entity_id) VALUES (?, ?)",
                                  [(cid, e) for e in entities])
        return cid

    def entity(self, name: str, type_: str = "service", aliases: tuple[str, ...] = ()) -> int:
        with self.conn:
            norm = normalize_entity(name)
            eid = self.conn.execute("INSERT INTO entities(name, norm, type, created_at) VALUES (?, ?, ?, ?)",
                                    (name, norm, type_, "2026-01-01T00:00:00Z")).lastrowid
            self.conn.execute("INSERT INTO entity_aliases(norm, alias, entity_id, how) VALUES (?, ?, ?, 'name')",
                              (norm, name, eid))
            for alias in aliases:
                self.conn.execute("INSERT INTO entity_aliases(norm, alias, entity_id, how) VALUES (?, ?, ?, 'synonym')",
                                  (normalize_entity(alias), alias, eid))
        return eid

    def say(self, subject: int, verb: str, obj: int, *, holds: bool = True, session: str = "s1",
            said_at: str = "2026-01-10T10:00:00Z", card: int | None = None) -> None:
        """A relation statement, through graph.relations (its state rules)."""
        with self.conn:
            card = card or self.card(f"statement {subject} {verb} {obj} {session} {said_at}", said_at=said_at)
            _, touched = add_statements(self.conn, card, session, said_at, said_at,
                                        [Statement(subject, verb, obj, holds)])
            recompute(self.conn, touched, said_at)

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def store(reverie_home):
    s = Store(reverie_home)
    yield s
    s.close()


def test_primer_lists_standing_memories_strongest_first_and_skips_faded_and_superseded(store):
    once_decision = store.card("Deploy on Fridays only after the smoke tests pass.", "decision")
    recurring_pref = store.card("Use pnpm, not npm, in every repo.", "preference", sessions=3)
    recurring_corr = store.card("The billing API base URL is /v2, not /v1.", "correction", sessions=2)
    once_corr = store.card("Run migrations with alembic, never by hand.", "correction")
    pinned = store.card("Ask before deleting branches.", "decision", pinned=1)
    store.card("Faded rule nobody repeated.", "decision", status="faded")
    store.card("Old rule replaced by a newer one.", "preference", status="superseded")
    store.card("A fact is not a standing decision.", "fact", sessions=9)

    out = recall(store.path, "", kind="primer", agent=store.agent)

    assert [c["id"] for c in out["standing"]] == [pinned, recurring_corr, recurring_pref, once_corr, once_decision]
    assert out["standing"][1] == {"id": recurring_corr, "statement": "The billing API base URL is /v2, not /v1.",
                                  "category": "correction", "sessions": 2, "confidence": 0.8,
                                  "maturity": "candidate"}
    assert out["entities"] == [] and out["notes"] == []
    assert out["agent"] == store.agent
    assert out["text"] == "\n".join([
        HEADERS["standing"],
        f"- Ask before deleting branches. [#{pinned} decision, 2026-01-10]",
        f"- The billing API base URL is /v2, not /v1. [#{recurring_corr} correction, 2026-01-10, 2 sessions]",
        f"- Use pnpm, not npm, in every repo. [#{recurring_pref} preference, 2026-01-10, 3 sessions]",
        f"- Run migrations with alembic, never by hand. [#{once_corr} correction, 2026-01-10]",
        f"- Deploy on Fridays only after the smoke tests pass. [#{once_decision} decision, 2026-01-10]",
    ])
    assert out["text"].startswith(MARKER)


def test_prompt_shows_relations_of_named_entities_current_first_with_ended_as_no_longer(store):
    api = store.entity("billing-api")
    pg = store.entity("PostgreSQL", "library", aliases=("postgres",))
    redis = store.entity("Redis", "library")
    old = store.entity("old-vm", "host")
    k8s = store.entity("prod-k8s", "host")
    store.say(api, "uses", pg, session="s1", said_at="2026-01-02T00:00:00Z")
    store.say(api, "uses", pg, session="s2", said_at="2026-01-05T00:00:00Z")
    store.say(api, "uses", redis, session="s3", said_at="2026-01-06T00:00:00Z")
    store.say(api, "runs_on", old, session="s1", said_at="2025-12-01T00:00:00Z")
    store.say(api, "runs_on", k8s, session="s4", said_at="2026-01-08T00:00:00Z")  # ends runs_on old-vm

    out = recall(store.path, "Why is the Billing-API slow on postgres?")

    # PostgreSQL's only relation is billing-api's, listed once (under billing-api): no PostgreSQL entry.
    assert [e["name"] for e in out["entities"]] == ["billing-api"]
    assert out["entities"][0] == {"name": "billing-api", "type": "service", "relations": [
        {"subject": "billing-api", "verb": "uses", "object": "PostgreSQL", "state": "holds", "weight": 2,
         "last_said": "2026-01-05T00:00:00Z"},
        {"subject": "billing-api", "verb": "runs_on", "object": "prod-k8s", "state": "holds", "weight": 1,
         "last_said": "2026-01-08T00:00:00Z"},
        {"subject": "billing-api", "verb": "uses", "object": "Redis", "state": "holds", "weight": 1,
         "last_said": "2026-01-06T00:00:00Z"},
        {"subject": "billing-api", "verb": "runs_on", "object": "old-vm", "state": "ended", "weight": 1,
         "last_said": "2026-01-08T00:00:00Z"},
    ]}
    block = out["text"].split("\n")
    start = block.index(HEADERS["entities"])
    assert block[start:start + 6] == [
        HEADERS["entities"],
        "billing-api (service):",
        "  - billing-api uses PostgreSQL (2 sessions; last 2026-01-05)",
        "  - billing-api runs on prod-k8s (1 session; last 2026-01-08)",
        "  - billing-api uses Redis (1 session; last 2026-01-06)",
        "  - billing-api runs on old-vm (no longer; 1 session; last 2026-01-08)",
    ]


def test_entity_match_is_whole_word_and_ignores_short_names(store):
    api = store.entity("api", "service")
    db = store.entity("db", "service")
    other = store.entity("gateway", "service")
    store.say(api, "calls", other)
    store.say(db, "calls", other)

    assert recall(store.path, "refactor the apiserver and rapid gateways")["entities"] == []
    names = [e["name"] for e in recall(store.path, "Does the db call the api?")["entities"]]
    assert names == ["api"]   # "db" has fewer than 3 characters


def test_longer_entity_name_hides_the_shorter_one_inside_it(store):
    york = store.entity("York", "other")
    new_york = store.entity("New York", "other")
    office = store.entity("office", "other")
    store.say(york, "hosts", office, session="a")
    store.say(new_york, "hosts", office, session="b")

    assert [e["name"] for e in recall(store.path, "anything about New York?")["entities"]] == ["New York"]


def test_relations_are_capped_at_twelve_per_entity(store):
    hub = store.entity("hub-service")
    for i in range(15):
        store.say(hub, "calls", store.entity(f"worker-{i:02d}"), session=f"s{i}")

    out = recall(store.path, "what does hub-service call?", budgets=Budgets(max_chars=9000, entity_chars=9000))

    assert len(out["entities"][0]["relations"]) == 12


def test_notes_are_nearest_first_and_faded_or_superseded_never_recalled(store):
    close = store.card("The checkout service retries payment webhooks three times with backoff.")
    weaker = store.card("Payment reports are exported nightly.", sessions=2)
    store.card("Checkout payment webhooks used to retry forever.", status="superseded")
    store.card("Checkout payment webhooks retry with jitter.", status="faded")
    store.card("Unrelated note about the logo colours.")

    out = recall(store.path, "how do checkout payment webhooks retry?")

    assert [n["id"] for n in out["notes"]] == [close, weaker]
    assert out["notes"][0]["statement"] == "The checkout service retries payment webhooks three times with backoff."
    assert {k: out["notes"][0][k] for k in ("category", "date", "sessions")} == \
        {"category": "fact", "date": "2026-01-10", "sessions": 1}
    assert out["notes"][0]["score"] > out["notes"][1]["score"]


def test_recurrence_breaks_near_ties_but_never_beats_a_much_closer_match(store):
    exact = store.card("Flaky test: test_checkout_timeout fails when redis is slow.")
    strong = store.card("Redis is slow on Mondays.", sessions=20)
    out = recall(store.path, "test_checkout_timeout fails, redis slow")
    assert [n["id"] for n in out["notes"]][:2] == [exact, strong]

    a = store.card("Grafana dashboards live in the ops repo.")
    b = store.card("Grafana dashboards live in the infra repo.", sessions=6)
    ids = [n["id"] for n in recall(store.path, "where do grafana dashboards live?")["notes"]]
    assert ids.index(b) < ids.index(a)


def test_standing_memories_on_a_prompt_only_when_relevant(store):
    rule = store.card("Use pnpm instead of npm for installs.", "preference", sessions=2)
    store.card("Never force-push to main.", "decision", sessions=5)

    out = recall(store.path, "install the packages with pnpm")
    assert [c["id"] for c in out["standing"]] == [rule]
    assert out["notes"] == []


def test_prompt_lists_deprecated_and_anti_pattern_cards_as_warnings_and_hides_contradicted_ones(store):
    note = store.card("The checkout webhooks retry with backoff.")
    deprecated = store.card("The checkout webhooks retry without backoff.")
    anti = store.card("AVOID: Retry the checkout webhooks by hand.", "pattern")
    contradicted = store.card("The checkout webhooks never retry.")
    with store.conn:
        store.conn.executemany(
            "INSERT INTO card_trust(card_id, maturity, contradicted, updated_at) VALUES (?, ?, ?, '2026-01-10')",
            [(deprecated, "deprecated", 0), (contradicted, "candidate", 1)])

    out = recall(store.path, "do the checkout webhooks retry?")

    assert out["warnings"] == [
        {"id": deprecated, "statement": "The checkout webhooks retry without backoff.", "kind": "deprecated"},
        {"id": anti, "statement": "AVOID: Retry the checkout webhooks by hand.", "kind": "anti_pattern"}]
    assert [n["id"] for n in out["notes"]] == [note]
    assert out["text"].splitlines()[:3] == [
        HEADERS["warnings"],
        f"- Deprecated (reported harmful): The checkout webhooks retry without backoff. [#{deprecated}]",
        f"- AVOID: Retry the checkout webhooks by hand. [#{anti}]"]


def test_nothing_relevant_injects_nothing_and_records_nothing(store, tmp_path):
    store.card("The checkout service retries payment webhooks three times.")
    state_dir = tmp_path / "state"

    out = recall(store.path, "thanks, that is all for now", session="sess-1", state_dir=state_dir)

    assert out == {"agent": None, "standing": [], "entities": [], "notes": [], "warnings": [], "recent": [],
                   "text": "", "harnesses": {"cards": {}, "episodes": {}}}
    assert not state_dir.exists()


def test_each_memory_and_entity_only_once_per_session(store):
    api = store.entity("billing-api")
    pg = store.entity("PostgreSQL", "library")
    store.say(api, "uses", pg)
    note = store.card("billing-api connection pool size is 20.", entities=(api,))
    prompt = "tune the billing-api connection pool"

    first = recall(store.path, prompt, session="sess-1")
    again = recall(store.path, prompt, session="sess-1")
    other = recall(store.path, prompt, session="sess-2")

    assert [n["id"] for n in first["notes"]] == [note] and [e["name"] for e in first["entities"]] == ["billing-api"]
    assert again["text"] == "" and again["notes"] == [] and again["entities"] == []
    assert other["text"] == first["text"]
    state = json.loads((store.path.parent / "recall-sessions" / "sess-1.json").read_text())
    assert state == {"cards": [note], "entities": [api], "episodes": []}
    # A compacted context no longer holds what was injected: a session start with reset gives it again.
    rule = store.card("Use pnpm.", "preference")
    recall(store.path, "", kind="primer", session="sess-1")
    assert recall(store.path, "", kind="primer", session="sess-1")["standing"] == []
    assert [c["id"] for c in recall(store.path, "", kind="primer", session="sess-1", reset_session=True)["standing"]] == [rule]


def test_every_block_at_most_once_per_session_and_a_reset_gives_them_again(store):
    """Standing cards and recent episodes (the primer's blocks), like notes and entities, are given
    once per session: a second session start of the same session (a resume) injects nothing; a reset
    (compact, clear) gives the same text again; another session gets it too."""
    from reverie.graph.episodes import RECENT_LIMIT, record_episode

    rule = store.card("Use pnpm, not npm.", "preference", sessions=2)
    episodes = [record_episode(store.db, f"s{i}", f"2026-01-1{i}T10:00:00Z", f"Worked on billing-api part {i}.")
                for i in range(RECENT_LIMIT + 1)]
    store.conn.commit()

    first = recall(store.path, "", kind="primer", session="sess-r")
    resumed = recall(store.path, "", kind="primer", session="sess-r")
    exhausted = recall(store.path, "", kind="primer", session="sess-r")
    compacted = recall(store.path, "", kind="primer", session="sess-r", reset_session=True)
    other = recall(store.path, "", kind="primer", session="sess-o")

    assert [c["id"] for c in first["standing"]] == [rule]
    newest = sorted(episodes, reverse=True)[:RECENT_LIMIT]
    assert [r["id"] for r in first["recent"]] == newest
    # The resume gets what was not shown yet (the oldest episode), nothing shown before.
    assert (resumed["standing"], [r["id"] for r in resumed["recent"]]) == ([], [min(episodes)])
    assert HEADERS["standing"] not in resumed["text"] and "part 3" not in resumed["text"]
    assert exhausted["text"] == ""
    assert compacted["text"] == first["text"] == other["text"] != ""
    state = json.loads((store.path.parent / "recall-sessions" / "sess-r.json").read_text())
    assert state == {"cards": [rule], "entities": [], "episodes": sorted(newest)}


def test_a_session_file_from_before_episodes_were_tracked_reads_as_none_shown(store):
    from reverie.graph.episodes import record_episode

    ep = record_episode(store.db, "s1", "2026-01-10T10:00:00Z", "Moved billing-api to pnpm.")
    store.conn.commit()
    state_dir = store.path.parent / "recall-sessions"
    state_dir.mkdir()
    (state_dir / "old.json").write_text(json.dumps({"cards": [], "entities": []}))
    assert [r["id"] for r in recall(store.path, "", kind="primer", session="old")["recent"]] == [ep]
    assert json.loads((state_dir / "old.json").read_text()) == {"cards": [], "entities": [], "episodes": [ep]}


def test_budgets_cap_every_block_and_the_total(store):
    api = store.entity("billing-api")
    for i in range(30):
        store.say(api, "calls", store.entity(f"downstream-service-{i:02d}"), session=f"s{i}")
        store.card(f"billing-api deployment note number {i} about retries and timeouts and pools.", entities=(api,))
        store.card(f"billing-api decision {i}: bound retries.", "decision", entities=(api,))
    budgets = Budgets(max_chars=1200, standing_items=2, standing_chars=330, entity_chars=400, notes_items=3,
                      notes_chars=800, relations_per_entity=12)

    out = recall(store.path, "billing-api retries", budgets=budgets)

    text = out["text"]
    assert len(text) <= 1200
    lines = text.split("\n")
    blocks = {}
    for line in lines:
        if line.startswith(MARKER):
            current = line
            blocks[current] = [line]
        else:
            blocks[current].append(line)
    standing = "\n".join(blocks[HEADERS["standing"]])
    entities = "\n".join(blocks[HEADERS["entities"]])
    assert len(standing) + 1 <= 330 and len(out["standing"]) == 2
    assert len(entities) + 1 <= 400 and 1 <= len(out["entities"][0]["relations"]) < 12
    assert len(out["notes"]) <= 3
    assert all(not line.endswith("...") for line in lines)   # lines are dropped, never cut


def test_budgets_from_settings_take_numbers_and_cap_the_total():
    b = Budgets.from_settings({"max_chars": 50_000, "notes_items": 3, "entities": "many", "bogus": 1})
    assert b.as_dict() == {**Budgets.DEFAULTS, "max_chars": 9500, "notes_items": 3}


def test_session_state_prunes_old_and_excess_files(tmp_path):
    for i in range(5):
        p = tmp_path / f"old-{i}.json"
        p.write_text("{}")
        os.utime(p, (1_000_000 + i, 1_000_000 + i))
    state = SessionState(tmp_path, "new-session", max_files=3, max_age_days=14)
    state.save([1], [2])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".pruned", "new-session.json"]
    # Pruning is throttled: a session started right after leaves an old file alone ...
    (tmp_path / "old-9.json").write_text("{}")
    os.utime(tmp_path / "old-9.json", (1_000_000, 1_000_000))
    SessionState(tmp_path, "second", max_files=3, max_age_days=14).save([3], [])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".pruned", "new-session.json", "old-9.json", "second.json"]
    # ... and the first new session once PRUNE_EVERY_S has passed removes it.
    os.utime(tmp_path / ".pruned", (1_000_000, 1_000_000))
    SessionState(tmp_path, "third", max_files=3, max_age_days=14).save([4], [])
    assert sorted(p.name for p in tmp_path.iterdir()) == [".pruned", "new-session.json", "second.json", "third.json"]
    odd = SessionState(tmp_path, "../../etc/passwd")
    assert os.path.dirname(odd.path) == str(tmp_path) and os.path.basename(odd.path) != "passwd.json"


WRITER = textwrap.dedent("""
    import sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO cards(statement, norm, category, importance, confidence, original_confidence, "
                 "status, sessions, created_at, said_at, last_seen_at, updated_at) VALUES "
                 "('Checkout webhooks uncommitted card.', 'x', 'fact', 2, 0.8, 0.8, 'active', 1, "
                 "'2026-01-11', '2026-01-11', '2026-01-11', '2026-01-11')")
    print("holding", flush=True)
    sys.stdin.readline()
    conn.execute("COMMIT")
""")


def test_recall_while_a_consolidation_holds_a_write_transaction(store):
    note = store.card("Checkout webhooks retry three times.")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store.path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "holding"
        out = recall(store.path, "checkout webhooks retry")   # raises if it had to wait for the lock
        assert [n["id"] for n in out["notes"]] == [note]       # the uncommitted card is not seen
    finally:
        writer.stdin.write("\n")
        writer.stdin.close()
        writer.wait(timeout=60)
    assert writer.returncode == 0
    assert len(recall(store.path, "checkout webhooks retry")["notes"]) == 2


def test_missing_database_raises_and_is_never_created(tmp_path):
    with pytest.raises(FileNotFoundError):
        recall(tmp_path / "nope" / "agent.db", "anything")
    assert not (tmp_path / "nope").exists()


def test_prompt_ngram_keys_match_entity_normalization():
    from reverie.graph.recall import _name_tokens, _ngrams

    for name in ["The Mini-Lola host", "mini_lola", "New York", "node.js", "Caroline's", "(api-server),",
                 "Zürich Office", "redis   cluster-2"]:
        assert normalize_entity(name) in _ngrams(_name_tokens(name)), name


def test_lexical_lite_agrees_with_lexical_embedder():
    pytest.importorskip("numpy")
    from reverie.graph.embed import LexicalEmbedder
    from reverie.graph.recall_embed import LexicalLite

    texts = ["Deploy billing-api to prod-k8s with node18", "use pnpm instead of npm", "x"]
    dense = LexicalEmbedder().encode(texts)
    lite = LexicalLite()
    assert lite.id == LexicalEmbedder().id
    for text, row in zip(texts, dense):
        sparse = lite.embed(text)
        assert {i: round(v, 5) for i, v in sparse.items()} == {i: round(float(row[i]), 5) for i in row.nonzero()[0]}


def test_lite_embedder_reproduces_model2vec(tmp_path):
    if not MODEL.exists():
        pytest.skip("shared model not present")
    from reverie.graph.embed import Model2VecEmbedder
    from reverie.graph.recall_embed import LiteEmbedder

    ref = Model2VecEmbedder(str(MODEL))
    lite = LiteEmbedder(MODEL, tmp_path / "cache")
    assert lite.id == ref.id
    texts = ["Use pnpm instead of npm", "Déjà vu: naïve café 東京 pyproject.toml src/app.py",
             "xqzwv unknownwordzz", "When did Melanie paint a sunrise?"]
    for text, row in zip(texts, ref.encode(texts)):
        vec = lite.embed(text)
        assert lite.token_ids(text) == ref._model.tokenize([text])[0]
        assert sum(a * float(b) for a, b in zip(vec, row)) > 0.9999
    assert lite.embed("") is None


def test_vectors_rank_candidates_only_when_they_are_the_embedders_own(store, tmp_path):
    if not MODEL.exists():
        pytest.skip("shared model not present")
    from reverie.graph.embed import Model2VecEmbedder, to_blob
    from reverie.graph.recall_embed import LiteEmbedder

    ref = Model2VecEmbedder(str(MODEL))
    texts = ["The cache layer stores sessions in memory.", "The cache invalidation runs hourly for sessions."]
    ids = [store.card(t, vector=to_blob(v)) for t, v in zip(texts, ref.encode(texts))]
    lite = LiteEmbedder(MODEL, tmp_path / "cache")
    prompt = "when does cache invalidation happen for sessions?"

    without = recall(store.path, prompt, embedder=lite)          # graph_meta has no 'embedder' yet
    with store.conn:
        store.conn.execute("INSERT INTO graph_meta(key, value) VALUES ('embedder', ?)", (ref.id,))
    with_vectors = recall(store.path, prompt, embedder=lite)

    assert without["notes"] == recall(store.path, prompt)["notes"]
    assert [n["id"] for n in with_vectors["notes"]][0] == ids[1]
    assert with_vectors["notes"][0]["score"] != without["notes"][0]["score"]


def test_prompt_dates_name_days_months_and_years():
    from reverie.graph.recall_query import prompt_dates

    assert prompt_dates("What setback did Melanie face in October 2023?") == [("2023-10-01", "2023-11-07")]
    assert prompt_dates("the painting shown on October 13, 2023") == [("2023-10-13", "2023-10-14")]
    assert prompt_dates("what did we ship on 1 February, 2023 and on 2026-01-10?") == [
        ("2026-01-10", "2026-01-11"), ("2023-02-01", "2023-02-02")]
    assert prompt_dates("When did we go camping in June?") == [("-06", "-06")]
    assert prompt_dates("How many deploys in 2024?") == [("2024-01-01", "2024-12-31")]
    assert prompt_dates("May I deploy on a march through the docs?") == []


def test_a_date_the_prompt_names_favours_memories_said_then(store):
    july = store.card("The team painted the office mural with a sunset.", said_at="2023-07-16T10:00:00Z")
    may = store.card("The team painted the office mural with a forest.", said_at="2023-05-02T10:00:00Z")
    plain = [n["id"] for n in recall(store.path, "what did the team paint on the office mural?")["notes"]]
    dated = [n["id"] for n in recall(store.path, "what did the team paint on the office mural in July 2023?")["notes"]]
    assert sorted(plain) == sorted(dated) == sorted([july, may])
    assert dated[0] == july and recall(store.path, "office mural painted in May 2023?")["notes"][0]["id"] == may


def test_unused_block_caps_go_to_the_notes(store):
    for i in range(12):
        store.card(f"Checkout webhook note {i}: retries use exponential backoff with jitter and a cap.")
    budgets = Budgets(max_chars=2000, standing_chars=600, entity_chars=600, notes_chars=800, notes_items=50)
    out = recall(store.path, "checkout webhook retries backoff", budgets=budgets)
    assert out["standing"] == [] and out["entities"] == []
    assert 800 < len(out["text"]) <= 2000


def _vector_store(store, texts):
    from reverie.graph.embed import Model2VecEmbedder, to_blob

    ref = Model2VecEmbedder(str(MODEL))
    ids = [store.card(t, vector=to_blob(v)) for t, v in zip(texts, ref.encode(texts))]
    with store.conn:
        store.conn.execute("INSERT INTO graph_meta(key, value) VALUES ('embedder', ?)", (ref.id,))
    return ids


def test_small_store_scans_every_vector_and_finds_a_card_sharing_no_word(store, tmp_path, monkeypatch):
    if not MODEL.exists():
        pytest.skip("shared model not present")
    from reverie.graph.recall_embed import LiteEmbedder

    lexical, synonym, _ = _vector_store(store, [
        "The billing service writes invoices to the ledger.",
        "Payment records live in Postgres tables.",
        "The logo colours are teal and orange."])
    lite = LiteEmbedder(MODEL, tmp_path / "cache")
    prompt = "which database keeps the billing data?"

    scanned = recall(store.path, prompt, embedder=lite)
    monkeypatch.setattr(nearest_mod, "FULL_SCAN_MAX_CARDS", 0)   # the bounded path of large stores
    bounded = recall(store.path, prompt, embedder=lite)

    assert [n["id"] for n in bounded["notes"]] == [lexical]
    assert [n["id"] for n in scanned["notes"]] == [lexical, synonym]
    assert scanned["text"] == "\n".join([
        HEADERS["notes"],
        f"- The billing service writes invoices to the ledger. [#{lexical} 2026-01-10]",
        f"- Payment records live in Postgres tables. [#{synonym} 2026-01-10]",
    ])


def test_small_talk_gets_nothing_even_when_every_vector_is_scanned(store, tmp_path):
    if not MODEL.exists():
        pytest.skip("shared model not present")
    from reverie.graph.recall_embed import LiteEmbedder

    _vector_store(store, ["Thanks a lot, that was all I needed for now.", "Glad it helped, see you soon!"])
    lite = LiteEmbedder(MODEL, tmp_path / "cache")
    out = recall(store.path, "ok, that is all for now", embedder=lite)
    assert out["text"] == "" and out["notes"] == [] and out["standing"] == []


def test_a_memory_from_the_same_moment_of_a_conversation_joins_its_neighbour(store, monkeypatch):
    asked, answer, prompt = _moment(store)

    out = recall(store.path, prompt)
    monkeypatch.setattr(nearest_mod, "NEIGHBOUR_TOP", 0)
    alone = recall(store.path, prompt)

    own = _own_scores(store.path, prompt, monkeypatch)

    assert [n["id"] for n in alone["notes"]] == [asked]
    assert [n["id"] for n in out["notes"]] == [asked, answer]
    _assert_interpolated(out, own, asked, answer)


def _own_scores(path, prompt: str, monkeypatch) -> dict[int, float]:
    """Every active card's score for `prompt` without the neighbour lift."""
    import reverie.graph.recall as recall_mod

    with monkeypatch.context() as m:
        m.setattr(nearest_mod, "NEIGHBOUR_TOP", 0)
        conn = recall_mod.connect_readonly(path)
        try:
            return {c["id"]: c["score"] for c in recall_mod.nearest_cards(conn, prompt, [], min_relative=0.0)}
        finally:
            conn.close()


def _assert_interpolated(out: dict, own: dict[int, float], asked: int, answer: int) -> None:
    """The answer (the asked card's neighbour, both fresh cards of the same strength) scores
    NEIGHBOUR_SHARE of the asked card's score plus the rest of its own."""
    share = nearest_mod.NEIGHBOUR_SHARE
    assert own.get(answer, 0.0) < own[asked] == out["notes"][0]["score"]
    assert out["notes"][1]["score"] == pytest.approx(share * own[asked] + (1 - share) * own.get(answer, 0.0), abs=1e-3)


def _moment(store) -> tuple[int, int, str]:
    asked = store.card("We watched the meteor shower from the campsite.")
    answer = store.card("It was a moment of feeling tiny and in awe of the universe.")
    far = store.card("Taxes are due in April; it was a moment of dread.")
    with store.conn:
        store.conn.executemany(
            "INSERT INTO evidence(card_id, conversation, message_from, message_to, said_at, passage) "
            "VALUES (?, ?, ?, ?, '2026-01-10T10:00:00Z', '')",
            [(asked, "conv-1", 10, 10), (answer, "conv-1", 12, 12), (far, "conv-1", 40, 41)])
    return asked, answer, "how did watching the meteor shower make you feel?"


def test_the_neighbour_lift_runs_on_a_store_of_any_size_through_the_evidence_position_index(store, monkeypatch):
    asked, answer, prompt = _moment(store)
    # A store above the full-scan size: the lift reads the evidence through the index only.
    monkeypatch.setattr(nearest_mod, "FULL_SCAN_MAX_CARDS", 1)
    indexed = store.conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'evidence' ORDER BY name").fetchall()
    plan = store.conn.execute(
        "EXPLAIN QUERY PLAN SELECT card_id, message_from, message_to FROM evidence INDEXED BY evidence_position "
        "WHERE conversation = ? AND message_from BETWEEN ? AND ? LIMIT ?", ("conv-1", 0, 14, 200)).fetchall()

    out = recall(store.path, prompt)

    assert indexed == [("evidence_card",), ("evidence_position",)]
    assert [row[3] for row in plan] == [
        "SEARCH evidence USING COVERING INDEX evidence_position (conversation=? AND message_from>? AND message_from<?)"]
    assert [n["id"] for n in out["notes"]] == [asked, answer]
    _assert_interpolated(out, _own_scores(store.path, prompt, monkeypatch), asked, answer)


def test_a_large_store_not_yet_migrated_to_the_evidence_index_skips_the_neighbour_lift(store, monkeypatch):
    asked, answer, prompt = _moment(store)
    with store.conn:
        store.conn.execute("DROP INDEX evidence_position")
    monkeypatch.setattr(nearest_mod, "FULL_SCAN_MAX_CARDS", 1)
    large = recall(store.path, prompt)
    monkeypatch.setattr(nearest_mod, "FULL_SCAN_MAX_CARDS", 2000)
    small = recall(store.path, prompt)

    assert [n["id"] for n in large["notes"]] == [asked]
    assert [n["id"] for n in small["notes"]] == [asked, answer]


def test_the_neighbour_lift_reaches_back_no_further_than_its_lookback(store, monkeypatch):
    asked, answer, prompt = _moment(store)
    # The answer's evidence now starts long before the asked card's and ends just after it.
    with store.conn:
        store.conn.execute("UPDATE evidence SET message_from = ?, message_to = 11 WHERE card_id = ?",
                           (10 - nearest_mod.NEIGHBOUR_SPAN - nearest_mod.NEIGHBOUR_LOOKBACK - 1, answer))
    far_start = recall(store.path, prompt)
    with store.conn:
        store.conn.execute("UPDATE evidence SET message_from = ? WHERE card_id = ?",
                           (10 - nearest_mod.NEIGHBOUR_SPAN - nearest_mod.NEIGHBOUR_LOOKBACK, answer))
    within = recall(store.path, prompt)

    assert [n["id"] for n in far_start["notes"]] == [asked]
    assert [n["id"] for n in within["notes"]] == [asked, answer]


def test_a_card_about_another_thing_of_the_kind_the_prompt_names_ranks_below_one_about_it(store, monkeypatch):
    billing = store.entity("billing")
    auth = store.entity("auth")
    redis = store.entity("redis", "concept")
    # Same words, same length: only who the card is about differs (ties go to the older card).
    about_auth = store.card("auth retries failed webhooks three times, billing said", entities=(auth, billing))
    about_billing = store.card("billing retries failed webhooks three times, auth said", entities=(billing, auth))
    # A loose type (concept) tells no siblings: a card led by another concept is left alone.
    loose = store.card("redis retries failed webhooks, a queue said", entities=(redis,))
    # A card stating a relation with the named entity is about it too, whatever comes first.
    related = store.card("auth retries failed webhooks for billing", entities=(auth, billing))
    store.say(auth, "calls", billing, card=related)
    prompt = "How many times does billing retry failed webhooks?"

    factor = nearest_mod.SIBLING_FACTOR
    out = recall(store.path, prompt)
    monkeypatch.setattr(nearest_mod, "SIBLING_FACTOR", 1.0)
    plain = recall(store.path, prompt)

    assert [n["id"] for n in plain["notes"]] == [about_auth, about_billing, related, loose]
    assert [n["id"] for n in out["notes"]] == [about_billing, related, about_auth, loose]
    scores = {n["id"]: n["score"] for n in out["notes"]}
    plain_scores = {n["id"]: n["score"] for n in plain["notes"]}
    assert set(scores) == {about_auth, about_billing, loose, related}
    assert scores == {about_billing: plain_scores[about_billing], loose: plain_scores[loose],
                      related: plain_scores[related],
                      about_auth: pytest.approx(factor * plain_scores[about_auth], abs=1e-3)}
    assert 0 < factor < 1


def test_strength_reorders_close_matches_by_its_square_root(store):
    from reverie.graph.trust import strength

    sure = store.card("the deploy script needs the staging token")
    unsure = store.card("the deploy script needs the staging token")
    with store.conn:
        store.conn.execute("UPDATE cards SET confidence = 1.0, original_confidence = 1.0 WHERE id = ?", (sure,))
        store.conn.execute("UPDATE cards SET confidence = 0.5, original_confidence = 0.5 WHERE id = ?", (unsure,))

    out = recall(store.path, "what does the deploy script need?")

    assert nearest_mod.STRENGTH_EXP == 0.5
    assert [n["id"] for n in out["notes"]] == [sure, unsure]
    assert out["notes"][1]["score"] == pytest.approx(
        out["notes"][0]["score"] * (strength(1, 0.5) / strength(1, 1.0)) ** 0.5, abs=1e-3)


def test_a_neighbour_of_zero_strength_is_not_lifted_into_the_notes(store, monkeypatch):
    asked = store.card("We watched the meteor shower from the campsite.")
    answer = store.card("It was tiny and awe-inspiring under that sky.")
    with store.conn:
        store.conn.executemany(
            "INSERT INTO evidence(card_id, conversation, message_from, message_to, said_at, passage) "
            "VALUES (?, 'conv-1', ?, ?, '2026-01-10T10:00:00Z', '')", [(asked, 10, 10), (answer, 11, 11)])
    # A large store: the answer shares no word with the prompt, so only the lift brings it in.
    monkeypatch.setattr(nearest_mod, "FULL_SCAN_MAX_CARDS", 1)
    prompt = "how did watching the meteor shower make you feel?"
    lifted = recall(store.path, prompt)
    with store.conn:
        store.conn.execute("UPDATE cards SET confidence = 0 WHERE id = ?", (answer,))
    zero = recall(store.path, prompt)

    assert [(n["id"], n["score"]) for n in lifted["notes"]] == [
        (asked, lifted["notes"][0]["score"]),
        (answer, pytest.approx(nearest_mod.NEIGHBOUR_SHARE * lifted["notes"][0]["score"], abs=1e-3))]
    assert [n["id"] for n in zero["notes"]] == [asked] and zero["warnings"] == []


def test_sibling_check_matches_whole_words_only():
    """A short name inside a longer word ("art" in "started") is not a mention of it."""
    from reverie.graph.nearest import _word_at

    assert [_word_at(t, "art") for t in ("i started pottery; melanie joined", "art class", "melanie and art.",
                                         "the art-show", "martial arts")] == [-1, 0, 12, 4, -1]


def test_read_only_opens_escape_uri_characters_in_the_path(tmp_path):
    """A home under a folder named with `?`, `#` or `%` still opens its files read-only (the path is
    escaped for SQLite's URI); a missing file raises and is never created."""
    from reverie.graph.db import connect_readonly

    odd = tmp_path / "my?home#1%20"
    odd.mkdir()
    db_path = odd / "agent.db"
    sqlite3.connect(db_path).execute("CREATE TABLE t (x)").connection.commit()
    conn = connect_readonly(db_path)
    assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(FileNotFoundError):
        connect_readonly(odd / "missing.db")
    assert not (odd / "missing.db").exists() and not (tmp_path / "my").exists()
    if MODEL.exists():
        from reverie.graph.recall_embed import LiteEmbedder

        assert LiteEmbedder(MODEL, odd / "cache").embed("the cache layer") is not None


def test_trust_decays_to_the_now_recall_is_given(store):
    """Feedback is weighed as of `now`: harmful reports of yesterday hold a card down, the same
    reports ten years on have faded; a card without feedback scores the same at both times."""
    from datetime import datetime, timezone

    from reverie.graph import trust

    reported = store.card("The invoice-worker retries failed payments every hour.")
    other = store.card("The invoice-worker retries failed refunds every hour.")
    with store.conn:
        for k in range(3):
            trust.record_feedback(store.conn, reported, "harmful", source="user", at="2026-01-10T10:00:00Z", key=f"k{k}")
    prompt = "does the invoice-worker retry failed payments?"
    soon = recall(store.path, prompt, now=datetime(2026, 1, 11, tzinfo=timezone.utc))
    later = recall(store.path, prompt, now=datetime(2036, 1, 11, tzinfo=timezone.utc))
    score = {when: {n["id"]: n["score"] for n in out["notes"]} for when, out in (("soon", soon), ("later", later))}
    assert set(score["soon"]) == set(score["later"]) == {reported, other}
    assert score["soon"][reported] < score["later"][reported]
    assert score["soon"][other] == score["later"][other]
