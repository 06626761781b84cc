"""Remembered secrets (redact.memory) and the remembered path through the Redactor."""

from __future__ import annotations

import random
import sqlite3
import stat
import string

import pytest

from redact.engine import Redactor
from redact.memory import SecretMemory
from redact.shapes import credential_like

RNG = random.Random(7)


def rand(n: int) -> str:
    return "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(n - 1)) + "7"


SECRET = "s3cr3tP@ss!" + rand(5)


@pytest.fixture(scope="module")
def redactor_cls():
    Redactor(None)  # warm the shared scanner once
    return Redactor


def test_seen_once_with_context_then_found_alone(tmp_path, redactor_cls):
    sdir = tmp_path / "secrets"
    r = redactor_cls(sdir)
    first = r.redact(f"DB_PASSWORD={SECRET}")
    assert first.text == "DB_PASSWORD=[REDACTED:password]"
    assert first.learned == 1
    # a new process (new Redactor, new SecretMemory) with no hint around the value
    later = redactor_cls(sdir)
    text = (f"$ psql -h db -U app password {SECRET}\n"
            f'"{SECRET}"\n'
            f"postgresql://user:{SECRET}@host/db\n"
            f"sentence ending with {SECRET}.")
    out = later.redact(text)
    assert out.text == (
        "$ psql -h db -U app password [REDACTED:remembered]\n"
        '"[REDACTED:remembered]"\n'
        "postgresql://user:[REDACTED:remembered]@host/db\n"  # '@' inside: only memory finds all of it
        "sentence ending with [REDACTED:remembered]."
    )
    assert [f.type for f in out.findings] == ["remembered"] * 4
    assert SECRET not in out.text


def test_memory_alone_is_stdlib_and_scrubs(tmp_path):
    mem = SecretMemory(tmp_path / "s")
    assert mem.remember([SECRET, "short", "changeme-please", "your-api-key"]) == 1
    assert mem.remember([SECRET]) == 0
    assert mem.count() == 1
    assert mem.scrub(f"user:{SECRET}@host and {SECRET} and x{SECRET}") == (
        "user:[REDACTED:remembered]@host and [REDACTED:remembered] and x" + SECRET, 2)
    assert mem.scrub("nothing to see") == ("nothing to see", 0)


def test_generation_increases_across_instances(tmp_path):
    a = SecretMemory(tmp_path / "s")
    b = SecretMemory(tmp_path / "s")
    g0 = b.generation()
    assert a.remember([rand(20)]) == 1
    g1 = b.generation()
    assert g1 == g0 + 1
    assert a.remember([]) == 0 and b.generation() == g1
    # b sees the new secret without being told (reload on generation change)
    v = rand(24)
    a.remember([v])
    b._checked_at = 0.0  # skip the once-per-second throttle
    assert b.scrub(f"x {v} y") == ("x [REDACTED:remembered] y", 1)


def test_key_file_is_private_and_db_holds_no_value(tmp_path):
    sdir = tmp_path / "secrets"
    mem = SecretMemory(sdir)
    values = [SECRET, rand(30), rand(12)]
    assert mem.remember(values) == 3
    mem.close()
    key = sdir / "key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert len(key.read_bytes()) == 32
    assert stat.S_IMODE(sdir.stat().st_mode) == 0o700
    assert stat.S_IMODE((sdir / "hashes.db").stat().st_mode) == 0o600
    blob = b"".join(p.read_bytes() for p in sdir.iterdir() if p.is_file())
    for v in values:
        assert v.encode() not in blob
    rows = sqlite3.connect(sdir / "hashes.db").execute("SELECT h, n FROM secrets ORDER BY n").fetchall()
    assert sorted(n for _, n in rows) == sorted(len(v) for v in values)
    assert all(isinstance(h, bytes) and len(h) == 32 for h, _ in rows)


def test_key_survives_and_is_reused(tmp_path):
    sdir = tmp_path / "s"
    a = SecretMemory(sdir)
    a.remember([SECRET])
    b = SecretMemory(sdir)
    assert b.key == a.key
    assert b.digest(SECRET) == a.digest(SECRET)


@pytest.mark.parametrize("value", [
    "xxxxxxxxxxxx", "<token>", "${DB_PASSWORD}", "$API_KEY", "changeme", "changeme123!", "your-api-key",
    "your_token_here", "{{ secrets.TOKEN }}", "%PASSWORD%", "[REDACTED:password]", "********",
    "password", "short1!", "aaaaaaaaaaaa", "os.environ.get(", "self.token", "ordinarywords",
    "example-key-123", "dummy_secret_1",
])
def test_placeholders_never_remembered(tmp_path, value):
    assert not credential_like(value)
    mem = SecretMemory(tmp_path / "s")
    assert mem.remember([value]) == 0
    assert mem.count() == 0


def test_placeholders_not_learned_through_redactor(tmp_path, redactor_cls):
    r = redactor_cls(tmp_path / "s")
    out = r.redact("DB_PASSWORD=changeme\nAPI_KEY=<your-api-key>\nTOKEN=${TOKEN}\n")
    assert out.findings == [] and out.learned == 0
    assert r.memory.count() == 0


def test_lookup_with_many_remembered_secrets(tmp_path):
    mem = SecretMemory(tmp_path / "s")
    values = [v for v in (rand(12 + i % 30) for i in range(20_000)) if credential_like(v)]
    assert len(values) > 19_900
    assert mem.remember(values) == len(set(values))
    probe = " ".join(f"k={v}" for v in values[:50]) + " unrelated words " * 100
    text, n = mem.scrub(probe)
    assert n == 50
    assert all(v not in text for v in values[:50])


def test_find_many_equals_find_per_text(tmp_path):
    mem = SecretMemory(tmp_path / "s")
    a, b = rand(20), "p@ss-" + rand(14)
    mem.remember([a, b])
    texts = [f"x {a} y", "", "nothing", f"user:{b}@host and {a}", "tiny", f"é {b}", f"glued{a}"]
    assert mem.find_many(texts) == [mem.find(t) for t in texts]
    assert [len(s) for s in mem.find_many(texts)] == [1, 0, 0, 2, 0, 1, 0]


def test_redact_many_removes_values_learned_later_in_the_batch(tmp_path, redactor_cls):
    r = redactor_cls(tmp_path / "s")
    texts = [f"first the value alone: {SECRET}", "plain", f"DB_PASSWORD={SECRET}"]
    outs = r.redact_many(texts)
    assert [o.text for o in outs] == [
        "first the value alone: [REDACTED:remembered]", "plain", "DB_PASSWORD=[REDACTED:password]"]
    assert [o.learned for o in outs] == [0, 0, 1]


def test_memory_module_imports_light():
    """The hook process imports redact.memory: it must not pull sqlite3, logging or datetime in."""
    import subprocess
    import sys

    code = ("import sys, redact.memory; "
            "print(sorted(m for m in ('sqlite3', 'logging', 'datetime', 'redact.shapes') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
