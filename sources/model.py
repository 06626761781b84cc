"""The normalized values every transcript reader yields, and the reader interface.

One module per harness (`sources.claude_code`, `sources.codex`, `sources.gemini`) turns that
harness's files into the same values: `TranscriptFile` (a file found on disk), `Parsed` (the
outcome of one line / one document entry) holding a `Record` (one message: role, kind, blocks,
timestamps, cwd, session id, sub-agent) made of `Block`s (text, thinking, tool calls and results).
The indexer (`reverie.consolidate.index`) consumes only these values; `sources` never imports
`consolidate` (standard library only).

Reader interface (each harness module exposes):

    HARNESS: str                          # "claude-code" | "codex" | "gemini" (stored on conversations)
    FORMAT: str                           # "jsonl" (appended lines) | "document" (one JSON per file)
    default_root() -> Path                # where the harness keeps its sessions (env vars honoured)
    discover(root: Path) -> list[TranscriptFile]   # recursive; one stat per file kept on the result;
                                          # never raises (missing root -> []); each with .harness set
    FORMAT == "jsonl":
      line_parser(tf: TranscriptFile) -> Callable[[bytes, int], Parsed]
          A parser for the lines of `tf`: called with each complete raw line (no newline) and the
          byte offset the line starts at, in file order, starting at any offset (the indexer
          resumes at its watermark: a reader that needs state from the file's head, e.g. Codex's
          `session_meta`, reads it itself when the parser is made). Returns exactly one Parsed per
          line; never raises. Record.uuid must be stable (the same line gives the same uuid on a
          re-read, so a replaced or truncated file is deduplicated), e.g. derived from the session
          id and the line's bytes or offset; set Record.synthetic_uuid when it is derived.
    FORMAT == "document":
      parse_document(tf: TranscriptFile) -> Document
          The whole file, re-read by the indexer when its size or mtime change; entries already
          stored are recognised by Record.uuid (stable per message), so re-reads are idempotent.
          `Document.session_id` dedupes a session that appears under two paths (the same session
          id and message uuids: the second copy's entries are duplicates). `Document.cwd` (or
          each entry's) routes the session to its agent; without one, `Document.project_hash`
          may name a known agent's folder. Never raises: an unreadable or malformed file gives
          a Document with one reject Parsed. Titles are `title` entries (Parsed outcome).

Parsed outcomes (accounting: every line / entry is exactly one of them, counted by `kind`):

    message   a stored message, `record` set (`kind` = the record's kind)
    title     a session title (`kind` = its source: summary | custom-title | ai-title; `title`)
    skip      deliberately not stored, counted by kind (`progress`, `system:turn_duration`, ...);
              `unknown:<type>` is reserved for real format drift (a type the reader does not know)
    reject    could not be read, counted by reason (`malformed_json`, `not_an_object`, ...)

Invariants: nothing here stores, logs or prints transcript text (the indexer redacts every string
before it is stored); readers never raise on any input; image data is never kept, only a
placeholder (`media_placeholder`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

#: Harness names (the `harness` column of conversations).
CLAUDE_CODE = "claude-code"
CODEX = "codex"
GEMINI = "gemini"
HARNESSES = (CLAUDE_CODE, CODEX, GEMINI)


@dataclass(slots=True)
class Block:
    """One content block of a message, text not yet redacted."""

    type: str                      # text | thinking | tool_use | tool_result | image | document | attachment | other
    text: str
    tool_name: str | None = None
    tool_use_id: str | None = None   # pairs a tool_result with its tool_use (Codex: call_id)
    is_error: bool = False
    original_size: int | None = None   # set by the indexer: characters before clipping
    clipped: bool = False


@dataclass(slots=True)
class Record:
    """One stored message (a Claude Code `user` / `assistant` / stored `system` line, a Codex
    response item, a Gemini message)."""

    uuid: str
    role: str                      # user | assistant | system
    kind: str                      # see KINDS in consolidate.store
    blocks: list[Block]
    parent_uuid: str | None = None
    session_id: str | None = None
    api_id: str | None = None      # lines sharing one api_id in a conversation merge into one message
    is_sidechain: bool = False
    agent_id: str | None = None    # sub-agent id
    cwd: str | None = None
    git_branch: str | None = None
    version: str | None = None     # the harness version that wrote it
    timestamp: str | None = None   # ISO-8601
    model: str | None = None
    is_meta: bool = False
    synthetic_uuid: bool = False   # the line had no uuid; one was derived


@dataclass(slots=True)
class Parsed:
    """The outcome of one line (or one document entry); see the module docstring."""

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
    project: str                   # the folder that groups it (Claude: project folder; Codex: date folder)
    session_hint: str | None       # main: the session id when the path tells it; subagent: the parent session
    parent_path: Path | None = None  # subagent: the parent session's main file (may not exist)
    stat: os.stat_result | None = field(default=None, repr=False)
    harness: str = CLAUDE_CODE


@dataclass(slots=True)
class Document:
    """A whole-file transcript (Gemini CLI): its entries in order, accounted like lines."""

    session_id: str | None
    entries: list[Parsed]
    cwd: str | None = None
    title: str | None = None
    #: Gemini CLI's `projectHash` (sha256 hex of the project root): when `cwd` is unknown, the
    #: indexer gives the session to the registered agent whose directory hashes to it.
    project_hash: str | None = None


#: A JSONL reader's per-file line parser: (raw line without newline, its byte offset) -> Parsed.
LineParser = Callable[[bytes, int], Parsed]


# ---------------------------------------------------------------------------------------------
# Helpers shared by the readers


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
        media = source.get("media_type") or source.get("mimeType") or source.get("type") or "unknown"
        if source.get("type") == "base64" or "data" in source:
            return f"[{kind}: {media}, {_b64_size(source.get('data'))} bytes]"
        if source.get("type") == "url":
            return f"[{kind}: url {source.get('url', '')}]"
        return f"[{kind}: {media}]"
    return f"[{kind}]"


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


def without_surrogates(value: object) -> tuple[object, bool]:
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
            v, c = without_surrogates(v)
            out_list.append(v)
            changed = changed or c
        return out_list, changed
    if isinstance(value, dict):
        changed = False
        out_dict = {}
        for k, v in value.items():
            k, ck = without_surrogates(k)
            v, cv = without_surrogates(v)
            out_dict[k] = v
            changed = changed or ck or cv
        return out_dict, changed
    return value, False


def parse_guarded(raw: bytes, parse: "Callable[[dict], Parsed]") -> tuple[Parsed, bool]:
    """One JSONL line through a reader's `parse(obj)`: the line decoded (`decode_object`), a
    format nobody foresaw (any exception of `parse`) a `reject` `unparseable` under the line's
    type, `repaired` / `surrogates` set. Returns (parsed, decoded): `decoded` is False when the line
    never became an object (the early skip or reject). Never raises."""
    obj, early, repaired, surrogates = decode_object(raw)
    if obj is None:
        assert early is not None
        return early, False
    try:
        parsed = parse(obj)
    except Exception:  # noqa: BLE001  (defensive: a format we did not foresee must not stop a run)
        t = obj.get("type")
        parsed = Parsed("reject", "unparseable", t if isinstance(t, str) else "?")
    parsed.repaired = repaired
    parsed.surrogates = surrogates
    return parsed, True


def decode_object(raw: bytes) -> tuple[dict | None, Parsed | None, bool, bool]:
    """Decode one JSONL line to a dict: (obj, None, repaired, surrogates) or (None, reject, ...).

    Blank lines give a `skip` Parsed of kind `blank`; undecodable ones `reject` `malformed_json`;
    non-objects `reject` `not_an_object`. Never raises."""
    if not raw.strip():
        return None, Parsed("skip", "blank", "blank"), False, False
    try:
        obj, repaired = decode_line(raw)
    except (ValueError, RecursionError):
        return None, Parsed("reject", "malformed_json"), False, False
    if not isinstance(obj, dict):
        return None, Parsed("reject", "not_an_object", repaired=repaired), repaired, False
    surrogates = False
    if b"\\ud" in raw or b"\\uD" in raw:     # a surrogate escape may be there: one C-level scan each
        try:
            fixed, surrogates = without_surrogates(obj)
        except RecursionError:
            return None, Parsed("reject", "malformed_json"), repaired, False
        obj = fixed  # type: ignore[assignment]
    return obj, None, repaired, surrogates  # type: ignore[return-value]


def str_field(obj: dict, key: str) -> str | None:
    """`obj[key]` when it is a non-empty string, else None."""
    v = obj.get(key)
    return v if isinstance(v, str) and v else None
