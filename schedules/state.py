"""The scheduler's memory: `<home>/schedules/state.json`.

Layout::

    {"version": 1,
     "agents": {"<id>": {"last_started_at", "last_finished_at", "last_trigger", "last_result",
                         "last_progress", "backlog", "nightly_for", "skip_night", "history": [...],
                         "last_run_result" (only while the latest attempt was busy)}},
     "index": {"last_at", "result"},
     "nights": {"<night id>": {"cost_usd", "calls", "runs", "exhausted": [...]}}}

"nights" is the home-wide ledger of the nightly budgets (`schedules.nightly`): what the scheduled
runs of each of the last 14 nights spent, written in the same update as the run's agent state.

Invariants: every write is atomic (temp file + os.replace, mode 0600) and every read-modify-write
holds a lock (a thread lock plus `flock` on `state.json.lock` where fcntl exists), so the daemon's
threads, a `schedule tick` and a `consolidate --now` may update it at once without losing updates.
An unreadable file is moved aside (`state.json.corrupt-<time>`), never silently overwritten, and
the scheduler starts afresh; an agent entry that is not an object reads as an empty state and is
replaced by the next update (logged). Times are UTC ISO-8601. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from . import nightly
from .nightly import NightSpend
from .policy import AgentState, iso, parse_iso

try:
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

VERSION = 1


def _empty() -> dict[str, Any]:
    return {"version": VERSION, "agents": {}, "index": {}}


class StateStore:
    """Read and update `path` (normally `<home>/schedules/state.json`)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._guard = threading.RLock()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._guard:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if fcntl is None:  # pragma: no cover
                yield
                return
            fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # blocking: held for a read-modify-write only
                yield
            finally:
                try:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                finally:
                    os.close(fd)

    def _read(self) -> dict[str, Any]:
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return _empty()
        except OSError as exc:
            log.warning("cannot read %s (%s); using empty scheduler state", self.path, exc.strerror)
            return _empty()
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except ValueError:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}")
            try:
                os.replace(self.path, aside)
                log.warning("scheduler state %s was unreadable; moved aside to %s and started afresh", self.path, aside)
            except OSError:
                log.warning("scheduler state %s is unreadable; starting afresh", self.path)
            return _empty()
        data.setdefault("version", VERSION)
        if not isinstance(data.get("agents"), dict):
            data["agents"] = {}
        if not isinstance(data.get("index"), dict):
            data["index"] = {}
        return data

    def _write(self, data: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".state.", dir=str(self.path.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, indent=2, sort_keys=True)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    # -- public -------------------------------------------------------------------------------

    def load(self) -> dict[str, Any]:
        """The whole state (a fresh dict; mutating it changes nothing on disk)."""
        with self._locked():
            return self._read()

    def agent_states(self) -> dict[str, AgentState]:
        """Every agent's state. An entry that is not a JSON object (a hand edit) reads as an empty
        state, as `update_agent` treats it; the next update of that agent replaces it."""
        return {k: AgentState.from_dict(v) for k, v in self.load()["agents"].items()}

    def update(self, fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Apply `fn` to the state under the lock and write it atomically; returns the new state."""
        with self._locked():
            data = self._read()
            fn(data)
            self._write(data)
            return data

    def update_agent(self, agent_id: str, fn: Callable[[AgentState], AgentState], *, night: str | None = None,
                     spend: Callable[[NightSpend], NightSpend] | None = None) -> AgentState:
        """Replace one agent's state by `fn(old)`; returns the new state. With `night` and `spend`,
        the same write replaces that night's ledger entry by `spend(old)` (see `night_spend`).

        An entry that is not a JSON object (a hand edit) is taken as empty (logged) and replaced."""
        out: list[AgentState] = []

        def change(data: dict[str, Any]) -> None:
            entry = data["agents"].get(agent_id)
            if entry is not None and not isinstance(entry, dict):
                log.warning("scheduler state of agent %s in %s was a JSON %s, not an object; "
                            "starting that agent's state afresh", agent_id, self.path, type(entry).__name__)
            new = fn(AgentState.from_dict(entry))
            data["agents"][agent_id] = new.to_dict()
            out.append(new)
            if night is not None and spend is not None:
                nights = data.get("nights") if isinstance(data.get("nights"), dict) else {}
                nights[night] = spend(NightSpend.from_dict(nights.get(night))).to_dict()
                data["nights"] = nightly.prune(nights)

        self.update(change)
        return out[0]

    def night_spend(self, night: str) -> NightSpend:
        """What the scheduled runs of night `night` spent (nothing for an unknown night or a hand-
        edited entry that is not an object)."""
        nights = self.load().get("nights")
        return NightSpend.from_dict(nights.get(night) if isinstance(nights, dict) else None)

    def index_state(self) -> tuple[Any, str | None]:
        """(last index time, its result) or (None, None)."""
        idx = self.load()["index"]
        return parse_iso(idx.get("last_at")), idx.get("result")

    def record_index(self, at, result: str) -> None:
        def change(data: dict[str, Any]) -> None:
            data["index"] = {"last_at": iso(at), "result": result}

        self.update(change)
