"""Audit of the graph, trust and recall as a user relies on them (issues 5, 6, 8): entity resolution,
dated relations learned from transcripts, dedupe of conflicting statements, forget, feedback and pin,
Markdown round trips, and what the hooks inject, through the real CLI and libraries.

Several began as proofs of a defect: similar names merged into one entity, forgotten text left in
episodes, value changes never sent to the model judge, "moved X to Y" not ending the old host; the
others check contracts no other test file checks end to end.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import types
from datetime import datetime, timezone
from pathlib import Path

import pytest
from fakes import make_agent
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate.paths import agent_db_path
from reverie.consolidate.pipeline import consolidate_agent
from reverie.consolidate.store import open_db
from reverie.graph.entities import EntityResolver
from reverie.graph.merge import MergeSession
from reverie.graph.model import EntityRef, NewCard, RelationRef

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "fixtures" / "sample-projects"
SAMPLE_CWD = "/home/dev/acme/billing-api"
NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


def cli(home: Path, *args: str, input: str | None = None):
    return CliRunner().invoke(build_cli(), ["--home", str(home), *args], input=input, prog_name="reverie")


def hook(home: Path, event: str, payload: dict) -> str:
    """The hook's additionalContext ('' when it printed nothing)."""
    res = cli(home, "hook", event, input=json.dumps(payload))
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"] if res.stdout.strip() else ""


class _NoSecrets:
    """Identity redactor for transcripts that hold no secret (keeps the pipeline tests fast)."""

    def redact(self, text: str):
        return types.SimpleNamespace(text=text, findings=[])




def consolidate_said(home: Path, *user_turns: str) -> Path:
    """One conversation per user turn (day 1, 2, ...), each answered "Noted.", consolidated offline."""
    path = make_agent(home, "demo", {f"c{i}": [("user", t), ("assistant", "Noted.")]
                                     for i, t in enumerate(user_turns, 1)})
    summary = consolidate_agent(home, "demo", writer="offline", redactor=_NoSecrets())
    assert summary["errors"] == [], summary
    return path


def relation_rows(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return [tuple(r) for r in conn.execute(
            """SELECT s.name, r.verb, o.name, r.holds, r.since FROM relations r
               JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id
               ORDER BY s.name, r.verb, o.name""")]
    finally:
        conn.close()


def dump(path: Path) -> dict[str, list]:
    """Every row of every table except the FTS shadow tables, sorted (what a round trip must keep)."""
    conn = sqlite3.connect(path)
    try:
        names = [n for (n,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%fts%' AND name NOT LIKE 'sqlite_%'")]
        return {n: sorted(map(repr, conn.execute(f"SELECT * FROM [{n}]"))) for n in names}
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# a home built once from the project's sample transcripts (index + offline consolidation)


@pytest.fixture(scope="module")
def _sample_home(tmp_path_factory) -> Path:
    from reverie.consolidate.index import index_all

    home = tmp_path_factory.mktemp("audit-graph") / "home"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
        mp.delenv("ANTHROPIC_API_KEY", raising=False)
        index_all(home, SAMPLES)
        summary = consolidate_agent(home, "billing-api", writer="offline")
    assert summary["errors"] == [] and summary["cards_written"] > 0, summary
    return home


@pytest.fixture
def sample_home(_sample_home, tmp_path) -> Path:
    return Path(shutil.copytree(_sample_home, tmp_path / "sample-home"))


def card_id_where(home: Path, agent: str, like: str) -> int:
    conn = sqlite3.connect(agent_db_path(home, agent))
    try:
        (cid,) = conn.execute("SELECT id FROM cards WHERE statement LIKE ? AND status = 'active'", (like,)).fetchone()
        return cid
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# entity resolution: aliases merge, distinct services never do


@pytest.mark.parametrize("first, second", [
    pytest.param("billing-api", "billing-worker", id="billing-api-vs-billing-worker"),
    pytest.param("auth", "oauth", id="auth-vs-oauth"),
    pytest.param("auth-service", "oauth-service", id="auth-service-vs-oauth-service"),
    pytest.param("search-api", "research-api", id="search-api-vs-research-api"),
    pytest.param("ledger-service", "leader-service", id="ledger-vs-leader"),
    pytest.param("mail-service", "email-service", id="mail-vs-email"),
    pytest.param("billing", "billing-db", id="service-vs-its-database"),
])
def test_two_distinct_services_with_similar_names_stay_two_entities(tmp_path, first, second):
    db = open_db(tmp_path / "agent.db")
    try:
        resolver = EntityResolver(db.conn)
        a = resolver.resolve(EntityRef(first, "service"), now="2026-03-01T00:00:00Z")
        b = resolver.resolve(EntityRef(second, "service"), now="2026-03-01T00:00:00Z")
        assert (a.created, b.created, b.how) == (True, True, "created")
        assert [tuple(r) for r in db.conn.execute("SELECT name FROM entities ORDER BY id")] == [(first,), (second,)]
    finally:
        db.close()


def test_a_fact_about_oauth_service_never_changes_what_the_graph_says_of_auth_service(reverie_home):
    db = open_db(agent_db_path(reverie_home, "demo"))
    s = MergeSession(db)
    s.merge(NewCard("auth-service runs on mini-lola.", "fact", 0.9, "s1", "2026-01-10T09:00:00Z",
                    entities=[EntityRef("auth-service", "service"), EntityRef("mini-lola", "host")],
                    relations=[RelationRef("auth-service", "runs_on", "mini-lola")]), now=NOW)
    s.merge(NewCard("oauth-service runs on prod-k8s.", "fact", 0.9, "s2", "2026-02-10T09:00:00Z",
                    entities=[EntityRef("oauth-service", "service"), EntityRef("prod-k8s", "host")],
                    relations=[RelationRef("oauth-service", "runs_on", "prod-k8s")]), now=NOW)
    db.close()

    res = cli(reverie_home, "graph", "auth-service", "--agent", "demo", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [(r["subject"], r["verb"], r["object"], r["state"]) for r in out["relations"]] == [
        ("auth-service", "runs_on", "mini-lola", "holds")]
    res = cli(reverie_home, "graph", "oauth-service", "--agent", "demo", "--json")
    assert json.loads(res.stdout)["entity"]["name"] == "oauth-service"


# ---------------------------------------------------------------------------------------------
# relations learned from transcripts: said, ended, said again


def test_relation_said_moved_off_and_said_again_through_the_pipeline_and_graph_command(reverie_home):
    path = consolidate_said(
        reverie_home,
        "auth-service runs on mini-lola.",
        "We moved auth-service off mini-lola, it runs on prod-k8s now.",
        "auth-service runs on mini-lola again since today.",
        "billing-worker uses redis-cache.",
        "billing-worker no longer uses redis-cache.",
    )
    assert relation_rows(path) == [
        ("auth-service", "runs_on", "mini-lola", 1, "2026-10-03T09:00:00.000Z"),
        ("auth-service", "runs_on", "prod-k8s", 0, "2026-10-03T09:00:00.000Z"),
        ("billing-worker", "uses", "redis-cache", 0, "2026-10-05T09:00:00.000Z"),
    ]
    res = cli(reverie_home, "graph", "auth-service", "--agent", "demo", "--json")
    assert res.exit_code == 0, res.output
    rels = [(r["subject"], r["verb"], r["object"], r["state"], r["last_said"])
            for r in json.loads(res.stdout)["relations"]]
    assert rels == [("auth-service", "runs_on", "mini-lola", "holds", "2026-10-03T09:00:00.000Z"),
                    ("auth-service", "runs_on", "prod-k8s", "ended", "2026-10-03T09:00:00.000Z")]
    res = cli(reverie_home, "graph", "auth-service", "--agent", "demo")
    assert "auth-service runs_on prod-k8s  (no longer, since 2026-10-03" in res.stdout


def test_moving_a_service_back_reopens_the_old_host(reverie_home):
    path = consolidate_said(
        reverie_home,
        "auth-service runs on mini-lola.",
        "We moved auth-service off mini-lola, it runs on prod-k8s now.",
        "We moved auth-service back to mini-lola.",
    )
    assert [r[:4] for r in relation_rows(path)] == [
        ("auth-service", "runs_on", "mini-lola", 1),
        ("auth-service", "runs_on", "prod-k8s", 0),
    ]


def test_we_moved_x_to_y_ends_the_old_host(reverie_home):
    path = consolidate_said(
        reverie_home,
        "auth-service runs on mini-lola.",
        "We moved auth-service to prod-k8s.",
    )
    assert [r[:4] for r in relation_rows(path)] == [
        ("auth-service", "runs_on", "mini-lola", 0),
        ("auth-service", "runs_on", "prod-k8s", 1),
    ]


# ---------------------------------------------------------------------------------------------
# dedupe: conflicting statements resolve by date


@pytest.mark.parametrize("older, newer, prompt", [
    pytest.param("The staging database runs PostgreSQL 15.", "The staging database runs PostgreSQL 16.",
                 "which PostgreSQL version does the staging database run?", id="version"),
    pytest.param("billing-api listens on port 8080.", "billing-api listens on port 9090.",
                 "which port does billing-api listen on?", id="port"),
    pytest.param("Never force-push to main.", "Force-pushing to main is fine after a rebase.",
                 "can I force-push to main after a rebase?", id="rule-vs-permission"),
])
def test_a_later_conflicting_statement_goes_to_the_model_judge_and_supersedes_when_it_says_opposite(
        reverie_home, older, newer, prompt):
    """Words cannot tell an update ("runs PostgreSQL 15" then "16") from two values of one setting
    ("CI runs on Node 18" and "20"), nor a rule from its qualified permission: these pairs are
    ambiguous. The model judge, when one is set up, is asked; "opposite" makes the later statement
    supersede the earlier, so recall shows only it. Without a judge both stay (graph/dedupe.py)."""
    asked = []

    def judge(a: str, b: str) -> str:
        asked.append((a, b))
        return "opposite"

    db = open_db(agent_db_path(reverie_home, "demo"))
    s = MergeSession(db, judge=judge)
    first = s.merge(NewCard(older, "fact", 0.9, "s1", "2026-01-10T09:00:00Z"), now=NOW)
    second = s.merge(NewCard(newer, "fact", 0.9, "s2", "2026-02-10T09:00:00Z"), now=NOW)
    rows = [tuple(r) for r in db.conn.execute("SELECT id, status, superseded_by FROM cards ORDER BY id")]
    db.close()
    res = cli(reverie_home, "recall", "--agent", "demo", "--prompt", prompt, "--json")
    notes = [n["statement"] for n in json.loads(res.stdout)["notes"]]
    assert asked and set(asked[0]) == {older, newer}
    assert (rows, notes) == ([(first.card_id, "superseded", second.card_id), (second.card_id, "active", None)], [newer])


def test_restatements_in_three_sessions_reinforce_one_card_and_an_opposite_supersedes_it(reverie_home):
    path = consolidate_said(
        reverie_home,
        "From now on, always use pnpm instead of npm in this repo.",
        "Remember: always use pnpm instead of npm in this repo.",
        "Always use pnpm instead of npm in this repo.",
        "Never use pnpm in this repo, use npm.",
    )
    conn = sqlite3.connect(path)
    rows = [tuple(r) for r in conn.execute("SELECT statement, status, sessions FROM cards ORDER BY said_at")]
    conn.close()
    assert rows == [("Always use pnpm instead of npm in this repo.", "superseded", 3),
                    ("Never use pnpm in this repo, use npm.", "active", 1)]


# ---------------------------------------------------------------------------------------------
# forget: everywhere, and not injected again


def test_a_forgotten_card_is_not_injected_at_session_start(sample_home):
    cid = card_id_where(sample_home, "billing-api", "Moved auth-service off mini-lola%")
    res = cli(sample_home, "forget", str(cid), "--agent", "billing-api")
    assert res.exit_code == 0, res.output
    text = hook(sample_home, "session-start", {"session_id": "f1", "cwd": SAMPLE_CWD,
                                               "hook_event_name": "SessionStart", "source": "startup"})
    assert text.startswith("[reverie memory]")
    assert "moved auth-service off mini-lola" not in text.lower()


def test_a_forgotten_entity_is_gone_from_recall_and_the_markdown_export(sample_home, tmp_path):
    res = cli(sample_home, "forget", "mini-lola", "--agent", "billing-api")
    assert res.exit_code == 0, res.output
    assert cli(sample_home, "graph", "mini-lola", "--agent", "billing-api").exit_code == 1
    text = hook(sample_home, "session-start", {"session_id": "f2", "cwd": SAMPLE_CWD,
                                               "hook_event_name": "SessionStart", "source": "startup"})
    assert text.startswith("[reverie memory]")
    out = tmp_path / "md"
    assert cli(sample_home, "export", "--markdown", str(out), "--agent", "billing-api").exit_code == 0
    exported = {p.name: p.read_text() for p in out.iterdir() if p.is_file()}
    assert ("mini-lola" in text.lower(), [n for n, t in exported.items() if "mini-lola" in t.lower()]) == (False, [])


def test_a_forgotten_card_is_not_learned_again_when_its_conversation_is_consolidated_again(reverie_home):
    path = consolidate_said(reverie_home, "From now on, always use pnpm instead of npm in this repo.",
                            "Never commit directly to main; always open a pull request.")
    conn = sqlite3.connect(path)
    (cid,) = conn.execute("SELECT id FROM cards WHERE statement LIKE '%pnpm%'").fetchone()
    conn.close()
    assert cli(reverie_home, "forget", str(cid), "--agent", "demo").exit_code == 0
    # the same transcripts are consolidated again from scratch (progress lost, e.g. a re-run)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DELETE FROM progress")
    conn.close()
    summary = consolidate_agent(reverie_home, "demo", writer="offline", redactor=_NoSecrets())
    assert summary["errors"] == []
    conn = sqlite3.connect(path)
    rows = [tuple(r) for r in conn.execute("SELECT statement, status, sessions FROM cards ORDER BY id")]
    conn.close()
    assert rows == [("Never commit directly to main; always open a pull request.", "active", 1)]
    res = cli(reverie_home, "search", "pnpm", "--agent", "demo", "--json")
    assert json.loads(res.stdout)["cards"] == []


# ---------------------------------------------------------------------------------------------
# trust: feedback arithmetic through the CLI, pinned cards never move


def test_feedback_scores_and_maturity_follow_docs_trust_md_and_a_pinned_card_never_moves(reverie_home):
    db = open_db(agent_db_path(reverie_home, "demo"))
    s = MergeSession(db)
    rule = s.merge(NewCard("Always run make lint before committing in the shop repo.", "decision", 1.0, "s1",
                           "2026-02-01T00:00:00Z"), now=NOW).card_id
    pinned = s.merge(NewCard("Use pnpm instead of npm in the web repo.", "preference", 0.9, "s1",
                             "2026-02-01T00:00:00Z"), now=NOW).card_id
    db.close()

    def feedback(cid: int, kind: str) -> tuple:
        res = cli(reverie_home, "feedback", str(cid), kind, "--agent", "demo", "--json")
        assert res.exit_code == 0, res.output
        d = json.loads(res.stdout)
        return d["maturity"], round(d["score"], 3), d["helpful_count"], d["harmful_count"], d["inverted_to"]

    seen = [feedback(rule, "helpful") for _ in range(10)]
    assert seen[1] == ("candidate", 1.0, 2, 0, None)          # < 3 events: candidate, factor 0.5
    assert seen[2] == ("established", 3.0, 3, 0, None)        # 3 events, no harm: established, factor 1
    assert seen[9] == ("proven", 15.0, 10, 0, None)           # 10 helpful, share 0: proven, factor 1.5
    assert feedback(rule, "harmful") == ("proven", 9.0, 10, 1, None)        # 1/11 = 9% < 10%: still proven
    assert feedback(rule, "harmful") == ("established", 2.0, 10, 2, None)   # 2/12 = 17%: one rung down
    assert feedback(rule, "harmful") == ("established", -2.0, 10, 3, None)  # 23%: still established

    assert cli(reverie_home, "pin", str(pinned), "--agent", "demo").output == f"card {pinned} pinned\n"
    assert [feedback(pinned, "harmful") for _ in range(6)][-1] == ("candidate", -12.0, 0, 6, None)
    conn = sqlite3.connect(agent_db_path(reverie_home, "demo"))
    rows = [tuple(r) for r in conn.execute("SELECT id, status, pinned, confidence FROM cards ORDER BY id")]
    conn.close()
    assert rows == [(rule, "active", 0, 1.0), (pinned, "active", 1, 0.9)]


# ---------------------------------------------------------------------------------------------
# Markdown: export -> import round trips exactly


def test_markdown_round_trip_changes_no_row_and_one_edit_changes_exactly_that_card(sample_home, tmp_path):
    db_path = agent_db_path(sample_home, "billing-api")
    out = tmp_path / "md"
    assert cli(sample_home, "export", "--markdown", str(out), "--agent", "billing-api").exit_code == 0
    before = dump(db_path)
    res = cli(sample_home, "import", "--markdown", str(out), "--agent", "billing-api", "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["changed"] is False, res.output
    assert dump(db_path) == before

    semantic = out / "semantic.md"
    text = semantic.read_text()
    old = "This repo uses pnpm, not npm"
    assert text.count(old) == 1
    semantic.write_text(text.replace(old, "This repo uses pnpm 9, not npm"))
    edited_id = card_id_where(sample_home, "billing-api", old + "%")
    res = cli(sample_home, "import", "--markdown", str(out), "--agent", "billing-api", "--json")
    result = json.loads(res.stdout)
    assert {k: v for k, v in result.items() if v and k not in ("agent", "unchanged", "episodes_unchanged")} == {
        "edited": 1, "changed": True}
    after = dump(db_path)
    changed = {t for t in after if after[t] != before.get(t)}
    assert changed <= {"cards", "card_entities", "card_sessions", "card_trust", "maintenance_log", "graph_meta"}, changed
    conn = sqlite3.connect(db_path)
    rows = [tuple(r) for r in conn.execute(
        "SELECT id, status, superseded_by FROM cards WHERE id = ? OR statement LIKE 'This repo uses pnpm 9%' ORDER BY id",
        (edited_id,))]
    others_before = {r for r in before["cards"] if not r.startswith(f"({edited_id},")}
    others_after = {r for r in after["cards"] if not r.startswith(f"({edited_id},") and "pnpm 9" not in r}
    conn.close()
    assert rows == [(edited_id, "superseded", rows[1][0]), (rows[1][0], "active", None)]
    assert others_after == others_before


# ---------------------------------------------------------------------------------------------
# recall through the hooks on a consolidated home


def test_hooks_name_things_once_per_session_skip_small_talk_and_start_over_after_compaction(sample_home):
    def start(source: str) -> str:
        return hook(sample_home, "session-start", {"session_id": "h1", "cwd": SAMPLE_CWD,
                                                   "hook_event_name": "SessionStart", "source": source})

    def prompt(text: str) -> str:
        return hook(sample_home, "user-prompt-submit", {"session_id": "h1", "cwd": SAMPLE_CWD,
                                                        "hook_event_name": "UserPromptSubmit", "prompt": text})

    primer = start("startup")
    assert "pnpm" in primer and len(primer) <= 4000
    first = prompt("where does auth-service run now?")
    assert "auth-service (service):" in first
    assert "auth-service runs on prod-k8s" in first
    assert "auth-service runs on mini-lola (no longer;" in first
    assert "pnpm" not in first                            # given at session start already
    assert prompt("where does auth-service run now?") == ""   # nothing twice in one session
    assert prompt("thanks, that's all for now!") == ""         # small talk gets nothing
    assert start("compact").startswith(primer.split("\n")[0])  # the context was compacted: primer again
    again = prompt("where does auth-service run now?")
    assert "auth-service runs on prod-k8s" in again
    log = (sample_home / "agents" / "billing-api" / "memory-recalls.jsonl").read_text().splitlines()
    assert [json.loads(x)["kind"] for x in log] == ["primer", "prompt", "primer", "prompt"]
