"""Card writer on the Anthropic API: Claude Haiku through the official `anthropic` SDK.

* Structured output: `output_config={"format": {"type": "json_schema", "schema": ...}}`; the text is
  parsed as JSON and validated into `CardsResponse` (pydantic). A refusal, a `max_tokens` stop, text
  that is not JSON and JSON that misses the schema are reported as errors (never raised).
* Prompt caching: the fixed instructions are a system block with `cache_control` (Haiku 4.5 only
  caches prefixes >= 4,096 tokens, so short instructions are simply not cached; usage says so).
* Retries: the SDK's own retries are off (`max_retries=0`); 408/409/429/5xx/529, connection errors
  and timeouts are retried by `consolidate.budget.with_retries` (backoff, `retry-after` honoured),
  then reported as transient (the pipeline leaves those passages for the next run).
* A `max_tokens` stop is retried once with twice the token limit.
* Message Batches (`anthropic.use_batches`): every request of the run goes into one batch (half
  price), polled until it ends or `anthropic.batch_wait_s` passes (then cancelled and left for the
  next run); results are matched back by `custom_id`.
* 401/403 are reported as kind `auth` (never retried); the pipeline stops the run on them.
* The API key comes from `ANTHROPIC_API_KEY`, else settings `anthropic.api_key`; it is never logged.
"""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any, Callable, Iterator, Optional

from pydantic import ValidationError

from ..budget import RetryPolicy, Transient, cost_usd, estimate_tokens, with_retries
from ..errors import NoApiKey
from .base import CardsResponse, WriteError, WriteRequest, WriteResult, response_schema, sequential
from .prompts import INSTRUCTIONS, api_messages, user_prompt

log = logging.getLogger(__name__)

DEFAULT_MODEL = "claude-haiku-4-5"
RETRYABLE_STATUS = {408, 409, 429}
AUTH_STATUS = {401, 403}


def _status_error(exc: Any) -> WriteError:
    """A non-retryable HTTP error as a WriteError: 401/403 are kind `auth` (the key is refused, so
    the pipeline stops the run at once instead of spending its call budget on them)."""
    kind = "auth" if exc.status_code in AUTH_STATUS else "failed"
    return WriteError(kind, f"HTTP {exc.status_code} {type(exc).__name__}")


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

    def estimate_cost(self, request: WriteRequest) -> float:
        tokens = estimate_tokens(INSTRUCTIONS) + estimate_tokens(user_prompt(request)) + 600
        return cost_usd(self.model, input_tokens=tokens, output_tokens=self.max_tokens, batch=self.use_batches)

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

    def parse(self, result: WriteResult, message: Any) -> WriteResult:
        """Fill `result` from one Messages API response (cards or an error)."""
        stop = getattr(message, "stop_reason", None)
        if stop == "refusal":
            result.error = WriteError("refusal", "the model refused this request")
            return result
        if stop == "max_tokens":
            result.error = WriteError("max_tokens", f"output stopped at max_tokens ({self.max_tokens})")
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
            fields = sorted({".".join(str(p) for p in e["loc"]) + ":" + e["type"] for e in exc.errors()})[:5]
            result.error = WriteError("schema", "response misses the schema: " + ", ".join(fields))
            return result
        result.cards = parsed.cards
        result.error = None
        return result

    # ------------------------------------------------------------------------------------------
    def _create(self, params: dict[str, Any], result: WriteResult) -> Any:
        anthropic = self._anthropic

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

        return with_retries(attempt, self.retry)

    def write_one(self, request: WriteRequest, budget=None) -> WriteResult:
        anthropic = self._anthropic
        result = WriteResult(request.id)
        tokens = self.max_tokens
        for _ in range(2):
            try:
                message = self._create(self.params(request, max_tokens=tokens), result)
            except Transient as exc:
                result.error = WriteError("transient", f"{exc} after {self.retry.attempts} attempts", retryable=True)
                return result
            except anthropic.APIStatusError as exc:
                result.error = _status_error(exc)
                return result
            self._usage(result, message, batch=False)
            self.parse(result, message)
            if result.error is None or result.error.kind != "max_tokens" or tokens >= 4 * self.max_tokens:
                return result
            tokens *= 2
        return result

    def write_many(self, requests: list[WriteRequest], budget) -> Iterator[WriteResult]:
        if not self.use_batches:
            return sequential(self, requests, budget)
        return self._batch(requests, budget)

    # ------------------------------------------------------------------------------------------
    def _batch(self, requests: list[WriteRequest], budget) -> Iterator[WriteResult]:
        anthropic = self._anthropic
        allowed: list[WriteRequest] = []
        refused: dict[str, WriteError] = {}
        planned_calls, planned_cost = 0, 0.0
        for req in requests:
            reason = None
            if budget is not None:
                if budget.calls + planned_calls >= budget.max_calls:
                    reason = f"model call budget spent ({budget.max_calls} calls)"
                    budget._mark("calls")
                elif budget.cost + planned_cost + self.estimate_cost(req) > budget.max_cost_usd:
                    reason = f"dollar cap reached (${budget.max_cost_usd:.2f})"
                    budget._mark("cost")
            if reason or refused:
                refused[req.id] = WriteError("budget", reason or "not attempted", retryable=True)
                continue
            allowed.append(req)
            planned_calls += 1
            planned_cost += self.estimate_cost(req)
        results: dict[str, WriteResult] = {r.id: WriteResult(r.id, calls=1) for r in allowed}
        ids = {f"r{i}": req.id for i, req in enumerate(allowed)}
        failure: Optional[WriteError] = None
        if allowed:
            try:
                batch = with_retries(lambda _: self._guard(lambda: self.client.messages.batches.create(
                    requests=[{"custom_id": cid, "params": self.params(req)} for cid, req in zip(ids, allowed)])),
                    self.retry)
                waited = 0.0
                while batch.processing_status != "ended":
                    if waited >= self.batch_wait_s:
                        try:
                            self.client.messages.batches.cancel(batch.id)
                        except anthropic.APIError:
                            pass
                        raise Transient(f"batch not finished after {int(waited)}s; cancelled")
                    self.sleep(self.batch_poll_s)
                    waited += self.batch_poll_s
                    batch = with_retries(lambda _: self._guard(lambda: self.client.messages.batches.retrieve(batch.id)), self.retry)
                seen = set()
                for item in with_retries(lambda _: self._guard(lambda: list(self.client.messages.batches.results(batch.id))), self.retry):
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
                        etype = getattr(getattr(item.result.error, "error", None), "type", "") or "error"
                        transient = etype in ("overloaded_error", "rate_limit_error", "api_error", "timeout_error")
                        res.error = WriteError("transient" if transient else "failed", f"batch item {etype}", retryable=transient)
                    else:  # canceled | expired
                        res.error = WriteError("transient", f"batch item {kind}", retryable=True)
                for rid, res in results.items():
                    if rid not in seen and res.error is None and not res.cards:
                        res.error = WriteError("transient", "batch item missing from results", retryable=True)
            except Transient as exc:
                failure = WriteError("transient", str(exc), retryable=True)
            except anthropic.APIStatusError as exc:
                failure = _status_error(exc)
        for req in requests:
            if req.id in refused:
                yield WriteResult(req.id, error=refused[req.id])
                continue
            res = results[req.id]
            if failure is not None:
                res = WriteResult(req.id, error=failure, calls=0)
            if budget is not None:
                budget.charge(res)
            yield res

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
