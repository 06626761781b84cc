"""Remembered secrets: keyed hashes of every credential seen once, so it is removed everywhere later.

STANDARD LIBRARY ONLY, and cheap to import: the hook path imports this module, so `sqlite3`,
`hmac`, `datetime`, `typing` and `redact.shapes` are imported where they are needed, not at module
load (a home without remembered secrets never loads most of them).

Files (`secrets_dir`, 0700):
  key        32 random bytes, mode 0600, created on first use (O_EXCL, never rewritten).
  hashes.db  sqlite3, mode 0600: table `secrets(h BLOB PRIMARY KEY, n INTEGER, first_at TEXT)` holds
             HMAC-SHA256(key, value) digests, `lengths(n)` the distinct value lengths, `meta`
             the generation counter. Values are never written anywhere.

Invariants:
  * `remember` stores only values that pass `shapes.credential_like` (length 8..512, no whitespace
    or quotes, not a placeholder, at least two character classes, entropy >= 2.5 bits/char).
  * `scrub(text)` removes every remembered value wherever it occurs as a token, with no context:
    tokens are maximal runs without whitespace, quotes, backticks or angle brackets; inside a run,
    every substring that starts at the run start or just after a separator (: @ = / , ; & ? # | ( )
    [ ] { } ! . + \\) and ends at the run end or just before one is a candidate. So a value learned
    from `DB_PASSWORD=s3cr3tP@ss!` is found in `password s3cr3tP@ss!`, `"s3cr3tP@ss!"` and
    `user:s3cr3tP@ss!@host`. A value glued to other word characters (`xs3cr3tP@ss!`) is not a token
    and is not found.
  * Lookup cost does not grow with the number of remembered secrets. A text is cut into its
    runs (`str.split` after quotes, backticks and angle brackets become spaces: the same runs as
    the regex `[^\\s"'`<>]+`, at C speed), and the set of its distinct runs minus the runs already
    known to hold no remembered secret (a bounded in-memory set, emptied whenever new secrets
    arrive) is all that is examined; for ordinary text that set difference is the whole cost.
    A new run is examined once: for each candidate start, only the ends whose distance is a
    remembered length are tried (a window between the shortest and the longest remembered length,
    found by bisection), each hashed and looked up in an in-memory set of digests loaded lazily
    from the db (reloaded when another process learned new secrets, checked at most once per
    second). `find_many` does one pass over a whole batch.
  * The keyed hash is HMAC-SHA256 exactly (`hmac.new(key, value, sha256)`, so hashes.db files of
    every version match), computed from SHA-256 states precomputed over the key's inner and outer
    pads (one `copy` + `update` + `digest` each per candidate) with the interpreter's builtin
    SHA-256 (`_sha256`, `_sha2` on 3.12+; `hashlib` only when neither exists): about twice as
    fast per value as `hmac.digest`, and without importing OpenSSL's `_hashlib` on the hook path.
  * `generation()` increases whenever new secrets are stored, so callers can tell they must rescan.
"""

from __future__ import annotations

import bisect
import os
import re
import time
from collections.abc import Iterable, Sequence

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hook ~2.4 ms
if TYPE_CHECKING:
    import sqlite3

KEY_FILE = "key"
DB_FILE = "hashes.db"
REPLACEMENT = "[REDACTED:remembered]"
MIN_LEN = 8
_REFRESH_SECONDS = 1.0
_MAX_SEPARATORS = 40  # runs with more separators only get candidates spanning <= 8 pieces

_RUN_RE = re.compile(r"[^\s\"'`<>]{%d,}" % MIN_LEN)
_SEP_RE = re.compile(r"[:@=/,;&?#|()\[\]{}!.+\\]")
#: Runs known to hold no remembered secret are remembered up to this many, or this many characters
#: in all (then forgotten at once): a bound on the memory the lookup cache can take.
_CLEAN_MAX = 400_000
_CLEAN_CHARS_MAX = 32_000_000


def _runs(text: str) -> set[str]:
    """The distinct maximal runs of `text` without whitespace, quotes, backticks or angle brackets
    (any length; `_RUN_RE` finds the same runs of 8 or more characters, with their positions)."""
    return set(text.replace('"', " ").replace("'", " ").replace("`", " ").replace("<", " ")
               .replace(">", " ").split())


def _sha256_constructor():
    """The builtin SHA-256 constructor: `_sha256` (3.11), `_sha2` (3.12+), else hashlib's."""
    try:
        from _sha256 import sha256
    except ImportError:
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256
    return sha256


def _hmac_pads(key: bytes):
    """(inner, outer) SHA-256 states over the key XOR ipad / opad: HMAC-SHA256 of `m` is
    outer.copy() updated with (inner.copy() updated with m).digest() (RFC 2104; keys up to the
    64-byte block, as ours are 32 bytes)."""
    sha256 = _sha256_constructor()
    if len(key) > 64:
        key = sha256(key).digest()
    key = key.ljust(64, b"\0")
    return (sha256(bytes(b ^ 0x36 for b in key)), sha256(bytes(b ^ 0x5C for b in key)))


def _hmac(pads, data: bytes) -> bytes:
    """HMAC-SHA256 of `data` from the (inner, outer) pads of `_hmac_pads`."""
    inner = pads[0].copy()
    inner.update(data)
    outer = pads[1].copy()
    outer.update(inner.digest())
    return outer.digest()


def _now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class SecretMemory:
    """Keyed-hash store of remembered secrets for one home (shared by all its agents)."""

    def __init__(self, secrets_dir: str | os.PathLike) -> None:
        self.dir = os.fspath(secrets_dir)  # a string: pathlib costs the hook path ~2.5 ms to import
        self._key: bytes | None = None
        self._conn: "sqlite3.Connection | None" = None
        self._hashes: set[bytes] | None = None
        self._lengths: frozenset[int] = frozenset()
        self._min_len = self._max_len = 0
        self._generation = -1
        self._data_version = -1
        self._checked_at = 0.0
        self._pads = None  # (inner, outer) SHA-256 states of the key, see `_hmac_pads`
        self._clean: set[str] = set()  # runs known to hold no remembered secret
        self._clean_chars = 0
        self._cache: dict[str, tuple[tuple[int, int], ...]] = {}  # runs that hold some, with their spans

    # -- files --
    def _ensure_dir(self) -> None:
        os.makedirs(self.dir, exist_ok=True)
        try:
            os.chmod(self.dir, 0o700)
        except OSError:
            pass

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._ensure_dir()
            path = os.path.join(self.dir, KEY_FILE)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                with open(path, "rb") as fh:
                    data = fh.read()
                if len(data) < 32:
                    raise ValueError(f"{path} is truncated; move it away to start a new memory") from None
                self._key = data[:32]
            else:
                try:
                    key = os.urandom(32)
                    os.write(fd, key)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                self._key = key
        return self._key

    @property
    def conn(self) -> "sqlite3.Connection":
        if self._conn is None:
            import sqlite3

            self._ensure_dir()
            path = os.path.join(self.dir, DB_FILE)
            new = not os.path.exists(path)
            conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
            if new:
                try:
                    os.chmod(path, 0o600)
                except OSError:
                    pass
            conn.execute("PRAGMA busy_timeout = 5000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA secure_delete = ON")
            conn.execute("CREATE TABLE IF NOT EXISTS secrets (h BLOB PRIMARY KEY, n INTEGER NOT NULL, first_at TEXT)")
            conn.execute("CREATE TABLE IF NOT EXISTS lengths (n INTEGER PRIMARY KEY)")
            conn.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL)")
            conn.execute("INSERT OR IGNORE INTO meta (k, v) VALUES ('generation', 0)")
            self._conn = conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def exists(self) -> bool:
        return self._has_db() and os.path.exists(os.path.join(self.dir, KEY_FILE))

    def _has_db(self) -> bool:
        return self._conn is not None or os.path.exists(os.path.join(self.dir, DB_FILE))

    # -- hashing --
    def _key_pads(self):
        """The (inner, outer) SHA-256 states of the key (`_hmac_pads`), computed once."""
        if self._pads is None:
            self._pads = _hmac_pads(self.key)
        return self._pads

    def digest(self, value: str) -> bytes:
        """HMAC-SHA256 of `value` (UTF-8, surrogatepass) under this home's key."""
        return _hmac(self._key_pads(), value.encode("utf-8", "surrogatepass"))

    def hash_prefix(self, value: str, n: int = 8) -> str:
        """Short keyed fingerprint for reports (safe to show; not the value)."""
        return self.digest(value).hex()[:n]

    # -- state --
    def _load(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and self._hashes is not None and now - self._checked_at < _REFRESH_SECONDS:
            return
        self._checked_at = now
        if self._hashes is None and not self._has_db():
            self._hashes, self._lengths, self._generation = set(), frozenset(), 0
            self._min_len = self._max_len = 0
            return
        conn = self.conn
        dv = conn.execute("PRAGMA data_version").fetchone()[0]
        gen = conn.execute("SELECT v FROM meta WHERE k = 'generation'").fetchone()[0]
        if self._hashes is not None and not force and dv == self._data_version and gen == self._generation:
            return
        if self._hashes is None or gen != self._generation or force:
            self._hashes = {row[0] for row in conn.execute("SELECT h FROM secrets")}
            self._lengths = frozenset(row[0] for row in conn.execute("SELECT n FROM lengths"))
            self._min_len = min(self._lengths, default=0)
            self._max_len = max(self._lengths, default=0)
            self._cache.clear()
            self._clean.clear()
            self._clean_chars = 0
        self._generation = gen
        self._data_version = dv

    def generation(self) -> int:
        """Increases every time new secrets are remembered (in this or another process). Read
        from the db as it is now; the remembered hashes are not loaded for it."""
        if not self._has_db():
            return 0
        return self.conn.execute("SELECT v FROM meta WHERE k = 'generation'").fetchone()[0]

    def count(self) -> int:
        """How many secrets are remembered (read from the db as it is now)."""
        if not self._has_db():
            return 0
        return self.conn.execute("SELECT count(*) FROM secrets").fetchone()[0]

    def remember(self, values: Iterable[str]) -> int:
        """Store the credential-like values among `values`; returns how many were new."""
        from .shapes import credential_like

        fresh: dict[bytes, int] = {}
        for v in values:
            if isinstance(v, str) and credential_like(v):
                fresh[self.digest(v)] = len(v)
        if not fresh:
            return 0
        self._load()
        known = self._hashes or set()
        fresh = {h: n for h, n in fresh.items() if h not in known}
        if not fresh:
            return 0
        conn = self.conn
        at = _now()
        conn.execute("BEGIN IMMEDIATE")
        try:
            # under the write lock: is the db still exactly what this instance has loaded?
            in_step = conn.execute("SELECT v FROM meta WHERE k = 'generation'").fetchone()[0] == self._generation
            before = conn.total_changes
            conn.executemany("INSERT OR IGNORE INTO secrets (h, n, first_at) VALUES (?, ?, ?)",
                             [(h, n, at) for h, n in fresh.items()])
            added = conn.total_changes - before
            conn.executemany("INSERT OR IGNORE INTO lengths (n) VALUES (?)", [(n,) for n in set(fresh.values())])
            if added:
                conn.execute("UPDATE meta SET v = v + 1 WHERE k = 'generation'")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if in_step and self._hashes is not None:
            # nobody else wrote since the load: the db now holds the loaded set plus `fresh`, so add
            # them here instead of reading every hash back (a remember per indexed file must stay cheap)
            self._hashes.update(fresh)
            self._lengths = self._lengths | frozenset(fresh.values())
            self._min_len = min(self._lengths, default=0)
            self._max_len = max(self._lengths, default=0)
            self._generation += 1 if added else 0
            self._data_version = conn.execute("PRAGMA data_version").fetchone()[0]
            self._checked_at = time.monotonic()
            self._cache.clear()
            self._clean.clear()
            self._clean_chars = 0
        else:
            self._load(force=True)
        return added

    # -- scrubbing --
    def _run_hits(self, run: str) -> tuple[tuple[int, int], ...]:
        """Spans inside `run` whose text is a remembered secret (longest first, non-overlapping)."""
        lengths = self._lengths
        hashes = self._hashes
        lo, hi = self._min_len, self._max_len
        n = len(run)
        if n < lo:
            return ()
        seps = [m.start() for m in _SEP_RE.finditer(run)]
        if not seps:  # one candidate: the whole run
            return ((0, n),) if n in lengths and self.digest(run) in hashes else ()
        starts = [0] + [p + 1 for p in seps if p + 1 < n]
        ends = [p for p in seps if p > 0] + [n]
        limit = len(seps) > _MAX_SEPARATORS
        inner, outer = self._key_pads()  # `_hmac` inlined below: this loop is the lookup's cost
        # offsets are characters; an ASCII run is encoded once and sliced (bytes = characters)
        data = run.encode("ascii") if run.isascii() else None
        found: list[tuple[int, int]] = []
        bleft, bright = bisect.bisect_left, bisect.bisect_right
        for si, a in enumerate(starts):
            if a + lo > n:
                break  # starts are sorted: no later start leaves room for the shortest secret
            # only the ends at a remembered distance from `a` (ends are sorted)
            first = bleft(ends, a + lo)
            last = bright(ends, a + hi)
            if limit:
                last = min(last, si + 9)  # at most 8 more pieces when the run has very many separators
            for b in ends[first:last]:
                if (b - a) in lengths:
                    h = inner.copy()
                    h.update(data[a:b] if data is not None else run[a:b].encode("utf-8", "surrogatepass"))
                    o = outer.copy()
                    o.update(h.digest())
                    if o.digest() in hashes:
                        found.append((a, b))
        if not found:
            return ()
        found.sort(key=lambda ab: (-(ab[1] - ab[0]), ab[0]))
        chosen: list[tuple[int, int]] = []
        for a, b in found:
            if all(b <= c or a >= d for c, d in chosen):
                chosen.append((a, b))
        return tuple(sorted(chosen))

    def _keep(self, run: str, hits: tuple[tuple[int, int], ...]) -> None:
        if hits:
            if len(self._cache) > 200_000:
                self._cache.clear()
            self._cache[run] = hits
        else:
            if len(self._clean) >= _CLEAN_MAX or self._clean_chars > _CLEAN_CHARS_MAX:
                self._clean.clear()
                self._clean_chars = 0
            self._clean.add(run)
            self._clean_chars += len(run)

    def _hit_runs(self, runs: set[str]) -> dict[str, tuple[tuple[int, int], ...]]:
        """The runs among `runs` that hold remembered secrets, with their hits. One set difference
        drops every run seen before without a hit (the whole cost for ordinary text)."""
        new = runs - self._clean
        if not new:
            return {}
        min_len, max_len = self._min_len, self._max_len
        cache_get = self._cache.get
        keep = self._keep
        out: dict[str, tuple[tuple[int, int], ...]] = {}
        for run in new:
            hits = cache_get(run)
            if hits is None:
                if len(run) < min_len or (len(run) > max_len and _SEP_RE.search(run) is None):
                    hits = ()
                else:
                    hits = self._run_hits(run)
                keep(run, hits)
            if hits:
                out[run] = hits
        return out

    def _ready(self) -> bool:
        """Load (or refresh) the remembered hashes; False when there is nothing to look for."""
        self._load()
        return bool(self._hashes and self._lengths)

    def find(self, text: str) -> list[tuple[int, int]]:
        """Character spans of remembered secrets in `text` (sorted, non-overlapping)."""
        if not text or len(text) < MIN_LEN or not self._ready():
            return []
        # C-level passes and sets: repeated tokens (very common in transcripts) cost nothing
        hit_runs = self._hit_runs(_runs(text))
        if not hit_runs:
            return []
        spans: list[tuple[int, int]] = []
        for m in _RUN_RE.finditer(text):
            hits = hit_runs.get(m.group())
            if hits:
                base = m.start()
                spans.extend((base + a, base + b) for a, b in hits)
        return spans

    def find_many(self, texts: Sequence[str]) -> list[list[tuple[int, int]]]:
        """`find` for each of `texts`, with one pass over the whole batch (same results)."""
        out: list[list[tuple[int, int]]] = [[] for _ in texts]
        for i, spans in self.find_sparse(texts).items():
            out[i] = spans
        return out

    def find_sparse(self, texts: Sequence[str]) -> dict[int, list[tuple[int, int]]]:
        """`find_many` as {position in `texts`: spans}, for the texts that hold any (usually none)."""
        out: dict[int, list[tuple[int, int]]] = {}
        if not texts or not self._ready():
            return out
        joined = "\n".join(texts)  # runs never contain whitespace, so none crosses two texts
        hit_runs = self._hit_runs(_runs(joined))
        if not hit_runs:
            return out
        starts = []
        pos = 0
        for t in texts:
            starts.append(pos)
            pos += len(t) + 1
        for m in _RUN_RE.finditer(joined):
            hits = hit_runs.get(m.group())
            if hits:
                i = bisect.bisect_right(starts, m.start()) - 1
                base = m.start() - starts[i]
                out.setdefault(i, []).extend((base + a, base + b) for a, b in hits)
        return out

    def scrub(self, text: str) -> tuple[str, int]:
        """`text` with every remembered secret replaced by `[REDACTED:remembered]`; (text, count)."""
        spans = self.find(text)
        if not spans:
            return text, 0
        out = []
        last = 0
        for a, b in spans:
            out.append(text[last:a])
            out.append(REPLACEMENT)
            last = b
        out.append(text[last:])
        return "".join(out), len(spans)
