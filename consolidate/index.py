"""The incremental transcript index: coding-agent transcripts -> per-agent `agent.db` (redacted).

`index_all(home, projects_dir=None, codex_dir=None, gemini_dir=None)` discovers every transcript of
every harness (reverie.sources: Claude Code, Codex CLI, Gemini CLI), finds its agent
(consolidate.agents: one agent per working directory, whatever the harness), reads what is new
since the file's watermark, parses each line, redacts every stored string and writes messages and
blocks, one transaction per file chunk together with the watermark. With no folder given, every
harness's default folder is read (when it exists); with any folder given, only the folders given.
It returns (and records in each touched agent's `index_runs`) a summary:

    {"files_seen", "files_changed", "messages_added", "skipped": {kind: n}, "rejected": {reason: n},
     "blocks_added", "lines_merged", "titles", "lines_read", "lines": {line type: {outcome: n}},
     "repaired": {"invalid_utf8": n, "lone_surrogates": n}, "files_missing", "agents": [ids touched],
     "rescanned": n, "seconds",
     "harnesses": {harness: {"root", "files_seen", "files_changed", "messages_added", "blocks_added",
                             "lines_merged", "titles", "lines_read", "lines", "skipped", "rejected",
                             "repaired"}}}

The top-level counts are the sums over the harnesses read; each harness has its own watermarks
(one per file) and its own line accounting under `harnesses`.

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
* Whole-document transcripts (Gemini CLI: one JSON file per session) are re-read when their stat
  changes, or on the next run when the reader held entries back (a Gemini tool call still running);
  the entries consumed before (`lines` of the watermark, same session) are not read or accounted
  again, except that their titles are re-applied (a session retitled in place) without being counted. Limit: an entry the harness rewrote in place after
  it was stored keeps its first stored version.
* Writes are batched: per chunk, one executemany per table (message ids assigned as MAX(id) + 1
  under the write lock; block rows ordered to fill the table's leaf pages, see `_LeafPacker`).
  Merging split messages and naming tool results use per-conversation caches loaded once per run.
* Files that belong to no agent yet (no `cwd` so far, own sessions, disabled agents) are remembered
  in `<home>/index-ignored.json` with their stat, so they also cost one stat while unchanged.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from reverie.sources import claude_code, codex, gemini
from reverie.sources.claude_code import first_prompt_text, is_own_session_prompt
from reverie.sources.model import LineParser, Parsed, Record, TranscriptFile, clip

from . import agents as _agents
from . import settings as _settings
from .errors import ReverieError
from .index_rescan import rescan_home
from .index_shape import shape_checked, shaped_id
from .index_write import FileState, Mark, _AgentWriter, _Counters, _inc, _load_ignored, _now, _read_marks, _save_ignored
from .paths import agent_db_path, secrets_dir

log = logging.getLogger(__name__)

DEFAULT_CHUNK_BYTES = 8 << 20
DEFAULT_MAX_LINE_BYTES = 64 << 20
DEFAULT_TOOL_RESULT_CAP = 8000
HEAD_BYTES = 4096


#: harness -> its reader module (reverie.sources; the interface is in sources.model), in reading order.
READERS: dict[str, ModuleType] = {m.HARNESS: m for m in (claude_code, codex, gemini)}


def readers() -> dict[str, ModuleType]:
    """harness -> its reader module, in reading order."""
    return dict(READERS)


def harness_roots(projects_dir: Path | None = None, codex_dir: Path | None = None,
                  gemini_dir: Path | None = None) -> list[tuple[str, Path]]:
    """(harness, folder) pairs one run reads: the folders given, or, when none is, every harness's
    default folder (`default_root()` of its reader; a missing folder gives no files)."""
    mods = readers()
    given = {claude_code.HARNESS: projects_dir, codex.HARNESS: codex_dir, gemini.HARNESS: gemini_dir}
    explicit = any(v is not None for v in given.values())
    out = []
    for harness, mod in mods.items():
        root = given.get(harness)
        if root is None:
            if explicit:
                continue
            root = mod.default_root()
        root = Path(root).expanduser()
        out.append((harness, root.resolve() if root.exists() else root))
    return out

#: How many `{"` starts of a malformed line are tried as the start of a second, whole line.
TORN_LINE_TRIES = 32


def _torn_line_rest(raw: bytes, parser: LineParser, offset: int = 0) -> Parsed | None:
    """When `raw` is the fragment of a line whose writer died mid-line followed by a whole line
    appended later (`{"type": "us{"type": "user", ...}`), the whole line parsed; else None. Only
    malformed lines are examined, at most TORN_LINE_TRIES candidate starts."""
    at = 0
    for _ in range(TORN_LINE_TRIES):
        at = raw.find(b'{"', at + 1)
        if at < 0:
            return None
        parsed = parser(raw[at:], offset + at)
        if parsed.kind in ("malformed_json", "not_an_object"):
            continue
        # only a whole transcript line (a message or a title with its session), never an object
        # nested in a merely truncated line
        if parsed.outcome in ("message", "title") and parsed.session_id:
            return parsed
    return None


def _mark_of(known, ign, path: str, kind: str) -> tuple[str | None, Mark]:
    """(agent, watermark) a transcript is read from: its agent's mark, else the mark it was ignored
    with, else a fresh one (offset 0)."""
    if known is not None:
        return known
    if ign is not None:
        return None, ign
    return None, Mark(path=path, kind=kind)


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


# ---------------------------------------------------------------------------------------------
# The run


class _Run:
    def __init__(self, home: Path, roots: list[tuple[str, Path]], redactor, chunk_bytes: int,
                 progress: Callable[[str, int], None] | None) -> None:
        self.home = home
        self.roots = roots
        self.readers = readers()
        self.harness = claude_code.HARNESS     # the harness of the file being processed
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
        self.per_harness: dict[str, _Counters] = {h: _Counters() for h, _ in roots}
        self.file_skips: dict[str, dict[str, int]] = {}     # harness -> reason -> files
        self.file_rejects: dict[str, dict[str, int]] = {}

    def _merge(self, c: _Counters) -> None:
        """Add a committed chunk's counters to the run's and to its harness's."""
        self.counters.merge(c)
        self.per_harness.setdefault(self.harness, _Counters()).merge(c)

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
        self.harness = tf.harness
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
        _inc(self.file_skips.setdefault(self.harness, {}), reason)

    def _file_io(self, op, path):
        """`op(path)`, or None after counting the file as vanished or unreadable."""
        try:
            return op(path)
        except FileNotFoundError:
            self._file_reject("file_vanished")
        except OSError:
            self._file_reject("file_unreadable")
        return None

    def _file_reject(self, reason: str) -> None:
        _inc(self.file_rejects.setdefault(self.harness, {}), reason)

    def _open(self, path: Path) -> int:
        return os.open(path, os.O_RDONLY)

    def _read(self, fd: int, n: int) -> bytes:
        return os.read(fd, n)

    def _read_file(self, tf: TranscriptFile, known: tuple[str, Mark] | None, ign: Mark | None) -> None:
        reader = self.readers.get(tf.harness, claude_code)
        if getattr(reader, "FORMAT", "jsonl") == "document":
            self._read_document(reader, tf, known, ign)
            return
        path_s = str(tf.path)
        fd = self._file_io(self._open, tf.path)
        if fd is None:
            return
        try:
            st = os.fstat(fd)
            agent_id, mark = _mark_of(known, ign, path_s, tf.kind)
            start, lines = mark.offset, mark.lines
            if start and (mark.dev != st.st_dev or mark.inode != st.st_ino or st.st_size < start
                          or self._head(fd, mark.head_len)[1] != mark.head_hash):
                start, lines = 0, 0     # replaced or truncated: re-read (duplicates are skipped)
                mark.head_len, mark.head_hash = 0, None
            if start == st.st_size and mark.same_stat(st):
                return
            self._changed()
            hint = shaped_id(tf.session_hint)
            fs = FileState(tf=tf, path=path_s, mark=mark, agent=agent_id,
                           conversation=mark.conversation or hint, hint=hint)
            if fs.agent is None and tf.kind == "subagent":
                if not self._agent_from_parent(fs):
                    return
            self._read_loop(fd, fs, start, lines, st, reader.line_parser(tf))
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

    def _changed(self) -> None:
        self.counters.files_changed += 1
        self.per_harness.setdefault(self.harness, _Counters()).files_changed += 1

    def _read_document(self, reader: ModuleType, tf: TranscriptFile, known: tuple[str, Mark] | None,
                       ign: Mark | None) -> None:
        """A whole-document transcript (FORMAT "document"): parsed whole when its stat changed; the
        entries consumed before (same session, `mark.lines` of them) are not accounted again (their
        titles are applied again); a document with held-back entries is read again on the next run."""
        path_s = str(tf.path)
        st = self._file_io(os.stat, tf.path)
        if st is None:
            return
        agent_id, mark = _mark_of(known, ign, path_s, tf.kind)
        if mark.same_stat(st):
            return
        try:
            doc = reader.parse_document(tf)
        except Exception as exc:  # noqa: BLE001  (a reader must not raise; if it does, the file is counted)
            # the exception's type only: its message may quote the transcript
            log.warning("index: the %s reader failed on a transcript (%s)", tf.harness, type(exc).__name__)
            self._file_reject("file_unparseable")
            return
        self._changed()
        session = shaped_id(doc.session_id)   # stored as the conversation id of the file's mark
        entries = list(doc.entries)
        start = mark.lines if (mark.lines <= len(entries) and mark.conversation is not None
                               and mark.conversation == session) else 0
        for p in entries:
            if p.session_id is None:
                p.session_id = session
            if p.cwd is None:
                p.cwd = doc.cwd
            if p.record is not None and p.record.session_id is None:
                p.record.session_id = session
        items = [(i + 1, shape_checked(p)) for i, p in enumerate(entries) if i >= start]
        hint = shaped_id(tf.session_hint)
        fs = FileState(tf=tf, path=path_s, mark=mark, agent=agent_id,
                       conversation=mark.conversation or session or hint, hint=hint)
        # a title entry consumed before is applied again (the harness may have retitled the session
        # in place: Gemini's summary slot, a summary added after the first read) but not accounted again
        fs.titles_again = [shape_checked(p) for p in entries[:start] if p.outcome == "title"]
        held_back = getattr(doc, "held_back", 0)
        if fs.agent is None and tf.kind == "subagent" and not self._agent_from_parent(fs):
            return
        if fs.agent is None and doc.cwd is None and getattr(doc, "project_hash", None):
            fs.agent = _agents.agent_for_project_hash(self.home, doc.project_hash)
        if not self._handle_chunk(None, fs, items, st.st_size, len(entries), st):
            return
        if fs.agent is None:
            # no agent yet (no cwd, a project hash no agent's folder has): read it whole again when
            # it changes, so that its entries are stored once an agent is known
            self._ignore(fs, "no_cwd", st, 0, 0)
            if held_back:
                fs.mark.mtime_ns = None
        elif held_back:
            # entries held back (a tool call still running in a hot file): the watermark keeps no
            # mtime (as after a run killed mid-file), so the next run reads the file again even if
            # its stat did not change; the entries consumed so far are not accounted again
            pass
        elif self.marks.get(fs.path, (None,))[0] == fs.agent:
            self._finish(fs, st)

    def _read_loop(self, fd: int, fs: FileState, start: int, lines: int, st: os.stat_result,
                   parser: LineParser) -> None:
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
            at = pos                  # file offset of the line being parsed
            for raw in raw_lines:
                lines += 1
                if len(raw) > self.max_line:
                    items.append((lines, Parsed("reject", "line_too_long")))
                    at += len(raw) + 1
                    continue
                parsed = parser(raw, at)
                if parsed.kind == "malformed_json":
                    rest = _torn_line_rest(raw, parser, at)
                    if rest is not None:    # a torn line (its writer died) fused with the next one
                        items.append((lines, parsed))
                        lines += 1
                        parsed = rest
                items.append((lines, shape_checked(parsed)))
                at += len(raw) + 1
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
            self._finish(fs, st)

    def _finish(self, fs: FileState, st: os.stat_result) -> None:
        """Record that a transcript was read to its end (its agent's mark takes the file's stat)."""
        try:
            self.writer(fs.agent).finish_file(fs, st)
        except sqlite3.Error:
            log.exception("could not record the end of a transcript for agent %s", fs.agent)

    def _handle_chunk(self, fd: int | None, fs: FileState, items: list[tuple[int, Parsed]], offset: int,
                      lines: int, st: os.stat_result) -> bool:
        """Route one chunk to its agent (deciding the agent on the first chunk with a cwd).
        False stops reading this file."""
        if fs.agent is None:
            cwd = next((p.cwd for _, p in items if p.cwd), None)
            if fs.conversation is None or fs.conversation == fs.hint:
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
                self._merge(c)
                fs.mark.conversation = fs.conversation
                self._ignore(fs, "no_cwd", st, offset, lines)
                return True
            if fs.tf.kind == "main" and fs.mark.offset == 0:
                prompts = (first_prompt_text(p.record) for _, p in items
                           if p.outcome == "message" and p.record.role == "user")
                first = next((t for t in prompts if t is not None), None)
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
        if fd is not None and head[0] < HEAD_BYTES and offset > head[0]:
            head = self._head(fd, min(HEAD_BYTES, offset))
        try:
            c = w.write_chunk(fs, items, offset, lines, st, head)
        except sqlite3.Error:
            log.exception("could not write a chunk of a transcript for agent %s", fs.agent)
            self._file_reject("file_write_error")
            return False
        self._merge(c)
        if fs.path not in w.files:
            w.files.add(fs.path)
            w.counters.files_changed += 1
        w.counters.merge(c)
        self.marks[fs.path] = (fs.agent, fs.mark)
        return True

    # -- end of run ----------------------------------------------------------------------------
    def finish_missing(self, seen: set[str]) -> int:
        roots = tuple(str(r).rstrip(os.sep) + os.sep for _, r in self.roots)
        per_agent: dict[str, tuple[list[str], list[str]]] = {}
        missing_now = 0
        for path, (agent_id, mark) in self.marks.items():
            if not path.startswith(roots):
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
        for path in [p for p in self.ignored if p.startswith(roots) and p not in seen]:
            del self.ignored[path]
        return missing_now


def _summary_part(c: _Counters, file_skips: dict[str, int], file_rejects: dict[str, int]) -> dict[str, Any]:
    """The counts of one harness (or of the whole run): the line accounting plus file-level reasons."""
    skipped = dict(c.skipped)
    for k, v in file_skips.items():
        _inc(skipped, k, v)
    rejected = dict(c.rejected)
    for k, v in file_rejects.items():
        _inc(rejected, k, v)
    return {
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
    }


def index_all(home: Path, projects_dir: Path | None = None, *, codex_dir: Path | None = None,
              gemini_dir: Path | None = None, redactor=None,
              chunk_bytes: int = DEFAULT_CHUNK_BYTES,
              progress: Callable[[str, int], None] | None = None) -> dict[str, Any]:
    """Index every transcript of every harness into `home`: Claude Code's under `projects_dir`,
    Codex CLI's under `codex_dir`, Gemini CLI's under `gemini_dir` (`harness_roots`: with none
    given, each harness's default folder).

    `redactor` defaults to `redact.engine.Redactor(secrets_dir(home))` (built once, lazily, and only
    if something new has to be stored). `progress(path, offset)` is called after each committed chunk.
    Returns the summary described in the module docstring.
    """
    home = Path(home)
    roots = harness_roots(projects_dir, codex_dir, gemini_dir)
    started = _now()
    t0 = time.monotonic()
    run = _Run(home, roots, redactor, chunk_bytes, progress)
    rescanned = rescan_home(home)      # secrets learned elsewhere since the last rescan
    files: list[TranscriptFile] = []
    seen_per: dict[str, int] = {}
    for harness, root in roots:
        found = run.readers[harness].discover(root)
        seen_per[harness] = len(found)
        files.extend(found)
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
    total_skips: dict[str, int] = {}
    total_rejects: dict[str, int] = {}
    for per in run.file_skips.values():
        for k, v in per.items():
            _inc(total_skips, k, v)
    for per in run.file_rejects.values():
        for k, v in per.items():
            _inc(total_rejects, k, v)
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
    totals = _summary_part(c, total_skips, total_rejects)
    summary = {
        "files_seen": len(files),
        "files_changed": totals.pop("files_changed"),
        "messages_added": totals.pop("messages_added"),
        **totals,
        "files_missing": files_missing,
        "agents": agents_touched,
        "rescanned": rescanned,
        "seconds": round(time.monotonic() - t0, 3),
        "harnesses": {
            harness: {"root": str(root), "files_seen": seen_per.get(harness, 0),
                      **_summary_part(run.per_harness.get(harness, _Counters()),
                                      run.file_skips.get(harness, {}), run.file_rejects.get(harness, {}))}
            for harness, root in roots},
    }
    log.info("index: %d files seen, %d changed, %d messages added", len(files), c.files_changed, c.messages_added)
    return summary
