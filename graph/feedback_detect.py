"""Feedback detected during consolidation, from the recall log and the session's turns.

Standard library only; takes plain data (no import of `consolidate`): recall-log events as dicts
(`{"at", "session", "kind": "primer"|"prompt", "ids": [card ids], "entities": [...]}`) and the session's
turns as `Turn(session, at, text, is_correction, role)` (texts already redacted; `is_correction` from
the classifier, meaningful on user turns).

The rule (docs/trust.md, "Detected feedback"):
1. Each recall event is tied to the user prompt it served: for a `prompt` recall, the last user turn
   of its session at or before `at + ANCHOR_GRACE_S` (the hook fires as the prompt is submitted, the
   transcript stamps it within a second or two); for a `primer` (session start), the first user turn
   after `at - ANCHOR_GRACE_S`.
2. The agent's reply is the assistant text between that prompt and the next user turn (the reaction).
3. A card is "on the point" of a text when the text contains at least half (and at least two) of
   the card's key terms (content words of 3+ letters minus stop words, light suffix stemming, plus
   the names in the card's entities), or one of its entity names plus one more key term.
4. harmful (source `correction`): the reaction is a correction (`is_correction`) on the card's point.
5. helpful (source `successful_use`): the reply is on the card's point and the reaction is not a
   correction on that point (or the session ends after the reply). Without assistant text no helpful
   event is inferred.
6. At most one event per (card, session, kind): the dedupe key makes re-running consolidation over
   the same sessions record nothing new. A card corrected in a session is not also recorded helpful
   in that session.
7. No helpful event for a card the same session showed to be out of date (`outdated_in_session`:
   superseded by a card learned there, or one of its relations ended or moved there).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Iterable, NamedTuple, Sequence

from reverie.graph.trust import UnknownCard, _conn, iso, parse_ts, record_feedback, transaction

log = logging.getLogger(__name__)

ANCHOR_GRACE_S = 5
MIN_SHARED_TERMS = 2
MIN_TERM_SHARE = 0.5


class Turn(NamedTuple):
    session: str
    at: str
    text: str
    is_correction: bool = False
    role: str = "user"


@dataclass(frozen=True)
class CardPoint:
    """What a card says, for matching: statement plus entity names."""

    id: int
    statement: str
    entities: tuple[str, ...] = ()


@dataclass
class Detection:
    card_id: int
    kind: str                  # helpful | harmful
    source: str                # correction | successful_use
    session: str
    at: str
    reason: str

    @property
    def key(self) -> str:
        return f"detect:{self.kind}:{self.session}:{self.card_id}"


@dataclass
class DetectionReport:
    detections: list[Detection] = field(default_factory=list)
    events: int = 0
    events_without_turns: int = 0
    unknown_cards: int = 0
    bad_events: int = 0

    def counts(self) -> dict[str, int]:
        out = {"recall_events": self.events, "events_without_turns": self.events_without_turns,
               "unknown_cards": self.unknown_cards, "bad_events": self.bad_events,
               "harmful": 0, "helpful": 0}
        for d in self.detections:
            out[d.kind] += 1
        return out


# --- matching ---------------------------------------------------------------------------------------

_STOP = frozenset("""
a about above after again against all also always am an and any are as at be because been before being
below between both but by can could did do does doing don done down during each else every few for from
further had has have having he her here hers him his how i if in into is it its itself just let like
make me more most must my never no nor not now of off on once only or other our ours out over own same
she should so some such than that the their them then there these they this those through to too
under until up us use used using very via was we were what when where which while who whom why will
with would you your yours instead prefer rather should always never from now remember that project
""".split())

_WORD = re.compile(r"[a-z0-9][a-z0-9_\-.]*[a-z0-9]|[a-z0-9]")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> set[str]:
    """Key terms: lower-case content words of 3+ characters, stop words removed, lightly stemmed."""
    return {_stem(w) for w in _WORD.findall((text or "").lower()) if len(w) >= 3 and w not in _STOP}


def on_point(card: CardPoint, text: str, *, text_terms: set[str] | None = None) -> bool:
    """Rule 3 of the module docstring."""
    have = text_terms if text_terms is not None else terms(text)
    keys = terms(card.statement)
    shared = keys & have
    if keys and len(shared) >= MIN_SHARED_TERMS and len(shared) >= MIN_TERM_SHARE * len(keys):
        return True
    low = (text or "").lower()
    for name in card.entities:
        n = name.lower().strip()
        if len(n) >= 3 and re.search(r"(?<![\w-])" + re.escape(n) + r"(?![\w-])", low):
            if len(shared - terms(name)) >= 1:
                return True
    return False


# --- detection --------------------------------------------------------------------------------------

def detect(events: Iterable[dict[str, Any]], turns: Iterable[Turn | Sequence[Any]],
           cards: dict[int, CardPoint]) -> DetectionReport:
    """Apply the rule to recall events and turns; pure (no db). `cards` maps recalled ids to their
    points; ids missing from it (forgotten cards) are counted and skipped."""
    report = DetectionReport()
    by_session: dict[str, list[Turn]] = {}
    for t in turns:
        turn = t if isinstance(t, Turn) else Turn(*t)
        if parse_ts(turn.at) is None:
            continue
        by_session.setdefault(turn.session, []).append(turn)
    for ts in by_session.values():
        ts.sort(key=lambda t: parse_ts(t.at))  # type: ignore[arg-type, return-value]
    seen: set[tuple[str, int, str]] = set()
    corrected: set[tuple[str, int]] = set()
    pending_helpful: list[Detection] = []
    for ev in events:
        when = parse_ts(ev.get("at")) if isinstance(ev, dict) else None
        session = ev.get("session") if isinstance(ev, dict) else None
        ids = ev.get("ids") if isinstance(ev, dict) else None
        if when is None or not session or not isinstance(ids, list):
            report.bad_events += 1
            continue
        report.events += 1
        session_turns = by_session.get(str(session))
        if not session_turns:
            report.events_without_turns += 1
            continue
        users = [i for i, t in enumerate(session_turns) if t.role == "user"]
        grace = timedelta(seconds=ANCHOR_GRACE_S)
        if ev.get("kind") == "primer":
            anchor = next((i for i in users if parse_ts(session_turns[i].at) >= when - grace), None)
        else:
            before = [i for i in users if parse_ts(session_turns[i].at) <= when + grace]
            anchor = before[-1] if before else None
        if anchor is None:
            report.events_without_turns += 1
            continue
        reaction = next((i for i in users if i > anchor), None)
        end = reaction if reaction is not None else len(session_turns)
        reply = " ".join(t.text for t in session_turns[anchor + 1:end] if t.role == "assistant")
        reply_terms = terms(reply)
        react = session_turns[reaction] if reaction is not None else None
        react_terms = terms(react.text) if react is not None else set()
        for cid in ids:
            if not isinstance(cid, int):
                report.bad_events += 1
                continue
            card = cards.get(cid)
            if card is None:
                report.unknown_cards += 1
                continue
            if react is not None and react.is_correction and on_point(card, react.text, text_terms=react_terms):
                key = (str(session), cid, "harmful")
                corrected.add((str(session), cid))
                if key not in seen:
                    seen.add(key)
                    report.detections.append(Detection(cid, "harmful", "correction", str(session), iso(parse_ts(react.at)),
                                                       "user corrected the agent on a recalled card's point"))
                continue
            if reply and on_point(card, reply, text_terms=reply_terms):
                key = (str(session), cid, "helpful")
                if key not in seen:
                    seen.add(key)
                    at = react.at if react is not None else session_turns[end - 1].at
                    pending_helpful.append(Detection(cid, "helpful", "successful_use", str(session), iso(parse_ts(at)),
                                                     "agent followed a recalled card without correction"))
    report.detections.extend(d for d in pending_helpful if (d.session, d.card_id) not in corrected)
    return report


# --- io ---------------------------------------------------------------------------------------------

def read_recall_log(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """The recall-log events of this consolidation pass: the batch `graph.lifecycle.fold_recall_log`
    read (from the agent db's cursor) just before, handed out once; returns (events, bad lines and
    ids). There is one reader of the log (graph.lifecycle) with one cursor, so access counts,
    feedback detection and episode reinforcement see the same new lines once each. Without a fold
    in this process since the last call: ([], 0) (nothing is re-read from the start of the log)."""
    from reverie.graph.lifecycle import take_pass_batch

    batch = take_pass_batch(Path(path))
    if batch is None:
        return [], 0
    return list(batch.events), batch.bad + batch.bad_ids


def card_points(db: Any, ids: Iterable[int]) -> dict[int, CardPoint]:
    """Statements and entity names of the given card ids (any status)."""
    conn = _conn(db)
    wanted = sorted({int(i) for i in ids})
    out: dict[int, CardPoint] = {}
    for i in range(0, len(wanted), 500):
        chunk = wanted[i:i + 500]
        marks = ",".join("?" * len(chunk))
        names: dict[int, list[str]] = {}
        for cid, name in conn.execute(
            f"""SELECT ce.card_id, e.name FROM card_entities ce JOIN entities e ON e.id = ce.entity_id
                WHERE ce.card_id IN ({marks})""", chunk):
            names.setdefault(cid, []).append(name)
        for cid, statement in conn.execute(f"SELECT id, statement FROM cards WHERE id IN ({marks})", chunk):
            out[cid] = CardPoint(cid, statement, tuple(names.get(cid, ())))
    return out


def outdated_in_session(conn: Any, card_id: int, session: str) -> bool:
    """Whether `session` itself taught that the card is out of date: another card learned in it
    supersedes this one, ends one of its relations, or (single-valued verbs) moves one of its
    relations to another object. The agent then changed what the card says rather than following
    it, so no helpful event is inferred (rule 7 in docs/trust.md)."""
    from .relations import SINGLE_VALUED_PER_OBJECT, SINGLE_VALUED_PER_SUBJECT

    row = conn.execute(
        """SELECT 1 FROM cards c JOIN card_sessions cs ON cs.card_id = c.superseded_by
           WHERE c.id = ? AND cs.session = ?""", (card_id, session)).fetchone()
    if row:
        return True
    mine = conn.execute("SELECT subject_id, verb, object_id FROM relation_statements WHERE card_id = ? AND holds = 1",
                        (card_id,)).fetchall()
    for subject, verb, obj in mine:
        later = conn.execute(
            """SELECT object_id, holds, subject_id FROM relation_statements
               WHERE session = ? AND verb = ? AND card_id != ? AND implicit = 0
                 AND (subject_id = ? OR object_id = ?)""", (session, verb, card_id, subject, obj)).fetchall()
        for o2, holds, s2 in later:
            if not holds and s2 == subject and o2 == obj:
                return True
            if holds and verb in SINGLE_VALUED_PER_SUBJECT and s2 == subject and o2 != obj:
                return True
            if holds and verb in SINGLE_VALUED_PER_OBJECT and o2 == obj and s2 != subject:
                return True
    return False


def drop_outdated(conn: Any, detections: list) -> tuple[list, int]:
    """`detections` without the helpful ones rule 7 excludes, and how many were dropped."""
    kept = [d for d in detections
            if not (d.kind == "helpful" and outdated_in_session(conn, d.card_id, d.session))]
    return kept, len(detections) - len(kept)


def detect_and_record(db: Any, events: Iterable[dict[str, Any]], turns: Iterable[Turn | Sequence[Any]],
                      *, sessions: Iterable[str] | None = None) -> dict[str, Any]:
    """Detect over the events of `sessions` (all when None) and append the feedback (idempotent by
    key). Returns the counts plus "recorded" (new rows). Commits."""
    conn = _conn(db)
    wanted = {str(s) for s in sessions} if sessions is not None else None
    evs = [e for e in events if isinstance(e, dict) and (wanted is None or str(e.get("session")) in wanted)]
    ids = {i for e in evs for i in (e.get("ids") or []) if isinstance(i, int)}
    report = detect(evs, turns, card_points(conn, ids))
    report.detections, outdated = drop_outdated(conn, report.detections)
    recorded = 0
    with transaction(conn):
        for d in report.detections:
            try:
                if record_feedback(conn, d.card_id, d.kind, source=d.source, at=d.at, session=d.session,
                                   key=d.key) is not None:
                    recorded += 1
            except UnknownCard:
                report.unknown_cards += 1
    out: dict[str, Any] = report.counts()
    out["recorded"] = recorded
    out["outdated_in_session"] = outdated
    log.info("feedback detection: %s", out)
    return out

