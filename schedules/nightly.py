"""The nightly budgets: what the scheduler's runs of one night may spend, for the whole home.

The caps are the application's (`consolidate.max_cost_usd`, `consolidate.max_calls`, handed in
through `ScheduleConfig.night_max_cost_usd` / `night_max_calls`; None means no nightly cap). For
scheduled runs (triggers "nightly" and "backfill") they are totals per night across all agents:
each scheduled run gets what is left of tonight's budget (`allowance`), and once a run is stopped
by it, or the night's calls or dollars reach a cap, no scheduled run starts until the next night
(`spent_reason`). Runs the user starts (`consolidate --now`, `Runner.run_now`) keep the caps per
run and are not counted here.

The ledger (`NightSpend`, kept by `schedules.state` under "nights", one entry per night id) sums
what the writers reported: dollars, model calls, runs, and which budget stopped a run. Pure
functions; standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from .policy import ScheduleConfig, nonneg

#: Triggers whose runs share the nightly budget.
SCHEDULED = ("nightly", "backfill")
#: Nights kept in the ledger (newest by night id).
NIGHTS_KEEP = 14


def _num(value: Any, kind: type) -> Any:
    return nonneg(value, kind, kind(0))


@dataclass(frozen=True)
class NightSpend:
    """What the scheduled runs of one night spent. `exhausted`: the budgets ("cost", "calls") that
    stopped one of them (the writers' refusals, as the run reported them)."""

    cost_usd: float = 0.0
    calls: int = 0
    runs: int = 0
    exhausted: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return {"cost_usd": round(self.cost_usd, 6), "calls": self.calls, "runs": self.runs,
                "exhausted": list(self.exhausted)}

    @classmethod
    def from_dict(cls, d: Any) -> "NightSpend":
        """Tolerant of hand edits: a wrong type reads as nothing spent for that field."""
        if not isinstance(d, Mapping):
            return cls()
        ex = d.get("exhausted")
        return cls(cost_usd=_num(d.get("cost_usd"), float), calls=_num(d.get("calls"), int),
                   runs=_num(d.get("runs"), int),
                   exhausted=tuple(x for x in ex if x in ("cost", "calls")) if isinstance(ex, list) else ())


def add_run(ns: NightSpend, spend: Mapping[str, Any] | None, exhausted: tuple | list = ()) -> NightSpend:
    """`ns` plus one run: its `policy.spend_entry` (calls, cost_usd; None = spent nothing) and the
    money budgets it reported exhausted ("passages" is a per-run cap and is ignored)."""
    s = dict(spend or {})
    hit = tuple(dict.fromkeys(ns.exhausted + tuple(x for x in exhausted if x in ("cost", "calls"))))
    return replace(ns, cost_usd=ns.cost_usd + _num(s.get("cost_usd"), float), calls=ns.calls + _num(s.get("calls"), int),
                   runs=ns.runs + 1, exhausted=hit)


@dataclass(frozen=True)
class Allowance:
    """What one scheduled run may spend: what is left of night `night`'s budget (None: no cap)."""

    night: str
    max_cost_usd: float | None
    max_calls: int | None


def has_caps(cfg: ScheduleConfig) -> bool:
    return cfg.night_max_cost_usd is not None or cfg.night_max_calls is not None


def allowance(cfg: ScheduleConfig, ns: NightSpend, night: str) -> Allowance | None:
    """What is left of tonight's budget for the next scheduled run, or None without nightly caps."""
    if not has_caps(cfg):
        return None
    cost = None if cfg.night_max_cost_usd is None else round(max(0.0, cfg.night_max_cost_usd - ns.cost_usd), 6)
    calls = None if cfg.night_max_calls is None else max(0, cfg.night_max_calls - ns.calls)
    return Allowance(night=night, max_cost_usd=cost, max_calls=calls)


def spent_reason(cfg: ScheduleConfig, ns: NightSpend) -> str | None:
    """Why no scheduled run may start in this night any more, or None while budget is left.

    Spent: a scheduled run was stopped by the nightly dollar or call budget, or the night's calls /
    dollars reached their cap (a cap of 0 counts as reached only once a run was refused, so the
    offline writer, which makes no model calls, keeps running)."""
    if not has_caps(cfg):
        return None
    calls_cap, cost_cap = cfg.night_max_calls, cfg.night_max_cost_usd
    by_calls = "calls" in ns.exhausted or (calls_cap is not None and ns.calls > 0 and ns.calls >= calls_cap)
    by_cost = "cost" in ns.exhausted or (cost_cap is not None and ns.cost_usd > 0 and ns.cost_usd >= cost_cap)
    if not (by_calls or by_cost):
        return None
    which = " and ".join(w for w, hit in (("dollar", by_cost), ("model call", by_calls)) if hit)
    used = [f"${ns.cost_usd:.4f} of ${cost_cap:.2f}" if cost_cap is not None else f"${ns.cost_usd:.4f}",
            f"{ns.calls} of {calls_cap} calls" if calls_cap is not None else f"{ns.calls} calls"]
    return (f"tonight's {which} budget for scheduled runs is spent ({' and '.join(used)} in {ns.runs} "
            f"run{'s' if ns.runs != 1 else ''} across all agents; consolidate.max_cost_usd, consolidate.max_calls)")


def prune(nights: Mapping[str, Any]) -> dict[str, Any]:
    """The ledger's newest `NIGHTS_KEEP` nights (night ids are ISO dates: they sort by time)."""
    keys = sorted((k for k in nights if isinstance(k, str)), reverse=True)[:NIGHTS_KEEP]
    return {k: nights[k] for k in sorted(keys)}
