"""Pipeline faults: a stretch whose verify/merge fails, a corrupt agent among several, a run killed
after committing stretches (trust watermark), and a refused API key."""

from __future__ import annotations

import json
import types

import httpx2
import pytest
from click.testing import CliRunner

from reverie.consolidate.budget import RetryPolicy
from reverie.consolidate.errors import ApiAuthFailed
from reverie.consolidate.pipeline import consolidate_agent, consolidate_all
from reverie.consolidate.writers.base import WriteResult

import test_pipeline
from test_pipeline import RULES, make_agent, rows


class FakeRedactor:
    def redact(self, text: str):
        return types.SimpleNamespace(text=text, findings=[])


# ---------------------------------------------------------------------------------------------
# verify/merge faults are per stretch; a stretch that always fails is given up after N attempts


def test_merge_fault_rolls_back_the_stretch_counts_attempts_then_skips_it(reverie_home, monkeypatch):
    import reverie.graph.merge as graph_merge

    path = make_agent(reverie_home, "demo", {"c1": RULES})
    real = graph_merge.merge_card

    def merge(db, card, **kw):
        if "pnpm" in card.statement:
            raise RuntimeError("boom")
        return real(db, card, **kw)

    monkeypatch.setattr(graph_merge, "merge_card", merge)
    for attempt in (1, 2):
        s = consolidate_agent(reverie_home, "demo", writer="offline", redactor=FakeRedactor())
        assert (s["cards_written"], s["passages_consolidated"], s["skipped_stretches"], s["backlog"], s["errors"]) == (
            0, 0, 0, True, [{"conversation": "c1", "segment": 0, "kind": "crash",
                             "message": "RuntimeError in verify/merge"}])
        assert rows(path, "SELECT conversation, last_message_id, attempts, last_error FROM progress") == [
            ("c1", 0, attempt, "crash: RuntimeError in verify/merge")]
        assert rows(path, "SELECT count(*) FROM cards") == [(0,)]
    # Third failure: the stretch (exchange 1, messages 1-2) is given up, the rest proceeds.
    s = consolidate_agent(reverie_home, "demo", writer="offline", redactor=FakeRedactor())
    assert (s["cards_written"], s["skipped_stretches"], s["backlog"]) == (2, 1, False)
    assert rows(path, "SELECT conversation, last_message_id, attempts, last_error FROM progress") == [
        ("c1", 7, 0, None)]
    assert [r[0] for r in rows(path, "SELECT statement FROM cards ORDER BY id")] == [
        "auth-service runs on prod-k8s and mini-lola no longer hosts it.",
        "Never commit directly to main; always open a pull request because CI gates the deploy."]
    statuses = rows(path, "SELECT status, json_extract(summary, '$.skipped_stretches') FROM runs ORDER BY id")
    assert statuses == [("partial", 0), ("partial", 0), ("partial", 1)]


class ScriptedWriter(test_pipeline.ScriptedWriter):
    """test_pipeline's scripted writer, except that the last step repeats once the script is used up."""

    def write_one(self, request, budget=None):
        self.requests.append(request)
        return self.script[min(len(self.requests) - 1, len(self.script) - 1)](request)


def test_refusal_every_time_is_given_up_after_max_attempts(reverie_home):
    from reverie.consolidate import settings
    from reverie.consolidate.writers.base import WriteError

    path = make_agent(reverie_home, "demo", {"c1": RULES})
    settings.set_value(reverie_home, "consolidate.max_stretch_attempts", 2)
    w = ScriptedWriter([lambda r: WriteResult(r.id, error=WriteError("refusal", "the model refused this request"), calls=1)])
    s1 = consolidate_agent(reverie_home, "demo", writer=w, redactor=FakeRedactor())
    s2 = consolidate_agent(reverie_home, "demo", writer=w, redactor=FakeRedactor())
    assert [(s["skipped_stretches"], s["backlog"]) for s in (s1, s2)] == [(0, True), (1, False)]
    assert rows(path, "SELECT conversation, last_message_id, attempts FROM progress") == [("c1", 7, 0)]
    # Nothing left: the next run makes no call.
    s3 = consolidate_agent(reverie_home, "demo", writer=w, redactor=FakeRedactor())
    assert (s3["calls"], len(w.requests)) == (0, 2)


# ---------------------------------------------------------------------------------------------
# one corrupt agent does not stop the others


def test_corrupt_agent_db_is_reported_and_the_others_run(reverie_home):
    from reverie.consolidate.commands import build_cli

    make_agent(reverie_home, "good", {"c1": RULES})
    make_agent(reverie_home, "bad", {"c1": RULES})
    bad = reverie_home / "agents" / "bad" / "agent.db"
    for p in bad.parent.glob("agent.db*"):
        p.unlink()
    bad.write_bytes(b"this is not a sqlite database at all" * 200)

    out = consolidate_all(reverie_home, writer="offline")
    assert [(s["agent"], s.get("failed", False), s["cards_written"]) for s in out] == [
        ("bad", True, 0), ("good", False, 3)]
    (err,) = out[0]["errors"]
    assert err["kind"] == "agent_failed" and "reverie doctor" in err["message"] and "DatabaseError" in err["message"]

    res = CliRunner().invoke(build_cli(), ["consolidate", "--now", "--all", "--json"])
    assert res.exit_code == 1
    assert [(s["agent"], s.get("failed", False)) for s in json.loads(res.output)] == [("bad", True), ("good", False)]
    res = CliRunner().invoke(build_cli(), ["consolidate", "--now", "--agent", "bad"])
    assert res.exit_code == 1 and "reverie doctor" in res.output and "Traceback" not in res.output


# ---------------------------------------------------------------------------------------------
# trust watermark: a killed run's committed stretches get their episodes in the next run


def test_run_killed_after_a_committed_conversation_gets_its_episode_next_run(reverie_home):
    path = make_agent(reverie_home, "demo", {"older": RULES, "newer": RULES})

    def kill(request):
        raise KeyboardInterrupt  # the process dies while the second conversation is being written

    w = ScriptedWriter([lambda r: WriteResult(r.id, calls=1), kill])
    with pytest.raises(KeyboardInterrupt):
        consolidate_agent(reverie_home, "demo", writer=w, redactor=FakeRedactor())
    assert rows(path, "SELECT conversation, last_message_id, trust_message_id FROM progress") == [("newer", 14, 0)]
    assert rows(path, "SELECT session FROM episodes") == []

    s = consolidate_agent(reverie_home, "demo", writer=ScriptedWriter([lambda r: WriteResult(r.id, calls=1)]),
                          redactor=FakeRedactor())
    assert s["conversations"] == 1 and s["trust"]["sessions"] == 2
    assert rows(path, "SELECT session FROM episodes ORDER BY session") == [("newer",), ("older",)]
    assert rows(path, "SELECT conversation, last_message_id, trust_message_id FROM progress ORDER BY conversation") == [
        ("newer", 14, 14), ("older", 7, 7)]
    # Covered: the next run's stage has nothing to do.
    s = consolidate_agent(reverie_home, "demo", writer="offline", redactor=FakeRedactor())
    assert s["trust"]["sessions"] == 0


# ---------------------------------------------------------------------------------------------
# a refused API key stops the run at once


def test_refused_api_key_stops_the_run_after_one_request(reverie_home):
    from reverie.consolidate.writers.anthropic_writer import AnthropicWriter

    path = make_agent(reverie_home, "demo", {"c1": RULES, "c2": RULES, "c3": RULES})
    seen = []

    def handler(request):
        seen.append(request.url.path)
        return httpx2.Response(401, json={"type": "error", "error": {"type": "authentication_error",
                                                                     "message": "invalid x-api-key"}})

    w = AnthropicWriter(api_key="bad-key", http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                        retry=RetryPolicy(attempts=3, base_delay_s=0.0, max_delay_s=0.0, sleep=lambda s: None))
    with pytest.raises(ApiAuthFailed) as exc:
        consolidate_agent(reverie_home, "demo", writer=w, redactor=FakeRedactor())
    assert seen == ["/v1/messages"]
    msg = str(exc.value)
    assert "HTTP 401" in msg and "reverie doctor" in msg and "ANTHROPIC_API_KEY" in msg
    assert "reverie settings set anthropic.api_key -" in msg
    (run,) = rows(path, "SELECT status, json_extract(summary, '$.calls') FROM runs")
    assert run == ("failed", 1)
    assert rows(path, "SELECT conversation, last_message_id, attempts FROM progress") == []
