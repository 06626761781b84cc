"""Remembered secrets: keyed hashes of every credential seen once, so it is removed everywhere later.

STANDARD LIBRARY ONLY, and cheap to import: the hook path imports this module, so `sqlite3`,
`hmac`, `datetime`, `typing` and `redact.shapes` are imported where they are needed, not at module
load (a home without remembered secrets never loads most of them).

Files (`secrets_dir`, 0700):
  key        32 random bytes, mode 0600, created on first use (O_EXCL, never rewritten).
  hashes.db  sqlite3, mode 0600: table `secrets(h BLOB PRIMARY KEY, n INTEGER, first_at TEXT)` holds
             HMAC-SHA256(key, value) digests, `lengths(n)` the distinct value lengths, `meta`
             the generation counter (and `forgets`, bumped by `forget`). Values are never
             written anywhere.

Invariants:
  * `remember` stores only values that pass `shapes.credential_like` (length 8..512, no whitespace
    or quotes, not a placeholder, at least two character classes, entropy >= 2.5 bits/char).
  * `scrub(text)` removes every remembered value wherever it occurs as a token, with no context:
    tokens are maximal runs without whitespace, quotes, backticks or angle brackets; inside a run,
    every substring that starts at the run start or just after a cut and ends at the run end or
    just before one is a candidate (`_bounds`). Cuts are: every ASCII punctuation or control
    character (ESC included), Latin-1, general, CJK and fullwidth punctuation, symbols, arrows,
    box drawing and emoji; a percent-encoded byte (`%3D<v>%26`), a backslash escape (`\\n<v>`,
    `\\u0022<v>`), an ANSI CSI sequence (`ESC[33m<v>ESC[0m`), the option letter of a `-x` that
    opens the run (`-p<v>`), and a chunk of non-ASCII letters next to ASCII (`密码是<v>。`). `-` and
    `_` are weak cuts: one is a start when the piece before it is letters only (`svc-<v>`,
    `svc_<v>`) and an end when the piece after it is (`<v>-prod`, `<v>_backup`), so ids made of hex
    or digit groups (UUIDs, versions, dates) add no candidate; in a run with more than
    `_MAX_SEPARATORS` cuts they are no cuts at all. So a value learned from `DB_PASSWORD=s3cr3tP@ss!`
    is found in `password s3cr3tP@ss!`, `"s3cr3tP@ss!"`, `user:s3cr3tP@ss!@host`, `**s3cr3tP@ss!**`
    and `svc-s3cr3tP@ss!`. A value glued to other word characters (`xs3cr3tP@ss!`, `v2-s3cr3tP@ss!`)
    is not found. Overlapping hits are replaced as one span (their union).
  * Lookup cost does not grow with the number of remembered secrets, and is linear in the text.
    A text is cut into its
    runs (`str.split` after quotes, backticks and angle brackets become spaces: the same runs as
    the regex `[^\\s"'`<>]+`, at C speed), and the set of its distinct runs minus the runs already
    known to hold no remembered secret (a bounded in-memory set, emptied whenever new secrets
    arrive) is all that is examined; for ordinary text that set difference is the whole cost.
    A new run is examined once: for each candidate start, only the ends whose distance is a
    remembered length are tried (a window between the shortest and the longest remembered length,
    found by bisection; in a run with more than `_MAX_SEPARATORS` cuts, at most `_PIECES` pieces
    from the start), longest first, skipping candidates inside a hit already found and candidates
    already hashed without a hit (a bounded set, emptied with the other); each is hashed and looked
    up in an in-memory set of digests loaded lazily
    from the db (reloaded when another process learned new secrets, checked at most once per
    second). `find_sparse` (and `find_many`) does one pass over a whole batch.
  * The keyed hash is HMAC-SHA256 exactly (`hmac.new(key, value, sha256)`, so hashes.db files of
    every version match), computed from SHA-256 states precomputed over the key's inner and outer
    pads (one `copy` + `update` + `digest` each per candidate) with the interpreter's builtin
    SHA-256 (`_sha256`, `_sha2` on 3.12+; `hashlib` only when neither exists): about twice as
    fast per value as `hmac.digest`, and without importing OpenSSL's `_hashlib` on the hook path.
  * `generation()` increases whenever new secrets are stored, so callers can tell they must rescan.
  * `forget(values)` removes remembered values (`reverie redact --forget-secret`): a wrong one
    stops spreading; text redacted before stays redacted.
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
#: Longest wait of a point-lookup reader for a lock (a hook must not hang on a writer).
READ_TIMEOUT_S = 0.2
_MAX_SEPARATORS = 40  # runs with more cuts than this only get candidates spanning <= _PIECES pieces
_PIECES = 9

_RUN_RE = re.compile(r"[^\s\"'`<>]{%d,}" % MIN_LEN)
#: Separator characters: ASCII punctuation and control characters, Latin-1 and general punctuation,
#: symbols, arrows, box drawing, CJK and fullwidth punctuation, emoji. A candidate may start just
#: after and end just before any of them. `-` and `_` are "weak": they join the parts of
#: identifiers, so a run with very many cuts (`_MAX_SEPARATORS`) is cut without them.
_STRONG_SEPS = ("\x00-\x1f!#$%&()*+,./:;=?@\\[\\\\\\]^{|}~\x7f-\xbf\xd7\xf7\u2000-\u2bff\u2e00-\u2e7f"
                "\u3000-\u303f\ufe10-\ufe1f\ufe30-\ufe6f\uff00-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65"
                "\ufff0-\uffff\U0001f000-\U0001faff")
_WEAK_SEPS = "\\-_"


def _cut_re(seps: str) -> "re.Pattern[str]":
    """The cuts of a run (see `_bounds`), with `seps` as the separator characters. Beyond single
    separators: an option letter after a `-` that opens the run (`-p<v>`), percent-encoded bytes
    (`%3D<v>`), backslash escapes (`\\n<v>`, `\\u0022<v>`), ANSI CSI sequences (`ESC[33m<v>`), and
    a maximal chunk of other non-ASCII characters (letters: `密码是<v>`). Every alternative is
    bounded or a single character class, so a search is linear in the run."""
    return re.compile(
        r"^-[A-Za-z]|%(?:[0-9A-Fa-f]{2})?|\\(?:u[0-9A-Fa-f]{4}|.)?|\x1b(?:\[[0-?]{0,32}[ -/]{0,4}[@-~])?"
        r"|[" + seps + r"]|[^\x00-\x7f" + seps + r"]+", re.S)


#: The compiled cut patterns (`_cut_res`).
_CUT_RES: "tuple[re.Pattern[str], ...] | None" = None


def _cut_res() -> "tuple[re.Pattern[str], ...]":
    """(all cuts, strong cuts, all separators, strong separators), compiled on first use (about 1 ms:
    a hook in a home without remembered secrets never pays it). The separator classes alone serve
    the runs where every cut is one separator character (ASCII, no `%`, backslash or ESC, not
    opening with `-`): the common case, found faster."""
    global _CUT_RES
    if _CUT_RES is None:
        _CUT_RES = (_cut_re(_STRONG_SEPS + _WEAK_SEPS), _cut_re(_STRONG_SEPS),
                    re.compile("[" + _STRONG_SEPS + _WEAK_SEPS + "]"), re.compile("[" + _STRONG_SEPS + "]"))
    return _CUT_RES


#: Runs known to hold no remembered secret are remembered up to this many, or this many characters
#: in all (then forgotten at once): a bound on the memory the lookup cache can take.
_CLEAN_MAX = 400_000
_CLEAN_CHARS_MAX = 32_000_000
#: The same bounds for the candidates (slices of new runs) already hashed without a hit: the same
#: path component, identifier or id inside many different runs is hashed once.
_MISSES_MAX = 300_000
_MISSES_CHARS_MAX = 12_000_000


def _runs(text: str) -> set[str]:
    """The distinct maximal runs of `text` without whitespace, quotes, backticks or angle brackets
    (any length; `_RUN_RE` finds the same runs of 8 or more characters, with their positions)."""
    return set(text.replace('"', " ").replace("'", " ").replace("`", " ").replace("<", " ")
               .replace(">", " ").split())


def _bounds(run: str, weak: bool = True) -> tuple[list[int], list[int]]:
    """(starts, ends) of the candidates inside `run`, each sorted and without repeats.

    A candidate starts at 0 or just after a cut (`_cut_re`; without `-` and `_` when not `weak`), and
    also just after the first character of a multi-character cut that starts with an ASCII character
    (an escape, a percent-encoded byte, a CSI sequence, an opening `-x`); it ends just before a cut
    or at the end of the run. A weak cut (`-`, `_`) glues a word to the value: it is a start when the
    piece before it (from the previous cut) is letters only or empty (`svc-<v>`, `svc_<v>`, `__<v>`),
    an end when the piece after it is (`<v>-prod`, `<v>_backup`, `<v>__`); ids made of hex or digit
    groups (UUIDs, versions, dates) add no candidate. At most two starts and one end per cut: linear
    in the run. The starts and ends include those of every strong separator character."""
    n = len(run)
    bound_re, strong_re, sep_re, strong_sep_re = _CUT_RES or _cut_res()
    if run.isascii() and run[:1] != "-" and "\\" not in run and "%" not in run and "\x1b" not in run:
        cuts = [m.start() for m in (sep_re if weak else strong_sep_re).finditer(run)]
        starts = [0]
        if not weak or ("-" not in run and "_" not in run):
            starts += [p + 1 for p in cuts if p + 1 < n]
            ends = [p for p in cuts if p]
            ends.append(n)
            return starts, ends
        # the loop below, for one-character cuts (the common case: a little faster written apart)
        ends = []
        prev = 0  # where the piece before the current cut starts
        cuts.append(n)
        for i in range(len(cuts) - 1):
            p = cuts[i]
            c = run[p]
            if c == "-" or c == "_":
                nxt = cuts[i + 1]
                if p and (nxt == p + 1 or run[p + 1:nxt].isalpha()):
                    ends.append(p)
                if p + 1 < n and (prev == p or run[prev:p].isalpha()):
                    starts.append(p + 1)
            else:
                if p:
                    ends.append(p)
                if p + 1 < n:
                    starts.append(p + 1)
            prev = p + 1
        ends.append(n)
        return starts, ends
    spans = [m.span() for m in (bound_re if weak else strong_re).finditer(run)]
    starts = [0]
    ends = []
    prev = 0  # where the piece before the current cut starts
    last = len(spans) - 1
    for i, (p, q) in enumerate(spans):
        if q - p == 1 and (run[p] == "-" or run[p] == "_"):
            nxt = spans[i + 1][0] if i < last else n
            if p and (nxt == q or run[q:nxt].isalpha()):
                ends.append(p)
            if q < n and (prev == p or run[prev:p].isalpha()):
                starts.append(q)
        else:
            if p:
                ends.append(p)
            if q - p > 1 and run[p] < "\x80" and p + 1 < n:
                starts.append(p + 1)
            if q < n:
                starts.append(q)
        prev = q
    ends.append(n)
    return starts, ends


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


class _PointSet:
    """The remembered hashes looked up one by one in the db (primary key) instead of loaded whole:
    what a short-lived process (a hook: one prompt, a few dozen candidates) needs, at a cost that does
    not grow with the number of remembered secrets. Answers are cached for the process."""

    def __init__(self, conn: "sqlite3.Connection") -> None:
        self.conn = conn
        self._known: dict[bytes, bool] = {}
        self._any = conn.execute("SELECT 1 FROM secrets LIMIT 1").fetchone() is not None

    def __contains__(self, h: bytes) -> bool:
        hit = self._known.get(h)
        if hit is None:
            hit = self._known[h] = self.conn.execute("SELECT 1 FROM secrets WHERE h = ?", (h,)).fetchone() is not None
        return hit

    def __bool__(self) -> bool:
        return self._any

    def update(self, hashes: Iterable[bytes]) -> None:
        for h in hashes:
            self._known[h] = True
        self._any = self._any or bool(self._known)


class SecretMemory:
    """Keyed-hash store of remembered secrets for one home (shared by all its agents).

    `point_lookups=True` (short-lived processes: the hooks, `reverie recall`/`search`): the lookup
    reads through a read-only connection that waits at most `READ_TIMEOUT_S` for a lock and never
    writes (no schema, no meta row), and checks each candidate by primary key instead of loading
    every remembered hash (`_PointSet`): its cost does not grow with the number of secrets. The
    default loads the hashes once and keeps them in memory (long runs: indexing, consolidation)."""

    def __init__(self, secrets_dir: str | os.PathLike, *, point_lookups: bool = False) -> None:
        self.dir = os.fspath(secrets_dir)  # a string: pathlib costs the hook path ~2.7 ms to import
        self.point_lookups = point_lookups
        self._rconn: "sqlite3.Connection | None" = None
        self._key: bytes | None = None
        self._conn: "sqlite3.Connection | None" = None
        self._hashes: set[bytes] | None = None
        self._lengths: frozenset[int] = frozenset()
        self._min_len = self._max_len = 0
        self._generation = -1
        self._loaded_forgets = 0  # `forget` calls the loaded set has seen (meta 'forgets'): reload on change
        self._data_version = -1
        self._checked_at = 0.0
        self._pads = None  # (inner, outer) SHA-256 states of the key, see `_hmac_pads`
        self._clean: set[str] = set()  # runs known to hold no remembered secret
        self._clean_chars = 0
        self._misses: set[str] = set()  # candidates (run slices) known not to be a remembered secret
        self._misses_chars = 0
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

    def _read_conn(self) -> "sqlite3.Connection":
        """The lookup's connection: the read-write one when it is open, else (point lookups) a
        read-only one that never creates or writes anything. (The URI escaping is that of
        `graph.db.connect_readonly`, which redact/ may not import: change both together.)"""
        if self._conn is not None or not self.point_lookups:
            return self.conn
        if self._rconn is None:
            import sqlite3

            path = os.path.join(self.dir, DB_FILE)
            uri_path = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
            conn = sqlite3.connect(f"file:{uri_path}?mode=ro", uri=True, timeout=READ_TIMEOUT_S,
                                   isolation_level=None)
            conn.execute("PRAGMA query_only = 1")
            self._rconn = conn
        return self._rconn

    def close(self) -> None:
        for conn in (self._conn, self._rconn):
            if conn is not None:
                conn.close()
        self._conn = self._rconn = None
        if self.point_lookups:      # its point set reads through the connection just closed
            self._hashes = None

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
        conn = self._read_conn()
        dv = conn.execute("PRAGMA data_version").fetchone()[0]
        row = conn.execute("SELECT v FROM meta WHERE k = 'generation'").fetchone()
        gen = row[0] if row else 0
        forgets = self._forgets_now(conn)
        if (self._hashes is not None and not force and dv == self._data_version and gen == self._generation
                and forgets == self._loaded_forgets):
            return
        if self._hashes is None or gen != self._generation or force or forgets != self._loaded_forgets:
            self._loaded_forgets = forgets
            self._hashes = (_PointSet(conn) if self.point_lookups  # type: ignore[assignment]
                            else {row[0] for row in conn.execute("SELECT h FROM secrets")})
            self._lengths = frozenset(row[0] for row in conn.execute("SELECT n FROM lengths"))
            self._min_len = min(self._lengths, default=0)
            self._max_len = max(self._lengths, default=0)
            self._forget()
        self._generation = gen
        self._data_version = dv

    def _forget(self) -> None:
        """Empty the lookup caches (new secrets arrived: a run or candidate seen clean may hold one)."""
        self._cache.clear()
        self._clean.clear()
        self._clean_chars = 0
        self._misses.clear()
        self._misses_chars = 0

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
            in_step = (conn.execute("SELECT v FROM meta WHERE k = 'generation'").fetchone()[0] == self._generation
                       and self._forgets_now(conn) == self._loaded_forgets)
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
            self._forget()
        else:
            self._load(force=True)
        return added

    @staticmethod
    def _forgets_now(conn: "sqlite3.Connection") -> int:
        row = conn.execute("SELECT v FROM meta WHERE k = 'forgets'").fetchone()
        return row[0] if row else 0

    def is_remembered(self, value: str) -> bool:
        """Whether `value` itself is remembered (its keyed hash is stored)."""
        if not self.exists():
            return False
        h = self.digest(value)
        return self.conn.execute("SELECT 1 FROM secrets WHERE h = ?", (h,)).fetchone() is not None

    def forget(self, values: Iterable[str]) -> int:
        """Remove remembered values (a false finding a person spotted); returns how many were
        stored. Text already redacted stays redacted: only later text is no longer scrubbed of
        them. Other processes see it within `_REFRESH_SECONDS` (meta 'forgets' is bumped)."""
        if not self.exists():
            return 0
        hashes = {self.digest(v) for v in values if isinstance(v, str) and v}
        if not hashes:
            return 0
        conn = self.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            before = conn.total_changes
            conn.executemany("DELETE FROM secrets WHERE h = ?", [(h,) for h in hashes])
            removed = conn.total_changes - before
            if removed:
                conn.execute("DELETE FROM lengths WHERE n NOT IN (SELECT DISTINCT n FROM secrets)")
                conn.execute("INSERT OR IGNORE INTO meta (k, v) VALUES ('forgets', 0)")
                conn.execute("UPDATE meta SET v = v + 1 WHERE k = 'forgets'")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if removed:
            self._load(force=True)
        return removed

    # -- scrubbing --
    def _run_hits(self, run: str) -> tuple[tuple[int, int], ...]:
        """Sorted, non-overlapping spans inside `run` that cover every remembered secret found in it:
        each span is a remembered value, or the union of overlapping ones. A candidate inside a hit
        already found is not hashed (it would change nothing)."""
        lengths = self._lengths
        hashes = self._hashes
        lo, hi = self._min_len, self._max_len
        n = len(run)
        if n < lo:
            return ()
        starts, ends = _bounds(run)
        if len(ends) > _MAX_SEPARATORS:  # very many cuts: `-` and `_` are not cuts in this run
            starts, ends = _bounds(run, weak=False)
        if len(starts) == 1 and len(ends) == 1:  # one candidate: the whole run
            return ((0, n),) if n in lengths and self.digest(run) in hashes else ()
        limit = len(ends) > _MAX_SEPARATORS
        inner, outer = self._key_pads()  # `_hmac` inlined below: this loop is the lookup's cost
        misses = self._misses
        if len(misses) >= _MISSES_MAX or self._misses_chars > _MISSES_CHARS_MAX:
            misses.clear()
            self._misses_chars = 0
        added = 0
        found: list[tuple[int, int]] = []
        cover = 0  # the end of the furthest hit so far: candidates inside a hit are not tried
        bleft, bright = bisect.bisect_left, bisect.bisect_right
        for a in starts:
            if a + lo > n:
                break  # starts are sorted: no later start leaves room for the shortest secret
            # only the ends at a remembered distance from `a` (ends are sorted)
            first = bleft(ends, a + lo)
            if a < cover:  # `a` is inside an earlier hit: only ends beyond it
                first = max(first, bright(ends, cover))
            last = bright(ends, a + hi)
            if limit:  # very many cuts: only candidates spanning at most _PIECES pieces from `a`
                last = min(last, bright(ends, a) + _PIECES)
            for b in reversed(ends[first:last]):  # longest first: the shorter ones lie inside a hit
                if (b - a) in lengths:
                    cand = run[a:b]
                    if cand in misses:
                        continue
                    h = inner.copy()
                    h.update(cand.encode("utf-8", "surrogatepass"))
                    o = outer.copy()
                    o.update(h.digest())
                    if o.digest() in hashes:
                        found.append((a, b))
                        cover = max(cover, b)
                        break
                    misses.add(cand)
                    added += b - a
        self._misses_chars += added
        if not found:
            return ()
        # overlapping hits become one span (their union): no part of any remembered value survives
        found.sort()
        spans = [found[0]]
        for a, b in found[1:]:
            pa, pb = spans[-1]
            if a < pb:
                spans[-1] = (pa, max(pb, b))
            else:
                spans.append((a, b))
        return tuple(spans)

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
        cache_get = self._cache.get
        keep = self._keep
        out: dict[str, tuple[tuple[int, int], ...]] = {}
        for run in new:
            hits = cache_get(run)
            if hits is None:
                hits = self._run_hits(run)   # it rejects short runs and uncut long ones at once
                keep(run, hits)
            if hits:
                out[run] = hits
        return out

    def _ready(self) -> bool:
        """Load (or refresh) the remembered hashes; False when there is nothing to look for. A point-
        lookup reader never creates the key (no key file: nothing can be remembered) and takes a
        store another process is still creating (no tables yet) as empty."""
        if self.point_lookups and self._conn is None:
            if not os.path.exists(os.path.join(self.dir, KEY_FILE)):
                return False
            import sqlite3

            try:
                self._load()
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):
                    raise
                return False
            return bool(self._hashes and self._lengths)
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
