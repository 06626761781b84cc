"""Claude Code transcript lines for the tests, and the bytes a leak check scans.

`line` builds one `user`/`assistant` line in the order Claude Code writes its fields; `write` puts
lines in a file. Not a test module: the test files import it (`from transcripts import line`).
"""

from __future__ import annotations

import json
from pathlib import Path

CWD = "/home/dev/shop"
TS = "2026-03-01T10:00:00.000Z"


def line(kind: str, uuid: str, content, *, session="s-1", cwd=CWD, parent=None, ts=TS, msg_id=None,
         user_type: str | None = "external", git_branch: str | None = "main", version="2.1.39",
         model="claude-opus-4-6", **extra) -> str:
    """One transcript line (newline included). An assistant message gets an API id (`msg_id`, else
    `msg_<uuid>`) and `model`; `user_type` / `git_branch` None leave the field out; `extra` fields
    are set last (they may replace any other)."""
    msg = {"role": kind, "content": content}
    if kind == "assistant":
        msg.update({"id": msg_id or f"msg_{uuid}", "type": "message", "model": model})
    d: dict = {"parentUuid": parent, "isSidechain": False}
    if user_type is not None:
        d["userType"] = user_type
    d.update({"cwd": cwd, "sessionId": session, "version": version})
    if git_branch is not None:
        d["gitBranch"] = git_branch
    d.update({"type": kind, "message": msg, "uuid": uuid, "timestamp": ts})
    d.update(extra)
    return json.dumps(d) + "\n"


def write(path: Path, *lines: str, mode="w") -> Path:
    """Write (or with mode "a", append) `lines` to `path`, creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, mode, encoding="utf-8") as fh:
        fh.write("".join(lines))
    return path


def db_bytes(path: Path) -> bytes:
    """Every byte an SQLite database holds on disk: the file and its write-ahead log."""
    out = b""
    for suffix in ("", "-wal"):
        p = Path(str(path) + suffix)
        if p.exists():
            out += p.read_bytes()
    return out
