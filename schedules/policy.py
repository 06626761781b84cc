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
  (spring-forward gap) are read with the offset before the change (02:30 becomes 03:30 that day);
  repeated times (fall-back) take their first occurrence.
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

    A missing file means defaults; an unreadable or invalid one is ignored (defaults used, agent stays
    as enabled as it was) and reported in `problem`. `enabled: false` in the file switches only the
    schedule off (the agent stays indexed and `consolidate --now` still works).
    """
    base = AgentSchedule(id=agent_id, hour=cfg.hour, minute=cfg.minute, enabled=enabled)
    if agent_dir is None:
        return base
    path = Path(agent_dir) / "schedule.json"
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return base
    except OSError as exc:
        return replace(base, problem=f"{path}: unreadable ({exc.strerror}); defaults used")
    try:
        data = json.loads(raw)
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
    """What the scheduler remembers about one agent (persisted by `schedules.state`)."""

    last_started_at: datetime | None = None
    last_finished_at: datetime | None = None
    last_trigger: str | None = None
    last_result: str | None = None
    last_progress: bool | None = None
    backlog: bool = False
    nightly_for: datetime | None = None  # the scheduled occurrence the last nightly run served
    skip_night: str | None = None  # night id (window start date) the agent sits out
    history: tuple = field(default_factory=tuple)  # last few runs, newest last, as dicts

    def to_dict(self) -> dict:
        return {
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

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "AgentState":
        d = d or {}
        hist = d.get("history") or []
        return cls(
            last_started_at=parse_iso(d.get("last_started_at")),
            last_finished_at=parse_iso(d.get("last_finished_at")),
            last_trigger=d.get("last_trigger") if isinstance(d.get("last_trigger"), str) else None,
            last_result=d.get("last_result") if isinstance(d.get("last_result"), str) else None,
            last_progress=d.get("last_progress") if isinstance(d.get("last_progress"), bool) else None,
            backlog=bool(d.get("backlog", False)),
            nightly_for=parse_iso(d.get("nightly_for")),
            skip_night=d.get("skip_night") if isinstance(d.get("skip_night"), str) else None,
            history=tuple(h for h in hist if isinstance(h, dict)) if isinstance(hist, list) else (),
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


def current_window(now: datetime, cfg: ScheduleConfig) -> tuple[datetime, datetime] | None:
    """The window containing `now` (start <= now < end), or None outside every window."""
    today = local_date(now, cfg.tz)
    for day in (today, today - timedelta(days=1)):
        start, end = window_of(day, cfg)
        if start <= now < end:
            return start, end
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


def last_occurrence(now: datetime, hour: int, minute: int, tz: tzinfo) -> datetime:
    """The latest instant <= now whose local wall clock is hour:minute (UTC)."""
    today = local_date(now, tz)
    for k in range(0, 3):
        occ = wall(today - timedelta(days=k), time(hour, minute), tz)
        if occ <= now:
            return occ
    raise AssertionError("unreachable")  # pragma: no cover


def next_occurrence(now: datetime, hour: int, minute: int, tz: tzinfo) -> datetime:
    """The first instant > now whose local wall clock is hour:minute (UTC)."""
    today = local_date(now, tz)
    for k in range(0, 3):
        occ = wall(today + timedelta(days=k), time(hour, minute), tz)
        if occ > now:
            return occ
    raise AssertionError("unreachable")  # pragma: no cover


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
    win = current_window(now, cfg)
    if win is None:
        return None
    occ = last_occurrence(now, agent.hour, agent.minute, cfg.tz)
    return occ if occ >= win[0] else None


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
) -> AgentState:
    """The agent's state after a run.

    - busy (another run holds the agent's lock): nothing changes but the result; the agent keeps its
      place in the round-robin and its nightly run stays due.
    - `backlog` None (the run failed before reporting one) keeps the previous backlog.
    - progress = the run consolidated something, or it cleared a backlog. An automatic run without
      progress makes the agent sit out the rest of `night`.
    - a nightly run records the occurrence it served, so it is not repeated that night.
    """
    entry = {"at": iso(started), "trigger": trigger, "result": result}
    if busy:
        return replace(state, last_result=result, history=(state.history + (entry,))[-HISTORY_KEEP:])
    new_backlog = state.backlog if backlog is None else backlog
    made_progress = progress or (state.backlog and backlog is False)
    entry.update({"finished": iso(finished), "progress": made_progress, "backlog": new_backlog})
    nxt = replace(
        state,
        last_started_at=started,
        last_finished_at=finished,
        last_trigger=trigger,
        last_result=result,
        last_progress=made_progress,
        backlog=new_backlog,
        history=(state.history + (entry,))[-HISTORY_KEEP:],
    )
    if trigger == "nightly" and scheduled_for is not None:
        nxt = replace(nxt, nightly_for=scheduled_for)
    if trigger in ("nightly", "backfill") and not made_progress and night is not None:
        nxt = replace(nxt, skip_night=night)
    return nxt


def next_run(agent: AgentSchedule, state: AgentState, now: datetime, cfg: ScheduleConfig) -> tuple[datetime | None, str]:
    """When the agent's next automatic run is expected, and why (for `schedule status`).

    Returns (time, reason). time is None when nothing automatic will run (paused, disabled, or the
    agent's hour lies outside the window).
    """
    if cfg.paused:
        return None, automatic_blocked(now, cfg) or "paused"
    if not agent.enabled:
        return None, "schedule disabled"
    if not in_window(time(agent.hour, agent.minute), cfg):
        return None, (f"its hour {agent.at_text} is outside the window {cfg.window_text()}: "
                      "move the hour into the window or widen schedule.window_start/window_end")
    win = current_window(now, cfg)
    if win is not None:
        night = night_id(win[0], cfg)
        if state.skip_night != night:
            if nightly_due(agent, state, now, cfg):
                return now, "nightly run due now (catching up)"
            if state.backlog:
                return now, "backfill (has a backlog)"
    occ = next_occurrence(now, agent.hour, agent.minute, cfg.tz)
    # The occurrence must open a night the agent is not sitting out.
    while True:
        w = current_window(occ, cfg)
        if w is not None and state.skip_night != night_id(w[0], cfg):
            break
        occ = next_occurrence(occ, agent.hour, agent.minute, cfg.tz)
    return occ, "nightly"
