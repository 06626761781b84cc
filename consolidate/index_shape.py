"""Shape checks of the transcript strings the index stores verbatim, and the packed line keys.

Ids, model, version, timestamps and line types are stored without redaction; a value of the wrong
shape (e.g. a secret pasted into `sessionId`) is replaced by a hash, so it never lands on disk,
while equal values still map to equal stored values. Pure functions, no I/O.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from typing import Any

from reverie.sources.model import Parsed

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



def _hashed(value: str) -> str:
    return "h:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _shape(value: Any, pattern: "re.Pattern[str]") -> Any:
    if value is None or not isinstance(value, str):
        return value
    return value if pattern.fullmatch(value) else _hashed(value)


def shaped_id(value: Any) -> Any:
    """An id stored verbatim (a session id a document carries): itself when it has an id's shape,
    else `h:<sha256 prefix>`, as `shape_checked` stores it in every row."""
    return _shape(value, _ID_SHAPE)


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
    if p.line_type != "?":
        p.line_type = _checked_key(p.line_type)
    if p.kind:
        p.kind = _checked_key(p.kind)
    return p


def _checked_key(value: str) -> str:
    """A counter key of up to three `:`-separated parts (`system:turn_duration`,
    `attachment:hook_success`, `unknown:attachment:foo`), each part `_type_ok` or replaced by
    `other`; a key of more parts keeps its first three."""
    hit = _KEYS.get(value)
    if hit is None:
        parts = value.split(":", 3)[:3]
        hit = ":".join(part if _type_ok(part) else "other" for part in parts)
        if len(_KEYS) < 4096:       # the keys are a few dozen names; a flood of odd ones is not kept
            _KEYS[value] = hit
    return hit


_KEYS: dict[str, str] = {}


def _type_ok(value: str | None) -> bool:
    """A line `type` / system `subtype` worth keeping as a counter key: up to five lower-case words
    of letters only (`file-history-snapshot`, `compact_boundary`), at most 40 characters: no digits,
    no capitals, so no token shape."""
    return bool(value) and len(value) <= 40 and _TYPE_SHAPE.fullmatch(value) is not None


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

