"""Audit 4: consolidation as a demanding user and a security reviewer would probe it.

Writers (the real `anthropic` SDK against a mocked transport or a local fake Messages API; a fake
`claude` on PATH; the offline writer on real transcripts), budgets across retries and batch
polling, faults that must leave passages for the next run, resume, and card/entity quality.

Began as proofs of a defect (xfail strict), now fixed and passing: the budget tests
(test_call_budget_holds_when_the_only_allowed_request_is_retried,
test_dollar_cap_holds_across_the_max_tokens_retry, test_a_batch_given_up_while_polling_is_cancelled_or_counted)
and the account-fault tests (test_three_nights_of_an_empty_credit_balance_lose_nothing,
test_claude_cli_account_error_for_three_runs_loses_nothing); the tests next to them pin the rest of
those fixes (per-attempt budget checks, batch cancel paths, account/configuration error kinds and
their redaction); and the named-things tests (junk entities from code fragments, formats,
"Make sure", compound adjectives). The others check something important that no other test checks.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner

from reverie.consolidate.budget import RetryPolicy
from reverie.consolidate.commands import build_cli
from reverie.consolidate.index import index_all
from reverie.consolidate.pipeline import consolidate_agent, list_agent_ids
from reverie.consolidate.writers.base import WriteError, WriteResult
from reverie.consolidate.writers.offline import OfflineWriter
from transcripts import line, write

ROOT = Path(__file__).resolve().parent.parent
LLM = ROOT / "fixtures" / "llm"
SAMPLES = ROOT / "fixtures" / "sample-projects"
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures" / "claude-code"

#: A key of the real shape (never sent anywhere: every transport here is local).
API_KEY = "sk-ant-api03-" + "Q7xK2mP9vL4n" * 7 + "AA"

RULES = [
    "From now on, always use pnpm instead of npm in this repo.",
    "Understood, pnpm it is.",
    "We moved auth-service off mini-lola, it runs on prod-k8s now.",
    "Noted: auth-service runs on prod-k8s and mini-lola no longer hosts it.",
    "Never commit directly to main; always open a pull request because CI gates the deploy.",
    "Got it.",
]


# ---------------------------------------------------------------------------------------------
# helpers


def _conversation(projects: Path, session: str, turns: list[str], *, day: int = 1, cwd: str = "/home/dev/shop") -> None:
    """A Claude Code transcript alternating user / assistant text turns."""
    lines, prev = [], None
    for i, text in enumerate(turns):
        kind = "user" if i % 2 == 0 else "assistant"
        uid = f"{session}-{i}"
        content = text if kind == "user" else [{"type": "text", "text": text}]
        lines.append(line(kind, uid, content, session=session, cwd=cwd, parent=prev,
                          ts=f"2026-03-{day:02d}T10:{i:02d}:00.000Z"))
        prev = uid
    write(projects / ("-" + cwd.strip("/").replace("/", "-")) / f"{session}.jsonl", *lines)


def _shop(home: Path, tmp_path: Path, conversations: dict[str, list[str]]) -> Path:
    """Index the given conversations (newest last) into agent `shop`; returns its db path."""
    projects = tmp_path / "projects"
    for n, (session, turns) in enumerate(conversations.items(), 1):
        _conversation(projects, session, turns, day=n)
    index_all(home, projects)
    return home / "agents" / "shop" / "agent.db"


def _rows(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return [tuple(r) for r in conn.execute(sql)]
    finally:
        conn.close()


def _cards(db: Path) -> list[tuple]:
    """Every card with its category, sessions and evidence (conversation:from-to), by statement."""
    return _rows(db, """SELECT c.statement, c.category, c.sessions,
                               (SELECT group_concat(e.conversation || ':' || e.message_from || '-' || e.message_to, ',')
                                FROM evidence e WHERE e.card_id = c.id)
                        FROM cards c ORDER BY c.statement, c.id""")


def _entities(db: Path) -> list[str]:
    return sorted(r[0] for r in _rows(db, "SELECT name FROM entities"))


def _home_bytes(home: Path) -> bytes:
    out = b""
    for p in sorted(home.rglob("*")):
        if p.is_file():
            out += p.read_bytes()
    return out


def _fixture(name: str):
    return json.loads((LLM / name).read_text())


def _no_sleep(attempts: int = 3) -> RetryPolicy:
    return RetryPolicy(attempts=attempts, base_delay_s=0.0, max_delay_s=0.0, sleep=lambda s: None)


class Scripted:
    """An httpx2 MockTransport handler serving HTTP exchanges in order (the last one repeats)."""

    def __init__(self, *steps: dict) -> None:
        self.steps = list(steps)
        self.requests: list[tuple[str, str, dict]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else {}
        self.requests.append((request.method, request.url.path, body))
        step = self.steps[min(len(self.requests) - 1, len(self.steps) - 1)]
        return httpx2.Response(step["status"], json=step["body"], headers=step.get("headers", {}))


def _anthropic(handler, **kw):
    from reverie.consolidate.writers.anthropic_writer import AnthropicWriter

    return AnthropicWriter(api_key=API_KEY, http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                           retry=_no_sleep(), **kw)


# ---------------------------------------------------------------------------------------------
# budgets: never exceeded, even across retries and batch polling


def test_call_budget_holds_when_the_only_allowed_request_is_retried(reverie_home, tmp_path):
    from reverie.consolidate import settings

    db = _shop(reverie_home, tmp_path, {"s-1": RULES})
    settings.set_value(reverie_home, "consolidate.max_calls", 1)
    srv = Scripted(*_fixture("rate_limit_then_success.json"))
    s = consolidate_agent(reverie_home, "shop", writer=_anthropic(srv))
    # What the run reports matches what was sent, and neither passes the cap.
    assert s["calls"] == len(srv.requests)
    assert s["calls"] <= 1, (s["calls"], s["budget_exhausted"])
    assert _rows(db, "SELECT json_extract(summary, '$.calls') FROM runs") == [(s["calls"],)]


def test_dollar_cap_holds_across_the_max_tokens_retry(reverie_home, tmp_path):
    from reverie.consolidate import settings

    _shop(reverie_home, tmp_path, {"s-1": RULES})
    settings.set_value(reverie_home, "consolidate.max_cost_usd", 0.02)
    srv = Scripted(*_fixture("max_tokens.json"))
    s = consolidate_agent(reverie_home, "shop", writer=_anthropic(srv))
    # The recorded usage is what was billed: 812 in + 2048 out, then 812 in + 4096 out.
    billed = sum((812 * 1 + out * 5) / 1e6 for out in (2048, 4096)[:len(srv.requests)])
    assert s["cost_usd"] == pytest.approx(billed)
    assert s["cost_usd"] <= 0.02, (s["cost_usd"], len(srv.requests))


def test_a_batch_given_up_while_polling_is_cancelled_or_counted(reverie_home, tmp_path):
    script = _fixture("batch.json")
    _shop(reverie_home, tmp_path, {"s-1": RULES, "s-2": RULES})
    seen: list[tuple[str, str]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append((request.method, request.url.path))
        if request.method == "POST" and request.url.path == "/v1/messages/batches":
            return httpx2.Response(200, json=script["create"])
        if request.url.path.endswith("/cancel"):
            return httpx2.Response(200, json=dict(script["create"], processing_status="canceling"))
        return httpx2.Response(529, json={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})

    w = _anthropic(handler, use_batches=True, batch_poll_s=0.0, sleep=lambda s: None)
    s = consolidate_agent(reverie_home, "shop", writer=w, trigger="nightly")
    submitted = seen.count(("POST", "/v1/messages/batches"))
    assert submitted == 1 and s["backlog"] is True and s["cards_written"] == 0
    cancelled = ("POST", "/v1/messages/batches/msgbatch_01/cancel") in seen
    # Either the batch was cancelled (as on the wait timeout), or its two requests are on the run's bill.
    assert cancelled or s["calls"] == 2, (seen, s["calls"], s["cost_usd"])


def _request(rid: str = "c:0"):
    """A one-conversation WriteRequest of two rule passages (for writer-level tests)."""
    from reverie.consolidate.classify import classify
    from reverie.consolidate.passages import Passage
    from reverie.consolidate.writers.base import Candidate, WriteRequest

    cands = []
    for i, text in enumerate(RULES[0:3:2]):
        p = Passage(key=f"user:{i + 1}", kind="user", text=text, conversation="c", message_id=i + 1,
                    timestamp="2026-03-01T10:00:00Z")
        cands.append(Candidate(f"P{i + 1}", p, classify(p)))
    return WriteRequest(id=rid, agent="shop", conversation="c", candidates=cands)


@pytest.mark.parametrize("spent_calls,spent_usd,max_calls,cap,kind", [
    (0, 0.03, 10, 0.05, "budget"),      # this run's earlier spending blocks the re-send: next run does it
    (1, 0.0, 2, 1.0, "budget"),         # this run's earlier call blocks the re-send: next run does it
    (0, 0.0, 10, 0.02, "max_tokens"),   # no run can afford the re-send: the stretch's own fault
    (0, 0.0, 1, 1.0, "max_tokens"),     # no run has the two calls it needs: the stretch's own fault
])
def test_max_tokens_resend_refused_by_the_budget(spent_calls, spent_usd, max_calls, cap, kind):
    """The re-send at twice the limit is checked against both caps with what the first answer
    cost; refused, it is left for the next run when a fresh run could send it, else it stays the
    stretch's max_tokens fault (counted, so an oversized stretch cannot block the agent for ever)."""
    from reverie.consolidate.budget import Budget

    srv = Scripted(*_fixture("max_tokens.json"))
    budget = Budget(max_calls=max_calls, max_cost_usd=cap, calls=spent_calls, cost=spent_usd)
    (res,) = _anthropic(srv).write_many([_request()], budget)
    first = (812 + 2048 * 5) / 1e6
    assert (res.error.kind, res.calls, len(srv.requests), res.cards) == (kind, 1, 1, [])
    assert (budget.calls, budget.cost) == (spent_calls + 1, pytest.approx(spent_usd + first))
    assert budget.exhausted == (["cost"] if cap < 1 else ["calls"])
    if kind == "budget":
        assert res.error.retryable and res.error.message.endswith(
            "; not re-sent with max_tokens 4096 after the answer stopped at max_tokens 2048")
    else:
        assert res.error.message.startswith("output stopped at max_tokens (2048) and the re-send with max_tokens 4096 "
                                            "exceeds this budget in any run: ")
    assert ("raise consolidate.max_cost_usd" if cap < 1 else "raise consolidate.max_calls") in res.error.message


def test_budget_refuses_the_retry_before_waiting_for_it():
    """A retry the call budget refuses is never slept for nor sent; the error says what it was for."""
    from reverie.consolidate.budget import Budget

    srv = Scripted(*_fixture("overloaded_529.json"))
    waits: list[float] = []
    w = _anthropic(srv)
    w.retry = RetryPolicy(attempts=3, base_delay_s=5.0, max_delay_s=5.0, sleep=waits.append)
    budget = Budget(max_calls=2)
    (res,) = w.write_many([_request()], budget)
    assert (res.error.kind, res.calls, len(srv.requests), len(waits), budget.calls) == ("budget", 2, 2, 1, 2)
    assert res.error.message == ("model call budget spent (2 calls this run; raise consolidate.max_calls to allow "
                                 "more); not retried after HTTP 529")


FAKE_CLAUDE_OUTPUT = r'''#!{python}
import sys
sys.stdin.read()
with open({log!r}, "a") as fh:
    fh.write("call\n")
sys.stdout.write({stdout!r})
sys.stderr.write({stderr!r})
sys.exit({code})
'''


def _claude_on_path(tmp_path: Path, monkeypatch, script: str) -> None:
    """`script` (already formatted) installed as the `claude` executable first on PATH."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / "claude"
    exe.write_text(script)
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


def _fake_claude(tmp_path: Path, monkeypatch, *, stdout: str = "", stderr: str = "", code: int = 0) -> Path:
    """A `claude` on PATH printing the given output; returns the file logging one line per call."""
    log = tmp_path / "claude-calls.log"
    _claude_on_path(tmp_path, monkeypatch, FAKE_CLAUDE_OUTPUT.format(
        python=sys.executable, log=str(log), stdout=stdout, stderr=stderr, code=code))
    return log


def test_claude_cli_retries_are_checked_against_the_call_budget(tmp_path, monkeypatch):
    from reverie.consolidate.budget import Budget
    from reverie.consolidate.writers.claude_cli import ClaudeCliWriter

    log = _fake_claude(tmp_path, monkeypatch, stderr="API Error: 529 Overloaded\n", code=1)
    budget = Budget(max_calls=2)
    (res,) = ClaudeCliWriter(retry=_no_sleep(5)).write_many([_request()], budget)
    assert (res.error.kind, res.calls, log.read_text(), budget.calls, budget.exhausted) == (
        "budget", 2, "call\ncall\n", 2, ["calls"])
    assert res.error.message.endswith("; not retried after claude exited 1 (transient)")


def _batch_handler(script: dict, seen: list, *, retrieve_status: int = 529, results_status: int | None = None):
    """A Message Batches API: create succeeds; retrieve answers `retrieve_status` (200: the batch
    has ended); results answer `results_status`; cancel is accepted."""
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append((request.method, request.url.path))
        path = request.url.path
        if request.method == "POST" and path == "/v1/messages/batches":
            return httpx2.Response(200, json=script["create"])
        if path.endswith("/cancel"):
            return httpx2.Response(200, json=dict(script["create"], processing_status="canceling"))
        if path.endswith("/results"):
            return httpx2.Response(results_status, json={"type": "error", "error": {"type": "api_error",
                                                                                    "message": "Internal"}})
        if retrieve_status == 200:
            return httpx2.Response(200, json=script["retrieve"][-1])
        return httpx2.Response(retrieve_status, json={"type": "error", "error": {
            "type": "authentication_error" if retrieve_status == 401 else "overloaded_error", "message": "no"}})
    return handler


CANCEL = ("POST", "/v1/messages/batches/msgbatch_01/cancel")


@pytest.mark.parametrize("case,kw,wait_s,kind,note,cancelled", [
    ("wait timeout", {}, 0.0, "transient",
     "batch not finished after 0s; batch msgbatch_01 cancelled (requests it already processed are billed)", True),
    ("key refused while polling", {"retrieve_status": 401}, 3600.0, "auth",
     "HTTP 401 AuthenticationError; batch msgbatch_01 cancelled (requests it already processed are billed)", True),
    ("results unreadable", {"retrieve_status": 200, "results_status": 500}, 3600.0, "transient",
     "HTTP 500; batch msgbatch_01 ended but its results could not be read (its requests are billed)", False),
])
def test_every_way_of_giving_a_batch_up_cancels_it_and_charges_its_requests(case, kw, wait_s, kind, note, cancelled):
    from reverie.consolidate.budget import Budget

    seen: list[tuple[str, str]] = []
    w = _anthropic(_batch_handler(_fixture("batch.json"), seen, **kw), use_batches=True, batch_poll_s=0.0,
                   batch_wait_s=wait_s, sleep=lambda s: None)
    budget = Budget()
    out = list(w.write_many([_request("a:0"), _request("b:0")], budget))
    assert [(r.request_id, r.error.kind, r.error.message, r.calls, r.cards) for r in out] == [
        (rid, kind, note, 1, []) for rid in ("a:0", "b:0")]
    assert (seen.count(("POST", "/v1/messages/batches")), CANCEL in seen, budget.calls, budget.cost) == (
        1, cancelled, 2, 0.0)


def test_a_batch_interrupted_while_waiting_is_cancelled():
    seen: list[tuple[str, str]] = []

    def interrupt(_s: float) -> None:
        raise KeyboardInterrupt

    w = _anthropic(_batch_handler(_fixture("batch.json"), seen), use_batches=True, batch_poll_s=1.0, sleep=interrupt)
    with pytest.raises(KeyboardInterrupt):
        list(w.write_many([_request("a:0"), _request("b:0")], None))
    assert seen == [("POST", "/v1/messages/batches"), CANCEL]


# ---------------------------------------------------------------------------------------------
# faults that are the account's, not the passages': never give the passages up


CREDIT_400 = {"status": 400, "body": {"type": "error", "error": {
    "type": "invalid_request_error",
    "message": "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade "
               "or purchase credits."}}}


def test_three_nights_of_an_empty_credit_balance_lose_nothing(reverie_home, tmp_path):
    db = _shop(reverie_home, tmp_path, {"s-1": RULES, "s-2": RULES[:2]})
    ok = _fixture("success.json")[0]
    broke = Scripted(CREDIT_400)
    for night in range(3):
        s = consolidate_agent(reverie_home, "shop", writer=_anthropic(broke), trigger="nightly")
        assert s["cards_written"] == 0 and s["errors"]
    srv = Scripted(ok)
    s = consolidate_agent(reverie_home, "shop", writer=_anthropic(srv), trigger="nightly")
    # The passages were never consolidated, so the first run with credit must send them.
    assert len(srv.requests) >= 1 and s["cards_written"] >= 1, (s["skipped_stretches"], _rows(
        db, "SELECT conversation, last_message_id, attempts FROM progress ORDER BY conversation"))


FAKE_CLAUDE = r'''#!{python}
import json, os, sys
state = {state!r}
sys.stdin.read()
if os.path.exists(state) and open(state).read().strip() == "ok":
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": "",
        "structured_output": {{"cards": [{{"statement": "Use pnpm, not npm, for every install in this repo.",
            "category": "preference", "importance": 4, "entities": [{{"name": "pnpm", "type": "tool"}}],
            "relations": [], "evidence": ["P1"], "quote": "always use pnpm instead of npm"}}]}},
        "total_cost_usd": 0.002, "usage": {{"input_tokens": 900, "output_tokens": 80}}}}))
else:
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": True,
                      "result": "Credit balance is too low", "total_cost_usd": 0, "usage": {{}}}}))
'''


def test_claude_cli_account_error_for_three_runs_loses_nothing(reverie_home, tmp_path, monkeypatch):
    db = _shop(reverie_home, tmp_path, {"s-1": RULES[:2]})
    state = tmp_path / "claude-state"
    _claude_on_path(tmp_path, monkeypatch, FAKE_CLAUDE.format(python=sys.executable, state=str(state)))
    runner = CliRunner()
    for night in range(3):
        res = runner.invoke(build_cli(), ["consolidate", "--now", "--agent", "shop", "--writer", "claude-cli", "--json"])
        out = json.loads(res.output)
        assert (out["cards_written"], len(out["errors"])) == (0, 1)
    state.write_text("ok")
    res = runner.invoke(build_cli(), ["consolidate", "--now", "--agent", "shop", "--writer", "claude-cli", "--json"])
    out = json.loads(res.output)
    assert (out["calls"], out["cards_written"]) == (1, 1), (out, _rows(db, "SELECT * FROM progress"))


@pytest.mark.parametrize("status,etype,message,fix", [
    (400, "invalid_request_error", CREDIT_400["body"]["error"]["message"], "Plans & Billing"),
    (402, "billing_error", "Payment required", "Plans & Billing"),
    (400, "invalid_request_error", "You have reached your specified API usage limits. You will regain access on "
                                   "2026-04-01 at 00:00 UTC.", "Plans & Billing"),
    (404, "not_found_error", "model: claude-haiku-9", "reverie settings set anthropic.model claude-haiku-4-5"),
    (400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum", "HTTP 400 BadRequestError"),
    (413, "request_too_large", "Request exceeds the maximum allowed number of bytes.", "HTTP 413 ContentTooLargeError"),
])
def test_anthropic_account_and_configuration_faults_are_kind_account(status, etype, message, fix):
    """Faults every request would hit until the user acts are kind `account`, sent once, with the
    API's reason and the fix; a fault of this request's content stays `failed` (the stretch's)."""
    srv = Scripted({"status": status, "body": {"type": "error", "error": {"type": etype, "message": message}}})
    res = _anthropic(srv).write_one(_request())
    assert (res.calls, len(srv.requests), res.cards, res.error.retryable) == (1, 1, [], False)
    if fix.startswith("HTTP "):
        assert (res.error.kind, res.error.message) == ("failed", fix)
    else:
        assert res.error.kind == "account"
        assert f"(HTTP {status} {etype}: {message})" in res.error.message and fix in res.error.message


def test_an_account_error_reason_is_redacted_and_ends_the_run_as_failed(reverie_home, tmp_path):
    """The API's reason is kept, but through the redactor: a key-shaped string in it reaches no
    output and no byte of the home. The run is recorded as failed, progress and attempts untouched."""
    leaked = "sk-ant-api03-" + ("Zr8Tq2Lw5Nx-" * 8)[:93] + "AA"      # the anthropic-key rule's exact shape
    db = _shop(reverie_home, tmp_path, {"s-1": RULES, "s-2": RULES[:2]})
    body = json.loads(json.dumps(CREDIT_400))
    body["body"]["error"]["message"] = f"Your credit balance is too low (key {leaked})."
    srv = Scripted(body)
    s = consolidate_agent(reverie_home, "shop", writer=_anthropic(srv), trigger="nightly")
    assert (len(srv.requests), s["calls"], s["cards_written"], s["backlog"], s["failed"]) == (1, 1, 0, True, True)
    (err,) = s["errors"]
    assert (err["kind"], err["conversation"]) == ("account", "s-2")
    assert err["message"].startswith("the Anthropic account cannot be billed (HTTP 400 invalid_request_error: "
                                     "Your credit balance is too low (key [REDACTED")
    assert leaked not in json.dumps(s) and leaked[:24] not in json.dumps(s)
    assert leaked.encode() not in _home_bytes(reverie_home) and leaked[:24].encode() not in _home_bytes(reverie_home)
    assert _rows(db, "SELECT status, json_extract(summary, '$.errors[0].kind') FROM runs") == [("failed", "account")]
    assert _rows(db, "SELECT conversation, last_message_id, attempts FROM progress") == []


def test_a_long_provider_reason_is_cut_between_words_never_inside_a_secret():
    """A secret in a reason is kept whole (the redactor sees it) or left out, never cut in half."""
    from reverie.consolidate.writers.base import clip_reason

    leaked = "sk-ant-api03-" + ("Zr8Tq2Lw5Nx-" * 8)[:93] + "AA"
    assert clip_reason("Your credit balance\n  is too low.") == "Your credit balance is too low."
    assert clip_reason("x " * 140 + leaked + " tail") == " ".join(["x"] * 140) + " ..."
    assert clip_reason(leaked * 3) == "..."


@pytest.mark.parametrize("out,err,code,kind,calls,fix", [
    (json.dumps({"type": "result", "subtype": "success", "is_error": True,
                 "result": "Claude AI usage limit reached|1767225600", "total_cost_usd": 0}), "", 0,
     "account", 1, "after the limit resets"),
    (json.dumps({"type": "result", "subtype": "success", "is_error": True, "result": "Credit balance is too low",
                 "total_cost_usd": 0}), "", 0, "account", 1, "credit balance and billing"),
    ("", 'API Error: 404 {"type":"error","error":{"type":"not_found_error","message":"model: haiku-9"}}', 1,
     "account", 1, "reverie settings set claude_cli.model haiku"),
    ("", "API Error: 429 rate limit exceeded", 1, "transient", 2, None),
])
def test_claude_cli_account_faults_are_kind_account_and_never_retried(tmp_path, monkeypatch, out, err, code, kind,
                                                                      calls, fix):
    from reverie.consolidate.writers.claude_cli import ClaudeCliWriter

    log = _fake_claude(tmp_path, monkeypatch, stdout=out, stderr=err, code=code)
    res = ClaudeCliWriter(retry=_no_sleep(2)).write_one(_request())
    assert (res.error.kind, res.calls, log.read_text().count("call"), res.cards) == (kind, calls, calls, [])
    if fix is not None:
        assert fix in res.error.message


# ---------------------------------------------------------------------------------------------
# the anthropic writer end to end through `reverie consolidate --now --json` and a local fake API


class _FakeApi:
    """A local HTTP server speaking the Messages API from scripted exchanges (the last repeats)."""

    def __init__(self) -> None:
        self.steps: list[dict] = []
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                outer.requests.append({"path": self.path, "body": body, "key": self.headers.get("x-api-key")
                                        or (self.headers.get("authorization") or "").removeprefix("Bearer ")})
                step = outer.steps[min(len(outer.requests) - 1, len(outer.steps) - 1)]
                data = json.dumps(step["body"]).encode()
                self.send_response(step["status"])
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in step.get("headers", {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # silence the server
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_api(monkeypatch):
    api = _FakeApi()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    yield api
    api.close()


def test_cli_anthropic_malformed_then_success_then_nothing_and_the_key_never_leaks(reverie_home, tmp_path, fake_api,
                                                                                  monkeypatch, caplog):
    """Malformed output is reported (--json errors, run record), the passages stay pending; the next
    run sends the same passages, writes the cards with cost = recorded tokens x price and the request
    carries structured output and cache_control; a third run sends nothing. The API key appears in no
    output, no log record (DEBUG, SDK included) and no byte under the home."""
    from reverie.consolidate import settings

    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    db = _shop(reverie_home, tmp_path, {"s-1": RULES})
    settings.set_value(reverie_home, "consolidate.retry.base_delay_s", 0)
    caplog.set_level(logging.DEBUG)
    runner = CliRunner()
    args = ["consolidate", "--now", "--agent", "shop", "--writer", "anthropic", "--json"]

    fake_api.steps = _fixture("malformed_json.json")
    first = runner.invoke(build_cli(), args)
    out1 = json.loads(first.output)
    assert (out1["calls"], out1["cards_written"], out1["backlog"], out1["cost_usd"]) == (1, 0, True, 0.001292)
    assert [(e["kind"], e["conversation"]) for e in out1["errors"]] == [("malformed", "s-1")]
    assert _rows(db, "SELECT status, json_extract(summary, '$.errors[0].kind') FROM runs") == [("partial", "malformed")]
    assert _rows(db, "SELECT conversation, last_message_id FROM progress") == [("s-1", 0)]
    assert _rows(db, "SELECT count(*) FROM cards") == [(0,)]

    ok = _fixture("success.json")[0]
    ok["body"]["usage"].update({"input_tokens": 700, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 50})
    fake_api.steps = [ok]
    second = runner.invoke(build_cli(), args)
    out2 = json.loads(second.output)
    assert [r["body"]["messages"] for r in fake_api.requests[:1]] == [r["body"]["messages"] for r in fake_api.requests[1:]]
    body = fake_api.requests[1]["body"]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["output_config"]["format"]["type"] == "json_schema" and body["model"] == "claude-haiku-4-5"
    expected = (700 * 1 + 300 * 1.25 + 50 * 0.1 + 96 * 5) / 1e6
    assert (out2["calls"], out2["cards_written"], out2["backlog"], out2["errors"]) == (1, 2, False, [])
    assert out2["cost_usd"] == pytest.approx(expected)
    assert out2["tokens"] == {"input": 700, "output": 96, "cache_read": 50, "cache_write": 300}

    third = runner.invoke(build_cli(), args)
    out3 = json.loads(third.output)
    assert (out3["calls"], out3["cards_written"], out3["passages"], len(fake_api.requests)) == (0, 0, 0, 2)

    assert {r["key"] for r in fake_api.requests} == {API_KEY}
    for res in (first, second, third):
        assert API_KEY not in res.output and API_KEY[:24] not in res.output
    logged = "\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records)
    assert caplog.records and API_KEY not in logged and API_KEY[:24] not in logged
    assert API_KEY.encode() not in _home_bytes(reverie_home)


# ---------------------------------------------------------------------------------------------
# claude-cli: a child that hangs is killed, retried, then left for the next run


HANGING_CLAUDE = r'''#!{python}
import sys, time
with open({log!r}, "a") as fh:
    fh.write("call\n")
time.sleep(30)
'''


def test_claude_cli_child_that_hangs_is_killed_and_its_passages_wait_for_the_next_run(reverie_home, tmp_path,
                                                                                      monkeypatch):
    from reverie.consolidate.writers.claude_cli import ClaudeCliWriter

    db = _shop(reverie_home, tmp_path, {"s-1": RULES[:2]})
    log = tmp_path / "calls.log"
    _claude_on_path(tmp_path, monkeypatch, HANGING_CLAUDE.format(python=sys.executable, log=str(log)))
    w = ClaudeCliWriter(timeout_s=0.4, retry=_no_sleep(2))
    s = consolidate_agent(reverie_home, "shop", writer=w)
    assert (s["calls"], s["cards_written"], s["backlog"]) == (2, 0, True)
    assert [(e["kind"], e["message"]) for e in s["errors"]] == [
        ("transient", "claude timed out after 0.4s after 2 attempts")]
    assert log.read_text() == "call\ncall\n"
    # Transient faults never count against the stretch: no attempts recorded, nothing given up.
    assert _rows(db, "SELECT conversation, last_message_id, attempts FROM progress") == []


# ---------------------------------------------------------------------------------------------
# resume: a failure or a budget cut mid-run, then runs until done == one clean run


class _FailOnCall(OfflineWriter):
    """The offline writer, except that call number `k` of this run fails with `kind`."""

    def __init__(self, k: int, kind: str = "transient") -> None:
        super().__init__()
        self.k, self.kind, self.n = k, kind, 0

    def write_one(self, request, budget=None):
        self.n += 1
        if self.n == self.k:
            return WriteResult(request.id, error=WriteError(self.kind, "HTTP 529 after 3 attempts", retryable=True),
                               calls=1)
        return super().write_one(request, budget)


@pytest.fixture
def samples():
    if not SAMPLES.exists():
        pytest.skip("fixtures/sample-projects not generated")
    return SAMPLES


def test_resume_after_a_failed_call_or_a_passage_budget_equals_one_clean_run(samples, tmp_path, monkeypatch):
    """On the project's multi-conversation samples: (a) one clean run; (b) a run whose 3rd writer call
    fails, then a normal run; (c) max_passages=3 and runs until no backlog. (b) and (c) end with exactly
    the clean run's cards, evidence, sessions and progress; one more run writes nothing."""
    from reverie.consolidate import settings

    def fresh(name: str) -> Path:
        home = tmp_path / name
        index_all(home, samples)
        return home

    def state(home: Path, agent: str):
        db = home / "agents" / agent / "agent.db"
        return _cards(db), _rows(db, "SELECT conversation, last_message_id FROM progress ORDER BY conversation")

    clean = fresh("clean")
    agents = list_agent_ids(clean)
    assert agents == ["billing-api", "infra"]
    for a in agents:
        consolidate_agent(clean, a, writer="offline")
    want = {a: state(clean, a) for a in agents}
    assert len(want["billing-api"][0]) == 7 and len(want["billing-api"][1]) == 3

    failed = fresh("failed")
    s = consolidate_agent(failed, "billing-api", writer=_FailOnCall(3))
    assert s["backlog"] is True and [e["kind"] for e in s["errors"]] == ["transient"]
    consolidate_agent(failed, "billing-api", writer="offline")
    assert state(failed, "billing-api") == want["billing-api"]

    cut = fresh("cut")
    settings.set_value(cut, "consolidate.max_passages", 3)
    for a in agents:
        for _ in range(40):
            s = consolidate_agent(cut, a, writer="offline")
            if not s["backlog"]:
                break
        assert state(cut, a) == want[a]
        again = consolidate_agent(cut, a, writer="offline")
        assert (again["passages"], again["cards_written"], again["merge"]) == (0, 0, {})


# ---------------------------------------------------------------------------------------------
# the offline writer on real transcripts: entities are named things only


def _consolidate_cli(home: Path, projects: Path) -> list[dict]:
    runner = CliRunner()
    res = runner.invoke(build_cli(), ["--home", str(home), "index", "--projects-dir", str(projects)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(build_cli(), ["--home", str(home), "consolidate", "--now", "--all", "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _junk(names: list[str]) -> list[str]:
    """Names that are no named thing: code/punctuation fragments (unbalanced brackets, leading or
    trailing punctuation) and generic words, formats and hyphenated adjectives."""
    generic = {"id", "ids", "jsonl", "json", "pdf", "pdfs", "yaml", "http", "url", "mac", "make",
               "content-addressed", "long-running", "two-step"}
    out = []
    for n in names:
        unbalanced = any(n.count(o) != n.count(c) for o, c in ("()", "{}", "[]"))
        if unbalanced or n[:1] in ":;,.(){}[]" or n[-1:] in ":;,({[" or n.lower() in generic:
            out.append(n)
    return out


def test_shared_fixture_cards_carry_only_named_things(reverie_home, tmp_path):
    if not SHARED_FIXTURES.exists():
        pytest.skip("../shared/fixtures not present")
    out = _consolidate_cli(reverie_home, SHARED_FIXTURES)
    assert {s["agent"]: s["cards_written"] for s in out}["spotter-gqc"] >= 1
    names = _entities(reverie_home / "agents" / "spotter-gqc" / "agent.db")
    assert "mix ash.codegen" in names and "SQLite" in names
    assert _junk(names) == [] and "Added" not in names


def test_sample_cards_carry_only_named_things(reverie_home, samples):
    _consolidate_cli(reverie_home, samples)
    names = _entities(reverie_home / "agents" / "billing-api" / "agent.db")
    for real in ("auth-service", "mini-lola", "prod-k8s", "billing-api", "acme-invoices", "pnpm", "nginx"):
        assert real in names
    assert _junk(names) == []


def test_rules_in_everyday_wording_yield_only_their_named_things(reverie_home, tmp_path):
    db = _shop(reverie_home, tmp_path, {"s-1": [
        "Make sure to always run the database migrations through the deploy pipeline, never by hand on prod-db-01.",
        "Understood.",
        "Remember that the nightly export is written as JSONL to the acme-exports bucket because the warehouse "
        "loader reads JSONL only.",
        "Got it.",
        "From now on, always render each PDF with the long-running worker on batch-01 because the two-step upload "
        "needs it.",
        "OK.",
    ]})
    s = consolidate_agent(reverie_home, "shop", writer="offline")
    assert s["cards_written"] == 3
    by_card = _rows(db, """SELECT c.id, group_concat(e.name, '|') FROM cards c
                           JOIN card_entities ce ON ce.card_id = c.id JOIN entities e ON e.id = ce.entity_id
                           GROUP BY c.id ORDER BY c.id""")
    assert by_card == [(1, "prod-db-01"), (2, "acme-exports"), (3, "batch-01")]


# ---------------------------------------------------------------------------------------------
# the offline writer's card cap and chatter, on real transcripts


def test_offline_card_cap_per_call_and_no_cards_for_chatter(reverie_home, tmp_path, samples):
    """Every offline call stays within max(1, min(5, ceil(n/3))) on the samples and the shared
    fixtures (the verifier would silently drop the excess as over_cap: none is rejected), and a
    conversation of pure chatter and progress reports gives zero candidates and zero cards."""
    from reverie.consolidate.writers.base import max_cards

    calls: list[tuple[int, int]] = []

    class Recording(OfflineWriter):
        def write_one(self, request, budget=None):
            res = super().write_one(request, budget)
            calls.append((len(request.candidates), len(res.cards)))
            return res

    index_all(reverie_home, samples)
    if SHARED_FIXTURES.exists():
        index_all(reverie_home, SHARED_FIXTURES)
    total = 0
    for a in list_agent_ids(reverie_home):
        s = consolidate_agent(reverie_home, a, writer=Recording())
        assert s["cards_rejected"] == {} and s["errors"] == []
        total += s["cards_written"]
    assert calls and total >= 9
    assert [(n, k) for n, k in calls if k > max_cards(n)] == []

    projects = tmp_path / "chat"
    _conversation(projects, "chat-1", [
        "hi! can you look at the failing build?", "Sure, let me take a look at the logs now.",
        "thanks, that's great", "I'm running the tests again, this will take a minute.",
        "ok cool, let me know", "All done: the build passes now.",
        "awesome, thanks!", "You're welcome!"], cwd="/home/dev/chat")
    index_all(reverie_home, projects)
    s = consolidate_agent(reverie_home, "chat", writer="offline")
    assert (s["passages"] > 0, s["candidates"], s["cards_written"]) == (True, 0, 0)
