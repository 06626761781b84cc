"""Connection and transaction helpers shared by the graph modules. Standard library only (the
trust and recall code on the hook path imports it)."""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from typing import Any, Iterator

_savepoints = itertools.count(1)


def connection(db: Any) -> sqlite3.Connection:
    """The sqlite3 connection of a `sqlite_utils.Database` (or the connection itself)."""
    return db if isinstance(db, sqlite3.Connection) else db.conn


@contextlib.contextmanager
def transaction(db: Any) -> Iterator[sqlite3.Connection]:
    """One atomic unit: BEGIN IMMEDIATE ... COMMIT, or a SAVEPOINT when the caller already holds a
    transaction (so consolidation can wrap a card and its progress row in one). On any exception
    everything done inside is rolled back and the exception propagates.

    Code inside must use `conn.execute` only: sqlite_utils table methods commit on their own."""
    conn = connection(db)
    if conn.in_transaction:
        name = f"graph_sp_{next(_savepoints)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.rollback()
        raise
    conn.commit()
