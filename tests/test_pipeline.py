"""The consolidation pipeline: progress, budgets, faults, resume after a kill, the sample transcripts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import types
from pathlib import Path

from fakes import make_agent

from reverie.consolidate.pipeline import consolidate_agent
from reverie.consolidate.store import open_db
from reverie.consolidate.writers.base import CardDraft, WriteError, WriteResult, sequential

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "fixtures" / "sample-projects"


class FakeRedactor:
    """Flags `sk-...` tokens (the real engine is exercised by the sample-transcript test)."""

    def redact(self, text: str):
        import re

        out = re.sub(r"sk-[A-Za-z0-9]{10,}", "[REDACTED:token]", text)
        return types.SimpleNamespace(text=out, findings=[1] if out != text else [])




RULES = [
    ("user", "From now on, always use pnpm instead of npm in this repo."),
    ("assistant", "Understood, pnpm it is."),
    ("user", "We moved auth-service off mini-lola, it runs on prod-k8s now."),
    ("assistant", "Noted: auth-service runs on prod-k8s and mini-lola no longer hosts it."),
    ("user", "Never commit directly to main; always open a pull request because CI gates the deploy."),
    ("assistant", "Got it."),
    ("user", "thanks!"),
]


def rows(path: Path, sql: str) -> list[tuple]:
    db = open_db(path)
    try:
        return [tuple(r) for r in db.conn.execute(sql)]
    finally:
        db.close()


def test_offline_run_writes_cards_progress_and_run_record(reverie_home):
    path = make_agent(reverie_home, "demo", {"c1": RULES})
    s = consolidate_agent(reverie_home, "demo", writer="offline", redactor=FakeRedactor())
    assert {k: s[k] for k in ("agent", "conversations", "passages", "candidates", "calls", "cards_written",
                              "cards_rejected", "cost_usd", "backlog", "errors")} == {
        "agent": "demo", "conversations": 1, "passages": 5, "candidates": 4, "calls": 0, "cards_written": 3,
        "cards_rejected": {}, "cost_usd": 0.0, "backlog": False, "errors": []}
    # The offline writer gets one call per exchange: the exchange of "We moved auth-service ..." has
    # two candidates (the user turn and the agent's "Noted: ..."), so at most ceil(2/3) = 1 card: the
    # agent's restatement, the current fact with the outdated one as ended (issue 13).
    assert rows(path, "SELECT statement, category, importance, confidence FROM cards") == [
        ("Always use pnpm instead of npm in this repo.", "preference", 4, 1.0),
        ("auth-service runs on prod-k8s and mini-lola no longer hosts it.", "fact", 2, 0.5),
        ("Never commit directly to main; always open a pull request because CI gates the deploy.", "preference", 4, 1.0)]
    assert rows(path, "SELECT conversation, message_from, message_to, passage FROM evidence") == [
        ("c1", 1, 1, "user:1"), ("c1", 4, 4, "assistant:4.0"), ("c1", 5, 5, "user:5")]
    assert rows(path, """SELECT s.name, r.verb, o.name, r.holds FROM relation_statements r
                         JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id ORDER BY r.id""") == [
        ("auth-service", "runs_on", "prod-k8s", 1)]
    assert rows(path, "SELECT conversation, last_message_id FROM progress") == [("c1", 7)]
    (run,) = rows(path, "SELECT trigger, writer, status, summary FROM runs")
    assert run[:3] == ("now", "offline", "ok") and json.loads(run[3])["cards_written"] == 3
    # A second run over unchanged transcripts writes nothing.
    s2 = consolidate_agent(reverie_home, "demo", writer="offline", redactor=FakeRedactor())
    assert (s2["conversations"], s2["passages"], s2["cards_written"], s2["backlog"]) == (0, 0, 0, False)
    assert len(rows(path, "SELECT id FROM cards")) == 3 and len(rows(path, "SELECT id FROM runs")) == 2


def test_newest_conversation_first_and_passage_budget_leaves_backlog(reverie_home):
    path = make_agent(reverie_home, "demo", {"old": RULES, "new": RULES[:4]})
    from reverie.consolidate import settings

    settings.set_value(reverie_home, "consolidate.max_passages", 3)
    s = consolidate_agent(reverie_home, "demo", writer="offline", redactor=FakeRedactor())
    assert s["backlog"] is True and s["budget_exhausted"] == ["passages"]
    assert rows(path, "SELECT conversation FROM progress") == [("new",)]
    # The offline writer's stretches are single exchanges: the budget stops "old" after its first
    # three passages (exchanges 1 and 3), and the next run finishes it.
    s = consolidate_agent(reverie_home, "demo", writer="offline", redactor=FakeRedactor())
    assert rows(path, "SELECT conversation, last_message_id FROM progress ORDER BY conversation") == [("new", 11), ("old", 4)]
    assert s["backlog"] is True
    s = consolidate_agent(reverie_home, "demo", writer="offline", redactor=FakeRedactor())
    assert rows(path, "SELECT conversation, last_message_id FROM progress ORDER BY conversation") == [("new", 11), ("old", 7)]
    assert s["backlog"] is False


class ScriptedWriter:
    """A model-backed writer whose results are scripted per call."""

    name = "scripted"
    model_backed = True

    def __init__(self, script):
        self.script = list(script)
        self.requests = []

    def estimate_cost(self, request):
        return 0.0

    def write_many(self, requests, budget):
        return sequential(self, requests, budget)

    def write_one(self, request, budget=None):
        self.requests.append(request)
        return self.script.pop(0)(request)


def _card(statement, label="P1", quote=None, category="fact"):
    return CardDraft(statement=statement, category=category, evidence=[label], quote=quote or statement)


def test_faults_keep_progress_and_are_recorded(reverie_home):
    path = make_agent(reverie_home, "demo", {"c1": RULES})
    w = ScriptedWriter([lambda r: WriteResult(r.id, error=WriteError("malformed", "response is not JSON"), calls=1)])
    s = consolidate_agent(reverie_home, "demo", writer=w, redactor=FakeRedactor())
    assert s["backlog"] is True and s["cards_written"] == 0 and s["calls"] == 1
    assert s["errors"] == [{"conversation": "c1", "segment": 0, "kind": "malformed", "message": "response is not JSON"}]
    # progress did not move (last_message_id 0); the failed attempt is counted against the stretch
    assert rows(path, "SELECT conversation, last_message_id, attempts, last_error, trust_message_id FROM progress") == [
        ("c1", 0, 1, "malformed: response is not JSON", 0)]
    assert rows(path, "SELECT status FROM runs") == [("partial",)]


def test_verification_rejects_and_counts(reverie_home):
    path = make_agent(reverie_home, "demo", {"c1": RULES})

    def respond(r):
        return WriteResult(r.id, calls=1, cards=[
            _card("Always use pnpm instead of npm in this repo.", quote="always use pnpm instead of npm"),
            _card("The user said the token is sk-abcdefghijklmnop.", quote="always use pnpm"),
            _card("Deploys go through ArgoCD on the blue cluster.", quote="always use pnpm"),
        ])
    s = consolidate_agent(reverie_home, "demo", writer=ScriptedWriter([respond]), redactor=FakeRedactor())
    assert s["cards_written"] == 1
    assert s["cards_rejected"] == {"narration": 1, "unsupported": 1}
    s_cards = rows(path, "SELECT statement FROM cards")
    assert s_cards == [("Always use pnpm instead of npm in this repo.",)]


def test_verification_reasons(reverie_home):
    from reverie.consolidate.classify import classify
    from reverie.consolidate.passages import Passage
    from reverie.consolidate.verify import verify
    from reverie.consolidate.writers.base import Candidate, WriteRequest

    cands = []
    for i, t in enumerate(["From now on, always use pnpm instead of npm in this repo."] * 9):
        p = Passage(key=f"user:{i}", kind="user", text=t, conversation="c", message_id=i, timestamp="")
        cands.append(Candidate(f"P{i + 1}", p, classify(p)))
    req = WriteRequest("c:0", "demo", "c", cands)
    drafts = [
        _card("Always use pnpm instead of npm in this repo.", quote="always use pnpm instead of npm"),
        _card("Always use pnpm instead of npm in this repo.", quote="always use pnpm instead of npm"),
        _card("Use pnpm because of token sk-abcdefghijklmnop here.", quote="always use pnpm"),
        _card("Deploys go through ArgoCD on the blue cluster.", quote="always use pnpm"),
        _card("The user said to use pnpm in this repo.", quote="always use pnpm"),
        _card("Use pnpm instead of npm in this repo.", label="P42"),
        _card("Use pnpm rather than npm in this repo always.", quote="something the passage never said"),
    ]
    v = verify(drafts, req, redactor=FakeRedactor(), model_backed=True)
    assert [a.draft.statement for a in v.accepted] == ["Always use pnpm instead of npm in this repo."]
    assert v.rejected == {"duplicate": 1, "secret": 1, "unsupported": 1, "narration": 1, "missing_evidence": 1,
                          "quote_not_found": 1}


KILL_CHILD = textwrap.dedent('''
    import sys, time, types, re
    from pathlib import Path
    from reverie.consolidate.pipeline import consolidate_agent
    from reverie.consolidate.writers.offline import OfflineWriter

    class Red:
        def redact(self, text):
            return types.SimpleNamespace(text=text, findings=[])

    class Slow(OfflineWriter):
        def write_one(self, request, budget=None):
            marker = Path(sys.argv[2])
            n = int(marker.read_text() or 0) if marker.exists() else 0
            marker.write_text(str(n + 1))
            if sys.argv[3] == "slow" and n >= 2:
                time.sleep(60)
            return super().write_one(request, budget)

    consolidate_agent(Path(sys.argv[1]), "demo", writer=Slow(), redactor=Red())
''')


def test_killed_run_resumes_without_duplicates_or_gaps(reverie_home, tmp_path):
    turns = []
    for i in range(40):
        turns.append(("user", f"Remember that service-{i:02d} always runs on host-{i:02d} because of rack {i} capacity."))
        turns.append(("assistant", "Noted."))
    path = make_agent(reverie_home, "demo", {"c1": turns})
    script = tmp_path / "child.py"
    script.write_text(KILL_CHILD)
    marker = tmp_path / "calls"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(script), str(reverie_home), str(marker), "slow"], env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (marker.exists() and marker.read_text() == "3"):
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert marker.read_text() == "3"
    done = rows(path, "SELECT last_message_id FROM progress")
    first = rows(path, "SELECT statement FROM cards ORDER BY id")
    # Two stretches (one exchange each for the offline writer) committed, the third was killed.
    assert done and 0 < done[0][0] < 80 and len(first) == 2
    subprocess.run([sys.executable, str(script), str(reverie_home), str(tmp_path / "calls2"), "fast"], env=env,
                   check=True, timeout=120)
    statements = [r[0] for r in rows(path, "SELECT statement FROM cards ORDER BY id")]
    assert len(statements) == len(set(statements))
    # Same cards as one uninterrupted run over a fresh copy of the transcripts.
    fresh = tmp_path / "fresh-home"
    make_agent(fresh, "demo", {"c1": turns})
    subprocess.run([sys.executable, str(script), str(fresh), str(tmp_path / "calls3"), "fast"], env=env,
                   check=True, timeout=120)
    assert statements == [r[0] for r in rows(fresh / "agents" / "demo" / "agent.db", "SELECT statement FROM cards ORDER BY id")]
    evidence = sorted(r[0] for r in rows(path, "SELECT message_from FROM evidence"))
    assert evidence == sorted(r[0] for r in rows(fresh / "agents" / "demo" / "agent.db", "SELECT message_from FROM evidence"))
    assert rows(path, "SELECT last_message_id FROM progress") == [(80,)]


def test_a_card_drawn_from_an_answer_cites_the_question_it_answers():
    from types import SimpleNamespace

    from reverie.consolidate.pipeline import _evidence_start

    answer = SimpleNamespace(message_id=12, context_id=11, context="Melanie: How was the camping trip last weekend?")
    alone = SimpleNamespace(message_id=12, context_id=0, context="")
    assert [
        _evidence_start("Caroline's camping trip last weekend was great: they saw the meteor shower.", answer),
        _evidence_start("Caroline adopted a second dog named Oscar.", answer),   # does not draw on the question
        _evidence_start("Caroline's camping trip was great.", alone),
    ] == [11, 12, 12]


def test_a_model_writer_gets_the_final_answer_of_each_exchange_it_writes_from(reverie_home):
    """Issue 13: a model writer sees whole exchanges: the user's turn and the agent's final answer,
    here not a candidate itself (`WriteRequest.answers`); the offline writer needs no such context."""
    answer = ("I went through the deploy scripts and the pipeline files in the repository one by one, "
              "and switched every install step over to the new package manager as you asked.")
    make_agent(reverie_home, "demo", {"c1": [
        ("user", "From now on, always use pnpm instead of npm in this repo."),
        ("assistant", "Let me look at the scripts first."),
        ("assistant", answer),
    ]})
    w = ScriptedWriter([lambda r: WriteResult(r.id, cards=[], calls=1)])
    consolidate_agent(reverie_home, "demo", writer=w, redactor=FakeRedactor())
    (req,) = w.requests
    assert [(c.label, c.passage.key) for c in req.candidates] == [("P1", "user:1")]
    assert req.answers == {1: answer}
