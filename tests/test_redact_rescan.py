"""rescan(): a value first stored without context and learned later is removed from every byte."""

from __future__ import annotations

import random
import string

from reverie.redact.engine import Redactor
from reverie.redact.memory import SecretMemory
from reverie.redact.rescan import rescan

RNG = random.Random(11)


def rand(n: int) -> str:
    return "".join(RNG.choice(string.ascii_letters + string.digits) for _ in range(n - 1)) + "9"


def _all_bytes(db_path) -> bytes:
    out = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = db_path.parent / (db_path.name + suffix)
        if p.exists():
            out += p.read_bytes()
    return out


def test_rescan_removes_planted_value_from_db_wal_and_fts(tmp_path):
    from reverie.consolidate.store import open_db

    db_path = tmp_path / "agent.db"
    db = open_db(db_path)
    conn = db.conn
    secret = "Zq" + rand(22)
    conn.execute("INSERT INTO conversations (id) VALUES ('c1')")
    conn.execute("INSERT INTO messages (id, conversation, uuid, role, kind) VALUES (1, 'c1', 'u1', 'user', 'message')")
    rows = [
        (1, 1, 0, "text", f"connect with {secret} please"),           # no context: not detected then
        (2, 1, 1, "text", "nothing secret here"),
        (3, 1, 2, "tool_result", f"echo {secret} | login --stdin"),
    ]
    conn.executemany("INSERT INTO blocks (id, message_id, idx, type, text) VALUES (?, ?, ?, ?, ?)", rows)
    conn.commit()
    assert conn.execute("SELECT count(*) FROM blocks_fts WHERE blocks_fts MATCH ?", (secret,)).fetchone()[0] == 2
    assert secret.encode() in _all_bytes(db_path)

    # later the value shows up with context and is learned
    sdir = tmp_path / "secrets"
    r = Redactor(sdir)
    assert r.redact(f"export API_TOKEN={secret}").text == "export API_TOKEN=[REDACTED:token]"
    assert r.memory.count() == 1

    changed = rescan(conn, [("blocks", "id", ["text"])], SecretMemory(sdir))
    assert changed == 2
    assert [tuple(x) for x in conn.execute("SELECT id, text FROM blocks ORDER BY id")] == [
        (1, "connect with [REDACTED:remembered] please"),
        (2, "nothing secret here"),
        (3, "echo [REDACTED:remembered] | login --stdin"),
    ]
    assert conn.execute("SELECT count(*) FROM blocks_fts WHERE blocks_fts MATCH ?", (secret,)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM blocks_fts WHERE blocks_fts MATCH 'redacted'").fetchone()[0] == 2
    assert secret.encode() not in _all_bytes(db_path)
    assert secret.lower().encode() not in _all_bytes(db_path).lower()
    # a second rescan has nothing left to do
    assert rescan(conn, [("blocks", "id", ["text"])], r) == 0
    db.conn.close()


def test_rescan_with_redactor_detects_too(tmp_path):
    import sqlite3

    conn = sqlite3.connect(tmp_path / "x.db")
    conn.execute("CREATE TABLE notes (nid INTEGER PRIMARY KEY, title TEXT, body TEXT, n INTEGER)")
    gh = "ghp_" + rand(36)
    conn.executemany("INSERT INTO notes VALUES (?, ?, ?, ?)",
                     [(i, f"t{i}", f"body {i}", i) for i in range(1, 1200)] + [(5000, "tok", f"GITHUB_TOKEN={gh}", None)])
    conn.commit()
    assert rescan(conn, [("notes", "nid", ["title", "body"])], Redactor(None)) == 1
    assert conn.execute("SELECT body FROM notes WHERE nid = 5000").fetchone() == ("GITHUB_TOKEN=[REDACTED:github_token]",)
    assert conn.execute("SELECT count(*) FROM notes").fetchone() == (1200,)
