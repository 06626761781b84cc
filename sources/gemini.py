"""Gemini CLI chat recordings: discovery on disk and defensive parsing of whole session files.

Layout (google-gemini/gemini-cli `ChatRecordingService`, `Storage`, `ProjectRegistry`):
`~/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDThh-mm>-<id8>.json` (one JSON document per
session, rewritten whole on every change) and, in newer versions, `session-*.jsonl` (an append-only
record log), with sub-agent sessions in `chats/<parent session id>/<session id>.jsonl`. `<project>`
is the SHA-256 hex of the project root in older versions; newer versions use a readable slug
(`ProjectRegistry`: `~/.gemini/projects.json` maps roots to slugs, and `<slug>/.project_root`
holds the root) and copy the hash folder there once (`StorageMigration`), so one session can sit
under both folders. `$GEMINI_CLI_HOME` replaces the home folder. Default root: `~/.gemini/tmp`.

Document format: `{sessionId, projectHash, startTime, lastUpdated, messages: [...], summary?,
directories?, kind?}`; a message is `{id, timestamp, type: user | gemini | info | error | warning,
content, displayContent?}`, `content` a string or Gemini `Part`s (`text`, `thought`,
`inlineData`, `fileData`, `functionCall`, `functionResponse`); `gemini` messages add `thoughts`
[{subject, description, timestamp}], `tokens`, `model` and `toolCalls` [{id, name, args, result
(Parts holding a `functionResponse`), status, resultDisplay, ...}]. JSONL format: a metadata
record, then message records (a message updated later is appended again under its id: the last
version wins), `{"$set": {...}}` metadata updates (`summary`, `messages`, ...) and
`{"$rewindTo": id}` (that message and every later one are dropped).

Entries (`Document.entries`, accounted like lines: exactly one Parsed each, in a stable order so
that a grown file only appends entries):

* JSON documents: entry 0 is the document's own (`title`, kind `ai-title`, when it has a
  `summary`; `reject` `truncated_document` when it is cut short (a truncated write: every whole
  message before the cut is still read); else `skip` `no_summary`), then one entry per message.
  Fixed at position 0, so a summary or a cut never shifts the messages' entries.
* JSONL logs: one entry per line (`skip` `metadata` / `metadata_update` / `rewind`, a `title` for
  a `$set` (line type `gemini:set`; `$rewindTo` is `gemini:rewind`) or metadata record that carries a summary, one message entry per message record:
  `skip` `superseded` for a version a later line replaced and `rewound` for one a `$rewindTo`
  dropped), plus one entry per message carried by a `$set` `messages` list, after that line's.
* A message entry is `message` for `user` (kind `message`, or `tool_result` when it holds only
  function responses; `displayContent`, what the person typed, is preferred over the expanded
  `content`) and `gemini` (assistant: thoughts as `thinking` blocks, text, each tool call as a
  `tool_use` block (its name and descriptive arguments, `TOOL_INPUT_FIELDS`) followed by its
  `tool_result` block, paired by the call id, `is_error` for status error/cancelled); `skip` with
  the message type for `info` / `error` / `warning` (CLI notices); `skip` `empty:<type>` when
  nothing is left; `unknown:<type>` for another type; `reject` for a non-object or a missing type.
* Record.uuid is the message `id` (stable across rewrites and across the two folders of a
  migrated session); a message without one gets a uuid derived from the session id, its position
  and content (`synthetic_uuid`). In a JSONL log, a later version of a message (a record appended
  again under the same id) gets a uuid derived from the id and its content: when an earlier
  version was stored by an earlier read, the completed one (tool results added) is stored too
  rather than lost as a duplicate. A JSON document shows one version only: a message completed
  after it was stored keeps its stored version (limit).
* While a file is hot (modified less than `HOT_SECONDS` ago), a message with a tool call still
  running (a status not in `FINAL_STATUSES`, no result) is held back with every entry after it:
  Gemini CLI rewrites it when the call ends, which changes the file, so the next read stores it
  complete (`GeminiDocument.held_back` counts them). A cold file gives every entry.
* A file that is not JSON at all is one `reject`.

`discover` lists each session once: when the same `sessionId` appears in several files (hash and
readable folders, or a `.json` migrated to `.jsonl`), the most recently modified file is kept.
`Document.cwd` is the project root when the folder, `projects.json` or a `.project_root` marker
names it (hash folders are matched by hashing known roots); `Document.project_hash` is the
document's `projectHash` (lower-cased) when it has one.

Invariants: parsing never raises on any input; nothing here stores, logs or prints transcript text
(the indexer redacts every string before it is stored); inline data is never kept, only a
placeholder `[image: image/png, N bytes]`; token counts are not stored. Standard library only;
never imports `consolidate`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path

from .model import (GEMINI, Block, Document, Parsed, Record, TranscriptFile, str_field,
                    without_surrogates)
from .render import canonical_json, inline_data_placeholder, media_kind, render_fields, written_doc

HARNESS = GEMINI
FORMAT = "document"

#: Line types of the JSONL log's `{"$set": ...}` and `{"$rewindTo": id}` records (and of the messages a
#: `$set` carries): counter keys of letters only, so they pass the indexer's shape check by name.
SET_LINE = "gemini:set"
REWIND_LINE = "gemini:rewind"

#: Descriptive tool arguments kept (in this order); the rest of a call's args is dropped.
TOOL_INPUT_FIELDS = (
    "description", "command", "absolute_path", "file_path", "path", "dir_path", "directory",
    "pattern", "include", "query", "url", "prompt", "fact", "paths",
)
#: Tools that write a file; into a documentation file, what they write is kept (`render.written_doc`).
WRITE_TOOLS = frozenset({"write_file", "replace"})


def tool_input(name: object, args: object) -> str:
    """A call's descriptive arguments (`TOOL_INPUT_FIELDS`), and what a write into a documentation
    file wrote (`WRITE_TOOLS`: `content` of write_file, `new_string` of replace)."""
    text = render_fields(args, TOOL_INPUT_FIELDS)
    if name in WRITE_TOOLS and isinstance(args, dict):
        written = written_doc(args.get("file_path") or args.get("absolute_path"),
                              [args.get("content"), args.get("new_string")])
        if written:
            text = f"{text}\n{written}" if text else written
    return text


#: Message types that are CLI notices, skipped and counted under their type.
NOTICE_TYPES = frozenset({"info", "error", "warning", "system"})

#: Tool call statuses after which a call's record no longer changes.
FINAL_STATUSES = frozenset({"success", "error", "cancelled"})

#: A file modified less than this many seconds ago may still be completing a running tool call.
HOT_SECONDS = 15 * 60

#: Files larger than this are not read (counted as one `reject` `oversized`).
MAX_DOCUMENT_BYTES = 256 << 20

#: Bytes read from a file's head to find its `sessionId` during discovery.
HEAD_BYTES = 64 << 10

_HASH_DIR = re.compile(r"[0-9a-f]{64}")
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"\\]{1,200})"')
_MESSAGES_OPEN = re.compile(r'"messages"\s*:\s*\[')


def default_root() -> Path:
    """Gemini CLI's project temp folders: `$GEMINI_CLI_HOME/.gemini/tmp`, else `~/.gemini/tmp`."""
    base = os.environ.get("GEMINI_CLI_HOME")
    return (Path(base).expanduser() if base else Path.home()) / ".gemini" / "tmp"


# ---------------------------------------------------------------------------------------------
# Discovery


def discover(root: Path) -> list[TranscriptFile]:
    """Every session file below `root` (any depth): `session-*.json` / `session-*.jsonl` in a
    `chats` folder (main), `*.json(l)` in a folder inside `chats` (sub-agent; `session_hint` is
    that folder: the parent session id). One file per session id (module docstring); readable
    folders before hash folders, then by path. One stat per file, kept. Never raises."""
    found: list[TranscriptFile] = []
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(os.fspath(root), onerror=lambda _e: None):
        dirnames.sort()
        here = Path(dirpath)
        if here.name == "chats":
            kind, chats = "main", here
        elif here.parent.name == "chats":
            kind, chats = "subagent", here.parent
        else:
            continue
        for name in sorted(filenames):
            if not name.endswith((".json", ".jsonl")):
                continue
            if kind == "main" and not name.startswith("session-"):
                continue
            path = here / name
            try:
                st = os.stat(path)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen or not path.is_file():
                continue
            seen.add(key)
            found.append(TranscriptFile(path, kind, chats.parent.name,
                                        here.name if kind == "subagent" else None, None, st,
                                        harness=HARNESS))
    return _one_per_session(found)


def _one_per_session(files: list[TranscriptFile]) -> list[TranscriptFile]:
    best: dict[str, TranscriptFile] = {}
    order: list[TranscriptFile] = []
    for tf in files:
        sid = _head_session_id(tf.path)
        if sid is None:
            order.append(tf)
            continue
        cur = best.get(sid)
        if cur is None or _preference(tf) > _preference(cur):
            if cur is not None:
                order.remove(cur)
            best[sid] = tf
            order.append(tf)
    return sorted(order, key=lambda t: (bool(_HASH_DIR.fullmatch(t.project)), str(t.path)))


def _preference(tf: TranscriptFile) -> tuple:
    mtime = tf.stat.st_mtime_ns if tf.stat is not None else 0
    return (mtime, not _HASH_DIR.fullmatch(tf.project), tf.path.suffix == ".jsonl")


def _head_session_id(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return None
    m = _SESSION_ID.search(head)
    return m.group(1).decode("utf-8", errors="replace") if m else None


def project_roots(tmp_dir: Path) -> dict[str, str]:
    """Project folder name (slug or hash) -> project root, from `<tmp_dir>/../projects.json`, the
    `.project_root` markers under `tmp_dir`, and the SHA-256 of every root found (hash folders).
    Cached per folder state; never raises."""
    key = (os.fspath(tmp_dir), _mtime(tmp_dir), _mtime(tmp_dir.parent / "projects.json"))
    cached = _ROOTS_CACHE.get(key[0])
    if cached is not None and cached[0] == key:
        return cached[1]
    out: dict[str, str] = {}
    try:
        with open(tmp_dir.parent / "projects.json", "rb") as f:
            reg = json.loads(f.read(1 << 20))
        projects = reg.get("projects") if isinstance(reg, dict) else None
        for root, slug in (projects.items() if isinstance(projects, dict) else ()):
            if isinstance(root, str) and isinstance(slug, str) and root and slug:
                out[slug] = root
    except (OSError, ValueError, RecursionError):
        pass
    try:
        entries = list(os.scandir(tmp_dir))
    except OSError:
        entries = []
    for entry in entries:
        try:
            with open(os.path.join(entry.path, ".project_root"), "rb") as f:
                root = f.read(4096).decode("utf-8", errors="replace").strip()
        except OSError:
            continue
        if root:
            out[entry.name] = root
    for root in set(out.values()):
        out.setdefault(hashlib.sha256(root.encode("utf-8", errors="replace")).hexdigest(), root)
    _ROOTS_CACHE[key[0]] = (key, out)
    return out


_ROOTS_CACHE: dict[str, tuple[tuple, dict[str, str]]] = {}


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


# ---------------------------------------------------------------------------------------------
# Documents


@dataclass(slots=True)
class GeminiDocument(Document):
    """A Document plus how many entries were held back (a running tool call in a hot file): when it
    is not 0, the file is due to change again and should be re-read even if its stat does not."""

    held_back: int = 0


def parse_document(tf: TranscriptFile, *, now: float | None = None) -> Document:
    """The reader interface (sources.model): the whole file `tf` as a Document; never raises.
    `now` (seconds since the epoch, default the clock) decides whether the file is still hot."""
    try:
        st = os.stat(tf.path)
        if st.st_size > MAX_DOCUMENT_BYTES:
            return GeminiDocument(None, [Parsed("reject", "oversized", "document")])
        with open(tf.path, "rb") as f:
            data = f.read(MAX_DOCUMENT_BYTES + 1)
    except OSError:
        return GeminiDocument(None, [Parsed("reject", "file_unreadable", "document")])
    try:
        hot = ((time.time() if now is None else now) - st.st_mtime) < HOT_SECONDS
        chats = tf.path.parent if tf.kind == "main" else tf.path.parent.parent
        roots = project_roots(chats.parent.parent)
        doc = parse_bytes(data, hot=hot, parent_session=tf.session_hint if tf.kind == "subagent" else None,
                          cwd=roots.get(chats.parent.name))
        if doc.cwd is None and doc.project_hash:
            doc.cwd = roots.get(doc.project_hash.lower())
            if doc.cwd is not None:
                for p in doc.entries:
                    p.cwd = p.cwd or doc.cwd
                    if p.record is not None:
                        p.record.cwd = p.record.cwd or doc.cwd
        return doc
    except Exception:  # noqa: BLE001  (never raise into the indexer)
        return GeminiDocument(None, [Parsed("reject", "unparseable", "document")])


@dataclass(slots=True)
class _Ctx:
    session_id: str | None = None
    parent_session: str | None = None
    cwd: str | None = None
    project_hash: str | None = None
    summary: str | None = None
    repaired: bool = False
    surrogates: bool = False
    held_back: int = 0
    truncated: bool = False
    escapes: bool = False          # the text has \\uD8xx-style escapes (lone surrogates possible)


def parse_bytes(data: bytes, *, hot: bool = False, parent_session: str | None = None,
                cwd: str | None = None) -> GeminiDocument:
    """A session file's bytes as a Document (see the module docstring); never raises.

    `hot`: the file may still be written (running tool calls are held back); `parent_session`: the
    parent session id of a sub-agent file; `cwd`: the project root when the caller knows it."""
    ctx = _Ctx(parent_session=parent_session, cwd=cwd)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text, ctx.repaired = data.decode("utf-8", errors="replace"), True
    text = text.lstrip("\ufeff")
    ctx.escapes = "\\ud" in text or "\\uD" in text
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        obj = None
        entries = _jsonl(text, ctx, hot)
        if entries is None:
            entries = _truncated(text, ctx, hot)
    else:
        if isinstance(obj, dict) and "messages" not in obj and ("sessionId" in obj or "$set" in obj):
            # a JSONL log of one line (its metadata record)
            entries = _jsonl(text, ctx, hot) or [Parsed("reject", "missing_messages", "document")]
        elif isinstance(obj, dict):
            entries = _document(obj, ctx, hot)
        else:
            entries = [Parsed("reject", "not_an_object", "document")]
    for p in entries:
        p.session_id = p.session_id or _session_of(ctx)
        p.cwd = p.cwd or ctx.cwd
        p.repaired = p.repaired or ctx.repaired
        p.surrogates = p.surrogates or ctx.surrogates
    return GeminiDocument(ctx.session_id, entries, cwd=ctx.cwd, title=ctx.summary, project_hash=ctx.project_hash,
                          held_back=ctx.held_back)


def _session_of(ctx: _Ctx) -> str | None:
    return ctx.parent_session or ctx.session_id


def _clean(value: object, ctx: _Ctx) -> object:
    """`value` with lone surrogates replaced (noted on ctx)."""
    if not ctx.escapes:
        return value
    try:
        fixed, changed = without_surrogates(value)
    except RecursionError:
        return None
    ctx.surrogates = ctx.surrogates or changed
    return fixed


def _read_meta(obj: dict, ctx: _Ctx) -> None:
    ctx.session_id = str_field(obj, "sessionId") or ctx.session_id
    ph = str_field(obj, "projectHash")
    ctx.project_hash = ph.lower() if ph else ctx.project_hash
    summary = obj.get("summary")
    if isinstance(summary, str) and summary.strip():
        ctx.summary = summary.strip()


def _title_slot(ctx: _Ctx, line_type: str) -> Parsed:
    if line_type == "summary" and ctx.truncated:
        return Parsed("reject", "truncated_document", "document")
    if ctx.summary:
        return Parsed("title", "ai-title", line_type, title=ctx.summary, session_id=_session_of(ctx))
    return Parsed("skip", "no_summary", line_type)


def _document(obj: dict, ctx: _Ctx, hot: bool) -> list[Parsed]:
    obj = _clean(obj, ctx)
    if not isinstance(obj, dict):
        return [Parsed("reject", "malformed_json", "document")]
    _read_meta(obj, ctx)
    messages = obj.get("messages")
    out = [_title_slot(ctx, "summary")]
    if not isinstance(messages, list):
        out.append(Parsed("reject", "missing_messages", "document"))
        return out
    out.extend(_entry(m, i, ctx) for i, m in enumerate(_without_running(messages, ctx, hot)))
    return out


def _running(m: object) -> bool:
    """A message with a tool call that is still running (no result, a status that is not final)."""
    calls = m.get("toolCalls") if isinstance(m, dict) else None
    return isinstance(calls, list) and any(
        isinstance(tc, dict) and tc.get("result") is None and isinstance(tc.get("status"), str)
        and tc["status"] not in FINAL_STATUSES for tc in calls)


def _without_running(messages: list, ctx: _Ctx, hot: bool) -> list:
    """`messages` up to the first one with a running tool call when the file is hot."""
    if hot:
        for i, m in enumerate(messages):
            if _running(m):
                ctx.held_back += len(messages) - i
                return messages[:i]
    return messages


def _truncated(text: str, ctx: _Ctx, hot: bool) -> list[Parsed]:
    """A JSON document cut short: the whole messages before the cut, then one reject."""
    m_id = _SESSION_ID.search(text[:HEAD_BYTES].encode("utf-8", errors="replace"))
    if m_id:
        ctx.session_id = m_id.group(1).decode("utf-8", errors="replace")
    m_ph = re.search(r'"projectHash"\s*:\s*"([0-9a-fA-F]{64})"', text[:HEAD_BYTES])
    if m_ph:
        ctx.project_hash = m_ph.group(1).lower()
    opened = _MESSAGES_OPEN.search(text)
    if not text.strip() or opened is None or ctx.session_id is None:
        return [Parsed("reject", "malformed_json", "document")]
    decoder = json.JSONDecoder()
    messages: list[object] = []
    pos = opened.end()
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= n or text[pos] == "]":
            break
        try:
            value, pos = decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            break
        messages.append(value)
    ctx.truncated = True
    out = [_title_slot(ctx, "summary")]
    out.extend(_entry(_clean(m, ctx), i, ctx) for i, m in enumerate(_without_running(messages, ctx, hot)))
    return out


# ---------------------------------------------------------------------------------------------
# JSONL record logs


@dataclass(slots=True)
class _Slot:
    line_type: str
    msg: object
    version: int = 1               # 1 for a message id's first record, 2 for the next, ...
    line: int = 0
    state: str = "current"         # current | superseded | rewound


def _jsonl(text: str, ctx: _Ctx, hot: bool) -> list[Parsed] | None:
    """The entries of a JSONL record log, or None when the text is not one."""
    raw_lines = text.split("\n")
    partial = raw_lines.pop() if raw_lines else ""    # after the last newline: an unfinished line
    first = next((ln for ln in raw_lines if ln.strip()), partial if partial.strip() else None)
    if first is None:
        return None
    try:
        head = json.loads(first)
    except (ValueError, RecursionError):
        return None
    if not isinstance(head, dict):
        return None
    plan: list[object] = []             # per line: a Parsed, or a _Slot list (message versions)
    slots_by_id: dict[str, _Slot] = {}
    order: list[str] = []               # message ids in first-appearance order
    versions: dict[str, int] = {}       # message id -> records seen under it

    def add(msg: object, line_type: str, line_no: int) -> _Slot:
        slot = _Slot(line_type, msg, line=line_no)
        mid = str_field(msg, "id") if isinstance(msg, dict) else None
        if mid is not None:
            versions[mid] = slot.version = versions.get(mid, 0) + 1
            prev = slots_by_id.get(mid)
            if prev is not None:
                prev.state = "superseded"
            else:
                order.append(mid)
            slots_by_id[mid] = slot
        return slot

    lines = raw_lines + ([partial] if partial.strip() and not hot else [])   # hot: still being written
    for i, line in enumerate(lines):
        if not line.strip():
            plan.append(Parsed("skip", "blank", "blank"))
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            plan.append(Parsed("reject", "malformed_json"))
            continue
        if not isinstance(rec, dict):
            plan.append(Parsed("reject", "not_an_object"))
            continue
        rec = _clean(rec, ctx)
        if not isinstance(rec, dict):
            plan.append(Parsed("reject", "malformed_json"))
            continue
        if isinstance(rec.get("$rewindTo"), str):
            target = rec["$rewindTo"]
            cut = order.index(target) if target in order else 0
            for mid in order[cut:]:
                slots_by_id[mid].state = "rewound"
                del slots_by_id[mid]
            del order[cut:]
            plan.append(Parsed("skip", "rewind", REWIND_LINE))
        elif isinstance(rec.get("$set"), dict):
            upd = rec["$set"]
            had = ctx.summary
            _read_meta(upd, ctx)
            entry = (_title_slot(ctx, SET_LINE) if ctx.summary and ctx.summary != had
                     else Parsed("skip", "metadata_update", SET_LINE))
            carried = []
            if isinstance(upd.get("messages"), list):
                keep = {str_field(m, "id") for m in upd["messages"] if isinstance(m, dict)}
                for mid in [m for m in order if m not in keep]:
                    slots_by_id.pop(mid).state = "superseded"
                    order.remove(mid)
                carried = [add(m, SET_LINE, i) for m in upd["messages"]]
            plan.append([entry, *carried])
        elif "id" in rec or "type" in rec:
            plan.append([add(rec, "message", i)])
        elif "sessionId" in rec:
            had = ctx.summary
            _read_meta(rec, ctx)
            plan.append(_title_slot(ctx, "metadata") if ctx.summary and ctx.summary != had
                        else Parsed("skip", "metadata", "metadata"))
        else:
            plan.append(Parsed("skip", "unknown:record", "record"))
    if hot:
        running = [slot.line for slot in slots_by_id.values() if slot.state == "current" and _running(slot.msg)]
        if running:
            cut = min(running)
            ctx.held_back += sum(len(item) if isinstance(item, list) else 1 for item in plan[cut:])
            plan = plan[:cut]
    out: list[Parsed] = []
    index = 0
    for item in plan:
        for part in item if isinstance(item, list) else [item]:
            if isinstance(part, Parsed):
                out.append(part)
            elif part.state == "current":
                out.append(_entry(part.msg, index, ctx, part.line_type, part.version))
            else:
                out.append(Parsed("skip", part.state, part.line_type))
            index += 1
    return out


# ---------------------------------------------------------------------------------------------
# Messages


def _entry(m: object, index: int, ctx: _Ctx, line_type: str | None = None, version: int = 1) -> Parsed:
    try:
        return _message(m, index, ctx, line_type, version)
    except Exception:  # noqa: BLE001  (defensive: a format we did not foresee must not stop a run)
        return Parsed("reject", "unparseable", line_type or "message")


def _message(m: object, index: int, ctx: _Ctx, line_type: str | None, version: int) -> Parsed:
    if not isinstance(m, dict):
        return Parsed("reject", "not_an_object", line_type or "message")
    mtype = m.get("type")
    if not isinstance(mtype, str) or not mtype:
        return Parsed("reject", "missing_type", line_type or "message")
    lt = line_type or mtype[:40]
    if mtype in NOTICE_TYPES:
        return Parsed("skip", mtype, lt)
    if mtype == "user":
        content = m.get("displayContent")
        if not _has_content(content):
            content = m.get("content")
        blocks = _parts(content)
        role = "user"
        kind = "tool_result" if blocks and all(b.type == "tool_result" for b in blocks) else "message"
    elif mtype in ("gemini", "model"):
        blocks = _thoughts(m.get("thoughts")) + _parts(m.get("content")) + _tool_calls(m.get("toolCalls"))
        role, kind = "assistant", "message"
    else:
        return Parsed("skip", f"unknown:{mtype[:40]}", lt)
    if not blocks:
        return Parsed("skip", f"empty:{mtype[:40]}", lt)
    mid = str_field(m, "id")
    synthetic = mid is None or version > 1
    if mid is None:
        digest = hashlib.sha1(b"\0".join([(ctx.session_id or "").encode("utf-8", "replace"),
                                          str(index).encode(), canonical_json(m)])).digest()
        mid = str(uuidlib.UUID(bytes=digest[:16]))
    elif version > 1:
        digest = hashlib.sha1(b"\0".join([b"version", mid.encode("utf-8", "replace"), canonical_json(m)])).digest()
        mid = str(uuidlib.UUID(bytes=digest[:16]))
    sidechain = ctx.parent_session is not None
    rec = Record(
        uuid=mid,
        role=role,
        kind=kind,
        blocks=blocks,
        session_id=_session_of(ctx),
        is_sidechain=sidechain,
        agent_id=ctx.session_id if sidechain else None,
        cwd=ctx.cwd,
        timestamp=str_field(m, "timestamp"),
        model=str_field(m, "model") if role == "assistant" else None,
        synthetic_uuid=synthetic,
    )
    return Parsed("message", kind, lt, record=rec, session_id=rec.session_id, cwd=ctx.cwd)


def _has_content(content: object) -> bool:
    if isinstance(content, str):
        return bool(content.strip())
    return isinstance(content, (list, dict)) and bool(content)


def _parts(content: object) -> list[Block]:
    """Blocks of a Gemini `PartListUnion` (a string, one Part or a list of them); empty texts dropped."""
    if content is None:
        return []
    if isinstance(content, str):
        return [Block("text", content)] if content.strip() else []
    items = content if isinstance(content, list) else [content]
    out: list[Block] = []
    for part in items:
        if isinstance(part, str):
            if part.strip():
                out.append(Block("text", part))
            continue
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            if part["text"].strip():
                out.append(Block("thinking" if part.get("thought") is True else "text", part["text"]))
        elif isinstance(part.get("inlineData"), dict):
            data = part["inlineData"]
            out.append(Block(media_kind(data.get("mimeType")), inline_data_placeholder(data)))
        elif isinstance(part.get("fileData"), dict):
            fd = part["fileData"]
            mime = fd.get("mimeType") if isinstance(fd.get("mimeType"), str) else "unknown"
            uri = fd.get("fileUri") if isinstance(fd.get("fileUri"), str) else ""
            out.append(Block(media_kind(mime), f"[{media_kind(mime)}: {mime} {uri}]".rstrip()))
        elif isinstance(part.get("functionCall"), dict):
            fc = part["functionCall"]
            name = str_field(fc, "name") or "?"
            out.append(Block("tool_use", tool_input(name, fc.get("args")), tool_name=name,
                             tool_use_id=str_field(fc, "id")))
        elif isinstance(part.get("functionResponse"), dict):
            fr = part["functionResponse"]
            text, err = _response_text(fr.get("response"))
            out.append(Block("tool_result", text, tool_name=str_field(fr, "name"),
                             tool_use_id=str_field(fr, "id"), is_error=err))
        elif part:
            out.append(Block("other", f"[{sorted(str(k) for k in part)[0][:40]} part]"))
    return out


def _thoughts(thoughts: object) -> list[Block]:
    out = []
    for t in thoughts if isinstance(thoughts, list) else []:
        if not isinstance(t, dict):
            continue
        pieces = [s.strip() for s in (t.get("subject"), t.get("description")) if isinstance(s, str) and s.strip()]
        if pieces:
            out.append(Block("thinking", "\n".join(pieces)))
    return out


def _tool_calls(calls: object) -> list[Block]:
    """Each call's `tool_use` block, then its `tool_result` block once it has a result or a final status."""
    out: list[Block] = []
    for tc in calls if isinstance(calls, list) else []:
        if not isinstance(tc, dict):
            continue
        name = str_field(tc, "name") or "?"
        call_id = str_field(tc, "id")
        out.append(Block("tool_use", tool_input(name, tc.get("args")), tool_name=name,
                         tool_use_id=call_id))
        status = tc.get("status") if isinstance(tc.get("status"), str) else None
        result = tc.get("result")
        if result is None and status not in FINAL_STATUSES:
            continue
        text, err = _result_text(result)
        if not text.strip() and isinstance(tc.get("resultDisplay"), str):
            text = tc["resultDisplay"]
        if status == "cancelled" and not text.strip():
            text = "[cancelled]"
        out.append(Block("tool_result", text, tool_name=name, tool_use_id=call_id,
                         is_error=err or status in ("error", "cancelled")))
    return out


def _result_text(result: object) -> tuple[str, bool]:
    """(text, is_error) of a ToolCallRecord result: Parts holding `functionResponse`s, or a string."""
    if result is None:
        return "", False
    if isinstance(result, str):
        return result, False
    items = result if isinstance(result, list) else [result]
    texts, err = [], False
    for part in items:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("functionResponse"), dict):
                t, e = _response_text(part["functionResponse"].get("response"))
                texts.append(t)
                err = err or e
            else:
                texts.extend(b.text for b in _parts([part]))
    return "\n".join(t for t in texts if t), err


def _response_text(response: object) -> tuple[str, bool]:
    """(text, is_error) of a functionResponse's `response` ({output} / {error} / anything)."""
    if isinstance(response, str):
        return response, False
    if not isinstance(response, dict):
        return ("" if response is None else str(response)), False
    if isinstance(response.get("error"), str):
        return response["error"], True
    for key in ("output", "llmContent", "content", "result", "message"):
        value = response.get(key)
        if isinstance(value, str):
            return value, False
        if isinstance(value, list):
            return "\n".join(b.text for b in _parts(value)), False
    return canonical_json(response).decode("utf-8", errors="replace"), False
