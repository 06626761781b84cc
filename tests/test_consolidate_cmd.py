"""`reverie consolidate --now` on the project's own sample transcripts (real indexer, real redactor,
offline writer): exact cards, relations, evidence; JSON summaries; a second run writes nothing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "fixtures" / "sample-projects"

# The offline writer: one call per exchange (so each informative exchange gets a card), first person
# of the user stated as the point ("I prefer X" -> "Prefer X", "we decided to use X" -> "Use X"; never
# "the user ..."), a sentence in "I/you" (requests, narration) never taken as a card on its own.
EXPECTED_CARDS = {
    "billing-api": [
        ("Moved auth-service off mini-lola, it runs on prod-k8s now (namespace auth).", "fact", 2, 0.5, "user:44"),
        ("The root cause of the 502s is that nginx's `proxy_read_timeout` is 30s, while rendering a PDF for a large "
         "invoice (200+ pages) takes about 45s, so nginx gives up and returns 502 before billing-api answers.",
         "lesson", 3, 0.5, "assistant:6.0"),
        ("This repo uses pnpm, not npm: the lockfile is pnpm-lock.yaml, so don't let anything generate a "
         "package-lock.json.", "preference", 4, 1.0, "user:7"),
        # Session 1's "Use pnpm instead of npm because ..." is the same choice: it reinforces this card.
        ("This repo uses pnpm, not npm: the lockfile is pnpm-lock.yaml, so don't let anything generate a "
         "package-lock.json.", "preference", 4, 1.0, "user:30"),
        ("Never run migrations on prod directly; always go through the deploy pipeline.", "correction", 4, 0.9, "user:15"),
        # A sub-agent's report (issue 13: sidechain conclusions are passages).
        ("PDF rendering moved to a BullMQ background job; the export route returns 202 with a job id.",
         "pattern", 2, 0.5, "report:57.0"),
        # The assistant's list of findings: one fact card carrying the three relations.
        ("billing-api stores invoice PDFs in the S3 bucket `acme-invoices`; billing-api depends on auth-service; "
         "auth-service runs on mini-lola, the Mac mini in the office rack.", "fact", 2, 0.5, "assistant:39.1"),
        ("Prefer small, focused commits with conventional commit messages (feat:, fix:, chore:), never one big "
         "commit at the end.", "preference", 4, 1.0, "user:40"),
    ],
    "infra": [
        # The agent's restatement ("State is remote: ...") is a label-led fragment: no card (issue 13).
        ("Decided on remote state in acme-tfstate with DynamoDB locking because two people applied at once last "
         "year and corrupted the local state.", "decision", 4, 1.0, "user:5"),
    ],
}


@pytest.fixture
def indexed(reverie_home):
    if not SAMPLES.exists():
        pytest.skip("fixtures/sample-projects not generated")
    from reverie.consolidate.index import index_all

    index_all(reverie_home, SAMPLES)
    return reverie_home


def _planted() -> tuple[str, ...]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_samples", ROOT / "fixtures" / "make_samples.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.PLANTED_SECRETS


def _invoke(home: Path, *args: str):
    return CliRunner().invoke(build_cli(), ["--home", str(home), *args], catch_exceptions=False)


def test_consolidate_samples_offline_exact_cards(indexed):
    res = _invoke(indexed, "consolidate", "--now", "--all", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [(s["agent"], s["conversations"], s["cards_written"], s["cards_rejected"], s["calls"], s["cost_usd"],
             s["backlog"], s["errors"]) for s in out] == [
        ("billing-api", 3, 8, {}, 0, 0.0, False, []),
        ("infra", 1, 1, {}, 0, 0.0, False, []),
    ]
    for agent, expected in EXPECTED_CARDS.items():
        conn = sqlite3.connect(indexed / "agents" / agent / "agent.db")
        got = conn.execute(
            """SELECT c.statement, c.category, c.importance, c.confidence, e.passage
               FROM cards c JOIN evidence e ON e.card_id = c.id ORDER BY c.id""").fetchall()
        assert got == expected
        rels = conn.execute(
            """SELECT s.name, r.verb, o.name, r.holds FROM relation_statements r JOIN entities s ON s.id = r.subject_id
               JOIN entities o ON o.id = r.object_id ORDER BY r.id""").fetchall()
        if agent == "billing-api":
            # The third conversation moved auth-service off mini-lola; the second still said it ran there
            # (its relation state, by said_at, is "ended": graph.relations).
            assert rels == [("auth-service", "runs_on", "mini-lola", 0), ("auth-service", "runs_on", "prod-k8s", 1),
                            ("billing-api", "stores_data_in", "acme-invoices", 1),
                            ("billing-api", "depends_on", "auth-service", 1), ("auth-service", "runs_on", "mini-lola", 1)]
            state = conn.execute(
                """SELECT o.name, r.holds FROM relations r JOIN entities s ON s.id = r.subject_id
                   JOIN entities o ON o.id = r.object_id WHERE s.name = 'auth-service' ORDER BY o.name""").fetchall()
            assert state == [("mini-lola", 0), ("prod-k8s", 1)]
        blob = "\n".join(r[0] for r in conn.execute("SELECT statement FROM cards"))
        for secret in _planted():
            assert secret not in blob
        conn.close()
    # A second run over unchanged transcripts writes nothing.
    res = _invoke(indexed, "consolidate", "--now", "--agent", "billing-api", "--json")
    again = json.loads(res.output)
    assert (again["agent"], again["conversations"], again["cards_written"], again["passages"]) == ("billing-api", 0, 0, 0)


def test_text_output_and_errors_name_the_fix(indexed):
    res = _invoke(indexed, "consolidate", "--now", "--agent", "infra")
    assert res.exit_code == 0
    assert res.output.startswith("infra: 1 cards written from 1 conversations")
    res = _invoke(indexed, "consolidate", "--now", "--agent", "nope")
    assert res.exit_code == 1 and "reverie index" in res.output
    res = _invoke(indexed, "consolidate", "--agent", "infra")
    assert res.exit_code == 1 and "--now" in res.output
    res = _invoke(indexed, "consolidate", "--now", "--agent", "infra", "--writer", "anthropic")
    assert res.exit_code == 1 and "ANTHROPIC_API_KEY" in res.output


# ---------------------------------------------------------------------------------------------
# the default writer `auto`, and errors as JSON


def _shop(home: Path) -> None:
    from fakes import make_agent

    make_agent(home, "shop", {"s-1": [("user", "From now on, always use pnpm instead of npm in this repo."),
                                      ("assistant", "Understood: pnpm from now on.")]})


def _claude(tmp_path: Path, monkeypatch, **kw) -> Path:
    import os

    from fakes import install_fake_claude

    log = tmp_path / "claude-calls.jsonl"
    install_fake_claude(tmp_path / "bin", log, **kw)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return log


def test_auto_without_claude_or_key_runs_offline_and_says_why(reverie_home):
    _shop(reverie_home)
    res = _invoke(reverie_home, "consolidate", "--now", "--agent", "shop", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert (out["writer"], out["writer_reason"], out["calls"]) == (
        "offline", "auto: `claude` is not on PATH, and no Anthropic API key is set (ANTHROPIC_API_KEY or settings "
                   "anthropic.api_key)", 0)


def test_auto_with_a_logged_in_claude_runs_the_claude_cli_writer(reverie_home, tmp_path, monkeypatch):
    _shop(reverie_home)
    log = _claude(tmp_path, monkeypatch, login=True)
    res = _invoke(reverie_home, "consolidate", "--now", "--agent", "shop", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert (out["writer"], out["writer_reason"], out["calls"], out["cost_usd"], out["cards_written"]) == (
        "claude-cli", "auto: `claude` is on PATH and logged in with your Claude login (claude.ai, max plan)",
        1, 0.0021, 1)
    # one auth check, then one card-writing call
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [c["argv"][-3:] for c in calls] == [["auth", "status", "--json"], ["", "--max-turns", "2"]]


def test_auto_prefers_an_api_key_over_a_claude_that_is_not_logged_in(tmp_path, monkeypatch):
    from reverie.consolidate.writers.select import choose

    _claude(tmp_path, monkeypatch, login=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-for-the-anthropic-writer")
    assert choose({"claude_cli": {}, "anthropic": {}}) == (
        "anthropic", "`claude` is on PATH but not logged in (ANTHROPIC_API_KEY is kept from it: "
                     "claude_cli.pass_api_key is false); ANTHROPIC_API_KEY is set")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert choose({"claude_cli": {}, "anthropic": {"api_key": "sk-ant-api03-in-settings"}}) == (
        "anthropic", "`claude` is on PATH but not logged in; settings anthropic.api_key is set")
    assert choose({"claude_cli": {}, "anthropic": {}}) == (
        "offline", "`claude` is on PATH but not logged in, and no Anthropic API key is set (ANTHROPIC_API_KEY or "
                   "settings anthropic.api_key)")


def test_a_claude_auth_failure_under_json_prints_a_json_error_naming_the_fix(reverie_home, tmp_path, monkeypatch):
    """ANTHROPIC_API_KEY set, no Claude login, pass_api_key off: the run stops at the first call and
    --json prints the error (what to run or set) on stdout; exit 1; the key is never printed."""
    _shop(reverie_home)
    log = _claude(tmp_path, monkeypatch, login=False)
    key = "sk-ant-api03-" + "k" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    res = _invoke(reverie_home, "consolidate", "--now", "--agent", "shop", "--writer", "claude-cli", "--json")
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert out == {"error": {"kind": "ApiAuthFailed", "message": (
        "claude could not authenticate (Not logged in · Please run /login): ANTHROPIC_API_KEY is set, but reverie "
        "keeps it from the child because claude_cli.pass_api_key is false, so `claude` needs your Claude login: run "
        "`claude auth login` (or /login inside `claude`); or let it bill the key: `reverie settings set "
        "claude_cli.pass_api_key true`; or use --writer anthropic. `reverie doctor` shows which credential the "
        "claude child uses.")}}
    assert res.stderr == f"Error: {out['error']['message']}\n"
    assert key not in res.output and len(log.read_text().splitlines()) == 1
