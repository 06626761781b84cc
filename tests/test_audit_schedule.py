"""Audit of the nightly schedule and daemon (issue 7): DST nights, windows, per-agent overrides,
busy/failing/disabled agents, `schedule status` truthfulness, OS units, schedule.log content.

Seven tests began as proofs of a defect (then marked xfail): the spring-forward run in a window
ending at 03:00, a non-UTF-8 schedule.json (tick and `schedule status`), a non-object agent entry in
state.json, status next_run of a backlogged agent outside the window, status last_run after a busy
pass, and `consolidate --now` leaving a stale backlog in the scheduler state. They now pass; the
others check behaviour no other test checks."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import sys
from dataclasses import replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from fakes import FAKE_CRONTAB, FAKE_RECORDER, Clock, held_by_another_thread
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.schedules.daemon import build_scheduler
from reverie.schedules.lock import Busy
from reverie.schedules import policy
from reverie.schedules.policy import AgentSchedule, AgentState, config_from_settings, iso
from reverie.schedules.runner import AgentSpec, Jobs, RunOutcome, Runner
from reverie.schedules.state import StateStore
from reverie.schedules.status import format_status, status_report

UTC = timezone.utc
BERLIN = ZoneInfo("Europe/Berlin")
PARIS = ZoneInfo("Europe/Paris")


def berlin(y, m, d, h, mi=0) -> datetime:
    return datetime(y, m, d, h, mi, tzinfo=BERLIN).astimezone(UTC)


def paris(y, m, d, h, mi=0) -> datetime:
    return datetime(y, m, d, h, mi, tzinfo=PARIS).astimezone(UTC)




def ok(backlog: bool) -> RunOutcome:
    return RunOutcome(progress=True, backlog=backlog,
                      result="2 cards from 40 passages in 3 conversations" + ("; backlog left" if backlog else ""))


NOTHING = RunOutcome(progress=False, backlog=False, result="0 cards from 0 passages in 0 conversations")


class App:
    """Agents with scripted outcomes (the last one repeats); each run takes `run_minutes` of fake time.
    `calls` records (agent, trigger, UTC ISO start)."""

    def __init__(self, root: Path, clock: Clock, outcomes: dict, *, run_minutes: int = 1) -> None:
        self.root, self.clock, self.run_minutes = root, clock, run_minutes
        self.outcomes = {k: list(v) for k, v in outcomes.items()}
        self.calls: list[tuple[str, str, str]] = []

    def agent_dir(self, agent: str) -> Path:
        return self.root / "agents" / agent

    def jobs(self) -> Jobs:
        def list_agents():
            return [AgentSpec(id=a, dir=self.agent_dir(a)) for a in self.outcomes]

        def consolidate(agent: str, trigger: str) -> RunOutcome:
            self.calls.append((agent, trigger, iso(self.clock())))
            script = self.outcomes[agent]
            item = script.pop(0) if len(script) > 1 else script[0]
            self.clock.t = self.clock.t + timedelta(minutes=self.run_minutes)
            if isinstance(item, BaseException):
                raise item
            return item

        return Jobs(list_agents=list_agents, index_all=lambda: "0 files changed", consolidate=consolidate)


def make_runner(root: Path, clock: Clock, app: App, **settings) -> Runner:
    section = {"timezone": "Europe/Berlin", **settings}
    return Runner(app.jobs(), load_config=lambda: config_from_settings(section),
                  state=StateStore(root / "schedules" / "state.json"),
                  scheduler_lock=root / "schedules" / "scheduler.lock", now=clock)


def tick_through(runner: Runner, clock: Clock, start: datetime, end: datetime, step_minutes: int = 10) -> None:
    """A tick every `step_minutes` from start (inclusive) to end (exclusive), as an OS timer would."""
    t = start
    while t < end:
        clock.t = t
        runner.tick()
        t += timedelta(minutes=step_minutes)


# ---------------------------------------------------------------------------------------------
# DST


@pytest.mark.parametrize("night,hour,minute,expected", [
    ((2026, 3, 29), 2, 0, "2026-03-29T01:00:00Z"),   # 02:00 does not exist: 03:00 CEST
    ((2026, 3, 29), 2, 30, "2026-03-29T01:30:00Z"),  # 02:30 does not exist: 03:30 CEST
    ((2026, 10, 25), 2, 0, "2026-10-25T00:00:00Z"),  # 02:00 happens twice: the first one only
    ((2026, 10, 25), 2, 30, "2026-10-25T00:30:00Z"),
])
def test_dst_nights_in_berlin_run_the_nightly_exactly_once(tmp_path, night, hour, minute, expected):
    y, m, d = night
    clock = Clock(berlin(y, m, d - 1, 12))
    app = App(tmp_path, clock, {"a": [NOTHING]})
    runner = make_runner(tmp_path, clock, app, hour=hour, minute=minute)
    # status the day before names the instant the run will really happen
    agent = status_report(runner)["agents"][0]
    assert (agent["next_run"], agent["next_reason"]) == (expected, "nightly")

    tick_through(runner, clock, berlin(y, m, d - 1, 12), berlin(y, m, d, 12))
    assert app.calls == [("a", "nightly", expected)]


def test_daemon_cron_trigger_fires_twice_on_the_fall_back_night_but_runs_once(tmp_path):
    """APScheduler's CronTrigger fires at 02:00 CEST and again at 02:00 CET on 2026-10-25; the
    second firing must not start a second nightly run."""
    clock = Clock(berlin(2026, 10, 24, 12))
    app = App(tmp_path, clock, {"a": [NOTHING]})
    runner = make_runner(tmp_path, clock, app)
    scheduler = build_scheduler(runner, runner.load_config())
    job = scheduler.get_job("nightly:a")
    fires, prev, now = [], None, clock()
    while True:
        nxt = job.trigger.get_next_fire_time(prev, now)
        if nxt.astimezone(UTC) >= berlin(2026, 10, 26, 0):
            break
        fires.append(nxt.astimezone(UTC))
        prev, now = nxt, nxt
    assert len(fires) >= 1
    for t in fires:
        clock.t = t
        job.func(*job.args)
    assert app.calls == [("a", "nightly", "2026-10-25T00:00:00Z")]


def test_spring_forward_0200_run_in_a_window_ending_at_0300(tmp_path):
    clock = Clock(berlin(2026, 3, 28, 12))
    app = App(tmp_path, clock, {"a": [NOTHING]})
    runner = make_runner(tmp_path, clock, app, window_start="22:00", window_end="03:00")
    tick_through(runner, clock, berlin(2026, 3, 28, 12), berlin(2026, 3, 29, 12))
    assert [(a, t) for a, t, _ in app.calls] == [("a", "nightly")]


@pytest.mark.parametrize("minute,first,second", [
    (0, "2026-03-29T00:00:00Z", "2026-03-30T00:00:00Z"),
    (30, "2026-03-29T00:30:00Z", "2026-03-30T00:30:00Z"),
])
def test_spring_forward_gap_time_in_a_window_ending_at_0300_is_promised_then_run(tmp_path, minute, first, second):
    """02:xx does not exist that night and its winter reading (03:xx CEST) is past the window's end:
    it is read with the summer offset (01:xx CET), inside the window; status promises that instant."""
    clock = Clock(berlin(2026, 3, 28, 12))
    app = App(tmp_path, clock, {"a": [NOTHING]})
    runner = make_runner(tmp_path, clock, app, window_start="22:00", window_end="03:00", minute=minute)
    agent = status_report(runner)["agents"][0]
    assert (agent["next_run"], agent["next_reason"]) == (first, "nightly")
    tick_through(runner, clock, berlin(2026, 3, 28, 12), berlin(2026, 3, 30, 12))
    assert app.calls == [("a", "nightly", first), ("a", "nightly", second)]


@pytest.mark.parametrize("window,at,day,expected", [
    (("22:00", "03:00"), (2, 0), date(2026, 3, 28), "2026-03-29T00:00:00Z"),  # gap at the window's end
    (("02:00", "08:00"), (2, 30), date(2026, 3, 29), "2026-03-29T01:30:00Z"),  # gap inside: winter reading
    (("22:00", "03:00"), (2, 0), date(2026, 10, 24), "2026-10-25T00:00:00Z"),  # repeated: the first one
    (("22:00", "03:00"), (23, 30), date(2026, 6, 10), "2026-06-10T21:30:00Z"),  # before midnight
    (("22:00", "03:00"), (4, 0), date(2026, 6, 10), None),  # outside the window
    (("00:00", "00:00"), (23, 0), date(2026, 6, 10), "2026-06-10T21:00:00Z"),  # all day
])
def test_nightly_in_window_gives_one_instant_per_window(window, at, day, expected):
    cfg = config_from_settings({"timezone": "Europe/Berlin", "window_start": window[0], "window_end": window[1]})
    assert iso(policy.nightly_in_window(day, at[0], at[1], cfg)) == expected


# ---------------------------------------------------------------------------------------------
# per-agent schedule.json


def test_a_non_utf8_schedule_json_does_not_stop_the_other_agents(tmp_path):
    clock = Clock(berlin(2026, 6, 10, 2))
    app = App(tmp_path, clock, {"a": [NOTHING], "b": [NOTHING]})
    bad = app.agent_dir("b") / "schedule.json"
    bad.parent.mkdir(parents=True)
    bad.write_bytes('{"hour": 3}'.encode("utf-16"))
    runner = make_runner(tmp_path, clock, app)
    report = runner.tick()
    # documented: "an unreadable or invalid one is ignored (defaults used) and reported in `problem`"
    assert [(r.agent, r.trigger, r.error) for r in report.runs] == [("a", "nightly", False), ("b", "nightly", False)]
    problems = status_report(runner)["problems"]
    assert len(problems) == 1 and problems[0].startswith(f"{bad}: ")
    jobs = sorted(j.id for j in build_scheduler(runner, runner.load_config()).get_jobs())
    assert jobs == ["backfill", "index", "nightly:a", "nightly:b"]


def test_schedule_status_cli_reports_a_non_utf8_schedule_json(reverie_home, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("PATH", str(tmp_path / "nobin"))  # no crontab: status looks for our line
    for agent in ("a", "b"):
        (reverie_home / "agents" / agent).mkdir(parents=True)
        (reverie_home / "agents" / agent / "agent.db").write_bytes(b"")
    bad = reverie_home / "agents" / "b" / "schedule.json"
    bad.write_bytes('{"hour": 3}'.encode("utf-16"))
    res = CliRunner().invoke(build_cli(), ["schedule", "status", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert [(a["agent"], a["at"], a["at_source"]) for a in data["agents"]] == [
        ("a", "02:00", "default"), ("b", "02:00", "default")]
    assert len(data["problems"]) == 1 and data["problems"][0].startswith(f"{bad}: ")


def test_a_malformed_agent_entry_in_state_json_neither_crashes_nor_repeats_runs(tmp_path):
    clock = Clock(berlin(2026, 6, 10, 2))
    app = App(tmp_path, clock, {"a": [NOTHING], "b": [NOTHING]})
    (tmp_path / "schedules").mkdir()
    (tmp_path / "schedules" / "state.json").write_text(json.dumps(
        {"version": 1, "agents": {"a": ["hand-edited"]}, "index": {}}))
    runner = make_runner(tmp_path, clock, app)
    report = runner.tick()
    assert [(r.agent, r.trigger, r.error) for r in report.runs] == [("a", "nightly", False), ("b", "nightly", False)]
    clock.t = berlin(2026, 6, 10, 3)
    assert runner.tick().runs == []
    assert app.calls == [("a", "nightly", "2026-06-10T00:00:00Z"), ("b", "nightly", "2026-06-10T00:01:00Z")]


@pytest.mark.parametrize("content,at,problem", [
    (b'\xef\xbb\xbf{"hour": 3}', "03:00", None),  # UTF-8 with a byte order mark (PowerShell's utf8): read
    ('{"hour": 3}'.encode("utf-16"), "02:00", "not UTF-8 text (byte 0); defaults used (save it as UTF-8, or delete it)"),
    (b"[" * 100_000, "02:00", "JSON nested too deeply; defaults used (fix or delete the file)"),
    (b'{"hour": 3', "02:00", "Expecting ',' delimiter: line 1 column 11 (char 10); defaults used (fix or delete the file)"),
])
def test_schedule_json_content_never_raises(tmp_path, content, at, problem):
    cfg = config_from_settings({"timezone": "Europe/Berlin"})
    path = tmp_path / "a" / "schedule.json"
    path.parent.mkdir()
    path.write_bytes(content)
    sched = policy.agent_schedule("a", True, path.parent, cfg)
    assert (sched.at_text, sched.source, sched.enabled, sched.problem) == (
        at, "default" if problem else "schedule.json", True, f"{path}: {problem}" if problem else None)


@pytest.mark.parametrize("entry", ["hand-edited", None, 3, True, [], ["x"]])
def test_agent_state_of_a_non_object_entry_is_empty(entry):
    assert AgentState.from_dict(entry) == AgentState()


def test_agent_state_fields_of_the_wrong_type_read_as_absent():
    assert AgentState.from_dict({"backlog": "yes", "last_result": 3, "skip_night": 1, "last_trigger": [],
                                 "history": "x", "last_run_result": {}, "last_started_at": "noon"}) == AgentState()


def test_update_agent_replaces_a_non_object_entry_and_logs_it(tmp_path, caplog):
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"version": 1, "agents": {"a": "oops", "b": {"backlog": True}}, "index": {}}))
    store = StateStore(path)
    assert store.agent_states() == {"a": AgentState(), "b": AgentState(backlog=True)}
    with caplog.at_level(logging.WARNING, logger="reverie.schedules.state"):
        assert store.update_agent("a", lambda old: replace(old, backlog=True)) == AgentState(backlog=True)
    assert json.loads(path.read_text())["agents"] == {"a": AgentState(backlog=True).to_dict(),
                                                       "b": {"backlog": True}}
    assert [r.getMessage() for r in caplog.records] == [
        f"scheduler state of agent a in {path} was a JSON str, not an object; starting that agent's state afresh"]


# ---------------------------------------------------------------------------------------------
# status truthfulness


def test_status_next_run_of_a_backlogged_agent_is_when_it_really_runs(tmp_path):
    clock = Clock(paris(2026, 6, 10, 5))
    app = App(tmp_path, clock, {"a": [ok(True)]}, run_minutes=200)
    (app.agent_dir("a")).mkdir(parents=True)
    (app.agent_dir("a") / "schedule.json").write_text('{"hour": 5}')
    runner = make_runner(tmp_path, clock, app, timezone="Europe/Paris")
    runner.tick()  # 05:00 nightly, 200 minutes: the window has closed with a backlog left
    assert app.calls == [("a", "nightly", "2026-06-10T03:00:00Z")]

    clock.t = paris(2026, 6, 10, 12)
    promised = status_report(runner)["agents"][0]["next_run"]

    t = paris(2026, 6, 10, 12)
    while len(app.calls) == 1 and t < paris(2026, 6, 11, 12):  # hourly ticks until something runs
        clock.t = t
        runner.tick()
        t += timedelta(hours=1)
    assert app.calls[1] == ("a", "backfill", "2026-06-11T00:00:00Z")  # it ran at 02:00, as backfill
    assert promised == app.calls[1][2]


def test_status_last_run_after_a_busy_pass_describes_one_real_run(tmp_path):
    clock = Clock(paris(2026, 6, 10, 2))
    app = App(tmp_path, clock, {"a": [ok(False), Busy(tmp_path / "agents" / "a" / "lock")]}, run_minutes=10)
    runner = make_runner(tmp_path, clock, app, timezone="Europe/Paris")
    runner.tick()  # night 1: a real run
    clock.t = paris(2026, 6, 11, 2)
    report = runner.tick()  # night 2: the agent is busy (another process holds its lock)
    assert [(r.agent, r.busy) for r in report.runs] == [("a", True)]
    agent = status_report(runner)["agents"][0]
    assert agent["next_reason"] == "nightly run due now (catching up)"  # retried, not marked done
    assert agent["last_run"] == {"started_at": "2026-06-10T00:00:00Z", "finished_at": "2026-06-10T00:10:00Z",
                                 "trigger": "nightly", "result": ok(False).result, "progress": True}


def _paris_cfg(**section):
    return config_from_settings({"timezone": "Europe/Paris", **section})


@pytest.mark.parametrize("hour,state,now,expected", [
    # a backlog, outside the window: backfill when the window opens, before the 05:00 nightly run
    (5, AgentState(backlog=True), paris(2026, 6, 10, 12), (paris(2026, 6, 11, 2), "backfill (has a backlog)")),
    # sitting out tonight with a backlog: the next window; its 02:00 nightly run starts it
    (2, AgentState(backlog=True, skip_night="2026-06-10"), paris(2026, 6, 10, 4),
     (paris(2026, 6, 11, 2), "nightly")),
    (5, AgentState(backlog=True, skip_night="2026-06-10"), paris(2026, 6, 10, 4),
     (paris(2026, 6, 11, 2), "backfill (has a backlog)")),
    # no backlog: the nightly run only
    (5, AgentState(), paris(2026, 6, 10, 12), (paris(2026, 6, 11, 5), "nightly")),
    # its hour outside the window: no nightly run, but a backlog is still backfilled
    (23, AgentState(backlog=True), paris(2026, 6, 10, 12),
     (paris(2026, 6, 11, 2), "backfill (has a backlog); no nightly run: its hour 23:00 is outside the window "
                             "02:00-08:00: move the hour into the window or widen schedule.window_start/window_end")),
    (23, AgentState(backlog=True), paris(2026, 6, 10, 3), (paris(2026, 6, 10, 3), "backfill (has a backlog)")),
])
def test_next_run_is_what_pick_next_starts_at_that_time(hour, state, now, expected):
    cfg = _paris_cfg()
    agent = AgentSchedule(id="a", hour=hour, minute=0)
    assert policy.next_run(agent, state, now, cfg) == expected
    at, why = expected
    decision = policy.pick_next([agent], {"a": state}, at, cfg)
    assert decision.trigger == ("nightly" if why == "nightly" else "backfill")
    if at > now:  # and nothing starts before it (checked every 10 minutes)
        t = now
        while t < at:
            assert policy.pick_next([agent], {"a": state}, t, cfg) is None
            t += timedelta(minutes=10)


def test_busy_passes_keep_the_real_run_and_a_real_run_ends_the_busy_mark(tmp_path):
    clock = Clock(paris(2026, 6, 10, 2))
    lock = tmp_path / "agents" / "a" / "lock"
    app = App(tmp_path, clock, {"a": [ok(False), Busy(lock), Busy(lock), ok(False)]}, run_minutes=10)
    runner = make_runner(tmp_path, clock, app, timezone="Europe/Paris")
    runner.tick()  # night 1: a real run
    real = {"started_at": "2026-06-10T00:00:00Z", "finished_at": "2026-06-10T00:10:00Z", "trigger": "nightly",
            "result": ok(False).result, "progress": True}
    clock.t = paris(2026, 6, 11, 2)
    runner.tick()
    clock.t = paris(2026, 6, 11, 2, 30)
    busy = runner.tick().runs[0].result  # busy twice in a row
    assert busy.startswith("busy: ")
    path = tmp_path / "schedules" / "state.json"
    assert json.loads(path.read_text())["agents"]["a"]["last_run_result"] == ok(False).result
    agent = status_report(runner)["agents"][0]
    assert (agent["last_run"], agent["last_result"]) == (real, busy)
    assert f"  last run:  2026-06-10T00:00:00Z nightly: {ok(False).result}\n  last try:  {busy}\n" in \
        format_status(status_report(runner))

    clock.t = paris(2026, 6, 11, 3)
    runner.tick()  # the lock is free again: a real run
    assert "last_run_result" not in json.loads(path.read_text())["agents"]["a"]
    agent = status_report(runner)["agents"][0]
    assert (agent["last_run"], agent["last_result"]) == (
        {**real, "started_at": "2026-06-11T01:00:00Z", "finished_at": "2026-06-11T01:10:00Z"}, ok(False).result)
    assert "last try" not in format_status(status_report(runner))


# ---------------------------------------------------------------------------------------------
# through the application's adapter: the real index, agent list and pipeline (offline writer)


def _index_fixtures(home: Path, fixtures: Path) -> None:
    from reverie.consolidate.index import index_all
    from reverie.consolidate.settings import set_value

    index_all(home, projects_dir=fixtures)
    set_value(home, "schedule.timezone", "Europe/Paris")


def test_status_backlog_after_consolidate_now_clears_it(reverie_home, shared_fixtures, tmp_path, monkeypatch):
    from reverie.consolidate.commands.schedule_cmd import build_runner
    from reverie.consolidate.settings import set_value

    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("PATH", str(tmp_path / "nobin"))
    _index_fixtures(reverie_home, shared_fixtures)
    set_value(reverie_home, "consolidate.max_passages", 30)  # the nightly run leaves a backlog
    runner = build_runner(reverie_home)
    runner.now = Clock(paris(2026, 6, 10, 2))
    consolidate = runner.jobs.consolidate

    def then_stop(agent, trigger, **kw):  # the daemon is stopped after spotter-gqc's nightly run
        out = consolidate(agent, trigger, **kw)
        if agent == "spotter-gqc":
            runner.stop.set()
        return out

    runner.jobs.consolidate = then_stop
    runner.tick()
    assert runner.state.agent_states()["spotter-gqc"].backlog is True

    # The user finishes the work by hand (demo's 90 passages, issue 13, also pass max_passages).
    for agent in ("demo", "spotter-gqc"):
        for _ in range(8):
            res = CliRunner().invoke(build_cli(), ["consolidate", "--now", "--agent", agent, "--json"])
            assert res.exit_code == 0, res.output
            if json.loads(res.output)["backlog"] is False:
                break
        assert json.loads(res.output)["backlog"] is False

    res = CliRunner().invoke(build_cli(), ["schedule", "status", "--json"])
    assert res.exit_code == 0, res.output
    rows = {a["agent"]: a["backlog"] for a in json.loads(res.output)["agents"]}
    assert rows == {"demo": False, "spotter": False, "spotter-gqc": False}


def test_record_manual_runs_sets_the_backlog_of_the_agents_that_ran_only(tmp_path):
    from reverie.consolidate.commands.schedule_cmd import record_manual_runs

    store = StateStore(tmp_path / "schedules" / "state.json")
    before = AgentState(last_started_at=paris(2026, 6, 10, 2), last_finished_at=paris(2026, 6, 10, 2, 10),
                        last_trigger="nightly", last_result="0 cards", last_progress=False, backlog=True,
                        nightly_for=paris(2026, 6, 10, 2), skip_night="2026-06-10")
    for agent in ("a", "b", "c", "d"):
        store.update_agent(agent, lambda old: before)
    summaries = [
        {"agent": "a", "conversations": 1, "passages_consolidated": 4, "cards_written": 2, "backlog": False,
         "errors": []},
        {"agent": "b", "conversations": 0, "backlog": True, "failed": False,
         "errors": [{"kind": "busy", "message": "Agent 'b' is being consolidated by another process"}]},
        {"agent": "c", "conversations": 0, "backlog": True, "failed": True,
         "errors": [{"kind": "agent_failed", "message": "its database is unreadable"}]},
        {"agent": "d", "conversations": 0, "passages_consolidated": 0, "cards_written": 0, "backlog": True,
         "errors": [{"kind": "usage_limit", "message": "usage limit reached"}]},
    ]
    assert record_manual_runs(tmp_path, summaries, started=paris(2026, 6, 10, 9),
                              finished=paris(2026, 6, 10, 9, 5)) == 2
    entry = {"at": "2026-06-10T07:00:00Z", "trigger": "now", "finished": "2026-06-10T07:05:00Z"}
    assert store.agent_states() == {
        # progress: the backlog is gone and the sit-out ends; the scheduler's own last run stays
        "a": replace(before, backlog=False, skip_night=None, history=(
            {**entry, "result": "2 cards from 4 passages in 1 conversation", "progress": True, "backlog": False},)),
        "b": before,  # busy: it did not run
        "c": before,  # failed before running
        "d": replace(before, history=(  # no progress: still sitting out tonight
            {**entry, "result": "0 cards from 0 passages in 0 conversations; 1 error (first: usage_limit: "
                                "usage limit reached); backlog left", "progress": False, "backlog": True},)),
    }


def test_record_manual_runs_never_raises(tmp_path, caplog):
    from reverie.consolidate.commands.schedule_cmd import record_manual_runs

    (tmp_path / "schedules").write_text("a file where the folder should be")
    with caplog.at_level(logging.WARNING):
        assert record_manual_runs(tmp_path, [{"agent": "a", "backlog": False, "errors": []}],
                                  started=paris(2026, 6, 10, 9), finished=paris(2026, 6, 10, 9, 5)) == 0
    assert [r.getMessage() for r in caplog.records] == [
        "could not record the consolidate --now run in the scheduler state (FileExistsError); "
        "`reverie schedule status` may show an old backlog until the next scheduled run"]


def test_consolidate_now_records_the_backlog_but_not_as_the_schedulers_last_run(reverie_home, shared_fixtures,
                                                                                  tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    monkeypatch.setenv("PATH", str(tmp_path / "nobin"))
    _index_fixtures(reverie_home, shared_fixtures)
    res = CliRunner().invoke(build_cli(), ["consolidate", "--now", "--agent", "spotter", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert (summary["agent"], summary["backlog"]) == ("spotter", False)
    st = StateStore(reverie_home / "schedules" / "state.json").agent_states()
    assert list(st) == ["spotter"]
    assert [(h["trigger"], h["backlog"], h["progress"]) for h in st["spotter"].history] == [("now", False, True)]
    assert replace(st["spotter"], history=()) == AgentState()
    res = CliRunner().invoke(build_cli(), ["schedule", "status", "--json"])
    rows = {a["agent"]: (a["last_run"], a["backlog"]) for a in json.loads(res.output)["agents"]}
    assert rows == {"demo": (None, False), "spotter": (None, False), "spotter-gqc": (None, False)}


def test_real_pipeline_busy_agent_is_retried_and_does_not_stop_the_others(reverie_home, shared_fixtures):
    from reverie.consolidate.commands.schedule_cmd import build_runner

    _index_fixtures(reverie_home, shared_fixtures)
    runner = build_runner(reverie_home)
    clock = Clock(paris(2026, 6, 10, 2))
    runner.now = clock
    with held_by_another_thread(reverie_home / "agents" / "spotter" / "lock", owner="consolidate --now"):
        report = runner.tick()
        during = {a["agent"]: (a["next_reason"], (a["running"] or {}).get("owner"), a["last_run"])
                  for a in status_report(runner)["agents"]}
    assert [(r.agent, r.trigger, r.busy, r.error) for r in report.runs] == [
        ("demo", "nightly", False, False), ("spotter", "nightly", True, False),
        ("spotter-gqc", "nightly", False, False)]
    assert report.runs[1].result.startswith("busy: Agent 'spotter' is being consolidated by another process")
    assert during["spotter"] == ("nightly run due now (catching up)", "consolidate --now", None)
    st = runner.state.agent_states()["spotter"]
    assert (st.nightly_for, st.skip_night, st.last_started_at) == (None, None, None)  # not marked done

    clock.t = paris(2026, 6, 10, 2, 30)  # the lock is free: the next pass runs it, once
    assert [(r.agent, r.trigger, r.busy) for r in runner.tick().runs] == [("spotter", "nightly", False)]
    clock.t = paris(2026, 6, 10, 3, 30)
    assert runner.tick().runs == []


def test_real_pipeline_disabled_agent_never_runs_and_a_broken_one_does_not_stop_the_others(
        reverie_home, shared_fixtures):
    from reverie.consolidate.commands.schedule_cmd import build_runner
    from reverie.consolidate.settings import set_value
    from reverie.schedules.policy import AgentState

    _index_fixtures(reverie_home, shared_fixtures)
    set_value(reverie_home, "agents.disabled", ["spotter"])
    runner = build_runner(reverie_home)
    clock = Clock(paris(2026, 6, 10, 2))
    runner.now = clock
    # spotter had a backlog before it was switched off
    runner.state.update_agent("spotter", lambda old: AgentState(backlog=True))
    (reverie_home / "agents" / "demo" / "agent.db").write_bytes(b"this is not a sqlite database" * 100)
    for extra in ("-wal", "-shm"):
        (reverie_home / "agents" / "demo" / f"agent.db{extra}").unlink(missing_ok=True)

    report = runner.tick()
    assert [(r.agent, r.trigger, r.error, r.busy) for r in report.runs] == [
        ("demo", "nightly", True, False), ("spotter-gqc", "nightly", False, False)]
    assert report.runs[0].result.startswith("error: AgentDbUnreadable: Agent 'demo': its database ")
    clock.t = paris(2026, 6, 10, 7, 50)
    assert runner.tick().runs == []  # demo sits out the night, spotter is off
    rows = {a["agent"]: (a["enabled"], a["next_run"], a["next_reason"], a["skipped_until"], a["last_run"] is not None)
            for a in status_report(runner)["agents"]}
    assert rows == {
        "demo": (True, "2026-06-11T00:00:00Z", "nightly", "2026-06-11T00:00:00Z", True),
        "spotter": (False, None, "schedule disabled", None, False),
        "spotter-gqc": (True, "2026-06-11T00:00:00Z", "nightly", None, True),
    }


def test_schedule_log_carries_no_transcript_content(reverie_home, shared_fixtures, tmp_path, monkeypatch):
    """A real `reverie schedule tick` (index + nightly + backfill of the shared fixtures): no text of a
    message or a card reaches schedule.log."""
    from reverie.consolidate.settings import set_value

    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    shutil.copytree(shared_fixtures, tmp_path / "claude-config" / "projects")
    set_value(reverie_home, "schedule.window_start", "00:00")  # all day: the tick consolidates now
    set_value(reverie_home, "schedule.window_end", "00:00")
    set_value(reverie_home, "schedule.hour", 0)   # tonight's nightly is already due at any time of day
    set_value(reverie_home, "schedule.minute", 0)
    set_value(reverie_home, "consolidate.max_passages", 30)
    res = CliRunner().invoke(build_cli(), ["schedule", "tick", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert {r["agent"] for r in report["runs"]} == {"demo", "spotter", "spotter-gqc"}
    assert all(not r["error"] for r in report["runs"])

    log = (reverie_home / "logs" / "schedule.log").read_text(encoding="utf-8")
    assert "consolidation of spotter-gqc finished (nightly)" in log
    texts = []
    for agent in ("demo", "spotter", "spotter-gqc"):
        conn = sqlite3.connect(reverie_home / "agents" / agent / "agent.db")
        texts += [r[0] for r in conn.execute("SELECT text FROM blocks WHERE text IS NOT NULL")]
        texts += [r[0] for r in conn.execute("SELECT statement FROM cards")]
        conn.close()
    assert any(len(" ".join(t.split())) >= 40 for t in texts)
    flat_log = " ".join(log.split())
    leaked = []
    for text in texts:
        flat = " ".join(text.split())
        for i in range(0, max(0, len(flat) - 40) + 1, 40):  # every 40-character stretch
            piece = flat[i:i + 40]
            if len(piece) == 40 and piece in flat_log:
                leaked.append(piece)
                break
    assert leaked == []


# ---------------------------------------------------------------------------------------------
# OS units: only the targets change, install is idempotent, uninstall restores





def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("system", ["cron", "systemd", "launchd"])
def test_install_twice_then_uninstall_touches_only_its_targets(reverie_home, tmp_path, monkeypatch, system):
    user = tmp_path / "user"
    (user / ".config" / "other").mkdir(parents=True)
    (user / ".config" / "other" / "keep.conf").write_text("x=1\n")
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    store, calls = tmp_path / "crontab.txt", tmp_path / "calls.log"
    store.write_text("MAILTO=me@example.com\n30 1 * * * /usr/bin/true\n")
    for name, text in {"crontab": FAKE_CRONTAB.format(python=sys.executable, store=str(store), calls=str(calls)),
                       "systemctl": FAKE_RECORDER.format(python=sys.executable, calls=str(calls), name="systemctl"),
                       "launchctl": FAKE_RECORDER.format(python=sys.executable, calls=str(calls), name="launchctl")
                       }.items():
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    monkeypatch.setenv("HOME", str(user))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("PATH", str(bindir))
    reverie_home.mkdir(parents=True, exist_ok=True)
    before = {"user": _snapshot(user), "crontab": store.read_text(), "home": _snapshot(reverie_home)}

    def cli(*args):
        res = CliRunner().invoke(build_cli(), list(args))
        assert res.exit_code == 0, res.output
        return res.output

    cli("schedule", "install", "--system", system)
    first = {"user": _snapshot(user), "crontab": store.read_text(), "home": _snapshot(reverie_home)}
    cli("schedule", "install", "--system", system)
    second = {"user": _snapshot(user), "crontab": store.read_text(), "home": _snapshot(reverie_home)}
    assert second == first  # idempotent

    new_user_files = sorted(set(first["user"]) - set(before["user"]))
    changed_user_files = [k for k in before["user"] if first["user"].get(k) != before["user"][k]]
    assert changed_user_files == []
    added_cron = [ln for ln in first["crontab"].splitlines() if ln not in before["crontab"].splitlines()]
    from reverie.schedules.units import UnitSpec

    spec = UnitSpec(home=reverie_home, argv=())
    expected_files = {"cron": [], "launchd": [f"Library/LaunchAgents/{spec.label}.plist"],
                      "systemd": [f".config/systemd/user/{spec.name}.service",
                                  f".config/systemd/user/{spec.name}.timer"]}[system]
    assert new_user_files == expected_files
    assert len(added_cron) == (1 if system == "cron" else 0)
    if system == "cron":
        assert added_cron[0].endswith(f"--home {reverie_home} schedule tick >> {reverie_home}/logs/schedule-cron.out "
                                      f"2>&1 {spec.cron_marker}")
    # nothing of the reverie home but its log folder (empty here) is touched
    assert first["home"] == before["home"]

    status = json.loads(cli("schedule", "status", "--json"))
    assert status["installed"] == [system]
    cli("schedule", "uninstall")
    assert (_snapshot(user), store.read_text()) == (before["user"], before["crontab"])
    assert cli("schedule", "uninstall") == "nothing installed for this home\n"
