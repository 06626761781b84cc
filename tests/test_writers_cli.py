"""The claude-cli writer against a fake `claude` executable on PATH (written by the test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.consolidate.budget import RetryPolicy
from reverie.consolidate.classify import classify
from reverie.consolidate.errors import ReverieError
from reverie.consolidate.passages import CONSOLIDATION_MARKER, Passage
from reverie.consolidate.writers.base import Candidate, WriteRequest, response_schema
from reverie.consolidate.writers.claude_cli import ClaudeCliWriter, describe_credential
from reverie.consolidate.writers.claude_cli import auth_status as cli_auth_status
from reverie.consolidate.writers.prompts import INSTRUCTIONS, cli_prompt, user_prompt

from fakes import FAKE_CLAUDE_CARDS as CARDS
from fakes import install_fake_claude


def _request() -> WriteRequest:
    p = Passage(key="user:1", kind="user", text="From now on, always use pnpm instead of npm in this repo.",
                conversation="c", message_id=1, timestamp="2026-10-01T10:00:00Z")
    return WriteRequest(id="c:0", agent="demo", conversation="c", candidates=[Candidate("P1", p, classify(p))])


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    """`make(mode, login=True, helper=False)` puts tests/fakes.FAKE_CLAUDE first on PATH; returns its call log."""
    def make(mode: str, *, login: bool = True, helper: bool = False) -> Path:
        bindir = tmp_path / f"bin-{mode}"
        log = tmp_path / f"calls-{mode}.jsonl"
        install_fake_claude(bindir, log, mode=mode, login=login, helper=helper)
        monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
        return log
    return make


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _writer(**claude_cli) -> ClaudeCliWriter:
    return ClaudeCliWriter.from_settings({"claude_cli": {"command": "claude", "model": "haiku", "timeout_s": 30,
                                                         **claude_cli}},
                                         retry=RetryPolicy(attempts=2, base_delay_s=0, max_delay_s=0, sleep=lambda s: None))


def test_structured_output_and_exact_child_invocation(fake_claude, reverie_home):
    """The child gets our instructions as its system prompt, the schema, two turns, no tools, no
    hooks, no session file, no API-key route; its environment switches CLAUDE.md, auto memory,
    thinking and non-essential traffic off; it runs in reverie's own empty cache folder; stdin is
    the marker line and the passages only (nothing sent twice)."""
    log = fake_claude("structured")
    res = _writer().write_one(_request())
    assert res.error is None
    assert [c.model_dump() for c in res.cards] == CARDS["cards"]
    assert (res.calls, res.input_tokens, res.output_tokens, res.cost_usd) == (1, 900, 80, 0.0021)
    (call,) = _calls(log)
    workdir = reverie_home / "cache" / "claude-cli"
    assert call == {
        "argv": ["-p", "--output-format", "json", "--model", "haiku",
                 "--json-schema", json.dumps(response_schema(), separators=(",", ":")),
                 "--system-prompt", INSTRUCTIONS,
                 "--settings", '{"disableAllHooks":true,"alwaysThinkingEnabled":false,"apiKeyHelper":"",'
                               '"env":{"ANTHROPIC_API_KEY":"","ANTHROPIC_AUTH_TOKEN":""}}',
                 "--no-session-persistence", "--tools", "", "--max-turns", "2"],
        "cwd": str(workdir),
        "env": {"REVERIE_CHILD": "1", "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1", "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
                "MAX_THINKING_TOKENS": "0", "CLAUDE_CODE_DISABLE_THINKING": "1", "ENABLE_TOOL_SEARCH": "false",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "2048"},
        "stdin": f"{CONSOLIDATION_MARKER}\n{user_prompt(_request())}",
        "credential": "claude.ai",
    }
    assert list(workdir.iterdir()) == [] and workdir.stat().st_mode & 0o777 == 0o700


def test_pass_api_key_hands_the_key_over_and_leaves_the_helper_alone(fake_claude, monkeypatch):
    log = fake_claude("structured", login=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-opted-in")
    res = _writer(pass_api_key=True).write_one(_request())
    assert res.error is None
    (call,) = _calls(log)
    settings = json.loads(call["argv"][call["argv"].index("--settings") + 1])
    assert settings == {"disableAllHooks": True, "alwaysThinkingEnabled": False}
    assert (call["env"]["ANTHROPIC_API_KEY"], call["credential"]) == ("(set)", "api_key")


def test_without_pass_api_key_an_api_key_helper_of_the_user_settings_is_not_used(fake_claude, monkeypatch):
    """pass_api_key false: a key in the environment and an apiKeyHelper of the user's settings are
    both kept from the child, which uses the Claude login."""
    log = fake_claude("structured", login=True, helper=True)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-not-for-the-child")
    assert _writer().write_one(_request()).error is None
    assert [(c["credential"], "ANTHROPIC_API_KEY" in c["env"]) for c in _calls(log)] == [("claude.ai", False)]
    assert cli_auth_status("claude")["method"] == "claude.ai"
    assert cli_auth_status("claude", pass_api_key=True)["method"] == "api_key"


@pytest.mark.parametrize("key,pass_key,expected", [
    (True, False, "claude could not authenticate (Not logged in · Please run /login): ANTHROPIC_API_KEY is set, but "
                  "reverie keeps it from the child because claude_cli.pass_api_key is false, so `claude` needs your "
                  "Claude login: run `claude auth login` (or /login inside `claude`); or let it bill the key: "
                  "`reverie settings set claude_cli.pass_api_key true`; or use --writer anthropic"),
    (False, False, "claude could not authenticate (Not logged in · Please run /login): run `claude auth login` (or "
                   "/login inside `claude`) to log in; or set ANTHROPIC_API_KEY and `reverie settings set "
                   "claude_cli.pass_api_key true` to bill an API key"),
])
def test_an_auth_failure_names_the_command_or_setting_that_fixes_it(fake_claude, monkeypatch, key, pass_key,
                                                                    expected):
    log = fake_claude("structured", login=False, helper=False)
    if key:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-kept-from-the-child")
    res = _writer(pass_api_key=pass_key).write_one(_request())
    assert (res.error.kind, res.error.message, res.calls, len(_calls(log))) == ("auth", expected, 1, 1)


def test_auth_status_names_the_credential_never_the_account(fake_claude):
    fake_claude("structured", login=True)
    status = cli_auth_status("claude")
    assert status == {"logged_in": True, "method": "claude.ai", "source": None, "subscription": "max", "error": None}
    assert describe_credential(status) == "your Claude login (claude.ai, max plan)"
    assert "example.com" not in json.dumps(status)


def test_auth_status_without_the_cli(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert cli_auth_status("claude") == {"logged_in": False, "method": None, "source": None, "subscription": None,
                                         "error": "`claude` is not on PATH"}


def test_the_dollar_cap_counts_the_system_prompt_and_every_turn(fake_claude):
    """The estimate prices what is really sent (system prompt + prompt + schema + Claude Code's
    framing) for both turns plus the output cap: a cap just below it sends nothing, just above it
    sends the call."""
    from reverie.consolidate.budget import Budget, cost_usd
    from reverie.consolidate.writers import claude_cli

    log = fake_claude("structured")
    writer, req = _writer(), _request()
    sent = (len(INSTRUCTIONS) + len(cli_prompt(req)) + len(json.dumps(response_schema(), separators=(",", ":")))
            + claude_cli.FRAMING_CHARS)
    assert writer.sent_chars(req) == sent and len(INSTRUCTIONS) > 2000
    tokens = sent // 4
    expected = cost_usd("haiku", input_tokens=2 * tokens + 2048, output_tokens=2 * 2048)
    assert writer.estimate_cost(req) == pytest.approx(expected)
    (refused,) = writer.write_many([req], Budget(max_cost_usd=expected * 0.99))
    assert (refused.error.kind, _calls(log)) == ("budget", [])
    (sent_call,) = writer.write_many([req], Budget(max_cost_usd=expected * 1.01))
    assert sent_call.error is None and len(_calls(log)) == 1


SAMPLES = Path(__file__).resolve().parent.parent / "fixtures" / "sample-projects"


@pytest.fixture
def consolidated_home(reverie_home):
    """The home of this test (REVERIE_HOME) with the sample transcripts indexed and the billing-api
    agent consolidated offline: a cwd our SessionStart hook has memory for."""
    if not SAMPLES.exists():
        pytest.skip("fixtures/sample-projects not generated")
    from reverie.consolidate.index import index_all
    from reverie.consolidate.pipeline import consolidate_agent

    index_all(reverie_home, SAMPLES)
    summary = consolidate_agent(reverie_home, "billing-api", writer="offline")
    assert summary["cards_written"] > 0 and summary["errors"] == []
    return reverie_home


def _hook(event: str, payload: dict, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reverie.consolidate", "hook", event], input=json.dumps(payload),
                          text=True, capture_output=True, env=env, timeout=60)


def test_guard_keeps_our_hooks_out_of_the_child(fake_claude, consolidated_home):
    """The child's environment (the writer's own `env()`, REVERIE_CHILD=1) silences a hook call that,
    without the guard, injects this agent's memory. The guarded call runs first, so its silence
    cannot come from the session having been primed already; it also leaves no recall-log line."""
    fake_claude("structured")
    guarded = _writer().env()
    assert guarded["REVERIE_CHILD"] == "1" and guarded["REVERIE_HOME"] == str(consolidated_home)
    unguarded = {k: v for k, v in guarded.items() if k != "REVERIE_CHILD"}
    payload = {"session_id": "s-guard", "cwd": "/home/dev/acme/billing-api", "hook_event_name": "SessionStart",
               "source": "startup"}
    recall_log = consolidated_home / "agents" / "billing-api" / "memory-recalls.jsonl"

    child = _hook("session-start", payload, guarded)
    assert (child.returncode, child.stdout) == (0, "")
    assert not recall_log.exists()

    parent = _hook("session-start", payload, unguarded)
    assert parent.returncode == 0
    out = json.loads(parent.stdout)
    assert list(out) == ["hookSpecificOutput"] and out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = out["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("[reverie memory]") and "billing-api" in context
    assert len(recall_log.read_text().splitlines()) == 1

    again = _hook("session-start", payload, guarded)
    assert (again.returncode, again.stdout) == (0, "")
    assert len(recall_log.read_text().splitlines()) == 1


def test_result_text_json_is_accepted(fake_claude):
    fake_claude("result_text")
    res = _writer().write_one(_request())
    assert res.error is None and [c.statement for c in res.cards] == [CARDS["cards"][0]["statement"]]


@pytest.mark.parametrize("mode,kind,calls", [("schema_retries", "schema", 1), ("garbage", "malformed", 1),
                                             ("overloaded", "transient", 2)])
def test_cli_faults_are_reported(fake_claude, mode, kind, calls):
    log = fake_claude(mode)
    res = _writer().write_one(_request())
    assert res.cards == [] and res.error.kind == kind and res.calls == calls == len(_calls(log))


def test_missing_cli_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ReverieError, match="not on PATH"):
        ClaudeCliWriter.from_settings({"claude_cli": {"command": "claude"}})
