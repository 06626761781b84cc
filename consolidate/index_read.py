"""Reading the index back: agent counts, conversation look-up, a conversation with its blocks, and
which harness (Claude Code, Codex CLI, Gemini CLI) a conversation or a memory came from.

Read-only connections (no migration runs; a db from before m003_harness reads as Claude Code's);
the SQL of the index lives here, in consolidate.index_write and in consolidate.store. Standard
library only.
"""

from __future__ import annotations

import os
import sqlite3

from reverie.graph.db import connect_readonly

from . import agents as _agents
from .paths import agent_db_path

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the hook path imports this module
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

def _ro(db_path: Path) -> sqlite3.Connection | None:
    try:
        return connect_readonly(db_path, 5.0, check_same_thread=True)
    except (sqlite3.Error, OSError):
        return None


def db_bytes(db_path: Path) -> int:
    total = 0
    for suffix in ("", "-wal", "-shm"):
        try:
            total += os.path.getsize(str(db_path) + suffix)
        except OSError:
            pass
    return total


def agent_stats(db_path: Path) -> dict[str, Any]:
    """Counts of one agent db: conversations, messages, first, last, transcripts_on_disk, cwd, db_bytes,
    harnesses ({harness: {"conversations", "messages"}})."""
    out: dict[str, Any] = {"conversations": 0, "messages": 0, "first": None, "last": None,
                           "transcripts_on_disk": 0, "cwd": None, "db_bytes": db_bytes(db_path),
                           "harnesses": {}}
    conn = _ro(db_path)
    if conn is None:
        return out
    try:
        row = conn.execute("SELECT COUNT(*), COALESCE(SUM(messages), 0), MIN(first_at), MAX(last_at) "
                           "FROM conversations").fetchone()
        out["conversations"], out["messages"], out["first"], out["last"] = row
        row = conn.execute("SELECT cwd FROM conversations WHERE cwd IS NOT NULL ORDER BY first_at LIMIT 1").fetchone()
        out["cwd"] = row[0] if row else None
        out["transcripts_on_disk"] = sum(
            1 for (path,) in conn.execute("SELECT path FROM sources WHERE kind = 'main'") if os.path.exists(path))
        out["harnesses"] = harness_counts(conn)
    except sqlite3.Error:
        pass
    finally:
        conn.close()
    return out


def _has_harness(conn: sqlite3.Connection) -> bool:
    """Whether the db has `conversations.harness` (m003_harness; a read-only open runs no migration)."""
    return any(r[1] == "harness" for r in conn.execute("PRAGMA table_info(conversations)"))


def harness_counts(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """{harness: {"conversations": n, "messages": n}} of one agent db (rows from before
    m003_harness came from Claude Code)."""
    if _has_harness(conn):
        rows = conn.execute("SELECT harness, COUNT(*), COALESCE(SUM(messages), 0) FROM conversations "
                            "GROUP BY harness ORDER BY harness").fetchall()
    else:
        rows = conn.execute("SELECT 'claude-code', COUNT(*), COALESCE(SUM(messages), 0) FROM conversations "
                            "HAVING COUNT(*) > 0").fetchall()
    return {h: {"conversations": n, "messages": m} for h, n, m in rows}


def conversation_harnesses(conn: sqlite3.Connection, conversations: list[str]) -> dict[str, str]:
    """conversation id -> harness for the ids given (those not found are left out)."""
    out: dict[str, str] = {}
    ids = sorted(set(conversations))
    has = _has_harness(conn)
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        q = ",".join("?" * len(part))
        col = "harness" if has else "'claude-code'"
        out.update(conn.execute(f"SELECT id, {col} FROM conversations WHERE id IN ({q})", part).fetchall())
    return out


def find_conversation(home: Path, conversation_id: str, agent: str | None = None) -> list[tuple[str, str]]:
    """(agent, conversation id) pairs matching an id or a unique prefix of one."""
    ids = [agent] if agent else _agents.known_agent_ids(home)
    out = []
    for agent_id in ids:
        conn = _ro(agent_db_path(home, agent_id))
        if conn is None:
            continue
        try:
            exact = conn.execute("SELECT id FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
            if exact:
                out.append((agent_id, exact[0]))
                continue
            like = conversation_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            for (cid,) in conn.execute("SELECT id FROM conversations WHERE id LIKE ? ESCAPE '\\' LIMIT 5", (like,)):
                out.append((agent_id, cid))
        except sqlite3.Error:
            pass
        finally:
            conn.close()
    return out


def list_conversations(db_path: Path) -> list[dict[str, Any]]:
    """Every conversation row of one agent db, oldest first."""
    conn = _ro(db_path)
    if conn is None:
        return []
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM conversations ORDER BY first_at, id")]
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def load_conversation(db_path: Path, conversation_id: str) -> dict[str, Any] | None:
    """A conversation's row, its source files (with `on_disk` checked now) and its messages with
    their blocks, in index order (message id, block idx)."""
    conn = _ro(db_path)
    if conn is None:
        return None
    conn.row_factory = sqlite3.Row
    try:
        conv = conn.execute("SELECT * FROM conversations WHERE id = ?", (conversation_id,)).fetchone()
        if conv is None:
            return None
        sources = [dict(r) for r in conn.execute(
            "SELECT path, kind, missing, lines, offset, indexed_at FROM sources WHERE conversation = ? "
            "ORDER BY kind, path", (conversation_id,))]
        msgs = [dict(r) for r in conn.execute(
            "SELECT m.id, m.uuid, m.parent_uuid, m.role, m.kind, m.is_sidechain, m.subagent, m.timestamp, m.model, "
            "COALESCE(m.cwd, c.cwd) AS cwd, s.path AS source_path, m.line_no FROM messages m "
            "JOIN conversations c ON c.id = m.conversation LEFT JOIN sources s ON s.id = m.source "
            "WHERE m.conversation = ? ORDER BY m.id", (conversation_id,))]
        from .index_shape import unkey

        by_id = {m["id"]: m for m in msgs}
        for m in msgs:
            m["parent_uuid"] = unkey(m["parent_uuid"])
            m["blocks"] = []
        ids = list(by_id)
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            q = ",".join("?" * len(part))
            for r in conn.execute(
                    f"SELECT message_id, idx, type, tool_name, tool_use_id, is_error, text, original_size, clipped "
                    f"FROM blocks WHERE message_id IN ({q}) ORDER BY message_id, idx", part):
                by_id[r["message_id"]]["blocks"].append({k: r[k] for k in r.keys() if k != "message_id"})
        return {"conversation": dict(conv), "sources": sources, "messages": msgs}
    finally:
        conn.close()
