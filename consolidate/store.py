"""The per-agent store: opening `agent.db` and the index's schema (transcripts, messages, FTS5).

Invariants: every open applies all pending migrations (index set here, graph set in graph.store)
inside their own transactions; the file is in WAL mode with a busy timeout; SQL of the index lives
in this module and `consolidate.index` only (the graph's in `graph.store`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils
from sqlite_utils import Migrations

BUSY_TIMEOUT_MS = 5000

MIGRATIONS = Migrations("reverie.index")


@MIGRATIONS()
def m001_index(db: sqlite_utils.Database) -> None:
    db.execute(
        """CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT
        )"""
    )
    # One row per transcript file: the watermark for incremental indexing.
    db.execute(
        """CREATE TABLE sources (
            path TEXT PRIMARY KEY,
            conversation TEXT,
            kind TEXT NOT NULL,              -- main | subagent
            dev INTEGER, inode INTEGER,
            size INTEGER NOT NULL DEFAULT 0,
            offset INTEGER NOT NULL DEFAULT 0, -- byte offset after the last complete line consumed
            lines INTEGER NOT NULL DEFAULT 0,
            head_hash TEXT,                  -- hash of the first bytes: detects a replaced file
            mtime REAL,
            indexed_at TEXT,
            missing INTEGER NOT NULL DEFAULT 0
        )"""
    )
    db.execute(
        """CREATE TABLE conversations (
            id TEXT PRIMARY KEY,             -- Claude Code sessionId
            title TEXT,
            cwd TEXT,
            git_branch TEXT,
            version TEXT,
            first_at TEXT,
            last_at TEXT,
            transcript_path TEXT,
            messages INTEGER NOT NULL DEFAULT 0
        )"""
    )
    # One row per message; an API response split over several transcript lines is one row
    # (keyed by api_id within the conversation), its content blocks in `blocks`.
    db.execute(
        """CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            conversation TEXT NOT NULL REFERENCES conversations(id),
            uuid TEXT NOT NULL UNIQUE,
            api_id TEXT,
            parent_uuid TEXT,
            role TEXT NOT NULL,              -- user | assistant | system | summary
            kind TEXT NOT NULL,              -- message | compact_summary | summary | command | meta
            is_sidechain INTEGER NOT NULL DEFAULT 0,
            subagent TEXT,                   -- sub-agent id (agentId, or the sidechain root uuid in v1)
            cwd TEXT,
            timestamp TEXT,
            source_path TEXT,
            line_no INTEGER
        )"""
    )
    db.execute("CREATE INDEX messages_conv_time ON messages(conversation, timestamp, id)")
    db.execute("CREATE UNIQUE INDEX messages_api ON messages(conversation, api_id) WHERE api_id IS NOT NULL")
    db.execute(
        """CREATE TABLE blocks (
            id INTEGER PRIMARY KEY,
            message_id INTEGER NOT NULL REFERENCES messages(id),
            idx INTEGER NOT NULL,
            type TEXT NOT NULL,              -- text | thinking | tool_use | tool_result | image | summary
            tool_name TEXT,
            tool_use_id TEXT,
            is_error INTEGER NOT NULL DEFAULT 0,
            text TEXT NOT NULL DEFAULT '',   -- redacted
            original_size INTEGER,           -- characters before clipping
            clipped INTEGER NOT NULL DEFAULT 0
        )"""
    )
    db.execute("CREATE INDEX blocks_message ON blocks(message_id, idx)")
    db["blocks"].enable_fts(["text"], create_triggers=True, tokenize="porter unicode61")
    db.execute(
        """CREATE TABLE index_runs (
            id INTEGER PRIMARY KEY,
            started_at TEXT, finished_at TEXT,
            files_seen INTEGER, files_changed INTEGER, messages_added INTEGER,
            skipped TEXT, rejected TEXT
        )"""
    )


def configure(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")


def open_db(path: Path) -> sqlite_utils.Database:
    """Open (creating if needed) an agent db, configured, with every migration applied."""
    from graph import store as graph_store

    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
    configure(conn)
    db = sqlite_utils.Database(conn)
    MIGRATIONS.apply(db)
    graph_store.MIGRATIONS.apply(db)
    return db


def schema_versions(db: sqlite_utils.Database) -> dict[str, list[str]]:
    """Applied migration names per set."""
    out: dict[str, list[str]] = {}
    if "_sqlite_migrations" not in db.table_names():
        return out
    for row in db.query("select migration_set, name from _sqlite_migrations order by rowid"):
        out.setdefault(row["migration_set"], []).append(row["name"])
    return out
