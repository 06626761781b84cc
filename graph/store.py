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
            sessions INTEGER NOT NULL DEFAULT 1,    -- distinct sessions it was seen in
            access_count INTEGER NOT NULL DEFAULT 0,
            pinned INTEGER NOT NULL DEFAULT 0,
            writer TEXT,
            created_at TEXT NOT NULL,        -- learned (consolidated) at
            said_at TEXT NOT NULL,           -- first said at
            last_seen_at TEXT NOT NULL,      -- latest said_at of any session behind it
            updated_at TEXT NOT NULL,
            vector BLOB                      -- float32 embedding, NULL when no embedder
        )"""
    )
    db.execute("CREATE INDEX cards_status ON cards(status, category)")
    db["cards"].enable_fts(["statement"], create_triggers=True, tokenize="porter unicode61")
    db.execute(
        """CREATE TABLE card_sessions (
            card_id INTEGER NOT NULL REFERENCES cards(id),
            session TEXT NOT NULL,
            said_at TEXT,
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
            created_at TEXT NOT NULL
        )"""
    )
    db.execute(
        """CREATE TABLE entity_aliases (
            norm TEXT PRIMARY KEY,
            alias TEXT NOT NULL,
            entity_id INTEGER NOT NULL REFERENCES entities(id)
        )"""
    )
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
    db.execute(
        """CREATE TABLE forgotten (
            hash TEXT PRIMARY KEY,           -- keyed hash of a forgotten statement/source; never the text
            kind TEXT NOT NULL,
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
