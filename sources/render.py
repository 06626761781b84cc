"""Small renderings shared by the readers: a tool call's descriptive arguments, the prose an agent
writes into a documentation file, media placeholders for data URLs and inline data, and a canonical
JSON form for content keys.

Invariants: standard library only; never raises on any input; never returns media bytes (only
their type and size); never logs.
"""

from __future__ import annotations

import json
import re

from .model import _b64_size

#: Cap on the items listed when a tool input has none of the descriptive fields.
MAX_FIELD_NAMES = 20


def render_fields(data: object, fields: tuple[str, ...]) -> str:
    """The kept `fields` of a tool input, one `field: value` per line (in `fields` order, values
    whole: the indexer clips after redacting). An input with none of them lists its field names."""
    if not isinstance(data, dict):
        return ""
    lines = []
    for key in fields:
        value = data.get(key)
        if value is None or value == "" or value == []:
            continue
        if not isinstance(value, str):
            try:
                value = json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError, RecursionError):
                value = f"[{type(value).__name__}]"
        lines.append(f"{key}: {value}")
    if not lines and data:
        lines.append("input fields: " + ", ".join(sorted(str(k) for k in data)[:MAX_FIELD_NAMES]))
    return "\n".join(lines)


#: A prose documentation file (`README.md`, `docs/setup.rst`, `.planning/STATE.md`; not `.txt`, which is
#: as often data: `requirements.txt`): what an
#: agent writes there is knowledge in sentences, kept with the call (`written_doc`). Code and config
#: files are not: their content stays out of the index, as every other tool input's does.
DOC_FILE = re.compile(r"(?:^|[/\\])[^/\\]+\.(?:md|mdx|markdown|rst|adoc)$", re.I)
#: The tool input field that holds what was written (`written_doc` appends it last).
WRITTEN_FIELD = "content"


def written_doc(path: object, texts: list[object]) -> str:
    """`content: <text>` (the `texts` joined by blank lines) when `path` is a documentation file
    (`DOC_FILE`) and something was written, else "": the last line group of a rendered tool input,
    read back by `consolidate.passages`."""
    if not isinstance(path, str) or not DOC_FILE.search(path):
        return ""
    body = "\n\n".join(t.strip("\n") for t in texts if isinstance(t, str) and t.strip())
    return f"{WRITTEN_FIELD}: {body}" if body else ""


def media_kind(mime: object) -> str:
    """`image` for an image/* type, else `document` (the Block types for media)."""
    return "image" if isinstance(mime, str) and mime.startswith("image/") else "document"


def data_url_placeholder(url: object) -> str:
    """`[image: image/png, 1234 bytes]` for a `data:` URL, `[image: url <url>]` for a link; never the data."""
    if not isinstance(url, str) or not url:
        return "[image]"
    if url.startswith("data:"):
        head, _, data = url.partition(",")
        mime = head[5:].split(";", 1)[0] or "unknown"
        kind = media_kind(mime)
        if ";base64" in head:
            return f"[{kind}: {mime}, {_b64_size(data)} bytes]"
        return f"[{kind}: {mime}, {len(data)} characters]"
    return f"[image: url {url[:500]}]"


def inline_data_placeholder(part: object) -> str:
    """`[image: image/png, N bytes]` for a Gemini `inlineData` {mimeType, data}; never the data."""
    if not isinstance(part, dict):
        return "[document]"
    mime = part.get("mimeType") if isinstance(part.get("mimeType"), str) else "unknown"
    return f"[{media_kind(mime)}: {mime}, {_b64_size(part.get('data'))} bytes]"


def canonical_json(value: object) -> bytes:
    """`value` as sorted, compact JSON bytes (the same content gives the same bytes whatever the key
    order or spacing it was written with); `b""` when it cannot be serialized."""
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return b""
    return text.encode("utf-8", errors="replace")
