"""Remembered secrets need evidence (issue 14): a code token is never remembered, a false finding
cannot spread, and a person can forget a wrong value (`SecretMemory.forget`,
`reverie redact --forget-secret`, reported by `reverie doctor`)."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner
from secret_values import generators

from reverie.consolidate.commands import build_cli
from reverie.consolidate.doctor import diagnose
from reverie.consolidate.paths import resolve_home, secrets_dir
from reverie.redact.engine import Redactor
from reverie.redact.memory import SecretMemory
from reverie.redact.shapes import credential_like, is_code_token

RNG = random.Random(2718)
rand, pw = generators(RNG)

PHP = '<?php\n$user = $_POST["user"];\n$pwd = $_POST["password"];\n$token = getToken($user);\n'


@pytest.fixture(scope="module")
def warm():
    Redactor(None)


@pytest.mark.parametrize("value", ["$_POST[", '$_POST["password"]', "getToken(", "getToken($user)",
                                   "this.token", "self.api_key", "${DB_PASSWORD}", "os.environ[",
                                   "config.db.password", "%DB_PASSWORD%", "password:", "{token}"])
def test_code_tokens_are_never_remembered(value):
    assert is_code_token(value) and not credential_like(value)
    assert not credential_like(value, allow_typed_sequence=True)


def test_credential_shaped_values_are_still_remembered():
    for v in (pw(), "s3cr3tP@ss!" + rand(4), "hunter2-Xq9-Mv77"):
        assert credential_like(v) and not is_code_token(v)


def test_php_post_does_not_poison_memory(tmp_path, warm):
    """`$pwd = $_POST["password"];` holds no secret: nothing is redacted, nothing remembered, and
    every later `$_POST[` stays intact, in this process and the next."""
    sdir = tmp_path / "secrets"
    r = Redactor(sdir)
    out = r.redact(PHP)
    assert (out.text, out.findings, out.learned) == (PHP, [], 0)
    later = 'if (isset($_POST["submit"])) { $name = $_POST["name"]; echo getToken($name); }'
    assert Redactor(sdir).redact_text(later) == later
    assert SecretMemory(sdir).count() == 0


def test_a_wrongly_remembered_value_spreads_until_forgotten(tmp_path, warm):
    """Even if a code token got into memory (an older version, a bad rule), forgetting it stops the
    spreading at once, in another process too; real remembered secrets stay."""
    sdir = tmp_path / "secrets"
    mem = SecretMemory(sdir)
    real = pw()
    mem.remember([real])
    # force a wrong value in, bypassing the evidence check (what an older version could store)
    wrong = "getUserToken"
    conn = mem.conn
    conn.execute("INSERT INTO secrets (h, n, first_at) VALUES (?, ?, 'x')", (mem.digest(wrong), len(wrong)))
    conn.execute("INSERT OR IGNORE INTO lengths (n) VALUES (?)", (len(wrong),))
    conn.execute("UPDATE meta SET v = v + 1 WHERE k = 'generation'")
    reader = SecretMemory(sdir)
    text = f"const t = getUserToken(); // {real}"
    assert reader.scrub(text)[0] == "const t = [REDACTED:remembered](); // [REDACTED:remembered]"
    assert mem.forget([wrong]) == 1 and mem.forget([wrong]) == 0
    reader._checked_at = 0.0  # the reader's next refresh (at most one second later in real use)
    assert reader.scrub(text)[0] == "const t = getUserToken(); // [REDACTED:remembered]"
    assert mem.count() == 1 and mem.is_remembered(real) and not mem.is_remembered(wrong)
    # the length of the forgotten value is gone from the lookup when no other value has it
    assert {row[0] for row in conn.execute("SELECT n FROM lengths")} == {len(real)}


def test_forget_on_a_home_without_memory_creates_nothing(tmp_path):
    sdir = tmp_path / "secrets"
    assert SecretMemory(sdir).forget(["anything-at-all"]) == 0
    assert not sdir.exists()


def _cli(args, stdin):
    return CliRunner().invoke(build_cli(), args, input=stdin)


def test_forget_secret_cli_reads_stdin_and_never_prints_the_value(warm):
    home = resolve_home()
    value = pw()
    res = _cli(["redact", "--remember", "--json"], f"DB_PASSWORD={value}\n")
    assert json.loads(res.output)["learned"] == 1
    assert _cli(["redact"], f"again {value}").output == "again [REDACTED:remembered]"

    res = _cli(["redact", "--forget-secret", "--json"], value + "\n")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output) == {"ok": True, "forgotten": 1, "remembered_secrets": 0}
    assert value not in res.output
    assert _cli(["redact"], f"again {value}").output == f"again {value}"

    res = _cli(["redact", "--forget-secret"], value)
    assert (res.exit_code, res.output) == (0, "not remembered: nothing to forget\nremembered secrets left: 0\n")
    assert SecretMemory(secrets_dir(home)).count() == 0


def test_forget_secret_cli_errors(warm):
    res = _cli(["redact", "--forget-secret", "--json"], "")
    assert res.exit_code == 2
    assert json.loads(res.output) == {"ok": False, "error": "no value on stdin: pipe the remembered value in "
                                      "(`reverie redact --forget-secret < FILE`)"}
    res = _cli(["redact", "--forget-secret", "--remember", "--json"], "x")
    assert res.exit_code == 2
    assert json.loads(res.output) == {"ok": False, "error": "--forget-secret and --remember cannot be combined"}


def test_doctor_reports_remembered_count_and_how_to_forget(tmp_path):
    home = tmp_path / "home"
    how = ("a value remembered by mistake is removed with `reverie redact --forget-secret < FILE` "
           "(FILE holds the value; it is never printed)")
    check = next(c for c in diagnose(home)["checks"] if c["name"] == "remembered secrets")
    assert check == {"name": "remembered secrets", "ok": True, "optional": True, "detail": f"none yet; {how}",
                     "fix": None}
    assert not (home / "secrets").exists()  # doctor creates nothing
    SecretMemory(secrets_dir(home)).remember([pw(), pw()])
    check = next(c for c in diagnose(home)["checks"] if c["name"] == "remembered secrets")
    db = secrets_dir(home) / "hashes.db"
    assert check["detail"] == f"2 values remembered (keyed hashes, never the values) in {db}; {how}"
    assert check["ok"] is True
