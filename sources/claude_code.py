"""Claude Code transcripts: discovery on disk and defensive parsing of their JSON lines.

Layout (see ../shared/CLAUDE_CODE.md): `<projects>/<project>/<session>.jsonl` (main sessions),
`<projects>/<project>/<session>/subagents/agent-<id>.jsonl` (v2.1+ sub-agents and compaction runs)
and `<projects>/<project>/agent-<id>.jsonl` (the v2.0 layout). `<project>` is the launch directory
with non-alphanumerics replaced, which is not reversible: the agent comes from the `cwd` field.
Default root: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`.

`parse_line(raw)` turns one raw line (bytes, without the newline) into exactly one `Parsed`
(sources.model): `message` (a `user`/`assistant` line, a stored `system` line, a stored
`attachment`), `title` (`summary`, `custom-title`, `ai-title`), `skip` (a known line deliberately
not stored, counted by kind) or `reject`. Every line type and attachment subtype Claude Code
1.0 to 2.1 writes is named (`LINE_TYPES`, `ATTACHMENTS`); only a type outside them is counted as
`unknown:<type>` (`unknown:attachment:<subtype>` for an attachment), so `unknown:*` means format drift.

2.1 attachments (`{"type": "attachment", "attachment": {"type": <subtype>, ...}}`), accounted under
the line type `attachment:<subtype>`:
* `queued_command` with `commandMode` `prompt` (or none) typed by a person (origin `human` or none,
  not isMeta): a human turn, stored as a user `message` (Claude Code writes no `user` line for what
  the user typed while the agent worked); any other queued command is stored as `meta`
  (`task-notification` mode: `notification`);
* `hook_additional_context` (context other plugins' hooks injected) and `nested_memory` (the contents
  of a CLAUDE.md): stored as kind `attachment` (one block of type `attachment`), never a passage;
* every other known subtype is skipped and counted as `attachment:<subtype>`.

Invariants: parsing never raises on any input; nothing here stores, logs or prints transcript text
(the indexer redacts every string before it is stored); image data is never kept, only a
placeholder `[image: media_type, N bytes]`; a tool_use keeps its name and a few descriptive input
fields (`TOOL_INPUT_FIELDS`), never the whole input. Standard library only.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .model import (CLAUDE_CODE, Block, LineParser, Parsed, Record, TranscriptFile, parse_guarded,
                    media_placeholder, str_field)
from .render import render_fields, written_doc

HARNESS = CLAUDE_CODE
FORMAT = "jsonl"

#: Marker our own claude-cli writer puts first in its prompt; sessions that start with it are ours.
OWN_SESSION_MARKER = "[reverie-consolidation]"

#: Line types that carry no knowledge; skipped and counted under their own name.
#: `queue-operation` holds the same text as the `queued_command` attachment (stored from there);
#: `last-prompt` repeats the session's last prompt; `mode` / `permission-mode` are session settings;
#: 2.1.3xx's `api-request*` lines record the model requests (`api-request-blob` holds a whole request
#: body: system prompt, CLAUDE.md, hook context, anything pasted), `cost-state` / `tools-used` /
#: `atis-latch` are accounting: none is ever stored.
SKIPPED_TYPES = frozenset({"progress", "file-history-snapshot", "queue-operation", "last-prompt", "mode",
                           "permission-mode", "api-request", "api-request-blob", "api-request-shape",
                           "atis-latch", "cost-state", "tools-used"})

#: Every line type this reader knows (anything else is `unknown:<type>`).
LINE_TYPES = frozenset({"user", "assistant", "system", "summary", "custom-title", "ai-title", "attachment"}
                       | SKIPPED_TYPES)

#: System subtypes stored as messages (role `system`); every other subtype is skipped and counted.
STORED_SYSTEM_SUBTYPES = frozenset({"compact_boundary", "local_command"})

#: Attachment subtypes stored (kind `attachment`): injected context, never memory of its own.
STORED_ATTACHMENTS = frozenset({"hook_additional_context", "nested_memory"})

#: Attachment subtypes skipped and counted (`attachment:<subtype>`): hook bookkeeping, reminders the
#: harness adds to a turn, files and listings it attaches (their contents are on disk or in tool
#: results already).
SKIPPED_ATTACHMENTS = frozenset({
    "hook_success", "hook_non_blocking_error", "hook_blocking_error", "hook_error_during_execution",
    "hook_cancelled", "hook_stopped_continuation", "hook_system_message", "hook_permission_decision",
    "async_hook_response",
    "task_reminder", "todo_reminder", "todo", "critical_system_reminder", "plan_mode", "plan_mode_exit",
    "plan_mode_reentry", "plan_file_reference",
    "file", "directory", "edited_text_file", "edited_image_file", "compact_file_reference", "pdf_reference",
    "selected_lines_in_ide", "opened_file_in_ide", "diagnostics", "new_diagnostics", "mcp_resource",
    "skill_listing", "invoked_skills", "deferred_tools_delta", "date_change", "output_style",
    "command_permissions", "agent_mention", "token_usage", "budget_usd", "output_token_usage",
    # 2.1.3xx: listings and environment snapshots the harness attaches to a turn
    "agent_listing_delta", "date", "environment", "model", "prompt_snapshot", "remote_session_change",
    "session_context",
})

#: Every attachment subtype this reader knows.
ATTACHMENTS = STORED_ATTACHMENTS | SKIPPED_ATTACHMENTS | {"queued_command"}

#: tool_use input fields kept (in this order); the rest of the input is dropped.
TOOL_INPUT_FIELDS = (
    "description", "command", "file_path", "notebook_path", "path", "pattern", "glob", "query",
    "url", "prompt", "subagent_type", "skill",
)


#: Tools that write a file; into a documentation file, what they write is kept (`render.written_doc`).
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit"})


def default_root() -> Path:
    """Claude Code's projects folder: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`."""
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "projects"


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


def render_tool_input(name: str, data: object) -> str:
    """The kept fields of a tool_use input, one `field: value` per line, whole: the indexer clips the
    block only after redacting it (`index.tool_result_cap`), since a clip made first could drop the
    context that marks a value in the part it keeps as a secret. A write into a documentation file
    (`WRITE_TOOLS`, `render.DOC_FILE`) ends with what it wrote (`content: ...`)."""
    if not isinstance(data, dict):
        return ""
    text = render_fields(data, TOOL_INPUT_FIELDS)
    lines = [text] if text else []
    if name in WRITE_TOOLS:
        edits = data.get("edits") if isinstance(data.get("edits"), list) else []
        written = written_doc(data.get("file_path"), [data.get("content"), data.get("new_string")]
                              + [e.get("new_string") for e in edits if isinstance(e, dict)])
        if written:
            lines.append(written)
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




# ---------------------------------------------------------------------------------------------
# Parsing


def parse_line(raw: bytes) -> Parsed:
    """One raw line (no trailing newline) to one Parsed; never raises."""
    return parse_guarded(raw, lambda obj: parse_object(obj, raw))[0]


def _parse_at(raw: bytes, offset: int) -> Parsed:
    return parse_line(raw)


def line_parser(tf: TranscriptFile) -> LineParser:
    """The reader interface (sources.model): Claude Code lines need no state, so every file shares
    `parse_line` (their uuids are the lines' own, or derived from the line's bytes)."""
    return _parse_at


def parse_object(obj: dict, raw: bytes = b"") -> Parsed:
    """Classify one decoded transcript line."""
    t = obj.get("type")
    if not isinstance(t, str) or not t:
        return Parsed("reject", "missing_type")
    session = str_field(obj, "sessionId")
    cwd = str_field(obj, "cwd")
    if t in SKIPPED_TYPES:
        return Parsed("skip", t, t, session_id=session, cwd=cwd)
    if t == "summary":
        title, leaf = str_field(obj, "summary"), str_field(obj, "leafUuid")
        if not title:
            return Parsed("reject", "missing_summary", t)
        return Parsed("title", "summary", t, title=title, leaf_uuid=leaf, session_id=session)
    if t == "custom-title":
        title = str_field(obj, "customTitle") or str_field(obj, "title")
        if not title:
            return Parsed("reject", "missing_title", t)
        return Parsed("title", "custom-title", t, title=title, session_id=session)
    if t == "ai-title":
        title = str_field(obj, "aiTitle") or str_field(obj, "title")
        if not title:
            return Parsed("reject", "missing_title", t)
        return Parsed("title", "ai-title", t, title=title, session_id=session)
    if t == "system":
        return _system(obj, raw, session, cwd)
    if t == "attachment":
        return _attachment(obj, raw, session, cwd)
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
            rec.api_id = str_field(msg, "id")
            rec.model = str_field(msg, "model")
        if not blocks:
            return Parsed("skip", f"empty:{t}", t, record=rec, session_id=session, cwd=cwd)
        return Parsed("message", kind, t, record=rec, session_id=session, cwd=cwd)
    return Parsed("skip", f"unknown:{t[:40]}", t, session_id=session, cwd=cwd)


def _system(obj: dict, raw: bytes, session: str | None, cwd: str | None) -> Parsed:
    t = "system"
    sub = str_field(obj, "subtype")
    if sub is None:
        # v1 hook and status messages: no subtype, a `level` (info, warning, error, suggestion)
        level = str_field(obj, "level")
        return Parsed("skip", f"system:{level or 'untyped'}", t, session_id=session, cwd=cwd)
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


def _plain_text(value: object, depth: int = 0) -> str:
    """The text inside an attachment field: a string, a list of strings or content blocks, or an
    object holding `content` / `text` / `prompt` (a nested_memory's `{path, content}`)."""
    if depth > 4 or value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict) and item.get("type") in ("image", "document"):
                parts.append(media_placeholder(str(item.get("type")), item.get("source")))
            else:
                parts.append(_plain_text(item, depth + 1))
        return "\n".join(p for p in parts if p)
    if isinstance(value, dict):
        for key in ("content", "text", "prompt"):
            if key in value:
                return _plain_text(value[key], depth + 1)
    return ""


def _attachment(obj: dict, raw: bytes, session: str | None, cwd: str | None) -> Parsed:
    att = obj.get("attachment")
    if not isinstance(att, dict):
        return Parsed("reject", "missing_attachment", "attachment", session_id=session, cwd=cwd)
    sub = str_field(att, "type") or "untyped"
    line_type = f"attachment:{sub[:40]}"
    if sub not in ATTACHMENTS:
        return Parsed("skip", f"unknown:{line_type}", line_type, session_id=session, cwd=cwd)
    if sub in SKIPPED_ATTACHMENTS:
        return Parsed("skip", line_type, line_type, session_id=session, cwd=cwd)
    if sub == "queued_command":
        prompt = att.get("prompt")
        blocks = content_blocks(prompt) if isinstance(prompt, (str, list)) else []
        mode = str_field(att, "commandMode") or "prompt"
        origin = att.get("origin")
        human = (mode == "prompt" and not att.get("isMeta") and not obj.get("isMeta")
                 and (origin is None or (isinstance(origin, dict) and origin.get("kind") in (None, "human"))))
        kind = "message" if human else ("notification" if mode == "task-notification" else "meta")
        if human:
            kind = user_kind({}, blocks)    # a queued `/command` is a command, a notification one
    else:   # STORED_ATTACHMENTS
        text = _plain_text(att.get("content"))
        where = str_field(att, "path") or str_field(att, "displayPath")
        if where is None and isinstance(att.get("content"), dict):
            where = str_field(att["content"], "path")
        label = str_field(att, "hookName") or where
        head = f"[{sub}{': ' + label if label else ''}]"
        blocks = [Block("attachment", f"{head}\n{text}")] if text.strip() else []
        kind = "attachment"
    rec = _record(obj, raw, "user", kind, blocks, session, cwd)
    if not blocks:
        return Parsed("skip", f"empty:{line_type}", line_type, record=rec, session_id=session, cwd=cwd)
    return Parsed("message", kind, line_type, record=rec, session_id=session, cwd=cwd)


def _record(obj: dict, raw: bytes, role: str, kind: str, blocks: list[Block], session: str | None,
            cwd: str | None) -> Record:
    """The line's Record; `session` and `cwd` are its `sessionId` and `cwd`, already read."""
    uuid = str_field(obj, "uuid")
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
        parent_uuid=str_field(obj, "parentUuid"),
        session_id=session,
        is_sidechain=bool(obj.get("isSidechain")),
        agent_id=str_field(obj, "agentId"),
        cwd=cwd,
        git_branch=str_field(obj, "gitBranch"),
        version=str_field(obj, "version"),
        timestamp=ts if isinstance(ts, str) else None,
        is_meta=bool(obj.get("isMeta")),
        synthetic_uuid=synthetic,
    )
