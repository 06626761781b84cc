"""Trust schema: the append-only feedback log, per-card maturity state, episodes, the maintenance log.

Invariants:
- Owned by the trust work (`graph.trust`, `graph.episodes`, `graph.feedback_detect`, `graph.markdown`,
  `graph.maintenance`); applied by `consolidate.store.open_db` after the graph set (it references
  `cards`), never by the hook path (which reads these tables with plain sqlite3 and treats a missing
  table as "no trust data yet").
- `feedback` is append-only: triggers refuse UPDATE, and refuse DELETE while the card still exists.
  Deleting a card (`reverie forget`) cascades to its feedback and trust state, so forgetting a card
  forgets everything said about it.
- Nothing here stores card text: the maintenance log holds ids, actions and numeric reasons, so a
  forgotten card leaves no copy of its statement behind. Episode summaries are built from
  already-redacted text (index passages, card statements).
- Scores and counts are never stored: they are computed at read time from `feedback` (see
  `graph.trust`), so changing `feedback.half_life_days` re-scores all history.
"""

from __future__ import annotations

import sqlite_utils
from sqlite_utils import Migrations

MIGRATIONS = Migrations("reverie.trust")


@MIGRATIONS()
def m001_trust(db: sqlite_utils.Database) -> None:
    db.execute(
        """CREATE TABLE feedback (
            id INTEGER PRIMARY KEY,
            card_id INTEGER NOT NULL REFERENCES cards(id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('helpful', 'harmful')),
            at TEXT NOT NULL,                -- ISO-8601 UTC, when the event happened
            source TEXT NOT NULL CHECK (source IN ('user', 'correction', 'successful_use')),
            note TEXT,                       -- redacted free text (user command --note)
            session TEXT,                    -- session the event was detected in, if any
            key TEXT UNIQUE                  -- dedupe key of a detected event; NULL for user commands
        )"""
    )
    db.execute("CREATE INDEX feedback_card ON feedback(card_id, at)")
    db.execute(
        """CREATE TRIGGER feedback_append_only_update BEFORE UPDATE ON feedback
           BEGIN SELECT RAISE(ABORT, 'feedback is append-only'); END"""
    )
    db.execute(
        """CREATE TRIGGER feedback_append_only_delete BEFORE DELETE ON feedback
           WHEN EXISTS (SELECT 1 FROM cards WHERE id = OLD.card_id)
           BEGIN SELECT RAISE(ABORT, 'feedback is append-only'); END"""
    )
    # Per-card trust state. A card without a row has the defaults (candidate, no flags).
    db.execute(
        """CREATE TABLE card_trust (
            card_id INTEGER PRIMARY KEY REFERENCES cards(id) ON DELETE CASCADE,
            maturity TEXT NOT NULL DEFAULT 'candidate'
                CHECK (maturity IN ('candidate', 'established', 'proven', 'deprecated')),
            maturity_updated_at TEXT,
            last_feedback_at TEXT,
            needs_maintenance INTEGER NOT NULL DEFAULT 0,   -- confidence fell below 0.2
            revalidate INTEGER NOT NULL DEFAULT 0,          -- 180 days without any signal
            contradicted INTEGER NOT NULL DEFAULT 0,        -- explicitly contradicted: confidence 0, never recalled
            anti_pattern_of INTEGER REFERENCES cards(id) ON DELETE SET NULL,  -- set on an "AVOID: ..." card
            validated_at TEXT,                              -- kept by maintenance: counts as a signal
            updated_at TEXT
        )"""
    )
    db.execute("CREATE INDEX card_trust_anti ON card_trust(anti_pattern_of)")
    # One row per consolidation trust pass; run_key makes a pass idempotent.
    db.execute(
        """CREATE TABLE trust_passes (
            id INTEGER PRIMARY KEY,
            run_key TEXT NOT NULL UNIQUE,
            at TEXT NOT NULL,
            summary TEXT                     -- JSON counts
        )"""
    )
    db.execute(
        """CREATE TABLE episodes (
            id INTEGER PRIMARY KEY,
            session TEXT NOT NULL UNIQUE,
            started_at TEXT NOT NULL,        -- first message of the session (orders "later sessions")
            summary TEXT NOT NULL,           -- redacted, one short paragraph
            writer TEXT NOT NULL DEFAULT 'offline',
            salience REAL NOT NULL DEFAULT 1.0,
            confidence REAL NOT NULL,
            original_confidence REAL NOT NULL,
            later_sessions INTEGER NOT NULL DEFAULT 0,   -- later sessions already folded into salience
            recalled_count INTEGER NOT NULL DEFAULT 0,
            last_recalled_at TEXT,
            status TEXT NOT NULL DEFAULT 'active',       -- active | pruned | removed | archived
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX episodes_status ON episodes(status, salience)")
    db.execute("CREATE INDEX episodes_started ON episodes(started_at)")
    db.execute(
        """CREATE TABLE maintenance_log (
            id INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            target TEXT NOT NULL CHECK (target IN ('card', 'episode')),
            target_id INTEGER NOT NULL,
            action TEXT NOT NULL,            -- removed | archived | reinforced | pruned | retired | edited | added | ...
            reason TEXT NOT NULL,            -- why, with numbers; never card or episode text
            source TEXT NOT NULL,            -- consolidation | maintenance | import | feedback | user
            related_id INTEGER               -- e.g. the replacement card of an edit or an inversion
        )"""
    )
    db.execute("CREATE INDEX maintenance_log_target ON maintenance_log(target, target_id)")
    db.execute(
        """CREATE TABLE trust_meta (
            key TEXT PRIMARY KEY,
            value TEXT
        )"""
    )
