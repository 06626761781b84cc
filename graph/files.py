"""Atomic file writes, for the application and the libraries alike (it lives in graph/ because the
libraries may not import consolidate). Standard library only (the hook path may write through it).

Invariant: a reader sees either the old file or the whole new one, never a part; the new file has
`mode` from its first byte (it is created private, then renamed over the old one).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: Path, text: str, *, mode: int = 0o600) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def write_json_atomic(path: Path, data: Any, *, mode: int = 0o600, indent: int | None = 2,
                      sort_keys: bool = False) -> Path:
    text = json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False)
    return write_text_atomic(path, text + "\n" if indent is not None else text, mode=mode)
