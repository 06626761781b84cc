"""Atomic file writes, for the application and the libraries alike (it lives in graph/ because the
libraries may not import consolidate). Standard library only, and light enough for the hook path
(no pathlib, typing or tempfile at import: the hook's session state is written through it).

Invariant: a reader sees either the old file or the whole new one, never a part; the new file has
`mode` from its first byte (it is created private, then renamed over the old one). Paths may be
strings or `os.PathLike`; the path is returned as given.
"""

from __future__ import annotations

import itertools
import json
import os

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hook ~2.4 ms
if TYPE_CHECKING:
    from typing import Any

_serial = itertools.count(1)


def write_text_atomic(path: "str | os.PathLike", text: str, *, mode: int = 0o600) -> "str | os.PathLike":
    """Write `text` (UTF-8) to `path` atomically with `mode`: a temporary file beside it, then
    `os.replace`; a reader sees the old file or the new one, never a part. Returns `path`."""
    target = os.fspath(path)
    folder = os.path.dirname(target) or "."
    os.makedirs(folder, exist_ok=True)
    while True:   # a unique temporary name beside the target (O_EXCL: never another's file)
        tmp = os.path.join(folder, f".{os.path.basename(target)}.{os.getpid()}.{next(_serial)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:   # left by a dead process that had our pid
            continue
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def write_json_atomic(path: "str | os.PathLike", data: Any, *, mode: int = 0o600, indent: int | None = 2,
                      sort_keys: bool = False) -> "str | os.PathLike":
    """`data` as JSON through `write_text_atomic` (a final newline when indented). Returns `path`."""
    text = json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False)
    return write_text_atomic(path, text + "\n" if indent is not None else text, mode=mode)
