"""Budgets, retries and cost of a consolidation run, in one place.

* Passages: at most `consolidate.max_passages` passages are cut per run (default 1,000).
* Model calls: at most `consolidate.max_calls` writer calls per run (default 10); the offline writer
  makes no model calls and is not limited by it.
* Dollars: API backends stop before a call whose worst-case cost (estimated input tokens at the
  input price plus `max_tokens` at the output price) would pass `consolidate.max_cost_usd`.
* Every attempt is a call: a retry (429, 529, ...) and the `max_tokens` re-send are checked against
  both caps before they are sent (`Budget.check_attempt`), counting what the request has already
  made and spent; a refused attempt ends the request as a `budget` error (left for the next run).
* Retries: 429, 529, other 5xx, connection errors and timeouts are retried `retry.attempts` times
  with exponential backoff and jitter (honouring `retry-after`, capped at `retry.max_delay_s`);
  after that the request is a transient failure and its passages are left for the next run.

* Nightly: a scheduled run (nightly, backfill) also stops at what is left of tonight's home-wide
  budget (the same two settings are totals per night across all agents for the scheduler's runs,
  `schedules.nightly`): the scheduler's job hands it in under `NIGHT_KEY` of the settings it
  passes (never stored in settings.json); `consolidate --now` has no such key and gets the caps per
  run. `max_calls` / `max_cost_usd` stay the per-run caps, so a fresh run's budget (the anthropic
  writer's "could any run afford this re-send") is never judged by what is left of one night.

Prices (USD per million tokens, `PRICES`): claude-haiku-4-5 $1 input / $5 output; Message Batches
are half price; cache writes cost 1.25x input, cache reads 0.1x input.

Invariants: `Budget.charge` is the only place run totals grow, so the run record's calls, tokens and
cost are the sum of what every result reported; and no model call is sent once the run's calls
(charged plus those of the request in flight) reach `max_calls`, nor one whose estimate would take
the run's cost (charged plus in flight) past `max_cost_usd`, nor, in a scheduled run, past what
was left of tonight's budget (`night_calls_left`, `night_cost_left`).
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TypeVar

log = logging.getLogger(__name__)

#: Settings key (in memory only) under which the scheduler's job passes what is left of tonight's
#: budget to a scheduled run: {"night": id, "max_cost_usd": float | None, "max_calls": int | None}.
NIGHT_KEY = "_night_allowance"

PRICES: dict[str, tuple[float, float]] = {
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-haiku-4-5-20251001": (1.0, 5.0),
    "haiku": (1.0, 5.0),
}
BATCH_FACTOR = 0.5
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.1
CHARS_PER_TOKEN = 4


def price(model: str) -> tuple[float, float]:
    return PRICES.get(model, PRICES["claude-haiku-4-5"])


def cost_usd(model: str, *, input_tokens: int = 0, output_tokens: int = 0, cache_write: int = 0,
             cache_read: int = 0, batch: bool = False) -> float:
    """Dollar cost of one response's usage (input_tokens excludes cached tokens, as the API reports)."""
    pin, pout = price(model)
    usd = (input_tokens * pin + cache_write * pin * CACHE_WRITE_FACTOR + cache_read * pin * CACHE_READ_FACTOR
           + output_tokens * pout) / 1_000_000
    return usd * (BATCH_FACTOR if batch else 1.0)


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


@dataclass
class RetryPolicy:
    attempts: int = 3              # total tries per request
    base_delay_s: float = 1.0
    max_delay_s: float = 30.0
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int, retry_after: Optional[float] = None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(self.max_delay_s, retry_after)
        d = self.base_delay_s * (2 ** attempt)
        return min(self.max_delay_s, d * (0.5 + random.random() / 2))


T = TypeVar("T")


class Transient(Exception):
    """A fault worth retrying (rate limit, overload, 5xx, timeout); `retry_after` in seconds."""

    def __init__(self, message: str, retry_after: Optional[float] = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BudgetSpent(Exception):
    """Raised before a model call (a first try, a retry or a re-send) that the run's budget does not
    allow; `what` is "calls" or "cost". Never retried: `with_retries` lets it through at once."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


def with_retries(fn: Callable[[int], T], policy: RetryPolicy,
                 before_attempt: Callable[[int], None] | None = None) -> T:
    """Call fn(attempt) until it returns; `Transient` is retried with backoff up to policy.attempts,
    then re-raised. Anything else propagates at once.

    `before_attempt(attempt)` runs before every attempt (before the backoff wait of a retry, so a
    refused retry waits for nothing); what it raises propagates at once. A `BudgetSpent` it raises
    before a retry names the fault that retry was for."""
    last: Transient | None = None
    for attempt in range(max(1, policy.attempts)):
        if before_attempt:
            try:
                before_attempt(attempt)
            except BudgetSpent as exc:
                if last is None:
                    raise
                raise BudgetSpent(f"{exc}; not retried after {last}", exc.what) from None
        if last is not None:   # a retry: wait first
            wait = policy.delay(attempt - 1, last.retry_after)
            log.info("transient fault (%s), retry %d in %.2fs", last, attempt, wait)
            policy.sleep(wait)
        try:
            return fn(attempt)
        except Transient as exc:
            last = exc
    assert last is not None
    raise last


@dataclass
class Budget:
    """Per-run limits and totals."""

    max_passages: int = 1000
    max_calls: int = 10
    max_cost_usd: float = 1.0
    passages: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost: float = 0.0
    exhausted: list[str] = field(default_factory=list)
    #: what is left of tonight's home-wide budget for a scheduled run (None: not a scheduled run)
    night_calls_left: Optional[int] = None
    night_cost_left: Optional[float] = None

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> "Budget":
        c = settings.get("consolidate", {})
        night = settings.get(NIGHT_KEY) if isinstance(settings.get(NIGHT_KEY), dict) else {}

        def left(key: str, kind: type) -> Any:
            v = night.get(key)
            return kind(max(0, v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

        return cls(max_passages=int(c.get("max_passages", 1000)), max_calls=int(c.get("max_calls", 10)),
                   max_cost_usd=float(c.get("max_cost_usd", 1.0)), night_calls_left=left("max_calls", int),
                   night_cost_left=left("max_cost_usd", float))

    # passages --------------------------------------------------------------------------------
    def take_passages(self, n: int) -> bool:
        """Reserve n passages; False (and nothing reserved) when that would pass the cap, except
        that an empty run may always take its first stretch (so a run never stalls on one big one)."""
        if self.passages + n > self.max_passages and self.passages > 0:
            self._mark("passages")
            return False
        self.passages += n
        return True

    # calls and cost --------------------------------------------------------------------------
    def refuse_call(self, writer, request, *, estimate_usd: float = 0.0) -> Optional[str]:
        """A reason not to make this call, or None (writers that make no model call are never refused)."""
        if not getattr(writer, "model_backed", False):
            return None
        if estimate_usd == 0.0 and hasattr(writer, "estimate_cost"):
            estimate_usd = writer.estimate_cost(request)
        return self.refuse_attempt(estimate_usd=estimate_usd)

    def refuse_attempt(self, *, spent_calls: int = 0, spent_usd: float = 0.0,
                       estimate_usd: float = 0.0) -> Optional[str]:
        """A reason not to send one more model call, or None. `spent_calls` / `spent_usd` are what the
        request in flight has already made and cost (not charged yet: results are charged when the
        request ends); `estimate_usd` is this call's worst case. Marks the budget it hits as exhausted;
        the reason names the setting to raise."""
        refusal = self._refusal(spent_calls, spent_usd, estimate_usd)
        return refusal[1] if refusal else None

    def check_attempt(self, *, spent_calls: int = 0, spent_usd: float = 0.0, estimate_usd: float = 0.0) -> None:
        """`refuse_attempt` as an exception: raises `BudgetSpent` when the call must not be sent."""
        refusal = self._refusal(spent_calls, spent_usd, estimate_usd)
        if refusal is not None:
            raise BudgetSpent(refusal[1], refusal[0])

    def _refusal(self, spent_calls: int, spent_usd: float, estimate_usd: float) -> Optional[tuple[str, str]]:
        night_calls = self.night_calls_left is not None and self.night_calls_left < self.max_calls
        if self.calls + spent_calls >= (self.night_calls_left if night_calls else self.max_calls):
            self._mark("calls")
            if night_calls:
                return "calls", (f"tonight's model call budget for scheduled runs is spent ({self.night_calls_left} "
                                 f"of {self.max_calls} calls per night across all agents were left for this run; "
                                 "raise consolidate.max_calls to allow more)")
            return "calls", (f"model call budget spent ({self.max_calls} calls this run; raise "
                             "consolidate.max_calls to allow more)")
        night_cost = self.night_cost_left is not None and self.night_cost_left < self.max_cost_usd
        if self.cost + spent_usd + estimate_usd > (self.night_cost_left if night_cost else self.max_cost_usd):
            self._mark("cost")
            if night_cost:
                return "cost", (f"tonight's dollar cap for scheduled runs reached (${self.cost + spent_usd:.4f} spent "
                                f"of the ${self.night_cost_left:.4f} left of ${self.max_cost_usd:.2f} per night across "
                                f"all agents, the next call may cost up to ${estimate_usd:.4f}; raise "
                                "consolidate.max_cost_usd to allow more)")
            return "cost", (f"dollar cap reached (${self.cost + spent_usd:.4f} spent of ${self.max_cost_usd:.2f}, "
                            f"the next call may cost up to ${estimate_usd:.4f}; raise consolidate.max_cost_usd "
                            "to allow more)")
        return None

    def charge(self, result) -> None:
        self.calls += result.calls
        self.input_tokens += result.input_tokens
        self.output_tokens += result.output_tokens
        self.cache_read_tokens += result.cache_read_tokens
        self.cache_write_tokens += result.cache_write_tokens
        self.cost += result.cost_usd

    def _mark(self, what: str) -> None:
        if what not in self.exhausted:
            self.exhausted.append(what)

    def totals(self) -> dict[str, Any]:
        return {
            "passages": self.passages, "calls": self.calls,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens,
                       "cache_read": self.cache_read_tokens, "cache_write": self.cache_write_tokens},
            "cost_usd": round(self.cost, 6), "budget_exhausted": list(self.exhausted),
        }
