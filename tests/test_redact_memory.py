"""Remembered secrets (redact.memory) and the remembered path through the Redactor."""

from __future__ import annotations

import random
import sqlite3
import stat
import string

import pytest

from reverie.redact.engine import Redactor
from reverie.redact.memory import SecretMemory
from reverie.redact.shapes import credential_like

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
    text = (f"$ psql -h db -U app {SECRET}\n"
            f'"{SECRET}"\n'
            f"postgresql://user:{SECRET}@host/db\n"
            f"sentence ending with {SECRET}.")
    out = later.redact(text)
    assert out.text == (
        "$ psql -h db -U app [REDACTED:remembered]\n"
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

    code = ("import sys, reverie.redact.memory; "
            "print(sorted(m for m in ('sqlite3', 'logging', 'datetime', 'reverie.redact.shapes') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the keyed hash and the lookup caches ---------------------------------------------------------


@pytest.mark.parametrize("value", ["s3cr3tP@ss!", "é-ünï-cödé-7x9", "a" * 64 + "Z9", "\udcff-lone-surrogate-9Q", ""])
def test_digest_is_exactly_hmac_sha256_under_the_key(tmp_path, value):
    """The precomputed-pad HMAC gives what `hmac.new(key, value, sha256)` gives, so hashes.db files
    written by any version (which used hmac.digest) still match."""
    import hashlib
    import hmac

    mem = SecretMemory(tmp_path / "s")
    expected = hmac.new(mem.key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()
    assert mem.digest(value) == expected
    assert mem.hash_prefix(value) == expected.hex()[:8]


def test_hashes_written_with_hmac_module_are_found(tmp_path):
    """A hashes.db whose rows were written as plain `hmac.digest(key, value, 'sha256')` (the earlier
    implementation) is read as it is: no migration, every value found alone."""
    import hmac

    mem = SecretMemory(tmp_path / "s")
    values = [rand(14), "p@ss-" + rand(12), "é" + rand(20)]
    conn = mem.conn
    conn.executemany("INSERT INTO secrets (h, n, first_at) VALUES (?, ?, 'x')",
                     [(hmac.digest(mem.key, v.encode("utf-8", "surrogatepass"), "sha256"), len(v)) for v in values])
    conn.executemany("INSERT OR IGNORE INTO lengths (n) VALUES (?)", [(len(v),) for v in values])
    conn.execute("UPDATE meta SET v = v + 1 WHERE k = 'generation'")
    mem.close()
    fresh = SecretMemory(tmp_path / "s")
    text = f"a={values[0]} user:{values[1]}@db and \"{values[2]}\""
    assert fresh.scrub(text) == ("a=[REDACTED:remembered] user:[REDACTED:remembered]@db and \"[REDACTED:remembered]\"", 3)


def test_runs_are_the_runs_of_the_run_regex():
    """`_runs` (split at C speed) cuts exactly where `_RUN_RE` does, Unicode whitespace included."""
    from reverie.redact.memory import _RUN_RE, _runs

    texts = ["plain words and a long_token_value=abc123xyz", "x\u00a0nbsp-separated-token\u2003em-space-run",
             "ctl\x1cseparated-runs\x1fhere-too and \x85nel-char-run", '"quoted-value-1234"<tag-value-5678>`tick-value-9012`',
             "tabs\tand\nnewlines\r\nand\x0bvt\x0cff-run-long", "é ünïcödé-rün-välüe-long", ""]
    for t in texts:
        assert {r for r in _runs(t) if len(r) >= 8} == set(_RUN_RE.findall(t)), t


def test_text_seen_clean_is_checked_again_once_a_secret_is_learned(tmp_path, monkeypatch):
    """The cache of runs known to hold no secret is emptied when secrets arrive, from this instance
    or from another process (another instance here), so a run seen before is caught afterwards."""
    from reverie.redact import memory as memory_mod

    monkeypatch.setattr(memory_mod, "_REFRESH_SECONDS", 0.0)
    mem = SecretMemory(tmp_path / "s")
    mem.remember([rand(16)])  # something remembered, so lookups run and cache
    first, second = "tok=" + rand(18), "url=https://h/" + rand(20)
    text = f"run {first} and {second}"
    assert mem.scrub(text) == (text, 0)
    assert mem.scrub(text) == (text, 0)  # now from the clean-run cache
    mem.remember([first.split("=", 1)[1]])
    assert mem.scrub(text) == (f"run tok=[REDACTED:remembered] and {second}", 1)
    other = SecretMemory(tmp_path / "s")
    other.remember([second.rsplit("/", 1)[1]])
    assert mem.scrub(text) == ("run tok=[REDACTED:remembered] and url=https://h/[REDACTED:remembered]", 2)
    assert mem.find_many(["x", text]) == [[], mem.find(text)]


def test_long_runs_with_many_separators_found_and_cached(tmp_path):
    """A run longer than any secret, made of many pieces (a minified line), is examined once: the
    remembered piece inside it is found, the second lookup answers the same from the caches."""
    mem = SecretMemory(tmp_path / "s")
    value = "k9" + rand(22)
    mem.remember([value])
    run = ",".join(f"f{i}:{rand(6)}" for i in range(400)) + f",key:{value}," + ",".join(f"g{i}" for i in range(50))
    text = f"before {run} after"
    out, n = mem.scrub(text)
    assert (n, value in out, out.count("[REDACTED:remembered]")) == (1, False, 1)
    assert mem.scrub(text) == (out, 1)
    assert mem.find_sparse(["nothing here", text, "x"]) == {1: mem.find(text)}


def test_scrub_path_loads_no_openssl_hmac(tmp_path):
    """The hook path (import, then scrub with a store present) hashes with the builtin SHA-256:
    `hmac`, `hashlib` and OpenSSL's `_hashlib` stay unloaded."""
    import subprocess
    import sys

    mem = SecretMemory(tmp_path / "s")
    value = rand(18)
    mem.remember([value])
    mem.close()
    code = ("import sys; from reverie.redact.memory import SecretMemory; "
            f"print(SecretMemory({str(tmp_path / 's')!r}).scrub('x {value} y')[1], "
            "sorted(m for m in ('hmac', 'hashlib', '_hashlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1 []"


def test_remember_adds_to_the_loaded_set_or_reloads_when_another_writer_came_between(tmp_path, monkeypatch):
    """After its own write an instance adds the new hashes in place (no re-read of every hash) when
    the db held exactly what it had loaded; when another instance wrote in between (its throttle not
    yet expired), the write reloads, so the other's secrets are found too."""
    a = SecretMemory(tmp_path / "s")
    v1, v2, v3, v4 = rand(20), rand(21), rand(22), rand(23)
    assert a.remember([v1]) == 1
    reads = []
    real_load = SecretMemory._load

    def counting_load(self, force=False):
        reads.append(force)
        return real_load(self, force)

    monkeypatch.setattr(SecretMemory, "_load", counting_load)
    assert a.remember([v2]) == 1
    assert reads == [False]  # the check before the write only: nothing forced
    assert a.scrub(f"{v1} {v2}") == ("[REDACTED:remembered] [REDACTED:remembered]", 2)
    assert (a._generation, a._lengths) == (a.generation(), frozenset({20, 21}))

    b = SecretMemory(tmp_path / "s")
    assert b.remember([v3]) == 1
    reads.clear()
    assert a.remember([v4]) == 1  # a's view is stale (b wrote): reloaded after the write
    assert reads == [False, True]
    assert a.scrub(f"{v3} {v4}") == ("[REDACTED:remembered] [REDACTED:remembered]", 2)
    assert a._generation == a.generation() == b.generation()
    assert a._lengths == frozenset({20, 21, 22, 23})


def test_minimum_lengths_agree():
    """The lookup's minimum run, the engine's shortest text worth scanning and the shortest value that
    may be remembered are one number."""
    from reverie.redact import engine, memory, shapes

    assert memory.MIN_LEN == engine.MIN_SECRET_TEXT == shapes.CREDENTIAL_MIN_LEN == 8
    assert memory._RUN_RE.pattern.endswith("{8,}")
    assert not credential_like("aB3$eF7") and credential_like("aB3$eF7h")


def test_point_lookups_read_only_survive_close_and_never_create_a_key(tmp_path):
    """A point-lookup reader (hooks) finds remembered values, works again after `close()`, and on a
    secrets dir without a key file (or a store still being created) finds nothing and writes nothing."""
    writer = SecretMemory(tmp_path / "s")
    v = rand(20)
    writer.remember([v])
    writer.close()
    reader = SecretMemory(tmp_path / "s", point_lookups=True)
    assert reader.scrub(f"x {v} y") == ("x [REDACTED:remembered] y", 1)
    reader.close()
    assert reader.scrub(f"again {v}") == ("again [REDACTED:remembered]", 1)
    reader.close()

    bare = tmp_path / "bare"
    bare.mkdir()
    sqlite3.connect(bare / "hashes.db").close()          # created, no tables, no key yet
    before = sorted(p.name for p in bare.iterdir())
    lonely = SecretMemory(bare, point_lookups=True)
    assert lonely.scrub(f"y {v}") == (f"y {v}", 0)
    lonely.close()
    assert sorted(p.name for p in bare.iterdir()) == before
    (bare / "key").write_bytes(b"k" * 32)                # a key, and still no tables
    lonely = SecretMemory(bare, point_lookups=True)
    assert lonely.scrub(f"z {v}") == (f"z {v}", 0)
    lonely.close()
    assert sorted(p.name for p in bare.iterdir()) == sorted(before + ["key"])
