"""`reverie schedule status`: per agent, the next run, the last run and its result, the backlog.

`status_report()` returns plain JSON-ready data (UTC ISO times, plus local renderings);
`format_status()` turns it into the human text. Standard library only.

Per agent, `last_run` describes one real run of the scheduler (its start, end, trigger, result and
progress belong together); `last_result` is the latest attempt's result, which differs from
`last_run.result` only when that attempt found the agent busy. `next_run` is the time
`schedules.policy.pick_next` will really start the agent (see `policy.next_run`). `cost_per_night` sums each night's runs (dollars and model calls as the writer
reported them, the writers that ran) from the agent's run history (the last 20 runs).
`night_budget` is the home-wide nightly budget of scheduled runs (`schedules.nightly`): the caps,
what the open window's night (else the latest night) spent, and `spent`, the reason no scheduled
run starts before the next night; every enabled agent then shows it as its `skip_reason`.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from . import nightly, policy
from .lock import LOCK_NAME, read_holder
from .runner import Runner


def _local(dt: datetime | None, cfg: policy.ScheduleConfig) -> str | None:
    if dt is None:
        return None
    return dt.astimezone(cfg.tz).strftime("%Y-%m-%d %H:%M %Z").strip()


#: Nights listed per agent under `cost_per_night` (newest first).
COST_NIGHTS = 7


def night_of(at: datetime, cfg: policy.ScheduleConfig) -> str:
    """The night a run started at `at` belongs to: the local date of the latest window start at or
    before it (a night runs from one window start to the next, so a daytime `consolidate --now`
    counts for the night before it)."""
    day = policy.local_date(at, cfg.tz)
    start, _ = policy.window_of(day, cfg)
    return (day if at >= start else day - timedelta(days=1)).isoformat()


def cost_per_night(history: tuple | list, cfg: policy.ScheduleConfig, limit: int = COST_NIGHTS) -> list[dict]:
    """[{"night", "cost_usd", "calls", "runs", "writers"}] of the runs in `history` (entries with a
    start time; busy attempts spent nothing), newest night first, at most `limit` nights."""
    nights: dict[str, dict] = {}
    for entry in history:
        at = policy.parse_iso(entry.get("at")) if isinstance(entry, dict) else None
        if at is None:
            continue
        n = nights.setdefault(night_of(at, cfg), {"cost_usd": 0.0, "calls": 0, "runs": 0, "writers": []})
        n["runs"] += 1
        cost, calls = entry.get("cost_usd"), entry.get("calls")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            n["cost_usd"] += float(cost)
        if isinstance(calls, int) and not isinstance(calls, bool):
            n["calls"] += calls
        writer = entry.get("writer")
        if isinstance(writer, str) and writer not in n["writers"]:
            n["writers"].append(writer)
    out = [{"night": k, **v, "cost_usd": round(v["cost_usd"], 6)} for k, v in nights.items()]
    return sorted(out, key=lambda n: n["night"], reverse=True)[:limit]


def status_report(runner: Runner, *, installed: list[str] | None = None,
                  budgets: dict | None = None) -> dict:
    """The scheduler's view of this home now. Never raises for a missing/failed agent listing:
    the failure is reported in `problems`."""
    cfg = runner.load_config()
    now = runner.now()
    problems: list[str] = []
    try:
        specs = list(runner.jobs.list_agents())
    except Exception as exc:  # noqa: BLE001
        specs = []
        problems.append(f"cannot list agents: {type(exc).__name__}: {runner.clean(str(exc))}")
    states = runner.state.agent_states()
    win = policy.current_window(now, cfg)
    night = policy.night_id(win[0], cfg) if win else None
    ledger_night = night or night_of(now, cfg)
    spend = runner.state.night_spend(ledger_night)
    # only the open window's night can be spent: the next window is a new night
    spent = nightly.spent_reason(cfg, spend) if night is not None else None
    agents = []
    for spec in specs:
        sched = policy.agent_schedule(spec.id, spec.enabled, spec.dir, cfg)
        st = states.get(spec.id, policy.AgentState())
        nxt, why = policy.next_run(sched, st, now, cfg, night_spent=spent is not None)
        skipped_until = skip_reason = None
        if spent is not None and sched.enabled:  # the budget is why, even after a run it refused
            skipped_until, skip_reason = policy.next_window_start(now, cfg), spent
        elif night is not None and st.skip_night == night:
            skipped_until, skip_reason = policy.next_window_start(now, cfg), "last run made no progress"
        holder = read_holder(Path(spec.dir) / LOCK_NAME)
        agents.append({
            "agent": spec.id,
            "enabled": sched.enabled,
            "at": sched.at_text,
            "at_source": sched.source,
            "problem": sched.problem,
            "next_run": policy.iso(nxt),
            "next_run_local": _local(nxt, cfg),
            "next_reason": why,
            "last_run": None if st.last_started_at is None else {
                "started_at": policy.iso(st.last_started_at),
                "finished_at": policy.iso(st.last_finished_at),
                "trigger": st.last_trigger,
                "result": st.last_run_result,
                "progress": st.last_progress,
            },
            "last_result": st.last_result,
            "backlog": st.backlog,
            "skipped_until": policy.iso(skipped_until),
            "skip_reason": skip_reason,
            "running": holder.as_dict() if holder else None,
            "cost_per_night": cost_per_night(st.history, cfg),
        })
        if sched.problem:
            problems.append(sched.problem)
    last_index, index_result = runner.state.index_state()
    sched_holder = read_holder(runner.scheduler_lock) if runner.scheduler_lock else None
    return {
        "now": policy.iso(now),
        "timezone": cfg.tz_name,
        "window": {"start": f"{cfg.window_start:%H:%M}", "end": f"{cfg.window_end:%H:%M}",
                   "open_now": win is not None},
        "paused": cfg.paused,
        "paused_by": cfg.paused_by,
        "scheduler": {"running": sched_holder is not None,
                      **({"pid": sched_holder.pid, "owner": sched_holder.owner, "since": sched_holder.started_at}
                         if sched_holder else {})},
        "installed": installed or [],
        "index": {"last_run": policy.iso(last_index), "result": index_result},
        "agents": agents,
        "budgets": dict(budgets or {}),
        "night_budget": {"night": ledger_night, "max_cost_usd": cfg.night_max_cost_usd,
                         "max_calls": cfg.night_max_calls, **spend.to_dict(), "spent": spent},
        "problems": problems,
    }


def format_status(data: dict) -> str:
    lines = []
    pause = f"PAUSED by {'$REVERIE_PAUSE' if data['paused_by'] == 'environment' else 'setting schedule.paused'}" \
        if data["paused"] else "active"
    lines.append(f"schedule: {pause}; window {data['window']['start']}-{data['window']['end']} "
                 f"({data['timezone']}, {'open' if data['window']['open_now'] else 'closed'} now)")
    sched = data["scheduler"]
    runner_text = f"running ({sched.get('owner') or 'scheduler'}, pid {sched.get('pid')})" if sched["running"] \
        else "no daemon or tick running"
    installed = ", ".join(data["installed"]) or "none"
    lines.append(f"scheduler: {runner_text}; OS units installed: {installed}")
    idx = data["index"]
    lines.append(f"index: last {idx['last_run'] or 'never'}" + (f" ({idx['result']})" if idx["result"] else ""))
    nb = data.get("night_budget") or {}
    if nb.get("max_cost_usd") is not None or nb.get("max_calls") is not None:
        cost = "no dollar cap" if nb["max_cost_usd"] is None else f"${nb['max_cost_usd']:.2f}"
        calls = "no call cap" if nb["max_calls"] is None else f"{nb['max_calls']} model calls"
        lines.append(f"budgets: scheduled runs share {cost} and {calls} per night across all agents; "
                     "each `consolidate --now` run gets the same (consolidate.max_cost_usd, consolidate.max_calls)")
        lines.append(f"  night {nb['night']}: ${nb['cost_usd']:.4f} and {nb['calls']} call{'s' if nb['calls'] != 1 else ''} "
                     f"spent by {nb['runs']} scheduled run{'s' if nb['runs'] != 1 else ''}"
                     + ("; SPENT: no scheduled run until the next night" if nb.get("spent") else ""))
    if not data["agents"]:
        lines.append("no agents yet: run `reverie index` first")
    for a in data["agents"]:
        lines.append("")
        head = f"{a['agent']}: nightly at {a['at']}" + (" (schedule.json)" if a["at_source"] != "default" else "")
        if not a["enabled"]:
            head += ", disabled"
        lines.append(head)
        if a["running"]:
            r = a["running"]
            lines.append(f"  running now: pid {r['pid']} since {r['started_at']} ({r.get('owner') or '?'})")
        nxt = a["next_run_local"] or "none"
        lines.append(f"  next run:  {nxt} ({a['next_reason']})")
        last = a["last_run"]
        if last:
            lines.append(f"  last run:  {last['started_at']} {last['trigger']}: {last['result']}")
        else:
            lines.append("  last run:  never (by the scheduler)")
        if a["last_result"] and a["last_result"] != (last or {}).get("result"):
            lines.append(f"  last try:  {a['last_result']}")  # a busy attempt after (or before any) run
        nights = a.get("cost_per_night") or []
        if nights:
            lines.append("  cost:      " + "; ".join(
                f"{n['night']} ${n['cost_usd']:.4f} ({n['calls']} call{'s' if n['calls'] != 1 else ''}, "
                f"{n['runs']} run{'s' if n['runs'] != 1 else ''}"
                + (f", {', '.join(n['writers'])}" if n["writers"] else "") + ")" for n in nights[:3]))
        lines.append(f"  backlog:   {'yes' if a['backlog'] else 'no'}"
                     + (f"; sitting out until {a['skipped_until']} ({a.get('skip_reason')})" if a["skipped_until"] else ""))
    for p in data["problems"]:
        lines.append(f"problem: {p}")
    return "\n".join(lines)
