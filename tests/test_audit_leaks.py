"""Audit: planted secrets never reach disk, stdout/stderr, log records or a model prompt.

Secrets of realistic shape are planted in every place a Claude Code transcript carries text
(user prompts, assistant text, thinking, tool_use inputs, tool_result strings / lists / errors,
compaction summaries, `summary` and `custom-title` lines, local-command output, `cwd`, `gitBranch`,
a sub-agent sidechain file, a malformed line, and the name of a project folder). The real pipeline
then runs (index, consolidate, recall, search, show, export, graph, doctor, both hooks), and every
byte under the home plus everything printed is scanned for each value and its base64 / URL-encoded
forms. Three tests began as proofs of a defect (a tool input clipped before redaction, a search query
and error messages printed back unscrubbed); the others guard paths no other test covers.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import sqlite3
import stat
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from click.testing import CliRunner

from transcripts import line

# Fake credentials of realistic shape, assembled at run time so no scanner flags this file.
GH = "ghp_" + "R8tq2Lw9ZcXv4Nb7Mk3Hj6Gf5Dd1Ss0Aa2Pp"
AWS_ID = "AKIA" + "Q3EGRTY7UVXZ2WKP"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzq8Hd2Lk4T"
PG_PW = "Vq7rT2pLm9xZ" + "k4Hw"
DB_PW = "Zr8pQ2vLx9" + "Tk4Wm7Bn"
BEARER = "9f8e7d6c5b4a3928" + "1706f5e4d3c2b1a0"
PEM_BODY = "MIIEowIBAAKCAQEA7s" + "Zp3Lw8Qk2Vn5Rt9Yx1Bc4Hd6Jf0Mg3Nh7Pk2Qs5Tv8Wx1Za4Cb6De9Fg2Hj5Kl8"
HIGH = "Qm9vX2tI" + "c3RyZWFtLWtleS0xOTg3"          # seen with context first, later alone
THINK = "ghp_" + "T4hInK9wZcXv4Nb7Mk3Hj6Gf5Dd1Ss0Aa2QQ"  # only in a thinking block
TITLE = "ghp_" + "T1tLe9wQZcXv4Nb7Mk3Hj6Gf5Dd1Ss0Aa2ZZ"  # only in summary / custom-title lines
BRANCH = "ghp_" + "BrAnCh7QZcXv4Nb7Mk3Hj6Gf5Dd1Ss0Aa2YY"  # only in gitBranch
CWDTOK = "ghp_" + "CwDdIr7QZcXv4Nb7Mk3Hj6Gf5Dd1Ss0Aa2XX"  # only in a cwd the agent cd'd into
SUB = "sk_live_" + "51HsubAgEnT0k3nZcXv4Nb7Mk3Hj6Gf"    # only in the sub-agent file
BAD = "ghp_" + "MaLfOrM3dZcXv4Nb7Mk3Hj6Gf5Dd1Ss0Aa2WW"  # only in a malformed line
COMPACT = "xoxb-" + "1234567890-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"  # only in a compaction summary
PATHTOK = AWS_ID                                        # also a project folder name

PLANTED = {"GH": GH, "AWS_ID": AWS_ID, "AWS_SECRET": AWS_SECRET, "PG_PW": PG_PW, "DB_PW": DB_PW,
           "BEARER": BEARER, "PEM": PEM_BODY, "HIGH": HIGH, "THINK": THINK, "TITLE": TITLE,
           "BRANCH": BRANCH, "CWDTOK": CWDTOK, "SUB": SUB, "BAD": BAD, "COMPACT": COMPACT}

CWD = "/home/dev/projects/payments"
S1 = "7d1f4c2a-0b3e-4f55-9a61-2c8e5d4b3a10"
S2 = "9e2a6b1c-4d7f-4a38-8b20-5f6c7d8e9a01"
AGENT = "payments"


def _forms(values: dict[str, str]) -> dict[str, bytes]:
    """Each value, and its base64 and URL-encoded forms where those differ from it."""
    out: dict[str, bytes] = {}
    for name, v in values.items():
        out[name] = v.encode()
        out[name + ":b64"] = base64.b64encode(v.encode())
        quoted = urllib.parse.quote(v, safe="")
        if quoted != v:
            out[name + ":url"] = quoted.encode()
    return out


def _scan_home(home: Path, values: dict[str, str] = PLANTED) -> list[tuple[str, str]]:
    """(file under home, value name) for every planted value found in any byte of any file."""
    forms = _forms(values)
    hits = []
    for p in sorted(home.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            hits += [(str(p.relative_to(home)), name) for name, v in forms.items() if v in data]
    return hits


def _printed(text: str, values: dict[str, str] = PLANTED) -> list[str]:
    forms = _forms(values)
    return sorted(name for name, v in forms.items() if v.decode() in text)


def _L(kind, uuid, parent, content, session=S1, **kw):
    return line(kind, uuid, content, session=session, cwd=kw.pop("cwd", CWD), parent=parent,
                ts=kw.pop("ts", "2026-11-20T09:00:00.000Z"), **kw)


def _plant(projects: Path) -> None:
    proj = projects / "-home-dev-projects-payments"
    proj.mkdir(parents=True)
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "\n" + PEM_BODY[::-1] + "\n-----END RSA PRIVATE KEY-----\n"
    main = [
        _L("user", "u-1", None, "We decided payments-api stores data in pg-main because billing reads from it. "
           "DB_PASSWORD=" + DB_PW + " is in .env; the signing key is api_key=" + HIGH + "."),
        _L("assistant", "a-1", "u-1", [
            {"type": "thinking", "thinking": "The user pasted " + THINK + " earlier; do not echo it.", "signature": "x"},
            {"type": "text", "text": "payments-api connects with postgres://payments:" + PG_PW + "@pg-main:5432/payments."},
            {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {
                "command": "curl -H 'Authorization: Bearer " + BEARER + "' https://api.example.com/v1/charges",
                "description": "Call the charges API"}},
        ], ts="2026-11-20T09:00:05.000Z"),
        _L("user", "u-2", "a-1", [{"type": "tool_result", "tool_use_id": "toolu_01", "content":
            "AWS_ACCESS_KEY_ID=" + AWS_ID + "\nAWS_SECRET_ACCESS_KEY=" + AWS_SECRET + "\nLOG_LEVEL=debug\n"}],
           ts="2026-11-20T09:00:06.000Z"),
        _L("assistant", "a-2", "u-2", [
            {"type": "tool_use", "id": "toolu_02", "name": "Read", "input": {"file_path": "/home/dev/.ssh/" + GH + ".pem"}},
        ], ts="2026-11-20T09:00:07.000Z"),
        _L("user", "u-3", "a-2", [{"type": "tool_result", "tool_use_id": "toolu_02",
                                   "content": [{"type": "text", "text": pem}]}], ts="2026-11-20T09:00:08.000Z"),
        _L("assistant", "a-3", "u-3", [
            {"type": "tool_use", "id": "toolu_03", "name": "Write",
             "input": {"file_path": CWD + "/.env", "content": "GITHUB_TOKEN=" + GH + "\n"}},
            {"type": "tool_use", "id": "toolu_04", "name": "WebFetch",
             "input": {"url": "https://api.example.com/v1?access_token=" + GH, "prompt": "fetch with token " + GH}},
        ], ts="2026-11-20T09:00:09.000Z"),
        _L("user", "u-4", "a-3", [{"type": "tool_result", "tool_use_id": "toolu_03", "is_error": True, "content":
            "psql: error: FATAL: password authentication failed for postgres://payments:" + PG_PW + "@pg-main/payments"}],
           ts="2026-11-20T09:00:10.000Z"),
        _L("user", "u-5", "u-4", "From now on, always run payments-api migrations through the deploy pipeline, never by hand.",
           ts="2026-11-20T09:01:00.000Z"),
        _L("assistant", "a-4", "u-5", [{"type": "text", "text": "Understood: payments-api migrations go through the deploy pipeline."}],
           ts="2026-11-20T09:01:05.000Z", cwd="/srv/deploy-" + CWDTOK),
        _L("user", "u-6", "a-4", "This session is being continued from a previous conversation. Summary: the Slack bot "
           "token " + COMPACT + " was rotated; payments-api depends on pg-main.", ts="2026-11-20T09:02:00.000Z",
           git_branch="rotate/" + BRANCH, isCompactSummary=True, isVisibleInTranscriptOnly=True),
        json.dumps({"type": "summary", "summary": "Rotate token " + TITLE, "leafUuid": "u-5"}) + "\n",
        json.dumps({"type": "custom-title", "customTitle": "creds " + TITLE, "sessionId": S1}) + "\n",
        json.dumps({"type": "system", "subtype": "local_command", "uuid": "sys-1", "sessionId": S1, "cwd": CWD,
                    "timestamp": "2026-11-20T09:03:00.000Z",
                    "content": "<local-command-stdout>export GITHUB_TOKEN=" + GH + "</local-command-stdout>"}) + "\n",
        '{"type":"user","message":{"role":"user","content":"oops ' + BAD + '"' + "\n",   # malformed JSON
    ]
    (proj / f"{S1}.jsonl").write_text("".join(main))
    sub = proj / S1 / "subagents" / "agent-a1b2c3d.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text(
        _L("user", "sa-1", None, "Check that the Stripe key " + SUB + " works for payments-api.",
           isSidechain=True, agentId="a1b2c3d", ts="2026-11-20T09:00:20.000Z", git_branch=None)
        + _L("assistant", "sa-2", "sa-1", [{"type": "text", "text": "STRIPE_SECRET_KEY=" + SUB + " is valid."}],
             isSidechain=True, agentId="a1b2c3d", ts="2026-11-20T09:00:30.000Z", git_branch=None))
    later = [
        _L("user", "v-1", None, "Try payments-api with " + HIGH + " and ask pg-main.", session=S2,
           ts="2026-11-22T10:00:00.000Z"),
        _L("assistant", "b-1", "v-1", [{"type": "text", "text": "Logged in with " + PG_PW + " and " + DB_PW +
                                        "; payments-api runs on pg-main."}], session=S2, ts="2026-11-22T10:00:04.000Z"),
    ]
    (proj / f"{S2}.jsonl").write_text("".join(later))
    # A project folder (and cwd) whose name carries a credential.
    odd = projects / ("-tmp-" + PATHTOK)
    odd.mkdir()
    sid = "1111aaaa-0b3e-4f55-9a61-2c8e5d4b3a10"
    (odd / f"{sid}.jsonl").write_text(_L("user", "w-1", None, "hello from the odd folder", session=sid, cwd="/tmp/" + PATHTOK))


def _cli():
    from reverie.consolidate.commands import build_cli

    return build_cli()


def _invoke(*args: str, input: str | None = None):
    res = CliRunner().invoke(_cli(), list(args), input=input, catch_exceptions=False)
    return res


def _hook(home: Path, event: str, payload: dict) -> subprocess.CompletedProcess:
    env = dict(os.environ, REVERIE_HOME=str(home))
    return subprocess.run([sys.executable, "-m", "reverie.consolidate", "hook", event], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture
def planted_home(tmp_path, reverie_home):
    projects = tmp_path / "projects"
    _plant(projects)
    res = _invoke("index", "--projects-dir", str(projects), "--json")
    assert res.exit_code == 0, res.output
    return reverie_home, projects, res


# ---------------------------------------------------------------------------------------------
# Passing guards: every transcript field, every command, every byte


def test_every_transcript_field_and_command_leaves_no_secret(planted_home, tmp_path):
    home, projects, indexed = planted_home
    summary = json.loads(indexed.output)
    # The odd folder is refused whole (its path holds a credential) and the malformed line is counted.
    assert summary["rejected"] == {"file_secret_in_path": 1, "malformed_json": 1}
    assert summary["titles"] == 2 and summary["messages_added"] == 15
    printed = [indexed.output]
    export_dir = home / "export"
    steps = [
        ("agents", "--json"),
        ("consolidate", "--now", "--all", "--writer", "offline", "--json"),
        ("search", "payments-api", "--agent", AGENT, "--json"),
        ("search", "token", "--agent", AGENT),
        ("recall", "--agent", AGENT, "--prompt", "change payments-api on pg-main", "--json"),
        ("show", "conversation", S1, "--agent", AGENT, "--json"),
        ("show", "conversation", S1, "--agent", AGENT),
        ("export", "--markdown", str(export_dir), "--agent", AGENT),
        ("graph", "payments-api", "--agent", AGENT, "--json"),
        ("doctor", "--json", "--projects-dir", str(projects)),
    ]
    outs = {}
    for step in steps:
        res = _invoke(*step)
        assert res.exit_code == 0, (step, res.output)
        printed.append(res.output)
        outs[step] = res.output
    consolidated = json.loads(outs[steps[1]])
    assert sum(s["cards_written"] for s in consolidated) >= 2
    shown = json.loads(outs[steps[5]])
    # Every planted place reached the index (redacted), so the scan below is meaningful.
    texts = "\n".join(b["text"] for m in shown["messages"] for b in m["blocks"])
    for marker in ("The user pasted [REDACTED:github_token] earlier",
                   "payments-api connects with postgres://payments:[REDACTED:password]@",
                   "Authorization: Bearer [REDACTED:bearer]", "file_path: /home/dev/.ssh/[REDACTED:github_token].pem",
                   "url: https://api.example.com/v1?access_token=[REDACTED:", "AWS_SECRET_ACCESS_KEY=[REDACTED:",
                   "[REDACTED:private_key]", "Slack bot token [REDACTED:", "STRIPE_SECRET_KEY=[REDACTED:"):
        assert marker in texts, marker
    assert (shown["title"], shown["git_branch"]) == ("creds [REDACTED:github_token]", "rotate/[REDACTED:github_token]")
    conn = sqlite3.connect(home / "agents" / AGENT / "agent.db")
    try:
        cwds = conn.execute("SELECT cwd FROM messages WHERE cwd IS NOT NULL").fetchall()
    finally:
        conn.close()
    assert cwds == [("/srv/deploy-[REDACTED:github_token]",)]
    for event, payload in (
        ("session-start", {"session_id": "s-new", "cwd": CWD, "hook_event_name": "SessionStart", "source": "startup"}),
        ("user-prompt-submit", {"session_id": "s-prompt", "cwd": CWD, "hook_event_name": "UserPromptSubmit",
                                "prompt": "rotate " + GH + " and " + HIGH + " for payments-api on pg-main; "
                                          "DB_PASSWORD=" + DB_PW}),
    ):
        res = _hook(home, event, payload)
        assert res.returncode == 0
        assert json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"].strip() != ""
        printed += [res.stdout, res.stderr]
    assert _scan_home(home) == []
    assert _printed("\n".join(printed)) == []


def test_log_records_at_debug_carry_no_secret(planted_home):
    """Every log record of consolidation, recall, search and the hook's recall, at DEBUG, rendered
    with its arguments and traceback, holds no planted value."""
    home, _, _ = planted_home
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        for args in (("consolidate", "--now", "--all", "--writer", "offline"),
                     ("recall", "--agent", AGENT, "--prompt", "payments-api " + GH),
                     ("search", "payments-api", "--agent", AGENT)):
            assert _invoke(*args).exit_code == 0
        from reverie.consolidate.hook import prepare_injection

        inj = prepare_injection("user-prompt-submit", {"cwd": CWD, "session_id": "s-log",
                                                       "prompt": "payments-api with " + GH + " DB_PASSWORD=" + DB_PW},
                                str(home))
        assert inj is not None and inj.text
    finally:
        root.removeHandler(handler)
        root.setLevel(old)
    logs = buf.getvalue()
    assert "consolidate" in logs or "trust pass" in logs    # records were captured at all
    assert _printed(logs) == []


FAKE_CLAUDE = r'''#!{python}
import json, sys
prompt = sys.stdin.read()
with open({log!r}, "a") as fh:
    fh.write(json.dumps({{"prompt": prompt}}) + "\n")
card = {{"statement": "payments-api deploys with the token {gh} from pg-main.", "category": "fact",
         "importance": 3, "entities": [{{"name": "payments-api", "type": "service"}},
                                       {{"name": "{aws}", "type": "other"}}],
         "relations": [], "evidence": ["P1"], "quote": "payments-api"}}
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "",
                  "structured_output": {{"cards": [card]}}, "total_cost_usd": 0.001,
                  "usage": {{"input_tokens": 10, "output_tokens": 10}}}}))
'''


def test_model_prompt_and_model_output_carry_no_secret(planted_home, tmp_path, monkeypatch):
    """What the claude-cli writer sends to the model holds no planted value, and a model answer
    that echoes credentials (statement and entity name) is rejected: stored nowhere, printed nowhere."""
    home, _, _ = planted_home
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "claude-calls.jsonl"
    exe = bindir / "claude"
    exe.write_text(FAKE_CLAUDE.format(python=sys.executable, log=str(log), gh=GH, aws=AWS_ID))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    res = _invoke("consolidate", "--now", "--agent", AGENT, "--writer", "claude-cli", "--json")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    summary = summary[0] if isinstance(summary, list) else summary
    assert summary["calls"] >= 1
    assert summary["cards_rejected"].get("secret", 0) == summary["calls"]
    prompts = log.read_text()
    assert "payments-api" in prompts
    assert _printed(prompts) == []
    assert _printed(res.output) == []
    assert _scan_home(home) == []


def test_secret_first_seen_alone_is_scrubbed_everywhere_once_learned(tmp_path, reverie_home):
    """The reverse order: a value stored with no hint (so it reached cards, episodes, titles, FTS
    and the hook's output), later learned in context. After the next index + consolidation, no
    byte of the home and no output carries it."""
    late = "Xk7pQ2vRm9" + "Tz4Wb8Nc"
    projects = tmp_path / "projects"
    proj = projects / "-home-dev-projects-payments"
    proj.mkdir(parents=True)
    a, b = "aaaaaaaa-0b3e-4f55-9a61-2c8e5d4b3a10", "bbbbbbbb-0b3e-4f55-9a61-2c8e5d4b3a10"
    (proj / f"{a}.jsonl").write_text(
        _L("user", "a-1", None, "We decided payments-api stores data in pg-main; always log in as svc " + late + ".",
           session=a, ts="2026-11-01T09:00:00.000Z")
        + _L("assistant", "a-2", "a-1", [{"type": "text", "text": "From now on I will always use `" + late +
                                          "` for payments-api because billing reads from pg-main."}],
             session=a, ts="2026-11-01T09:00:05.000Z")
        + json.dumps({"type": "custom-title", "customTitle": "login " + late, "sessionId": a}) + "\n")
    assert _invoke("index", "--projects-dir", str(projects)).exit_code == 0
    assert _invoke("consolidate", "--now", "--all", "--writer", "offline").exit_code == 0
    before = _hook(reverie_home, "session-start", {"session_id": "s1", "cwd": CWD, "source": "startup"})
    assert late in before.stdout                  # not known as a secret yet: it was stored and shown
    (proj / f"{b}.jsonl").write_text(
        _L("user", "b-1", None, "FYI the service password=" + late + " (rotate it soon).", session=b,
           ts="2026-11-05T09:00:00.000Z"))
    assert _invoke("index", "--projects-dir", str(projects)).exit_code == 0
    assert _invoke("consolidate", "--now", "--all", "--writer", "offline").exit_code == 0
    outs = [_invoke(*s).output for s in (("search", "payments-api", "--agent", AGENT, "--json"),
                                         ("show", "conversation", a, "--agent", AGENT),
                                         ("graph", "payments-api", "--agent", AGENT, "--json"),
                                         ("export", "--markdown", str(reverie_home / "export"), "--agent", AGENT))]
    outs.append(_hook(reverie_home, "session-start", {"session_id": "s2", "cwd": CWD, "source": "startup"}).stdout)
    assert "[REDACTED:remembered]" in outs[1]
    assert _printed("\n".join(outs), {"LATE": late}) == []
    assert _scan_home(reverie_home, {"LATE": late}) == []


# ---------------------------------------------------------------------------------------------
# Defects


_SETUP = "".join(f"apt-get install -y pkg{i:03d} >/dev/null\n" for i in range(150))


def test_long_tool_input_is_clipped_only_after_redaction(tmp_path, reverie_home):
    """A Bash command longer than the index's cap (a deploy script) sets DB_PASSWORD=<value> in its
    middle and writes the same value to a file at its end, where nothing says it is a secret.
    Redacted whole, both copies go (the engine replaces every occurrence of a detected value); the
    block is clipped only afterwards, so the tail copy is never stored verbatim, even though the clip
    cuts away its context."""
    cmd = ("set -euo pipefail\n" + _SETUP + "export DB_PASSWORD=" + DB_PW + "\n" + _SETUP +
           "echo " + DB_PW + " | base64 > /run/deploy/db.b64\n")
    from reverie.redact.engine import Redactor

    assert DB_PW not in Redactor(None).redact(cmd).text     # the engine alone would remove it
    projects = tmp_path / "projects"
    proj = projects / "-home-dev-projects-payments"
    proj.mkdir(parents=True)
    (proj / f"{S1}.jsonl").write_text(
        _L("user", "u-1", None, "Deploy payments-api to the registry.")
        + _L("assistant", "a-1", "u-1", [{"type": "tool_use", "id": "toolu_01", "name": "Bash",
                                          "input": {"command": cmd, "description": "Deploy"}}],
             ts="2026-11-20T09:00:05.000Z"))
    res = _invoke("index", "--projects-dir", str(projects), "--json")
    assert json.loads(res.output)["messages_added"] == 2
    shown = _invoke("show", "conversation", S1, "--agent", AGENT, "--json").output
    (block,) = [b for m in json.loads(shown)["messages"] for b in m["blocks"] if b["type"] == "tool_use"]
    assert len(cmd) > 8000 and block["clipped"] == 1 and "characters clipped ...]" in block["text"]
    assert block["text"].endswith("\necho [REDACTED:remembered] | base64 > /run/deploy/db.b64\n")
    assert (_printed(shown, {"DB_PW": DB_PW}), _scan_home(reverie_home, {"DB_PW": DB_PW})) == ([], [])


@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_search_does_not_print_a_secret_typed_as_query(planted_home, as_json):
    """HIGH was learned from `api_key=...` while indexing; search scrubs its cards and snippets with
    the remembered-secret check, but the echoed query bypasses it (and full redaction: GH too)."""
    home, _, _ = planted_home
    args = ["search", "deploy with", HIGH, "and", GH, "--agent", AGENT] + (["--json"] if as_json else [])
    res = _invoke(*args)
    assert res.exit_code == 0, res.output
    assert "deploy with" in res.output          # the query is echoed, so the check below is about it
    assert _printed(res.output, {"HIGH": HIGH, "GH": GH}) == []


def test_error_message_does_not_print_a_pasted_secret(planted_home):
    home, _, _ = planted_home
    res = CliRunner().invoke(_cli(), ["graph", GH, "--agent", AGENT])
    assert res.exit_code != 0
    assert "No entity named" in res.output
    assert _printed(res.output, {"GH": GH}) == []
