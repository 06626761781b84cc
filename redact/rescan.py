"""Re-scrub stored text when new secrets were learned.

`rescan(conn, targets, redactor_or_memory)` walks every row of each target table, redacts its text
columns again (with a `Redactor`: detection + remembered secrets; with a `SecretMemory`: remembered
secrets only) and updates the rows that changed. FTS5 indexes stay in sync through the tables'
triggers (sqlite_utils `enable_fts(create_triggers=True)`); afterwards each target's `<table>_fts`
index is merged (`optimize`) so no segment keeps an old token, and the WAL is checkpointed with
TRUNCATE so old pages do not linger in the -wal file.

Invariants: secure_delete is switched ON for the connection first (freed pages are zeroed);
rows are read in id order in batches, so memory stays bounded; the function never logs content;
returns the number of rows changed.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Protocol

logger = logging.getLogger(__name__)

BATCH = 500


class _Scrubber(Protocol):
    def scrub(self, text: str) -> tuple[str, int]: ...


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _fts_tables(conn: sqlite3.Connection, table: str) -> list[str]:
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE '%VIRTUAL TABLE%fts5%'"
    ).fetchall()
    out = []
    for name, sql in rows:
        low = (sql or "").lower().replace('"', "").replace("[", "").replace("]", "").replace("'", "")
        if name == f"{table}_fts" or f"content={table.lower()}" in low.replace(" ", ""):
            out.append(name)
    return out


def rescan(conn: sqlite3.Connection, targets: list[tuple[str, str, list[str]]], redactor_or_memory: _Scrubber) -> int:
    """Re-redact `targets` = [(table, id column, [text columns])]; returns rows changed."""
    scrub = redactor_or_memory.scrub
    conn.execute("PRAGMA secure_delete = ON")
    changed = 0
    for table, id_col, cols in targets:
        qt, qid = _quote(table), _quote(id_col)
        qcols = ", ".join(_quote(c) for c in cols)
        last = None
        before = changed
        while True:
            if last is None:
                rows = conn.execute(f"SELECT {qid}, {qcols} FROM {qt} ORDER BY {qid} LIMIT ?", (BATCH,)).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {qid}, {qcols} FROM {qt} WHERE {qid} > ? ORDER BY {qid} LIMIT ?", (last, BATCH)
                ).fetchall()
            if not rows:
                break
            updates = []
            for row in rows:
                rid, values = row[0], row[1:]
                new_values = []
                dirty = False
                for v in values:
                    if isinstance(v, str) and v:
                        nv, n = scrub(v)
                        if n and nv != v:
                            dirty = True
                        new_values.append(nv)
                    else:
                        new_values.append(v)
                if dirty:
                    updates.append((*new_values, rid))
            if updates:
                sets = ", ".join(f"{_quote(c)} = ?" for c in cols)
                with conn:
                    conn.executemany(f"UPDATE {qt} SET {sets} WHERE {qid} = ?", updates)
                changed += len(updates)
            last = rows[-1][0]
        if changed > before:   # this table's rows changed: merge its FTS index (old tokens go)
            for fts in _fts_tables(conn, table):
                with conn:
                    conn.execute(f"INSERT INTO {_quote(fts)}({_quote(fts)}) VALUES ('optimize')")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.DatabaseError:
        logger.warning("WAL checkpoint failed after rescan; old pages may remain until the next checkpoint")
    logger.info("rescan changed %d rows", changed)
    return changed
