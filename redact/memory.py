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
  * Lookup cost does not grow with the number of remembered secrets: for each candidate start,
    only the ends whose distance is a remembered length are tried (a window between the shortest
    and the longest remembered length, found by bisection), then hashed and looked up in an
    in-memory set loaded lazily from the db (reloaded when another process learned new secrets,
    checked at most once per second). Results are cached per distinct run, and `find_many` does
    one pass over a whole batch.
  * `generation()` increases whenever new secrets are stored, so callers can tell they must rescan.
"""

from __future__ import annotations

import bisect
import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hook ~2 ms
if TYPE_CHECKING:
    import sqlite3

KEY_FILE = "key"
DB_FILE = "hashes.db"
REPLACEMENT = "[REDACTED:remembered]"
MIN_LEN = 8
MAX_LEN = 512
_REFRESH_SECONDS = 1.0
_MAX_SEPARATORS = 40  # runs with more separators only get candidates spanning <= 8 pieces

_RUN_RE = re.compile(r"[^\s\"'`<>]{8,}")
_SEP_RE = re.compile(r"[:@=/,;&?#|()\[\]{}!.+\\]")


def _now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class SecretMemory:
    """Keyed-hash store of remembered secrets for one home (shared by all its agents)."""

    def __init__(self, secrets_dir: Path | str) -> None:
        self.dir = Path(secrets_dir)
        self._key: bytes | None = None
        self._conn: "sqlite3.Connection | None" = None
        self._hashes: set[bytes] | None = None
        self._lengths: frozenset[int] = frozenset()
        self._min_len = self._max_len = 0
        self._generation = -1
        self._data_version = -1
        self._checked_at = 0.0
        self._cache: dict[str, tuple[tuple[int, int], ...]] = {}

    # -- files --
    def _ensure_dir(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            os.chmod(self.dir, 0o700)
        except OSError:
            pass

    @property
    def key(self) -> bytes:
        if self._key is None:
            self._ensure_dir()
            path = self.dir / KEY_FILE
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                data = path.read_bytes()
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
            path = self.dir / DB_FILE
            new = not path.exists()
            conn = sqlite3.connect(str(path), timeout=5.0, isolation_level=None)
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
        return (self.dir / DB_FILE).exists() and (self.dir / KEY_FILE).exists()

    # -- hashing --
    def digest(self, value: str) -> bytes:
        """HMAC-SHA256 of `value` under this home's key."""
        import hmac

        return hmac.digest(self.key, value.encode("utf-8", "surrogatepass"), "sha256")

    def hash_prefix(self, value: str, n: int = 8) -> str:
        """Short keyed fingerprint for reports (safe to show; not the value)."""
        return self.digest(value).hex()[:n]

    # -- state --
    def _load(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and self._hashes is not None and now - self._checked_at < _REFRESH_SECONDS:
            return
        self._checked_at = now
        if self._hashes is None and not (self.dir / DB_FILE).exists():
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
        self._generation = gen
        self._data_version = dv

    def generation(self) -> int:
        """Increases every time new secrets are remembered (in this or another process)."""
        self._load(force=True)
        return self._generation

    def count(self) -> int:
        self._load(force=True)
        return len(self._hashes or ())

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
        self._load(force=True)
        return added

    def forget_all(self) -> None:
        """Remove every remembered hash (the key stays)."""
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM secrets")
        conn.execute("DELETE FROM lengths")
        conn.execute("UPDATE meta SET v = v + 1 WHERE k = 'generation'")
        conn.execute("COMMIT")
        self._load(force=True)

    # -- scrubbing --
    def _run_hits(self, run: str) -> tuple[tuple[int, int], ...]:
        """Spans inside `run` whose text is a remembered secret (longest first, non-overlapping)."""
        import hmac

        lengths = self._lengths
        hashes = self._hashes
        key = self.key
        lo, hi = self._min_len, self._max_len
        n = len(run)
        seps = [m.start() for m in _SEP_RE.finditer(run)]
        starts = [0] + [p + 1 for p in seps if p + 1 < n]
        ends = [p for p in seps if p > 0] + [n]
        limit = len(seps) > _MAX_SEPARATORS
        try:  # OpenSSL's one-shot HMAC, what hmac.digest calls, without the wrapper's checks
            from _hashlib import hmac_digest as digest
        except ImportError:
            digest = hmac.digest
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
                if (b - a) in lengths and digest(key, run[a:b].encode("utf-8", "surrogatepass"), "sha256") in hashes:
                    found.append((a, b))
        if not found:
            return ()
        found.sort(key=lambda ab: (-(ab[1] - ab[0]), ab[0]))
        chosen: list[tuple[int, int]] = []
        for a, b in found:
            if all(b <= c or a >= d for c, d in chosen):
                chosen.append((a, b))
        return tuple(sorted(chosen))

    def _hits(self, run: str) -> tuple[tuple[int, int], ...]:
        cache = self._cache
        hits = cache.get(run)
        if hits is None:
            if len(run) > self._max_len and _SEP_RE.search(run) is None:
                hits = ()
            else:
                hits = self._run_hits(run)
            if len(cache) > 200_000:
                cache.clear()
            cache[run] = hits
        return hits

    def _hit_runs(self, runs: list[str]) -> dict[str, tuple[tuple[int, int], ...]]:
        """The runs among `runs` that hold remembered secrets, with their hits (`_hits`, inlined:
        the cache lookup is the whole cost of a run seen before)."""
        min_len = self._min_len
        cache_get = self._cache.get
        out: dict[str, tuple[tuple[int, int], ...]] = {}
        for run in set(runs):
            if len(run) < min_len:
                continue
            hits = cache_get(run)
            if hits is None:
                hits = self._hits(run)
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
        # One C-level pass and a set: repeated tokens (very common in transcripts) cost one lookup.
        hit_runs = self._hit_runs(_RUN_RE.findall(text))
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
        if not texts or not self._ready():
            return out
        joined = "\n".join(texts)  # runs never contain whitespace, so none crosses two texts
        hit_runs = self._hit_runs(_RUN_RE.findall(joined))
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
                out[i].extend((base + a, base + b) for a, b in hits)
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
