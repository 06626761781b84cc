"""What should run now: pure functions of (configuration, agents, their state, the clock).

Nothing here reads the clock, sleeps or touches APScheduler; the daemon (`schedules.daemon`) and the
one-shot `tick` (`schedules.runner`) both ask these functions, and tests drive them with a fake clock.

Rules (issue 7):
- Automatic work happens only when not paused (setting `schedule.paused`, or `$REVERIE_PAUSE`).
- Automatic consolidation happens only inside the window (default 02:00-08:00 local time; a window
  whose end is not after its start crosses midnight; start == end means all day). A run started
  inside the window is allowed to finish (its own budgets bound it); none starts outside.
- Each enabled agent gets one nightly run per night, at its hour (default 02:00, per-agent
  `schedule.json`). A nightly run missed (machine asleep, daemon down) is made up later in the same
  window, never outside it. An hour outside the window never fires (status warns about it).
- After the nightly runs, agents with a backlog are consolidated one at a time (backfill),
  least recently run first, so that several agents share the window round-robin.
- A run that makes no progress (usage limit, outage, budget reached, error) puts its agent aside
  until the next night (the next window); a busy agent (locked by another run) is only skipped for
  the current pass.
- Times are timezone-aware; every stored time is UTC ISO-8601. Wall-clock times that do not exist
  (spring-forward gap) are read with the offset before the change (02:30 becomes 03:30 that day),
  except a nightly time that this reading would push out of its window (a window ending at 03:00:
  the 02:00 run is then read with the offset after the change, 01:00), so every night whose window
  holds the agent's hour gets exactly one nightly run; repeated times (fall-back) take their first
  occurrence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any, Iterable, Mapping

UTC = timezone.utc
_FALSE = {"", "0", "false", "no", "off", "n"}


class ScheduleConfigError(ValueError):
    """A schedule setting is invalid; the message names the setting and the fix."""


@dataclass(frozen=True)
class ScheduleConfig:
    """The `schedule` settings section, validated. `tz` is a tzinfo (zoneinfo or fixed offset)."""

    tz: tzinfo
    hour: int = 2
    minute: int = 0
    window_start: time = time(2, 0)
    window_end: time = time(8, 0)
    paused: bool = False
    paused_by: str | None = None  # "settings" | "environment" | None
    misfire_grace_s: int = 3600
    index_every_minutes: int = 60
    backfill_every_minutes: int = 10
    #: the nightly budgets of scheduled runs, home-wide (`schedules.nightly`); the application
    #: hands in consolidate.max_cost_usd / consolidate.max_calls; None = no nightly cap
    night_max_cost_usd: float | None = None
    night_max_calls: int | None = None

    @property
    def tz_name(self) -> str:
        return getattr(self.tz, "key", None) or str(self.tz)

    def window_text(self) -> str:
        return f"{self.window_start:%H:%M}-{self.window_end:%H:%M}"


def _parse_hhmm(value: Any, key: str) -> time:
    if isinstance(value, str):
        parts = value.strip().split(":")
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            h, m = int(parts[0]), int(parts[1])
            if 0 <= h <= 23 and 0 <= m <= 59:
                return time(h, m)
    raise ScheduleConfigError(
        f"schedule.{key} = {value!r} is not a time of day: set it as \"HH:MM\", "
        f"e.g. `reverie settings set schedule.{key} 02:00`."
    )


def _int_in(value: Any, key: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ScheduleConfigError(f"{key} = {value!r} must be a whole number from {lo} to {hi}.")
    return value


def env_flag(value: str | None) -> bool:
    """`$REVERIE_PAUSE`: 1/true/yes/on pause, unset/empty/0/false/no/off do not; anything else pauses."""
    return value is not None and value.strip().lower() not in _FALSE


def resolve_tz(name: str | None) -> tzinfo:
    """A tz database name, or the machine's local zone (tzlocal) when None/empty."""
    if name:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            return ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ScheduleConfigError(
                f"schedule.timezone = {name!r} is not a known time zone: use a tz database name such as "
                "\"Europe/Paris\", or remove the setting to use the machine's zone."
            ) from None
    try:
        import tzlocal

        return tzlocal.get_localzone()
    except Exception:  # noqa: BLE001 - a broken local zone must not stop the scheduler
        return UTC


def config_from_settings(section: Mapping[str, Any] | None, *, pause_env: str | None = None) -> ScheduleConfig:
    """Validate the `schedule` settings section (already merged with defaults) into a config.

    `pause_env` is the value of `$REVERIE_PAUSE` (the caller reads the environment).
    """
    s = dict(section or {})
    tz = resolve_tz(s.get("timezone"))
    hour = _int_in(s.get("hour", 2), "schedule.hour", 0, 23)
    minute = _int_in(s.get("minute", 0), "schedule.minute", 0, 59)
    ws = _parse_hhmm(s.get("window_start", "02:00"), "window_start")
    we = _parse_hhmm(s.get("window_end", "08:00"), "window_end")
    paused_setting = s.get("paused", False)
    if not isinstance(paused_setting, bool):
        raise ScheduleConfigError(f"schedule.paused = {paused_setting!r} must be true or false.")
    paused_by = None
    if env_flag(pause_env):
        paused_by = "environment"
    elif paused_setting:
        paused_by = "settings"
    return ScheduleConfig(
        tz=tz,
        hour=hour,
        minute=minute,
        window_start=ws,
        window_end=we,
        paused=paused_by is not None,
        paused_by=paused_by,
        misfire_grace_s=_int_in(s.get("misfire_grace_s", 3600), "schedule.misfire_grace_s", 1, 86400),
        index_every_minutes=_int_in(s.get("index_every_minutes", 60), "schedule.index_every_minutes", 1, 1440),
        backfill_every_minutes=_int_in(s.get("backfill_every_minutes", 10), "schedule.backfill_every_minutes", 1, 720),
    )


# ---------------------------------------------------------------------------------------------
# agents and their state


@dataclass(frozen=True)
class AgentSchedule:
    """One agent as the scheduler sees it: enabled, and its nightly time (local wall clock)."""

    id: str
    hour: int
    minute: int
    enabled: bool = True
    source: str = "default"  # "default" | "schedule.json"
    problem: str | None = None  # why schedule.json was ignored, if it was

    @property
    def at_text(self) -> str:
        return f"{self.hour:02d}:{self.minute:02d}"


def agent_schedule(agent_id: str, enabled: bool, agent_dir: Path | None, cfg: ScheduleConfig) -> AgentSchedule:
    """Defaults from `cfg`, overridden by `<agent_dir>/schedule.json` ({"hour", "minute", "enabled"}).

    A missing file means defaults; an unreadable or invalid one (not UTF-8, e.g. UTF-16 as PowerShell
    writes it; not JSON; nested too deeply; wrong keys or values) is ignored (defaults used, agent
    stays as enabled as it was) and reported in `problem`: this function never raises for the file's
    content. A UTF-8 byte order mark is accepted. `enabled: false` in the file switches only the
    schedule off (the agent stays indexed and `consolidate --now` still works).
    """
    base = AgentSchedule(id=agent_id, hour=cfg.hour, minute=cfg.minute, enabled=enabled)
    if agent_dir is None:
        return base
    path = Path(agent_dir) / "schedule.json"
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        return base
    except OSError as exc:
        return replace(base, problem=f"{path}: unreadable ({exc.strerror or exc}); defaults used")
    try:
        raw = blob.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return replace(base, problem=f"{path}: not UTF-8 text (byte {exc.start}); defaults used "
                                     "(save it as UTF-8, or delete it)")
    try:
        try:
            data = json.loads(raw)
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        unknown = sorted(set(data) - {"hour", "minute", "enabled"})
        if unknown:
            raise ValueError(f"unknown keys {unknown}; allowed: hour, minute, enabled")
        hour = _int_in(data.get("hour", cfg.hour), "hour", 0, 23)
        minute = _int_in(data.get("minute", cfg.minute), "minute", 0, 59)
        on = data.get("enabled", True)
        if not isinstance(on, bool):
            raise ValueError("enabled must be true or false")
    except (ValueError, ScheduleConfigError) as exc:
        return replace(base, problem=f"{path}: {exc}; defaults used (fix or delete the file)")
    return AgentSchedule(id=agent_id, hour=hour, minute=minute, enabled=enabled and on, source="schedule.json")


@dataclass(frozen=True)
class AgentState:
    """What the scheduler remembers about one agent (persisted by `schedules.state`).

    `last_started_at`, `last_finished_at`, `last_trigger`, `last_progress` describe the last real run
    (one that got the agent's lock). `last_result` is the result of the latest attempt, a busy one
    included; while that attempt was busy, `run_result` keeps the last real run's result (else it is
    None and `last_result` is that result): `last_run_result` is always the real run's result.
    """

    last_started_at: datetime | None = None
    last_finished_at: datetime | None = None
    last_trigger: str | None = None
    last_result: str | None = None
    last_progress: bool | None = None
    backlog: bool = False
    nightly_for: datetime | None = None  # the scheduled occurrence the last nightly run served
    skip_night: str | None = None  # night id (window start date) the agent sits out
    history: tuple = field(default_factory=tuple)  # last few runs, newest last, as dicts
    run_result: str | None = None  # the last real run's result, set only while the latest attempt was busy

    @property
    def last_run_result(self) -> str | None:
        """The result of the last real run (never a busy attempt's message once a real run exists)."""
        return self.run_result if self.run_result is not None else self.last_result

    def to_dict(self) -> dict:
        """JSON-ready; `last_run_result` is written only while the latest attempt was busy."""
        out = {
            "last_started_at": iso(self.last_started_at),
            "last_finished_at": iso(self.last_finished_at),
            "last_trigger": self.last_trigger,
            "last_result": self.last_result,
            "last_progress": self.last_progress,
            "backlog": self.backlog,
            "nightly_for": iso(self.nightly_for),
            "skip_night": self.skip_night,
            "history": list(self.history),
        }
        if self.run_result is not None:
            out["last_run_result"] = self.run_result
        return out

    @classmethod
    def from_dict(cls, d: Any) -> "AgentState":
        """Tolerant of hand edits: anything but a mapping (a list, a string, null) is an empty state,
        and a field of the wrong type is read as absent."""
        if not isinstance(d, Mapping):
            return cls()

        def text(key: str) -> str | None:
            value = d.get(key)
            return value if isinstance(value, str) else None

        hist = d.get("history") or []
        return cls(
            last_started_at=parse_iso(d.get("last_started_at")),
            last_finished_at=parse_iso(d.get("last_finished_at")),
            last_trigger=text("last_trigger"),
            last_result=text("last_result"),
            last_progress=d.get("last_progress") if isinstance(d.get("last_progress"), bool) else None,
            backlog=d.get("backlog") is True,
            nightly_for=parse_iso(d.get("nightly_for")),
            skip_night=text("skip_night"),
            history=tuple(h for h in hist if isinstance(h, dict)) if isinstance(hist, list) else (),
            run_result=text("last_run_result"),
        )


def iso(dt: datetime | None) -> str | None:
    """UTC ISO-8601 with a Z, or None."""
    if dt is None:
        return None
    return dt.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_iso(value: Any) -> datetime | None:
    """An aware datetime from ISO-8601 (naive values are taken as UTC); None if absent or invalid."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


# ---------------------------------------------------------------------------------------------
# clock arithmetic


def wall(day: date, at: time, tz: tzinfo) -> datetime:
    """The instant (UTC) of wall-clock `at` on `day` in `tz` (gap: offset before; overlap: first)."""
    return datetime.combine(day, at, tzinfo=tz).replace(fold=0).astimezone(UTC)


def local_date(now: datetime, tz: tzinfo) -> date:
    return now.astimezone(tz).date()


def window_of(day: date, cfg: ScheduleConfig) -> tuple[datetime, datetime]:
    """The window that opens on local `day`: (start, end) in UTC."""
    start = wall(day, cfg.window_start, cfg.tz)
    if cfg.window_end > cfg.window_start:
        end = wall(day, cfg.window_end, cfg.tz)
    else:  # crosses midnight; equal bounds = all day
        end = wall(day + timedelta(days=1), cfg.window_end, cfg.tz)
    return start, end


def _current_window_day(now: datetime, cfg: ScheduleConfig) -> tuple[date, datetime, datetime] | None:
    """(local day the window opened, start, end) of the window containing `now`, or None."""
    today = local_date(now, cfg.tz)
    for day in (today, today - timedelta(days=1)):
        start, end = window_of(day, cfg)
        if start <= now < end:
            return day, start, end
    return None


def current_window(now: datetime, cfg: ScheduleConfig) -> tuple[datetime, datetime] | None:
    """The window containing `now` (start <= now < end), or None outside every window."""
    found = _current_window_day(now, cfg)
    return None if found is None else (found[1], found[2])


def _in_gap(local: datetime) -> bool:
    """Whether the aware local wall-clock time does not exist (skipped by a spring-forward change)."""
    back = local.astimezone(UTC).astimezone(local.tzinfo)
    return back.replace(tzinfo=None) != local.replace(tzinfo=None)


def nightly_in_window(day: date, hour: int, minute: int, cfg: ScheduleConfig) -> datetime | None:
    """The instant (UTC) of the nightly time hour:minute inside the window that opens on local `day`,
    or None when that window holds no such wall-clock time (the hour is outside the window).

    Exactly one instant per window. A repeated time (fall-back) takes its first occurrence. A time
    that does not exist (spring-forward gap) is read with the offset before the change (02:30
    becomes 03:30); when that reading falls at or after the window's end (a window ending at or
    just after the gap, e.g. 22:00-03:00 with a 02:00 run), it is read with the offset after the
    change instead (02:00 becomes 01:00), so the night still gets its run inside the window.
    """
    start, end = window_of(day, cfg)
    at = time(hour, minute)
    for d in (day, day + timedelta(days=1)):
        local = datetime.combine(d, at, tzinfo=cfg.tz)
        readings = [local.replace(fold=0)]
        if _in_gap(local):
            readings.append(local.replace(fold=1))
        for reading in readings:
            occ = reading.astimezone(UTC)
            if start <= occ < end:
                return occ
    return None


def next_window_start(now: datetime, cfg: ScheduleConfig) -> datetime:
    """The start of the first window that opens after `now`."""
    today = local_date(now, cfg.tz)
    for k in range(0, 3):
        start, _ = window_of(today + timedelta(days=k), cfg)
        if start > now:
            return start
    return window_of(today + timedelta(days=3), cfg)[0]  # pragma: no cover


def night_id(window_start: datetime, cfg: ScheduleConfig) -> str:
    """A night is named by the local date its window opens."""
    return local_date(window_start, cfg.tz).isoformat()


def in_window(at: time, cfg: ScheduleConfig) -> bool:
    """Whether a wall-clock time of day falls inside the window."""
    ws, we = cfg.window_start, cfg.window_end
    if ws == we:
        return True
    if ws < we:
        return ws <= at < we
    return at >= ws or at < we


# ---------------------------------------------------------------------------------------------
# decisions


@dataclass(frozen=True)
class Decision:
    agent: str
    trigger: str  # "nightly" | "backfill"
    night: str  # night id
    scheduled_for: datetime | None = None  # the nightly occurrence served (nightly only)


def automatic_blocked(now: datetime, cfg: ScheduleConfig) -> str | None:
    """Why no automatic consolidation may start now, or None if it may."""
    if cfg.paused:
        return f"paused ({'$REVERIE_PAUSE' if cfg.paused_by == 'environment' else 'setting schedule.paused'})"
    if current_window(now, cfg) is None:
        return f"outside the window {cfg.window_text()}"
    return None


def nightly_occurrence(agent: AgentSchedule, now: datetime, cfg: ScheduleConfig) -> datetime | None:
    """The nightly occurrence of `agent` that belongs to the window containing `now`, if any."""
    found = _current_window_day(now, cfg)
    if found is None:
        return None
    occ = nightly_in_window(found[0], agent.hour, agent.minute, cfg)
    return occ if occ is not None and occ <= now else None


def nightly_due(agent: AgentSchedule, state: AgentState, now: datetime, cfg: ScheduleConfig) -> bool:
    """Whether the agent's nightly run of the current night is due (and not yet done) at `now`."""
    if not agent.enabled or cfg.paused:
        return False
    win = current_window(now, cfg)
    if win is None:
        return False
    if state.skip_night == night_id(win[0], cfg):
        return False
    occ = nightly_occurrence(agent, now, cfg)
    if occ is None:
        return False
    return state.nightly_for is None or state.nightly_for < occ


def _lru_key(agent: AgentSchedule, state: AgentState) -> tuple:
    started = state.last_started_at
    return (0 if started is None else 1, started or datetime.min.replace(tzinfo=UTC), agent.id)


def pick_next(
    agents: Iterable[AgentSchedule],
    states: Mapping[str, AgentState],
    now: datetime,
    cfg: ScheduleConfig,
    *,
    exclude: Iterable[str] = (),
) -> Decision | None:
    """The one consolidation to start now, or None.

    Order: due nightly runs first, then backfill of agents with a backlog; within each, the least
    recently started agent first (never-run agents before all others, ties by id). Agents in
    `exclude` (busy in this pass), disabled agents and agents sitting out this night are passed over.
    """
    if automatic_blocked(now, cfg) is not None:
        return None
    win = current_window(now, cfg)
    assert win is not None
    night = night_id(win[0], cfg)
    skip = set(exclude)
    pool = [a for a in agents if a.enabled and a.id not in skip]
    st = {a.id: states.get(a.id, AgentState()) for a in pool}
    due = [a for a in pool if nightly_due(a, st[a.id], now, cfg)]
    if due:
        a = min(due, key=lambda a: _lru_key(a, st[a.id]))
        return Decision(agent=a.id, trigger="nightly", night=night, scheduled_for=nightly_occurrence(a, now, cfg))
    backlog = [a for a in pool if st[a.id].backlog and st[a.id].skip_night != night]
    if backlog:
        a = min(backlog, key=lambda a: _lru_key(a, st[a.id]))
        return Decision(agent=a.id, trigger="backfill", night=night)
    return None


def index_due(last_index_at: datetime | None, now: datetime, cfg: ScheduleConfig) -> bool:
    """Hourly (configurable) index: due when never run or the period has elapsed (1 min slack)."""
    if cfg.paused:
        return False
    if last_index_at is None:
        return True
    return now - last_index_at >= timedelta(minutes=cfg.index_every_minutes) - timedelta(minutes=1)


HISTORY_KEEP = 20


def nonneg(value: Any, kind: type, default: Any = 0) -> Any:
    """`kind(value)` for a non-negative int or float (not a bool), else `default` (a hand edit, a
    missing field)."""
    return kind(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else default


def spend_entry(calls: Any, cost_usd: Any, writer: Any) -> dict | None:
    """The history entry's spending fields {"calls", "cost_usd", "writer"} from a run's report
    (anything not a number counts as 0), or None when the run reported neither calls nor a writer."""
    if not calls and not cost_usd and writer is None:
        return None
    return {"calls": nonneg(calls, int), "cost_usd": round(nonneg(cost_usd, float, 0.0), 6),
            "writer": writer if isinstance(writer, str) else None}


def apply_outcome(
    state: AgentState,
    *,
    trigger: str,
    started: datetime,
    finished: datetime,
    result: str,
    progress: bool,
    backlog: bool | None,
    busy: bool = False,
    night: str | None = None,
    scheduled_for: datetime | None = None,
    spend: Mapping[str, Any] | None = None,
) -> AgentState:
    """The agent's state after a run.

    - busy (another run holds the agent's lock): nothing changes but the latest result (the last
      real run's result is kept in `run_result`); the agent keeps its place in the round-robin and
      its nightly run stays due.
    - `backlog` None (the run failed before reporting one) keeps the previous backlog.
    - progress = the run consolidated something, or it cleared a backlog. An automatic run without
      progress makes the agent sit out the rest of `night`.
    - a nightly run records the occurrence it served, so it is not repeated that night.
    - `spend` (`spend_entry`: calls, cost_usd, writer) joins the run's history entry.
    """
    entry = {"at": iso(started), "trigger": trigger, "result": result, **dict(spend or {})}
    if busy:
        kept = state.last_run_result if state.last_started_at is not None else None
        return replace(state, last_result=result, run_result=kept,
                       history=(state.history + (entry,))[-HISTORY_KEEP:])
    new_backlog = state.backlog if backlog is None else backlog
    made_progress = progress or (state.backlog and backlog is False)
    entry.update({"finished": iso(finished), "progress": made_progress, "backlog": new_backlog})
    nxt = replace(
        state,
        last_started_at=started,
        last_finished_at=finished,
        last_trigger=trigger,
        last_result=result,
        run_result=None,
        last_progress=made_progress,
        backlog=new_backlog,
        history=(state.history + (entry,))[-HISTORY_KEEP:],
    )
    if trigger == "nightly" and scheduled_for is not None:
        nxt = replace(nxt, nightly_for=scheduled_for)
    if trigger in ("nightly", "backfill") and not made_progress and night is not None:
        nxt = replace(nxt, skip_night=night)
    return nxt


def apply_manual_run(
    state: AgentState,
    *,
    started: datetime,
    finished: datetime,
    result: str,
    progress: bool,
    backlog: bool,
    spend: Mapping[str, Any] | None = None,
) -> AgentState:
    """The agent's state after a run the user started outside the scheduler (`consolidate --now`).

    The backlog becomes what the run left (so `schedule status` and backfill see the work it did),
    and the run joins the history (trigger "now"). It is not the scheduler's last run: the `last_*`
    fields, the round-robin place and the nightly mark stay as they were. A run that made progress
    (or cleared the backlog) ends a sit-out: whatever stopped the automatic run is over.
    """
    made_progress = progress or (state.backlog and not backlog)
    entry = {"at": iso(started), "trigger": "now", "result": result, "finished": iso(finished),
             "progress": made_progress, "backlog": backlog, **dict(spend or {})}
    return replace(state, backlog=backlog, skip_night=None if made_progress else state.skip_night,
                   history=(state.history + (entry,))[-HISTORY_KEEP:])


def next_run(agent: AgentSchedule, state: AgentState, now: datetime, cfg: ScheduleConfig, *,
             night_spent: bool = False) -> tuple[datetime | None, str]:
    """When the agent's next automatic run is expected, and why (for `schedule status`).

    Returns (time, reason), the same answer `pick_next` gives when asked at that time: inside a
    window the agent does not sit out, `now` if its nightly run is due or it has a backlog;
    otherwise the earlier of its next nightly occurrence and, with a backlog, the start of the next
    window it does not sit out (backfill runs it then; at the same instant the nightly run wins).
    time is None when nothing automatic will run: paused, disabled, or its hour lies outside the
    window and it has no backlog. `night_spent`: the current window's nightly budget is spent
    (`schedules.nightly.spent_reason`), so the agent sits out the rest of this window.
    """
    if cfg.paused:
        return None, automatic_blocked(now, cfg) or "paused"
    if not agent.enabled:
        return None, "schedule disabled"
    cur = _current_window_day(now, cfg)
    spent_night = night_id(cur[1], cfg) if cur is not None and night_spent else None
    if cur is not None and state.skip_night != night_id(cur[1], cfg) and spent_night is None:
        if nightly_due(agent, state, now, cfg):
            return now, "nightly run due now (catching up)"
        if state.backlog:
            return now, "backfill (has a backlog)"
    hour_ok = in_window(time(agent.hour, agent.minute), cfg)
    first_day = cur[0] if cur is not None else local_date(now, cfg.tz) - timedelta(days=1)
    nightly: datetime | None = None
    backfill: datetime | None = None
    for k in range(0, 8):  # a week of windows: a sat-out night or a DST quirk skips at most one or two
        day = first_day + timedelta(days=k)
        start, _end = window_of(day, cfg)
        if night_id(start, cfg) in (state.skip_night, spent_night):
            continue
        if state.backlog and backfill is None and start > now:
            backfill = start
        if hour_ok and nightly is None:
            occ = nightly_in_window(day, agent.hour, agent.minute, cfg)
            if occ is not None and occ > now and (state.nightly_for is None or state.nightly_for < occ):
                nightly = occ
        if (nightly is not None or not hour_ok) and (backfill is not None or not state.backlog):
            break
    outside = (f"its hour {agent.at_text} is outside the window {cfg.window_text()}: "
               "move the hour into the window or widen schedule.window_start/window_end")
    if backfill is not None and (nightly is None or backfill < nightly):
        return backfill, "backfill (has a backlog)" + ("" if hour_ok else f"; no nightly run: {outside}")
    if nightly is not None:
        return nightly, "nightly"
    return None, outside if not hour_ok else "no nightly run found in the next week"
