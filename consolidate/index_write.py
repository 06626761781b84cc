"""Writing one agent's index db: watermarks (`Mark`), per-file state, counters and the chunk writer.

`_AgentWriter.write_chunk` stores one chunk of parsed lines (messages, merged split lines, blocks,
titles) and moves the file's watermark in one transaction; see consolidate.index for the run that
feeds it and the invariants. The SQL of the index lives here, in consolidate.index_read and in
consolidate.store.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import json
import logging
import os
import re
import sqlite3
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reverie.graph.db import connect_readonly
from reverie.graph.files import write_json_atomic
from reverie.sources.model import Parsed, Record, TranscriptFile

from .index_shape import line_key
from .paths import agent_db_path

if TYPE_CHECKING:
    from .index import _Run

log = logging.getLogger(__name__)

IGNORED_NAME = "index-ignored.json"

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



def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _inc(d: dict, key: str, n: int = 1) -> None:
    d[key] = d.get(key, 0) + n


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
    hint: str | None = None        # the conversation id the file's name gives (`shaped_id`), if any
    sub_roots: dict[str, str] = field(default_factory=dict)   # v1 sidechain line uuid -> root uuid
    uuids: set[str] = field(default_factory=set)              # line uuids seen in this file this run
    source_id: int | None = None
    all_uuids: frozenset[str] | None = None   # every line uuid of the file (read once, for summaries)
    # title entries of a whole-document transcript accounted by an earlier read: applied again with
    # the next chunk (the harness may have retitled the session in place), never accounted again
    titles_again: list[Parsed] = field(default_factory=list)


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
    "INSERT INTO conversations (id, cwd, git_branch, version, first_at, last_at, transcript_path, messages, harness) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET "
    "messages = messages + excluded.messages, "
    "first_at = CASE WHEN first_at IS NULL OR excluded.first_at < first_at THEN COALESCE(excluded.first_at, first_at) ELSE first_at END, "
    "last_at = CASE WHEN last_at IS NULL OR excluded.last_at > last_at THEN COALESCE(excluded.last_at, last_at) ELSE last_at END, "
    "cwd = COALESCE(cwd, excluded.cwd), "
    "git_branch = COALESCE(excluded.git_branch, git_branch), "
    "version = COALESCE(excluded.version, version), "
    "transcript_path = COALESCE(transcript_path, excluded.transcript_path)")


#: Rank of a title by its source: a title replaces the current one only when its rank is not lower.
#: Rows titled before m002_title_source have no source (rank 1).
_TITLE_RANK = "CASE {} WHEN 'custom-title' THEN 3 WHEN 'ai-title' THEN 2 ELSE 1 END"
_TITLE_SQL = (
    "INSERT INTO conversations (id, title, title_source, transcript_path, harness) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET title = excluded.title, title_source = excluded.title_source "
    f"WHERE {_TITLE_RANK.format('excluded.title_source')} >= {_TITLE_RANK.format('conversations.title_source')}")


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

    def _conv(self, conv: str, cwd: str | None, harness: str) -> _Conv:
        """The cache of `conv`, creating its row (inside the caller's transaction) when it is new."""
        cc = self.convs.get(conv)
        if cc is not None:
            self.convs.move_to_end(conv)
            return cc
        conn = self.conn
        row = conn.execute("SELECT cwd FROM conversations WHERE id = ?", (conv,)).fetchone()
        if row is None:
            conn.execute("INSERT INTO conversations (id, cwd, harness) VALUES (?, ?, ?)", (conv, cwd, harness))
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
        again = [p for p in fs.titles_again if p.outcome == "title" and p.title]
        clean_titles = {id(p): run.clean(p.title or "") for p in [*again, *(p for _, p in titles)]}

        conv_stats: dict[str, list] = {}
        conn = self.conn
        msg_rows: list[tuple] = []
        line_rows: list[tuple] = []
        block_rows: list[tuple] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            if fs.source_id is None:
                conn.execute("INSERT OR IGNORE INTO sources (path, kind, conversation, harness) VALUES (?, ?, ?, ?)",
                             (fs.path, fs.tf.kind, fs.conversation, fs.tf.harness))
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
                cc = self._conv(conv, rec.cwd, fs.tf.harness)
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
                conn.execute(_CONV_SQL, (conv, st[3], st[4], st[5], st[1], st[2], transcript, st[0], fs.tf.harness))
            for p in again:             # before this chunk's titles: a newer one wins at equal rank
                conn.execute(_TITLE_SQL, (p.session_id or fs.conversation, clean_titles[id(p)], p.kind,
                                          transcript, fs.tf.harness))
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
                # a title replaces one of the same or a lower rank only (_TITLE_RANK): the user's
                # /rename (custom-title) is never replaced by Claude Code's ai-title, nor that by a summary
                conn.execute(_TITLE_SQL, (conv, clean_titles[id(p)], p.kind, transcript, fs.tf.harness))
                c.titles += 1
                c.account(p.line_type, "title")
            self._save_mark(fs, new_offset, new_lines, stat, head)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            self.convs.clear()      # they may hold rows of the rolled back chunk
            fs.source_id = None
            raise
        fs.titles_again = []
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
            "head_hash, first_indexed_at, indexed_at, missing, harness) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?) "
            "ON CONFLICT(path) DO UPDATE SET conversation = COALESCE(conversation, excluded.conversation), "
            "dev = excluded.dev, inode = excluded.inode, size = excluded.size, mtime_ns = excluded.mtime_ns, "
            "offset = excluded.offset, lines = excluded.lines, head_len = excluded.head_len, "
            "head_hash = excluded.head_hash, indexed_at = excluded.indexed_at, missing = 0",
            (fs.path, m.conversation, m.kind, m.dev, m.inode, m.size, m.mtime_ns, m.offset, m.lines,
             m.head_len, m.head_hash, m.first_indexed_at, now, fs.tf.harness))

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


