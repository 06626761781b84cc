"""The anthropic writer: the real SDK against a mocked transport replaying fixtures/llm."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from reverie.consolidate.budget import Budget, RetryPolicy
from reverie.consolidate.classify import classify
from reverie.consolidate.errors import NoApiKey
from reverie.consolidate.passages import Passage
from reverie.consolidate.writers.anthropic_writer import AnthropicWriter, api_key_from
from reverie.consolidate.writers.base import Candidate, WriteRequest
from reverie.consolidate.writers.prompts import INSTRUCTIONS

LLM = Path(__file__).resolve().parent.parent / "fixtures" / "llm"


def _request(rid: str = "conv-1:0") -> WriteRequest:
    texts = ["From now on, always use pnpm instead of npm in this repo.",
             "We moved auth-service off mini-lola, it runs on prod-k8s now."]
    cands = []
    for i, t in enumerate(texts):
        p = Passage(key=f"user:{i + 1}", kind="user", text=t, conversation="conv-1", message_id=i + 1,
                    timestamp="2026-10-01T10:00:00Z")
        cands.append(Candidate(f"P{i + 1}", p, classify(p)))
    return WriteRequest(id=rid, agent="demo", conversation="conv-1", candidates=cands)


class Server:
    """Serves the exchanges of a fixture file in order; records every request."""

    def __init__(self, name: str) -> None:
        self.script = json.loads((LLM / name).read_text())
        self.requests: list[dict] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        self.requests.append({"method": request.method, "path": request.url.path, "body": body,
                              "api_key": request.headers.get("x-api-key")
                              or request.headers.get("authorization", "").removeprefix("Bearer ")})
        step = self.script[min(len(self.requests) - 1, len(self.script) - 1)]
        if step.get("timeout"):
            raise httpx2.ReadTimeout("timed out", request=request)
        return httpx2.Response(step["status"], json=step["body"], headers=step.get("headers", {}))


def _writer(handler, **kw) -> AnthropicWriter:
    return AnthropicWriter(api_key="test-key", http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                           retry=RetryPolicy(attempts=3, base_delay_s=0.0, max_delay_s=0.0, sleep=lambda s: None), **kw)


def test_success_sends_structured_output_request_and_parses_cards():
    srv = Server("success.json")
    res = _writer(srv.handler).write_one(_request())
    assert res.error is None
    assert [c.model_dump() for c in res.cards] == json.loads(json.loads((LLM / "success.json").read_text())[0]["body"]["content"][0]["text"])["cards"]
    assert (res.calls, res.input_tokens, res.output_tokens) == (1, 812, 96)
    assert res.cost_usd == pytest.approx((812 * 1 + 96 * 5) / 1e6)
    (req,) = srv.requests
    assert req["path"] == "/v1/messages" and req["api_key"] == "test-key"
    body = req["body"]
    assert body["model"] == "claude-haiku-4-5"
    assert body["system"] == [{"type": "text", "text": INSTRUCTIONS, "cache_control": {"type": "ephemeral"}}]
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert body["output_config"]["format"]["schema"]["required"] == ["cards"]
    assert "[P1] user" in body["messages"][0]["content"] and "Write at most 1 card(s) from these 2 passage(s)" in body["messages"][0]["content"]


@pytest.mark.parametrize("fixture,kind,calls", [
    ("malformed_json.json", "malformed", 1),
    ("refusal.json", "refusal", 1),
    ("max_tokens.json", "max_tokens", 2),
    ("overloaded_529.json", "transient", 3),
    ("timeout.json", "transient", 3),
])
def test_faults_are_reported_not_raised(fixture, kind, calls):
    srv = Server(fixture)
    res = _writer(srv.handler).write_one(_request())
    assert res.cards == []
    assert res.error is not None and res.error.kind == kind
    assert res.calls == calls == len(srv.requests)
    assert res.error.retryable is (kind == "transient")
    if fixture == "max_tokens.json":
        assert [r["body"]["max_tokens"] for r in srv.requests] == [2048, 4096]


def test_a_card_that_breaks_the_schema_is_rejected_with_its_reason_not_the_response():
    """Issue 13: a card over a limit or with an unknown category costs that card (counted), never
    the response; the stretch is not failed for it."""
    srv = Server("schema_violation.json")
    res = _writer(srv.handler).write_one(_request())
    assert (res.error, res.cards, res.rejected, res.calls) == (None, [], {"repair_category": 1}, 1)


def test_429_then_success_retries_once():
    srv = Server("rate_limit_then_success.json")
    res = _writer(srv.handler).write_one(_request())
    assert res.error is None and len(res.cards) == 2 and res.calls == 2


def test_empty_response_means_zero_cards():
    res = _writer(Server("empty_cards.json").handler).write_one(_request())
    assert (res.error, res.cards) == (None, [])


def test_sequential_stops_after_transient_and_respects_call_budget():
    srv = Server("overloaded_529.json")
    w = _writer(srv.handler)
    budget = Budget(max_calls=10)
    out = list(w.write_many([_request("a:0"), _request("b:0")], budget))
    assert [r.error.kind for r in out] == ["transient", "transient"]
    assert out[1].error.message.startswith("not attempted") and len(srv.requests) == 3
    assert budget.calls == 3

    srv = Server("success.json")
    budget = Budget(max_calls=1)
    out = list(_writer(srv.handler).write_many([_request("a:0"), _request("b:0")], budget))
    assert [r.error.kind if r.error else "ok" for r in out] == ["ok", "budget"]
    assert budget.exhausted == ["calls"] and len(srv.requests) == 1


def test_dollar_cap_refuses_call_before_sending():
    srv = Server("success.json")
    out = list(_writer(srv.handler).write_many([_request()], Budget(max_cost_usd=0.001)))
    assert out[0].error.kind == "budget" and "dollar cap" in out[0].error.message
    assert srv.requests == []


def test_batches_api_half_price_and_errored_item():
    script = json.loads((LLM / "batch.json").read_text())
    seen: list[tuple[str, str]] = []
    retrieves = iter(script["retrieve"])

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append((request.method, request.url.path))
        path = request.url.path
        if request.method == "POST" and path == "/v1/messages/batches":
            body = json.loads(request.content)
            assert [r["custom_id"] for r in body["requests"]] == ["r0", "r1"]
            assert body["requests"][0]["params"]["output_config"]["format"]["type"] == "json_schema"
            return httpx2.Response(200, json=script["create"])
        if path.endswith("/results"):
            lines = "".join(json.dumps(x) + "\n" for x in script["results_jsonl"])
            return httpx2.Response(200, content=lines.encode(), headers={"content-type": "application/binary"})
        if request.method == "GET" and path == "/v1/messages/batches/msgbatch_01":
            try:
                return httpx2.Response(200, json=next(retrieves))
            except StopIteration:
                return httpx2.Response(200, json=script["retrieve"][-1])
        return httpx2.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": path}})

    w = _writer(handler, use_batches=True, batch_poll_s=0.0, sleep=lambda s: None)
    budget = Budget()
    out = list(w.write_many([_request("a:0"), _request("b:0")], budget))
    assert out[0].error is None and len(out[0].cards) == 2
    assert out[1].error.kind == "transient" and "overloaded_error" in out[1].error.message
    assert out[0].cost_usd == pytest.approx((900 + 120 * 5) / 1e6 / 2)
    assert budget.calls == 2
    assert seen[0] == ("POST", "/v1/messages/batches")


def test_api_key_from_env_or_settings(monkeypatch):
    with pytest.raises(NoApiKey):
        api_key_from({"anthropic": {"api_key": None}})
    assert api_key_from({"anthropic": {"api_key": "from-settings"}}) == "from-settings"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    assert api_key_from({"anthropic": {"api_key": "from-settings"}}) == "from-env"
