"""End to end: planted secrets never reach any byte under the reverie home.

The transcript plants credentials in the places agents really leak them (an env dump in a tool
result, a curl header in a Bash command, a connection string in prose, a private key printed by
`cat`, a password in a user turn) and then repeats one password later with no hint around it.
Everything reverie writes (db, WAL, logs, recall log, exports) is scanned for every planted value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from transcripts import line


# Fake credentials of realistic shape, assembled at run time so that no scanner flags this file.
AWS_ID = "AKIA" + "Q3EGRTY7UVXZ2WKP"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYzq8Hd2Lk4Tn1"
GH_TOKEN = "ghp_" + "R8tq2Lw9ZcXv4Nb7Mk3Hj6Gf5Dd1Ss0Aa2Pp"
PG_PASSWORD = "Vq7!rT2#pLm9xZ"
APP_PASSWORD = "S1lverH0rse!Battery42"
PEM_BODY = "MIIEowIBAAKCAQEA7s" + "Zp3Lw8Qk2Vn5Rt9Yx1Bc4Hd6Jf0Mg3Nh7Pk2Qs5Tv8Wx1Za4Cb6De9Fg2Hj5Kl8"

PLANTED = [AWS_ID, AWS_SECRET, GH_TOKEN, PG_PASSWORD, APP_PASSWORD, PEM_BODY]

CWD = "/home/dev/projects/payments"
SESSION = "7d1f4c2a-0b3e-4f55-9a61-2c8e5d4b3a10"
LATER = "9e2a6b1c-4d7f-4a38-8b20-5f6c7d8e9a01"


def _line(kind, uuid, parent, ts, session, content, **extra):
    return line(kind, uuid, content, session=session, cwd=CWD, parent=parent, ts=ts,
                msg_id="msg_" + uuid.replace("-", "")[:20], version="2.1.40", model="claude-sonnet-4-5",
                **extra).rstrip("\n")


def _write_transcripts(projects: Path) -> None:
    proj = projects / "-home-dev-projects-payments"
    proj.mkdir(parents=True)
    first = [
        _line("user", "u-1", None, "2026-11-20T09:00:00.000Z", SESSION,
              "Set up the payments db. The app password is " + APP_PASSWORD + " and we decided to keep "
              "payments-api on the postgres host pg-main because billing reads from it."),
        _line("assistant", "a-1", "u-1", "2026-11-20T09:00:05.000Z", SESSION, [
            {"type": "text", "text": "I'll check the environment first."},
            {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {
                "command": "env | grep -i aws; curl -H 'Authorization: token " + GH_TOKEN + "' https://api.github.com/user",
                "description": "Inspect credentials"}},
        ]),
        _line("user", "u-2", "a-1", "2026-11-20T09:00:09.000Z", SESSION, [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content":
                "AWS_ACCESS_KEY_ID=" + AWS_ID + "\nAWS_SECRET_ACCESS_KEY=" + AWS_SECRET + "\nLOG_LEVEL=debug\n"},
        ]),
        _line("assistant", "a-2", "u-2", "2026-11-20T09:00:15.000Z", SESSION, [
            {"type": "text", "text": "payments-api connects with postgres://payments:" + PG_PASSWORD +
             "@pg-main:5432/payments. We decided payments-api stores data in pg-main because billing reads from it."},
            {"type": "tool_use", "id": "toolu_02", "name": "Read", "input": {"file_path": "/home/dev/.ssh/deploy_key"}},
        ]),
        _line("user", "u-3", "a-2", "2026-11-20T09:00:20.000Z", SESSION, [
            {"type": "tool_result", "tool_use_id": "toolu_02", "content":
                "-----BEGIN RSA PRIVATE KEY-----\n" + PEM_BODY + "\n" + PEM_BODY[::-1] + "\n-----END RSA PRIVATE KEY-----\n"},
        ]),
        _line("user", "u-4", "u-3", "2026-11-20T09:01:00.000Z", SESSION,
              "From now on, always run payments-api migrations through the deploy pipeline, never by hand."),
    ]
    (proj / f"{SESSION}.jsonl").write_text("\n".join(first) + "\n")
    # A later session: the password appears alone, with no hint that it is one.
    later = [
        _line("user", "v-1", None, "2026-11-22T10:00:00.000Z", LATER,
              "Try logging in to payments-api with " + APP_PASSWORD + " and tell me what pg-main says."),
        _line("assistant", "b-1", "v-1", "2026-11-22T10:00:04.000Z", LATER, [
            {"type": "text", "text": "Logged in as payments with " + PG_PASSWORD + "; payments-api runs on pg-main."},
        ]),
    ]
    (proj / f"{LATER}.jsonl").write_text("\n".join(later) + "\n")


def _reverie(home: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, REVERIE_HOME=str(home), TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS="")
    return subprocess.run([sys.executable, "-m", "reverie.consolidate", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=300)


def _scan(home: Path) -> list[tuple[str, str]]:
    leaks = []
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for value in PLANTED:
                if value.encode() in data:
                    leaks.append((str(path.relative_to(home)), value[:4] + "..."))
    return leaks


def test_planted_secrets_never_touch_disk(tmp_path, reverie_home):
    projects = tmp_path / "projects"
    _write_transcripts(projects)
    home = reverie_home

    out = _reverie(home, "index", "--projects-dir", str(projects), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["messages_added"] >= 8
    outputs = [out.stdout, out.stderr]

    steps = [
        ("agents", "--json"),
        ("consolidate", "--now", "--all", "--writer", "offline", "--json"),
        ("search", "payments-api", "--agent", "payments", "--json"),
        ("recall", "--agent", "payments", "--prompt", "change payments-api on pg-main with " + APP_PASSWORD, "--json"),
        ("show", "conversation", SESSION, "--agent", "payments"),
        ("export", "--markdown", str(home / "export"), "--agent", "payments"),
        ("graph", "payments-api", "--agent", "payments", "--json"),
    ]
    results = {}
    for step in steps:
        res = _reverie(home, *step)
        assert res.returncode == 0, (step, res.stderr)
        outputs += [res.stdout, res.stderr]
        results[step[0]] = res.stdout
    # The scan below is only meaningful when cards were written and recall had something to show.
    assert sum(s["cards_written"] for s in json.loads(results["consolidate"])) > 0
    assert json.loads(results["recall"])["text"] != ""
    for event, payload in (
        ("session-start", {"session_id": "s-new", "cwd": CWD, "hook_event_name": "SessionStart", "source": "startup"}),
        # A session of its own: in "s-new" the one card was already shown by the primer.
        ("user-prompt-submit", {"session_id": "s-prompt", "cwd": CWD, "hook_event_name": "UserPromptSubmit",
                                "prompt": "rotate " + APP_PASSWORD + " for payments-api on pg-main"}),
    ):
        res = _reverie(home, "hook", event, stdin=json.dumps(payload))
        assert res.returncode == 0
        assert json.loads(res.stdout)["hookSpecificOutput"]["additionalContext"].strip() != ""
        outputs += [res.stdout, res.stderr]

    leaks = _scan(home)
    assert leaks == []
    printed = "\n".join(outputs)
    assert [v[:4] for v in PLANTED if v in printed] == []
    # The memory itself survived redaction: what was learned is still there.
    assert "payments-api" in printed
