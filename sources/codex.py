"""Codex CLI rollouts: discovery on disk and defensive, incremental parsing of their JSON lines.

Layout: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<YYYY-MM-DDThh-mm-ss>-<uuid>.jsonl` (default
`~/.codex/sessions`); `discover(root)` finds `rollout-*.jsonl` anywhere below `root`.

Line format (codex-rs `RolloutLine`): `{"timestamp", "type", "payload"}` with `type` one of
`session_meta` (id, cwd, cli_version, originator, source, git, instructions), `turn_context` (cwd,
model, policies; one per turn, absent before 0.3x-0.40), `response_item` (what the model saw and
said: `message`, `reasoning`, `function_call` / `function_call_output` and `custom_tool_call` /
`custom_tool_call_output` paired by `call_id`, `local_shell_call`, `web_search_call`,
`ghost_snapshot`, ...), `event_msg` (UI events: `user_message`, `agent_message`,
`agent_reasoning`, `token_count`, `turn_aborted`, ...) and `compacted` (a compaction summary).
The older direct format (a bare SessionMeta object first, then bare response items, and
`{"record_type": "state"}` lines) is read too.

What each line becomes (exactly one `Parsed`, sources.model; `line_type` is the line's top-level
type, so the indexer's `lines` breakdown reads e.g. `{"event_msg": {"event_msg:token_count": 56}}`):

* stored (`message`): user and assistant `message` items (kind `message`), `reasoning` summaries
  (assistant, `thinking` blocks), tool calls (assistant, one `tool_use` block: the tool name plus
  its descriptive arguments, `TOOL_INPUT_FIELDS`; `apply_patch` lists the files it touches), tool
  outputs (user, kind `tool_result`, paired by `call_id`, named after their call, `is_error` from
  the exit code), `compacted` summaries (user, kind `compact_summary`);
* skipped, counted by kind: `session_meta` and `turn_context` (their cwd, model and version go onto
  the records), every `event_msg` (`event_msg:<type>`: they repeat the response items, or are UI
  bookkeeping), `developer`/`system` messages, reasoning with only encrypted content, ghost
  snapshots, and user messages made only of injected text (`injected:<what>`: the
  `<environment_context>`, AGENTS.md / `<user_instructions>` blocks Codex adds to a turn; injected
  items inside a message with real text are dropped from it);
* titles: `event_msg` `thread_name_updated` (kind `custom-title`);
* `unknown:<type>` only for a type this reader does not know (format drift); `reject` for what
  cannot be read (`malformed_json`, `not_an_object`, `missing_type`, `missing_payload`,
  `unparseable`).

Keys (Record.uuid): Codex lines have no ids, so each stored line's key is derived from its content
and the content stored before it in the file: key = H(previous key, line type, canonical payload),
seeded by the `session_meta` payload (a canonical UUID string, `synthetic_uuid` set). Timestamps are
not part of it: a resumed rollout (0.3x-0.4x) starts with its own `session_meta` and then a copy of
the original rollout's lines, original `session_meta` included, with new timestamps; the copied
lines therefore get the original lines' keys and are stored once, while lines that differ (and all
lines after them) get new keys. Genuinely repeated content ("continue" twice) differs by its
predecessors, so it is never mistaken for a copy. Only stored lines feed the chain, so skipped
lines a copy may drop or add do not break it. `parent_uuid` is the previous stored line's key.

Incremental reading: `line_parser(tf)` keeps the per-file state (session id, cwd (a Windows drive
letter upper-cased), model, version, key chain, pending calls by `call_id`); when the indexer
starts at a byte offset, the parser first reads the file's bytes before that offset to rebuild the
state, so keys do not depend on where a read started. Sub-agent rollouts (`session_meta.source.subagent.thread_spawn.parent_thread_id`) are
stored as sidechains of their parent session (agent_id = their own id).

Invariants: parsing never raises on any input; nothing here stores, logs or prints transcript text
(the indexer redacts every string before it is stored); image data is never kept, only a
placeholder `[image: image/png, N bytes]`; tool calls keep their name and a few descriptive
arguments, never whole inputs. Standard library only; never imports `consolidate`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid as uuidlib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from .model import CODEX, Block, LineParser, Parsed, Record, TranscriptFile, parse_guarded, str_field
from .render import DOC_FILE, canonical_json, data_url_placeholder, render_fields, written_doc

HARNESS = CODEX
FORMAT = "jsonl"

#: Descriptive tool-call arguments kept (in this order); the rest of the input is dropped.
TOOL_INPUT_FIELDS = (
    "justification", "description", "explanation", "command", "cmd", "workdir", "path", "file_path",
    "pattern", "query", "url", "prompt", "plan", "server", "tool",
)

#: `response_item` payload types this reader knows; the first group is stored.
STORED_ITEMS = frozenset({
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call", "image_generation_call",
    "tool_search_call", "tool_search_output",
})
SKIPPED_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary", "other"})

#: `event_msg` types Codex persists (codex-rs rollout policy, limited and extended modes) and some
#: older ones; all are skipped: the response items hold the same content.
EVENT_TYPES = frozenset({
    "user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
    "agent_reasoning_section_break", "token_count", "turn_aborted", "task_started", "task_complete",
    "turn_started", "turn_complete", "thread_name_updated", "context_compacted", "thread_rolled_back",
    "entered_review_mode", "exited_review_mode", "patch_apply_end", "image_generation_end",
    "item_completed", "plan_update", "error", "stream_error", "warning", "background_event",
    "guardian_assessment", "web_search_end", "exec_command_end", "mcp_tool_call_end",
    "view_image_tool_call", "collab_agent_spawn_end", "collab_agent_interaction_end",
    "collab_waiting_end", "collab_close_end", "collab_resume_end", "dynamic_tool_call_request",
    "dynamic_tool_call_response", "undo_completed", "shutdown_complete",
})

#: Injected text Codex puts into user turns: (prefix, kind). Matched on a text item's start.
INJECTED_PREFIXES = (
    ("<environment_context>", "environment_context"),
    ("<user_instructions>", "user_instructions"),
    ("# AGENTS.md instructions for ", "agents_md"),
    ("<INSTRUCTIONS>", "agents_md"),
    ("<permissions instructions>", "permissions"),
    ("<turn_aborted>", "turn_aborted"),
)

#: The VS Code extension wraps a prompt as `# Context from my IDE setup:` (active file, open tabs,
#: selection) then `## My request for Codex:` and the request: the context becomes an `attachment`
#: block, the request the message text.
IDE_CONTEXT_HEAD = "# Context from my IDE setup:"
IDE_REQUEST_MARK = "## My request for Codex:"

#: Calls remembered while waiting for their output (oldest forgotten first).
MAX_PENDING_CALLS = 1024

#: A line longer than this is not decoded when the state is rebuilt from a file's head (the
#: indexer rejects such lines as `line_too_long` without parsing them either).
MAX_REPLAY_LINE = 64 << 20

#: Bytes read at a time when the state is rebuilt from a file's head.
REPLAY_CHUNK = 8 << 20

_ROLLOUT_ID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl$")
_EXIT_CODE = re.compile(r"\A\s*Exit code:\s*(-?\d+)")
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.MULTILINE)



#: Codex's tool that writes files (a patch naming each file it adds or updates).
WRITE_TOOLS = frozenset({"apply_patch"})

def default_root() -> Path:
    """Codex's sessions folder: `$CODEX_HOME/sessions`, else `~/.codex/sessions`."""
    base = os.environ.get("CODEX_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".codex") / "sessions"


# ---------------------------------------------------------------------------------------------
# Discovery


def discover(root: Path) -> list[TranscriptFile]:
    """Every `rollout-*.jsonl` below `root` (any depth), sorted by path; one stat each, kept.

    `project` is the folder relative to `root` (`2025/09/16`), `session_hint` the session uuid at
    the end of the file name. Missing or unreadable folders give nothing; a file reached through
    several paths (symlinks, hard links) is listed once. Never raises."""
    out: list[TranscriptFile] = []
    seen: set[tuple[int, int]] = set()
    root_s = os.fspath(root)
    for dirpath, dirnames, filenames in os.walk(root_s, onerror=lambda _e: None):
        dirnames.sort()
        for name in sorted(filenames):
            if not (name.startswith("rollout-") and name.endswith(".jsonl")):
                continue
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen or not os.path.isfile(path):
                continue
            seen.add(key)
            m = _ROLLOUT_ID.search(name)
            rel = os.path.relpath(dirpath, root_s)
            out.append(TranscriptFile(Path(path), "main", "" if rel == "." else rel.replace(os.sep, "/"),
                                      m.group(1).lower() if m else None, None, st, harness=HARNESS))
    return out


# ---------------------------------------------------------------------------------------------
# Per-file state


@dataclass(slots=True)
class CodexState:
    """What a rollout's earlier lines tell about the later ones. Built fresh per file (seeded with
    the session id the file name gives) and advanced by `parse_line`, line by line, in file order."""

    session_id: str | None = None          # the rollout's own session (its first session_meta)
    parent_session: str | None = None      # sub-agent rollouts: the spawning session
    resumed_from: str | None = None        # the session of a later (copied) session_meta
    cwd: str | None = None
    version: str | None = None             # cli_version
    git_branch: str | None = None
    model: str | None = None               # from the latest turn_context
    chain: bytes = b""                     # key of the previous stored line (or the meta seed)
    last_uuid: str | None = None           # uuid of the previous stored line
    pending: OrderedDict[str, str] = field(default_factory=OrderedDict)   # call_id -> tool name
    metas: int = 0                         # session_meta lines seen

    def remember_call(self, call_id: str | None, name: str) -> None:
        if not call_id:
            return
        self.pending[call_id] = name
        self.pending.move_to_end(call_id)
        while len(self.pending) > MAX_PENDING_CALLS:
            self.pending.popitem(last=False)


def new_state(tf: TranscriptFile | None = None) -> CodexState:
    """A fresh state for `tf` (its file-name session id as the fallback session)."""
    return CodexState(session_id=tf.session_hint if tf is not None else None)


# ---------------------------------------------------------------------------------------------
# Parsing


def parse_line(raw: bytes, state: CodexState) -> Parsed:
    """One raw line (no trailing newline) to one Parsed, advancing `state`; never raises."""
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    parsed, decoded = parse_guarded(raw, lambda obj: _classify(obj, state))
    if not decoded:
        parsed.session_id, parsed.cwd = _session_of(state), state.cwd
        return parsed
    if parsed.session_id is None:
        parsed.session_id = _session_of(state)
    if parsed.cwd is None:
        parsed.cwd = state.cwd
    return parsed


class _LineReader:
    """`line_parser`'s callable: parses lines in file order and, when asked to start somewhere it
    has not read up to, reads the skipped bytes of the file first (see the module docstring)."""

    __slots__ = ("tf", "state", "next", "last")

    def __init__(self, tf: TranscriptFile) -> None:
        self.tf = tf
        self.state = new_state(tf)
        self.next = 0          # offset just past the last line parsed
        self.last = -1         # offset of the last line parsed

    def __call__(self, raw: bytes, offset: int) -> Parsed:
        try:
            if offset != self.next and not (self.last <= offset < self.next):
                if offset < self.next:        # re-read from earlier: start over
                    self.state, self.next, self.last = new_state(self.tf), 0, -1
                self._catch_up(offset)
            parsed = parse_line(raw, self.state)
            if offset >= self.last:
                self.last = offset
                self.next = max(self.next, offset + len(raw) + 1)
            return parsed
        except Exception:  # noqa: BLE001  (never raise into the indexer)
            return Parsed("reject", "unparseable")

    def _catch_up(self, offset: int) -> None:
        """Parse the complete lines in [self.next, offset) for their effect on the state only
        (read in chunks; a line longer than MAX_REPLAY_LINE is passed over, as the indexer does)."""
        remaining = offset - self.next
        if remaining > 0:
            try:
                with open(self.tf.path, "rb") as f:
                    f.seek(self.next)
                    rest, skipping = b"", False
                    while remaining > 0:
                        data = f.read(min(REPLAY_CHUNK, remaining))
                        if not data:
                            break
                        remaining -= len(data)
                        parts = (rest + data).split(b"\n")
                        rest = parts.pop()
                        for raw in parts:
                            if skipping:
                                skipping = False
                            elif len(raw) <= MAX_REPLAY_LINE:
                                parse_line(raw, self.state)
                        if len(rest) > MAX_REPLAY_LINE:
                            rest, skipping = b"", True
            except OSError:
                pass
        self.next = offset
        self.last = offset


def line_parser(tf: TranscriptFile) -> LineParser:
    """The reader interface (sources.model): a parser holding `tf`'s state, called with each raw
    line and its byte offset; exactly one Parsed per line; never raises."""
    return _LineReader(tf)


def _session_of(state: CodexState) -> str | None:
    return state.parent_session or state.session_id


def _classify(obj: dict, state: CodexState) -> Parsed:
    t = obj.get("type")
    payload = obj.get("payload")
    ts = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None
    if "payload" not in obj:
        # The older direct format: a bare SessionMeta first line, bare response items.
        if obj.get("record_type") == "state":
            return Parsed("skip", "legacy:state", "legacy:state")
        if t is None and isinstance(obj.get("id"), str) and "timestamp" in obj:
            return _session_meta(obj, state)
        if isinstance(t, str) and (t in STORED_ITEMS or t in SKIPPED_ITEMS):
            return _response_item(obj, None, state)
    if not isinstance(t, str) or not t:
        return Parsed("reject", "missing_type")
    if not isinstance(payload, dict):
        return Parsed("reject", "missing_payload", t[:40])
    if t == "session_meta":
        return _session_meta(payload, state)
    if t == "turn_context":
        cwd, model = _cwd(payload), str_field(payload, "model")
        state.cwd = cwd or state.cwd
        state.model = model or state.model
        return Parsed("skip", "turn_context", t)
    if t == "response_item":
        return _response_item(payload, ts, state)
    if t == "event_msg":
        return _event(payload, state)
    if t == "compacted":
        text = payload.get("message")
        if not isinstance(text, str) or not text.strip():
            return Parsed("skip", "compacted:empty", t)
        return _stored(state, t, payload, "user", "compact_summary", [Block("text", text)], ts)
    return Parsed("skip", f"unknown:{t[:40]}", t[:40])


def _session_meta(payload: dict, state: CodexState) -> Parsed:
    sid = str_field(payload, "id")
    state.metas += 1
    if state.metas == 1:
        state.session_id = sid or state.session_id
        state.cwd = _cwd(payload)
        state.version = str_field(payload, "cli_version")
        git = payload.get("git")
        if isinstance(git, dict):
            state.git_branch = str_field(git, "branch")
        state.parent_session = _spawning_session(payload.get("source"))
    elif sid and sid != state.session_id:
        state.resumed_from = sid
        state.cwd = state.cwd or _cwd(payload)
    # Every session_meta (the rollout's own, and the one a resumed copy repeats) seeds the key chain.
    state.chain = hashlib.sha1(b"session_meta\0" + canonical_json(payload)).digest()
    state.last_uuid = None
    return Parsed("skip", "session_meta", "session_meta", session_id=_session_of(state),
                  cwd=state.cwd)


def _cwd(payload: dict) -> str | None:
    """`payload.cwd`, a Windows drive letter upper-cased (Codex writes `c:\\...` from the VS Code
    extension and `C:\\...` from the CLI for the same folder)."""
    cwd = str_field(payload, "cwd")
    if cwd and len(cwd) > 2 and cwd[1] == ":" and cwd[2] in "\\/" and "a" <= cwd[0] <= "z":
        cwd = cwd[0].upper() + cwd[1:]
    return cwd


def _spawning_session(source: object) -> str | None:
    """`source.subagent.thread_spawn.parent_thread_id` of a sub-agent rollout, else None."""
    if not isinstance(source, dict):
        return None
    sub = source.get("subagent") or source.get("sub_agent")
    if not isinstance(sub, dict):
        return None
    spawn = sub.get("thread_spawn")
    if isinstance(spawn, dict):
        return str_field(spawn, "parent_thread_id")
    return None


def _stored(state: CodexState, line_type: str, payload: dict, role: str, kind: str, blocks: list[Block],
            ts: str | None) -> Parsed:
    """A stored line: its content key, chained on the previous stored line's (module docstring)."""
    digest = hashlib.sha1(state.chain + b"\0" + line_type.encode() + b"\0" + canonical_json(payload)).digest()
    key = str(uuidlib.UUID(bytes=digest[:16]))
    parent = state.last_uuid
    state.chain, state.last_uuid = digest, key
    sidechain = state.parent_session is not None
    rec = Record(
        uuid=key,
        role=role,
        kind=kind,
        blocks=blocks,
        parent_uuid=parent,
        session_id=_session_of(state),
        is_sidechain=sidechain,
        agent_id=state.session_id if sidechain else None,
        cwd=state.cwd,
        git_branch=state.git_branch,
        version=state.version,
        timestamp=ts,
        model=state.model if role == "assistant" else None,
        synthetic_uuid=True,
    )
    return Parsed("message", kind, line_type, record=rec, session_id=rec.session_id, cwd=state.cwd)


# ---------------------------------------------------------------------------------------------
# response_item


def _response_item(p: dict, ts: str | None, state: CodexState) -> Parsed:
    lt = "response_item"
    pt = p.get("type")
    if not isinstance(pt, str) or not pt:
        return Parsed("reject", "missing_type", lt)
    if pt in SKIPPED_ITEMS:
        return Parsed("skip", f"response_item:{pt}", lt)
    if pt not in STORED_ITEMS:
        return Parsed("skip", f"unknown:response_item:{pt[:40]}", lt)
    if pt == "message":
        return _message(p, ts, state)
    if pt == "reasoning":
        texts = _texts(p.get("summary")) + _texts(p.get("content"))
        if not texts:
            return Parsed("skip", "reasoning:encrypted", lt)
        return _stored(state, lt, p, "assistant", "message", [Block("thinking", "\n\n".join(texts))], ts)
    if pt in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call",
              "image_generation_call", "tool_search_call"):
        name, text = _call(pt, p)
        call_id = str_field(p, "call_id") or str_field(p, "id")
        state.remember_call(call_id, name)
        return _stored(state, lt, p, "assistant", "message",
                       [Block("tool_use", text, tool_name=name, tool_use_id=call_id)], ts)
    # function_call_output | custom_tool_call_output | tool_search_output
    call_id = str_field(p, "call_id")
    name = state.pending.pop(call_id, None) if call_id else None
    text, is_error = _output(p.get("output") if pt != "tool_search_output" else _tool_list(p))
    return _stored(state, lt, p, "user", "tool_result",
                   [Block("tool_result", text, tool_name=name or str_field(p, "name"), tool_use_id=call_id,
                          is_error=is_error)], ts)


def _texts(items: object) -> list[str]:
    """The non-empty `text` of each item of a summary / content list (a bare string counts too)."""
    if isinstance(items, str):
        return [items] if items.strip() else []
    if not isinstance(items, list):
        return []
    out = []
    for it in items:
        text = it.get("text") if isinstance(it, dict) else it
        if isinstance(text, str) and text.strip():
            out.append(text)
    return out


def _injected(text: str) -> str | None:
    head = text.lstrip()[:64]
    for prefix, kind in INJECTED_PREFIXES:
        if head.startswith(prefix):
            return kind
    return None


def _message(p: dict, ts: str | None, state: CodexState) -> Parsed:
    lt = "response_item"
    role = p.get("role")
    if role in ("developer", "system"):
        return Parsed("skip", f"response_item:message:{role}", lt)
    if role not in ("user", "assistant"):
        return Parsed("skip", f"unknown:response_item:message:{str(role)[:40]}", lt)
    content = p.get("content")
    if isinstance(content, str):
        content = [{"type": "input_text" if role == "user" else "output_text", "text": content}]
    blocks: list[Block] = []
    injected: list[str] = []
    for item in content if isinstance(content, list) else []:
        if not isinstance(item, dict):
            continue
        it = item.get("type")
        text = item.get("text") if isinstance(item.get("text"), str) else None
        if it in ("input_text", "output_text", "text", "refusal") or (it is None and text is not None):
            if it == "refusal":
                text = item.get("refusal") if isinstance(item.get("refusal"), str) else text
            if not text or not text.strip():
                continue
            kind = _injected(text) if role == "user" else None
            if kind is not None:
                injected.append(kind)
                continue
            blocks.extend(_ide_split(text) if role == "user" else [Block("text", text)])
        elif it in ("input_image", "output_image", "image"):
            blocks.append(Block("image", data_url_placeholder(item.get("image_url") or item.get("url"))))
        elif it in ("input_file", "file"):
            name = item.get("filename") if isinstance(item.get("filename"), str) else "file"
            blocks.append(Block("document", f"[document: {name}]"))
        else:
            blocks.append(Block("other", f"[{str(it)[:40] or 'unknown'} item]"))
    if not blocks:
        if injected:
            return Parsed("skip", f"injected:{injected[0]}", lt)
        return Parsed("skip", f"empty:{role}", lt)
    return _stored(state, lt, p, role, "message", blocks, ts)


def _ide_split(text: str) -> list[Block]:
    """The VS Code extension's IDE context as an `attachment` block, the request as the text."""
    if not text.lstrip().startswith(IDE_CONTEXT_HEAD):
        return [Block("text", text)]
    head, mark, request = text.partition(IDE_REQUEST_MARK)
    if not mark or not request.strip():
        return [Block("text", text)]
    context = head.strip()
    out = [Block("attachment", context)] if context != IDE_CONTEXT_HEAD else []
    out.append(Block("text", request.strip()))
    return out


def _call(pt: str, p: dict) -> tuple[str, str]:
    """(tool name, rendering of its descriptive arguments) of a call item."""
    if pt == "function_call":
        name = str_field(p, "name") or "?"
        args = _json_args(p.get("arguments"))
        return name, _render_args(name, args)
    if pt == "custom_tool_call":
        name = str_field(p, "name") or "?"
        raw = p.get("input")
        if name in WRITE_TOOLS and isinstance(raw, str):
            return name, _patch_files(raw)
        args = _json_args(raw)
        if isinstance(args, dict):
            return name, _render_args(name, args)
        return name, f"input: {raw}" if isinstance(raw, str) and raw.strip() else ""
    if pt == "local_shell_call":
        action = p.get("action") if isinstance(p.get("action"), dict) else {}
        return "local_shell", _render_args("shell", {"command": action.get("command"),
                                                     "workdir": action.get("working_directory")})
    if pt == "web_search_call":
        action = p.get("action") if isinstance(p.get("action"), dict) else {}
        return "web_search", render_fields(action, ("query", "url", "pattern"))
    if pt == "image_generation_call":
        prompt = p.get("revised_prompt")
        return "image_generation", f"prompt: {prompt}" if isinstance(prompt, str) and prompt else ""
    return "tool_search", _render_args("tool_search", _json_args(p.get("arguments")))


def _json_args(value: object) -> object:
    """A call's arguments: a JSON string decoded (left as it is when it is not JSON)."""
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("{", "["):
            try:
                return json.loads(s)
            except (ValueError, RecursionError):
                return value
    return value


def _render_args(name: str, args: object) -> str:
    if isinstance(args, dict):
        cmd = args.get("command")
        if isinstance(cmd, list):
            args = dict(args, command=_command_text(cmd))
        if name == "update_plan" and isinstance(args.get("plan"), list):
            args = dict(args, plan=_plan_text(args["plan"]))
        return render_fields(args, TOOL_INPUT_FIELDS)
    if isinstance(args, str) and args.strip():
        return f"input: {args}"
    return ""


def _command_text(argv: list) -> str:
    """A shell call's argv as one command line (`bash -lc "X"` shown as X)."""
    parts = [a for a in argv if isinstance(a, str)]
    if len(parts) >= 3 and parts[-2] in ("-lc", "-c", "/c", "-Command", "-command"):
        return parts[-1]
    return " ".join(parts)


def _plan_text(plan: list) -> str:
    lines = []
    for step in plan:
        if isinstance(step, dict) and isinstance(step.get("step"), str):
            lines.append(f"[{step.get('status') or '?'}] {step['step']}")
    return "\n".join(lines)


def _patch_files(patch: str) -> str:
    """The files a patch touches (`add: path`, ...); then, for each documentation file it writes
    into, `file_path:` that file and what the patch adds to it (`render.written_doc`), one group
    per file in patch order (a file patched twice: one group with both additions)."""
    files = [f"{action.lower()}: {path.strip()}" for action, path in _PATCH_FILE.findall(patch)]
    if not files:
        return "input: apply_patch"
    added: dict[str, list[str]] = {}
    sections = _PATCH_FILE.split(patch)   # [head, action, path, body, action, path, body, ...]
    for i in range(1, len(sections) - 2, 3):
        path, body = sections[i + 1].strip(), sections[i + 2]
        if sections[i] != "Delete" and DOC_FILE.search(path):
            added.setdefault(path, []).append("\n".join(ln[1:] for ln in body.splitlines() if ln.startswith("+")))
    for path, texts in added.items():
        written = written_doc(path, texts)
        if written:
            files += [f"file_path: {path}", written]
    return "\n".join(files)


def _tool_list(p: dict) -> object:
    tools = p.get("tools")
    if isinstance(tools, list):
        names = [t.get("name") for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
        return "tools: " + ", ".join(names) if names else ""
    return ""


def _output(out: object) -> tuple[str, bool]:
    """(text, is_error) of a call output: a string (often JSON `{"output", "metadata":
    {"exit_code"}}`), a `{content, success}` object or a list of content items."""
    if out is None:
        return "", False
    if isinstance(out, str):
        s = out.lstrip()
        if s.startswith("{"):
            try:
                obj = json.loads(s)
            except (ValueError, RecursionError):
                obj = None
            if isinstance(obj, dict) and ("output" in obj or "content" in obj):
                return _output(obj)
        m = _EXIT_CODE.match(out)
        return out, bool(m and m.group(1) != "0")
    if isinstance(out, dict):
        meta = out.get("metadata") if isinstance(out.get("metadata"), dict) else {}
        code = meta.get("exit_code")
        inner = out.get("output") if "output" in out else out.get("content")
        text, err = _output(inner) if not isinstance(inner, str) else (inner, False)
        failed = out.get("success") is False or (isinstance(code, int) and code != 0)
        if failed and not text.strip() and isinstance(code, int):
            text = f"[exit code {code}]"
        return text, err or failed
    if isinstance(out, list):
        parts = []
        for item in out:
            if isinstance(item, str):
                parts.append(item)
            elif isinstance(item, dict):
                if isinstance(item.get("text"), str):
                    parts.append(item["text"])
                elif item.get("type") in ("input_image", "output_image", "image"):
                    parts.append(data_url_placeholder(item.get("image_url") or item.get("url")))
                else:
                    parts.append(f"[{str(item.get('type') or 'unknown')[:40]}]")
        return "\n".join(parts), False
    return str(out), False


# ---------------------------------------------------------------------------------------------
# event_msg


def _event(p: dict, state: CodexState) -> Parsed:
    lt = "event_msg"
    et = p.get("type")
    if not isinstance(et, str) or not et:
        return Parsed("reject", "missing_type", lt)
    if et == "thread_name_updated":
        name = str_field(p, "thread_name") or str_field(p, "name")
        if name:
            return Parsed("title", "custom-title", lt, title=name, session_id=_session_of(state))
    if et in EVENT_TYPES:
        return Parsed("skip", f"event_msg:{et}", lt)
    return Parsed("skip", f"unknown:event_msg:{et[:40]}", lt)
