"""Shared test doubles: a settable clock, fake `crontab`/recorder executables for the OS-unit
tests, and an agent db holding conversations as the indexer stores them."""

from __future__ import annotations

import contextlib
import threading
from datetime import datetime
from pathlib import Path
from typing import Iterator

#: A fake `crontab` (format with python=, store=, calls=): `-l` prints the stored table (or fails
#: like crontab with none), `-` stores stdin; every call is appended to `calls`.
FAKE_CRONTAB = """#!{python}
import pathlib, sys
store, calls = pathlib.Path({store!r}), pathlib.Path({calls!r})
with calls.open("a") as fh:
    fh.write("crontab " + " ".join(sys.argv[1:]) + "\\n")
if sys.argv[1:] == ["-l"]:
    if not store.exists():
        sys.stderr.write("no crontab for tester\\n")
        sys.exit(1)
    sys.stdout.write(store.read_text())
elif sys.argv[1:] == ["-"]:
    store.write_text(sys.stdin.read())
else:
    sys.exit(2)
"""

#: A fake executable (format with python=, calls=, name=) that only records its arguments.
FAKE_RECORDER = """#!{python}
import pathlib, sys
with pathlib.Path({calls!r}).open("a") as fh:
    fh.write({name!r} + " " + " ".join(sys.argv[1:]) + "\\n")
"""


class Clock:
    """A clock the test moves: `clock()` is the current instant, `clock.set(t)` moves it."""

    def __init__(self, t: datetime) -> None:
        self.t = t

    def __call__(self) -> datetime:
        return self.t

    def set(self, t: datetime) -> None:
        self.t = t


@contextlib.contextmanager
def held_by_another_thread(path: Path, *, owner: str) -> Iterator[None]:
    """`path`'s AgentLock held by another thread (another run, or a daemon) for the with-block."""
    from reverie.schedules.lock import AgentLock

    holding, release = threading.Event(), threading.Event()

    def hold():
        with AgentLock(path, owner=owner):
            holding.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    holding.wait(30)
    try:
        yield
    finally:
        release.set()
        t.join()


def make_agent(home: Path, agent: str, conversations: dict[str, list[tuple[str, str]]]) -> Path:
    """An agent db holding the given conversations ((role, text) turns) as the indexer stores them;
    conversation n is on day n of October 2026."""
    from reverie.consolidate.store import open_db

    path = home / "agents" / agent / "agent.db"
    db = open_db(path)
    for n, (conv, turns) in enumerate(conversations.items()):
        day = f"2026-10-{n + 1:02d}"
        db.conn.execute("INSERT INTO conversations(id, cwd, first_at, last_at) VALUES (?,?,?,?)",
                        (conv, "/w", f"{day}T09:00:00Z", f"{day}T10:00:00Z"))
        for i, (role, text) in enumerate(turns):
            mid = db.conn.execute(
                "INSERT INTO messages(conversation, uuid, role, kind, timestamp) VALUES (?,?,?,?,?)",
                (conv, f"{conv}-{i}", role, "message", f"{day}T09:{i:02d}:00Z")).lastrowid
            db.conn.execute("INSERT INTO blocks(message_id, idx, type, text) VALUES (?,?,?,?)", (mid, 0, "text", text))
    db.conn.commit()
    db.close()
    return path
