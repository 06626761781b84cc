"""The incremental transcript index: Claude Code transcripts -> per-agent `agent.db` (redacted).

`index_all(home, projects_dir=None)` discovers every transcript (consolidate.source), finds its agent
(consolidate.agents), reads what is new since the file's watermark, parses each line, redacts every
stored string and writes messages and blocks, one transaction per file chunk together with the
watermark. It returns (and records in each touched agent's `index_runs`) a summary:

    {"files_seen", "files_changed", "messages_added", "skipped": {kind: n}, "rejected": {reason: n},
     "blocks_added", "lines_merged", "titles", "lines_read", "lines": {line type: {outcome: n}},
     "repaired": {"invalid_utf8": n, "lone_surrogates": n}, "files_missing", "agents": [ids touched],
     "rescanned": n, "seconds"}

Units: `skipped` and `rejected` count lines, except `own_session` and `agent_disabled` (skipped
session files) and reasons starting with `file_` (files that could not be read: `file_vanished`,
`file_unreadable`, `file_read_error`, `file_write_error`, `file_secret_in_path`). Every complete
line read is accounted for exactly once in `lines`: stored (a new message), merged (appended to the
message of an earlier line with the same `message.id`), title, or a skip kind / reject reason. A
torn line (its writer died mid-line) fused with the whole line appended after it counts as two: the
fragment rejected as `malformed_json`, the whole line read as any other (`_torn_line_rest`).

Invariants:
* Every string stored from a transcript (block text, tool name, title, cwd, branch, path) went
  through `redact.engine.Redactor.redact` first; tool results and tool inputs are clipped (head and
  tail, `index.tool_result_cap` characters) after redaction, never before.
* Watermark per file: (dev, inode, size, mtime_ns) of the stat taken before the read, the byte offset
  after the last complete line consumed, and a hash of the first bytes. An unchanged stat costs
  nothing more; a half-written last line is left for the next run; a truncated or replaced file is
  re-read from the start and deduplicated by line uuid (`message_lines`), so runs are idempotent.
* Commits per file chunk: messages, blocks and the watermark move together; a killed run leaves a
  consistent db and the next run resumes at the last committed offset.
* Lines of one API message split over several transcript lines (same `message.id` in one
  conversation) become one message row, blocks appended in line order, across runs too.
* Sessions of our own consolidation writer are never indexed: it runs `claude` with
  `--no-session-persistence` (no transcript at all), and a session whose first human prompt starts
  with `[reverie-consolidation]` is skipped whole (`skipped["own_session"]`), with its sub-agent files.
* Bad input never stops a run: malformed or non-object JSON, invalid UTF-8 and lone surrogate
  escapes (replaced by U+FFFD, counted in `repaired`), over-long lines (`index.max_line_bytes`,
  default 64 MiB), unknown types, missing fields, files that vanish or fail mid-read are counted
  and the rest is indexed.
* Writes are batched: per chunk, one executemany per table (message ids assigned as MAX(id) + 1
  under the write lock; block rows ordered to fill the table's leaf pages, see `_LeafPacker`).
  Merging split messages and naming tool results use per-conversation caches loaded once per run.
* Files that belong to no agent yet (no `cwd` so far, own sessions, disabled agents) are remembered
  in `<home>/index-ignored.json` with their stat, so they also cost one stat while unchanged.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import hashlib
import json
import logging
import os
import re
import sqlite3
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import agents as _agents
from . import settings as _settings
from .errors import ReverieError
from reverie.graph.db import connect_readonly
from reverie.graph.files import write_json_atomic
from .paths import agent_db_path, default_projects_dir, secrets_dir
from .source import Parsed, Record, TranscriptFile, clip, discover, first_prompt_text, is_own_session_prompt, parse_line

log = logging.getLogger(__name__)

DEFAULT_CHUNK_BYTES = 8 << 20
DEFAULT_MAX_LINE_BYTES = 64 << 20
DEFAULT_TOOL_RESULT_CAP = 8000
HEAD_BYTES = 4096
IGNORED_NAME = "index-ignored.json"

#: (table, key column, text columns) re-scrubbed when the secret memory learns a new secret.
RESCAN_TARGETS = [
    ("blocks", "id", ["text", "tool_name"]),
    ("messages", "id", ["cwd"]),
    ("conversations", "id", ["title", "cwd", "git_branch"]),
]


#: Graph and trust text re-scrubbed too (cards get their `norm` recomputed and `cards_fts` merged;
#: `feedback.note` is handled by `_rescan_feedback_notes`, the append-only trigger allows nothing else).
GRAPH_RESCAN_TARGETS = [
    ("episodes", "id", ["summary", "session"]),
]
RESCAN_META_KEY = "rescan_generation"

# ---------------------------------------------------------------------------------------------
# Shape checks of the transcript strings stored verbatim (ids, model, version, timestamps, line
# types): a value of the wrong shape (e.g. a secret pasted into `sessionId`) is replaced by a hash,
# so it never lands on disk, while equal values still map to equal stored values.

_ID_SHAPE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_NAME_SHAPE = re.compile(r"[A-Za-z0-9_.:@/+-]{1,128}")
_TYPE_SHAPE = re.compile(r"[a-z]{1,20}(?:[_-][a-z]{1,20}){0,4}")
_TS_SHAPE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.]{5,18}(Z|[+-][0-9]{2}:?[0-9]{2})?")


def valid_timestamp(value: Any) -> bool:
    """An ISO-8601 date and time of the transcript's shape that is a real moment ("2026-99-99T99:99:99Z"
    has the shape and is not one)."""
    if not (isinstance(value, str) and _TS_SHAPE.fullmatch(value)):
        return False
    try:
        _dt.datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


_UUID_FIELD = re.compile(rb'"uuid": ?"([^"\\]{1,128})"')


def _file_uuids(path: Path) -> frozenset[str]:
    """The `"uuid"` values of every line of the file at `path` (one pass through a read-only map of
    the file; empty when it cannot be read)."""
    import mmap

    try:
        with open(path, "rb") as fh:
            if os.fstat(fh.fileno()).st_size == 0:
                return frozenset()
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return frozenset(m.group(1).decode("utf-8", "replace") for m in _UUID_FIELD.finditer(mm))
    except (OSError, ValueError):
        return frozenset()


#: How many `{"` starts of a malformed line are tried as the start of a second, whole line.
TORN_LINE_TRIES = 32


def _torn_line_rest(raw: bytes) -> Parsed | None:
    """When `raw` is the fragment of a line whose writer died mid-line followed by a whole line
    appended later (`{"type": "us{"type": "user", ...}`), the whole line parsed; else None. Only
    malformed lines are examined, at most TORN_LINE_TRIES candidate starts."""
    at = 0
    for _ in range(TORN_LINE_TRIES):
        at = raw.find(b'{"', at + 1)
        if at < 0:
            return None
        parsed = parse_line(raw[at:])
        if parsed.kind in ("malformed_json", "not_an_object"):
            continue
        # only a whole transcript line (a message or a title with its session), never an object
        # nested in a merely truncated line
        if parsed.outcome in ("message", "title") and parsed.session_id:
            return parsed
    return None


def _hashed(value: str) -> str:
    return "h:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _shape(value: Any, pattern: "re.Pattern[str]") -> Any:
    if value is None or not isinstance(value, str):
        return value
    return value if pattern.fullmatch(value) else _hashed(value)


def shape_checked(p: Parsed) -> Parsed:
    """`p` with every stored-verbatim transcript string checked for its shape: ids (uuid,
    parentUuid, sessionId, message.id, agentId, tool_use_id, leafUuid) must match
    `[A-Za-z0-9_.:-]{1,128}`, model/version `[A-Za-z0-9_.:@/+-]{1,128}`, anything else is replaced
    by `h:<sha256 prefix>`; a timestamp of any other shape is dropped; a line `type` or system
    `subtype` that is not a few short lower-case words (letters only) becomes "other"
    (they are summary keys and `index_runs` text). Limit: a secret that has an id's shape in an id
    field passes (ids are opaque high-entropy strings; they are not run through detection)."""
    rec = p.record
    if rec is not None:
        rec.uuid = _shape(rec.uuid, _ID_SHAPE)
        rec.parent_uuid = _shape(rec.parent_uuid, _ID_SHAPE)
        rec.session_id = _shape(rec.session_id, _ID_SHAPE)
        rec.api_id = _shape(rec.api_id, _ID_SHAPE)
        rec.agent_id = _shape(rec.agent_id, _ID_SHAPE)
        rec.model = _shape(rec.model, _NAME_SHAPE)
        rec.version = _shape(rec.version, _NAME_SHAPE)
        if rec.timestamp is not None and not valid_timestamp(rec.timestamp):
            rec.timestamp = None
        for b in rec.blocks:
            b.tool_use_id = _shape(b.tool_use_id, _ID_SHAPE)
    p.session_id = _shape(p.session_id, _ID_SHAPE)
    p.leaf_uuid = _shape(p.leaf_uuid, _ID_SHAPE)
    if p.line_type != "?" and not _type_ok(p.line_type):
        p.line_type = "other"
    if p.kind:
        head, sep, tail = p.kind.partition(":")
        if not _type_ok(head) or (sep and not _type_ok(tail)):
            p.kind = (head if _type_ok(head) else "other") + (":other" if sep else "")
    return p


def _type_ok(value: str | None) -> bool:
    """A line `type` / system `subtype` worth keeping as a counter key: up to five lower-case words
    of letters only (`file-history-snapshot`, `compact_boundary`), at most 40 characters: no digits,
    no capitals, so no token shape."""
    return bool(value) and len(value) <= 40 and _TYPE_SHAPE.fullmatch(value) is not None


class RedactionUnavailable(ReverieError):
    def __init__(self, detail: str) -> None:
        super().__init__(
            "The redaction engine (redact.engine) is not available, so nothing can be indexed safely "
            f"({detail}). Reinstall reverie: `pip install -e .` from the checkout."
        )


def load_redactor(home: Path):
    """The heavy redaction engine for this home (build once per run). Fails loudly when absent."""
    try:
        from reverie.redact.engine import Redactor
    except ImportError as exc:
        raise RedactionUnavailable(str(exc)) from exc
    return Redactor(secrets_dir(home))


def _memory_generation(home: Path) -> Any:
    """A value that changes when the home's secret memory learns a secret (None if unknown)."""
    try:
        from reverie.redact.memory import SecretMemory
    except ImportError:
        return None
    try:
        mem = SecretMemory(secrets_dir(home))
        gen = getattr(mem, "generation", None)
        return gen() if callable(gen) else None
    except Exception:  # noqa: BLE001
        log.warning("could not read the secret memory generation", exc_info=True)
        return None


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _inc(d: dict, key: str, n: int = 1) -> None:
    d[key] = d.get(key, 0) + n


_HEX32 = re.compile(r"[0-9a-f]{32}")


def line_key(uuid: str) -> bytes | str:
    """The stored form of a line uuid (`message_lines.uuid`, `messages.parent_uuid`): the 16 bytes
    of a canonical lower-case UUID, any other string unchanged. Injective (a blob never equals a
    text) and reversed by `unkey`."""
    if len(uuid) == 36 and uuid[8] == uuid[13] == uuid[18] == uuid[23] == "-":
        h = uuid[:8] + uuid[9:13] + uuid[14:18] + uuid[19:23] + uuid[24:]
        if _HEX32.fullmatch(h):
            return bytes.fromhex(h)
    return uuid


def unkey(key: bytes | str | None) -> str | None:
    """The uuid string of a stored line key (see `line_key`)."""
    if isinstance(key, bytes):
        h = key.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return key


# ---------------------------------------------------------------------------------------------
# Watermarks


@dataclass
class Mark:
    """Watermark of one file (a `sources` row, or an entry of index-ignored.json)."""

    path: str
    kind: str
    conversation: str | None = None
    dev: int | None = None
    inode: int | None = None
    size: int = 0
    mtime_ns: int | None = None
    offset: int = 0
    lines: int = 0
    head_len: int = 0
    head_hash: str | None = None
    missing: int = 0
    first_indexed_at: str | None = None
    reason: str | None = None      # ignored files: own_session | agent_disabled:<id> | no_cwd

    def same_stat(self, st: os.stat_result) -> bool:
        return (self.dev == st.st_dev and self.inode == st.st_ino and self.size == st.st_size
                and self.mtime_ns == st.st_mtime_ns)

    def as_json(self) -> dict:
        return {k: getattr(self, k) for k in ("kind", "conversation", "dev", "inode", "size", "mtime_ns",
                                               "offset", "lines", "head_len", "head_hash", "reason")}


def _load_ignored(home: Path) -> dict[str, Mark]:
    try:
        data = json.loads((home / IGNORED_NAME).read_text(encoding="utf-8"))
        files = data.get("files", {}) if isinstance(data, dict) else {}
        out = {}
        for path, row in files.items():
            if isinstance(row, dict):
                out[path] = Mark(path=path, **{k: row.get(k) for k in (
                    "kind", "conversation", "dev", "inode", "size", "mtime_ns", "offset", "lines",
                    "head_len", "head_hash", "reason")})
        return out
    except (OSError, ValueError, TypeError):
        return {}


def _save_ignored(home: Path, marks: dict[str, Mark]) -> None:
    path = home / IGNORED_NAME
    if not marks and not path.exists():
        return
    write_json_atomic(path, {"version": 1, "files": {p: m.as_json() for p, m in sorted(marks.items())}},
                      indent=None)


_SOURCE_COLS = ("path", "kind", "conversation", "dev", "inode", "size", "mtime_ns", "offset", "lines",
                "head_len", "head_hash", "missing", "first_indexed_at")


def _read_marks(db_path: Path) -> list[Mark]:
    """Watermarks of one agent db, read-only and without applying migrations (fast path)."""
    try:
        conn = connect_readonly(db_path, 5.0, check_same_thread=True)
    except (sqlite3.Error, OSError):
        return []
    try:
        rows = conn.execute(f"SELECT {', '.join(_SOURCE_COLS)} FROM sources").fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    return [Mark(**dict(zip(_SOURCE_COLS, r))) for r in rows]


# ---------------------------------------------------------------------------------------------
# Per-file state while reading


@dataclass
class FileState:
    tf: TranscriptFile
    path: str                      # redacted path string (equal to the real one; see _process)
    mark: Mark
    agent: str | None = None
    conversation: str | None = None
    sub_roots: dict[str, str] = field(default_factory=dict)   # v1 sidechain line uuid -> root uuid
    uuids: set[str] = field(default_factory=set)              # line uuids seen in this file this run
    source_id: int | None = None
    all_uuids: frozenset[str] | None = None   # every line uuid of the file (read once, for summaries)


class _Counters:
    def __init__(self) -> None:
        self.files_changed = 0
        self.messages_added = 0
        self.blocks_added = 0
        self.lines_merged = 0
        self.titles = 0
        self.lines_read = 0
        self.skipped: dict[str, int] = {}
        self.rejected: dict[str, int] = {}
        self.repaired: dict[str, int] = {}
        self.lines: dict[str, dict[str, int]] = {}

    def account(self, line_type: str, outcome: str, n: int = 1) -> None:
        _inc(self.lines.setdefault(line_type, {}), outcome, n)

    def merge(self, other: "_Counters") -> None:
        for name in ("files_changed", "messages_added", "blocks_added", "lines_merged", "titles", "lines_read"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("skipped", "rejected", "repaired"):
            mine = getattr(self, name)
            for k, v in getattr(other, name).items():
                _inc(mine, k, v)
        for t, outcomes in other.lines.items():
            for k, v in outcomes.items():
                self.account(t, k, v)


# ---------------------------------------------------------------------------------------------
# Writing one agent's db


def _int_len(v: int | None) -> int:
    """Bytes of an integer value in an SQLite record (0 and 1 are stored in the header)."""
    if v is None or v == 0 or v == 1:
        return 0
    v = abs(v)
    if v < 0x80:
        return 1
    if v < 0x8000:
        return 2
    if v < 0x800000:
        return 3
    if v < 0x80000000:
        return 4
    return 6 if v < 0x800000000000 else 8


def _varint_len(v: int) -> int:
    n = 1
    while v >= 0x80 and n < 9:
        v >>= 7
        n += 1
    return n


class _LeafPacker:
    """Orders one chunk's new `blocks` rows so that they fill SQLite's table leaf pages.

    SQLite appends rows with increasing rowids to the last leaf page and starts a new page when the
    next cell does not fit. A large row keeps 0.5 to 4 KB on the leaf (the rest goes to overflow
    pages, which it fills exactly), so in conversation order a leaf page is often left a quarter
    empty. Taking each time the largest remaining row that still fits the page being filled (the
    largest of all when none fits) leaves almost no gap (bench/index_bench.py: blocks 80.7 -> 72.5 MB).
    The cell sizes follow SQLite's file format (payload-size and rowid varints, the local part of the
    record, the overflow pointer, the 2-byte cell pointer); where the model is off, only the packing
    suffers, never the data. Consequence: inside a chunk, block ids do not follow conversation
    order; readers order blocks by (message_id, idx).
    """

    WINDOW = 4096        # rows ordered together (bounds the quadratic list removals)

    def __init__(self, page_size: int, reserved: int = 0) -> None:
        usable = page_size - reserved
        self.max_local = usable - 35
        self.min_local = (usable - 12) * 32 // 255 - 23
        self.overflow_page = usable - 4
        self.capacity = usable - 8      # a leaf page's cells and their pointers
        self.free = 0                   # unknown when the db is opened: as if the last page were full

    def cell(self, row: tuple) -> int:
        """Bytes a `blocks` row (`_BLOCK_COLS`) takes on its leaf page (cell + pointer)."""
        msg_id, idx, type_, tool_name, tool_use_id, _is_error, text, original_size, _clipped = row
        n = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        payload = (11 + (n >= 57) + (n >= 8185) + _int_len(msg_id) + _int_len(idx) + _int_len(original_size)
                   + len(type_) + (len(tool_name) if tool_name else 0) + (len(tool_use_id) if tool_use_id else 0)
                   + n)
        if payload <= self.max_local:
            local = payload
        else:
            local = self.min_local + (payload - self.min_local) % self.overflow_page
            if local > self.max_local:
                local = self.min_local
            local += 4
        return _varint_len(payload) + 4 + local + 2

    def order(self, rows: list[tuple]) -> list[tuple]:
        out: list[tuple] = []
        for start in range(0, len(rows), self.WINDOW):
            window = rows[start:start + self.WINDOW]
            sized = sorted((self.cell(r), i) for i, r in enumerate(window))
            sizes = [s for s, _ in sized]
            free = self.free
            while sized:
                j = bisect.bisect_right(sizes, free) - 1
                if j < 0:               # nothing fits: the next row opens a new page
                    j = len(sized) - 1
                    free = self.capacity
                size, i = sized.pop(j)
                sizes.pop(j)
                out.append(window[i])
                free -= size
            self.free = free
        return out


class _Conv:
    """What the writer knows of one conversation: its cwd, its assistant messages by api_id (to merge
    split lines) and its tool names by tool_use_id (to name tool results). Loaded from the db the
    first time the conversation is touched in a run (nothing to load for a new one), then kept up to
    date by the writer; dropped on rollback."""

    __slots__ = ("cwd", "api", "tools")

    def __init__(self, cwd: str | None) -> None:
        self.cwd = cwd
        self.api: dict[str, list[int]] = {}      # api_id -> [message id, next block idx]
        self.tools: dict[str, str] = {}          # tool_use_id -> tool name


#: Conversations whose caches a writer keeps between chunks (least recently used dropped first).
CONV_CACHE = 256

_MSG_SQL = ("INSERT INTO messages (id, conversation, uuid, api_id, parent_uuid, role, kind, is_sidechain, "
            "subagent, cwd, timestamp, model, source, line_no) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_LINE_SQL = "INSERT INTO message_lines (uuid, message_id) VALUES (?, ?)"
_BLOCK_COLS = "message_id, idx, type, tool_name, tool_use_id, is_error, text, original_size, clipped"
_STAGE_SQL = f"INSERT INTO temp.block_stage ({_BLOCK_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
_BLOCK_SQL = f"INSERT INTO blocks ({_BLOCK_COLS}) SELECT {_BLOCK_COLS} FROM temp.block_stage ORDER BY rowid"
_CONV_SQL = (
    "INSERT INTO conversations (id, cwd, git_branch, version, first_at, last_at, transcript_path, messages) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
    "messages = messages + excluded.messages, "
    "first_at = CASE WHEN first_at IS NULL OR excluded.first_at < first_at THEN COALESCE(excluded.first_at, first_at) ELSE first_at END, "
    "last_at = CASE WHEN last_at IS NULL OR excluded.last_at > last_at THEN COALESCE(excluded.last_at, last_at) ELSE last_at END, "
    "cwd = COALESCE(cwd, excluded.cwd), "
    "git_branch = COALESCE(excluded.git_branch, git_branch), "
    "version = COALESCE(excluded.version, version), "
    "transcript_path = COALESCE(transcript_path, excluded.transcript_path)")


class _AgentWriter:
    """The open db of one agent during a run, with per-conversation caches for merging split
    messages and naming tool results."""

    def __init__(self, run: "_Run", agent_id: str) -> None:
        from .paths import agent_dir, ensure_private_dir
        from .store import open_db

        self.run = run
        self.agent_id = agent_id
        ensure_private_dir(run.home)
        ensure_private_dir(agent_dir(run.home, agent_id).parent)
        ensure_private_dir(agent_dir(run.home, agent_id))
        self.db = open_db(agent_db_path(run.home, agent_id))
        self.conn: sqlite3.Connection = self.db.conn
        self.conn.isolation_level = None   # explicit BEGIN IMMEDIATE / COMMIT
        # Fewer, larger checkpoints while indexing (each one syncs the db); close() truncates the WAL.
        self.conn.execute("PRAGMA wal_autocheckpoint = 8192")
        self.conn.execute("PRAGMA temp_store = MEMORY")
        # Blocks go through a staging table and one INSERT ... SELECT per chunk: FTS5 flushes its
        # pending terms at every statement that fires the blocks_ai trigger, so an executemany
        # straight into `blocks` writes one tiny segment per row (2.3x the cost). temp_store is
        # MEMORY (set above), so the staged text never reaches a temporary file.
        self.conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS block_stage ({_BLOCK_COLS})")
        self.convs: OrderedDict[str, _Conv] = OrderedDict()
        self.packer = _LeafPacker(self.conn.execute("PRAGMA page_size").fetchone()[0])
        self.counters = _Counters()
        self.files: set[str] = set()

    # -- helpers -------------------------------------------------------------------------------
    def _existing(self, keys: list) -> set:
        """The line keys among `keys` already stored."""
        found: set = set()
        for i in range(0, len(keys), 500):
            part = keys[i:i + 500]
            q = ",".join("?" * len(part))
            found.update(r[0] for r in self.conn.execute(f"SELECT uuid FROM message_lines WHERE uuid IN ({q})", part))
        return found

    def _conv(self, conv: str, cwd: str | None) -> _Conv:
        """The cache of `conv`, creating its row (inside the caller's transaction) when it is new."""
        cc = self.convs.get(conv)
        if cc is not None:
            self.convs.move_to_end(conv)
            return cc
        conn = self.conn
        row = conn.execute("SELECT cwd FROM conversations WHERE id = ?", (conv,)).fetchone()
        if row is None:
            conn.execute("INSERT INTO conversations (id, cwd) VALUES (?, ?)", (conv, cwd))
            cc = _Conv(cwd)
        else:
            cc = _Conv(row[0])
            if cc.cwd is None and cwd:
                conn.execute("UPDATE conversations SET cwd = ? WHERE id = ?", (cwd, conv))
                cc.cwd = cwd
            for msg_id, api_id, nxt in conn.execute(
                    "SELECT m.id, m.api_id, (SELECT COALESCE(MAX(b.idx), -1) + 1 FROM blocks b WHERE b.message_id = m.id) "
                    "FROM messages m WHERE m.conversation = ? AND m.api_id IS NOT NULL", (conv,)):
                cc.api[api_id] = [msg_id, nxt]
            for tool_use_id, name in conn.execute(
                    "SELECT b.tool_use_id, b.tool_name FROM messages m JOIN blocks b ON b.message_id = m.id "
                    "WHERE m.conversation = ? AND b.type = 'tool_use' AND b.tool_use_id IS NOT NULL", (conv,)):
                if name:
                    cc.tools.setdefault(tool_use_id, name)
        self.convs[conv] = cc
        return cc

    def _subagent_of_line(self, uuid: str) -> str | None:
        row = self.conn.execute(
            "SELECT m.subagent FROM message_lines l JOIN messages m ON m.id = l.message_id WHERE l.uuid = ?",
            (line_key(uuid),)).fetchone()
        return row[0] if row else None

    def _leaf_in_file(self, leaf: str, fs: FileState) -> bool:
        """Whether the line `leaf` (a summary's leafUuid) is in this transcript: read already, stored
        from it before, or further on in the file (a summary at the top of a transcript bigger than
        one chunk names a line not read yet: the file's `"uuid"` values are read once per run)."""
        if leaf in fs.uuids:
            return True
        row = self.conn.execute(
            "SELECT 1 FROM message_lines l JOIN messages m ON m.id = l.message_id "
            "WHERE l.uuid = ? AND m.source = ?", (line_key(leaf), fs.source_id)).fetchone()
        if row is not None:
            return True
        if fs.all_uuids is None:
            fs.all_uuids = _file_uuids(fs.tf.path)
        return leaf in fs.all_uuids

    # -- one chunk -----------------------------------------------------------------------------
    def write_chunk(self, fs: FileState, items: list[tuple[int, Parsed]], new_offset: int,
                    new_lines: int, stat: os.stat_result, head: tuple[int, str]) -> _Counters:
        """Store one chunk of parsed lines and move the watermark, in one transaction.

        Rows are collected first and written with one executemany per table. Returns the chunk's
        counters (merged into the run only once the commit succeeded)."""
        run = self.run
        c = _Counters()
        records = [(ln, p, line_key(p.record.uuid)) for ln, p in items if p.outcome == "message"]
        existing = self._existing(list({k for _, _, k in records})) if records else set()
        # Redact outside the write transaction (the heavy part), only what will be stored.
        prepared: list[tuple[int, Parsed, Any, bool]] = []
        seen_here: set = set()
        for ln, p, key in records:
            dup = key in existing or key in seen_here
            seen_here.add(key)
            if not dup:
                run.prepare(p.record)
            prepared.append((ln, p, key, dup))
        titles = [(ln, p) for ln, p in items if p.outcome == "title"]
        clean_titles = {id(p): run.clean(p.title or "") for _, p in titles}

        conv_stats: dict[str, list] = {}
        conn = self.conn
        msg_rows: list[tuple] = []
        line_rows: list[tuple] = []
        block_rows: list[tuple] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            if fs.source_id is None:
                conn.execute("INSERT OR IGNORE INTO sources (path, kind, conversation) VALUES (?, ?, ?)",
                             (fs.path, fs.tf.kind, fs.conversation))
                fs.source_id = conn.execute("SELECT id FROM sources WHERE path = ?", (fs.path,)).fetchone()[0]
            # Authoritative duplicate check, under the write lock (another indexer may have run).
            fresh = list({key for _, _, key, dup in prepared if not dup})
            taken = self._existing(fresh) if fresh else set()
            skipped, rejected = c.skipped, c.rejected
            for _, p in items:
                if p.outcome == "skip":
                    skipped[p.kind] = skipped.get(p.kind, 0) + 1
                    c.account(p.line_type, p.kind)
                elif p.outcome == "reject":
                    rejected[p.kind] = rejected.get(p.kind, 0) + 1
                    c.account(p.line_type, p.kind)
            next_id = conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM messages").fetchone()[0]
            for ln, p, key, dup in prepared:
                rec = p.record
                fs.uuids.add(rec.uuid)
                if dup or key in taken:
                    _inc(c.skipped, "duplicate")
                    c.account(p.line_type, "duplicate")
                    continue
                taken.add(key)
                if p.repaired:
                    _inc(c.repaired, "invalid_utf8")
                if p.surrogates:
                    _inc(c.repaired, "lone_surrogates")
                conv = rec.session_id or fs.conversation
                cc = self._conv(conv, rec.cwd)
                subagent = self._subagent(fs, rec)
                holder = cc.api.get(rec.api_id) if rec.api_id else None
                if holder is not None:
                    line_rows.append((key, holder[0]))
                    self._blocks(holder, rec, cc, block_rows)
                    c.lines_merged += 1
                    c.account(p.line_type, "merged")
                    continue
                msg_id = next_id
                next_id += 1
                msg_rows.append((msg_id, conv, rec.uuid, rec.api_id,
                                 line_key(rec.parent_uuid) if rec.parent_uuid else None, rec.role, rec.kind,
                                 int(rec.is_sidechain), subagent, None if rec.cwd == cc.cwd else rec.cwd,
                                 rec.timestamp, rec.model, fs.source_id, ln))
                line_rows.append((key, msg_id))
                holder = [msg_id, 0]
                if rec.api_id:
                    cc.api[rec.api_id] = holder
                self._blocks(holder, rec, cc, block_rows)
                c.messages_added += 1
                c.account(p.line_type, "stored")
                st = conv_stats.get(conv)
                if st is None:
                    # [n, first, last, cwd, branch, version]
                    st = conv_stats[conv] = [0, None, None, None, None, None]
                st[0] += 1
                ts = rec.timestamp
                if ts:
                    if st[1] is None or ts < st[1]:
                        st[1] = ts
                    if st[2] is None or ts > st[2]:
                        st[2] = ts
                st[3] = st[3] or rec.cwd
                st[4] = rec.git_branch or st[4]
                st[5] = rec.version or st[5]
            if msg_rows:
                conn.executemany(_MSG_SQL, msg_rows)
            if line_rows:
                conn.executemany(_LINE_SQL, line_rows)
            if block_rows:
                conn.executemany(_STAGE_SQL, self.packer.order(block_rows))
                conn.execute(_BLOCK_SQL)
                conn.execute("DELETE FROM temp.block_stage")
            c.blocks_added += len(block_rows)
            transcript = fs.path if fs.tf.kind == "main" else None
            for conv, st in conv_stats.items():
                conn.execute(_CONV_SQL, (conv, st[3], st[4], st[5], st[1], st[2], transcript, st[0]))
            for ln, p in titles:
                conv = p.session_id or fs.conversation
                if p.kind == "summary" and not (p.leaf_uuid and self._leaf_in_file(p.leaf_uuid, fs)):
                    _inc(c.skipped, "summary_foreign")
                    c.account(p.line_type, "summary_foreign")
                    continue
                if p.kind == "summary" and p.leaf_uuid:
                    # The title belongs to the conversation holding the leaf.
                    row = conn.execute("SELECT m.conversation FROM message_lines l JOIN messages m "
                                       "ON m.id = l.message_id WHERE l.uuid = ?", (line_key(p.leaf_uuid),)).fetchone()
                    conv = row[0] if row else conv
                # a title the user set (/rename: custom-title) is never replaced by an automatic summary
                conn.execute(
                    "INSERT INTO conversations (id, title, title_source, transcript_path) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(id) DO UPDATE SET title = excluded.title, title_source = excluded.title_source "
                    "WHERE conversations.title_source IS NOT 'custom-title' "
                    "OR excluded.title_source = 'custom-title'",
                    (conv, clean_titles[id(p)], p.kind, transcript))
                c.titles += 1
                c.account(p.line_type, "title")
            self._save_mark(fs, new_offset, new_lines, stat, head)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            self.convs.clear()      # they may hold rows of the rolled back chunk
            fs.source_id = None
            raise
        while len(self.convs) > CONV_CACHE:
            self.convs.popitem(last=False)
        c.lines_read = len(items)
        return c

    def _subagent(self, fs: FileState, rec: Record) -> str | None:
        if rec.agent_id:
            return rec.agent_id
        if not rec.is_sidechain:
            return None
        # v1: sidechains inline in the main file; the sub-agent is named by its root line's uuid.
        parent = rec.parent_uuid
        if parent is None:
            root = rec.uuid
        else:
            root = fs.sub_roots.get(parent) or self._subagent_of_line(parent) or parent
        fs.sub_roots[rec.uuid] = root
        return root

    @staticmethod
    def _blocks(holder: list[int], rec: Record, cc: _Conv, rows: list[tuple]) -> None:
        msg_id = holder[0]
        idx = holder[1]
        tools = cc.tools
        for b in rec.blocks:
            tool_name = b.tool_name
            if b.type == "tool_use":
                if b.tool_use_id and tool_name:
                    tools[b.tool_use_id] = tool_name
            elif b.type == "tool_result" and b.tool_use_id:
                tool_name = tools.get(b.tool_use_id)
            rows.append((msg_id, idx, b.type, tool_name, b.tool_use_id, int(b.is_error), b.text,
                         b.original_size, int(b.clipped)))
            idx += 1
        holder[1] = idx

    def _save_mark(self, fs: FileState, offset: int, lines: int, st: os.stat_result, head: tuple[int, str]) -> None:
        m = fs.mark
        m.offset, m.lines = offset, lines
        # mtime_ns stays NULL until the file was read to its end (finish_file): a run killed between
        # two chunks must not leave a watermark that looks like "unchanged".
        m.dev, m.inode, m.size, m.mtime_ns = st.st_dev, st.st_ino, st.st_size, None
        m.head_len, m.head_hash = head
        m.conversation = m.conversation or fs.conversation
        m.missing = 0
        now = _now()
        m.first_indexed_at = m.first_indexed_at or now
        self.conn.execute(
            "INSERT INTO sources (path, conversation, kind, dev, inode, size, mtime_ns, offset, lines, head_len, "
            "head_hash, first_indexed_at, indexed_at, missing) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0) "
            "ON CONFLICT(path) DO UPDATE SET conversation = COALESCE(conversation, excluded.conversation), "
            "dev = excluded.dev, inode = excluded.inode, size = excluded.size, mtime_ns = excluded.mtime_ns, "
            "offset = excluded.offset, lines = excluded.lines, head_len = excluded.head_len, "
            "head_hash = excluded.head_hash, indexed_at = excluded.indexed_at, missing = 0",
            (fs.path, m.conversation, m.kind, m.dev, m.inode, m.size, m.mtime_ns, m.offset, m.lines,
             m.head_len, m.head_hash, m.first_indexed_at, now))

    def finish_file(self, fs: FileState, st: os.stat_result) -> None:
        """The file was read to its end: record the pre-read stat, so an unchanged file is skipped."""
        m = fs.mark
        m.dev, m.inode, m.size, m.mtime_ns = st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
        self.conn.execute("UPDATE sources SET dev = ?, inode = ?, size = ?, mtime_ns = ? WHERE path = ?",
                          (m.dev, m.inode, m.size, m.mtime_ns, fs.path))

    def set_missing(self, paths_missing: list[str], paths_back: list[str]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.executemany("UPDATE sources SET missing = 1 WHERE path = ?", [(p,) for p in paths_missing])
            self.conn.executemany("UPDATE sources SET missing = 0 WHERE path = ?", [(p,) for p in paths_back])
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def record_run(self, started: str, files_seen: int) -> None:
        c = self.counters
        self.conn.execute(
            "INSERT INTO index_runs (started_at, finished_at, files_seen, files_changed, messages_added, skipped, rejected) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (started, _now(), files_seen, c.files_changed, c.messages_added,
             json.dumps(c.skipped, sort_keys=True), json.dumps(c.rejected, sort_keys=True)))

    def close(self) -> None:
        try:
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass
        self.conn.close()


# ---------------------------------------------------------------------------------------------
# The run


class _Run:
    def __init__(self, home: Path, projects_dir: Path, redactor, chunk_bytes: int,
                 progress: Callable[[str, int], None] | None) -> None:
        self.home = home
        self.projects_dir = projects_dir
        self.settings = _settings.checked_settings(home)
        self.cap = int(_settings.get(self.settings, "index.tool_result_cap", DEFAULT_TOOL_RESULT_CAP) or 0)
        self.max_line = int(_settings.get(self.settings, "index.max_line_bytes", DEFAULT_MAX_LINE_BYTES)
                            or DEFAULT_MAX_LINE_BYTES)
        self.disabled = _agents.disabled_agents(self.settings)
        self.chunk_bytes = max(1, int(chunk_bytes))
        self.progress = progress
        self._redactor = redactor
        self._cache: dict[str, str] = {}
        self.writers: dict[str, _AgentWriter] = {}
        self.marks: dict[str, tuple[str, Mark]] = {}
        self.ignored = _load_ignored(home)
        self.agent_of_cwd: dict[str, str] = {}
        self.counters = _Counters()
        self.file_skips: dict[str, int] = {}
        self.file_rejects: dict[str, int] = {}

    # -- redaction -----------------------------------------------------------------------------
    @property
    def redactor(self):
        if self._redactor is None:
            self._redactor = load_redactor(self.home)
        return self._redactor

    def clean(self, text: str) -> str:
        if not text:
            return text
        return self.redactor.redact(text).text

    def clean_short(self, text: str | None) -> str | None:
        """Redact a short, often repeated string (cwd, branch, tool name, path), memoised."""
        if not text:
            return text
        hit = self._cache.get(text)
        if hit is None:
            if len(self._cache) > 50_000:
                self._cache.clear()
            hit = self._cache[text] = self.clean(text)
        return hit

    def prepare(self, rec: Record) -> None:
        """Redact every string of a record that will be stored; clip tool results and inputs."""
        rec.cwd = self.clean_short(rec.cwd)
        rec.git_branch = self.clean_short(rec.git_branch)
        for b in rec.blocks:
            text = self.clean(b.text)
            if b.type in ("tool_result", "tool_use"):
                text, _, clipped = clip(text, self.cap)
                b.original_size, b.clipped = len(b.text), clipped
            b.text = text
            if b.tool_name:
                b.tool_name = self.clean_short(b.tool_name)

    # -- agents --------------------------------------------------------------------------------
    def writer(self, agent_id: str) -> _AgentWriter:
        w = self.writers.get(agent_id)
        if w is None:
            w = self.writers[agent_id] = _AgentWriter(self, agent_id)
        return w

    def agent_for(self, cwd: str) -> str:
        cwd = self.clean_short(cwd) or cwd
        hit = self.agent_of_cwd.get(cwd)
        if hit is None:
            hit = self.agent_of_cwd[cwd] = _agents.assign_agent(self.home, cwd, self.settings)
        return hit

    def load_marks(self) -> None:
        for agent_id in _agents.known_agent_ids(self.home):
            db_path = agent_db_path(self.home, agent_id)
            if not db_path.exists():
                continue
            for m in _read_marks(db_path):
                self.marks.setdefault(m.path, (agent_id, m))

    # -- files ---------------------------------------------------------------------------------
    def process(self, tf: TranscriptFile) -> None:
        path_s = str(tf.path)
        st = tf.stat
        known = self.marks.get(path_s)
        ign = self.ignored.get(path_s)
        if known is not None:
            agent_id, mark = known
            if st is not None and mark.same_stat(st):
                return
            if agent_id in self.disabled:
                self._file_skip("agent_disabled")
                return
        elif ign is not None:
            reason = ign.reason or ""
            if reason.startswith("agent_disabled:") and reason.split(":", 1)[1] not in self.disabled:
                self.ignored.pop(path_s, None)      # switched back on: index it from the start
                ign = None
            elif st is not None and ign.same_stat(st):
                return
            elif reason == "own_session" or reason.startswith("agent_disabled:"):
                self._file_skip("own_session" if reason == "own_session" else "agent_disabled")
                if st is not None:
                    ign.dev, ign.inode, ign.size, ign.mtime_ns = st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
                return
        clean_path = self.clean_short(path_s)
        if clean_path != path_s:
            self._file_reject("file_secret_in_path")
            return
        self._read_file(tf, known, ign)

    def _file_skip(self, reason: str) -> None:
        _inc(self.file_skips, reason)

    def _file_reject(self, reason: str) -> None:
        _inc(self.file_rejects, reason)

    def _open(self, path: Path) -> int:
        return os.open(path, os.O_RDONLY)

    def _read(self, fd: int, n: int) -> bytes:
        return os.read(fd, n)

    def _read_file(self, tf: TranscriptFile, known: tuple[str, Mark] | None, ign: Mark | None) -> None:
        path_s = str(tf.path)
        try:
            fd = self._open(tf.path)
        except FileNotFoundError:
            self._file_reject("file_vanished")
            return
        except OSError:
            self._file_reject("file_unreadable")
            return
        try:
            st = os.fstat(fd)
            if known is not None:
                agent_id, mark = known
            elif ign is not None:
                agent_id, mark = None, ign
            else:
                agent_id, mark = None, Mark(path=path_s, kind=tf.kind)
            start, lines = mark.offset, mark.lines
            if start and (mark.dev != st.st_dev or mark.inode != st.st_ino or st.st_size < start
                          or self._head(fd, mark.head_len)[1] != mark.head_hash):
                start, lines = 0, 0     # replaced or truncated: re-read (duplicates are skipped)
                mark.head_len, mark.head_hash = 0, None
            if start == st.st_size and mark.same_stat(st):
                return
            self.counters.files_changed += 1
            fs = FileState(tf=tf, path=path_s, mark=mark, agent=agent_id,
                           conversation=mark.conversation or tf.session_hint)
            if fs.agent is None and tf.kind == "subagent":
                if not self._agent_from_parent(fs):
                    return
            self._read_loop(fd, fs, start, lines, st)
        finally:
            os.close(fd)

    def _agent_from_parent(self, fs: FileState) -> bool:
        """Sub-agent files go with their parent session's agent; False when the file is skipped."""
        parent = fs.tf.parent_path
        if parent is None:
            return True
        parent_s = str(parent)
        known = self.marks.get(parent_s)
        if known is not None:
            if known[0] in self.disabled:   # the parent's agent was switched off since it was indexed
                self._file_skip("agent_disabled")
                self._ignore(fs, f"agent_disabled:{known[0]}", None)
                return False
            fs.agent = known[0]
            return True
        ign = self.ignored.get(parent_s)
        reason = (ign.reason or "") if ign is not None else ""
        if reason == "own_session" or reason.startswith("agent_disabled:"):
            self._file_skip("own_session" if reason == "own_session" else "agent_disabled")
            self._ignore(fs, reason, None)
            return False
        return True   # parent unknown: the file's own cwd decides

    def _ignore(self, fs: FileState, reason: str, st: os.stat_result | None, offset: int | None = None,
                lines: int | None = None) -> None:
        m = fs.mark
        m.reason = reason
        if st is None:
            try:
                st = os.stat(fs.tf.path)
            except OSError:
                return
        m.dev, m.inode, m.size, m.mtime_ns = st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns
        if offset is not None:
            m.offset = offset
        if lines is not None:
            m.lines = lines
        self.ignored[fs.path] = m

    def _head(self, fd: int, n: int) -> tuple[int, str | None]:
        if n <= 0:
            return 0, None
        data = os.pread(fd, n, 0)
        return len(data), hashlib.sha1(data).hexdigest()

    def _read_loop(self, fd: int, fs: FileState, start: int, lines: int, st: os.stat_result) -> None:
        pos = start                   # file offset of buf[0]
        buf = b""
        discarding = False            # inside an over-long line: drop bytes until its newline
        # an over-long line read to its end, accounted with the next commit (which moves the offset
        # past it) so that it is counted exactly once, also when it is the file's last line
        pending: list[tuple[int, Parsed]] = []
        os.lseek(fd, start, os.SEEK_SET)
        while True:
            try:
                data = self._read(fd, self.chunk_bytes)
            except OSError:
                self._file_reject("file_read_error")
                return
            if not data:
                break
            if discarding:
                nl = data.find(b"\n")
                if nl < 0:
                    pos += len(data)
                    continue
                pos += nl + 1
                data = data[nl + 1:]
                discarding = False
                lines += 1
                pending.append((lines, Parsed("reject", "line_too_long")))
                buf = b""
            buf = buf + data if buf else data
            last = buf.rfind(b"\n")
            if last < 0:
                if len(buf) > self.max_line:
                    discarding = True
                    pos += len(buf)
                    buf = b""
                continue
            complete, buf = buf[:last + 1], buf[last + 1:]
            raw_lines = complete.split(b"\n")
            raw_lines.pop()
            items, pending = pending, []
            for raw in raw_lines:
                lines += 1
                if len(raw) > self.max_line:
                    items.append((lines, Parsed("reject", "line_too_long")))
                    continue
                parsed = parse_line(raw)
                if parsed.kind == "malformed_json":
                    rest = _torn_line_rest(raw)
                    if rest is not None:    # a torn line (its writer died) fused with the next one
                        items.append((lines, parsed))
                        lines += 1
                        parsed = rest
                items.append((lines, shape_checked(parsed)))
            pos += len(complete)
            if not self._handle_chunk(fd, fs, items, pos, lines, st):
                return
            if self.progress is not None:
                self.progress(fs.path, pos)
        if pending and not self._handle_chunk(fd, fs, pending, pos, lines, st):
            return
        if fs.agent is None:
            # No cwd yet (empty, partial first line, titles only): remember the stat and the offset
            # reached, look again when the file changes.
            self._ignore(fs, "no_cwd", st, pos, lines)
        if fs.agent is not None and self.marks.get(fs.path, (None,))[0] == fs.agent:
            try:
                self.writer(fs.agent).finish_file(fs, st)
            except sqlite3.Error:
                log.exception("could not record the end of a transcript for agent %s", fs.agent)

    def _handle_chunk(self, fd: int, fs: FileState, items: list[tuple[int, Parsed]], offset: int,
                      lines: int, st: os.stat_result) -> bool:
        """Route one chunk to its agent (deciding the agent on the first chunk with a cwd).
        False stops reading this file."""
        if fs.agent is None:
            cwd = next((p.cwd for _, p in items if p.cwd), None)
            if fs.conversation is None or fs.conversation == fs.tf.session_hint:
                fs.conversation = next((p.session_id for _, p in items if p.session_id), fs.conversation)
            if cwd is None:
                # No agent yet: account the lines here and remember the file.
                c = _Counters()
                for _, p in items:
                    if p.outcome == "message":
                        reason = "no_cwd"
                        _inc(c.rejected, reason)
                    elif p.outcome == "title":
                        reason = "summary_foreign"
                        _inc(c.skipped, reason)
                    else:
                        reason = p.kind
                        _inc(c.skipped if p.outcome == "skip" else c.rejected, reason)
                    c.account(p.line_type, reason)
                c.lines_read = len(items)
                self.counters.merge(c)
                fs.mark.conversation = fs.conversation
                self._ignore(fs, "no_cwd", st, offset, lines)
                return True
            if fs.tf.kind == "main" and fs.mark.offset == 0:
                first = next((first_prompt_text(p.record) for _, p in items
                              if p.outcome == "message" and p.record.role == "user"
                              and first_prompt_text(p.record) is not None), None)
                if is_own_session_prompt(first):
                    self._file_skip("own_session")
                    self._ignore(fs, "own_session", st, offset, lines)
                    return False
            agent_id = self.agent_for(cwd)
            if agent_id in self.disabled:
                self._file_skip("agent_disabled")
                fs.mark.offset, fs.mark.lines = 0, 0
                self._ignore(fs, f"agent_disabled:{agent_id}", st, 0, 0)
                return False
            fs.agent = agent_id
            self.ignored.pop(fs.path, None)
            fs.mark.reason = None
        w = self.writer(fs.agent)
        head = (fs.mark.head_len, fs.mark.head_hash)
        if head[0] < HEAD_BYTES and offset > head[0]:
            head = self._head(fd, min(HEAD_BYTES, offset))
        try:
            c = w.write_chunk(fs, items, offset, lines, st, head)
        except sqlite3.Error:
            log.exception("could not write a chunk of a transcript for agent %s", fs.agent)
            self._file_reject("file_write_error")
            return False
        self.counters.merge(c)
        if fs.path not in w.files:
            w.files.add(fs.path)
            w.counters.files_changed += 1
        w.counters.merge(c)
        self.marks[fs.path] = (fs.agent, fs.mark)
        return True

    # -- end of run ----------------------------------------------------------------------------
    def finish_missing(self, seen: set[str]) -> int:
        root = str(self.projects_dir).rstrip(os.sep) + os.sep
        per_agent: dict[str, tuple[list[str], list[str]]] = {}
        missing_now = 0
        for path, (agent_id, mark) in self.marks.items():
            if not path.startswith(root):
                continue
            gone = path not in seen
            if gone:
                missing_now += 1
            if gone and not mark.missing:
                per_agent.setdefault(agent_id, ([], []))[0].append(path)
                mark.missing = 1
            elif not gone and mark.missing:
                per_agent.setdefault(agent_id, ([], []))[1].append(path)
                mark.missing = 0
        for agent_id, (gone, back) in per_agent.items():
            try:
                self.writer(agent_id).set_missing(gone, back)
            except sqlite3.Error:   # busy or damaged: the flags are set again on the next run
                log.warning("index: could not record missing transcripts for agent %s", agent_id)
                for path in gone:
                    self.marks[path][1].missing = 0
                for path in back:
                    self.marks[path][1].missing = 1
        for path in [p for p in self.ignored if p.startswith(root) and p not in seen]:
            del self.ignored[path]
        return missing_now


def index_all(home: Path, projects_dir: Path | None = None, *, redactor=None,
              chunk_bytes: int = DEFAULT_CHUNK_BYTES,
              progress: Callable[[str, int], None] | None = None) -> dict[str, Any]:
    """Index every transcript under `projects_dir` (default: Claude Code's) into `home`.

    `redactor` defaults to `redact.engine.Redactor(secrets_dir(home))` (built once, lazily, and only
    if something new has to be stored). `progress(path, offset)` is called after each committed chunk.
    Returns the summary described in the module docstring.
    """
    home = Path(home)
    projects_dir = Path(projects_dir) if projects_dir else default_projects_dir()
    projects_dir = projects_dir.expanduser().resolve() if projects_dir.exists() else projects_dir.expanduser()
    started = _now()
    t0 = time.monotonic()
    run = _Run(home, projects_dir, redactor, chunk_bytes, progress)
    rescanned = rescan_home(home)      # secrets learned elsewhere since the last rescan
    files = discover(projects_dir)
    run.load_marks()
    seen: set[str] = set()
    for tf in files:
        seen.add(str(tf.path))
        try:
            run.process(tf)
        except RedactionUnavailable:
            raise
        except sqlite3.Error:
            log.exception("index: database error on a transcript; continuing with the others")
            run._file_reject("file_write_error")
    files_missing = run.finish_missing(seen)
    c = run.counters
    skipped = dict(c.skipped)
    for k, v in run.file_skips.items():
        _inc(skipped, k, v)
    rejected = dict(c.rejected)
    for k, v in run.file_rejects.items():
        _inc(rejected, k, v)
    per_agent_seen: dict[str, int] = {}
    for path in seen:
        hit = run.marks.get(path)
        if hit is not None:
            _inc(per_agent_seen, hit[0])
    for agent_id, w in run.writers.items():
        try:
            w.record_run(started, per_agent_seen.get(agent_id, 0))
        except sqlite3.Error:   # the run's work is committed already; only its record is lost
            log.warning("index: could not record the run for agent %s (database busy or damaged)", agent_id)
    agents_touched = sorted(a for a, w in run.writers.items() if w.counters.lines_read)
    for w in run.writers.values():
        w.close()
    _save_ignored(home, run.ignored)
    rescanned += rescan_home(home)     # secrets learned during this run (by its redactor)
    summary = {
        "files_seen": len(files),
        "files_changed": c.files_changed,
        "messages_added": c.messages_added,
        "skipped": dict(sorted(skipped.items())),
        "rejected": dict(sorted(rejected.items())),
        "blocks_added": c.blocks_added,
        "lines_merged": c.lines_merged,
        "titles": c.titles,
        "lines_read": c.lines_read,
        "lines": {t: dict(sorted(o.items())) for t, o in sorted(c.lines.items())},
        "repaired": dict(c.repaired),
        "files_missing": files_missing,
        "agents": agents_touched,
        "rescanned": rescanned,
        "seconds": round(time.monotonic() - t0, 3),
    }
    log.info("index: %d files seen, %d changed, %d messages added", len(files), c.files_changed, c.messages_added)
    return summary


def rescan_home(home: Path) -> int:
    """`rescan_agent` for every agent of the home that has a db; returns rows changed."""
    total = 0
    for agent_id in _agents.known_agent_ids(Path(home)):
        if agent_db_path(Path(home), agent_id).exists():
            try:
                total += rescan_agent(home, agent_id)
            except sqlite3.Error:
                log.warning("rescan of agent %s failed; it is retried next run", agent_id, exc_info=True)
    return total


def rescan_agent(home: Path, agent_id: str) -> int:
    """Re-scrub an agent db when the home's secret memory learned secrets since its last rescan.

    The generation rescanned last is stored in the agent db (`graph_meta['rescan_generation']`);
    whenever `SecretMemory.generation()` is higher, every stored text is scrubbed with the memory
    (remembered values, no detection: everything was detected when written): the index tables
    (RESCAN_TARGETS), card statements (their `norm` recomputed, `cards_fts` merged), episode
    summaries and sessions, entity names and aliases (GRAPH_RESCAN_TARGETS) and feedback notes.
    Then the WAL is checkpointed (redact.rescan does). Called at the start and end of each index
    run and at the end of each consolidation. Returns rows changed (0 when nothing to do)."""
    try:
        from reverie.redact.memory import SecretMemory
        from reverie.redact.rescan import rescan
    except ImportError:
        log.warning("redact.rescan is not available; earlier rows were not re-scrubbed")
        return 0
    from .store import open_db

    home = Path(home)
    path = agent_db_path(home, agent_id)
    if not path.exists():
        return 0
    memory = SecretMemory(secrets_dir(home))
    try:
        gen = int(memory.generation())
        db = open_db(path)
        try:
            conn = db.conn
            row = conn.execute("SELECT value FROM graph_meta WHERE key = ?", (RESCAN_META_KEY,)).fetchone()
            try:
                done = int(row[0]) if row else -1
            except (TypeError, ValueError):
                done = -1
            if gen <= done:
                return 0
            if done < 0 and memory.count() == 0:
                changed = 0
            else:
                conn.execute("PRAGMA secure_delete = ON")
                changed = _rescan_cards(conn, memory)
                changed += _rescan_feedback_notes(conn, memory)
                changed += _rescan_entities(conn, memory)
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                targets = [t for t in RESCAN_TARGETS + GRAPH_RESCAN_TARGETS if t[0] in tables]
                changed += int(rescan(conn, targets, memory) or 0)
            with conn:
                conn.execute("INSERT INTO graph_meta(key, value) VALUES (?, ?) "
                             "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (RESCAN_META_KEY, str(gen)))
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                log.warning("WAL checkpoint after rescan failed")
            return changed
        finally:
            db.close()
    finally:
        memory.close()


def _rescan_cards(conn: sqlite3.Connection, memory: Any) -> int:
    """Scrub card statements; a changed statement gets its `norm` recomputed (cards_fts follows by
    trigger), and the FTS index is merged so no old segment keeps the value."""
    from reverie.graph.text import normalize_statement

    changed = 0
    last = 0
    while True:
        rows = conn.execute("SELECT id, statement FROM cards WHERE id > ? ORDER BY id LIMIT 500", (last,)).fetchall()
        if not rows:
            break
        updates = []
        for cid, statement in rows:
            new, n = memory.scrub(statement or "")
            if n and new != statement:
                updates.append((new, normalize_statement(new), cid))
        if updates:
            with conn:
                conn.executemany("UPDATE cards SET statement = ?, norm = ? WHERE id = ?", updates)
            changed += len(updates)
        last = rows[-1][0]
    if changed:
        with conn:
            conn.execute("INSERT INTO cards_fts(cards_fts) VALUES ('optimize')")
    return changed


def _rescan_entities(conn: sqlite3.Connection, memory: Any) -> int:
    """Scrub entity names and aliases; their normalized keys (`norm`, derived from the name, so
    they carry the value too) are recomputed. An alias whose new key is taken already is dropped
    (the entity keeps its other aliases)."""
    from reverie.graph.db import transaction
    from reverie.graph.entities import normalize_entity

    try:
        ents = conn.execute("SELECT id, name FROM entities").fetchall()
        aliases = conn.execute("SELECT norm, alias, entity_id, how FROM entity_aliases").fetchall()
    except sqlite3.OperationalError:
        return 0
    changed = 0
    with transaction(conn):
        for eid, name in ents:
            new, n = memory.scrub(name or "")
            if n and new != name:
                norm = normalize_entity(new) or f"redacted-entity-{eid}"
                if conn.execute("SELECT 1 FROM entities WHERE norm = ? AND id != ?", (norm, eid)).fetchone():
                    norm = f"{norm}-{eid}"
                conn.execute("UPDATE entities SET name = ?, norm = ? WHERE id = ?", (new, norm, eid))
                changed += 1
        for norm, alias, eid, how in aliases:
            new, n = memory.scrub(alias or "")
            if n and new != alias:
                conn.execute("DELETE FROM entity_aliases WHERE norm = ?", (norm,))
                new_norm = normalize_entity(new)
                if new_norm:
                    conn.execute("INSERT OR IGNORE INTO entity_aliases(norm, alias, entity_id, how) VALUES (?, ?, ?, ?)",
                                 (new_norm, new, eid, how))
                changed += 1
    return changed


_FEEDBACK_TRIGGER = "feedback_append_only_update"


def _rescan_feedback_notes(conn: sqlite3.Connection, memory: Any) -> int:
    """Scrub `feedback.note`. The table is append-only (a trigger refuses UPDATE); a note-only
    scrub is the one allowed change: in ONE transaction the trigger is dropped, the notes updated
    and the identical trigger re-created, so no other update can slip in."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?",
                       (_FEEDBACK_TRIGGER,)).fetchone()
    try:
        notes = conn.execute("SELECT id, note FROM feedback WHERE note IS NOT NULL AND note != ''").fetchall()
    except sqlite3.OperationalError:
        return 0
    updates = []
    for fid, note in notes:
        new, n = memory.scrub(note)
        if n and new != note:
            updates.append((new, fid))
    if not updates:
        return 0
    from reverie.graph.db import transaction

    with transaction(conn):       # BEGIN IMMEDIATE: the DDL is part of the same transaction
        if row:
            conn.execute(f"DROP TRIGGER {_FEEDBACK_TRIGGER}")
        conn.executemany("UPDATE feedback SET note = ? WHERE id = ?", updates)
        if row:
            conn.execute(row[0])
    return len(updates)


# ---------------------------------------------------------------------------------------------
# Readers (the SQL of the index stays here and in consolidate.store)


def _ro(db_path: Path) -> sqlite3.Connection | None:
    try:
        return connect_readonly(db_path, 5.0, check_same_thread=True)
    except (sqlite3.Error, OSError):
        return None


def db_bytes(db_path: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.path.getsize(str(db_path) + suffix)
        except OSError:
            pass
    return total


def agent_stats(db_path: Path) -> dict[str, Any]:
    """Counts of one agent db: conversations, messages, first, last, transcripts_on_disk, cwd, db_bytes."""
    out: dict[str, Any] = {"conversations": 0, "messages": 0, "first": None, "last": None,
                           "transcripts_on_disk": 0, "cwd": None, "db_bytes": db_bytes(db_path)}
    conn = _ro(db_path)
    if conn is None:
        return out
    try:
        row = conn.execute("SELECT COUNT(*), COALESCE(SUM(messages), 0), MIN(first_at), MAX(last_at) "
                           "FROM conversations").fetchone()
        out["conversations"], out["messages"], out["first"], out["last"] = row
        row = conn.execute("SELECT cwd FROM conversations WHERE cwd IS NOT NULL ORDER BY first_at LIMIT 1").fetchone()
        out["cwd"] = row[0] if row else None
        out["transcripts_on_disk"] = sum(
            1 for (path,) in conn.execute("SELECT path FROM sources WHERE kind = 'main'") if os.path.exists(path))
    except sqlite3.Error:
        pass
    finally:
        conn.close()
    return out


def find_conversation(home: Path, conversation_id: str, agent: str | None = None) -> list[tuple[str, str]]:
    """(agent, conversation id) pairs matching an id or a unique prefix of one."""
    ids = [agent] if agent else _agents.known_agent_ids(home)
    out = []
    for agent_id in ids:
        conn = _ro(agent_db_path(home, agent_id))
        if conn is None:
            continue
        try:
            exact = conn.execute("SELECT id FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
            if exact:
                out.append((agent_id, exact[0]))
                continue
            like = conversation_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            for (cid,) in conn.execute("SELECT id FROM conversations WHERE id LIKE ? ESCAPE '\\' LIMIT 5", (like,)):
                out.append((agent_id, cid))
        except sqlite3.Error:
            pass
        finally:
            conn.close()
    return out


def list_conversations(db_path: Path) -> list[dict[str, Any]]:
    """Every conversation row of one agent db, oldest first."""
    conn = _ro(db_path)
    if conn is None:
        return []
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM conversations ORDER BY first_at, id")]
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def load_conversation(db_path: Path, conversation_id: str) -> dict[str, Any] | None:
    """A conversation's row, its source files (with `on_disk` checked now) and its messages with
    their blocks, in index order (message id, block idx)."""
    conn = _ro(db_path)
    if conn is None:
        return None
    conn.row_factory = sqlite3.Row
    try:
        conv = conn.execute("SELECT * FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if conv is None:
            return None
        sources = [dict(r) for r in conn.execute(
            "SELECT path, kind, missing, lines, offset, indexed_at FROM sources WHERE conversation = ? "
            "ORDER BY kind, path", (conversation_id,))]
        msgs = [dict(r) for r in conn.execute(
            "SELECT m.id, m.uuid, m.parent_uuid, m.role, m.kind, m.is_sidechain, m.subagent, m.timestamp, m.model, "
            "COALESCE(m.cwd, c.cwd) AS cwd, s.path AS source_path, m.line_no FROM messages m "
            "JOIN conversations c ON c.id = m.conversation LEFT JOIN sources s ON s.id = m.source "
            "WHERE m.conversation = ? ORDER BY m.id", (conversation_id,))]
        by_id = {m["id"]: m for m in msgs}
        for m in msgs:
            m["parent_uuid"] = unkey(m["parent_uuid"])
            m["blocks"] = []
        ids = list(by_id)
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            q = ",".join("?" * len(part))
            for r in conn.execute(
                    f"SELECT message_id, idx, type, tool_name, tool_use_id, is_error, text, original_size, clipped "
                    f"FROM blocks WHERE message_id IN ({q}) ORDER BY message_id, idx", part):
                by_id[r["message_id"]]["blocks"].append({k: r[k] for k in r.keys() if k != "message_id"})
        return {"conversation": dict(conv), "sources": sources, "messages": msgs}
    finally:
        conn.close()
