"""What reaches a model: redacted text only (anthropic writer and claude CLI), no API credentials
in the claude child's environment, the child's reported cost against the dollar cap, and a key set
without putting it on the command line."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner

from reverie.consolidate.budget import Budget, RetryPolicy
from reverie.consolidate.index import index_all
from reverie.consolidate.pipeline import consolidate_agent, list_agent_ids
from reverie.consolidate.writers.anthropic_writer import AnthropicWriter
from reverie.consolidate.writers.claude_cli import ClaudeCliWriter
from test_leak import PLANTED, _write_transcripts

NO_CARDS = {"cards": []}

FAKE = r'''#!{python}
import json, os, sys
prompt = sys.stdin.read()
with open({log!r}, "a") as fh:
    fh.write(json.dumps({{"prompt": prompt, "env": {{k: v for k, v in os.environ.items() if k.startswith(("ANTHROPIC", "REVERIE"))}}}}) + "\n")
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "",
                   "structured_output": {{"cards": []}}, "total_cost_usd": {cost},
                   "usage": {{"input_tokens": 900, "output_tokens": 80}}}}))
'''


@pytest.fixture
def fake_claude(tmp_path, monkeypatch):
    def make(cost: float = 0.0021) -> Path:
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        log = tmp_path / "claude-calls.jsonl"
        exe = bindir / "claude"
        exe.write_text(FAKE.format(python=sys.executable, log=str(log), cost=cost))
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
        return log
    return make


def _calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _indexed(home: Path, tmp_path: Path) -> list[str]:
    projects = tmp_path / "projects"
    _write_transcripts(projects)
    index_all(home, projects_dir=projects)
    agents = list_agent_ids(home)
    assert agents
    return agents


def _assert_redacted(payloads: list[str]) -> None:
    assert payloads, "no request reached the writer"
    text = "\n".join(payloads)
    assert "deploy pipeline" in text  # the passages did reach the model
    assert [s for s in PLANTED if s in text] == []


def test_anthropic_requests_carry_no_planted_secret(reverie_home, tmp_path):
    bodies: list[str] = []

    def handler(request):
        bodies.append(request.content.decode())
        return httpx2.Response(200, json={
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": [{"type": "text", "text": json.dumps(NO_CARDS)}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}})

    writer = AnthropicWriter(api_key="test-key", http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                             retry=RetryPolicy(attempts=1, base_delay_s=0, max_delay_s=0, sleep=lambda s: None))
    for agent in _indexed(reverie_home, tmp_path):
        consolidate_agent(reverie_home, agent, writer=writer)
    _assert_redacted(bodies)


def test_claude_cli_prompts_carry_no_planted_secret_and_no_api_key(reverie_home, tmp_path, fake_claude, monkeypatch):
    log = fake_claude()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-should-not-reach-the-child")
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "should-not-reach-the-child-either")
    writer = ClaudeCliWriter(retry=RetryPolicy(attempts=1, base_delay_s=0, max_delay_s=0, sleep=lambda s: None))
    for agent in _indexed(reverie_home, tmp_path):
        consolidate_agent(reverie_home, agent, writer=writer)
    calls = _calls(log)
    _assert_redacted([c["prompt"] for c in calls])
    assert [{k: v for k, v in c["env"].items() if k not in ("REVERIE_HOME", "REVERIE_CACHE_DIR", "REVERIE_WHEEL", "REVERIE_WHEEL_VENV")} for c in calls] == [
        {"REVERIE_CHILD": "1"}] * len(calls)


def test_claude_cli_passes_the_api_key_only_when_settings_opt_in(fake_claude, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-opted-in")
    fake_claude()
    off = ClaudeCliWriter.from_settings({"claude_cli": {}})
    on = ClaudeCliWriter.from_settings({"claude_cli": {"pass_api_key": True}})
    assert ("ANTHROPIC_API_KEY" in off.env(), on.env().get("ANTHROPIC_API_KEY")) == (False, "sk-ant-api03-opted-in")


def test_claude_cli_reported_cost_counts_against_the_dollar_cap(fake_claude):
    from test_writers_cli import _request

    log = fake_claude(cost=0.01)
    writer = ClaudeCliWriter(retry=RetryPolicy(attempts=1, base_delay_s=0, max_delay_s=0, sleep=lambda s: None))
    # room for the first call's worst case, not for a second one after the reported $0.01
    budget = Budget(max_calls=10, max_cost_usd=writer.estimate_cost(_request()) + 0.005)
    results = list(writer.write_many([_request(), _request(), _request()], budget))
    assert [r.error.kind if r.error else None for r in results] == [None, "budget", "budget"]
    assert (len(_calls(log)), budget.calls, budget.cost, budget.exhausted) == (1, 1, 0.01, ["cost"])


def test_settings_set_api_key_from_stdin_keeps_it_off_the_command_line(reverie_home):
    from reverie.consolidate.commands import build_cli
    from reverie.consolidate.settings import load_settings

    key = "sk-ant-api03-" + "x" * 40
    res = CliRunner().invoke(build_cli(), ["settings", "set", "anthropic.api_key", "-"], input=key + "\n")
    assert res.exit_code == 0, res.output
    assert key not in res.output and "anthropic.api_key = (hidden)" in res.output
    assert load_settings(reverie_home)["anthropic"]["api_key"] == key
    res = CliRunner().invoke(build_cli(), ["settings", "set", "anthropic.api_key", "-"], input="")
    assert res.exit_code == 1 and "No value for anthropic.api_key on stdin" in res.output


def test_suggested_key_commands_read_stdin():
    from reverie.consolidate.errors import ApiAuthFailed, NoApiKey

    for err in (NoApiKey(), ApiAuthFailed("HTTP 401 AuthenticationError")):
        assert "reverie settings set anthropic.api_key -" in str(err) and "api_key KEY" not in str(err)
