"""The graph's schema (cards, evidence, entities, relation statements) as named migrations.

Invariants: SQL of the graph lives here and in the graph modules that read/write it; migrations are
applied by whoever opens an agent db (consolidate.store.open_db) and never by the hook path.
"""

from __future__ import annotations

import sqlite_utils
from sqlite_utils import Migrations

MIGRATIONS = Migrations("reverie.graph")


@MIGRATIONS()
def m001_graph(db: sqlite_utils.Database) -> None:
    db.execute(
        """CREATE TABLE cards (
            id INTEGER PRIMARY KEY,
            statement TEXT NOT NULL,         -- redacted, <= ~35 words
            norm TEXT NOT NULL,              -- normalized tokens (dedupe candidates)
            category TEXT NOT NULL,
            importance INTEGER NOT NULL DEFAULT 2,
            confidence REAL NOT NULL,
            original_confidence REAL NOT NULL,
            status TEXT NOT NULL DEFAULT 'active',  -- active | superseded | faded
            superseded_by INTEGER REFERENCES cards(id),
            sessions INTEGER NOT NULL DEFAULT 1,    -- distinct sessions it was seen in (= rows in card_sessions)
            access_count INTEGER NOT NULL DEFAULT 0,  -- times recalled (folded from memory-recalls.jsonl)
            last_accessed_at TEXT,
            pinned INTEGER NOT NULL DEFAULT 0,
            writer TEXT,
            source_key TEXT,                 -- source_key of the merge that created it
            created_at TEXT NOT NULL,        -- learned (consolidated) at
            said_at TEXT NOT NULL,           -- first said at
            last_seen_at TEXT NOT NULL,      -- latest said_at of any session behind it
            updated_at TEXT NOT NULL,
            status_at TEXT,                  -- when status last changed (faded, revived, superseded)
            revived INTEGER NOT NULL DEFAULT 0,  -- times it came back from faded
            vector BLOB                      -- float32 unit vector (graph_meta 'embedder' says whose)
        )"""
    )
    db.execute("CREATE INDEX cards_status ON cards(status, category)")
    db.execute("CREATE INDEX cards_norm ON cards(norm)")
    db["cards"].enable_fts(["statement"], create_triggers=True, tokenize="porter unicode61")
    db.execute(
        """CREATE TABLE card_sessions (
            card_id INTEGER NOT NULL REFERENCES cards(id),
            session TEXT NOT NULL,
            said_at TEXT,
            source_key TEXT,                 -- NewCard.source_key of that session's merge (forget uses it)
            learned_at TEXT,
            PRIMARY KEY (card_id, session)
        )"""
    )
    db.execute(
        """CREATE TABLE evidence (
            id INTEGER PRIMARY KEY,
            card_id INTEGER NOT NULL REFERENCES cards(id),
            conversation TEXT NOT NULL,
            message_from INTEGER, message_to INTEGER,
            said_at TEXT,
            passage TEXT
        )"""
    )
    db.execute("CREATE INDEX evidence_card ON evidence(card_id)")
    db.execute(
        """CREATE TABLE entities (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            norm TEXT NOT NULL UNIQUE,
            type TEXT NOT NULL DEFAULT 'other',
            created_at TEXT NOT NULL,
            access_count INTEGER NOT NULL DEFAULT 0   -- times recalled (folded from the recall log)
        )"""
    )
    db.execute(
        """CREATE TABLE entity_aliases (
            norm TEXT PRIMARY KEY,
            alias TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities(id),
            how TEXT NOT NULL DEFAULT 'name'  -- name | normalized | fuzzy | embedding | synonym
        )"""
    )
    db.execute("CREATE INDEX entity_aliases_entity ON entity_aliases(entity_id)")
    db.execute(
        """CREATE TABLE card_entities (
            card_id INTEGER NOT NULL REFERENCES cards(id),
            entity_id INTEGER NOT NULL REFERENCES entities(id),
            PRIMARY KEY (card_id, entity_id)
        )"""
    )
    db.execute("CREATE INDEX card_entities_entity ON card_entities(entity_id)")
    db.execute(
        """CREATE TABLE relation_statements (
            id INTEGER PRIMARY KEY,
            subject_id INTEGER NOT NULL REFERENCES entities(id),
            verb TEXT NOT NULL,
            object_id INTEGER NOT NULL REFERENCES entities(id),
            card_id INTEGER REFERENCES cards(id),
            session TEXT,
            said_at TEXT NOT NULL,
            learned_at TEXT NOT NULL,
            holds INTEGER NOT NULL,
            implicit INTEGER NOT NULL DEFAULT 0   -- 1: ended by a single-valued verb's newer statement
        )"""
    )
    db.execute("CREATE INDEX rel_subject ON relation_statements(subject_id, verb, object_id, said_at)")
    db.execute("CREATE INDEX rel_object ON relation_statements(object_id)")
    db.execute("CREATE INDEX rel_card ON relation_statements(card_id)")
    # Current state of each relation, recomputed from relation_statements by graph.relations after
    # every change (so readers need no rules): state = latest statement by said_at (explicit wins a
    # tie); weight = distinct sessions of explicit statements whose card is not faded.
    db.execute(
        """CREATE TABLE relations (
            subject_id INTEGER NOT NULL REFERENCES entities(id),
            verb TEXT NOT NULL,
            object_id INTEGER NOT NULL REFERENCES entities(id),
            holds INTEGER NOT NULL,          -- 1 holds, 0 ended
            weight INTEGER NOT NULL,         -- distinct sessions behind it among non-faded cards
            first_said TEXT NOT NULL,
            last_said TEXT NOT NULL,         -- latest said_at of any statement about it
            since TEXT NOT NULL,             -- said_at where the current state began (first statement of its latest run)
            updated_at TEXT NOT NULL,
            PRIMARY KEY (subject_id, verb, object_id)
        )"""
    )
    db.execute("CREATE INDEX relations_object ON relations(object_id)")
    db.execute(
        """CREATE TABLE graph_meta (
            key TEXT PRIMARY KEY,            -- 'embedder' (id of the vectors in cards.vector),
            value TEXT                       -- 'recall_log:<path>' (JSON read position), ...
        )"""
    )
    db.execute(
        """CREATE TABLE forgotten (
            hash TEXT PRIMARY KEY,           -- SHA-256 of a forgotten statement's norm or source_key; never the text
            kind TEXT NOT NULL,              -- statement | source
            at TEXT NOT NULL
        )"""
    )
    # Consolidation bookkeeping (written by consolidate, stored here so one transaction covers
    # cards and progress).
    db.execute(
        """CREATE TABLE progress (
            conversation TEXT PRIMARY KEY,
            last_message_id INTEGER NOT NULL DEFAULT 0,   -- messages.id reached (all before are done)
            updated_at TEXT
        )"""
    )
    db.execute(
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            trigger TEXT, writer TEXT,
            started_at TEXT, finished_at TEXT,
            status TEXT,                     -- running | ok | partial | failed
            summary TEXT                     -- JSON: counts, calls, tokens, cost, rejected, errors, backlog
        )"""
    )


# ---------------------------------------------------------------------------------------------
# Small helpers shared by the graph modules (stdlib + sqlite3 connection only).

from typing import Any  # noqa: E402

from .db import connection, transaction  # noqa: E402,F401  (re-exported: graph modules import them from here)


def get_meta(db: Any, key: str) -> str | None:
    row = connection(db).execute("SELECT value FROM graph_meta WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def set_meta(db: Any, key: str, value: str) -> None:
    """Upsert one graph_meta value (inside the caller's transaction if there is one)."""
    connection(db).execute(
        "INSERT INTO graph_meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def ensure_vectors(db: Any, embedder: Any, batch: int = 2000) -> int:
    """Make every card's `vector` come from `embedder`: all of them when the stored embedder id
    differs (model changed), else only the missing ones. Returns how many were (re)computed.
    Commits in batches; safe to interrupt (the id is written last)."""
    from .embed import to_blob

    conn = connection(db)
    stored = get_meta(conn, "embedder")
    everything = stored != embedder.id
    where = "" if everything else "WHERE vector IS NULL"
    done = 0
    last = 0
    while True:
        rows = conn.execute(
            f"SELECT id, statement FROM cards {where} {'AND' if where else 'WHERE'} id > ? ORDER BY id LIMIT ?",
            (last, batch),
        ).fetchall()
        if not rows:
            break
        vecs = embedder.encode([r[1] for r in rows])
        with transaction(conn):
            conn.executemany("UPDATE cards SET vector = ? WHERE id = ?",
                             [(to_blob(v), r[0]) for r, v in zip(rows, vecs)])
        done += len(rows)
        last = rows[-1][0]
    if stored != embedder.id:
        with transaction(conn):
            set_meta(conn, "embedder", embedder.id)
    return done


@MIGRATIONS()
def m002_recall_indexes(db: sqlite_utils.Database) -> None:
    """Recall (graph.recall) reads the strongest standing memories of a category at every session
    start: this index serves `WHERE status = ? AND category = ? ORDER BY pinned DESC, sessions DESC,
    importance DESC, last_seen_at DESC LIMIT n` without sorting (0.6 ms instead of 34 ms at 100k
    cards, bench/recall_bench.py)."""
    db.execute(
        "CREATE INDEX IF NOT EXISTS cards_recall_standing "
        "ON cards(status, category, pinned, sessions, importance, last_seen_at)"
    )


def active_cards(conn: Any, *, limit: int | None = None) -> list[dict[str, Any]]:
    """Active cards, strongest first (sessions, then confidence, then newest), with their entities."""
    sql = """SELECT c.id, c.statement, c.category, c.confidence, c.sessions, c.said_at,
                    (SELECT group_concat(e.name, ', ') FROM card_entities ce JOIN entities e ON e.id = ce.entity_id
                      WHERE ce.card_id = c.id) AS entities
             FROM cards c WHERE c.status = 'active'
             ORDER BY c.sessions DESC, c.confidence DESC, c.said_at DESC, c.id"""
    if limit is not None:
        sql += f" LIMIT {int(limit)}"
    cols = ("id", "statement", "category", "confidence", "sessions", "said_at", "entities")
    return [dict(zip(cols, row)) for row in connection(conn).execute(sql).fetchall()]


@MIGRATIONS()
def m003_progress_attempts(db: sqlite_utils.Database) -> None:
    """Consolidation bookkeeping per conversation (owned by consolidate.pipeline):

    * `attempts` / `last_error`: failed attempts of the stretch right after `last_message_id`
      (verify/merge faults, malformed output, refusals); reset when progress moves. After
      `consolidate.max_stretch_attempts` the stretch is given up so the conversation proceeds.
    * `trust_message_id`: how far the trust stage (episodes, feedback detection) has covered the
      conversation; conversations whose progress is ahead of it are processed by the next run's
      stage even when the run that moved the progress was killed. Existing rows start covered."""
    db.execute("ALTER TABLE progress ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE progress ADD COLUMN last_error TEXT")
    db.execute("ALTER TABLE progress ADD COLUMN trust_message_id INTEGER NOT NULL DEFAULT 0")
    db.execute("UPDATE progress SET trust_message_id = last_message_id")


@MIGRATIONS()
def m004_evidence_position(db: sqlite_utils.Database) -> None:
    """Recall's conversation-neighbour lift (graph.nearest `_add_neighbours`) reads the cards whose
    evidence lies within a few messages of a top candidate's: this index serves `WHERE
    conversation = ? AND message_from BETWEEN ? AND ?` as a range seek, so the lift runs on any
    store size instead of scanning the evidence of whole conversations."""
    db.execute(
        "CREATE INDEX IF NOT EXISTS evidence_position "
        "ON evidence(conversation, message_from, message_to, card_id)"
    )


@MIGRATIONS()
def m005_claude_auto_memory(db: sqlite_utils.Database) -> None:
    """Claude Code's own auto memory (`<project>/memory/*.md`) as cards (graph.auto_memory):

    * `auto_memory`: one row per memory entry read (a topic file, or a bare line of MEMORY.md),
      keyed by its folder and entry name; `card_id` is the card it became (source
      `claude-auto-memory`), `sha256` the file bytes it was last built from (the file is its
      evidence), `state` present | deleted (its card retired) | disabled (auto memory switched off).
      A forgotten card takes its row with it; `graph.forget`'s statement hash keeps it from coming back.
    * `auto_memory_covers`: reverie's own cards that state the same point as an auto-memory card
      (recomputed after every sync): the hooks inject neither, since Claude Code loads MEMORY.md."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS auto_memory (
            card_id INTEGER PRIMARY KEY REFERENCES cards(id) ON DELETE CASCADE,   -- forgotten: the row goes too
            source TEXT NOT NULL DEFAULT 'claude-auto-memory',
            folder TEXT NOT NULL,            -- the memory folder (redacted path)
            entry TEXT NOT NULL,             -- file name in it, or 'MEMORY.md#<hash>' for a bare index line
            name TEXT, description TEXT, type TEXT,   -- front matter (redacted)
            sha256 TEXT NOT NULL,            -- of the entry's bytes when its card was last written
            mtime TEXT,                      -- the file's modification time then (ISO-8601 UTC)
            state TEXT NOT NULL DEFAULT 'present',   -- present | deleted | disabled
            seen_at TEXT NOT NULL,           -- last sync that found it
            updated_at TEXT NOT NULL,
            UNIQUE (folder, entry)
        )"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS auto_memory_covers (
            card_id INTEGER PRIMARY KEY REFERENCES cards(id) ON DELETE CASCADE,
            memory_card_id INTEGER NOT NULL REFERENCES cards(id) ON DELETE CASCADE
        )"""
    )
