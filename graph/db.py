"""Connection and transaction helpers shared by the graph modules. Standard library only (the
trust and recall code on the hook path imports it)."""

from __future__ import annotations

import itertools
import sqlite3

TYPE_CHECKING = False  # typing costs the hook path ~2.4 ms
if TYPE_CHECKING:
    from typing import Any

_savepoints = itertools.count(1)


def connect_readonly(db_path: Any, busy_timeout_s: float = 0.25, *,
                     check_same_thread: bool = False) -> sqlite3.Connection:
    """A read-only connection (`mode=ro`, `query_only`) that never creates the file (raises
    FileNotFoundError when it is missing) and waits at most `busy_timeout_s` for a lock. The path is
    escaped for the URI, so a home whose path holds `?`, `#` or `%` opens the right file.
    (`redact.memory.SecretMemory._read_conn` repeats this escaping: change both together.)"""
    import os

    path = os.fspath(db_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(path)
    uri_path = path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    conn = sqlite3.connect(f"file:{uri_path}?mode=ro", uri=True, timeout=busy_timeout_s,
                           check_same_thread=check_same_thread)
    conn.execute("PRAGMA query_only = 1")
    return conn


def connection(db: Any) -> sqlite3.Connection:
    """The sqlite3 connection of a `sqlite_utils.Database` (or the connection itself)."""
    return db if isinstance(db, sqlite3.Connection) else db.conn


class transaction:
    """One atomic unit: BEGIN IMMEDIATE ... COMMIT, or a SAVEPOINT when the caller already holds a
    transaction (so consolidation can wrap a card and its progress row in one). On any exception
    everything done inside is rolled back and the exception propagates. `with transaction(db) as conn:`

    Code inside must use `conn.execute` only: sqlite_utils table methods commit on their own.
    (A class rather than a contextlib generator: contextlib is not imported on the hook path.)"""

    def __init__(self, db: Any) -> None:
        self.conn = connection(db)
        self.savepoint: str | None = None

    def __enter__(self) -> sqlite3.Connection:
        if self.conn.in_transaction:
            self.savepoint = f"graph_sp_{next(_savepoints)}"
            self.conn.execute(f"SAVEPOINT {self.savepoint}")
        else:
            self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.savepoint is not None:
            if exc_type is not None:
                self.conn.execute(f"ROLLBACK TO {self.savepoint}")
            self.conn.execute(f"RELEASE {self.savepoint}")
        elif exc_type is not None:
            self.conn.rollback()
        else:
            self.conn.commit()
        return False
