"""Claude Code transcripts: discovery on disk and defensive parsing of their JSON lines.

Layout (see ../shared/CLAUDE_CODE.md): `<projects>/<project>/<session>.jsonl` (main sessions),
`<projects>/<project>/<session>/subagents/agent-<id>.jsonl` (v2.1+ sub-agents and compaction runs)
and `<projects>/<project>/agent-<id>.jsonl` (the v2.0 layout). `<project>` is the launch directory
with non-alphanumerics replaced, which is not reversible: the agent comes from the `cwd` field.

`parse_line(raw)` turns one raw line (bytes, without the newline) into exactly one `Parsed`:

==========  ==============================================================================
outcome     meaning
==========  ==============================================================================
message     a `user`/`assistant` line or a stored `system` line, as a `Record` with its blocks
title       a `summary` or `custom-title` line (the indexer checks a summary's leafUuid)
skip        a line deliberately not stored, counted by kind (`progress`, `system:turn_duration`...)
reject      a line that could not be read, counted by reason (`malformed_json`, `not_an_object`...)
==========  ==============================================================================

Invariants: parsing never raises on any input; nothing here stores, logs or prints transcript text
(the indexer redacts every string before it is stored); image data is never kept, only a
placeholder `[image: media_type, N bytes]`; a tool_use keeps its name and a few descriptive input
fields (`TOOL_INPUT_FIELDS`), never the whole input. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

#: Marker our own claude-cli writer puts first in its prompt; sessions that start with it are ours.
OWN_SESSION_MARKER = "[reverie-consolidation]"

#: Line types that carry no knowledge; skipped and counted.
SKIPPED_TYPES = frozenset({"progress", "file-history-snapshot", "queue-operation"})

#: System subtypes stored as messages (role `system`); every other subtype is skipped and counted.
STORED_SYSTEM_SUBTYPES = frozenset({"compact_boundary", "local_command"})

#: tool_use input fields kept (in this order); the rest of the input is dropped.
TOOL_INPUT_FIELDS = (
    "description", "command", "file_path", "notebook_path", "path", "pattern", "glob", "query",
    "url", "prompt", "subagent_type", "skill",
)


@dataclass(slots=True)
class Block:
    """One content block of a message, text not yet redacted."""

    type: str                      # text | thinking | tool_use | tool_result | image | document | other
    text: str
    tool_name: str | None = None
    tool_use_id: str | None = None
    is_error: bool = False
    original_size: int | None = None   # set by the indexer: characters before clipping
    clipped: bool = False


@dataclass(slots=True)
class Record:
    """One `user` / `assistant` / stored `system` line."""

    uuid: str
    role: str                      # user | assistant | system
    kind: str                      # see KINDS in consolidate.store
    blocks: list[Block]
    parent_uuid: str | None = None
    session_id: str | None = None
    api_id: str | None = None      # message.id of an assistant line (shared by split lines)
    is_sidechain: bool = False
    agent_id: str | None = None    # `agentId` of v2 sub-agent lines
    cwd: str | None = None
    git_branch: str | None = None
    version: str | None = None
    timestamp: str | None = None
    model: str | None = None
    is_meta: bool = False
    synthetic_uuid: bool = False   # the line had no uuid; one was derived from its bytes


@dataclass(slots=True)
class Parsed:
    outcome: str                   # message | title | skip | reject
    kind: str = ""                 # skip kind / reject reason / title source
    line_type: str = "?"           # the line's `type` (for accounting), "?" when unreadable
    record: Record | None = None
    title: str | None = None
    leaf_uuid: str | None = None
    session_id: str | None = None
    cwd: str | None = None
    repaired: bool = False         # invalid UTF-8 was replaced before parsing
    surrogates: bool = False       # lone surrogate escapes (\\udXXX) were replaced by U+FFFD


@dataclass(slots=True)
class TranscriptFile:
    """A transcript found on disk, with the one stat taken during discovery."""

    path: Path
    kind: str                      # main | subagent
    project: str                   # the project folder name under the projects dir
    session_hint: str | None       # main: file stem; subagent (v2.1): the parent session folder
    parent_path: Path | None = None  # subagent: the parent session's main file (may not exist)
    stat: os.stat_result | None = field(default=None, repr=False)


# ---------------------------------------------------------------------------------------------
# Discovery


def discover(projects_dir: Path) -> list[TranscriptFile]:
    """Every transcript under `projects_dir`: main files first (sorted), then sub-agent files.

    One stat per file (taken here and kept on the result). Unreadable folders are skipped silently;
    a missing projects dir gives an empty list; a file reached through several paths (symlinks,
    hard links) is listed once, under its first path.
    """
    mains: list[TranscriptFile] = []
    subs: list[TranscriptFile] = []
    try:
        projects = sorted(os.scandir(projects_dir), key=lambda e: e.name)
    except OSError:
        return []
    for proj in projects:
        try:
            if not proj.is_dir():
                continue
            entries = sorted(os.scandir(proj.path), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.name.endswith(".jsonl") and entry.is_file():
                    path = Path(entry.path)
                    st = entry.stat()
                    if entry.name.startswith("agent-"):
                        # v2.0 layout: sub-agent files next to the session files.
                        subs.append(TranscriptFile(path, "subagent", proj.name, None, None, st))
                    else:
                        mains.append(TranscriptFile(path, "main", proj.name, path.stem, None, st))
                elif entry.is_dir():
                    sub_dir = os.path.join(entry.path, "subagents")
                    if not os.path.isdir(sub_dir):
                        continue
                    parent = Path(proj.path) / f"{entry.name}.jsonl"
                    for sub in sorted(os.scandir(sub_dir), key=lambda e: e.name):
                        if sub.name.endswith(".jsonl") and sub.is_file():
                            subs.append(TranscriptFile(Path(sub.path), "subagent", proj.name, entry.name,
                                                       parent, sub.stat()))
            except OSError:
                continue
    # One file reached through two paths (symlinked project folders, hard links) is one transcript:
    # the first path in this order stands for it.
    out: list[TranscriptFile] = []
    seen: set[tuple[int, int]] = set()
    for tf in mains + subs:
        key = (tf.stat.st_dev, tf.stat.st_ino) if tf.stat is not None else (-1, id(tf))
        if key not in seen:
            seen.add(key)
            out.append(tf)
    return out


# ---------------------------------------------------------------------------------------------
# Helpers


def clip(text: str, cap: int) -> tuple[str, int, bool]:
    """Keep the head and tail of `text` when it is longer than `cap` characters.

    Returns (text, original length, clipped?). The clipped text is at most `cap` characters plus a
    one-line marker saying how much was cut.
    """
    n = len(text)
    if cap <= 0 or n <= cap:
        return text, n, False
    head = cap * 2 // 3
    tail = cap - head
    marker = f"\n[... {n - head - tail} characters clipped ...]\n"
    return text[:head] + marker + (text[-tail:] if tail else ""), n, True


def _b64_size(data: object) -> int:
    if not isinstance(data, str):
        return 0
    n = len(data)
    pad = data.count("=", max(0, n - 2))
    return max(0, n * 3 // 4 - pad)


def media_placeholder(kind: str, source: object) -> str:
    """`[image: image/png, 1234 bytes]` for a base64 source; never the data itself."""
    if isinstance(source, dict):
        media = source.get("media_type") or source.get("type") or "unknown"
        if source.get("type") == "base64" or "data" in source:
            return f"[{kind}: {media}, {_b64_size(source.get('data'))} bytes]"
        if source.get("type") == "url":
            return f"[{kind}: url {source.get('url', '')}]"
        return f"[{kind}: {media}]"
    return f"[{kind}]"


def render_tool_input(name: str, data: object) -> str:
    """The kept fields of a tool_use input, one `field: value` per line, whole: the indexer clips the
    block only after redacting it (`index.tool_result_cap`), since a clip made first could drop the
    context that marks a value in the part it keeps as a secret."""
    if not isinstance(data, dict):
        return ""
    lines = []
    for key in TOOL_INPUT_FIELDS:
        value = data.get(key)
        if value is None or value == "":
            continue
        if not isinstance(value, str):
            value = json.dumps(value, ensure_ascii=False)
        lines.append(f"{key}: {value}")
    if not lines and data:
        lines.append("input fields: " + ", ".join(sorted(str(k) for k in data)[:20]))
    return "\n".join(lines)


def _tool_result_text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict):
                t = item.get("type")
                if t == "text":
                    parts.append(str(item.get("text") or ""))
                elif t in ("image", "document"):
                    parts.append(media_placeholder(t, item.get("source")))
                else:
                    parts.append(f"[{t or 'unknown'}]")
        return "\n".join(parts)
    if isinstance(content, dict):
        return _tool_result_text([content])
    return str(content)


def content_blocks(content: object) -> list[Block]:
    """Blocks of `message.content` (a string or a list of blocks); empty texts dropped."""
    if content is None:
        return []
    if isinstance(content, str):
        return [Block("text", content)] if content.strip() else []
    if not isinstance(content, list):
        return [Block("other", f"[{type(content).__name__} content]")]
    out: list[Block] = []
    for b in content:
        if isinstance(b, str):
            if b:
                out.append(Block("text", b))
            continue
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text":
            text = b.get("text")
            if isinstance(text, str) and text.strip():
                out.append(Block("text", text))
        elif t == "thinking":
            text = b.get("thinking")
            if isinstance(text, str) and text.strip():
                out.append(Block("thinking", text))
        elif t == "redacted_thinking":
            out.append(Block("thinking", "[redacted thinking]"))
        elif t in ("tool_use", "server_tool_use"):
            name = str(b.get("name") or "?")
            out.append(Block("tool_use", render_tool_input(name, b.get("input")), tool_name=name,
                             tool_use_id=b.get("id") if isinstance(b.get("id"), str) else None))
        elif t == "tool_result" or (isinstance(t, str) and t.endswith("_tool_result")):
            out.append(Block("tool_result", _tool_result_text(b.get("content")),
                             tool_use_id=b.get("tool_use_id") if isinstance(b.get("tool_use_id"), str) else None,
                             is_error=bool(b.get("is_error"))))
        elif t in ("image", "document"):
            out.append(Block(t, media_placeholder(t, b.get("source"))))
        else:
            out.append(Block("other", f"[{t or 'unknown'} block]"))
    return out


def _text_of(blocks: list[Block]) -> str:
    return "\n".join(b.text for b in blocks if b.type == "text")


def user_kind(obj: dict, blocks: list[Block]) -> str:
    """Kind of a user line: compact_summary | meta | command | command_output | notification |
    tool_result | message (a human turn)."""
    if obj.get("isCompactSummary"):
        return "compact_summary"
    if obj.get("isMeta"):
        return "meta"
    if blocks and all(b.type == "tool_result" for b in blocks):
        return "tool_result"
    head = _text_of(blocks).lstrip()[:400]
    if head.startswith("<command-name>") or head.startswith("<command-message>"):
        return "command"
    if head.startswith("<local-command-stdout>") or head.startswith("<local-command-stderr>"):
        return "command_output"
    if head.startswith("<task-notification>"):
        return "notification"
    return "message"


def first_prompt_text(record: Record) -> str | None:
    """The human text of a user record, or None when it is not a human turn."""
    if record.role != "user" or record.kind not in ("message", "command"):
        return None
    return _text_of(record.blocks)


def is_own_session_prompt(text: str | None) -> bool:
    return bool(text) and text.lstrip().startswith(OWN_SESSION_MARKER)


def _str(obj: dict, key: str) -> str | None:
    v = obj.get(key)
    return v if isinstance(v, str) and v else None


# ---------------------------------------------------------------------------------------------
# Parsing


def decode_line(raw: bytes) -> tuple[object, bool]:
    """json-decode a line; invalid UTF-8 is replaced (second value True). Raises ValueError.

    The bytes are decoded strictly first (`json.loads(bytes)` would let UTF-8-encoded surrogates
    through as lone surrogates, which cannot be stored)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return json.loads(raw.decode("utf-8", errors="replace")), True
    return json.loads(text), False


_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: object) -> tuple[object, bool]:
    """`value` with every lone surrogate in its strings (keys too) replaced by U+FFFD; (value, changed).

    JSON escapes such as `\\ud800` decode to lone surrogates, which are not text: no UTF-8 encoder
    (SQLite's included) accepts them. Valid pairs were already joined by the JSON decoder."""
    if isinstance(value, str):
        fixed = _SURROGATE.sub("\ufffd", value)
        return fixed, fixed != value
    if isinstance(value, list):
        changed = False
        out_list = []
        for v in value:
            v, c = _without_surrogates(v)
            out_list.append(v)
            changed = changed or c
        return out_list, changed
    if isinstance(value, dict):
        changed = False
        out_dict = {}
        for k, v in value.items():
            k, ck = _without_surrogates(k)
            v, cv = _without_surrogates(v)
            out_dict[k] = v
            changed = changed or ck or cv
        return out_dict, changed
    return value, False


def parse_line(raw: bytes) -> Parsed:
    """One raw line (no trailing newline) to one Parsed; never raises."""
    if not raw.strip():
        return Parsed("skip", "blank", "blank")
    try:
        obj, repaired = decode_line(raw)
    except (ValueError, RecursionError):
        return Parsed("reject", "malformed_json")
    if not isinstance(obj, dict):
        return Parsed("reject", "not_an_object")
    surrogates = False
    if b"\\ud" in raw or b"\\uD" in raw:     # a surrogate escape may be there: one C-level scan each
        try:
            obj, surrogates = _without_surrogates(obj)
        except RecursionError:
            return Parsed("reject", "malformed_json")
    try:
        parsed = parse_object(obj, raw)
    except Exception:  # noqa: BLE001  (defensive: a format we did not foresee must not stop a run)
        t = obj.get("type")
        parsed = Parsed("reject", "unparseable", t if isinstance(t, str) else "?")
    parsed.repaired = repaired
    parsed.surrogates = surrogates
    return parsed


def parse_object(obj: dict, raw: bytes = b"") -> Parsed:
    """Classify one decoded transcript line."""
    t = obj.get("type")
    if not isinstance(t, str) or not t:
        return Parsed("reject", "missing_type")
    session = _str(obj, "sessionId")
    cwd = _str(obj, "cwd")
    if t in SKIPPED_TYPES:
        return Parsed("skip", t, t, session_id=session, cwd=cwd)
    if t == "summary":
        title, leaf = _str(obj, "summary"), _str(obj, "leafUuid")
        if not title:
            return Parsed("reject", "missing_summary", t)
        return Parsed("title", "summary", t, title=title, leaf_uuid=leaf, session_id=session)
    if t == "custom-title":
        title = _str(obj, "customTitle") or _str(obj, "title")
        if not title:
            return Parsed("reject", "missing_title", t)
        return Parsed("title", "custom-title", t, title=title, session_id=session)
    if t == "system":
        sub = _str(obj, "subtype") or "unknown"
        if sub not in STORED_SYSTEM_SUBTYPES:
            return Parsed("skip", f"system:{sub}", t, session_id=session, cwd=cwd)
        if sub == "compact_boundary":
            meta = obj.get("compactMetadata") if isinstance(obj.get("compactMetadata"), dict) else {}
            text = "Conversation compacted"
            details = [f"{k} {meta[k]}" for k in ("trigger", "preTokens") if k in meta]
            if details:
                text += " (" + ", ".join(str(d) for d in details) + ")"
        else:
            text = obj.get("content") if isinstance(obj.get("content"), str) else ""
        rec = _record(obj, raw, "system", sub, [Block("text", text)] if text else [], session, cwd)
        return Parsed("message", sub, t, record=rec, session_id=session, cwd=cwd)
    if t in ("user", "assistant"):
        msg = obj.get("message")
        if not isinstance(msg, dict):
            return Parsed("reject", "missing_message", t, session_id=session, cwd=cwd)
        blocks = content_blocks(msg.get("content"))
        if t == "user":
            kind = user_kind(obj, blocks)
        else:
            kind = "message"
        rec = _record(obj, raw, t, kind, blocks, session, cwd)
        if t == "assistant":
            rec.api_id = _str(msg, "id")
            rec.model = _str(msg, "model")
        if not blocks:
            return Parsed("skip", f"empty:{t}", t, record=rec, session_id=session, cwd=cwd)
        return Parsed("message", kind, t, record=rec, session_id=session, cwd=cwd)
    return Parsed("skip", f"unknown:{t[:40]}", t, session_id=session, cwd=cwd)


def _record(obj: dict, raw: bytes, role: str, kind: str, blocks: list[Block], session: str | None,
            cwd: str | None) -> Record:
    """The line's Record; `session` and `cwd` are its `sessionId` and `cwd`, already read."""
    uuid = _str(obj, "uuid")
    synthetic = False
    if uuid is None:
        # Deterministic, so re-reading the same bytes is recognised as a duplicate.
        uuid = "line-" + hashlib.sha1(raw).hexdigest()[:32]
        synthetic = True
    ts = obj.get("timestamp")
    return Record(
        uuid=uuid,
        role=role,
        kind=kind,
        blocks=blocks,
        parent_uuid=_str(obj, "parentUuid"),
        session_id=session,
        is_sidechain=bool(obj.get("isSidechain")),
        agent_id=_str(obj, "agentId"),
        cwd=cwd,
        git_branch=_str(obj, "gitBranch"),
        version=_str(obj, "version"),
        timestamp=ts if isinstance(ts, str) else None,
        is_meta=bool(obj.get("isMeta")),
        synthetic_uuid=synthetic,
    )
