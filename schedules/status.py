"""`reverie schedule status`: per agent, the next run, the last run and its result, the backlog.

`status_report()` returns plain JSON-ready data (UTC ISO times, plus local renderings);
`format_status()` turns it into the human text. Standard library only.

Per agent, `last_run` describes one real run of the scheduler (its start, end, trigger, result and
progress belong together); `last_result` is the latest attempt's result, which differs from
`last_run.result` only when that attempt found the agent busy. `next_run` is the time
`schedules.policy.pick_next` will really start the agent (see `policy.next_run`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from . import policy
from .lock import LOCK_NAME, read_holder
from .runner import Runner


def _local(dt: datetime | None, cfg: policy.ScheduleConfig) -> str | None:
    if dt is None:
        return None
    return dt.astimezone(cfg.tz).strftime("%Y-%m-%d %H:%M %Z").strip()


def status_report(runner: Runner, *, installed: list[str] | None = None) -> dict:
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
    agents = []
    for spec in specs:
        sched = policy.agent_schedule(spec.id, spec.enabled, spec.dir, cfg)
        st = states.get(spec.id, policy.AgentState())
        nxt, why = policy.next_run(sched, st, now, cfg)
        skipped_until = None
        if night is not None and st.skip_night == night:
            skipped_until = policy.next_window_start(now, cfg)
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
            "running": holder.as_dict() if holder else None,
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
        lines.append(f"  backlog:   {'yes' if a['backlog'] else 'no'}"
                     + (f"; sitting out until {a['skipped_until']} (last run made no progress)" if a["skipped_until"] else ""))
    for p in data["problems"]:
        lines.append(f"problem: {p}")
    return "\n".join(lines)
