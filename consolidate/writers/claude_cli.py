"""Card writer through the local `claude` CLI in headless mode (the user's own Claude login).

The child runs as::

    claude -p --output-format json --model haiku --json-schema '<schema>'
           --settings '{"disableAllHooks":true}' --no-session-persistence --tools "" --max-turns 1

with the prompt on stdin (first line `[reverie-consolidation]`) and `REVERIE_CHILD=1` in its
environment (and no ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN unless settings
`claude_cli.pass_api_key` is true: with them the child would bill the API, not the login), so that (1) no hook runs in the child (ours print nothing under the guard anyway),
(2) no transcript of it is written, and (3) if one were written, our indexer skips sessions carrying
the guard and consolidation skips the marker. Output is the CLI's JSON result: `structured_output`
(or `result` holding JSON) validated into `CardsResponse`; error subtypes and non-zero exits are
reported: rate limits, overload and timeouts as transient (retried, then left for the next run); a
refused login as `auth`; account faults (credit balance too low, billing, the plan's usage limit
reached, an unknown model) as `account`, never retried, with the CLI's reason and the fix. The
pipeline stops the run on `auth` and `account` and gives no passage up for them.
Budgets: every attempt, retries included, is checked against the run's call budget and dollar cap
first (`Budget.check_attempt`); a refused attempt ends the request as kind `budget`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
from typing import Any, Iterator

from pydantic import ValidationError

from ..budget import BudgetSpent, RetryPolicy, Transient, cost_usd, estimate_tokens, with_retries
from ..errors import ReverieError
from ..paths import ENV_CHILD_GUARD
from .base import CardsResponse, WriteError, WriteRequest, WriteResult, clip_reason, response_schema, sequential
from .prompts import cli_prompt

log = logging.getLogger(__name__)

CHILD_SETTINGS = '{"disableAllHooks":true}'
# Anthropic credentials the child must not inherit: with one of them set, `claude` bills the API
# instead of the user's Claude login (settings claude_cli.pass_api_key opts in).
API_CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
_AUTH = re.compile(r"invalid api key|please run /login|not logged in|authentication[_ ]error|\b401\b|\b403\b", re.I)
_TRANSIENT = re.compile(r"overloaded|rate.?limit|429|529|\b5\d\d\b|timed? ?out|temporarily|ECONNRESET|"
                        r"network|connection", re.I)
# Faults of the account or the configuration: every call fails the same way until the user acts.
_BILLING = re.compile(r"credit balance|billing|purchase credits|payment required|\b402\b", re.I)
_USAGE_LIMIT = re.compile(r"usage limit|(?:5-hour|weekly|session|opus|sonnet) limit|hit your limit|"
                          r"out of (?:extra )?usage|spend(?:ing)? limit", re.I)
_MODEL = re.compile(r"not_found_error|(?:invalid|unknown) model|model\b.{0,60}\bnot (?:found|available|supported)|"
                    r"\b404\b", re.I)


def _tail(text: str, n: int) -> str:
    """The last `n` characters of `text`, starting at a word boundary (no half word, so no half secret)."""
    if len(text) <= n:
        return text
    tail = text[-n:]
    cut = min((i for i in (tail.find(" "), tail.find("\n"), tail.find("\t")) if i >= 0), default=-1)
    return tail[cut + 1:] if cut >= 0 else ""


def account_error(text: str, model: str) -> "_CliError | None":
    """An `account` fault named by the CLI's error text, with the fix; None if it names none. The
    CLI's reason is kept, clipped between words (`clip_reason`); the pipeline redacts it."""
    reason = clip_reason(text)
    if _BILLING.search(text):
        return _CliError("account", f"claude: the account cannot be billed ({reason}). Check the credit balance and "
                                    "billing of the account `claude` uses (claude.ai settings, or the Anthropic "
                                    "Console when claude_cli.pass_api_key is on), then run again; the passages wait "
                                    "for the next run.")
    if _USAGE_LIMIT.search(text):
        return _CliError("account", f"claude: the plan's usage limit is reached ({reason}). The passages wait for "
                                    "the next run after the limit resets, or use --writer offline or anthropic now.")
    if _MODEL.search(text):
        return _CliError("account", f"claude: model {model!r} is not available ({reason}). Check the model name "
                                    "(`reverie settings set claude_cli.model haiku`); the passages wait for the "
                                    "next run.")
    return None


class ClaudeCliWriter:
    name = "claude-cli"
    model_backed = True

    def __init__(self, *, command: str = "claude", model: str = "haiku", timeout_s: float = 120.0,
                 retry: RetryPolicy | None = None, pass_api_key: bool = False) -> None:
        self.command = command
        self.model = model
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.pass_api_key = pass_api_key
        self.last_cost_usd = 0.0   # what the child reported for its last call

    @classmethod
    def from_settings(cls, settings: dict[str, Any], **overrides: Any) -> "ClaudeCliWriter":
        c = settings.get("claude_cli") or {}
        writer = cls(command=c.get("command") or "claude", model=c.get("model") or "haiku",
                     timeout_s=float(c.get("timeout_s", 120)), pass_api_key=bool(c.get("pass_api_key", False)),
                     **overrides)
        if shutil.which(writer.command) is None:
            raise ReverieError(
                f"`{writer.command}` is not on PATH: install Claude Code (npm i -g @anthropic-ai/claude-code) "
                "or set claude_cli.command in settings, or use --writer offline.")
        return writer

    def argv(self) -> list[str]:
        return [
            self.command, "-p", "--output-format", "json", "--model", self.model,
            "--json-schema", json.dumps(response_schema(), separators=(",", ":")),
            "--settings", CHILD_SETTINGS, "--no-session-persistence", "--tools", "", "--max-turns", "1",
        ]

    def env(self) -> dict[str, str]:
        """The child's environment: ours with the recursion guard, minus the Anthropic API
        credentials unless `pass_api_key` (so the child uses the user's Claude login)."""
        env = dict(os.environ)
        if not self.pass_api_key:
            for name in API_CREDENTIALS:
                env.pop(name, None)
        env[ENV_CHILD_GUARD] = "1"
        return env

    def estimate_cost(self, request: WriteRequest) -> float:
        """Expected cost of one call, for the dollar cap: the larger of the cost the child reported
        for its last call (`total_cost_usd`) and a token estimate at the model's price."""
        tokens = estimate_tokens(cli_prompt(request)) + 600
        return max(self.last_cost_usd, cost_usd(self.model, input_tokens=tokens, output_tokens=600))

    def write_many(self, requests: list[WriteRequest], budget) -> Iterator[WriteResult]:
        return sequential(self, requests, budget)

    def write_one(self, request: WriteRequest, budget=None) -> WriteResult:
        """One child call, retried on transient faults. With a `budget`, no attempt is started that
        would pass its call budget or dollar cap (counting this request's earlier attempts): the
        request then ends as kind `budget`."""
        result = WriteResult(request.id)
        prompt = cli_prompt(request)

        def check(_: int) -> None:
            if budget is not None:
                budget.check_attempt(spent_calls=result.calls, spent_usd=result.cost_usd,
                                     estimate_usd=self.estimate_cost(request))

        def attempt(_: int) -> dict:
            result.calls += 1
            try:
                proc = subprocess.run(self.argv(), input=prompt, capture_output=True, text=True,
                                      timeout=self.timeout_s, env=self.env())
            except subprocess.TimeoutExpired:
                raise Transient(f"claude timed out after {self.timeout_s:g}s") from None
            except OSError as exc:
                raise ReverieError(f"cannot run `{self.command}`: {exc.strerror}") from None
            out = proc.stdout.strip()
            data = None
            if out:
                try:
                    data = json.loads(out.splitlines()[-1] if not out.startswith("{") else out)
                except ValueError:
                    data = None
            if proc.returncode != 0 and not isinstance(data, dict):
                detail = _tail(proc.stderr or "", 300)
                if _AUTH.search(detail):
                    raise _CliError("auth", f"claude exited {proc.returncode}: not logged in or credentials refused "
                                "(run `claude` once to log in)")
                account = account_error(detail, self.model)
                if account is not None:
                    raise account
                if _TRANSIENT.search(detail):
                    raise Transient(f"claude exited {proc.returncode} (transient)")
                raise _CliError("failed", f"claude exited {proc.returncode}")
            if not isinstance(data, dict):
                raise _CliError("malformed", "claude printed no JSON result")
            if data.get("is_error") and _AUTH.search(str(data.get("result", ""))):
                raise _CliError("auth", "claude: not logged in or credentials refused (run `claude` once to log in)")
            account = account_error(str(data.get("result", "")), self.model) if data.get("is_error") else None
            if account is not None:
                raise account
            if data.get("is_error") and _TRANSIENT.search(str(data.get("result", ""))):
                raise Transient(f"claude error: {data.get('subtype', 'error')}")
            return data

        try:
            data = with_retries(attempt, self.retry, before_attempt=check)
        except BudgetSpent as exc:
            result.error = WriteError("budget", str(exc), retryable=True)
            return result
        except Transient as exc:
            result.error = WriteError("transient", f"{exc} after {self.retry.attempts} attempts", retryable=True)
            return result
        except _CliError as exc:
            result.error = WriteError(exc.kind, str(exc))
            return result
        except ReverieError as exc:
            result.error = WriteError("failed", str(exc))
            return result

        usage = data.get("usage") or {}
        result.input_tokens = int(usage.get("input_tokens", 0) or 0)
        result.output_tokens = int(usage.get("output_tokens", 0) or 0)
        result.cache_read_tokens = int(usage.get("cache_read_input_tokens", 0) or 0)
        result.cache_write_tokens = int(usage.get("cache_creation_input_tokens", 0) or 0)
        result.cost_usd = float(data.get("total_cost_usd", 0.0) or 0.0)
        self.last_cost_usd = result.cost_usd
        subtype = data.get("subtype", "")
        if data.get("is_error") or subtype != "success":
            kind = "schema" if subtype == "error_max_structured_output_retries" else "failed"
            result.error = WriteError(kind, f"claude result {subtype or 'error'}")
            return result
        payload = data.get("structured_output")
        if payload is None:
            text = data.get("result") or ""
            text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
            try:
                payload = json.loads(text)
            except ValueError:
                result.error = WriteError("malformed", "claude result is not JSON")
                return result
        try:
            result.cards = CardsResponse.model_validate(payload).cards
        except ValidationError as exc:
            fields = sorted({".".join(str(p) for p in e["loc"]) + ":" + e["type"] for e in exc.errors()})[:5]
            result.error = WriteError("schema", "claude output misses the schema: " + ", ".join(fields))
        return result


class _CliError(Exception):
    """A call that will not succeed by retrying it now; `kind` is its WriteError kind
    (malformed | failed | auth | account)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
