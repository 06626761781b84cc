"""Schedules with a fake clock: the 02:00 run, backfill round-robin, no-progress skip, the window,
pause and consolidate-now, busy agents, state, status; the APScheduler jobs' triggers."""

from __future__ import annotations

import json
from datetime import datetime, time, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from fakes import Clock, held_by_another_thread

from reverie.schedules import policy
from reverie.schedules.daemon import build_scheduler
from reverie.schedules.lock import AgentLock, Busy
from reverie.schedules.policy import AgentSchedule, AgentState, ScheduleConfigError, config_from_settings
from reverie.schedules.runner import AgentSpec, Jobs, RunOutcome, Runner
from reverie.schedules.state import StateStore
from reverie.schedules.status import format_status, status_report

UTC = timezone.utc
TZ = ZoneInfo("Europe/Paris")
BASE = {"hour": 2, "minute": 0, "window_start": "02:00", "window_end": "08:00", "paused": False,
        "timezone": "Europe/Paris"}


def at(y, m, d, h, mi=0) -> datetime:
    """Paris wall clock -> aware UTC instant."""
    return datetime(y, m, d, h, mi, tzinfo=TZ).astimezone(UTC)




class FakeApp:
    """Agents with scripted outcomes; every consolidation takes `run_minutes` of fake time."""

    def __init__(self, root: Path, clock: Clock, outcomes: dict, *, run_minutes: int = 50,
                 enabled: dict | None = None) -> None:
        self.root, self.clock, self.run_minutes = root, clock, run_minutes
        self.outcomes = {k: list(v) for k, v in outcomes.items()}
        self.enabled = enabled or {}
        self.calls: list[tuple[str, str, str]] = []
        self.indexed: list[str] = []

    def list_agents(self):
        return [AgentSpec(id=a, dir=self.root / "agents" / a, enabled=self.enabled.get(a, True))
                for a in self.outcomes]

    def index_all(self):
        self.indexed.append(self.clock().astimezone(TZ).strftime("%H:%M"))
        return "3 files changed"

    def consolidate(self, agent: str, trigger: str) -> RunOutcome:
        self.calls.append((agent, trigger, self.clock().astimezone(TZ).strftime("%m-%d %H:%M")))
        script = self.outcomes[agent]
        item = script.pop(0) if len(script) > 1 else script[0]
        self.clock.set(self.clock() + timedelta(minutes=self.run_minutes))
        if isinstance(item, BaseException):
            raise item
        return item

    def jobs(self) -> Jobs:
        return Jobs(list_agents=self.list_agents, index_all=self.index_all, consolidate=self.consolidate)




def ok(backlog: bool) -> RunOutcome:
    return RunOutcome(progress=True, backlog=backlog, result="2 cards from 40 passages in 3 conversations"
                      + ("; backlog left" if backlog else ""))


NOTHING = RunOutcome(progress=False, backlog=False, result="0 cards from 0 passages in 0 conversations")
LIMITED = RunOutcome(progress=False, backlog=True, result="0 cards from 0 passages in 0 conversations; 1 error "
                     "(first: usage limit reached); backlog left")


def make_runner(tmp_path: Path, clock: Clock, app: FakeApp, pause_env: str | None = None, **settings) -> Runner:
    section = {**BASE, **settings}
    return Runner(app.jobs(), load_config=lambda: config_from_settings(section, pause_env=pause_env),
                  state=StateStore(tmp_path / "schedules" / "state.json"),
                  scheduler_lock=tmp_path / "schedules" / "scheduler.lock", now=clock)


def set_state(runner: Runner, agent: str, **fields) -> None:
    runner.state.update_agent(agent, lambda old: AgentState(**{**old.__dict__, **fields}))


# ---------------------------------------------------------------------------------------------
# the nightly run


def test_the_0200_run_fires_at_0200_and_once(tmp_path):
    clock = Clock(at(2026, 6, 10, 1, 59))
    app = FakeApp(tmp_path, clock, {"api": [NOTHING]})
    runner = make_runner(tmp_path, clock, app)

    report = runner.tick()
    assert (report.index, report.runs, report.blocked) == ("3 files changed", [], "outside the window 02:00-08:00")
    assert app.calls == []

    clock.set(at(2026, 6, 10, 2, 0))
    report = runner.tick()
    assert report.index is None  # indexed a minute ago
    assert [(r.agent, r.trigger, r.result, r.progress, r.backlog) for r in report.runs] == [
        ("api", "nightly", NOTHING.result, False, False)]
    assert app.calls == [("api", "nightly", "06-10 02:00")]

    clock.set(at(2026, 6, 10, 3, 0))  # same night: the nightly run is not repeated
    assert runner.tick().runs == []
    clock.set(at(2026, 6, 11, 2, 0))  # next night it is
    assert [(r.agent, r.trigger) for r in runner.tick().runs] == [("api", "nightly")]
    assert app.calls[-1] == ("api", "nightly", "06-11 02:00")


def test_daemon_jobs_fire_at_0200_local_with_coalescing_and_grace(tmp_path):
    clock = Clock(at(2026, 6, 10, 1, 30))
    app = FakeApp(tmp_path, clock, {"api": [NOTHING], "web": [NOTHING]})
    (tmp_path / "agents" / "web").mkdir(parents=True)
    (tmp_path / "agents" / "web" / "schedule.json").write_text('{"hour": 4, "minute": 30}')
    runner = make_runner(tmp_path, clock, app, misfire_grace_s=1800)
    scheduler = build_scheduler(runner, runner.load_config())
    jobs = {j.id: j for j in scheduler.get_jobs()}
    assert sorted(jobs) == ["backfill", "index", "nightly:api", "nightly:web"]
    now = clock()
    fire = {k: j.trigger.get_next_fire_time(None, now) for k, j in jobs.items() if k.startswith("nightly:")}
    assert fire == {"nightly:api": datetime(2026, 6, 10, 2, 0, tzinfo=TZ),
                    "nightly:web": datetime(2026, 6, 10, 4, 30, tzinfo=TZ)}
    assert {(j.coalesce, j.max_instances, j.misfire_grace_time) for j in jobs.values()} == {(True, 1, 1800)}
    assert jobs["index"].executor == "index" and jobs["nightly:api"].executor == "default"

    # Firing the 02:00 job at 02:00 (fake clock) consolidates api; web waits for 04:30.
    clock.set(at(2026, 6, 10, 2, 0))
    jobs["nightly:api"].func(*jobs["nightly:api"].args)
    assert app.calls == [("api", "nightly", "06-10 02:00")]
    clock.set(at(2026, 6, 10, 4, 30))
    jobs["nightly:web"].func(*jobs["nightly:web"].args)
    assert app.calls == [("api", "nightly", "06-10 02:00"), ("web", "nightly", "06-10 04:30")]


def test_missed_nightly_run_is_made_up_in_the_window_only(tmp_path):
    clock = Clock(at(2026, 6, 10, 9, 0))  # laptop woke after the window: nothing
    app = FakeApp(tmp_path, clock, {"api": [NOTHING]})
    runner = make_runner(tmp_path, clock, app)
    assert runner.tick().runs == [] and app.calls == []
    clock.set(at(2026, 6, 11, 5, 40))  # woke inside the next window: catches up
    assert [(r.agent, r.trigger) for r in runner.tick().runs] == [("api", "nightly")]
    assert app.calls == [("api", "nightly", "06-11 05:40")]


def test_spring_forward_night_runs_at_the_first_valid_time():
    cfg = config_from_settings(BASE)
    agent = AgentSchedule(id="api", hour=2, minute=30)
    # 2026-03-29 in Paris: 02:00 -> 03:00. 02:30 does not exist; it is read as 03:30 CEST.
    assert policy.nightly_occurrence(agent, at(2026, 3, 29, 3, 29), cfg) is None
    occ = policy.nightly_occurrence(agent, at(2026, 3, 29, 3, 30), cfg)
    assert occ == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
    assert policy.current_window(at(2026, 3, 29, 3, 30), cfg) == (
        datetime(2026, 3, 29, 1, 0, tzinfo=UTC), datetime(2026, 3, 29, 6, 0, tzinfo=UTC))


# ---------------------------------------------------------------------------------------------
# backfill


def test_backfill_is_round_robin_least_recently_run_first(tmp_path):
    clock = Clock(at(2026, 6, 10, 2, 5))
    app = FakeApp(tmp_path, clock, {"a": [ok(True)], "b": [ok(True)], "c": [ok(True)]})
    runner = make_runner(tmp_path, clock, app)
    served = at(2026, 6, 10, 2, 0)  # tonight's nightly runs are done; all three left a backlog
    set_state(runner, "a", backlog=True, nightly_for=served, last_started_at=at(2026, 6, 9, 3, 0))
    set_state(runner, "b", backlog=True, nightly_for=served, last_started_at=at(2026, 6, 9, 4, 0))
    set_state(runner, "c", backlog=True, nightly_for=served, last_started_at=at(2026, 6, 9, 2, 0))

    report = runner.tick()
    assert app.calls == [
        ("c", "backfill", "06-10 02:05"), ("a", "backfill", "06-10 02:55"), ("b", "backfill", "06-10 03:45"),
        ("c", "backfill", "06-10 04:35"), ("a", "backfill", "06-10 05:25"), ("b", "backfill", "06-10 06:15"),
        ("c", "backfill", "06-10 07:05"), ("a", "backfill", "06-10 07:55"),
    ]
    assert report.blocked == "outside the window 02:00-08:00"  # 08:45 now: the last run started at 07:55
    states = runner.state.agent_states()
    assert {k: (v.backlog, v.skip_night, v.last_trigger) for k, v in states.items()} == {
        "a": (True, None, "backfill"), "b": (True, None, "backfill"), "c": (True, None, "backfill")}


def test_nightly_runs_come_first_then_backfill_until_backlogs_clear(tmp_path):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = FakeApp(tmp_path, clock, {"a": [ok(True), ok(False)], "b": [ok(False)], "c": [NOTHING]}, run_minutes=20)
    runner = make_runner(tmp_path, clock, app)
    set_state(runner, "b", last_started_at=at(2026, 6, 9, 2, 0))
    report = runner.tick()
    assert app.calls == [("a", "nightly", "06-10 02:00"), ("c", "nightly", "06-10 02:20"),
                         ("b", "nightly", "06-10 02:40"), ("a", "backfill", "06-10 03:00")]
    assert report.blocked is None  # nothing left to do
    assert {r.agent: r.backlog for r in report.runs} == {"a": False, "b": False, "c": False}


def test_an_agent_without_progress_sits_out_the_night(tmp_path):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = FakeApp(tmp_path, clock, {"a": [LIMITED], "b": [ok(True), ok(True), ok(False)]}, run_minutes=30)
    runner = make_runner(tmp_path, clock, app)
    runner.tick()
    assert app.calls == [("a", "nightly", "06-10 02:00"), ("b", "nightly", "06-10 02:30"),
                         ("b", "backfill", "06-10 03:00"), ("b", "backfill", "06-10 03:30")]
    st = runner.state.agent_states()["a"]
    assert (st.backlog, st.skip_night, st.last_progress, st.last_result) == (True, "2026-06-10", False, LIMITED.result)

    clock.set(at(2026, 6, 10, 6, 0))  # later the same night: still skipped
    assert runner.tick().runs == []
    data = status_report(runner)
    assert [(x["agent"], x["backlog"], x["skipped_until"], x["next_run"], x["next_reason"]) for x in data["agents"]] == [
        ("a", True, "2026-06-11T00:00:00Z", "2026-06-11T00:00:00Z", "nightly"),
        ("b", False, None, "2026-06-11T00:00:00Z", "nightly")]

    clock.set(at(2026, 6, 11, 2, 0))  # next night: both again (a is least recently run)
    runner.tick()
    assert app.calls[4:] == [("a", "nightly", "06-11 02:00"), ("b", "nightly", "06-11 02:30")]


def test_a_run_that_clears_the_backlog_is_progress(tmp_path):
    state = AgentState(backlog=True)
    cleared = policy.apply_outcome(state, trigger="backfill", started=at(2026, 6, 10, 3), finished=at(2026, 6, 10, 3, 1),
                                   result="0 cards", progress=False, backlog=False, night="2026-06-10")
    assert (cleared.last_progress, cleared.backlog, cleared.skip_night) == (True, False, None)


# ---------------------------------------------------------------------------------------------
# window, pause, consolidate now


@pytest.mark.parametrize("hour,minute", [(8, 0), (12, 0), (23, 59), (1, 59)])
def test_nothing_is_consolidated_outside_the_window(tmp_path, hour, minute):
    clock = Clock(at(2026, 6, 10, hour, minute))
    app = FakeApp(tmp_path, clock, {"a": [ok(True)], "b": [ok(True)]})
    runner = make_runner(tmp_path, clock, app)
    set_state(runner, "a", backlog=True)
    set_state(runner, "b", backlog=True)
    report = runner.tick()
    assert (report.runs, report.blocked, app.calls) == ([], "outside the window 02:00-08:00", [])
    assert report.index == "3 files changed"  # the hourly index is not consolidation


def test_a_window_across_midnight(tmp_path):
    clock = Clock(at(2026, 6, 10, 23, 0))
    app = FakeApp(tmp_path, clock, {"a": [NOTHING]})
    (tmp_path / "agents" / "a").mkdir(parents=True)
    (tmp_path / "agents" / "a" / "schedule.json").write_text('{"hour": 22, "minute": 30}')
    runner = make_runner(tmp_path, clock, app, window_start="22:00", window_end="06:00")
    assert [(r.agent, r.trigger) for r in runner.tick().runs] == [("a", "nightly")]
    clock.set(at(2026, 6, 11, 5, 0))  # same night, after midnight: done already
    assert runner.tick().runs == []
    assert runner.state.agent_states()["a"].skip_night == "2026-06-10"


@pytest.mark.parametrize("how", ["settings", "environment"])
def test_pause_stops_every_automatic_run_but_not_consolidate_now(tmp_path, how):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = FakeApp(tmp_path, clock, {"a": [ok(True)], "b": [ok(False)]})
    if how == "settings":
        runner = make_runner(tmp_path, clock, app, paused=True)
        expected = "paused (setting schedule.paused)"
    else:
        runner = make_runner(tmp_path, clock, app, pause_env="1")
        expected = "paused ($REVERIE_PAUSE)"
    report = runner.tick()
    assert (report.index, report.runs, report.blocked) == (None, [], expected)
    assert app.calls == [] and app.indexed == []
    assert runner.consolidation_pass() == ([], expected)

    clock.set(at(2026, 6, 10, 14, 0))  # paused AND outside the window: consolidate now still runs
    runs = runner.run_now(["a"])
    assert [(r.agent, r.trigger, r.progress, r.backlog) for r in runs] == [("a", "now", True, True)]
    assert [(r.agent, r.trigger) for r in runner.run_now(None)] == [("a", "now"), ("b", "now")]
    st = runner.state.agent_states()["b"]
    assert (st.last_trigger, st.skip_night, st.nightly_for) == ("now", None, None)
    data = status_report(runner)
    assert (data["paused"], data["paused_by"], [x["next_run"] for x in data["agents"]]) == (
        True, how, [None, None])


def test_pause_env_values():
    assert [policy.env_flag(v) for v in (None, "", "0", "false", "no", "off", "1", "true", "yes", "on", "x")] == [
        False, False, False, False, False, False, True, True, True, True, True]


def test_consolidate_now_ignores_the_window_but_not_the_lock(tmp_path):
    clock = Clock(at(2026, 6, 10, 15, 0))
    agent_dir = tmp_path / "agents" / "a"

    def consolidate(agent, trigger):  # what the application's pipeline does: take the agent lock
        with AgentLock(agent_dir / "lock", owner=f"pipeline {trigger}"):
            return ok(False)

    jobs = Jobs(list_agents=lambda: [AgentSpec("a", agent_dir)], index_all=lambda: "", consolidate=consolidate)
    runner = Runner(jobs, load_config=lambda: config_from_settings(BASE), state=StateStore(tmp_path / "state.json"),
                    now=clock)
    assert [(r.trigger, r.busy, r.progress) for r in runner.run_now(["a"])] == [("now", False, True)]

    with held_by_another_thread(agent_dir / "lock", owner="schedule nightly"):
        rec = runner.run_now(["a"])[0]
    assert (rec.trigger, rec.busy, rec.progress, rec.error) == ("now", True, False, False)
    assert rec.result.startswith(f"busy: {agent_dir / 'lock'} is held by pid ")
    st = runner.state.agent_states()["a"]
    assert (st.last_result, st.last_trigger, st.backlog) == (rec.result, "now", False)  # busy changes nothing else


# ---------------------------------------------------------------------------------------------
# faults


def test_busy_agent_is_passed_over_for_this_pass_and_kept_due(tmp_path):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = FakeApp(tmp_path, clock, {"a": [Busy(tmp_path / "agents/a/lock"), NOTHING], "b": [NOTHING]}, run_minutes=5)
    runner = make_runner(tmp_path, clock, app)
    report = runner.tick()
    assert [(r.agent, r.trigger, r.busy) for r in report.runs] == [("a", "nightly", True), ("b", "nightly", False)]
    assert runner.state.agent_states()["a"].nightly_for is None
    clock.set(at(2026, 6, 10, 2, 30))
    assert [(r.agent, r.trigger, r.busy) for r in runner.tick().runs] == [("a", "nightly", False)]


def test_failing_jobs_are_recorded_and_never_stop_the_runner(tmp_path, caplog):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = FakeApp(tmp_path, clock, {"a": [ModuleNotFoundError("No module named 'consolidate.pipeline'")],
                                    "b": [ok(False)]})

    def broken_index():
        raise RuntimeError("index exploded")

    jobs = app.jobs()
    jobs.index_all = broken_index
    runner = Runner(jobs, load_config=lambda: config_from_settings(BASE),
                    state=StateStore(tmp_path / "state.json"), now=clock)
    report = runner.tick()
    assert report.index == "error: RuntimeError: index exploded"
    assert [(r.agent, r.error, r.result) for r in report.runs] == [
        ("a", True, "error: ModuleNotFoundError: No module named 'consolidate.pipeline'"),
        ("b", False, ok(False).result)]
    assert runner.state.agent_states()["a"].skip_night == "2026-06-10"
    assert "consolidation of a failed: ModuleNotFoundError" in caplog.text

    jobs.list_agents = lambda: (_ for _ in ()).throw(ImportError("no agents module"))
    clock.set(at(2026, 6, 11, 2, 0))
    assert runner.tick().runs == []
    assert status_report(runner)["problems"] == ["cannot list agents: ImportError: no agents module"]


def test_logged_and_stored_text_is_scrubbed(tmp_path, caplog):
    clock = Clock(at(2026, 6, 10, 2, 0))
    secret = "hunter2-" + "x9Q"
    app = FakeApp(tmp_path, clock, {"a": [RuntimeError(f"auth failed with {secret}")]})
    jobs = app.jobs()
    jobs.scrub = lambda text: text.replace(secret, "[REDACTED]")
    runner = Runner(jobs, load_config=lambda: config_from_settings(BASE),
                    state=StateStore(tmp_path / "state.json"), now=clock)
    runner.tick()
    assert runner.state.agent_states()["a"].last_result == "error: RuntimeError: auth failed with [REDACTED]"
    assert secret not in caplog.text and secret not in (tmp_path / "state.json").read_text()


def test_disabled_agents_and_schedule_json(tmp_path, caplog):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = FakeApp(tmp_path, clock, {"off": [NOTHING], "later": [NOTHING], "bad": [NOTHING], "paused": [NOTHING]},
                  enabled={"off": False})
    for name, text in {"later": '{"hour": 5, "minute": 15}', "bad": '{"hour": 25}',
                       "paused": '{"enabled": false}'}.items():
        (tmp_path / "agents" / name).mkdir(parents=True)
        (tmp_path / "agents" / name / "schedule.json").write_text(text)
    runner = make_runner(tmp_path, clock, app)
    assert [(r.agent, r.trigger) for r in runner.tick().runs] == [("bad", "nightly")]
    clock.set(at(2026, 6, 10, 5, 15))
    assert [(r.agent, r.trigger) for r in runner.tick().runs] == [("later", "nightly")]
    data = status_report(runner)
    rows = {x["agent"]: (x["enabled"], x["at"], x["at_source"], x["next_reason"]) for x in data["agents"]}
    assert rows == {
        "off": (False, "02:00", "default", "schedule disabled"),
        "later": (True, "05:15", "schedule.json", "nightly"),
        "bad": (True, "02:00", "default", "nightly"),
        "paused": (False, "02:00", "schedule.json", "schedule disabled"),
    }
    bad = tmp_path / "agents" / "bad" / "schedule.json"
    problem = f"{bad}: hour = 25 must be a whole number from 0 to 23.; defaults used (fix or delete the file)"
    assert data["problems"] == [problem]
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [f"agent bad: {problem}"]


def test_an_hour_outside_the_window_is_reported_not_run(tmp_path):
    cfg = config_from_settings(BASE)
    agent = AgentSchedule(id="a", hour=23, minute=0)
    assert policy.next_run(agent, AgentState(), at(2026, 6, 10, 12), cfg) == (
        None, "its hour 23:00 is outside the window 02:00-08:00: move the hour into the window or widen "
              "schedule.window_start/window_end")
    assert not policy.nightly_due(agent, AgentState(), at(2026, 6, 10, 23), cfg)


@pytest.mark.parametrize("section,message", [
    ({"window_start": "25:00"}, 'schedule.window_start = \'25:00\' is not a time of day: set it as "HH:MM", '
                                "e.g. `reverie settings set schedule.window_start 02:00`."),
    ({"hour": "2"}, "schedule.hour = '2' must be a whole number from 0 to 23."),
    ({"paused": "yes"}, "schedule.paused = 'yes' must be true or false."),
    ({"timezone": "Mars/Olympus"}, "schedule.timezone = 'Mars/Olympus' is not a known time zone: use a tz database "
                                   'name such as "Europe/Paris", or remove the setting to use the machine\'s zone.'),
])
def test_invalid_settings_name_the_fix(section, message):
    with pytest.raises(ScheduleConfigError) as exc:
        config_from_settings({**BASE, **section})
    assert str(exc.value) == message


# ---------------------------------------------------------------------------------------------
# state and status


def test_state_survives_restarts_and_a_corrupt_file_is_kept_aside(tmp_path):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = FakeApp(tmp_path, clock, {"a": [ok(True)]}, run_minutes=400)
    runner = make_runner(tmp_path, clock, app)
    runner.tick()
    path = tmp_path / "schedules" / "state.json"
    data = json.loads(path.read_text())
    assert data["agents"]["a"] == {
        "backlog": True,
        "history": [{"at": "2026-06-10T00:00:00Z", "backlog": True, "finished": "2026-06-10T06:40:00Z",
                     "progress": True, "result": ok(True).result, "trigger": "nightly"}],
        "last_finished_at": "2026-06-10T06:40:00Z",
        "last_progress": True,
        "last_result": ok(True).result,
        "last_started_at": "2026-06-10T00:00:00Z",
        "last_trigger": "nightly",
        "nightly_for": "2026-06-10T00:00:00Z",
        "skip_night": None,
    }
    # the 400-minute run outlasted the hour: the tick indexed again before looking for more work
    assert data["index"] == {"last_at": "2026-06-10T06:40:00Z", "result": "3 files changed"}
    assert app.indexed == ["02:00", "08:40"]
    assert path.stat().st_mode & 0o777 == 0o600
    # a new process (new runner) knows tonight's nightly run is done
    runner2 = make_runner(tmp_path, Clock(at(2026, 6, 10, 2, 30)), app)
    assert runner2.state.agent_states()["a"].nightly_for == at(2026, 6, 10, 2, 0)

    path.write_text("{not json")
    assert StateStore(path).agent_states() == {}
    aside = [p.name for p in path.parent.iterdir() if p.name.startswith("state.json.corrupt-")]
    assert len(aside) == 1 and (path.parent / aside[0]).read_text() == "{not json"


def test_status_report_and_text(tmp_path):
    clock = Clock(at(2026, 6, 10, 12, 0))
    app = FakeApp(tmp_path, clock, {"api": [ok(True)]})
    runner = make_runner(tmp_path, clock, app)
    # the runs' spending (policy.spend_entry) in the history: two runs of the night of June 10 (a
    # nightly and a backfill), a daytime `consolidate --now` after it (same night), one the night before
    history = ({"at": "2026-06-09T00:10:00Z", "trigger": "nightly", "calls": 0, "cost_usd": 0.0, "writer": "offline"},
               {"at": "2026-06-10T00:00:00Z", "trigger": "nightly", "calls": 3, "cost_usd": 0.0123,
                "writer": "claude-cli"},
               {"at": "2026-06-10T00:40:00Z", "trigger": "backfill", "calls": 1, "cost_usd": 0.004,
                "writer": "claude-cli"},
               {"at": "2026-06-10T09:00:00Z", "trigger": "now", "calls": 0, "cost_usd": 0.0, "writer": "offline"},
               {"at": "2026-06-10T09:30:00Z", "trigger": "nightly", "result": "busy: another run"})
    set_state(runner, "api", backlog=True, last_started_at=at(2026, 6, 10, 2), last_finished_at=at(2026, 6, 10, 2, 50),
              last_trigger="nightly", last_result=ok(True).result, last_progress=True,
              nightly_for=at(2026, 6, 10, 2), history=history)
    runner.state.record_index(at(2026, 6, 10, 11, 0), "3 files changed")
    data = status_report(runner, installed=["systemd"], budgets={"max_calls": 10, "max_cost_usd": 1.0,
                                                                  "max_passages": 1000})
    assert data == {
        "now": "2026-06-10T10:00:00Z",
        "timezone": "Europe/Paris",
        "window": {"start": "02:00", "end": "08:00", "open_now": False},
        "paused": False,
        "paused_by": None,
        "scheduler": {"running": False},
        "installed": ["systemd"],
        "index": {"last_run": "2026-06-10T09:00:00Z", "result": "3 files changed"},
        "agents": [{
            "agent": "api", "enabled": True, "at": "02:00", "at_source": "default", "problem": None,
            "next_run": "2026-06-11T00:00:00Z", "next_run_local": "2026-06-11 02:00 CEST", "next_reason": "nightly",
            "last_run": {"started_at": "2026-06-10T00:00:00Z", "finished_at": "2026-06-10T00:50:00Z",
                         "trigger": "nightly", "result": ok(True).result, "progress": True},
            "last_result": ok(True).result, "backlog": True, "skipped_until": None, "skip_reason": None,
            "running": None,
            "cost_per_night": [
                {"night": "2026-06-10", "cost_usd": 0.0163, "calls": 4, "runs": 4, "writers": ["claude-cli", "offline"]},
                {"night": "2026-06-09", "cost_usd": 0.0, "calls": 0, "runs": 1, "writers": ["offline"]}],
        }],
        "budgets": {"max_calls": 10, "max_cost_usd": 1.0, "max_passages": 1000},
        "night_budget": {"night": "2026-06-10", "max_cost_usd": None, "max_calls": None, "cost_usd": 0.0,
                         "calls": 0, "runs": 0, "exhausted": [], "spent": None},
        "problems": [],
    }
    assert format_status(data) == (
        "schedule: active; window 02:00-08:00 (Europe/Paris, closed now)\n"
        "scheduler: no daemon or tick running; OS units installed: systemd\n"
        "index: last 2026-06-10T09:00:00Z (3 files changed)\n"
        "\n"
        "api: nightly at 02:00\n"
        "  next run:  2026-06-11 02:00 CEST (nightly)\n"
        f"  last run:  2026-06-10T00:00:00Z nightly: {ok(True).result}\n"
        "  cost:      2026-06-10 $0.0163 (4 calls, 4 runs, claude-cli, offline); 2026-06-09 $0.0000 (0 calls, 1 run, "
        "offline)\n"
        "  backlog:   yes"
    )


def test_a_tick_does_nothing_while_another_scheduler_runs(tmp_path):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = FakeApp(tmp_path, clock, {"a": [NOTHING]})
    runner = make_runner(tmp_path, clock, app)
    with held_by_another_thread(runner.scheduler_lock, owner="schedule run"):
        report = runner.tick()
        data = status_report(runner)
    assert report.skipped.startswith("another scheduler is running (pid ") and report.skipped.endswith("(schedule run))")
    assert (report.index, report.runs, app.calls, app.indexed) == (None, [], [], [])
    assert data["scheduler"]["running"] is True and data["scheduler"]["owner"] == "schedule run"


def test_window_helpers():
    cfg = config_from_settings({**BASE, "window_start": "22:00", "window_end": "06:00"})
    assert policy.in_window(time(23, 0), cfg) and policy.in_window(time(5, 59), cfg)
    assert not policy.in_window(time(6, 0), cfg) and not policy.in_window(time(21, 59), cfg)
    assert policy.next_window_start(at(2026, 6, 10, 12), cfg) == at(2026, 6, 10, 22)
    allday = config_from_settings({**BASE, "window_start": "00:00", "window_end": "00:00"})
    assert policy.current_window(at(2026, 6, 10, 15), allday) == (at(2026, 6, 10, 0), at(2026, 6, 11, 0))


# ---------------------------------------------------------------------------------------------
# through the application's adapter: the real index, agent list and pipeline (offline writer)


def test_real_pipeline_nightly_then_backfill_through_the_adapter(reverie_home, shared_fixtures):
    import re

    from reverie.consolidate.commands.schedule_cmd import build_runner, outcome_from_summary
    from reverie.consolidate.index import index_all
    from reverie.consolidate.settings import set_value

    index_all(reverie_home, projects_dir=shared_fixtures)
    set_value(reverie_home, "consolidate.max_passages", 30)  # small budget: leaves a backlog
    set_value(reverie_home, "schedule.timezone", "Europe/Paris")
    runner = build_runner(reverie_home)
    clock = Clock(at(2026, 6, 10, 2, 0))
    runner.now = clock
    report = runner.tick()
    runs = [(r.agent, r.trigger) for r in report.runs]
    assert runs[:3] == [("demo", "nightly"), ("spotter", "nightly"), ("spotter-gqc", "nightly")]
    assert len(runs) > 3 and {t for _, t in runs[3:]} == {"backfill"}  # a backlog was left and worked off
    assert all(r.progress and not r.error and not r.busy for r in report.runs)
    assert all(re.fullmatch(r"\d+ cards? from \d+ passages? in \d+ conversations?(; backlog left)?", r.result)
               for r in report.runs), [r.result for r in report.runs]
    assert report.runs[-1].backlog is False and report.blocked is None
    clock.set(at(2026, 6, 10, 3, 0))
    assert runner.tick().runs == []  # same night, nothing left

    assert outcome_from_summary({"conversations": 0, "passages": 0, "cards_written": 0, "backlog": True,
                                 "errors": [{"kind": "rate_limit", "message": "429 after 3 retries"}]}) == RunOutcome(
        progress=False, backlog=True,
        result="0 cards from 0 passages in 0 conversations; 1 error (first: rate_limit: 429 after 3 retries); backlog left")


def test_adapter_scrubs_messages_with_the_redaction_engine(reverie_home):
    from reverie.consolidate.scrubber import printable_scrubber

    token = "ghp_" + "R8tq2Lw9ZcXv4Nb7Mk3Hj6Gf5Dd1Ss0Aa2Pp"
    scrub = printable_scrubber(reverie_home)
    assert token not in scrub(f"upstream said: Authorization: Bearer {token}")
    assert scrub("4 cards from 103 passages in 1 conversation; backlog left") == (
        "4 cards from 103 passages in 1 conversation; backlog left")


def test_settings_defaults_are_a_valid_schedule():
    from reverie.consolidate.settings import DEFAULTS

    cfg = config_from_settings(DEFAULTS["schedule"])
    assert (cfg.hour, cfg.minute, cfg.window_text(), cfg.paused, cfg.misfire_grace_s, cfg.index_every_minutes,
            cfg.backfill_every_minutes) == (2, 0, "02:00-08:00", False, 3600, 60, 10)


def test_reverie_consolidate_now_runs_while_paused_and_outside_the_window(reverie_home, shared_fixtures, monkeypatch):
    from click.testing import CliRunner

    from reverie.consolidate.commands import build_cli
    from reverie.consolidate.index import index_all
    from reverie.consolidate.settings import set_value

    index_all(reverie_home, projects_dir=shared_fixtures)
    set_value(reverie_home, "schedule.paused", True)
    set_value(reverie_home, "schedule.window_start", "03:00")  # a one-minute window: practically always closed
    set_value(reverie_home, "schedule.window_end", "03:01")
    monkeypatch.setenv("REVERIE_PAUSE", "1")
    res = CliRunner().invoke(build_cli(), ["consolidate", "--now", "--agent", "spotter", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    summary = summary[0] if isinstance(summary, list) else summary
    assert (summary["agent"], summary["conversations"], summary["errors"]) == ("spotter", 1, [])
    res = CliRunner().invoke(build_cli(), ["schedule", "tick", "--json"])
    assert res.exit_code == 0 and json.loads(res.output) == {
        "index": None, "runs": [], "skipped": None, "blocked": "paused ($REVERIE_PAUSE)"}


def test_a_run_that_only_hits_a_usage_limit_is_no_progress(reverie_home, tmp_path, monkeypatch):
    """Through the real adapter and pipeline: a claude CLI that always answers 429 consolidates
    nothing, so the scheduler must not count the passages it planned as progress (issue 7)."""
    import os
    import stat
    import sys

    from reverie.consolidate.commands.schedule_cmd import build_jobs
    from reverie.consolidate.settings import set_value
    from reverie.consolidate.store import open_db

    db = open_db(reverie_home / "agents" / "demo" / "agent.db")
    db.conn.execute("INSERT INTO conversations(id, cwd, first_at, last_at) VALUES ('c1', '/w', '2026-10-01T09:00:00Z', '2026-10-01T10:00:00Z')")
    for i, (role, text) in enumerate([("user", "From now on, always use pnpm instead of npm in this repo."),
                                      ("assistant", "Understood, pnpm it is.")]):
        mid = db.conn.execute("INSERT INTO messages(conversation, uuid, role, kind, timestamp) VALUES ('c1', ?, ?, 'message', ?)",
                              (f"m{i}", role, f"2026-10-01T09:0{i}:00Z")).lastrowid
        db.conn.execute("INSERT INTO blocks(message_id, idx, type, text) VALUES (?, 0, 'text', ?)", (mid, text))
    db.conn.commit()
    db.close()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "claude"
    exe.write_text(f"#!{sys.executable}\nimport sys\nsys.stdin.read()\nsys.stderr.write('API Error: 429 rate limit')\nsys.exit(1)\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    set_value(reverie_home, "writer", "claude-cli")
    set_value(reverie_home, "consolidate.retry", {"attempts": 2, "base_delay_s": 0, "max_delay_s": 0})

    outcome = build_jobs(reverie_home).consolidate("demo", "nightly")
    assert outcome == RunOutcome(
        progress=False, backlog=True,
        result="0 cards from 0 passages in 0 conversations; 1 error (first: transient: "
               "claude exited 1 (transient) after 2 attempts); backlog left",
        calls=2, cost_usd=0.0, writer="claude-cli")


def test_daemon_jobs_log_failures_scrubbed(tmp_path, caplog, monkeypatch):
    """A daemon job failing outside the runner's own guards (here `index` itself raises) logs the
    error through the runner's scrubber, never the raw message."""
    from reverie.schedules.daemon import _index_job, _pass_job

    clock = Clock(at(2026, 6, 10, 2, 0))
    secret = "hunter2-" + "z7P"
    jobs = FakeApp(tmp_path, clock, {}).jobs()
    jobs.scrub = lambda text: text.replace(secret, "[REDACTED]")
    runner = Runner(jobs, load_config=lambda: config_from_settings(BASE),
                    state=StateStore(tmp_path / "state.json"), now=clock)

    def boom(*args, **kwargs):
        raise RuntimeError(f"token {secret} rejected")

    monkeypatch.setattr(runner, "index", boom)
    monkeypatch.setattr(runner, "consolidation_pass", boom)
    caplog.set_level("ERROR")
    _index_job(runner, scheduler=None)
    _pass_job(runner, "nightly a")
    assert [r.getMessage().split("\n")[0] for r in caplog.records] == [
        "index job failed: RuntimeError: token [REDACTED] rejected",
        "consolidation pass failed: RuntimeError: token [REDACTED] rejected",
    ]
    assert secret not in caplog.text
