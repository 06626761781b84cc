"""Re-scrubbing an agent db when the home's secret memory learns a secret (`rescan_agent`).

Every stored text (the index tables, card statements, episode summaries, entity names and aliases,
feedback notes) is scrubbed with the remembered values, no detection; see `rescan_agent`.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

from . import agents as _agents
from .paths import agent_db_path, secrets_dir

log = logging.getLogger(__name__)

#: (table, key column, text columns) re-scrubbed when the secret memory learns a new secret.
RESCAN_TARGETS = [
    ("blocks", "id", ["text", "tool_name"]),
    ("messages", "id", ["cwd"]),
    ("conversations", "id", ["title", "cwd", "git_branch"]),
]


#: Graph and trust text re-scrubbed too (cards get their `norm` recomputed and `cards_fts` merged;
#: `feedback.note` is handled by `_rescan_feedback_notes`, the append-only trigger allows nothing else).
GRAPH_RESCAN_TARGETS = [
    ("episodes", "id", ["summary", "session"]),
]
RESCAN_META_KEY = "rescan_generation"


def rescan_home(home: Path) -> int:
    """`rescan_agent` for every agent of the home that has a db; returns rows changed."""
    total = 0
    for agent_id in _agents.known_agent_ids(Path(home)):
        if agent_db_path(Path(home), agent_id).exists():
            try:
                total += rescan_agent(home, agent_id)
            except sqlite3.Error:
                log.warning("rescan of agent %s failed; it is retried next run", agent_id, exc_info=True)
    return total


def rescan_agent(home: Path, agent_id: str) -> int:
    """Re-scrub an agent db when the home's secret memory learned secrets since its last rescan.

    The generation rescanned last is stored in the agent db (`graph_meta['rescan_generation']`);
    whenever `SecretMemory.generation()` is higher, every stored text is scrubbed with the memory
    (remembered values, no detection: everything was detected when written): the index tables
    (RESCAN_TARGETS), card statements (their `norm` recomputed, `cards_fts` merged), episode
    summaries and sessions, entity names and aliases (GRAPH_RESCAN_TARGETS) and feedback notes.
    Then the WAL is checkpointed (redact.rescan does). Called at the start and end of each index
    run and at the end of each consolidation. Returns rows changed (0 when nothing to do)."""
    try:
        from reverie.redact.memory import SecretMemory
        from reverie.redact.rescan import rescan
    except ImportError:
        log.warning("redact.rescan is not available; earlier rows were not re-scrubbed")
        return 0
    from .store import open_db

    home = Path(home)
    path = agent_db_path(home, agent_id)
    if not path.exists():
        return 0
    memory = SecretMemory(secrets_dir(home))
    try:
        gen = int(memory.generation())
        db = open_db(path)
        try:
            conn = db.conn
            row = conn.execute("SELECT value FROM graph_meta WHERE key = ?", (RESCAN_META_KEY,)).fetchone()
            try:
                done = int(row[0]) if row else -1
            except (TypeError, ValueError):
                done = -1
            if gen <= done:
                return 0
            if done < 0 and memory.count() == 0:
                changed = 0
            else:
                conn.execute("PRAGMA secure_delete = ON")
                changed = _rescan_cards(conn, memory)
                changed += _rescan_feedback_notes(conn, memory)
                changed += _rescan_entities(conn, memory)
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                targets = [t for t in RESCAN_TARGETS + GRAPH_RESCAN_TARGETS if t[0] in tables]
                changed += int(rescan(conn, targets, memory) or 0)
            with conn:
                conn.execute("INSERT INTO graph_meta(key, value) VALUES (?, ?) "
                             "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (RESCAN_META_KEY, str(gen)))
            try:
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                log.warning("WAL checkpoint after rescan failed")
            return changed
        finally:
            db.close()
    finally:
        memory.close()


def _rescan_cards(conn: sqlite3.Connection, memory: Any) -> int:
    """Scrub card statements; a changed statement gets its `norm` recomputed (cards_fts follows by
    trigger), and the FTS index is merged so no old segment keeps the value."""
    from reverie.graph.text import normalize_statement

    changed = 0
    last = 0
    while True:
        rows = conn.execute("SELECT id, statement FROM cards WHERE id > ? ORDER BY id LIMIT 500", (last,)).fetchall()
        if not rows:
            break
        updates = []
        for cid, statement in rows:
            new, n = memory.scrub(statement or "")
            if n and new != statement:
                updates.append((new, normalize_statement(new), cid))
        if updates:
            with conn:
                conn.executemany("UPDATE cards SET statement = ?, norm = ? WHERE id = ?", updates)
            changed += len(updates)
        last = rows[-1][0]
    if changed:
        with conn:
            conn.execute("INSERT INTO cards_fts(cards_fts) VALUES ('optimize')")
    return changed


def _rescan_entities(conn: sqlite3.Connection, memory: Any) -> int:
    """Scrub entity names and aliases; their normalized keys (`norm`, derived from the name, so
    they carry the value too) are recomputed. An alias whose new key is taken already is dropped
    (the entity keeps its other aliases)."""
    from reverie.graph.db import transaction
    from reverie.graph.entities import normalize_entity

    try:
        ents = conn.execute("SELECT id, name FROM entities").fetchall()
        aliases = conn.execute("SELECT norm, alias, entity_id, how FROM entity_aliases").fetchall()
    except sqlite3.OperationalError:
        return 0
    changed = 0
    with transaction(conn):
        for eid, name in ents:
            new, n = memory.scrub(name or "")
            if n and new != name:
                norm = normalize_entity(new) or f"redacted-entity-{eid}"
                if conn.execute("SELECT 1 FROM entities WHERE norm = ? AND id != ?", (norm, eid)).fetchone():
                    norm = f"{norm}-{eid}"
                conn.execute("UPDATE entities SET name = ?, norm = ? WHERE id = ?", (new, norm, eid))
                changed += 1
        for norm, alias, eid, how in aliases:
            new, n = memory.scrub(alias or "")
            if n and new != alias:
                conn.execute("DELETE FROM entity_aliases WHERE norm = ?", (norm,))
                new_norm = normalize_entity(new)
                if new_norm:
                    conn.execute("INSERT OR IGNORE INTO entity_aliases(norm, alias, entity_id, how) VALUES (?, ?, ?, ?)",
                                 (new_norm, new, eid, how))
                changed += 1
    return changed


_FEEDBACK_TRIGGER = "feedback_append_only_update"


def _rescan_feedback_notes(conn: sqlite3.Connection, memory: Any) -> int:
    """Scrub `feedback.note`. The table is append-only (a trigger refuses UPDATE); a note-only
    scrub is the one allowed change: in ONE transaction the trigger is dropped, the notes updated
    and the identical trigger re-created, so no other update can slip in."""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?",
                       (_FEEDBACK_TRIGGER,)).fetchone()
    try:
        notes = conn.execute("SELECT id, note FROM feedback WHERE note IS NOT NULL AND note != ''").fetchall()
    except sqlite3.OperationalError:
        return 0
    updates = []
    for fid, note in notes:
        new, n = memory.scrub(note)
        if n and new != note:
            updates.append((new, fid))
    if not updates:
        return 0
    from reverie.graph.db import transaction

    with transaction(conn):       # BEGIN IMMEDIATE: the DDL is part of the same transaction
        if row:
            conn.execute(f"DROP TRIGGER {_FEEDBACK_TRIGGER}")
        conn.executemany("UPDATE feedback SET note = ? WHERE id = ?", updates)
        if row:
            conn.execute(row[0])
    return len(updates)


