"""Card writer through the local `claude` CLI in headless mode (the user's own Claude login).

The child runs as (`ClaudeCliWriter.argv`)::

    claude -p --output-format json --model haiku --json-schema '<schema>'
           --system-prompt '<INSTRUCTIONS>' --settings '<CHILD_SETTINGS>'
           --no-session-persistence --tools "" --max-turns 2

in a working directory of reverie's own (`<home>/cache/claude-cli`, empty: never the user's
project tree), with the prompt on stdin (first line `[reverie-consolidation]`, then the passages)
and this environment (`ClaudeCliWriter.env`): `REVERIE_CHILD=1` (our hooks print nothing in it),
`CHILD_ENV` (no CLAUDE.md, no auto memory, no thinking, no title request or other non-essential
traffic, an output cap), and no ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN unless settings
`claude_cli.pass_api_key` is true. Measured with the real binary (2.1.197) against a local fake
Messages API: Claude Code's own system prompt (~25,500 characters), both CLAUDE.md files and a
32,000-token thinking budget are gone; what is sent is our system prompt, our prompt, the schema
as the StructuredOutput tool and ~300 characters of Claude Code's framing.

`--max-turns 2`, not 1: when the model answers without calling the StructuredOutput tool, Claude
Code needs a second turn to enforce the schema (with 1 the result is `error_max_turns`).

Credentials (`pass_api_key` false, the default): the child must use the user's Claude login, so
besides stripping the two variables, `--settings` overrides an `apiKeyHelper` and an `env` key of
the user's settings.json that would hand it an API key anyway. `auth_status` runs the CLI's own
check (`claude auth status --json`) with the same settings and environment, so it says which
credential a call would use (doctor, and the `auto` writer choice); it never returns the credential.

So (1) no hook runs in the child, (2) no transcript of it is written, and (3) if one were written,
our indexer skips sessions carrying the guard and consolidation skips the marker. Output is the
CLI's JSON result: `structured_output` (or `result` holding JSON) validated into `CardsResponse`;
error subtypes and non-zero exits are reported: rate limits, overload and timeouts as transient
(retried, then left for the next run); a refused or missing login as `auth`, whose message names
the command or setting that fixes it (`auth_fix`); account faults (credit balance too low, billing,
the plan's usage limit reached, an unknown model) as `account`, never retried, with the CLI's
reason and the fix. The pipeline stops the run on `auth` and `account` and gives no passage up.

Budgets: every attempt, retries included, is checked against the run's call budget and dollar cap
first (`Budget.check_attempt`) with `estimate_cost`: the characters really sent (system prompt,
prompt, schema, Claude Code's framing) as tokens, for every turn allowed, at the model's price,
plus the output cap; a refused attempt ends the request as kind `budget`. What is charged is what
the child reports (`usage`, `total_cost_usd`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
from typing import Any, Iterator, Mapping

from pydantic import ValidationError

from ..budget import CHARS_PER_TOKEN, BudgetSpent, RetryPolicy, Transient, cost_usd, with_retries
from ..errors import ReverieError
from ..paths import CACHE_DIR, ENV_CHILD_GUARD, home_dir
from .base import CardsResponse, WriteError, WriteRequest, WriteResult, clip_reason, response_schema, sequential
from .prompts import INSTRUCTIONS, cli_prompt

log = logging.getLogger(__name__)

#: Turns the child may take: the answer, and the one Claude Code needs to enforce the schema when
#: the model answered without the StructuredOutput tool.
MAX_TURNS = 2
#: The child's output cap per model call (CLAUDE_CODE_MAX_OUTPUT_TOKENS; Claude Code's own is
#: 32,000): at most 5 cards of <= 35 words fit many times over.
MAX_OUTPUT_TOKENS = 2048
#: Characters Claude Code adds around our text in every request (billing header, its one-line
#: agent preamble, the StructuredOutput tool's description, JSON envelope, metadata; 2.1.3xx also an
#: environment message): measured by tests/e2e as request body minus our text, 1,329 on 2.1.197 and
#: 2,123 on 2.1.332; the estimate takes the larger, with margin.
FRAMING_CHARS = 2200
#: What the child's environment switches off (Claude Code 2.1's documented switches): CLAUDE.md
#: files, auto memory, thinking (MAX_THINKING_TOKENS up to 2.1.2xx; 2.1.3xx ignores it and reads
#: CLAUDE_CODE_DISABLE_THINKING), deferred tool search (2.1.3xx sends a placeholder tool without it),
#: the session-title request and other non-essential traffic.
CHILD_ENV = {
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "MAX_THINKING_TOKENS": "0",
    "CLAUDE_CODE_DISABLE_THINKING": "1",
    "ENABLE_TOOL_SEARCH": "false",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(MAX_OUTPUT_TOKENS),
}
# Anthropic credentials the child must not inherit: with one of them set, `claude` bills the API
# instead of the user's Claude login (settings claude_cli.pass_api_key opts in).
API_CREDENTIALS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
#: The working directory's folder inside reverie's cache (`<home>/cache/claude-cli`).
WORKDIR_NAME = "claude-cli"
PASS_KEY_FIX = "reverie settings set claude_cli.pass_api_key true"
LOGIN_FIX = "claude auth login"
_AUTH = re.compile(r"invalid api key|please run /login|not logged in|authentication[_ ]error|\b401\b|\b403\b|"
                   r"oauth token|invalid x-api-key|credentials", re.I)
_TRANSIENT = re.compile(r"overloaded|rate.?limit|429|529|\b5\d\d\b|timed? ?out|temporarily|ECONNRESET|"
                        r"network|connection", re.I)
# Faults of the account or the configuration: every call fails the same way until the user acts.
_BILLING = re.compile(r"credit balance|billing|purchase credits|payment required|\b402\b", re.I)
_USAGE_LIMIT = re.compile(r"usage limit|(?:5-hour|weekly|session|opus|sonnet) limit|hit your limit|"
                          r"out of (?:extra )?usage|spend(?:ing)? limit", re.I)
_MODEL = re.compile(r"not_found_error|(?:invalid|unknown) model|model\b.{0,60}\bnot (?:found|available|supported)|"
                    r"\b404\b", re.I)


def child_settings(pass_api_key: bool) -> str:
    """The `--settings` JSON of every child call: no hooks, no thinking; without `pass_api_key` also
    no `apiKeyHelper` and no API key from the `env` of the user's settings.json (a helper or such a
    key would bill the API instead of the user's Claude login)."""
    data: dict[str, Any] = {"disableAllHooks": True, "alwaysThinkingEnabled": False}
    if not pass_api_key:
        data["apiKeyHelper"] = ""
        data["env"] = {name: "" for name in API_CREDENTIALS}
    return json.dumps(data, separators=(",", ":"))


def child_env(pass_api_key: bool, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: `base` (ours) with the recursion guard and `CHILD_ENV`, minus the
    Anthropic API credentials unless `pass_api_key`."""
    env = dict(os.environ if base is None else base)
    if not pass_api_key:
        for name in API_CREDENTIALS:
            env.pop(name, None)
    env.update(CHILD_ENV)
    env[ENV_CHILD_GUARD] = "1"
    return env


def workdir(home: str | os.PathLike | None = None) -> str:
    """The child's working directory, `<home>/cache/claude-cli` (created 0700, holds nothing): a
    folder of reverie's own, so no project's CLAUDE.md or .claude/settings.json is near it and
    nothing is ever created in the user's project tree."""
    path = os.path.join(home_dir(home), CACHE_DIR, WORKDIR_NAME)
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def auth_fix(pass_api_key: bool, env: Mapping[str, str] | None = None) -> str:
    """What fixes a `claude` child that could not authenticate, given the settings and the parent's
    environment `env`: a login, or the setting that lets the child bill the API key that is set."""
    env = os.environ if env is None else env
    key = next((name for name in API_CREDENTIALS if env.get(name)), None)
    if key and not pass_api_key:
        return (f"{key} is set, but reverie keeps it from the child because claude_cli.pass_api_key is false, so "
                f"`claude` needs your Claude login: run `{LOGIN_FIX}` (or /login inside `claude`); or let it bill "
                f"the key: `{PASS_KEY_FIX}`; or use --writer anthropic")
    if key:
        return (f"the child used {key} (claude_cli.pass_api_key is true) and it was refused: check the key, or run "
                f"`{LOGIN_FIX}` and `reverie settings set claude_cli.pass_api_key false` to use your Claude login")
    return (f"run `{LOGIN_FIX}` (or /login inside `claude`) to log in; or set ANTHROPIC_API_KEY and "
            f"`{PASS_KEY_FIX}` to bill an API key")


def auth_status(command: str = "claude", *, pass_api_key: bool = False, timeout_s: float = 30.0,
                env: Mapping[str, str] | None = None, home: str | os.PathLike | None = None,
                create_workdir: bool = True) -> dict[str, Any]:
    """The CLI's own credential check (`claude auth status --json`), run as a child call would run
    (same settings and environment, in `workdir(home)`; with `create_workdir` false, as doctor
    runs it, the folder is not created: the system temp dir stands in until it exists):
    {"logged_in": bool, "method": authMethod, "source": apiKeySource or None, "subscription":
    subscriptionType or None, "error": None or why the check failed}. Never includes a credential,
    e-mail or organisation."""
    out: dict[str, Any] = {"logged_in": False, "method": None, "source": None, "subscription": None, "error": None}
    path = (env or os.environ).get("PATH")
    if shutil.which(command, path=path) is None:
        out["error"] = f"`{command}` is not on PATH"
        return out
    if create_workdir:
        cwd = workdir(home)
    else:
        import tempfile

        cwd = os.path.join(home_dir(home), CACHE_DIR, WORKDIR_NAME)
        cwd = cwd if os.path.isdir(cwd) else tempfile.gettempdir()
    try:
        proc = subprocess.run([command, "--settings", child_settings(pass_api_key), "auth", "status", "--json"],
                              capture_output=True, text=True, timeout=timeout_s, cwd=cwd,
                              env=child_env(pass_api_key, env), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        out["error"] = f"`{command} auth status` took longer than {timeout_s:g}s"
        return out
    except OSError as exc:
        out["error"] = f"cannot run `{command}`: {exc.strerror}"
        return out
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("loggedIn"), bool):
        out["error"] = (f"`{command} auth status --json` gave no status (exit {proc.returncode}); "
                        "Claude Code 2.1 or later has it")
        return out
    out["logged_in"] = data["loggedIn"]
    for key, field in (("method", "authMethod"), ("source", "apiKeySource"), ("subscription", "subscriptionType")):
        value = data.get(field)
        out[key] = value if isinstance(value, str) and len(value) <= 40 else None
    return out


def describe_credential(status: Mapping[str, Any]) -> str:
    """One line naming the credential `auth_status` found (never the credential itself)."""
    if status.get("error"):
        return f"unknown ({status['error']})"
    if not status.get("logged_in"):
        return "none: not logged in"
    method = status.get("method") or "unknown"
    if method == "claude.ai":
        return "your Claude login (claude.ai" + (f", {status['subscription']} plan)" if status.get("subscription") else ")")
    source = f" from {status['source']}" if status.get("source") else ""
    return {"api_key": "an API key", "api_key_helper": "an apiKeyHelper", "oauth_token": "an OAuth token"}.get(
        method, method) + source


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
                 retry: RetryPolicy | None = None, pass_api_key: bool = False,
                 home: str | os.PathLike | None = None) -> None:
        self.command = command
        self.model = model
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.pass_api_key = pass_api_key
        self.home = home            # for the working directory; None: $REVERIE_HOME / the default
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
            "--system-prompt", INSTRUCTIONS,
            "--settings", child_settings(self.pass_api_key), "--no-session-persistence", "--tools", "",
            "--max-turns", str(MAX_TURNS),
        ]

    def env(self) -> dict[str, str]:
        """The child's environment (`child_env`)."""
        return child_env(self.pass_api_key)

    def sent_chars(self, request: WriteRequest) -> int:
        """Characters of ours one call sends: the system prompt, the prompt and the schema (the
        StructuredOutput tool), plus Claude Code's framing (`FRAMING_CHARS`)."""
        schema = json.dumps(response_schema(), separators=(",", ":"))
        return len(INSTRUCTIONS) + len(cli_prompt(request)) + len(schema) + FRAMING_CHARS

    def estimate_cost(self, request: WriteRequest) -> float:
        """Worst-case cost of one call, for the dollar cap: every turn allowed sends what was sent
        before plus the output cap, each turn may write the output cap; at the model's price. The
        larger of that and the cost the child reported for its last call (`total_cost_usd`)."""
        sent = max(1, self.sent_chars(request) // CHARS_PER_TOKEN)
        input_tokens = sum(sent + turn * MAX_OUTPUT_TOKENS for turn in range(MAX_TURNS))
        worst = cost_usd(self.model, input_tokens=input_tokens, output_tokens=MAX_TURNS * MAX_OUTPUT_TOKENS)
        return max(self.last_cost_usd, worst)

    def _auth_error(self, detail: str = "") -> "_CliError":
        what = f" ({clip_reason(detail, 120)})" if detail else ""
        return _CliError("auth", f"claude could not authenticate{what}: {auth_fix(self.pass_api_key)}")

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
                                      timeout=self.timeout_s, env=self.env(), cwd=workdir(self.home))
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
                    raise self._auth_error(f"exit {proc.returncode}")
                account = account_error(detail, self.model)
                if account is not None:
                    raise account
                if _TRANSIENT.search(detail):
                    raise Transient(f"claude exited {proc.returncode} (transient)")
                raise _CliError("failed", f"claude exited {proc.returncode}")
            if not isinstance(data, dict):
                raise _CliError("malformed", "claude printed no JSON result")
            if data.get("is_error") and _AUTH.search(str(data.get("result", ""))):
                raise self._auth_error(str(data.get("result", "")))
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
