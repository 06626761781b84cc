"""`reverie schedule run|tick|install|uninstall|status`: the adapter between the application and
`schedules/` (which imports nothing of ours; this module hands it the functions).

- `run`: the APScheduler daemon (hourly index, nightly consolidation at each agent's hour,
  backfill in the window); logs to `<log dir>/schedule.log`; SIGTERM/SIGINT stop it cleanly.
- `tick`: one pass of "what should run now", for cron/launchd/systemd (the units run it hourly).
- `install [--system cron|launchd|systemd] [--print]` / `uninstall [--system ...]`: the OS units.
- `status [--json]`: per agent the next run, the last run and its result, the backlog, the cost per
  night (`schedules.status.cost_per_night`); the per-run budgets and the home-wide nightly budget
  of scheduled runs (`night_budget`: consolidate.max_cost_usd / max_calls per night, `night_caps`).

The application's index, agent listing and pipeline are imported when the jobs are built (not at
module import), so `reverie --help` does not load them.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from ..errors import ReverieError
from . import emit, emit_json, pass_app

log = logging.getLogger(__name__)

SYSTEM_CHOICE = click.Choice(["cron", "launchd", "systemd"])


# ---------------------------------------------------------------------------------------------
# building the runner from the application


def state_dir(home: Path) -> Path:
    return home / "schedules"


def outcome_from_summary(summary: dict[str, Any]):
    """A pipeline summary (issue 4: conversations, passages, cards_written, backlog, errors, ...)
    as a `schedules.runner.RunOutcome`.

    Progress = the run moved something forward: passages consolidated (their conversation's progress
    mark moved), cards written, stretches given up after repeated faults, or no backlog left. The
    summary's `passages` counts passages *planned*, which a run that only hit a usage limit or an
    outage also has, so it is not progress: such an agent waits for the next night."""
    from reverie.schedules.runner import RunOutcome

    def count(key: str) -> int:
        value = summary.get(key) or 0
        if isinstance(value, (list, tuple, set, dict)):
            return len(value)
        try:
            return int(value)
        except (TypeError, ValueError):
            return 0

    conversations, passages, cards = count("conversations"), count("passages_consolidated"), count("cards_written")
    skipped = count("skipped_stretches")
    errors = summary.get("errors") or []
    if not isinstance(errors, list):
        errors = [errors]
    backlog = bool(summary.get("backlog"))
    def n(k: int, word: str) -> str:
        return f"{k} {word}" + ("" if k == 1 else "s")

    result = f"{n(cards, 'card')} from {n(passages, 'passage')} in {n(conversations, 'conversation')}"
    if errors:
        first = errors[0]
        if isinstance(first, dict):
            kind, message = first.get("kind"), first.get("message")
            first = f"{kind}: {message}" if kind and message else (kind or message or json.dumps(first, default=str))
        result += f"; {len(errors)} error{'s' if len(errors) != 1 else ''} (first: {first})"
    if backlog:
        result += "; backlog left"
    progress = conversations > 0 or passages > 0 or cards > 0 or skipped > 0 or not backlog
    cost = summary.get("cost_usd")
    hit = summary.get("budget_exhausted")
    return RunOutcome(progress=progress, backlog=backlog, result=result, calls=count("calls"),
                      cost_usd=float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else 0.0,
                      writer=summary.get("writer") if isinstance(summary.get("writer"), str) else None,
                      exhausted=tuple(x for x in hit if isinstance(x, str)) if isinstance(hit, list) else ())



def record_manual_runs(home: Path, summaries: list[dict[str, Any]], *, started: datetime, finished: datetime) -> int:
    """Tell the scheduler about a `consolidate --now` run: each agent's backlog becomes what the run
    left, the run joins its history, a run with progress ends a sit-out
    (`schedules.policy.apply_manual_run`). Returns how many agents were recorded.

    Skipped: summaries of agents that did not run (busy, or failed before running: `failed`, or an
    error of kind `busy`/`agent_failed`), whose backlog says nothing. Never raises: the run's own
    result stands even when the scheduler state cannot be written (logged). Stored results are
    counts, or quote an error message: every result goes through the printable scrubber first.
    """
    from reverie.schedules.policy import apply_manual_run, spend_entry
    from reverie.schedules.state import StateStore

    from ..scrubber import printable_scrubber

    scrub = printable_scrubber(home)
    done = 0
    try:
        store = StateStore(state_dir(home) / "state.json")
        for summary in summaries:
            if not isinstance(summary, dict) or not isinstance(summary.get("agent"), str):
                continue
            errors = summary.get("errors") if isinstance(summary.get("errors"), list) else []
            if summary.get("failed") or any(isinstance(e, dict) and e.get("kind") in ("busy", "agent_failed")
                                            for e in errors):
                continue
            outcome = outcome_from_summary(summary)
            result = " ".join(scrub(outcome.result).split())[:300]
            store.update_agent(summary["agent"], lambda old, o=outcome, r=result: apply_manual_run(
                old, started=started, finished=finished, result=r, progress=o.progress, backlog=o.backlog,
                spend=spend_entry(o.calls, o.cost_usd, o.writer)))
            done += 1
    except Exception as exc:  # noqa: BLE001 - bookkeeping must not turn a good run into a failure
        log.warning("could not record the consolidate --now run in the scheduler state (%s); "
                    "`reverie schedule status` may show an old backlog until the next scheduled run",
                    type(exc).__name__)
    return done


def build_jobs(home: Path):
    """The application's functions, as `schedules.runner.Jobs`."""
    from reverie.schedules.lock import Busy
    from reverie.schedules.runner import AgentSpec, Jobs, RunOutcome

    from ..agents import disabled_agents, known_agent_ids
    from ..errors import AgentBusy
    from ..index import index_all as run_index
    from ..paths import agent_dir
    from ..pipeline import consolidate_agent
    from ..budget import NIGHT_KEY
    from ..settings import checked_settings, load_settings

    def list_agents() -> list[AgentSpec]:
        # The ids and switches only: `agents.list_agents` would also open every agent.db for its counts.
        disabled = disabled_agents(load_settings(home))
        return [AgentSpec(id=agent_id, dir=agent_dir(home, agent_id), enabled=agent_id not in disabled)
                for agent_id in known_agent_ids(home)]

    def index_all() -> str:
        summary = run_index(home) or {}
        rejected = sum((summary.get("rejected") or {}).values()) if isinstance(summary.get("rejected"), dict) else 0
        text = (f"{summary.get('files_changed', 0)} of {summary.get('files_seen', 0)} files changed, "
                f"{summary.get('messages_added', 0)} messages added")
        return text + (f", {rejected} lines rejected" if rejected else "")

    def consolidate(agent_id: str, trigger: str, allowance=None) -> RunOutcome:
        """One run; a scheduled run's `allowance` (what is left of tonight's budget) reaches the
        pipeline's Budget under `budget.NIGHT_KEY` of the settings it runs with."""
        settings = None
        if allowance is not None:
            settings = {**checked_settings(home), NIGHT_KEY: {
                "night": allowance.night, "max_cost_usd": allowance.max_cost_usd, "max_calls": allowance.max_calls}}
        try:
            summary = consolidate_agent(home, agent_id, trigger=trigger, settings=settings)
        except (Busy, AgentBusy) as exc:
            return RunOutcome(progress=False, backlog=False, result=f"busy: {exc}", busy=True)
        return outcome_from_summary(summary or {})

    from ..scrubber import printable_scrubber

    # everything the scheduler logs or stores (results, error messages) is scrubbed; what cannot be
    # checked is withheld
    return Jobs(list_agents=list_agents, index_all=index_all, consolidate=consolidate,
                scrub=printable_scrubber(home))


def night_caps(cfg, consolidate: Any):
    """`cfg` with the nightly budgets of scheduled runs: consolidate.max_cost_usd and
    consolidate.max_calls, home-wide per night (`schedules.nightly`); a value that is not a
    non-negative number (a hand edit; `consolidate` refuses to run on it) leaves that cap off."""
    from dataclasses import replace

    from reverie.schedules.policy import nonneg

    c = consolidate if isinstance(consolidate, dict) else {}

    def cap(key: str, kind: type):
        return nonneg(c.get(key), kind, None)

    return replace(cfg, night_max_cost_usd=cap("max_cost_usd", float), night_max_calls=cap("max_calls", int))


def config_loader(home: Path, *, strict: bool):
    """Loads the `schedule` settings (and $REVERIE_PAUSE) afresh on every call.

    strict: raise ReverieError on invalid settings (one-shot commands). Otherwise (the daemon) keep
    the last good configuration and log the problem once per change.
    """
    from reverie.schedules.policy import ScheduleConfigError, config_from_settings

    from ..paths import ENV_PAUSE
    from ..settings import load_settings

    last: dict[str, Any] = {}

    def load():
        try:
            settings = load_settings(home)
            cfg = night_caps(config_from_settings(settings.get("schedule"), pause_env=os.environ.get(ENV_PAUSE)),
                             settings.get("consolidate"))
        except ScheduleConfigError as exc:
            if strict or "cfg" not in last:
                raise ReverieError(str(exc)) from None
            if last.get("error") != str(exc):
                log.error("invalid schedule settings, keeping the previous ones: %s", exc)
                last["error"] = str(exc)
            return last["cfg"]
        last["cfg"], last["error"] = cfg, None
        return cfg

    return load


def build_runner(home: Path, *, strict: bool = True):
    from reverie.schedules.runner import Runner
    from reverie.schedules.state import StateStore

    sdir = state_dir(home)
    loader = config_loader(home, strict=strict)
    loader()  # validate now: a broken setting is reported before anything starts
    return Runner(build_jobs(home), load_config=loader, state=StateStore(sdir / "state.json"),
                  scheduler_lock=sdir / "scheduler.lock")


class _LogSetup:
    """Route our and the application's logging to `<log dir>/schedule.log` for one command."""

    def __init__(self, home: Path, *, stream_level: int | None) -> None:
        from ..paths import ensure_private_dir, log_dir

        self.path = ensure_private_dir(log_dir(home)) / "schedule.log"
        fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
        self.handlers: list[logging.Handler] = []
        fh = logging.handlers.RotatingFileHandler(self.path, maxBytes=5_000_000, backupCount=3, encoding="utf-8")
        fh.setFormatter(fmt)
        fh.setLevel(logging.INFO)
        self.handlers.append(fh)
        if stream_level is not None:
            sh = logging.StreamHandler(sys.stderr)
            sh.setFormatter(fmt)
            sh.setLevel(stream_level)
            self.handlers.append(sh)
        try:
            os.chmod(self.path, 0o600)
        except OSError:
            pass

    def __enter__(self):
        root = logging.getLogger()
        self._old_level = root.level
        root.setLevel(logging.INFO)
        for h in self.handlers:
            root.addHandler(h)
        # Their INFO lines (every job run, every recognizer loaded) would flood the log.
        self._quiet = {name: logging.getLogger(name) for name in ("apscheduler", "presidio-analyzer")}
        self._levels = {name: lg.level for name, lg in self._quiet.items()}
        for lg in self._quiet.values():
            lg.setLevel(logging.WARNING)
        return self

    def __exit__(self, *exc):
        root = logging.getLogger()
        for h in self.handlers:
            root.removeHandler(h)
            h.close()
        root.setLevel(self._old_level)
        for name, lg in self._quiet.items():
            lg.setLevel(self._levels[name])


def _tick_argv(home: Path) -> tuple[str, ...]:
    """Absolute command for the OS units: the `reverie` script beside this interpreter, else `python -m reverie.consolidate`."""
    script = Path(sys.executable).parent / ("reverie.exe" if os.name == "nt" else "reverie")
    base = (str(script),) if script.exists() else (sys.executable, "-m", "reverie.consolidate")
    return (*base, "--home", str(home), "schedule", "tick")


def _unit_spec(home: Path):
    from reverie.schedules.units import UnitSpec

    from ..paths import log_dir

    cfg = config_loader(home, strict=True)()
    return UnitSpec(home=home, argv=_tick_argv(home), hour=cfg.hour, minute=cfg.minute,
                    log_dir=log_dir(home), path_env=os.environ.get("PATH"))


# ---------------------------------------------------------------------------------------------
# commands


def _print_dry_run(report, unit: str | None = None) -> None:
    """`install --print`: stdout holds exactly what would be written (the crontab line, or each
    unit file's text: `--print > file.plist` is a valid plist; systemd's two units one at a time
    with `--unit service|timer`); every explanation goes to stderr."""
    if report.crontab_line:
        click.echo("# the crontab line to add with `crontab -e`:", err=True)
        click.echo(report.crontab_line)
    files = report.files
    if unit:
        files = {path: text for path, text in files.items() if str(path).endswith("." + unit)}
        if not files:
            raise ReverieError(f"No .{unit} file to print for this system: --unit is for systemd "
                               "(`reverie schedule install --system systemd --print --unit service`).")
    elif len(files) > 1:
        click.echo("# several files: print one at a time with --unit "
                   + "|".join(sorted(str(p).rsplit(".", 1)[-1] for p in files)), err=True)
    for path, text in files.items():
        click.echo(f"# would write {path}:", err=True)
        click.echo(text, nl=not text.endswith("\n"))
    if report.files and report.commands:
        click.echo("# then run:", err=True)
        for c in report.commands:
            click.echo(f"  {c}", err=True)
    for note in report.notes:
        click.echo(f"note: {note}", err=True)


def register(cli: click.Group) -> None:
    @cli.group("schedule")
    def schedule() -> None:
        """Run by itself: hourly index, nightly consolidation (02:00), backfill in the window (02:00-08:00)."""

    @schedule.command("run")
    @pass_app
    def run_cmd(app) -> None:
        """Run the scheduler daemon in the foreground until SIGTERM/SIGINT."""
        from reverie.schedules.daemon import AlreadyRunning, run_daemon

        runner = build_runner(app.home, strict=False)
        with _LogSetup(app.home, stream_level=logging.INFO) as logs:
            try:
                code = run_daemon(runner, banner=f" (home {app.home}, pid {os.getpid()}, log {logs.path})")
            except AlreadyRunning as exc:
                raise ReverieError(f"A scheduler is already running for this home: {exc} "
                                   "(`reverie schedule status` shows it).") from None
        sys.exit(code)

    @schedule.command("tick")
    @click.option("--json", "as_json", is_flag=True, help="Print what ran as JSON.")
    @pass_app
    def tick_cmd(app, as_json: bool) -> None:
        """One pass: index if due, then nightly runs and backfill while the window lasts (for cron/launchd/systemd)."""
        runner = build_runner(app.home, strict=True)
        with _LogSetup(app.home, stream_level=logging.ERROR):
            report = runner.tick()
        if as_json:
            emit_json(report.as_dict())
            return
        if report.skipped:
            click.echo(f"nothing done: {report.skipped}")
            return
        if report.index:
            click.echo(f"index: {report.index}")
        for r in report.runs:
            click.echo(f"{r.agent} ({r.trigger}): {r.result}")
        if not report.runs:
            click.echo(f"no consolidation: {report.blocked or 'nothing due'}")

    @schedule.command("status")
    @click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
    @pass_app
    def status_cmd(app, as_json: bool) -> None:
        """Per agent: next run, last run and its result, backlog; pause, window, running scheduler."""
        from reverie.schedules.status import format_status, status_report
        from reverie.schedules.units import Targets, installed

        from ..settings import load_settings

        runner = build_runner(app.home, strict=True)
        c = load_settings(app.home).get("consolidate") or {}
        budgets = {"max_calls": c.get("max_calls"), "max_cost_usd": c.get("max_cost_usd"),
                   "max_passages": c.get("max_passages")}
        emit(status_report(runner, installed=installed(_unit_spec(app.home), Targets.default()), budgets=budgets),
             as_json, format_status)

    @schedule.command("install")
    @click.option("--system", type=SYSTEM_CHOICE, default=None,
                  help="OS scheduler (default: launchd on macOS, systemd where running, else cron).")
    @click.option("--print", "print_only", is_flag=True, help="Print what would be written; change nothing.")
    @click.option("--unit", type=click.Choice(["service", "timer"]), default=None,
                  help="With --print on systemd: print only this unit file (stdout is then one valid file).")
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @pass_app
    def install_cmd(app, system: str | None, print_only: bool, unit: str | None, as_json: bool) -> None:
        """Install an OS schedule that runs `reverie schedule tick` (hourly; nightly work at 02:00)."""
        from reverie.schedules.units import Targets, UnitError, default_system, install

        system = system or default_system()
        try:
            report = install(system, _unit_spec(app.home), Targets.default(), dry_run=print_only)
        except UnitError as exc:
            raise ReverieError(str(exc)) from None
        if as_json:
            emit_json(report.as_dict())
            return
        if print_only:
            _print_dry_run(report, unit)
            return
        if report.crontab_line:
            click.echo("crontab line (installed):")
            click.echo(report.crontab_line)
        for path, text in report.files.items():
            click.echo(f"# wrote {path}")
            click.echo(text.rstrip("\n"))
        if report.files and report.commands:
            click.echo("# ran:")
            for c in report.commands:
                click.echo(f"  {c}")
        for note in report.notes:
            click.echo(f"note: {note}")
        if not print_only:
            click.echo(f"installed ({system}); `reverie schedule uninstall` removes it. "
                       "API keys for cron/launchd/systemd runs must be in settings (`reverie settings set anthropic.api_key -`, which reads the key from stdin) "
                       "since these do not see your shell's environment.")

    @schedule.command("uninstall")
    @click.option("--system", type=SYSTEM_CHOICE, default=None, help="Only this OS scheduler (default: all).")
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @pass_app
    def uninstall_cmd(app, system: str | None, as_json: bool) -> None:
        """Remove the OS schedule that `install` wrote for this home."""
        from reverie.schedules.units import SYSTEMS, Targets, UnitError, uninstall

        try:
            reports = uninstall([system] if system else list(SYSTEMS), _unit_spec(app.home), Targets.default(),
                                explicit=system is not None)
        except UnitError as exc:
            raise ReverieError(str(exc)) from None
        if as_json:
            emit_json([r.as_dict() for r in reports])
            return
        removed = [item for r in reports for item in r.removed]
        for item in removed:
            click.echo(f"removed {item}")
        for r in reports:
            for note in r.notes:
                click.echo(f"note: {note}")
        if not removed:
            click.echo("nothing installed for this home")
