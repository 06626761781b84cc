"""Card writer on the Anthropic API: Claude Haiku through the official `anthropic` SDK.

* Structured output: `output_config={"format": {"type": "json_schema", "schema": ...}}`; the text is
  parsed as JSON and validated into `CardsResponse` (pydantic). A refusal, a `max_tokens` stop, text
  that is not JSON and JSON that misses the schema are reported as errors (never raised).
* Prompt caching: the fixed instructions are a system block with `cache_control` (Haiku 4.5 only
  caches prefixes >= 4,096 tokens, so short instructions are simply not cached; usage says so).
* Retries: the SDK's own retries are off (`max_retries=0`); 408/409/429/5xx/529, connection errors
  and timeouts are retried by `consolidate.budget.with_retries` (backoff, `retry-after` honoured),
  then reported as transient (the pipeline leaves those passages for the next run).
* A `max_tokens` stop is re-sent once with twice the token limit.
* Budgets: every attempt (first try, retry, re-send) is checked against the run's call budget and
  dollar cap first, counting what this request already made and spent (`Budget.check_attempt`);
  a refused attempt ends the request as kind `budget`.
* Message Batches (`anthropic.use_batches`): every request of the run goes into one batch (half
  price), polled until it ends or `anthropic.batch_wait_s` passes; results are matched back by
  `custom_id`. Once a batch exists, every way of giving it up (wait timeout, polling or results
  failing after retries, a refused key, an interruption) cancels it (best effort) and charges each
  submitted request as a call (its cost is unknown: the API bills what it processed before the
  cancel), so the run reports it and the next run resubmits those passages knowingly.
* 401/403 are reported as kind `auth` (never retried); account and configuration faults (402, a 400
  saying the credit balance is too low or a usage limit is reached, 404 for an unknown model) as
  kind `account` with the API's reason and the fix; the pipeline stops the run on both.
* The API key comes from `ANTHROPIC_API_KEY`, else settings `anthropic.api_key`; it is never logged.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from typing import Any, Callable, Iterator, Optional

from pydantic import ValidationError

from ..budget import Budget, BudgetSpent, RetryPolicy, Transient, cost_usd, estimate_tokens, with_retries
from ..errors import NoApiKey
from .base import CardsResponse, WriteError, WriteRequest, WriteResult, clip_reason, response_schema, sequential
from .prompts import INSTRUCTIONS, api_messages, user_prompt

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-haiku-4-5"
RETRYABLE_STATUS = {408, 409, 429}
AUTH_STATUS = {401, 403}
BILLING_STATUS = {402}
NOT_FOUND_STATUS = {404}
# A 400 whose reason says the account (not this request) cannot be served.
_ACCOUNT_TEXT = re.compile(r"credit balance|billing|purchase credits|usage limits?|spend(?:ing)? limit|quota", re.I)
_BATCH_ITEM_TRANSIENT = ("overloaded_error", "rate_limit_error", "api_error", "timeout_error")


def _reason(body: Any) -> tuple[str, str]:
    """(error type, message) of an API error body, the message on one line and clipped. The message
    is the provider's text: the pipeline redacts it before it is stored or shown."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return "", ""
    return str(err.get("type") or ""), clip_reason(str(err.get("message") or ""))


def account_error(status: int | None, etype: str, message: str, model: str) -> Optional[WriteError]:
    """A WriteError of kind `account` when the fault is the account's or the configuration's (every
    request would fail the same way until the user acts), else None. The message names the fix."""
    where = f"HTTP {status}" if status else "batch item"
    reason = f": {message}" if message else ""
    if status in BILLING_STATUS or etype == "billing_error" or (
            (status == 400 or etype == "invalid_request_error") and _ACCOUNT_TEXT.search(message)):
        return WriteError("account", f"the Anthropic account cannot be billed ({where} {etype or 'error'}{reason}). "
                                     "Check the credit balance and usage limits under Plans & Billing in the "
                                     "Anthropic Console, then run again; the passages not consolidated yet wait for "
                                     "the next run.")
    if status in NOT_FOUND_STATUS or etype == "not_found_error":
        return WriteError("account", f"model {model!r} was not found ({where} {etype or 'error'}{reason}). Check the "
                                     "model name (`reverie settings set anthropic.model claude-haiku-4-5`) and "
                                     "ANTHROPIC_BASE_URL if it is set; the passages wait for the next run.")
    return None


def _status_error(exc: Any, model: str = DEFAULT_MODEL) -> WriteError:
    """A non-retryable HTTP error as a WriteError: 401/403 are kind `auth` (the key is refused, so
    the pipeline stops the run at once instead of spending its call budget on them); account and
    configuration faults are kind `account` (`account_error`); anything else is kind `failed`
    (a fault of this request, counted against its stretch)."""
    if exc.status_code in AUTH_STATUS:
        return WriteError("auth", f"HTTP {exc.status_code} {type(exc).__name__}")
    etype, message = _reason(getattr(exc, "body", None))
    account = account_error(exc.status_code, etype, message, model)
    if account is not None:
        return account
    return WriteError("failed", f"HTTP {exc.status_code} {type(exc).__name__}")


def api_key_from(settings: dict[str, Any]) -> str:
    key = os.environ.get("ANTHROPIC_API_KEY") or (settings.get("anthropic") or {}).get("api_key")
    if not key:
        raise NoApiKey()
    return key


def _retry_after(exc: Any) -> Optional[float]:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


class AnthropicWriter:
    name = "anthropic"
    model_backed = True

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        use_batches: bool = False,
        base_url: str | None = None,
        http_client: Any = None,
        retry: RetryPolicy | None = None,
        max_tokens: int = 2048,
        timeout_s: float = 60.0,
        batch_poll_s: float = 30.0,
        batch_wait_s: float = 6 * 3600.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import anthropic  # heavy: imported only when this writer is used

        self._anthropic = anthropic
        kwargs: dict[str, Any] = {"api_key": api_key, "max_retries": 0, "timeout": timeout_s}
        if base_url:
            kwargs["base_url"] = base_url
        if http_client is not None:
            kwargs["http_client"] = http_client
        self.client = anthropic.Anthropic(**kwargs)
        self.model = model
        self.use_batches = use_batches
        self.retry = retry or RetryPolicy()
        self.max_tokens = max_tokens
        self.batch_poll_s = batch_poll_s
        self.batch_wait_s = batch_wait_s
        self.sleep = sleep

    @classmethod
    def from_settings(cls, settings: dict[str, Any], *, batches: bool | None = None, **overrides: Any) -> "AnthropicWriter":
        a = settings.get("anthropic") or {}
        return cls(api_key=api_key_from(settings), model=a.get("model") or DEFAULT_MODEL,
                   use_batches=bool(a.get("use_batches")) if batches is None else batches,
                   max_tokens=int(a.get("max_tokens", 2048)), timeout_s=float(a.get("timeout_s", 60)),
                   batch_poll_s=float(a.get("batch_poll_s", 30)), batch_wait_s=float(a.get("batch_wait_s", 6 * 3600)),
                   **overrides)

    # ------------------------------------------------------------------------------------------
    def params(self, request: WriteRequest, *, max_tokens: int | None = None) -> dict[str, Any]:
        system, messages = api_messages(request)
        return {
            "model": self.model,
            "max_tokens": max_tokens or self.max_tokens,
            "system": system,
            "messages": messages,
            "output_config": {"format": {"type": "json_schema", "schema": response_schema()}},
        }

    def estimate_cost(self, request: WriteRequest, *, max_tokens: int | None = None) -> float:
        """Worst-case cost of one call: estimated input tokens plus `max_tokens` (default: the
        writer's limit) of output, at the model's price (half in batch mode)."""
        tokens = estimate_tokens(INSTRUCTIONS) + estimate_tokens(user_prompt(request)) + 600
        return cost_usd(self.model, input_tokens=tokens, output_tokens=max_tokens or self.max_tokens,
                        batch=self.use_batches)

    def _usage(self, result: WriteResult, message: Any, *, batch: bool) -> None:
        usage = getattr(message, "usage", None)
        if usage is None:
            return
        inp = int(getattr(usage, "input_tokens", 0) or 0)
        out = int(getattr(usage, "output_tokens", 0) or 0)
        cw = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
        cr = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
        result.input_tokens += inp
        result.output_tokens += out
        result.cache_write_tokens += cw
        result.cache_read_tokens += cr
        result.cost_usd += cost_usd(self.model, input_tokens=inp, output_tokens=out, cache_write=cw,
                                    cache_read=cr, batch=batch)

    def parse(self, result: WriteResult, message: Any, *, max_tokens: int | None = None) -> WriteResult:
        """Fill `result` from one Messages API response (cards or an error)."""
        stop = getattr(message, "stop_reason", None)
        if stop == "refusal":
            result.error = WriteError("refusal", "the model refused this request")
            return result
        if stop == "max_tokens":
            result.error = WriteError("max_tokens", f"output stopped at max_tokens ({max_tokens or self.max_tokens})")
            return result
        text = "".join(getattr(b, "text", "") for b in (message.content or []) if getattr(b, "type", "") == "text")
        try:
            data = json.loads(text)
        except ValueError as exc:
            result.error = WriteError("malformed", f"response is not JSON ({exc.__class__.__name__} at char {getattr(exc, 'pos', '?')})")
            return result
        try:
            parsed = CardsResponse.model_validate(data)
        except ValidationError as exc:
            if isinstance(data, dict) and isinstance(data.get("cards"), list):
                # One card over a limit (a 130-character path, a 500-character statement) costs that
                # card, never the response: each card is repaired or rejected with a counted reason.
                from .repair import repair_cards

                result.cards, result.rejected = repair_cards(data["cards"])
                result.error = None
                return result
            fields = sorted({".".join(str(p) for p in e["loc"]) + ":" + e["type"] for e in exc.errors()})[:5]
            result.error = WriteError("schema", "response misses the schema: " + ", ".join(fields))
            return result
        result.cards = parsed.cards
        result.error = None
        return result

    # ------------------------------------------------------------------------------------------
    def _create(self, params: dict[str, Any], result: WriteResult, budget=None,
                request: WriteRequest | None = None) -> Any:
        """One Messages API request with retries. Before every attempt the run's budget is checked
        with what `result` already made and cost (raises `BudgetSpent`, which is not retried)."""
        anthropic = self._anthropic

        def check(_: int) -> None:
            if budget is not None:
                estimate = self.estimate_cost(request, max_tokens=params["max_tokens"]) if request is not None else 0.0
                budget.check_attempt(spent_calls=result.calls, spent_usd=result.cost_usd, estimate_usd=estimate)

        def attempt(_: int) -> Any:
            result.calls += 1
            try:
                return self.client.messages.create(**params)
            except anthropic.APIStatusError as exc:
                if exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500:
                    raise Transient(f"HTTP {exc.status_code}", _retry_after(exc)) from None
                raise
            except anthropic.APIConnectionError as exc:  # includes APITimeoutError
                raise Transient(type(exc).__name__) from None

        return with_retries(attempt, self.retry, before_attempt=check)

    def write_one(self, request: WriteRequest, budget=None) -> WriteResult:
        """One request: a call (retried on transient faults), re-sent once at twice the token limit
        after a `max_tokens` stop. With a `budget`, no attempt is sent that would pass its call
        budget or dollar cap (counting this request's earlier attempts): the request then ends
        as kind `budget` with what it made and spent so far."""
        anthropic = self._anthropic
        result = WriteResult(request.id)
        tokens = self.max_tokens
        for resend in range(2):
            try:
                message = self._create(self.params(request, max_tokens=tokens), result, budget, request)
            except BudgetSpent as exc:
                result.cards = []
                result.error = self._refused(request, result, budget, exc, resend_tokens=tokens if resend else None)
                return result
            except Transient as exc:
                result.error = WriteError("transient", f"{exc} after {self.retry.attempts} attempts", retryable=True)
                return result
            except anthropic.APIStatusError as exc:
                result.error = _status_error(exc, self.model)
                return result
            self._usage(result, message, batch=False)
            self.parse(result, message, max_tokens=tokens)
            if result.error is None or result.error.kind != "max_tokens":
                return result
            tokens *= 2
        return result

    def _refused(self, request: WriteRequest, result: WriteResult, budget, exc: BudgetSpent, *,
                 resend_tokens: int | None) -> WriteError:
        """The error of a request whose next attempt the budget refused. Kind `budget` (a run
        fault: the passages wait for the next run), except for a `max_tokens` re-send that no run
        could afford (a fresh run's caps refuse it too): that stays the stretch's `max_tokens`
        fault, counted against it, so one oversized stretch cannot block the agent every night."""
        if resend_tokens is None:
            return WriteError("budget", str(exc), retryable=True)
        first = resend_tokens // 2
        fresh = Budget(max_calls=budget.max_calls, max_cost_usd=budget.max_cost_usd)
        never = fresh.refuse_attempt(spent_calls=result.calls, spent_usd=result.cost_usd,
                                     estimate_usd=self.estimate_cost(request, max_tokens=resend_tokens))
        if never is None:
            return WriteError("budget", f"{exc}; not re-sent with max_tokens {resend_tokens} after the answer "
                                        f"stopped at max_tokens {first}", retryable=True)
        return WriteError("max_tokens", f"output stopped at max_tokens ({first}) and the re-send with max_tokens "
                                        f"{resend_tokens} exceeds this budget in any run: {never}")

    def write_many(self, requests: list[WriteRequest], budget) -> Iterator[WriteResult]:
        if not self.use_batches:
            return sequential(self, requests, budget)
        return self._batch(requests, budget)

    # ------------------------------------------------------------------------------------------
    def _batch(self, requests: list[WriteRequest], budget) -> Iterator[WriteResult]:
        """Every request the budget allows in one batch (see the module docstring). Invariant: once
        the batch exists, a run that does not read its results cancels it (best effort) and
        charges one call per submitted request; a refused request is never submitted."""
        anthropic = self._anthropic
        allowed: list[WriteRequest] = []
        refused: dict[str, WriteError] = {}
        planned_calls, planned_cost = 0, 0.0
        for req in requests:
            reason = None
            estimate = self.estimate_cost(req)
            if budget is not None and not refused:
                reason = budget.refuse_attempt(spent_calls=planned_calls, spent_usd=planned_cost, estimate_usd=estimate)
            if reason or refused:
                why = reason or "not attempted: " + next(iter(refused.values())).message
                refused[req.id] = WriteError("budget", why, retryable=True)
                continue
            allowed.append(req)
            planned_calls += 1
            planned_cost += estimate
        results: dict[str, WriteResult] = {r.id: WriteResult(r.id, calls=1) for r in allowed}
        ids = {f"r{i}": req.id for i, req in enumerate(allowed)}
        failure: Optional[WriteError] = None
        batch_id: Optional[str] = None
        ended = collected = False
        if allowed:
            try:
                batch = with_retries(lambda _: self._guard(lambda: self.client.messages.batches.create(
                    requests=[{"custom_id": cid, "params": self.params(req)} for cid, req in zip(ids, allowed)])),
                    self.retry)
                batch_id = batch.id
                waited = 0.0
                while batch.processing_status != "ended":
                    if waited >= self.batch_wait_s:
                        raise Transient(f"batch not finished after {int(waited)}s")
                    self.sleep(self.batch_poll_s)
                    waited += self.batch_poll_s
                    batch = with_retries(lambda _: self._guard(lambda: self.client.messages.batches.retrieve(batch_id)),
                                         self.retry)
                ended = True
                items = with_retries(
                    lambda _: self._guard(lambda: list(self.client.messages.batches.results(batch_id))), self.retry)
                collected = True
                seen = set()
                for item in items:
                    rid = ids.get(item.custom_id)
                    if rid is None:
                        continue
                    seen.add(rid)
                    res = results[rid]
                    kind = item.result.type
                    if kind == "succeeded":
                        self._usage(res, item.result.message, batch=True)
                        self.parse(res, item.result.message)
                    elif kind == "errored":
                        etype, message = _reason(getattr(item.result.error, "model_dump", lambda: {})())
                        etype = etype or "error"
                        transient = etype in _BATCH_ITEM_TRANSIENT
                        res.error = account_error(None, etype, message, self.model) or WriteError(
                            "transient" if transient else "failed", f"batch item {etype}", retryable=transient)
                    else:  # canceled | expired
                        res.error = WriteError("transient", f"batch item {kind}", retryable=True)
                for rid, res in results.items():
                    if rid not in seen and res.error is None and not res.cards:
                        res.error = WriteError("transient", "batch item missing from results", retryable=True)
            except Transient as exc:
                failure = WriteError("transient", str(exc), retryable=True)
            except anthropic.APIStatusError as exc:
                failure = _status_error(exc, self.model)
            except BaseException:
                if batch_id is not None and not ended:
                    self._cancel(batch_id)
                raise
            if failure is not None and batch_id is not None and not collected:
                failure = self._given_up(batch_id, failure, ended=ended)
        for req in requests:
            if req.id in refused:
                yield WriteResult(req.id, error=refused[req.id])
                continue
            res = results[req.id]
            if failure is not None:
                # Submitted requests are calls (the API may bill them); a batch never created is none.
                res = WriteResult(req.id, error=failure, calls=1 if batch_id is not None else 0)
            if budget is not None:
                budget.charge(res)
            yield res

    def _cancel(self, batch_id: str) -> bool:
        """Ask the API to cancel a batch (one try, never raises); True when it accepted."""
        try:
            self.client.messages.batches.cancel(batch_id)
            return True
        except Exception as exc:  # noqa: BLE001 - best effort: the caller reports the outcome
            log.warning("cancelling batch %s failed (%s)", batch_id, type(exc).__name__)
            return False

    def _given_up(self, batch_id: str, failure: WriteError, *, ended: bool) -> WriteError:
        """The error of a batch given up after it was created: cancelled unless it had ended (then
        its requests were processed and are billed, but their results could not be read)."""
        if ended:
            note = f"batch {batch_id} ended but its results could not be read (its requests are billed)"
        elif self._cancel(batch_id):
            note = f"batch {batch_id} cancelled (requests it already processed are billed)"
        else:
            note = f"batch {batch_id} could not be cancelled and may still run and be billed"
        return WriteError(failure.kind, f"{failure.message}; {note}", retryable=failure.retryable)

    def _guard(self, fn: Callable[[], Any]) -> Any:
        anthropic = self._anthropic
        try:
            return fn()
        except anthropic.APIStatusError as exc:
            if exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500:
                raise Transient(f"HTTP {exc.status_code}", _retry_after(exc)) from None
            raise
        except anthropic.APIConnectionError as exc:
            raise Transient(type(exc).__name__) from None
