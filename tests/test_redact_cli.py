"""`reverie redact [--json]`: stdin to stdout; remembered secrets of the home apply."""

from __future__ import annotations

import json
import random
import string

from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate.paths import resolve_home, secrets_dir
from reverie.redact.memory import SecretMemory

RNG = random.Random(3)
GH = "ghp_" + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(35)) + "1"
LEARNED = "k9" + "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(20))


def run(args, stdin):
    return CliRunner().invoke(build_cli(), args, input=stdin)


def test_redact_plain_text():
    res = run(["redact"], f"GITHUB_TOKEN={GH}\nPORT=8080\n")
    assert res.exit_code == 0, res.output
    assert res.output == "GITHUB_TOKEN=[REDACTED:github_token]\nPORT=8080\n"
    assert not secrets_dir(resolve_home()).exists()  # nothing learned or created without --remember


def test_redact_json_lists_findings_without_values():
    res = run(["redact", "--json"], f"token={GH}")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert GH not in res.output
    assert data["text"] == "token=[REDACTED:github_token]"
    assert data["count"] == 1 and data["learned"] == 0 and data["remembered_secrets_applied"] is False
    (f,) = data["findings"]
    assert {k: f[k] for k in ("type", "start", "end", "rule")} == {
        "type": "github_token", "start": 6, "end": 6 + len(GH), "rule": "github-token"}
    assert len(f["hash_prefix"]) == 8


def test_remembered_secrets_of_the_home_apply():
    SecretMemory(secrets_dir(resolve_home())).remember([LEARNED])
    res = run(["redact"], f"plain mention of {LEARNED} here")
    assert res.exit_code == 0, res.output
    assert res.output == "plain mention of [REDACTED:remembered] here"


def test_remember_flag_learns():
    res = run(["redact", "--remember", "--json"], f"DB_PASSWORD={LEARNED}")
    assert json.loads(res.output)["learned"] == 1
    res = run(["redact"], f"again {LEARNED}")
    assert res.output == "again [REDACTED:remembered]"


def test_binary_stdin_passes_through():
    blob = b"\x00\xff\xfe binary " + b"token=" + GH.encode() + b" \x80\x81"
    res = CliRunner().invoke(build_cli(), ["redact"], input=blob)
    assert res.exit_code == 0
    assert res.stdout_bytes == b"\x00\xff\xfe binary token=[REDACTED:github_token] \x80\x81"
