"""What each session was given by recall: one small JSON file per session (stdlib only, hook path).

`SessionState` keeps the cards, entities and episodes a session was already shown, so recall
injects each at most once per session; `record_session` adds what a hook printed. Files are written
atomically and pruned by age and count when a new session starts.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import time

from .files import write_text_atomic

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hook ~2.4 ms
if TYPE_CHECKING:
    from typing import Iterable

def _sessions_dir(db_path: str | os.PathLike) -> str:
    """Where an agent's per-session state lives: `recall-sessions/` beside its database."""
    return os.path.join(os.path.dirname(os.path.abspath(os.fspath(db_path))), "recall-sessions")


#: A new session's first save prunes the folder's stale session files at most this often.
PRUNE_EVERY_S = 600


class SessionState:
    """Which cards, entities and episodes a session was already given. One JSON file per session in
    `state_dir` ({"cards": [...], "entities": [...], "episodes": [...]}; a file from before episodes
    were tracked reads as none shown), written atomically; files older than
    `max_age_days` or beyond the `max_files` newest are deleted when a new session starts (at most
    once per PRUNE_EVERY_S: sessions started in between may add a few files beyond `max_files`)."""

    def __init__(self, state_dir: str | os.PathLike, session: str, *, max_files: int = 500, max_age_days: int = 14,
                 max_ids: int = 5000, now: float | None = None) -> None:
        self.dir = os.fspath(state_dir)   # strings, not pathlib: ~2.7 ms of the hook's import
        safe = re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", session or "") and not session.startswith(".")
        if not safe:
            import hashlib
        name = session if safe else hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        self.path = os.path.join(self.dir, f"{name}.json")
        self.max_files, self.max_age_days, self.max_ids = max_files, max_age_days, max_ids
        self.now = now
        self.cards: set[int] = set()
        self.entities: set[int] = set()
        self.episodes: set[int] = set()
        self.exists = False
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.loads(fh.read())
            self.cards = {int(x) for x in data.get("cards", [])}
            self.entities = {int(x) for x in data.get("entities", [])}
            self.episodes = {int(x) for x in data.get("episodes", [])}
            self.exists = True
        except (OSError, ValueError, TypeError, AttributeError):
            pass

    def reset(self) -> None:
        """Forget everything shown (the context lost it: a compaction or /clear)."""
        self.cards, self.entities, self.episodes = set(), set(), set()

    def save(self, cards: Iterable[int], entities: Iterable[int], episodes: Iterable[int] = ()) -> None:
        new_file = not self.exists
        self.cards.update(cards)
        self.entities.update(entities)
        self.episodes.update(episodes)
        # Bounded: a very long session keeps its most recent ids (ids grow with time).
        data = {"cards": sorted(self.cards)[-self.max_ids:], "entities": sorted(self.entities)[-self.max_ids:],
                "episodes": sorted(self.episodes)[-self.max_ids:]}
        write_text_atomic(self.path, json.dumps(data))
        self.exists = True
        if new_file and self._prune_due():
            self.prune()

    def _prune_due(self) -> bool:
        """True at most once per PRUNE_EVERY_S per folder (a marker file's mtime says when the last
        prune ran): a prune stats every session file, ~1.2 ms of a hook at 500 files."""
        marker = os.path.join(self.dir, ".pruned")
        try:
            if time.time() - os.stat(marker).st_mtime < PRUNE_EVERY_S:
                return False
        except OSError:
            pass
        try:
            with open(marker, "w"):
                pass
        except OSError:
            pass
        return True

    def prune(self) -> int:
        """Delete stale session files; returns how many."""
        try:
            entries = [(e.stat().st_mtime, e.path) for e in os.scandir(self.dir)
                       if e.name.endswith(".json") and e.is_file()]
        except OSError:
            return 0
        entries.sort(reverse=True)
        cutoff = (self.now if self.now is not None else time.time()) - self.max_age_days * 86400
        removed = 0
        for i, (mtime, path) in enumerate(entries):
            if i >= self.max_files or mtime < cutoff:
                try:
                    os.unlink(path)
                    removed += 1
                except OSError:
                    pass
        return removed


def record_session(db_path: str | os.PathLike, session: str, shown: dict[str, list[int]] | None, *,
                   reset_session: bool = False, state_dir: str | os.PathLike | None = None,
                   now: _dt.datetime | None = None) -> None:
    """Remember that `session` was shown `shown` (the `session_pending` of `recall(..., record=False)`:
    {"cards": [...], "entities": [...], "episodes": [...]}); with `reset_session`, forget what it got
    before first.
    Lets a caller record only once the text was really delivered (the hook: after its write)."""
    state = SessionState(state_dir or _sessions_dir(db_path), session,
                         now=now.timestamp() if now is not None else None)
    if reset_session:
        state.reset()
    shown = shown or {}
    state.save(shown.get("cards", []), shown.get("entities", []), shown.get("episodes", []))
