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

from .search import BLOCKS_TOKENIZER

BUSY_TIMEOUT_MS = 5000

MIGRATIONS = Migrations("reverie.index")


#: messages.kind values (role in brackets). Human turns are (user) `message`.
KINDS = {
    "message": "(user) a human turn (a queued_command typed while the agent worked included); "
               "(assistant) a model response, split lines merged",
    "tool_result": "(user) a line holding only tool results",
    "compact_summary": "(user) the summary that replaces history after a compaction (isCompactSummary)",
    "meta": "(user) isMeta: skill/command expansions, caveats, system reminders",
    "command": "(user) a slash command invocation (<command-name>...)",
    "command_output": "(user) local command output (<local-command-stdout>...)",
    "notification": "(user) <task-notification> from a background task",
    "compact_boundary": "(system) marks where a compaction happened",
    "local_command": "(system) a local slash command and its output",
    "attachment": "(user) context injected into a turn (Claude Code 2.1 hook_additional_context, "
                  "nested_memory: CLAUDE.md contents); stored, never a passage",
}


@MIGRATIONS()
def m001_index(db: sqlite_utils.Database) -> None:
    db.execute(
        """CREATE TABLE meta (
            key TEXT PRIMARY KEY,
            value TEXT
        )"""
    )
    # One row per transcript file: the watermark for incremental indexing. `size`/`mtime_ns`/`dev`/
    # `inode` are the stat taken *before* the last read, so an unchanged stat means nothing new.
    db.execute(
        """CREATE TABLE sources (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            conversation TEXT,
            kind TEXT NOT NULL,              -- main | subagent
            dev INTEGER, inode INTEGER,
            size INTEGER NOT NULL DEFAULT 0,
            mtime_ns INTEGER,
            offset INTEGER NOT NULL DEFAULT 0, -- byte offset after the last complete line consumed
            lines INTEGER NOT NULL DEFAULT 0,  -- complete lines consumed
            head_len INTEGER NOT NULL DEFAULT 0,
            head_hash TEXT,                  -- sha1 of the first head_len bytes: detects a replaced file
            first_indexed_at TEXT,
            indexed_at TEXT,
            missing INTEGER NOT NULL DEFAULT 0 -- 1 when the last index run no longer found the file
        )"""
    )
    db.execute(
        """CREATE TABLE conversations (
            id TEXT PRIMARY KEY,             -- Claude Code sessionId
            title TEXT,                      -- summary / custom-title of this session (redacted)
            cwd TEXT,                        -- first cwd (redacted)
            git_branch TEXT,
            version TEXT,
            first_at TEXT,
            last_at TEXT,
            transcript_path TEXT,            -- the main session file
            messages INTEGER NOT NULL DEFAULT 0
        )"""
    )
    # One row per message; an API response split over several transcript lines is one row
    # (keyed by api_id within the conversation), its content blocks in `blocks` in line order.
    # Ids are assigned by the indexer in insertion order (MAX(id) + 1 under the write lock), so
    # `ORDER BY id` is index order within a conversation.
    db.execute(
        """CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            conversation TEXT NOT NULL REFERENCES conversations(id),
            uuid TEXT NOT NULL,              -- uuid of the message's first line (unique: see message_lines)
            api_id TEXT,
            parent_uuid BLOB,                -- parentUuid of the first line, packed (consolidate.index.line_key)
            role TEXT NOT NULL,              -- user | assistant | system
            kind TEXT NOT NULL,              -- see KINDS
            is_sidechain INTEGER NOT NULL DEFAULT 0,
            subagent TEXT,                   -- sub-agent id (agentId, or the sidechain root uuid in v1)
            cwd TEXT,                        -- redacted; NULL when equal to the conversation's cwd
            timestamp TEXT,
            model TEXT,
            source INTEGER REFERENCES sources(id),  -- the transcript file of its first line
            line_no INTEGER                  -- 1-based line of the first line in that file
        )"""
    )
    # (conversation, id) order. Lookups by api_id or tool_use_id are per conversation, through
    # this index (the indexer caches them per conversation), so they need no index of their own.
    db.execute("CREATE INDEX messages_conv ON messages(conversation)")
    # Every transcript line stored (first and merged lines alike): line uuid -> message. Its key
    # makes message (and line) uuids unique per agent, re-reading a replaced or truncated file
    # idempotent, and resolves v1 sidechain roots. `uuid` is packed by consolidate.index.line_key:
    # the 16 bytes of a canonical UUID, any other string as it is (a text never equals a blob).
    db.execute(
        """CREATE TABLE message_lines (
            uuid BLOB PRIMARY KEY,
            message_id INTEGER NOT NULL
        ) WITHOUT ROWID"""
    )
    db.execute(
        """CREATE TABLE blocks (
            id INTEGER PRIMARY KEY,
            message_id INTEGER NOT NULL REFERENCES messages(id),
            idx INTEGER NOT NULL,
            type TEXT NOT NULL,              -- text | thinking | tool_use | tool_result | image | document | other
            tool_name TEXT,                  -- tool_use; tool_result when its tool_use is known
            tool_use_id TEXT,
            is_error INTEGER NOT NULL DEFAULT 0,
            text TEXT NOT NULL DEFAULT '',   -- redacted; tool results clipped (head + tail)
            original_size INTEGER,           -- characters before clipping
            clipped INTEGER NOT NULL DEFAULT 0
        )"""
    )
    # Block ids are not in conversation order within one indexing chunk (the indexer orders a
    # chunk's rows to fill leaf pages): read blocks in (message_id, idx) order.
    db.execute("CREATE INDEX blocks_message ON blocks(message_id, idx)")
    # Full-text index over block text (external content: the text is stored once, in `blocks`).
    # detail=none keeps only which rows hold a token: a quarter of the size of detail=full, and
    # bm25() / snippet() / highlight() still work, FTS5 re-reading and re-tokenizing the matched
    # rows' text (~0.1 ms per matched row: bound the candidates of very common terms). Queries
    # are tokens combined with AND / OR / NOT and prefixes; multi-token phrases and NEAR are not
    # supported, so consolidate.search sends an identifier such as `tool_result` as the AND of its
    # one-token parts (`result` still finds `tool_result`, as in prose).
    db.execute(
        f"""CREATE VIRTUAL TABLE blocks_fts USING fts5(
            text, content='blocks', content_rowid='id',
            tokenize='{BLOCKS_TOKENIZER}', detail=none
        )"""
    )
    db.execute(
        """CREATE TRIGGER blocks_ai AFTER INSERT ON blocks BEGIN
            INSERT INTO blocks_fts (rowid, text) VALUES (new.id, new.text);
        END"""
    )
    db.execute(
        """CREATE TRIGGER blocks_ad AFTER DELETE ON blocks BEGIN
            INSERT INTO blocks_fts (blocks_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END"""
    )
    db.execute(
        """CREATE TRIGGER blocks_au AFTER UPDATE OF text ON blocks BEGIN
            INSERT INTO blocks_fts (blocks_fts, rowid, text) VALUES ('delete', old.id, old.text);
            INSERT INTO blocks_fts (rowid, text) VALUES (new.id, new.text);
        END"""
    )
    db.execute(
        """CREATE TABLE index_runs (
            id INTEGER PRIMARY KEY,
            started_at TEXT, finished_at TEXT,
            files_seen INTEGER, files_changed INTEGER, messages_added INTEGER,
            skipped TEXT, rejected TEXT      -- JSON {kind: n} / {reason: n} for this agent's files
        )"""
    )


@MIGRATIONS()
def m002_title_source(db: sqlite_utils.Database) -> None:
    # Which kind of line set the title: "custom-title" (the user's /rename) is never replaced by a
    # later automatic "summary"; NULL on rows titled before this migration (any line may replace it).
    db.execute("ALTER TABLE conversations ADD COLUMN title_source TEXT")


@MIGRATIONS()
def m003_harness(db: sqlite_utils.Database) -> None:
    # Which coding-agent harness wrote a conversation and a transcript file (reverie.sources:
    # claude-code | codex | gemini). Rows indexed before this migration came from Claude Code, the
    # only harness read then, so the default names it.
    db.execute("ALTER TABLE conversations ADD COLUMN harness TEXT NOT NULL DEFAULT 'claude-code'")
    db.execute("ALTER TABLE sources ADD COLUMN harness TEXT NOT NULL DEFAULT 'claude-code'")


def configure(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA secure_delete = ON")  # freed pages are zeroed: rescanned secrets leave no trace


def open_db(path: Path) -> sqlite_utils.Database:
    """Open (creating if needed) an agent db, configured, with every migration applied."""
    from reverie.graph import store as graph_store
    from reverie.graph import trust_store

    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
    configure(conn)
    db = sqlite_utils.Database(conn)
    MIGRATIONS.apply(db)
    graph_store.MIGRATIONS.apply(db)
    trust_store.MIGRATIONS.apply(db)
    return db


def schema_versions(db: sqlite_utils.Database) -> dict[str, list[str]]:
    """Applied migration names per set."""
    out: dict[str, list[str]] = {}
    if "_sqlite_migrations" not in db.table_names():
        return out
    for row in db.query("select migration_set, name from _sqlite_migrations order by rowid"):
        out.setdefault(row["migration_set"], []).append(row["name"])
    return out
