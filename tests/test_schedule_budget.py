"""The nightly budgets (schedules.nightly): scheduled runs share consolidate.max_cost_usd and
consolidate.max_calls per night across all agents, each gets what is left of tonight's, a spent
night skips every agent until the next one (tick, status text and JSON), `--now` keeps the caps
per run; the Budget honours the allowance; the adapter hands it in. Fake clock, fake app."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from fakes import Clock

from reverie.consolidate.budget import NIGHT_KEY, Budget
from reverie.schedules import nightly
from reverie.schedules.nightly import Allowance, NightSpend
from reverie.schedules.policy import config_from_settings
from reverie.schedules.runner import AgentSpec, Jobs, RunOutcome, Runner
from reverie.schedules.state import StateStore
from reverie.schedules.status import format_status, status_report

from test_schedules import BASE, TZ, UTC, at  # the same Paris schedule and wall clock


class SpendingApp:
    """Agents that always have a backlog; each run spends what its allowance permits, up to
    `per_run` ($, calls), and reports the budget it hit, like the pipeline's summary."""

    def __init__(self, root: Path, clock: Clock, agents: list[str], per_run=(0.4, 4)) -> None:
        self.root, self.clock, self.agents, self.per_run = root, clock, agents, per_run
        self.calls: list[tuple] = []

    def list_agents(self):
        return [AgentSpec(id=a, dir=self.root / "agents" / a) for a in self.agents]

    def consolidate(self, agent: str, trigger: str, allowance: Allowance | None = None) -> RunOutcome:
        self.calls.append((agent, trigger, self.clock().astimezone(TZ).strftime("%m-%d %H:%M"),
                           None if allowance is None else (allowance.night, allowance.max_cost_usd, allowance.max_calls)))
        self.clock.set(self.clock() + timedelta(minutes=20))
        cost, calls = self.per_run
        exhausted: tuple = ()
        if allowance is not None and allowance.max_cost_usd is not None and cost > allowance.max_cost_usd:
            cost, calls, exhausted = 0.0, 0, ("cost",)   # its first call would pass what is left
        return RunOutcome(progress=calls > 0, backlog=True, result=f"{calls} calls; backlog left", calls=calls,
                          cost_usd=cost, writer="anthropic", exhausted=exhausted)

    def jobs(self) -> Jobs:
        return Jobs(list_agents=self.list_agents, index_all=lambda: "0 files changed", consolidate=self.consolidate)


def make_runner(tmp_path: Path, clock: Clock, app: SpendingApp, *, cost=1.0, calls=10) -> Runner:
    def load():
        return replace(config_from_settings(BASE), night_max_cost_usd=cost, night_max_calls=calls)

    return Runner(app.jobs(), load_config=load, state=StateStore(tmp_path / "schedules" / "state.json"),
                  scheduler_lock=tmp_path / "schedules" / "scheduler.lock", now=clock)


SPENT = ("tonight's dollar budget for scheduled runs is spent ($0.8000 of $1.00 and 8 of 10 calls in 3 runs "
         "across all agents; consolidate.max_cost_usd, consolidate.max_calls)")


def test_scheduled_runs_share_one_budget_per_night_across_agents(tmp_path):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = SpendingApp(tmp_path, clock, ["a", "b"])
    runner = make_runner(tmp_path, clock, app)
    report = runner.tick()
    # a and b get what is left of tonight's $1.00 / 10 calls; the third run cannot afford its call,
    # so the night is spent and the pass stops (without this, backfill would run until 08:00)
    assert app.calls == [("a", "nightly", "06-10 02:00", ("2026-06-10", 1.0, 10)),
                         ("b", "nightly", "06-10 02:20", ("2026-06-10", 0.6, 6)),
                         ("a", "backfill", "06-10 02:40", ("2026-06-10", 0.2, 2))]
    assert report.blocked == SPENT
    assert runner.state.load()["nights"] == {
        "2026-06-10": {"cost_usd": 0.8, "calls": 8, "runs": 3, "exhausted": ["cost"]}}

    clock.set(at(2026, 6, 10, 5, 0))  # later that night: still nothing
    assert (runner.tick().runs, runner.tick().blocked, len(app.calls)) == ([], SPENT, 3)
    data = status_report(runner)
    assert data["night_budget"] == {"night": "2026-06-10", "max_cost_usd": 1.0, "max_calls": 10, "cost_usd": 0.8,
                                    "calls": 8, "runs": 3, "exhausted": ["cost"], "spent": SPENT}
    assert [(x["agent"], x["skipped_until"], x["skip_reason"], x["next_run"], x["next_reason"])
            for x in data["agents"]] == [
        ("a", "2026-06-11T00:00:00Z", SPENT, "2026-06-11T00:00:00Z", "nightly"),
        ("b", "2026-06-11T00:00:00Z", SPENT, "2026-06-11T00:00:00Z", "nightly")]
    assert format_status(data) == (
        "schedule: active; window 02:00-08:00 (Europe/Paris, open now)\n"
        "scheduler: no daemon or tick running; OS units installed: none\n"
        "index: last 2026-06-10T03:00:00Z (0 files changed)\n"
        "budgets: scheduled runs share $1.00 and 10 model calls per night across all agents; each "
        "`consolidate --now` run gets the same (consolidate.max_cost_usd, consolidate.max_calls)\n"
        "  night 2026-06-10: $0.8000 and 8 calls spent by 3 scheduled runs; SPENT: no scheduled run until the "
        "next night\n"
        "\n"
        "a: nightly at 02:00\n"
        "  next run:  2026-06-11 02:00 CEST (nightly)\n"
        "  last run:  2026-06-10T00:40:00Z backfill: 0 calls; backlog left\n"
        "  cost:      2026-06-10 $0.4000 (4 calls, 2 runs, anthropic)\n"
        f"  backlog:   yes; sitting out until 2026-06-11T00:00:00Z ({SPENT})\n"
        "\n"
        "b: nightly at 02:00\n"
        "  next run:  2026-06-11 02:00 CEST (nightly)\n"
        "  last run:  2026-06-10T00:20:00Z nightly: 4 calls; backlog left\n"
        "  cost:      2026-06-10 $0.4000 (4 calls, 1 run, anthropic)\n"
        f"  backlog:   yes; sitting out until 2026-06-11T00:00:00Z ({SPENT})")

    clock.set(at(2026, 6, 11, 2, 0))  # the next night has its own budget
    runner.tick()
    assert app.calls[3:5] == [("b", "nightly", "06-11 02:00", ("2026-06-11", 1.0, 10)),  # least recently run
                              ("a", "nightly", "06-11 02:20", ("2026-06-11", 0.6, 6))]


def test_the_call_cap_spends_the_night_and_consolidate_now_keeps_per_run_caps(tmp_path):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = SpendingApp(tmp_path, clock, ["a", "b", "c"], per_run=(0.0, 5))
    runner = make_runner(tmp_path, clock, app)
    report = runner.tick()
    assert [c[:2] + c[3:] for c in app.calls] == [("a", "nightly", ("2026-06-10", 1.0, 10)),
                                                   ("b", "nightly", ("2026-06-10", 1.0, 5))]
    assert report.blocked == ("tonight's model call budget for scheduled runs is spent ($0.0000 of $1.00 and 10 of "
                              "10 calls in 2 runs across all agents; consolidate.max_cost_usd, consolidate.max_calls)")
    # a run the user starts is not the scheduler's: no allowance, and not counted in the night
    runner.run_now(["c"])
    assert app.calls[2][:2] + app.calls[2][3:] == ("c", "now", None)
    assert runner.state.night_spend("2026-06-10") == NightSpend(cost_usd=0.0, calls=10, runs=2)


def test_free_runs_never_spend_the_night_and_no_caps_means_no_allowance(tmp_path):
    clock = Clock(at(2026, 6, 10, 2, 0))
    app = SpendingApp(tmp_path, clock, ["a"], per_run=(0.0, 0))  # the offline writer: no calls, no dollars
    runner = make_runner(tmp_path, clock, app, cost=0.0, calls=0)
    runner.tick()
    # runs without progress: the agent sits out for that reason, not for a budget
    assert (app.calls, status_report(runner)["agents"][0]["skip_reason"]) == (
        [("a", "nightly", "06-10 02:00", ("2026-06-10", 0.0, 0))], "last run made no progress")
    assert nightly.spent_reason(runner.load_config(), runner.state.night_spend("2026-06-10")) is None
    cfg = config_from_settings(BASE)
    assert (nightly.allowance(cfg, NightSpend(), "2026-06-10"), nightly.spent_reason(cfg, NightSpend(9, 99, 3))) == (
        None, None)


def test_the_ledger_keeps_14_nights_and_reads_hand_edits_as_nothing_spent(tmp_path):
    store = StateStore(tmp_path / "state.json")
    for day in range(1, 17):
        store.update_agent("a", lambda old: old, night=f"2026-06-{day:02d}",
                           spend=lambda ns: nightly.add_run(ns, {"calls": 1, "cost_usd": 0.01}, ["passages"]))
    nights = store.load()["nights"]
    assert (sorted(nights)[0], len(nights), nights["2026-06-16"]) == (
        "2026-06-03", 14, {"cost_usd": 0.01, "calls": 1, "runs": 1, "exhausted": []})
    store.update(lambda data: data["nights"].update({"2026-06-16": {"cost_usd": "x", "calls": True,
                                                                    "exhausted": "cost"}}))
    assert store.night_spend("2026-06-16") == NightSpend()
    store.update(lambda data: data.update({"nights": ["not", "an", "object"]}))
    assert store.night_spend("2026-06-16") == NightSpend()


def test_budget_takes_what_is_left_of_the_night():
    settings = {"consolidate": {"max_passages": 1000, "max_calls": 10, "max_cost_usd": 1.0},
                NIGHT_KEY: {"night": "2026-06-10", "max_cost_usd": 0.25, "max_calls": 3}}
    b = Budget.from_settings(settings)
    assert (b.max_calls, b.max_cost_usd, b.night_calls_left, b.night_cost_left) == (10, 1.0, 3, 0.25)
    assert b.refuse_attempt(estimate_usd=0.2) is None
    assert b.refuse_attempt(estimate_usd=0.3) == (
        "tonight's dollar cap for scheduled runs reached ($0.0000 spent of the $0.2500 left of $1.00 per night "
        "across all agents, the next call may cost up to $0.3000; raise consolidate.max_cost_usd to allow more)")
    assert b.refuse_attempt(spent_calls=3) == (
        "tonight's model call budget for scheduled runs is spent (3 of 10 calls per night across all agents "
        "were left for this run; raise consolidate.max_calls to allow more)")
    assert b.exhausted == ["cost", "calls"]
    # `consolidate --now` (no key) and the first run of a night (all left) read as per-run caps
    for s in ({"consolidate": settings["consolidate"]},
              {**settings, NIGHT_KEY: {"max_cost_usd": 1.0, "max_calls": 10}}):
        assert Budget.from_settings(s).refuse_attempt(spent_calls=10) == (
            "model call budget spent (10 calls this run; raise consolidate.max_calls to allow more)")
    assert Budget.from_settings({**settings, NIGHT_KEY: {"max_calls": "3", "max_cost_usd": True}}).night_calls_left is None


def test_the_adapter_hands_the_allowance_to_the_pipeline(reverie_home, monkeypatch):
    from click.testing import CliRunner

    from reverie.consolidate import pipeline
    from reverie.consolidate.commands import build_cli
    from reverie.consolidate.commands.schedule_cmd import build_jobs, config_loader
    from reverie.consolidate.settings import set_value

    set_value(reverie_home, "consolidate.max_cost_usd", 2.5)
    set_value(reverie_home, "consolidate.max_calls", 20)
    seen = []

    def fake_consolidate(home, agent_id, *, trigger, settings=None):
        seen.append((agent_id, trigger, None if settings is None else settings.get(NIGHT_KEY),
                     None if settings is None else settings["consolidate"]["max_cost_usd"]))
        return {"agent": agent_id, "conversations": 1, "passages_consolidated": 3, "cards_written": 1,
                "backlog": True, "calls": 2, "cost_usd": 0.5, "writer": "anthropic", "budget_exhausted": ["cost"]}

    monkeypatch.setattr(pipeline, "consolidate_agent", fake_consolidate)
    jobs = build_jobs(reverie_home)
    out = jobs.consolidate("demo", "backfill", allowance=Allowance(night="2026-06-10", max_cost_usd=0.75, max_calls=4))
    assert out == RunOutcome(progress=True, backlog=True, result="1 card from 3 passages in 1 conversation; backlog left",
                             calls=2, cost_usd=0.5, writer="anthropic", exhausted=("cost",))
    jobs.consolidate("demo", "now")
    assert seen == [("demo", "backfill", {"night": "2026-06-10", "max_cost_usd": 0.75, "max_calls": 4}, 2.5),
                    ("demo", "now", None, None)]
    cfg = config_loader(reverie_home, strict=True)()
    assert (cfg.night_max_cost_usd, cfg.night_max_calls) == (2.5, 20)

    res = CliRunner().invoke(build_cli(), ["schedule", "status", "--json"])
    assert res.exit_code == 0, res.output
    budget = json.loads(res.output)["night_budget"]
    assert {k: budget[k] for k in ("max_cost_usd", "max_calls", "cost_usd", "calls", "runs", "exhausted", "spent")} == {
        "max_cost_usd": 2.5, "max_calls": 20, "cost_usd": 0.0, "calls": 0, "runs": 0, "exhausted": [], "spent": None}
