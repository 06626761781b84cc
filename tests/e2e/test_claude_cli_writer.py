"""The claude-cli card writer end to end: `reverie consolidate --now --writer claude-cli` runs the
real `claude` (pointed at the fake API) and what that child sends costs what it should: the
request body is at most 1.3x our own prompt and carries no CLAUDE.md text."""

from __future__ import annotations

import json
import re
import sys

from harness import TEACH, agent_id, read_jsonl

USER_MD = "USER-CLAUDE-MD-MARKER-4b1d: always answer in French."
PROJECT_MD = "PROJECT-CLAUDE-MD-MARKER-93ce: this repo uses tabs."
#: A child body may exceed our prompt by this factor (the JSON envelope, the StructuredOutput tool).
MAX_OVERHEAD = 1.3

WRAPPER = """#!{python}
# Logs what the claude-cli writer hands `claude` (argv, stdin, cwd, a few env flags), then runs it.
import json, os, subprocess, sys
data = sys.stdin.read()
with open({log!r}, "a") as fh:
    fh.write(json.dumps({{"argv": sys.argv[1:], "stdin": data, "cwd": os.getcwd(),
                         "env": {{k: os.environ.get(k) for k in ("CLAUDE_CODE_DISABLE_CLAUDE_MDS", "REVERIE_CHILD",
                                                                 "MAX_THINKING_TOKENS")}}}}) + "\\n")
proc = subprocess.run([{claude!r}] + sys.argv[1:], input=data, capture_output=True, text=True)
sys.stdout.write(proc.stdout); sys.stderr.write(proc.stderr)
sys.exit(proc.returncode)
"""


def _arg(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1] if name in argv else ""


def _card_for(request):
    """A valid card citing the passage that holds the taught decision (as a model would answer)."""
    text = request.messages_text()
    label = next(m.group(1) for m in re.finditer(r"\[(P\d+)\] user[^\n]*\n((?:  .*\n?)+)", text) if "pnpm" in m.group(2))
    return {"cards": [{"statement": "Use pnpm instead of npm in this repo because installs are faster.",
                       "category": "decision", "importance": 3,
                       "entities": [{"name": "pnpm", "type": "tool"}, {"name": "npm", "type": "tool"}],
                       "relations": [], "evidence": [label],
                       "quote": "use pnpm instead of npm in this repo because installs are faster"}]}


def test_the_claude_cli_writer_sends_our_prompt_and_nothing_else(cc, record_measure):
    cc.claude(TEACH)
    cc.reverie("index", "--json")
    (cc.config_dir / "CLAUDE.md").write_text(USER_MD + "\n")      # ~/.claude/CLAUDE.md (CLAUDE_CONFIG_DIR)
    (cc.project / "CLAUDE.md").write_text(PROJECT_MD + "\n")      # the directory reverie runs from
    log = cc.root / "claude-cli.jsonl"
    wrapper = cc.root / "claude-wrapper"
    wrapper.write_text(WRAPPER.format(python=sys.executable, log=str(log), claude=str(cc.claude_exe)))
    wrapper.chmod(0o755)
    cc.reverie("settings", "set", "claude_cli.command", str(wrapper))
    cc.reverie("settings", "set", "claude_cli.pass_api_key", "true")   # the fake takes the test key
    cc.fake.reset()
    cc.fake.structured.append(_card_for)
    run = cc.reverie("consolidate", "--now", "--all", "--writer", "claude-cli", "--json")
    [summary] = run.json
    calls = read_jsonl(log)
    requests = cc.fake.messages()
    assert summary["errors"] == [] and summary["calls"] == len(calls) >= 1, summary
    assert summary["cards_written"] == 1, summary
    primer = cc.reverie("recall", "--agent", agent_id(cc), "--primer", "--json").json
    assert [c["statement"] for c in primer["standing"]] == ["Use pnpm instead of npm in this repo because installs are faster."]

    ours = sum(len(c["stdin"]) + len(_arg(c["argv"], "--system-prompt")) + len(_arg(c["argv"], "--append-system-prompt"))
               + len(_arg(c["argv"], "--json-schema")) for c in calls)
    bodies = [len(r.raw) for r in requests]
    record_measure("claude_cli_request_body", our_prompt_chars=ours, body_chars=bodies, calls=len(calls),
                   ours_parts=[{"stdin": len(c["stdin"]), "system_prompt": len(_arg(c["argv"], "--system-prompt")),
                                "json_schema": len(_arg(c["argv"], "--json-schema"))} for c in calls],
                   system_prompt_chars=[len(r.system_text()) for r in requests],
                   thinking=[r.body.get("thinking") for r in requests],
                   body_parts=[{k: len(json.dumps(v)) for k, v in r.body.items()} for r in requests],
                   tools=[r.tool_names for r in requests])
    assert requests, "the child sent nothing to the fake API"
    for r in requests:
        assert USER_MD not in r.raw and PROJECT_MD not in r.raw
        assert "MARKER-4b1d" not in r.raw and "MARKER-93ce" not in r.raw
    assert max(bodies) <= MAX_OVERHEAD * ours, (bodies, ours)
    for c in calls:   # the child's working directory holds no CLAUDE.md, and the env switch is on
        assert c["cwd"] != str(cc.project)
        assert c["env"]["CLAUDE_CODE_DISABLE_CLAUDE_MDS"] == "1" and c["env"]["REVERIE_CHILD"] == "1"
        assert _arg(c["argv"], "--max-turns") == "2"
    assert not any(p.name == "CLAUDE.md" for p in cc.root.rglob("CLAUDE.md")
                   if p.parent not in (cc.config_dir, cc.project)), "a CLAUDE.md the child could read appeared"
    assert all(r.body.get("thinking") in (None, {"type": "disabled"}) for r in requests), \
        [r.body.get("thinking") for r in requests]
    # the child wrote no transcript of its own
    assert not any(json.dumps(ln).find("[reverie-consolidation]") >= 0 for ln in cc.lines())
