"""The consolidation pipeline: index -> passages -> classify -> write cards -> verify -> graph.

`consolidate_agent(home, agent_id, *, writer=None, trigger="now", now=None) -> dict` runs one agent
under its lock and returns the summary of issue 4::

    {"agent", "conversations", "passages", "candidates", "calls", "cards_written",
     "cards_rejected": {reason: n}, "cost_usd", "backlog": bool, "errors": [...]}

plus detail keys (`run_id`, `writer`, `tokens`, `merge`, `skipped`, `budget_exhausted`).

Order and progress:

* conversations with messages past their progress mark, newest first (`conversations.last_at`);
* each conversation's new messages are read back from the index (already redacted: every text was
  redacted before it was stored, so nothing unredacted is read or sent) and cut into passages;
* passages are grouped into stretches of whole exchanges (`SEGMENT_CANDIDATES` (9) candidates or
  `SEGMENT_PASSAGES` passages close a stretch at the next user turn; `SEGMENT_HARD_CANDIDATES` (15) close
  it at the next message), one writer call per stretch that has candidates; a writer with
  `call_per_exchange` (the offline writer: no model call to save) gets one call per exchange that
  has a candidate, so its card cap applies per exchange;
* a stretch's cards and the conversation's progress (`progress.last_message_id` = the last message
  of the stretch) are written in ONE transaction, so progress never moves past an exchange whose
  cards were not written, and a killed run resumes with neither duplicates nor gaps;
* a stretch whose writer call failed (transient fault, malformed output, budget) stops that
  conversation for this run (`backlog: true`); transient faults and spent budgets stop the run.

Writers: `--writer` > settings `writer` > offline. The anthropic writer uses Message Batches when
settings `anthropic.use_batches` is on and the run is not interactive (trigger other than "now").
After a successful run the recall log is folded into access counts when the graph provides it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from . import settings as settings_mod
from .budget import Budget, RetryPolicy
from .classify import Judgement, classify
from .errors import AgentBusy, ReverieError, UnknownAgent
from .passages import Passage, cut_passages, load_messages
from .paths import agent_db_path, agent_dir, agents_dir, recall_log_path, secrets_dir

log = logging.getLogger(__name__)

SEGMENT_CANDIDATES = 9
SEGMENT_PASSAGES = 60
SEGMENT_HARD_CANDIDATES = 15
WRITERS = ("offline", "anthropic", "claude-cli")


# ---------------------------------------------------------------------------------------------
# Writers

def make_writer(name: str | None, settings: dict[str, Any], *, trigger: str = "now") -> Any:
    """The writer named by `name` (or settings `writer`); raises a ReverieError naming the fix."""
    name = name or settings.get("writer") or "offline"
    if name == "offline":
        from .writers.offline import OfflineWriter

        return OfflineWriter()
    if name == "anthropic":
        from .writers.anthropic_writer import AnthropicWriter, api_key_from

        api_key_from(settings)  # NoApiKey before the heavy import
        batches = bool((settings.get("anthropic") or {}).get("use_batches")) and trigger != "now"
        return AnthropicWriter.from_settings(settings, batches=batches, retry=_retry_policy(settings))
    if name == "claude-cli":
        from .writers.claude_cli import ClaudeCliWriter

        return ClaudeCliWriter.from_settings(settings, retry=_retry_policy(settings))
    raise ReverieError(f"Unknown writer {name!r}: use one of {', '.join(WRITERS)}.")


def _retry_policy(settings: dict[str, Any]) -> RetryPolicy:
    r = (settings.get("consolidate") or {}).get("retry") or {}
    return RetryPolicy(attempts=int(r.get("attempts", 3)), base_delay_s=float(r.get("base_delay_s", 1.0)),
                       max_delay_s=float(r.get("max_delay_s", 30.0)))


# ---------------------------------------------------------------------------------------------
# Planning

@dataclass
class Segment:
    conversation: str
    index: int
    passages: list[Passage]
    judgements: list[Judgement]
    end_id: int                      # progress after this stretch: every message <= end_id is done
    request: Any = None              # WriteRequest when it has candidates


def _is_candidate(j: Judgement, threshold: float) -> bool:
    return j.category != "none" and j.keep >= threshold


def plan_conversation(conversation: str, passages: list[Passage], judgements: list[Judgement],
                      last_id: int, threshold: float, *, per_exchange: bool = False) -> list[Segment]:
    """Group a conversation's new passages into stretches of whole exchanges (see module doc).
    `per_exchange` (writers with `call_per_exchange`, the offline one): a stretch that has a
    candidate also closes at the next user turn, so each call is one exchange (a user turn and its
    answer) and the card cap applies per exchange."""
    segments: list[Segment] = []
    cur_p: list[Passage] = []
    cur_j: list[Judgement] = []
    n_cand = 0

    def close(end_id: int) -> None:
        nonlocal cur_p, cur_j, n_cand
        segments.append(Segment(conversation, len(segments), cur_p, cur_j, end_id))
        cur_p, cur_j, n_cand = [], [], 0

    for p, j in zip(passages, judgements):
        if cur_p and p.message_id != cur_p[-1].message_id:
            boundary = p.kind == "user"
            if (boundary and (n_cand >= (1 if per_exchange else SEGMENT_CANDIDATES)
                              or len(cur_p) >= SEGMENT_PASSAGES)) or n_cand >= SEGMENT_HARD_CANDIDATES:
                close(p.message_id - 1)
        cur_p.append(p)
        cur_j.append(j)
        if _is_candidate(j, threshold):
            n_cand += 1
    if cur_p or not segments:
        close(last_id)
    else:
        segments[-1].end_id = last_id
    return segments


# ---------------------------------------------------------------------------------------------
# Store access (progress and runs live in the graph schema; consolidation owns their rows)

def _now_iso(now: Optional[_dt.datetime]) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    if now.tzinfo is None:
        now = now.replace(tzinfo=_dt.timezone.utc)
    return now.astimezone(_dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def pending_conversations(conn) -> list[tuple[str, int]]:
    """(conversation, progress) of conversations with messages past their progress, newest first."""
    return [(r[0], r[1]) for r in conn.execute(
        """SELECT c.id, COALESCE(p.last_message_id, 0) AS done
           FROM conversations c LEFT JOIN progress p ON p.conversation = c.id
           WHERE EXISTS (SELECT 1 FROM messages m WHERE m.conversation = c.id
                         AND m.id > COALESCE(p.last_message_id, 0))
           ORDER BY COALESCE(c.last_at, '') DESC, c.id""")]


def _last_message_id(conn, conversation: str) -> int:
    row = conn.execute("SELECT MAX(id) FROM messages WHERE conversation = ?", (conversation,)).fetchone()
    return int(row[0] or 0)


def _save_progress(conn, conversation: str, last_id: int, at: str) -> None:
    conn.execute(
        """INSERT INTO progress(conversation, last_message_id, updated_at) VALUES (?, ?, ?)
           ON CONFLICT(conversation) DO UPDATE SET last_message_id = MAX(last_message_id, excluded.last_message_id),
           updated_at = excluded.updated_at""",
        (conversation, last_id, at))


def _start_run(conn, trigger: str, writer: str, at: str) -> int:
    with conn:
        cur = conn.execute("INSERT INTO runs(trigger, writer, started_at, status, summary) VALUES (?, ?, ?, 'running', '{}')",
                           (trigger, writer, at))
    return int(cur.lastrowid)


def _finish_run(conn, run_id: int, status: str, summary: dict, at: str) -> None:
    with conn:
        conn.execute("UPDATE runs SET finished_at = ?, status = ?, summary = ? WHERE id = ?",
                     (at, status, json.dumps(summary, sort_keys=True, default=str), run_id))


# ---------------------------------------------------------------------------------------------
# Cards

def source_key(conversation: str, keys: list[str]) -> str:
    return hashlib.sha256((conversation + "\n" + "\n".join(sorted(keys))).encode()).hexdigest()[:24]


def to_new_card(verified, conversation: str, writer_name: str, now_iso: str):
    """A verified draft as the graph's NewCard (evidence = the cited passages' messages)."""
    from graph.model import EntityRef, Evidence, NewCard, RelationRef

    draft = verified.draft
    cited = sorted(verified.candidates, key=lambda c: c.passage.message_id)
    stamps = [c.passage.timestamp for c in cited if c.passage.timestamp]
    said_at = min(stamps) if stamps else now_iso
    confidence = max(c.judgement.confidence for c in cited)
    if draft.category == "correction":
        confidence = max(confidence, 0.9)
    return NewCard(
        statement=draft.statement.strip(),
        category=draft.category,
        confidence=confidence,
        session=conversation,
        said_at=said_at,
        importance=int(draft.importance),
        entities=[EntityRef(e.name, e.type) for e in draft.entities],
        relations=[RelationRef(r.subject, r.verb, r.object, r.holds) for r in draft.relations],
        evidence=[Evidence(conversation, c.passage.message_id, c.passage.message_id,
                           c.passage.timestamp or said_at, c.passage.key) for c in cited],
        writer=writer_name,
        source_key=source_key(conversation, [c.passage.key for c in cited]),
    )


def _graph_merge() -> tuple[Callable, Callable | None]:
    from graph.merge import known_entities, merge_card

    return merge_card, known_entities


class _LazyEmbedder:
    """The embedder of settings `embedding_model` (graph.embed.load_embedder: model2vec when the
    model loads, else the lexical fallback with its reason), loaded at the first card to merge so
    a run with nothing to write never loads a model. Every merge of a run uses the same one, and
    recall reads the vectors only when they are its embedder's (graph_meta 'embedder')."""

    def __init__(self, setting: Any) -> None:
        self.setting = setting
        self.embedder: Any = None

    def get(self) -> Any:
        if self.embedder is None:
            from graph.embed import load_embedder

            self.embedder = load_embedder(self.setting)
            if self.setting and self.embedder.fallback_reason:
                log.warning("embedding: %s; cards get lexical vectors", self.embedder.fallback_reason)
        return self.embedder

    def describe(self) -> dict | None:
        return self.embedder.describe() if self.embedder is not None else None


def _known(known_fn, db) -> dict[str, str]:
    if known_fn is None:
        return {}
    try:
        raw = known_fn(db)
    except Exception:  # noqa: BLE001 - the graph's lookup must not stop consolidation
        log.warning("known_entities failed", exc_info=True)
        return {}
    out: dict[str, str] = {}
    items = raw.items() if isinstance(raw, dict) else raw
    for item in items or []:
        if isinstance(item, tuple) and len(item) == 2:
            name, typ = item
        elif isinstance(item, dict):
            name, typ = item.get("name"), item.get("type", "other")
        elif isinstance(item, str):
            name, typ = item, "other"
        else:
            name, typ = getattr(item, "name", None), getattr(item, "type", "other")
        if isinstance(typ, dict):
            typ = typ.get("type", "other")
        if name and len(str(name)) >= 3:
            out[str(name).lower()] = str(typ or "other")
    return out


def _transaction(db):
    """One atomic unit for a stretch's cards and its progress row: the graph's transaction (BEGIN
    IMMEDIATE; merges inside nest as savepoints), else the connection's own context manager."""
    try:
        from graph.store import transaction
    except ImportError:
        return db.conn
    return transaction(db)


def _fold_recall_log(home: Path, agent_id: str, db, now) -> Optional[dict]:
    """After a good run: the graph's lifecycle upkeep (fold memory-recalls.jsonl into access counts,
    then fade), `graph.lifecycle.maintain`; else its `fold_recall_log`; None when neither exists."""
    try:
        from graph import lifecycle
    except ImportError:
        return None
    log_path = recall_log_path(home, agent_id)
    if callable(getattr(lifecycle, "maintain", None)):
        return lifecycle.maintain(db, now=now, recall_log=log_path)
    if callable(getattr(lifecycle, "fold_recall_log", None)):
        return lifecycle.fold_recall_log(db, log_path, now=now)
    return None


# ---------------------------------------------------------------------------------------------
# The run

@dataclass
class _Acc:
    conversations: set = field(default_factory=set)
    candidates: int = 0
    cards_written: int = 0
    rejected: dict = field(default_factory=dict)
    merge: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)
    relations_dropped: int = 0

    def add(self, d: dict, k: str, n: int = 1) -> None:
        d[k] = d.get(k, 0) + n


def _lock(home: Path, agent_id: str):
    from schedules.lock import AgentLock

    return AgentLock(agent_dir(home, agent_id) / "lock", owner="consolidate")


def consolidate_agent(home: Path, agent_id: str, *, writer: Any = None, trigger: str = "now",
                      now: Optional[_dt.datetime] = None, progress: Optional[Callable[[str, int, int], None]] = None,
                      redactor: Any = None, settings: Optional[dict] = None) -> dict:
    """Consolidate one agent (under its lock); see the module docstring. Never raises for model
    faults; raises UnknownAgent, AgentBusy, NoApiKey and other ReverieErrors that name their fix.
    `progress(stage, done, total)` is called as stretches complete (for a progress bar)."""
    home = Path(home)
    db_path = agent_db_path(home, agent_id)
    if not db_path.exists():
        raise UnknownAgent(f"Unknown agent {agent_id!r}: run `reverie index` first, then `reverie agents` to list agents.")
    settings = settings if settings is not None else settings_mod.load_settings(home)
    w = writer if (writer is not None and not isinstance(writer, str)) else make_writer(writer, settings, trigger=trigger)
    from schedules.lock import Busy

    try:
        with _lock(home, agent_id):
            return _run(home, agent_id, w, trigger, now, settings, progress, redactor, db_path)
    except Busy as exc:
        raise AgentBusy(f"Agent {agent_id!r} is being consolidated by another process ({exc}); try again when it finishes.") from None


def _run(home: Path, agent_id: str, writer: Any, trigger: str, now: Optional[_dt.datetime], settings: dict,
         progress, redactor, db_path: Path) -> dict:
    from .store import open_db
    from .verify import verify

    now_iso = _now_iso(now)
    cfg = settings.get("consolidate") or {}
    threshold = float(cfg.get("keep_threshold", 0.5))
    budget = Budget.from_settings(settings)
    db = open_db(db_path)
    conn = db.conn
    run_id = _start_run(conn, trigger, writer.name, now_iso)
    acc = _Acc()
    merge_card, known_fn = _graph_merge()
    embedder = _LazyEmbedder(settings.get("embedding_model"))
    known = _known(known_fn, db)
    red = {"obj": redactor}

    def get_redactor():
        if red["obj"] is None:
            from .index import load_redactor

            red["obj"] = load_redactor(home)
        return red["obj"]

    backlog = False
    status = "ok"
    try:
        # 1. Plan: passages, judgements and stretches, newest conversation first, within budget.
        plan: list[Segment] = []
        pending = pending_conversations(conn)
        stop_planning = False
        for conversation, done in pending:
            if stop_planning:
                backlog = True
                break
            last_id = _last_message_id(conn, conversation)
            msgs = load_messages(db, conversation, after_id=done)
            cut = cut_passages(conversation, msgs, after_id=done)
            for k, v in cut.skipped.items():
                acc.add(acc.skipped, k, v)
            judgements = [classify(p, known=known) for p in cut.passages]
            segments = plan_conversation(conversation, cut.passages, judgements, last_id, threshold,
                                         per_exchange=bool(getattr(writer, "call_per_exchange", False)))
            calls_planned = sum(1 for s in plan if s.request is not None)
            for seg in segments:
                cands = [(p, j) for p, j in zip(seg.passages, seg.judgements) if _is_candidate(j, threshold)]
                needs_call = bool(cands) and writer.model_backed
                if needs_call and calls_planned >= budget.max_calls:
                    budget._mark("calls")
                    stop_planning = True
                if stop_planning or not budget.take_passages(len(seg.passages)):
                    stop_planning = True
                    backlog = True
                    break
                if cands:
                    from .writers.base import Candidate, WriteRequest

                    seg.request = WriteRequest(
                        id=f"{conversation}:{seg.index}", agent=agent_id, conversation=conversation,
                        candidates=[Candidate(f"P{i + 1}", p, j) for i, (p, j) in enumerate(cands)],
                        known_entities=known)
                    calls_planned += 1 if writer.model_backed else 0
                    acc.candidates += len(cands)
                plan.append(seg)

        # 2. Write, verify, merge: one transaction per stretch with the conversation's progress.
        requests = [s.request for s in plan if s.request is not None]
        batch_mode = bool(getattr(writer, "use_batches", False)) and len(requests) > 1
        results: dict[str, Any] = {}
        if batch_mode:
            for res in writer.write_many(requests, budget):
                results[res.request_id] = res
        blocked: set[str] = set()
        stopped: Optional[str] = None
        total = len(plan)
        for n, seg in enumerate(plan, 1):
            conv = seg.conversation
            if conv in blocked:
                continue
            result = None
            if seg.request is not None:
                if batch_mode:
                    result = results.get(seg.request.id)
                elif stopped is None:
                    result = next(iter(writer.write_many([seg.request], budget)))
                if result is None or (stopped is not None and not batch_mode):
                    blocked.add(conv)
                    backlog = True
                    continue
                if result.error is not None:
                    err = result.error
                    acc.errors.append({"conversation": conv, "segment": seg.index, "kind": err.kind,
                                       "message": err.message})
                    blocked.add(conv)
                    backlog = True
                    if err.kind in ("transient", "budget") and not batch_mode:
                        stopped = err.kind
                    continue
            cards = []
            if result is not None and result.cards:
                verdict = verify(result.cards, seg.request, redactor=get_redactor(), model_backed=writer.model_backed)
                for reason, k in verdict.rejected.items():
                    acc.add(acc.rejected, reason, k)
                acc.relations_dropped += verdict.relations_dropped
                cards = [to_new_card(v, conv, writer.name, now_iso) for v in verdict.accepted]
            with _transaction(db):
                for card in cards:
                    res = merge_card(db, card, now=now or _dt.datetime.now(_dt.timezone.utc),
                                     embedder=embedder.get())
                    action = getattr(res, "action", "stored")
                    acc.add(acc.merge, action)
                    if action in ("rejected", "forgotten"):
                        acc.add(acc.rejected, "graph_" + action)
                    else:
                        acc.cards_written += 1
                _save_progress(conn, conv, seg.end_id, now_iso)
            acc.conversations.add(conv)
            if progress:
                progress("write", n, total)
        if stopped:
            backlog = True
        status = "partial" if (backlog or acc.errors) else "ok"
    except Exception as exc:  # noqa: BLE001 - recorded in the run, then re-raised
        status = "failed"
        acc.errors.append({"kind": "crash", "message": f"{type(exc).__name__}"})
        summary = _summary(agent_id, writer, acc, budget, True, run_id)
        _finish_run(conn, run_id, status, summary, _now_iso(None))
        db.close()
        raise
    # Anything left past the plan (budgets) is backlog too.
    if not backlog and pending_conversations(conn):
        backlog = True
        status = "partial" if status == "ok" else status
    folded = None
    if status != "failed":
        try:
            folded = _fold_recall_log(home, agent_id, db, now or _dt.datetime.now(_dt.timezone.utc))
        except Exception as exc:  # noqa: BLE001 - the fold must not undo a good run
            log.warning("recall log fold failed", exc_info=True)
            acc.errors.append({"kind": "recall_fold", "message": type(exc).__name__})
    trust_summary = None
    if status != "failed":
        try:
            trust_summary = _trust_stage(home, agent_id, db, plan, acc, run_id,
                                         now or _dt.datetime.now(_dt.timezone.utc), settings)
        except Exception as exc:  # noqa: BLE001 - trust bookkeeping must not undo a good run
            log.warning("trust stage failed", exc_info=True)
            acc.errors.append({"kind": "trust", "message": type(exc).__name__})
    summary = _summary(agent_id, writer, acc, budget, backlog, run_id)
    summary["recall_fold"] = folded
    summary["trust"] = trust_summary
    summary["embedder"] = embedder.describe()
    _finish_run(conn, run_id, status, summary, _now_iso(None))
    db.close()
    return summary


def _trust_stage(home: Path, agent_id: str, db, plan: list, acc: "_Acc", run_id: int, now: _dt.datetime,
                 settings: dict) -> dict:
    """Issue 8 at the end of a run: detected feedback (recall log x this run's turns), one episode
    per consolidated session, the trust pass (decay, maturity, anti-patterns, flags) and the
    episodes' decay, pruning and recall reinforcement. Idempotent per run."""
    from graph import episodes, feedback_detect, trust

    sessions = sorted(acc.conversations)
    half_life = float(settings_mod.get(settings, "feedback.half_life_days", 90) or 90)
    events, bad_lines = feedback_detect.read_recall_log(recall_log_path(home, agent_id))
    turns = [
        feedback_detect.Turn(p.conversation, p.timestamp, p.text,
                             bool(j.correction) if p.kind == "user" else False, p.kind)
        for seg in plan if seg.conversation in acc.conversations
        for p, j in zip(seg.passages, seg.judgements) if p.kind in ("user", "assistant")
    ]
    detected = feedback_detect.detect_and_record(db, events, turns, sessions=sessions)
    detected["bad_log_lines"] = bad_lines
    conn = db.conn
    for conv in sessions:
        first = next((p.text for p in cut_passages(conv, load_messages(db, conv)).passages if p.kind == "user"), "")
        row = conn.execute("SELECT first_at FROM conversations WHERE id = ?", (conv,)).fetchone()
        summary = episodes.summarize_offline(first, episodes.session_card_statements(db, conv))
        episodes.record_episode(db, conv, (row[0] if row else None) or now.isoformat(), summary, now=now)
    conn.commit()
    passed = trust.consolidation_pass(db, run_key=f"run:{run_id}", sessions=sessions, now=now,
                                      half_life_days=half_life)
    decay = episodes.apply_decay(db, now=now)
    boosted = episodes.fold_recall_events(db, events)
    return {"feedback": detected, "pass": passed, "episodes": {"decayed": decay["decayed"],
            "pruned": len(decay["pruned"]) + len(decay["capped"]), "recalled": boosted}}


def _summary(agent_id: str, writer: Any, acc: _Acc, budget: Budget, backlog: bool, run_id: int) -> dict:
    totals = budget.totals()
    return {
        "agent": agent_id,
        "conversations": len(acc.conversations),
        "passages": budget.passages,
        "candidates": acc.candidates,
        "calls": budget.calls,
        "cards_written": acc.cards_written,
        "cards_rejected": dict(sorted(acc.rejected.items())),
        "cost_usd": totals["cost_usd"],
        "backlog": bool(backlog),
        "errors": acc.errors,
        "run_id": run_id,
        "writer": writer.name,
        "tokens": totals["tokens"],
        "merge": acc.merge,
        "relations_dropped": acc.relations_dropped,
        "skipped": dict(sorted(acc.skipped.items())),
        "budget_exhausted": totals["budget_exhausted"],
    }


def list_agent_ids(home: Path) -> list[str]:
    """Agents of the home that have a db, enabled ones only (settings agents.disabled)."""
    home = Path(home)
    try:
        from .agents import list_agents

        ids = [a["id"] for a in list_agents(home)]
    except Exception:  # noqa: BLE001 - fall back to the folders
        ids = []
    root = agents_dir(home)
    if root.exists():
        ids += [p.name for p in sorted(root.iterdir()) if (p / "agent.db").exists()]
    disabled = set((settings_mod.load_settings(home).get("agents") or {}).get("disabled") or [])
    out = []
    for i in ids:
        if i not in out and i not in disabled and agent_db_path(home, i).exists():
            out.append(i)
    return out


def consolidate_all(home: Path, *, writer: Any = None, trigger: str = "now", now: Optional[_dt.datetime] = None,
                    progress: Optional[Callable[[str, int, int], None]] = None) -> list[dict]:
    """Consolidate every enabled agent in turn; a busy or failing agent is reported, not fatal."""
    out = []
    for agent_id in list_agent_ids(home):
        try:
            out.append(consolidate_agent(home, agent_id, writer=writer, trigger=trigger, now=now,
                                         progress=progress))
        except ReverieError as exc:
            if isinstance(exc, (UnknownAgent,)) or exc.__class__.__name__ == "NoApiKey":
                raise
            out.append({"agent": agent_id, "conversations": 0, "passages": 0, "candidates": 0, "calls": 0,
                        "cards_written": 0, "cards_rejected": {}, "cost_usd": 0.0, "backlog": True,
                        "errors": [{"kind": "agent", "message": str(exc)}]})
    return out
