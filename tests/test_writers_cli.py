"""The claude-cli writer against a fake `claude` executable on PATH (written by the test)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.consolidate.budget import RetryPolicy
from reverie.consolidate.classify import classify
from reverie.consolidate.errors import ReverieError
from reverie.consolidate.passages import CONSOLIDATION_MARKER, Passage
from reverie.consolidate.writers.base import Candidate, WriteRequest, response_schema
from reverie.consolidate.writers.claude_cli import ClaudeCliWriter

CARDS = {"cards": [{"statement": "Use pnpm, not npm, for every install in this repo.", "category": "preference",
                    "importance": 4, "entities": [{"name": "pnpm", "type": "tool"}, {"name": "npm", "type": "tool"}],
                    "relations": [], "evidence": ["P1"], "quote": "always use pnpm instead of npm"}]}

FAKE = r'''#!{python}
import json, os, sys
log = {log!r}
prompt = sys.stdin.read()
with open(log, "a") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "child_guard": os.environ.get("REVERIE_CHILD"),
                          "prompt_head": prompt.splitlines()[0] if prompt else ""}}) + "\n")
mode = {mode!r}
if mode == "structured":
    out = {{"type": "result", "subtype": "success", "is_error": False, "result": "",
           "structured_output": {cards}, "session_id": "s", "total_cost_usd": 0.0021,
           "usage": {{"input_tokens": 900, "output_tokens": 80}}}}
elif mode == "result_text":
    out = {{"type": "result", "subtype": "success", "is_error": False,
           "result": "```json\n" + json.dumps({cards}) + "\n```", "total_cost_usd": 0.002, "usage": {{}}}}
elif mode == "schema_retries":
    out = {{"type": "result", "subtype": "error_max_structured_output_retries", "is_error": True, "result": ""}}
elif mode == "garbage":
    print("this is not json"); sys.exit(0)
elif mode == "overloaded":
    sys.stderr.write("API Error: 529 Overloaded\n"); sys.exit(1)
print(json.dumps(out))
'''


def _request() -> WriteRequest:
    p = Passage(key="user:1", kind="user", text="From now on, always use pnpm instead of npm in this repo.",
                conversation="c", message_id=1, timestamp="2026-10-01T10:00:00Z")
    return WriteRequest(id="c:0", agent="demo", conversation="c", candidates=[Candidate("P1", p, classify(p))])


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    def make(mode: str) -> Path:
        bindir = tmp_path / f"bin-{mode}"
        bindir.mkdir()
        log = tmp_path / f"calls-{mode}.jsonl"
        exe = bindir / "claude"
        exe.write_text(FAKE.format(python=sys.executable, log=str(log), mode=mode, cards=json.dumps(CARDS)).replace(
            "False", "False"))
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
        return log
    return make


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _writer() -> ClaudeCliWriter:
    return ClaudeCliWriter.from_settings({"claude_cli": {"command": "claude", "model": "haiku", "timeout_s": 30}},
                                         retry=RetryPolicy(attempts=2, base_delay_s=0, max_delay_s=0, sleep=lambda s: None))


def test_structured_output_and_exact_child_invocation(fake_claude):
    log = fake_claude("structured")
    res = _writer().write_one(_request())
    assert res.error is None
    assert [c.model_dump() for c in res.cards] == CARDS["cards"]
    assert (res.calls, res.input_tokens, res.output_tokens, res.cost_usd) == (1, 900, 80, 0.0021)
    (call,) = _calls(log)
    assert call == {
        "argv": ["-p", "--output-format", "json", "--model", "haiku",
                 "--json-schema", json.dumps(response_schema(), separators=(",", ":")),
                 "--settings", '{"disableAllHooks":true}', "--no-session-persistence", "--tools", "",
                 "--max-turns", "1"],
        "child_guard": "1",
        "prompt_head": CONSOLIDATION_MARKER,
    }


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
