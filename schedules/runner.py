"""Carries out what `schedules.policy` decides, with the functions the application hands in.

`schedules` imports nothing of the application: `consolidate` builds a `Jobs` (list the agents,
index everything, consolidate one agent) and a config loader, and the `Runner` does the rest:

- `tick()`: one pass of "what should run now" (index if due, then nightly runs and backfill while
  the window lasts), for the OS schedulers (cron, launchd, systemd) that start a fresh process.
- `consolidation_pass()` / `index()`: what the daemon's jobs call.
- `run_now(ids)`: consolidate now, ignoring the window and the pause (still one run per agent at a
  time: the application's consolidate function takes the per-agent lock).

Invariants:
- A job function that raises (including a module that does not exist yet) is logged and recorded
  as an error result; it never stops the runner. Logged and stored messages pass through
  `jobs.scrub` (the application's secret scrubber) and are clipped.
- Consolidation runs one at a time within a runner; across processes the scheduler lock
  (`<home>/schedules/scheduler.lock`, held by the daemon for its life and by a tick while it runs)
  keeps two schedulers from working at once.
- The configuration is reloaded before every decision, so `schedule.paused` and window changes
  take effect without a restart.
- Scheduled runs share the nightly budgets (`schedules.nightly`): each gets what is left of
  tonight's, its spending joins the night's ledger in the same state write as its result, and none
  starts once the night's budget is spent (the pass stops with that reason).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Iterator

from . import nightly, policy
from .lock import AgentLock, Busy
from .policy import AgentSchedule, ScheduleConfig
from .state import StateStore

log = logging.getLogger(__name__)

MAX_TEXT = 300


def _identity(text: str) -> str:
    return text


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class AgentSpec:
    """An agent as the application lists it: id, its folder, and whether it is switched on."""

    id: str
    dir: Path
    enabled: bool = True


@dataclass(frozen=True)
class RunOutcome:
    """What one consolidation run reports.

    progress: it consolidated at least one conversation or passage (clearing a backlog also counts,
    the runner adds that); backlog: work was left behind; result: a one-line summary (no content);
    busy: the agent's lock was held by another run, so nothing was done.
    """

    progress: bool
    backlog: bool
    result: str
    busy: bool = False
    #: what the run spent: model calls, dollars (as the writer reported them) and the writer's name;
    #: kept in the run's history entry (`schedule status` sums the cost per night)
    calls: int = 0
    cost_usd: float = 0.0
    writer: str | None = None
    #: the budgets that stopped the run ("cost", "calls", "passages"); a scheduled run stopped by
    #: "cost" or "calls" ends tonight's scheduled runs (`schedules.nightly`)
    exhausted: tuple[str, ...] = ()


@dataclass
class Jobs:
    """The application's functions. Any may raise; the runner logs and carries on."""

    list_agents: Callable[[], list[AgentSpec]]
    index_all: Callable[[], str]
    #: (agent_id, trigger) -> outcome; a scheduled run under nightly caps is called with
    #: `allowance=` (`schedules.nightly.Allowance`: what is left of tonight's budget) as well
    consolidate: Callable[..., RunOutcome]
    scrub: Callable[[str], str] = _identity


@dataclass(frozen=True)
class RunRecord:
    agent: str
    trigger: str
    started_at: datetime
    finished_at: datetime
    result: str
    progress: bool
    backlog: bool
    busy: bool = False
    error: bool = False

    def as_dict(self) -> dict:
        return {
            "agent": self.agent,
            "trigger": self.trigger,
            "started_at": policy.iso(self.started_at),
            "finished_at": policy.iso(self.finished_at),
            "result": self.result,
            "progress": self.progress,
            "backlog": self.backlog,
            "busy": self.busy,
            "error": self.error,
        }


@dataclass
class TickReport:
    index: str | None = None  # result of the index run, None if not due / skipped
    runs: list[RunRecord] = field(default_factory=list)
    skipped: str | None = None  # why the tick did nothing at all
    blocked: str | None = None  # why consolidation did not (or no longer) start

    def as_dict(self) -> dict:
        return {"index": self.index, "runs": [r.as_dict() for r in self.runs], "skipped": self.skipped,
                "blocked": self.blocked}


class Runner:
    """Runs index and consolidation jobs as `schedules.policy` decides; see the module docstring."""

    def __init__(
        self,
        jobs: Jobs,
        *,
        load_config: Callable[[], ScheduleConfig],
        state: StateStore,
        scheduler_lock: Path | None = None,
        now: Callable[[], datetime] = utc_now,
        stop: threading.Event | None = None,
    ) -> None:
        self.jobs = jobs
        self.load_config = load_config
        self.state = state
        self.scheduler_lock = scheduler_lock
        self.now = now
        self.stop = stop or threading.Event()
        self._consolidating = threading.Lock()
        self._active = 0
        self._idle = threading.Condition()
        self._warned: set[tuple[str, str]] = set()

    # -- helpers ------------------------------------------------------------------------------

    def clean(self, text: str) -> str:
        """Scrubbed (jobs.scrub), one line, at most MAX_TEXT characters: safe to log and store."""
        try:
            text = self.jobs.scrub(text)
        except Exception:  # noqa: BLE001 - a failing scrubber must not leak: drop the text
            return "(message withheld: scrubber failed)"
        text = " ".join(text.split())
        return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"

    def describe_error(self, what: str, exc: BaseException) -> str:
        """Log `what failed` with the exception's type, its scrubbed message (`clean`) and its frames
        (code locations only), never the raw message; returns the one-line error for state/results."""
        msg = self.clean(str(exc))
        frames = "".join(traceback.format_tb(exc.__traceback__)).rstrip()
        log.error("%s failed: %s: %s\n%s", what, type(exc).__name__, msg, frames)
        return f"error: {type(exc).__name__}: {msg}" if msg else f"error: {type(exc).__name__}"

    @contextlib.contextmanager
    def _track(self) -> Iterator[None]:
        """Count a running job (the daemon waits for the count to reach zero before it exits)."""
        with self._idle:
            self._active += 1
        try:
            yield
        finally:
            with self._idle:
                self._active -= 1
                self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no job of this runner is running; True if idle."""
        with self._idle:
            return self._idle.wait_for(lambda: self._active == 0, timeout=timeout)

    def agents(self, cfg: ScheduleConfig) -> list[AgentSchedule]:
        """The application's agents with their schedules; [] (logged) if listing fails."""
        try:
            specs = list(self.jobs.list_agents())
        except Exception as exc:  # noqa: BLE001
            self.describe_error("listing agents", exc)
            return []
        out = []
        for spec in specs:
            sched = policy.agent_schedule(spec.id, spec.enabled, spec.dir, cfg)
            if sched.problem and (spec.id, sched.problem) not in self._warned:
                self._warned.add((spec.id, sched.problem))  # once per runner, not every pass
                log.warning("agent %s: %s", spec.id, self.clean(sched.problem))
            out.append(sched)
        return out

    # -- index --------------------------------------------------------------------------------

    def index(self, *, force: bool = False) -> str | None:
        """Index all transcripts if due (or `force`), unless paused. Returns the result or None."""
        cfg = self.load_config()
        now = self.now()
        if cfg.paused:
            log.info("index skipped: %s", policy.automatic_blocked(now, cfg))
            return None
        last, _ = self.state.index_state()
        if not force and not policy.index_due(last, now, cfg):
            return None
        with self._track():
            log.info("index started")
            try:
                result = self.clean(str(self.jobs.index_all() or "done"))
                log.info("index finished: %s", result)
            except Exception as exc:  # noqa: BLE001
                result = self.describe_error("index", exc)
            self.state.record_index(now, result)
        return result

    # -- consolidation ------------------------------------------------------------------------

    def _run(self, agent: str, trigger: str, *, night: str | None = None,
             scheduled_for: datetime | None = None, allowance: nightly.Allowance | None = None) -> RunRecord:
        started = self.now()
        log.info("consolidation of %s started (%s)", agent, trigger)
        busy = error = False
        backlog: bool | None
        spend: dict | None = None
        exhausted: tuple = ()
        try:
            if allowance is None:
                outcome = self.jobs.consolidate(agent, trigger)
            else:
                outcome = self.jobs.consolidate(agent, trigger, allowance=allowance)
            busy, progress, backlog = outcome.busy, bool(outcome.progress), bool(outcome.backlog)
            result = self.clean(outcome.result)
            spend = policy.spend_entry(outcome.calls, outcome.cost_usd, outcome.writer)
            exhausted = tuple(outcome.exhausted or ()) if allowance is not None else ()
        except Busy as exc:
            busy, progress, backlog = True, False, None
            result = self.clean(f"busy: {exc}")
        except Exception as exc:  # noqa: BLE001
            error, progress, backlog = True, False, None
            result = self.describe_error(f"consolidation of {agent}", exc)
        finished = self.now()
        ledger = night if trigger in nightly.SCHEDULED and not busy else None
        new = self.state.update_agent(agent, lambda old: policy.apply_outcome(
            old, trigger=trigger, started=started, finished=finished, result=result, progress=progress,
            backlog=backlog, busy=busy, night=night, scheduled_for=scheduled_for, spend=spend),
            night=ledger, spend=lambda ns: nightly.add_run(ns, spend, exhausted))
        if busy:
            log.info("consolidation of %s skipped: %s", agent, result)
        else:
            log.info("consolidation of %s finished (%s): %s; progress=%s backlog=%s%s", agent, trigger, result,
                     new.last_progress, new.backlog,
                     "; sits out the rest of the night" if new.skip_night == night and night else "")
        return RunRecord(agent=agent, trigger=trigger, started_at=started, finished_at=finished, result=result,
                         progress=bool(new.last_progress) if not busy else False, backlog=new.backlog,
                         busy=busy, error=error)

    def consolidation_pass(self, *, reason: str = "pass", index_between: bool = False) -> tuple[list[RunRecord], str | None]:
        """Run due nightly runs, then backfill, one at a time, until nothing is due, the window
        closes, or `stop` is set. Returns (runs, why it stopped or None).

        `index_between`: also index when due between runs (a long tick keeps the index hourly); the
        caller checks the index before the pass.
        """
        runs: list[RunRecord] = []
        busy: set[str] = set()
        if not self._consolidating.acquire(blocking=False):
            return runs, "another pass of this scheduler is running"
        try:
            with self._track():
                while not self.stop.is_set():
                    if index_between and runs:  # the first index check is the caller's (tick)
                        self.index()
                    cfg = self.load_config()
                    now = self.now()
                    blocked = policy.automatic_blocked(now, cfg)
                    if blocked:
                        if runs:
                            log.info("consolidation pass (%s) ends: %s", reason, blocked)
                        return runs, blocked
                    agents = self.agents(cfg)
                    decision = policy.pick_next(agents, self.state.agent_states(), now, cfg, exclude=busy)
                    if decision is None:
                        return runs, None
                    spent = self.state.night_spend(decision.night)
                    why = nightly.spent_reason(cfg, spent)
                    if why:
                        log.info("consolidation pass (%s) ends: %s", reason, why)
                        return runs, why
                    rec = self._run(decision.agent, decision.trigger, night=decision.night,
                                    scheduled_for=decision.scheduled_for,
                                    allowance=nightly.allowance(cfg, spent, decision.night))
                    runs.append(rec)
                    if rec.busy:
                        busy.add(rec.agent)
                return runs, "stopping"
        finally:
            self._consolidating.release()

    def run_now(self, agent_ids: Iterable[str] | None = None) -> list[RunRecord]:
        """Consolidate now: ignores the window and the pause. `None` means every enabled agent."""
        if agent_ids is None:
            cfg = self.load_config()
            agent_ids = [a.id for a in self.agents(cfg) if a.enabled]
        with self._track():
            return [self._run(a, "now") for a in agent_ids]

    def tick(self) -> TickReport:
        """One pass for an OS scheduler: index if due, then consolidate while there is work in the
        window. Does nothing if another scheduler (daemon or tick) holds the scheduler lock."""
        report = TickReport()
        lock = AgentLock(self.scheduler_lock, owner="schedule tick") if self.scheduler_lock else None
        try:
            if lock:
                lock.acquire()
        except Busy as exc:
            report.skipped = f"another scheduler is running ({exc.holder.describe() if exc.holder else 'unknown'})"
            log.info("tick skipped: %s", report.skipped)
            return report
        try:
            report.index = self.index()
            report.runs, report.blocked = self.consolidation_pass(reason="tick", index_between=True)
            return report
        finally:
            if lock:
                lock.release()
