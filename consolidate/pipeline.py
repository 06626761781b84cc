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
  conversation for this run (`backlog: true`); transient faults and spent budgets stop the run;
* faults of the account or its configuration (writer error kinds `auth` and `account`: key refused,
  credit balance too low, usage limit reached, unknown model) end the run at once with status
  `failed`: nothing more is sent, no stretch counts an attempt or is given up, progress does not
  move, and the error names the fix (an `account` error keeps the provider's reason, redacted).
  `auth` raises ApiAuthFailed after the run is recorded; `account` returns the summary with
  `failed: true`.

Writers: `--writer` > settings `writer` (default `auto`: claude-cli when `claude` is on PATH and
logged in, else anthropic when a key is set, else offline; writers.select); the summary's
`writer_reason` says why the writer ran. The anthropic writer uses Message Batches when
settings `anthropic.use_batches` is on and the run is not interactive (trigger other than "now").
After a successful run the recall log is folded into access counts when the graph provides it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from . import settings as settings_mod
from .budget import Budget, RetryPolicy
from .classify import Judgement, classify
from .errors import AgentBusy, AgentDbUnreadable, ApiAuthFailed, NoApiKey, ReverieError, UnknownAgent, is_busy
from .passages import Passage, cut_at, cut_passages, final_answers, load_messages
from .paths import agent_db_path, agent_dir, recall_log_path
from .progress import (_finish_run, _now_iso, _record_attempt, _save_progress, _start_run,
                       pending_conversations, trust_pending)

log = logging.getLogger(__name__)

SEGMENT_CANDIDATES = 9
SEGMENT_PASSAGES = 60
SEGMENT_HARD_CANDIDATES = 15
MAX_STRETCH_ATTEMPTS = 3         # settings consolidate.max_stretch_attempts
# Writer faults that belong to the stretch (its content), counted against its attempts; transient,
# budget, auth and account faults belong to the run (writers.base.RUN_FAULTS) and never count.
STRETCH_FAULTS = ("malformed", "schema", "refusal", "max_tokens", "failed", "crash")
# Run faults that end the run at once: every further call would fail the same way.
ACCOUNT_FAULTS = ("auth", "account")
WRITERS = ("offline", "anthropic", "claude-cli")


# ---------------------------------------------------------------------------------------------
# Writers

def make_writer(name: str | None, settings: dict[str, Any], *, trigger: str = "now",
                home: Optional[Path] = None) -> Any:
    """The writer named by `name` (or settings `writer`, default `auto`: writers.select.choose);
    raises a ReverieError naming the fix. The writer's `selected_because` says why it runs."""
    name = name or settings.get("writer") or "auto"
    reason = "--writer or settings `writer`"
    if name == "auto":
        from .writers.select import choose

        name, reason = choose(settings, home=home)
        reason = f"auto: {reason}"
    writer = _build_writer(name, settings, trigger=trigger, home=home)
    writer.selected_because = reason
    return writer


def _build_writer(name: str, settings: dict[str, Any], *, trigger: str, home: Optional[Path]) -> Any:
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

        return ClaudeCliWriter.from_settings(settings, retry=_retry_policy(settings), home=home)
    raise ReverieError(f"Unknown writer {name!r}: use one of auto, {', '.join(WRITERS)}.")


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


def _judge(passage: Passage, known: dict[str, str], acc: "_Acc") -> Judgement:
    """`classify`, except that a passage the classifier fails on is judged worth nothing and
    counted (`skipped.classify_error`): one bad passage never stops its conversation."""
    try:
        return classify(passage, known=known)
    except Exception:  # noqa: BLE001 - see the docstring
        log.warning("classifier failed on passage %s", passage.key, exc_info=True)
        acc.add(acc.skipped, "classify_error")
        return Judgement(keep=0.0, category="none", importance=0, correction=False, confidence=0.0)


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
        # stretches close between the messages the passages were cut at (`cut_at`): a write's
        # passage names the call's message but is cut at its result, after the calls made since
        if cur_p and cut_at(p) != cut_at(cur_p[-1]):
            boundary = p.kind == "user"
            if (boundary and (n_cand >= (1 if per_exchange else SEGMENT_CANDIDATES)
                              or len(cur_p) >= SEGMENT_PASSAGES)) or n_cand >= SEGMENT_HARD_CANDIDATES:
                close(cut_at(p) - 1)
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

# ---------------------------------------------------------------------------------------------
# Cards

def source_key(conversation: str, keys: list[str]) -> str:
    return hashlib.sha256((conversation + "\n" + "\n".join(sorted(keys))).encode()).hexdigest()[:24]


def _evidence_start(statement: str, passage) -> int:
    """First message a card drawn from `passage` cites: the human turn the passage answers (its
    `context_id`) when the statement carries at least two of that turn's content words (the card
    was built from both turns), else the passage's own message."""
    if not passage.context_id or not passage.context:
        return passage.message_id
    from reverie.graph.text import STOPWORDS, words

    said = {w for w in words(statement) if len(w) >= 4 and w not in STOPWORDS}
    asked = {w for w in words(passage.context) if len(w) >= 4 and w not in STOPWORDS}
    return passage.context_id if len(said & asked) >= 2 else passage.message_id


def to_new_card(verified, conversation: str, writer_name: str, now_iso: str):
    """A verified draft as the graph's NewCard (evidence = the cited passages' messages)."""
    from reverie.graph.model import EntityRef, Evidence, NewCard, RelationRef

    draft = verified.draft
    cited = sorted(verified.candidates, key=lambda c: c.passage.message_id)
    from .index_shape import valid_timestamp

    # a stamp that is no real moment (indexed before the index checked them) falls back to the run's time
    stamps = [c.passage.timestamp for c in cited if valid_timestamp(c.passage.timestamp)]
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
        evidence=[Evidence(conversation, _evidence_start(draft.statement, c.passage), c.passage.message_id,
                           c.passage.timestamp if valid_timestamp(c.passage.timestamp) else said_at,
                           c.passage.key) for c in cited],
        writer=writer_name,
        source_key=source_key(conversation, [c.passage.key for c in cited]),
    )


def _known(db) -> dict[str, str]:
    """The agent's entity names (3+ characters, lower-cased) -> type, for the classifier and writers."""
    from reverie.graph.entities import known_entities

    return {name.lower(): typ or "other" for name, typ in known_entities(db) if name and len(name) >= 3}


#: Embedding fallback reasons already warned about in this process.
_WARNED: set[str] = set()


class _LazyEmbedder:
    """The embedder of settings `embedding_model` (graph.embed.load_embedder: model2vec when the
    model loads, else the lexical fallback with its reason), loaded at the first card to merge so
    a run with nothing to write never loads a model. Every merge of a run uses the same one, and
    recall reads the vectors only when they are its embedder's (graph_meta 'embedder'). With
    `home`, a model that loaded also gets the hook's vocabulary cache built now (<home>/cache,
    graph.recall_embed), so the first hook after a download does not spend its deadline on it."""

    def __init__(self, setting: Any, home: Any = None) -> None:
        self.setting = setting
        self.home = home
        self.embedder: Any = None

    def get(self) -> Any:
        if self.embedder is None:
            from reverie.graph.embed import load_embedder

            self.embedder = load_embedder(self.setting, fetch=True)   # a hub model is downloaded once
            reason = self.embedder.fallback_reason
            if self.setting and reason and reason not in _WARNED:   # once per process, not per agent
                _WARNED.add(reason)
                log.warning("embedding: %s; cards and recall use lexical matching (`reverie doctor` names the fix)", reason)
            if self.home is not None and self.embedder.kind == "model2vec":
                from reverie.graph.recall_embed import prompt_embedder

                from .paths import CACHE_DIR, in_home

                lite = prompt_embedder(str(self.setting), in_home(self.home, CACHE_DIR))   # never raises
                if lite is not None and hasattr(lite, "close"):
                    lite.close()
        return self.embedder

    def describe(self) -> dict | None:
        return self.embedder.describe() if self.embedder is not None else None


def _fold_recall_log(home: Path, agent_id: str, db, now) -> dict:
    """After a run: the graph's lifecycle upkeep (fold memory-recalls.jsonl into access counts, then fade)."""
    from reverie.graph.lifecycle import maintain

    return maintain(db, now=now, recall_log=recall_log_path(home, agent_id))


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
    passages_consolidated: int = 0   # passages of stretches whose progress was committed
    skipped_stretches: int = 0       # stretches given up after MAX_STRETCH_ATTEMPTS failures

    def add(self, d: dict, k: str, n: int = 1) -> None:
        d[k] = d.get(k, 0) + n


def _lock(home: Path, agent_id: str):
    from reverie.schedules.lock import LOCK_NAME, AgentLock

    return AgentLock(agent_dir(home, agent_id) / LOCK_NAME, owner="consolidate")


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
    settings = settings if settings is not None else settings_mod.checked_settings(home)
    from .agents import disabled_agents

    if agent_id in disabled_agents(settings):
        raise ReverieError(f"Agent {agent_id!r} is switched off (settings agents.disabled): nothing new is built "
                           f"for it. Switch it on with `reverie settings set agents.disabled '[...]'` "
                           f"(the list without {agent_id!r}).")
    w = (writer if (writer is not None and not isinstance(writer, str))
         else make_writer(writer, settings, trigger=trigger, home=home))
    from reverie.schedules.lock import Busy

    try:
        with _lock(home, agent_id):
            return _run(home, agent_id, w, trigger, now, settings, progress, redactor, db_path)
    except Busy as exc:
        raise AgentBusy(f"Agent {agent_id!r} is being consolidated by another process ({exc}); try again when it finishes.") from None
    except sqlite3.OperationalError as exc:
        if not is_busy(exc):
            raise _unreadable(agent_id, db_path, exc) from None
        raise AgentBusy(f"Agent {agent_id!r}: its database is held by another process ({exc}); try again when it "
                        "finishes (nothing was lost: the next run resumes where this one stopped).") from None
    except sqlite3.DatabaseError as exc:
        raise _unreadable(agent_id, db_path, exc) from None


def _unreadable(agent_id: str, db_path: Path, exc: Exception) -> AgentDbUnreadable:
    return AgentDbUnreadable(
        f"Agent {agent_id!r}: its database {db_path} cannot be used ({type(exc).__name__}: {exc}). "
        "Run `reverie doctor` to check it; a damaged agent.db can be moved aside and rebuilt with `reverie index`.")


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
    from reverie.graph.merge import merge_card
    from reverie.graph.store import transaction

    embedder = _LazyEmbedder(settings.get("embedding_model"), home)
    max_attempts = max(1, int(cfg.get("max_stretch_attempts", MAX_STRETCH_ATTEMPTS)))
    known: dict[str, str] = {}
    red = {"obj": redactor}

    def get_redactor():
        if red["obj"] is None:
            from .index import load_redactor

            red["obj"] = load_redactor(home)
        return red["obj"]

    backlog = False
    status = "ok"
    auth_error: Optional[str] = None
    account_error: Optional[str] = None
    try:
        known.update(_known(db))
        # 1. Plan: passages, judgements and stretches, newest conversation first, within budget.
        plan: list[Segment] = []
        pending = pending_conversations(conn)
        stop_planning = False
        calls_planned = 0
        for conversation, done in pending:
            if stop_planning:
                backlog = True
                break
            msgs = load_messages(db, conversation, after_id=done)
            # Progress after the conversation: its last message read here (every message past
            # `done` is read, in id order), not one indexed since.
            last_id = msgs[-1].id if msgs else done
            try:
                cut = cut_passages(conversation, msgs, after_id=done)
            except Exception as exc:  # noqa: BLE001 - one conversation's fault never stops the agent
                log.warning("cutting passages of %s failed", conversation, exc_info=True)
                acc.errors.append({"conversation": conversation, "kind": "crash",
                                   "message": f"{type(exc).__name__} while cutting passages"})
                if _record_attempt(conn, conversation, f"crash: {type(exc).__name__} in passages", now_iso) \
                        >= max_attempts:
                    with transaction(db):
                        _save_progress(conn, conversation, last_id, now_iso)
                    acc.skipped_stretches += 1
                else:
                    backlog = True
                continue
            for k, v in cut.skipped.items():
                acc.add(acc.skipped, k, v)
            judgements = [_judge(p, known, acc) for p in cut.passages]
            segments = plan_conversation(conversation, cut.passages, judgements, last_id, threshold,
                                         per_exchange=bool(getattr(writer, "call_per_exchange", False)))
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

                    answers = final_answers(seg.passages, {p.key for p, _ in cands},
                                            {p.exchange for p, _ in cands if p.exchange}) if writer.model_backed else {}
                    seg.request = WriteRequest(
                        id=f"{conversation}:{seg.index}", agent=agent_id, conversation=conversation,
                        candidates=[Candidate(f"P{i + 1}", p, j) for i, (p, j) in enumerate(cands)],
                        known_entities=known, answers=answers)
                    calls_planned += 1 if writer.model_backed else 0
                    acc.candidates += len(cands)
                plan.append(seg)

        # 2. Write, verify, merge: one transaction per stretch with the conversation's progress.
        requests = [s.request for s in plan if s.request is not None]
        batch_mode = bool(getattr(writer, "use_batches", False)) and len(requests) > 1
        results: dict[str, Any] = {}
        if batch_mode:
            try:
                for res in writer.write_many(requests, budget):
                    results[res.request_id] = res
            except Exception:  # noqa: BLE001 - requests without a result stay for the next run
                log.warning("batch writer failed", exc_info=True)
                acc.errors.append({"kind": "crash", "message": f"batch failed in the {writer.name} writer"})
        blocked: set[str] = set()
        stopped: Optional[str] = None
        total = len(plan)

        def failed_stretch(seg: Segment, kind: str, message: str) -> None:
            """A fault of this stretch: count the attempt; after `max_attempts` give the stretch up
            (progress moves past it with no cards) so the rest of the conversation proceeds."""
            nonlocal backlog
            conv = seg.conversation
            n_att = _record_attempt(conn, conv, f"{kind}: {message}", now_iso)
            err = {"conversation": conv, "segment": seg.index, "kind": kind, "message": message}
            if n_att >= max_attempts:
                with transaction(db):
                    _save_progress(conn, conv, seg.end_id, now_iso)
                acc.skipped_stretches += 1
                log.warning("stretch %s:%d given up after %d failed attempts (%s)", conv, seg.index, n_att, kind)
            else:
                blocked.add(conv)
                backlog = True
            acc.errors.append(err)

        for n, seg in enumerate(plan, 1):
            conv = seg.conversation
            if conv in blocked:
                continue
            result = None
            if seg.request is not None:
                if batch_mode:
                    result = results.get(seg.request.id)
                elif stopped is None:
                    try:
                        result = next(iter(writer.write_many([seg.request], budget)))
                    except Exception as exc:  # noqa: BLE001 - a writer fault on one stretch never stops the run
                        log.warning("writer failed on stretch %s:%d", conv, seg.index, exc_info=True)
                        failed_stretch(seg, "crash", f"{type(exc).__name__} in the {writer.name} writer")
                        continue
                if result is None or (stopped is not None and not batch_mode):
                    blocked.add(conv)
                    backlog = True
                    continue
                if result.error is not None:
                    err = result.error
                    if err.kind in STRETCH_FAULTS:
                        failed_stretch(seg, err.kind, err.message)
                        if conv not in blocked and progress:
                            progress("write", n, total)
                        continue
                    message = err.message
                    if err.kind == "account":
                        # the provider's own reason is in it: redacted before it is stored or shown
                        message = get_redactor().redact(message).text
                    acc.errors.append({"conversation": conv, "segment": seg.index, "kind": err.kind,
                                       "message": message})
                    blocked.add(conv)
                    backlog = True
                    if err.kind in ACCOUNT_FAULTS:
                        if err.kind == "auth":
                            auth_error = message
                        else:
                            account_error = message
                        stopped = err.kind
                        log.warning("run of %s stopped: %s fault", agent_id, err.kind)
                        if batch_mode:
                            break
                    elif err.kind in ("transient", "budget") and not batch_mode:
                        stopped = err.kind
                    continue
            # Verify and merge in one transaction with the progress row; any fault rolls the whole
            # stretch back (nothing of it is stored, progress stays) and counts as one attempt.
            rejected: dict[str, int] = {}
            merged: dict[str, int] = {}
            written = dropped = 0
            try:
                cards = []
                for reason, k in (getattr(result, "rejected", None) or {}).items():
                    rejected[reason] = rejected.get(reason, 0) + k
                if result is not None and result.cards:
                    verdict = verify(result.cards, seg.request, redactor=get_redactor(), model_backed=writer.model_backed)
                    for reason, k in verdict.rejected.items():
                        rejected[reason] = rejected.get(reason, 0) + k
                    dropped = verdict.relations_dropped
                    cards = [to_new_card(v, conv, writer.name, now_iso) for v in verdict.accepted]
                with transaction(db):
                    for card in cards:
                        res = merge_card(db, card, now=now or _dt.datetime.now(_dt.timezone.utc),
                                         embedder=embedder.get())
                        action = res.action
                        merged[action] = merged.get(action, 0) + 1
                        if action in ("rejected", "forgotten"):
                            rejected["graph_" + action] = rejected.get("graph_" + action, 0) + 1
                        else:
                            written += 1
                    _save_progress(conn, conv, seg.end_id, now_iso)
            except Exception as exc:  # noqa: BLE001 - one stretch's fault must not stop the run
                log.warning("stretch %s:%d failed in verify/merge", conv, seg.index, exc_info=True)
                failed_stretch(seg, "crash", f"{type(exc).__name__} in verify/merge")
                continue
            for reason, k in rejected.items():
                acc.add(acc.rejected, reason, k)
            for action, k in merged.items():
                acc.add(acc.merge, action, k)
            acc.cards_written += written
            acc.relations_dropped += dropped
            acc.passages_consolidated += len(seg.passages)
            acc.conversations.add(conv)
            if progress:
                progress("write", n, total)
        if stopped:
            backlog = True
        status = "partial" if (backlog or acc.errors) else "ok"
        if auth_error is not None or account_error is not None:
            status = "failed"
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
    try:
        folded = _fold_recall_log(home, agent_id, db, now or _dt.datetime.now(_dt.timezone.utc))
    except Exception as exc:  # noqa: BLE001 - the fold must not undo a good run
        log.warning("recall log fold failed", exc_info=True)
        acc.errors.append({"kind": "recall_fold", "message": type(exc).__name__})
    trust_summary = None
    try:
        trust_summary = _trust_stage(home, agent_id, db, plan, known, run_id,
                                     now or _dt.datetime.now(_dt.timezone.utc), settings)
    except Exception as exc:  # noqa: BLE001 - trust bookkeeping must not undo a good run; retried next run
        log.warning("trust stage failed", exc_info=True)
        acc.errors.append({"kind": "trust", "message": type(exc).__name__})
    auto_memory = None
    try:   # Claude Code's own auto memory as cards (consolidate.auto_memory)
        from .auto_memory import sync_agent

        auto_memory = sync_agent(home, agent_id, db, now=now_iso, redactor=get_redactor)
    except Exception as exc:  # noqa: BLE001 - the next run reads the folder again
        log.warning("auto-memory sync failed", exc_info=True)
        acc.errors.append({"kind": "auto_memory", "message": type(exc).__name__})
    summary = _summary(agent_id, writer, acc, budget, backlog, run_id)
    summary["auto_memory"] = auto_memory
    if account_error is not None:
        summary["failed"] = True     # the CLI exits 1 so cron and scripts notice; see the error's fix
    summary["recall_fold"] = folded
    summary["trust"] = trust_summary
    summary["embedder"] = embedder.describe()
    _finish_run(conn, run_id, status, summary, _now_iso(None))
    db.close()
    # Secrets this run's redactor learned (or any process learned since the last rescan) are
    # scrubbed from everything the agent stored before, cards and episodes included.
    try:
        from .index_rescan import rescan_agent

        rescan_agent(home, agent_id)
    except Exception:  # noqa: BLE001 - the next index or consolidation run rescans again
        log.warning("rescan after consolidation failed", exc_info=True)
    if auth_error is not None:
        raise ApiAuthFailed(auth_error, writer=writer.name)
    return summary


def _trust_stage(home: Path, agent_id: str, db, plan: list, known: dict, run_id: int, now: _dt.datetime,
                 settings: dict) -> dict:
    """Issue 8 after the writing: detected feedback (recall log x the new turns), one episode per
    consolidated session, the trust pass (decay, maturity, anti-patterns, flags) and the episodes'
    decay, pruning and recall reinforcement.

    Invariant: it covers every conversation whose progress is ahead of its trust watermark
    (`progress.trust_message_id`), not only this run's, and the turns between the two marks; the
    watermark moves to the progress read at the start only after the stage completed. So a run that
    was killed or failed after committing stretches leaves them for the next run's stage."""
    from reverie.graph import episodes, feedback_detect, trust

    conn = db.conn
    due = trust_pending(conn)
    sessions = [conv for conv, _, _ in due]
    planned = {(p.conversation, p.key): j for seg in plan for p, j in zip(seg.passages, seg.judgements)}
    half_life = settings_mod.half_life_days(settings)
    events, bad_lines = feedback_detect.read_recall_log(recall_log_path(home, agent_id))
    turns = []
    firsts: dict[str, str] = {}      # first human turn of a conversation read from its start here
    for conv, trusted, done in due:
        passages = cut_passages(conv, load_messages(db, conv, after_id=trusted), after_id=trusted).passages
        if not trusted:
            firsts[conv] = next((p.text for p in passages if p.kind == "user"), "")
        for p in passages:
            if p.kind not in ("user", "assistant") or p.message_id > done:
                continue
            j = planned.get((conv, p.key)) or classify(p, known=known)
            turns.append(feedback_detect.Turn(p.conversation, p.timestamp, p.text,
                                              bool(j.correction) if p.kind == "user" else False, p.kind))
    detected = feedback_detect.detect_and_record(db, events, turns, sessions=sessions)
    detected["bad_log_lines"] = bad_lines
    for conv in sessions:
        first = firsts.get(conv)
        if first is None:
            first = next((p.text for p in cut_passages(conv, load_messages(db, conv)).passages if p.kind == "user"), "")
        row = conn.execute("SELECT first_at FROM conversations WHERE id = ?", (conv,)).fetchone()
        summary = episodes.summarize_offline(first, episodes.session_card_statements(db, conv))
        episodes.record_episode(db, conv, (row[0] if row else None) or now.isoformat(), summary, now=now)
    conn.commit()
    passed = trust.consolidation_pass(db, run_key=f"run:{run_id}", sessions=sessions, now=now,
                                      half_life_days=half_life)
    decay = episodes.apply_decay(db, now=now)
    boosted = episodes.fold_recall_events(db, events)
    with conn:
        conn.executemany("UPDATE progress SET trust_message_id = MAX(trust_message_id, ?) WHERE conversation = ?",
                         [(done, conv) for conv, _, done in due])
    return {"sessions": len(sessions), "feedback": detected, "pass": passed,
            "episodes": {"decayed": decay["decayed"], "pruned": len(decay["pruned"]) + len(decay["capped"]),
                         "recalled": boosted}}


def _summary(agent_id: str, writer: Any, acc: _Acc, budget: Budget, backlog: bool, run_id: int) -> dict:
    totals = budget.totals()
    return {
        "agent": agent_id,
        "conversations": len(acc.conversations),
        "passages": budget.passages,
        "passages_consolidated": acc.passages_consolidated,
        "skipped_stretches": acc.skipped_stretches,
        "candidates": acc.candidates,
        "calls": budget.calls,
        "cards_written": acc.cards_written,
        "cards_rejected": dict(sorted(acc.rejected.items())),
        "cost_usd": totals["cost_usd"],
        "backlog": bool(backlog),
        "errors": acc.errors,
        "run_id": run_id,
        "writer": writer.name,
        "writer_reason": getattr(writer, "selected_because", None),
        "tokens": totals["tokens"],
        "merge": acc.merge,
        "relations_dropped": acc.relations_dropped,
        "skipped": dict(sorted(acc.skipped.items())),
        "budget_exhausted": totals["budget_exhausted"],
    }


def list_agent_ids(home: Path, settings: Optional[dict] = None) -> list[str]:
    """Agents of the home that have a db, enabled ones only (settings agents.disabled)."""
    from .agents import disabled_agents, known_agent_ids

    home = Path(home)
    disabled = disabled_agents(settings if settings is not None else settings_mod.load_settings(home))
    # The ids and switches only: `agents.list_agents` would also open every agent.db for its counts.
    return [i for i in known_agent_ids(home) if i not in disabled and agent_db_path(home, i).exists()]


def _failed_agent(agent_id: str, kind: str, message: str) -> dict:
    return {"agent": agent_id, "conversations": 0, "passages": 0, "passages_consolidated": 0,
            "skipped_stretches": 0, "candidates": 0, "calls": 0, "cards_written": 0, "cards_rejected": {},
            "cost_usd": 0.0, "backlog": True, "failed": kind == "agent_failed",
            "errors": [{"kind": kind, "message": message}]}


def consolidate_all(home: Path, *, writer: Any = None, trigger: str = "now", now: Optional[_dt.datetime] = None,
                    progress: Optional[Callable[[str, int, int], None]] = None) -> list[dict]:
    """Consolidate every enabled agent in turn. A busy agent (kind `busy`) or one that cannot be
    consolidated (kind `agent_failed`, `failed: true`: unreadable database, unexpected fault) gets an
    error summary and the others still run. Faults that are the same for every agent (no API key,
    key refused, invalid settings) are raised at once: running the others would only repeat them."""
    settings = settings_mod.checked_settings(home)   # read and checked once for every agent
    out = []
    for agent_id in list_agent_ids(home, settings):
        try:
            out.append(consolidate_agent(home, agent_id, writer=writer, trigger=trigger, now=now,
                                         progress=progress, settings=settings))
        except (UnknownAgent, NoApiKey, ApiAuthFailed):
            raise
        except AgentBusy as exc:
            out.append(_failed_agent(agent_id, "busy", str(exc)))
        except ReverieError as exc:
            out.append(_failed_agent(agent_id, "agent_failed", str(exc)))
        except Exception as exc:  # noqa: BLE001 - one agent's fault must not stop the others
            log.error("consolidation of %s failed", agent_id, exc_info=True)
            out.append(_failed_agent(agent_id, "agent_failed",
                                     f"{type(exc).__name__} while consolidating {agent_id!r}: run `reverie doctor`, "
                                     f"then `reverie consolidate --now --agent {agent_id}` to see the details."))
    return out
