"""`reverie schedule run`: the long-running APScheduler 3.x daemon.

Jobs (all timezone-aware, coalesced, at most one instance each, with a misfire grace time):
- `index`: every `schedule.index_every_minutes` (default 60), first right after start; own thread.
- `nightly:<agent>`: a CronTrigger at the agent's hour:minute (default 02:00 local), starting a
  consolidation pass (which runs that agent's nightly run and whatever else is due).
- `backfill`: every `schedule.backfill_every_minutes` (default 10), a consolidation pass: inside the
  window it makes up missed nightly runs and consolidates agents with a backlog one at a time;
  outside the window it returns at once.
Consolidation passes share one worker thread, so two never overlap. The nightly jobs are re-synced
with the agent list after every index run (new agents, changed `schedule.json`).

Shutdown: SIGTERM or SIGINT (or `runner.stop.set()`) stops the scheduler, lets a running job finish
(its budgets bound it; a second signal exits at once), logs "scheduler stopped cleanly" and returns 0. The scheduler waits on an event until the next job,
so it does not poll. The daemon holds the scheduler lock for its whole life: a second daemon, or a
`schedule tick` from an OS scheduler, does nothing while it runs.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from datetime import datetime, timezone

from .lock import AgentLock, Busy
from .policy import ScheduleConfig
from .runner import Runner

log = logging.getLogger(__name__)

READY = "scheduler ready"
STOPPED = "scheduler stopped cleanly"


class AlreadyRunning(Exception):
    """Another scheduler holds the scheduler lock."""


def job_options(cfg: ScheduleConfig) -> dict:
    """Every job: coalesce missed runs into one, never two instances at once, run late within the grace."""
    return {"coalesce": True, "max_instances": 1, "misfire_grace_time": cfg.misfire_grace_s}


def build_scheduler(runner: Runner, cfg: ScheduleConfig):
    """A configured BlockingScheduler (not started) with the index, backfill and nightly jobs."""
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.schedulers.blocking import BlockingScheduler
    from apscheduler.triggers.interval import IntervalTrigger

    scheduler = BlockingScheduler(
        timezone=cfg.tz,
        executors={"default": ThreadPoolExecutor(1), "index": ThreadPoolExecutor(1)},
        job_defaults=job_options(cfg),
    )
    now = datetime.now(timezone.utc)  # APScheduler runs on the real clock; runner.now only decides
    scheduler.add_job(
        _index_job, IntervalTrigger(minutes=cfg.index_every_minutes, timezone=cfg.tz),
        args=(runner, scheduler), id="index", name="index all transcripts", executor="index",
        next_run_time=now, **job_options(cfg),
    )
    scheduler.add_job(
        _pass_job, IntervalTrigger(minutes=cfg.backfill_every_minutes, timezone=cfg.tz),
        args=(runner, "backfill"), id="backfill", name="window pass (missed nightly runs, backfill)",
        next_run_time=now, **job_options(cfg),
    )
    sync_nightly_jobs(scheduler, runner)
    return scheduler


def sync_nightly_jobs(scheduler, runner: Runner) -> None:
    """One `nightly:<agent>` CronTrigger job per enabled agent at its hour; drop the others."""
    from apscheduler.triggers.cron import CronTrigger

    cfg = runner.load_config()
    wanted = {}
    for agent in runner.agents(cfg):
        if agent.enabled:
            wanted[f"nightly:{agent.id}"] = agent
    existing = {job.id: job for job in scheduler.get_jobs() if job.id.startswith("nightly:")}
    for job_id, job in existing.items():
        if job_id not in wanted:
            scheduler.remove_job(job_id)
            log.info("nightly job removed: %s", job_id)
    for job_id, agent in wanted.items():
        trigger = CronTrigger(hour=agent.hour, minute=agent.minute, timezone=cfg.tz)
        job = existing.get(job_id)
        if job is not None and str(job.trigger) == str(trigger):
            continue
        scheduler.add_job(_pass_job, trigger, args=(runner, f"nightly {agent.id}"), id=job_id,
                          name=f"nightly consolidation of {agent.id} at {agent.at_text}", replace_existing=True,
                          **job_options(cfg))
        log.info("nightly job for %s at %s (%s)", agent.id, agent.at_text, cfg.tz_name)


def _index_job(runner: Runner, scheduler) -> None:
    try:
        if runner.stop.is_set():
            return
        runner.index(force=True)
        if scheduler.running and not runner.stop.is_set():
            sync_nightly_jobs(scheduler, runner)
    except Exception as exc:  # noqa: BLE001 - a job must never take the daemon down
        runner.describe_error("index job", exc)   # scrubbed: the raw message may hold a secret


def _pass_job(runner: Runner, reason: str) -> None:
    try:
        runner.consolidation_pass(reason=reason)
    except Exception as exc:  # noqa: BLE001
        runner.describe_error("consolidation pass", exc)


def run_daemon(runner: Runner, *, install_signals: bool = True, banner: str = "") -> int:
    """Run until SIGTERM/SIGINT; returns the exit code (0 after a clean stop).

    Raises AlreadyRunning (having logged nothing) if another scheduler holds `runner.scheduler_lock`.
    `banner` is appended to the "daemon starting" log line.
    """
    from apscheduler.events import EVENT_SCHEDULER_STARTED

    lock = AgentLock(runner.scheduler_lock, owner="schedule run") if runner.scheduler_lock else None
    if lock is not None:
        try:
            lock.acquire()
        except Busy as exc:
            raise AlreadyRunning(str(exc)) from None
    try:
        log.info("schedule daemon starting%s", banner)
        cfg = runner.load_config()
        scheduler = build_scheduler(runner, cfg)
        stopping = threading.Lock()
        requested: list[str] = []

        def _shutdown() -> None:
            try:
                scheduler.shutdown(wait=False)
            except Exception:  # noqa: BLE001 - already stopped
                pass

        def request_stop(why: str) -> None:
            with stopping:
                if requested:
                    return
                requested.append(why)
            runner.stop.set()
            if scheduler.running:
                # Not from the signal handler itself: shutdown takes locks the main loop may hold.
                threading.Thread(target=_shutdown, name="scheduler-shutdown", daemon=True).start()

        def on_signal(signum, _frame) -> None:
            name = signal.Signals(signum).name
            if requested:
                # Second signal: do not wait for the running job. The OS drops its locks and the
                # pipeline resumes where it stopped on the next run.
                log.warning("received %s again: exiting without waiting for the running job", name)
                logging.shutdown()
                os._exit(128 + signum)
            log.info("received %s, stopping", name)
            request_stop(name)

        def on_started(_event) -> None:
            jobs = scheduler.get_jobs()
            nightly = sorted(j.name for j in jobs if j.id.startswith("nightly:"))
            log.info("%s: %d jobs (timezone %s, window %s%s); %s", READY, len(jobs), cfg.tz_name,
                     cfg.window_text(), ", paused" if cfg.paused else "",
                     "; ".join(nightly) if nightly else "no agents yet")
            if requested:
                threading.Thread(target=_shutdown, name="scheduler-shutdown", daemon=True).start()

        scheduler.add_listener(on_started, EVENT_SCHEDULER_STARTED)

        def watch_stop() -> None:  # `runner.stop.set()` from another thread stops the daemon too
            runner.stop.wait()
            request_stop("stop requested")

        threading.Thread(target=watch_stop, name="scheduler-stop-watch", daemon=True).start()
        previous = {}
        if install_signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, on_signal)
        try:
            scheduler.start()
            if not runner.wait_idle(timeout=0):
                log.info("waiting for the running job to finish (signal again to exit at once)")
                while not runner.wait_idle(timeout=1.0):
                    pass
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        log.info("%s (%s)", STOPPED, requested[0] if requested else "scheduler ended")
        return 0
    finally:
        runner.stop.set()  # releases the watcher thread
        if lock is not None:
            lock.release()
