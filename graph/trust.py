"""Trust signals: confidence decay and restore, feedback scoring, maturity, anti-patterns, ranking.

Standard library only: recall (the hook path) imports this module to rank cards and to annotate them
with `confidence`, `maturity` and `warnings`. Functions take a `sqlite3.Connection` or anything with
a `.conn` attribute holding one (a `sqlite_utils.Database`).

Rules (docs/trust.md has the full text and the reasons):
- Confidence lives in [0, 1]. A consolidation pass with new sessions lowers every unreinforced,
  unpinned, active card by DECAY_STEP (0.05); a reinforced card gets min(current + 0.1, original)
  (never lowered by a restore). Below MAINTENANCE_BELOW (0.2) a card is flagged for maintenance. A
  card explicitly contradicted (superseded) goes to 0 and is never recalled.
- Feedback events are append-only; counts and scores are computed at read time: an event of age
  `a` days weighs 0.5 ** (a / half_life). Effective score = (helpful - 4 x harmful) x factor(maturity).
- Maturity is stored state (it has hysteresis): promotion jumps to the earned rung, demotion drops
  one rung per pass, a score under -3 deprecates outright, pinned cards never move.
- A non-pinned rule whose decayed harm is >= 3 and more than twice its decayed help is inverted into
  an "AVOID: ..." card that supersedes it.
- 180 days without any signal (creation, reinforcement, feedback, a maintenance "keep") flags a card
  for re-validation.
"""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import datetime, timedelta, timezone
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hook ~2.4 ms
if TYPE_CHECKING:
    from typing import Any, Iterable, Sequence

from .db import connection, transaction  # noqa: F401  (transaction: part of this module's API)


# --- parameters -------------------------------------------------------------------------------------

DECAY_STEP = 0.05
RESTORE_STEP = 0.1
MAINTENANCE_BELOW = 0.2
DEFAULT_HALF_LIFE_DAYS = 90.0
HARM_WEIGHT = 4.0
MATURITY_FACTOR = {"candidate": 0.5, "established": 1.0, "proven": 1.5, "deprecated": 0.0}
#: Ladder, lowest first: one-rung demotion walks it downwards.
MATURITY_LADDER = ("deprecated", "candidate", "established", "proven")
MIN_EVENTS = 3                 # fewer events: candidate
DEPRECATED_HARM_SHARE = 0.30   # decayed harmful share above this: deprecated
PROVEN_HELPFUL = 10            # helpful events needed for proven ...
PROVEN_HARM_SHARE = 0.10       # ... with a decayed harmful share under this
DEPRECATE_SCORE = -3.0         # effective score under this: deprecated outright
INVERT_HARM = 3.0              # decayed harm at least this ...
INVERT_RATIO = 2.0             # ... and more than this times the decayed help: invert
SILENCE_DAYS = 180
ANTI_PATTERN_PREFIX = "AVOID: "
ANTI_PATTERN_CONFIDENCE = 0.9
#: Categories that prescribe behaviour (rules). Facts are never inverted into "AVOID".
RULE_CATEGORIES = ("decision", "preference", "pattern", "lesson", "correction")

_ROUND = 6


# --- time -------------------------------------------------------------------------------------------

def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso(dt: datetime) -> str:
    """ISO-8601 UTC with seconds, e.g. 2026-02-11T20:31:00+00:00."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat(timespec="seconds")


def parse_ts(value: Any) -> datetime | None:
    """Parse an ISO-8601 timestamp (a trailing Z allowed); naive values are taken as UTC."""
    if value is None:
        return None
    if isinstance(value, datetime):
        dt = value
    else:
        text = str(value).strip()
        if not text:
            return None
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError:
            return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt


def _now(now: datetime | None) -> datetime:
    return parse_ts(now) if now is not None else utcnow()  # type: ignore[return-value]


_conn = connection


# --- confidence arithmetic --------------------------------------------------------------------------

def decayed_confidence(confidence: float) -> float:
    """One decay step: confidence - 0.05, floored at 0."""
    return max(0.0, round(confidence - DECAY_STEP, _ROUND))


def restored_confidence(confidence: float, original: float) -> float:
    """A reinforcement: min(confidence + 0.1, original); never lowers a confidence above original."""
    return max(confidence, min(round(confidence + RESTORE_STEP, _ROUND), original))


def needs_maintenance(confidence: float) -> bool:
    return confidence < MAINTENANCE_BELOW


# --- feedback scoring -------------------------------------------------------------------------------

class _SlotValue:
    """Equality and repr from `__slots__`: the value classes of this module without `dataclasses`
    (which imports `inspect`, milliseconds on the hook path)."""

    __slots__: tuple[str, ...] = ()

    def _key(self) -> tuple:
        return tuple(getattr(self, k) for k in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._key() == other._key()

    def __repr__(self) -> str:
        return type(self).__name__ + "(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__) + ")"


class FeedbackScore(_SlotValue):
    """Counts and decayed sums of one card's feedback log, as of `now` with one half-life.
    (A plain class: `dataclasses` imports `inspect` and `typing.NamedTuple` imports `typing`,
    milliseconds on the hook path.)"""

    __slots__ = ("events", "helpful_count", "harmful_count", "helpful", "harmful", "last_at")

    def __init__(self, events: int = 0, helpful_count: int = 0, harmful_count: int = 0,
                 helpful: float = 0.0, harmful: float = 0.0, last_at: str | None = None) -> None:
        self.events, self.helpful_count, self.harmful_count = events, helpful_count, harmful_count
        self.helpful, self.harmful = helpful, harmful      # sums of 0.5 ** (age_days / half_life)
        self.last_at = last_at

    @property
    def harm_share(self) -> float:
        total = self.helpful + self.harmful
        return self.harmful / total if total > 0 else 0.0

    @property
    def raw(self) -> float:
        """helpful - 4 x harmful (decayed), before the maturity factor."""
        return self.helpful - HARM_WEIGHT * self.harmful


def event_weight(at: Any, now: datetime, half_life_days: float) -> float:
    """0.5 ** (age_days / half_life); events in the future or unparsable weigh 1."""
    when = parse_ts(at)
    if when is None or half_life_days <= 0:
        return 1.0
    age_days = max(0.0, (now - when).total_seconds() / 86400.0)
    return 0.5 ** (age_days / half_life_days)


def score_events(events: Iterable[tuple[str, Any]], *, now: datetime | None = None,
                 half_life_days: float = DEFAULT_HALF_LIFE_DAYS) -> FeedbackScore:
    """Score (kind, at) pairs. Invariant: depends only on the events, now and the half-life."""
    current = _now(now)
    n = hc = xc = 0
    h = x = 0.0
    last: datetime | None = None
    for kind, at in events:
        w = event_weight(at, current, half_life_days)
        n += 1
        if kind == "helpful":
            hc += 1
            h += w
        elif kind == "harmful":
            xc += 1
            x += w
        when = parse_ts(at)
        if when is not None and (last is None or when > last):
            last = when
    return FeedbackScore(n, hc, xc, round(h, 9), round(x, 9), iso(last) if last else None)


def earned_maturity(score: FeedbackScore) -> str:
    """The rung the log earns, ignoring history: <3 events candidate; decayed harmful share > 30%
    deprecated; >= 10 helpful events with decayed harmful share < 10% proven; else established."""
    if score.events < MIN_EVENTS:
        return "candidate"
    if score.harm_share > DEPRECATED_HARM_SHARE:
        return "deprecated"
    if score.helpful_count >= PROVEN_HELPFUL and score.harm_share < PROVEN_HARM_SHARE:
        return "proven"
    return "established"


def effective_score(score: FeedbackScore, maturity: str) -> float:
    """(decayed helpful - 4 x decayed harmful) x maturity factor."""
    return round(score.raw * MATURITY_FACTOR.get(maturity, 0.5), 6)


def next_maturity(current: str, score: FeedbackScore, *, pinned: bool = False) -> str:
    """One maturity pass. Pinned: unchanged. Effective score (at the current rung) under -3:
    deprecated. Earned rung above current: jump to it. Below: drop one rung. Else unchanged."""
    if current not in MATURITY_FACTOR:
        current = "candidate"
    if pinned:
        return current
    # A deprecated card's factor is 0, so its own score cannot keep it down: judge it at candidate's.
    judged = current if current != "deprecated" else "candidate"
    if effective_score(score, judged) < DEPRECATE_SCORE:
        return "deprecated"
    earned = earned_maturity(score)
    cur_rank, earned_rank = MATURITY_LADDER.index(current), MATURITY_LADDER.index(earned)
    if earned_rank > cur_rank:
        return earned
    if earned_rank < cur_rank:
        return MATURITY_LADDER[cur_rank - 1]
    return current


def should_invert(score: FeedbackScore, *, category: str, pinned: bool, statement: str = "") -> bool:
    """A non-pinned rule whose decayed harm >= 3 and > 2 x its decayed help becomes an anti-pattern."""
    if pinned or category not in RULE_CATEGORIES or is_anti_pattern_text(statement):
        return False
    return score.harmful >= INVERT_HARM and score.harmful > INVERT_RATIO * score.helpful


def is_anti_pattern_text(statement: str) -> bool:
    return statement.startswith(ANTI_PATTERN_PREFIX)


def anti_pattern_statement(statement: str) -> str:
    return ANTI_PATTERN_PREFIX + statement.strip()


def silent(last_signal_at: Any, now: datetime, days: int = SILENCE_DAYS) -> bool:
    """True when the last signal is at least `days` old (no timestamp: not silent, nothing to judge)."""
    when = parse_ts(last_signal_at)
    return when is not None and now - when >= timedelta(days=days)


# --- ranking ----------------------------------------------------------------------------------------

#: Most recurrence multiplies strength by is 1 + this (seen in e^3 ~ 20 sessions).
RECURRENCE_MAX_BOOST = 0.25
#: Most feedback moves relevance by, either way (score +-6 and beyond).
FEEDBACK_MAX_BOOST = 0.25
#: Relevance kept at confidence 0+ (a topical low-confidence card sinks but still surfaces).
CONFIDENCE_FLOOR = 0.4


def strength(sessions: int, confidence: float, score: float = 0.0, maturity: str = "candidate") -> float:
    """Recall's strength term, a multiplier on relevance: recurrence x trust x feedback.

    recurrence = 1 + 0.25 min(1, ln(sessions) / 3)      [1, 1.25]  (as graph.recall had it)
    trust      = 0.4 + 0.6 confidence                   [0.4, 1]
    feedback   = 1 + 0.25 clamp(score / 6, -1, 1)       [0.75, 1.25]
    A fresh card (one session, confidence 1, no feedback) has 1.0; the range is [0.3, 1.5625], so
    strength reorders close matches but never lifts a weak match over a much closer one. A deprecated
    or zero-confidence card has 0: it may only appear as a warning line."""
    if maturity == "deprecated" or confidence <= 0:
        return 0.0
    recurrence = 1.0 + RECURRENCE_MAX_BOOST * min(1.0, math.log(max(1, int(sessions or 1))) / 3.0)
    trust = CONFIDENCE_FLOOR + (1.0 - CONFIDENCE_FLOOR) * min(1.0, max(0.0, float(confidence)))
    feedback = 1.0 + FEEDBACK_MAX_BOOST * max(-1.0, min(1.0, float(score) / 6.0))
    return round(recurrence * trust * feedback, 6)


class CardTrust(_SlotValue):
    """What recall needs to know about one card. (A plain class: see FeedbackScore.)"""

    __slots__ = ("id", "confidence", "maturity", "score", "strength", "pinned", "anti_pattern",
                 "contradicted", "helpful", "harmful", "flags")

    def __init__(self, id: int, confidence: float, maturity: str, score: float, strength: float,
                 pinned: bool = False, anti_pattern: bool = False, contradicted: bool = False,
                 helpful: float = 0.0, harmful: float = 0.0, flags: list[str] | None = None) -> None:
        self.id, self.confidence, self.maturity, self.score, self.strength = id, confidence, maturity, score, strength
        self.pinned, self.anti_pattern, self.contradicted = pinned, anti_pattern, contradicted
        self.helpful, self.harmful = helpful, harmful
        self.flags = list(flags) if flags is not None else []

    @property
    def deprecated(self) -> bool:
        return self.maturity == "deprecated"

    @property
    def warning(self) -> bool:
        """Shown as a warning line, not as a note: deprecated rules and anti-patterns."""
        return (self.deprecated or self.anti_pattern) and not self.contradicted


def warning_text(statement: str, trust: CardTrust) -> str:
    """One warning line for recall's `warnings` list."""
    if trust.anti_pattern:
        return statement if is_anti_pattern_text(statement) else anti_pattern_statement(statement)
    return f"Deprecated (reported harmful): {statement}"


def warning_entry(card_id: int, statement: str, trust: CardTrust) -> dict[str, Any]:
    """One entry of recall's `warnings`: {"id", "statement", "kind": "deprecated"|"anti_pattern", "text"}."""
    return {"id": card_id, "statement": statement, "kind": "anti_pattern" if trust.anti_pattern else "deprecated",
            "text": warning_text(statement, trust)}


def _missing_table(exc: sqlite3.OperationalError) -> bool:
    return "no such table" in str(exc) or "no such column" in str(exc)


def _chunks(ids: Sequence[int], size: int = 500) -> Iterable[Sequence[int]]:
    for i in range(0, len(ids), size):
        yield ids[i:i + size]


def feedback_events(db: Any, card_ids: Iterable[int]) -> dict[int, list[tuple[str, str]]]:
    """(kind, at) events per card id, oldest first. Missing table: no events."""
    conn = _conn(db)
    ids = sorted({int(i) for i in card_ids})
    out: dict[int, list[tuple[str, str]]] = {i: [] for i in ids}
    try:
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            for cid, kind, at in conn.execute(
                f"SELECT card_id, kind, at FROM feedback WHERE card_id IN ({marks}) ORDER BY at, id", chunk
            ):
                out[cid].append((kind, at))
    except sqlite3.OperationalError as exc:
        if not _missing_table(exc):
            raise
    return out


def trust_for_cards(db: Any, card_ids: Iterable[int], *, now: datetime | None = None,
                    half_life_days: float = DEFAULT_HALF_LIFE_DAYS) -> dict[int, CardTrust]:
    """Confidence, maturity, effective score and strength for each existing card id. Read-only,
    stdlib, tolerant of a db without the trust tables (defaults then). Unknown ids are left out."""
    conn = _conn(db)
    current = _now(now)
    ids = sorted({int(i) for i in card_ids})
    if not ids:
        return {}
    cards: dict[int, tuple] = {}
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(
            f"SELECT id, confidence, sessions, pinned, statement, status FROM cards WHERE id IN ({marks})", chunk
        ):
            cards[row[0]] = row
    state: dict[int, tuple] = {}
    try:
        for chunk in _chunks(list(cards)):
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(
                f"""SELECT card_id, maturity, contradicted, anti_pattern_of, needs_maintenance, revalidate
                    FROM card_trust WHERE card_id IN ({marks})""", chunk
            ):
                state[row[0]] = row
    except sqlite3.OperationalError as exc:
        if not _missing_table(exc):
            raise
    events = feedback_events(conn, cards)
    out: dict[int, CardTrust] = {}
    for cid, (_, confidence, sessions, pinned, statement, status) in cards.items():
        st = state.get(cid)
        maturity = st[1] if st else "candidate"
        contradicted = bool(st and st[2]) or status == "superseded"
        anti = bool(st and st[3] is not None) or is_anti_pattern_text(statement or "")
        fs = score_events(events.get(cid, []), now=current, half_life_days=half_life_days)
        eff = effective_score(fs, maturity)
        conf = 0.0 if contradicted else float(confidence)
        flags = []
        if st and st[4]:
            flags.append("needs_maintenance")
        if st and st[5]:
            flags.append("revalidate")
        out[cid] = CardTrust(
            id=cid, confidence=conf, maturity=maturity, score=eff,
            strength=0.0 if contradicted else strength(sessions, conf, eff, maturity),
            pinned=bool(pinned), anti_pattern=anti, contradicted=contradicted,
            helpful=fs.helpful, harmful=fs.harmful, flags=flags,
        )
    return out


def recall_annotations(db: Any, card_ids: Iterable[int], *, now: datetime | None = None,
                       half_life_days: float = DEFAULT_HALF_LIFE_DAYS) -> dict[str, Any]:
    """For recall's JSON: {"cards": {id: {"confidence", "maturity", "strength"}}, "warnings":
    [{"id", "statement", "kind": "deprecated"|"anti_pattern", "text"}], "hidden": [ids]} where
    `warnings` are the deprecated rules and anti-patterns among `card_ids` (pass the cards relevant
    to the prompt, deprecated ones included) and `hidden` the ids that must not be shown as notes
    (warnings and contradicted cards)."""
    conn = _conn(db)
    info = trust_for_cards(conn, card_ids, now=now, half_life_days=half_life_days)
    statements: dict[int, str] = {}
    ids = [i for i, t in info.items() if t.warning]
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        for cid, st in conn.execute(f"SELECT id, statement FROM cards WHERE id IN ({marks})", chunk):
            statements[cid] = st
    warnings = [warning_entry(cid, statements.get(cid, ""), info[cid]) for cid in ids]
    return {
        "cards": {cid: {"confidence": t.confidence, "maturity": t.maturity, "strength": t.strength}
                  for cid, t in info.items()},
        "warnings": warnings,
        "hidden": sorted(cid for cid, t in info.items() if t.warning or t.contradicted),
    }


# --- writes -----------------------------------------------------------------------------------------

def _ensure_state(conn: sqlite3.Connection, card_id: int, at: str) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO card_trust (card_id, maturity, updated_at) VALUES (?, 'candidate', ?)",
        (card_id, at),
    )


def log_maintenance(db: Any, *, target: str, target_id: int, action: str, reason: str, source: str,
                    at: str, related_id: int | None = None) -> None:
    """Append to the maintenance log. `reason` must not carry card or episode text."""
    _conn(db).execute(
        """INSERT INTO maintenance_log (at, target, target_id, action, reason, source, related_id)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (at, target, int(target_id), action, reason, source, related_id),
    )


class UnknownCard(LookupError):
    pass


def card_row(db: Any, card_id: int) -> dict[str, Any]:
    conn = _conn(db)
    cur = conn.execute("SELECT * FROM cards WHERE id = ?", (int(card_id),))
    row = cur.fetchone()
    if row is None:
        raise UnknownCard(card_id)
    return dict(zip([d[0] for d in cur.description], row))


def record_feedback(db: Any, card_id: int, kind: str, *, source: str, at: Any = None,
                    note: str | None = None, session: str | None = None, key: str | None = None) -> int | None:
    """Append one event; returns its id, or None when `key` was already recorded (detected events are
    idempotent). `note` must already be redacted. Does not commit: callers own the transaction."""
    if kind not in ("helpful", "harmful"):
        raise ValueError(f"feedback kind must be helpful or harmful, not {kind!r}")
    if source not in ("user", "correction", "successful_use"):
        raise ValueError(f"feedback source must be user, correction or successful_use, not {source!r}")
    conn = _conn(db)
    card_row(conn, card_id)
    when = iso(_now(at))
    cur = conn.execute(
        """INSERT OR IGNORE INTO feedback (card_id, kind, at, source, note, session, key)
           VALUES (?, ?, ?, ?, ?, ?, ?)""",
        (int(card_id), kind, when, source, note, session, key),
    )
    if cur.rowcount == 0:
        return None
    _ensure_state(conn, int(card_id), when)
    conn.execute(
        """UPDATE card_trust SET last_feedback_at = max(coalesce(last_feedback_at, ''), ?), revalidate = 0,
           updated_at = ? WHERE card_id = ?""",
        (when, when, int(card_id)),
    )
    return cur.lastrowid


def set_pinned(db: Any, card_id: int, pinned: bool, *, now: datetime | None = None) -> dict[str, Any]:
    """Pin or unpin a card; returns {"id", "pinned", "changed"}. Does not commit."""
    conn = _conn(db)
    row = card_row(conn, card_id)
    changed = bool(row["pinned"]) != bool(pinned)
    if changed:
        at = iso(_now(now))
        conn.execute("UPDATE cards SET pinned = ?, updated_at = ? WHERE id = ?", (1 if pinned else 0, at, card_id))
        log_maintenance(conn, target="card", target_id=card_id, action="pinned" if pinned else "unpinned",
                        reason="by user command", source="user", at=at)
    return {"id": int(card_id), "pinned": bool(pinned), "changed": changed}


def _normalize(text: str) -> str:
    """The cards.norm value: graph.text.normalize_statement (stdlib, deterministic)."""
    from reverie.graph.text import normalize_statement

    return normalize_statement(text)


def insert_card(db: Any, *, statement: str, category: str, confidence: float, now: datetime | str,
                importance: int = 2, sessions: int = 1, writer: str = "trust",
                said_at: str | None = None, last_seen_at: str | None = None) -> int:
    """Insert an active card row directly (anti-patterns, Markdown edits and additions: these must not
    be deduplicated into the card they replace). `statement` must already be redacted."""
    at = iso(_now(now if isinstance(now, datetime) else parse_ts(now)))
    cur = _conn(db).execute(
        """INSERT INTO cards (statement, norm, category, importance, confidence, original_confidence,
               status, sessions, access_count, pinned, writer, created_at, said_at, last_seen_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, 'active', ?, 0, 0, ?, ?, ?, ?, ?)""",
        (statement, _normalize(statement), category, importance, confidence, confidence, max(1, sessions),
         writer, at, said_at or at, last_seen_at or said_at or at, at),
    )
    return int(cur.lastrowid)


def set_card_status(db: Any, card_id: int, status: str, *, at: str) -> None:
    """Change a card's status (and `status_at` when the schema has it), then recompute the relations
    its statements touch (a retired/removed/archived card stops feeding relation state and weight;
    a card moved back starts again). `status` must be one of `graph.model.CARD_STATUSES`. Does not
    commit."""
    from reverie.graph import relations
    from reverie.graph.model import CARD_STATUSES

    if status not in CARD_STATUSES:
        raise ValueError(f"card status must be one of {', '.join(CARD_STATUSES)}, not {status!r}")
    conn = _conn(db)
    conn.execute("UPDATE cards SET status = ?, updated_at = ? WHERE id = ?", (status, at, card_id))
    if any(r[1] == "status_at" for r in conn.execute("PRAGMA table_info(cards)")):
        conn.execute("UPDATE cards SET status_at = ? WHERE id = ?", (at, card_id))
    try:
        touched = relations.triples_of_cards(conn, [int(card_id)])
    except sqlite3.OperationalError as exc:
        if _missing_table(exc):
            return
        raise
    if touched:
        relations.recompute(conn, touched, at)


def supersede(db: Any, old_id: int, new_id: int, *, at: str, contradicted: bool = True) -> None:
    """Mark `old_id` superseded by `new_id`; a superseded card's confidence goes to 0."""
    conn = _conn(db)
    set_card_status(conn, old_id, "superseded", at=at)
    conn.execute("UPDATE cards SET superseded_by = ?, confidence = 0 WHERE id = ?", (new_id, old_id))
    _ensure_state(conn, old_id, at)
    conn.execute("UPDATE card_trust SET contradicted = ?, updated_at = ? WHERE card_id = ?",
                 (1 if contradicted else 0, at, old_id))


def copy_links(db: Any, from_id: int, to_id: int) -> None:
    """Give `to_id` the entities and sessions of `from_id` (so entity recall finds the replacement)."""
    conn = _conn(db)
    conn.execute(
        "INSERT OR IGNORE INTO card_entities (card_id, entity_id) SELECT ?, entity_id FROM card_entities WHERE card_id = ?",
        (to_id, from_id),
    )
    conn.execute(
        "INSERT OR IGNORE INTO card_sessions (card_id, session, said_at) SELECT ?, session, said_at FROM card_sessions WHERE card_id = ?",
        (to_id, from_id),
    )


def invert(db: Any, card_id: int, *, now: datetime | None = None, source: str = "feedback",
           reason: str = "") -> int:
    """Turn a harmful rule into an "AVOID: ..." card that supersedes it; returns the new card id."""
    conn = _conn(db)
    at = iso(_now(now))
    row = card_row(conn, card_id)
    new_id = insert_card(
        conn, statement=anti_pattern_statement(row["statement"]), category=row["category"],
        confidence=ANTI_PATTERN_CONFIDENCE, now=at, importance=row["importance"], sessions=row["sessions"],
        said_at=row["said_at"], last_seen_at=row["last_seen_at"],
    )
    copy_links(conn, card_id, new_id)
    _ensure_state(conn, new_id, at)
    conn.execute("UPDATE card_trust SET anti_pattern_of = ?, updated_at = ? WHERE card_id = ?", (card_id, at, new_id))
    supersede(conn, card_id, new_id, at=at)
    log_maintenance(conn, target="card", target_id=card_id, action="inverted", source=source, at=at,
                    reason=reason or "reported harmful: inverted into an anti-pattern", related_id=new_id)
    return new_id


def evaluate_card(db: Any, card_id: int, *, now: datetime | None = None,
                  half_life_days: float = DEFAULT_HALF_LIFE_DAYS, source: str = "feedback") -> dict[str, Any]:
    """One maturity pass for one card, then the anti-pattern check. Returns {"id", "maturity_before",
    "maturity", "score", "helpful", "harmful", "events", "inverted_to"}. Does not commit."""
    conn = _conn(db)
    current = _now(now)
    at = iso(current)
    row = card_row(conn, card_id)
    st = conn.execute("SELECT maturity FROM card_trust WHERE card_id = ?", (card_id,)).fetchone()
    before = st[0] if st else "candidate"
    fs = score_events(feedback_events(conn, [card_id])[card_id], now=current, half_life_days=half_life_days)
    after = next_maturity(before, fs, pinned=bool(row["pinned"]))
    if after != before:
        _ensure_state(conn, card_id, at)
        conn.execute("UPDATE card_trust SET maturity = ?, maturity_updated_at = ?, updated_at = ? WHERE card_id = ?",
                     (after, at, at, card_id))
        log_maintenance(conn, target="card", target_id=card_id, action=f"maturity:{after}", source=source, at=at,
                        reason=(f"{before} -> {after}: {fs.events} events, helpful {fs.helpful:.2f}, "
                                f"harmful {fs.harmful:.2f} (decayed), score {effective_score(fs, before):.2f}"))
    inverted_to = None
    if row["status"] == "active" and should_invert(fs, category=row["category"], pinned=bool(row["pinned"]),
                                                   statement=row["statement"]):
        inverted_to = invert(conn, card_id, now=current, source=source,
                             reason=f"decayed harm {fs.harmful:.2f} >= {INVERT_HARM:g} and > "
                                    f"{INVERT_RATIO:g} x help {fs.helpful:.2f}")
    return {
        "id": int(card_id), "maturity_before": before, "maturity": after,
        "score": effective_score(fs, after), "helpful": round(fs.helpful, 4), "harmful": round(fs.harmful, 4),
        "helpful_count": fs.helpful_count, "harmful_count": fs.harmful_count, "events": fs.events,
        "inverted_to": inverted_to,
    }


def contradict(db: Any, card_id: int, *, now: datetime | None = None, by: int | None = None,
               source: str = "consolidation") -> None:
    """A card explicitly contradicted: confidence 0, flagged, never recalled. Does not commit."""
    conn = _conn(db)
    at = iso(_now(now))
    conn.execute("UPDATE cards SET confidence = 0, updated_at = ? WHERE id = ?", (at, card_id))
    _ensure_state(conn, card_id, at)
    conn.execute("UPDATE card_trust SET contradicted = 1, updated_at = ? WHERE card_id = ?", (at, card_id))
    log_maintenance(conn, target="card", target_id=card_id, action="contradicted", source=source, at=at,
                    reason="explicitly contradicted: confidence 0", related_id=by)


def consolidation_pass(db: Any, *, run_key: str, sessions: Iterable[str], now: datetime | None = None,
                       half_life_days: float = DEFAULT_HALF_LIFE_DAYS,
                       reinforced: Iterable[int] | None = None, restore_reinforced: bool = False) -> dict[str, Any]:
    """The trust pass run once at the end of each consolidation of an agent. Idempotent per run_key.

    - contradicted: superseded cards whose confidence is still above 0 go to 0 (flag contradicted);
    - restated: an active card still marked contradicted (graph.merge brought it back because it
      was said again after its successor) gets its original confidence back;
    - decay (only when `sessions`, the sessions with newly consolidated messages, is non-empty):
      active, unpinned cards not reinforced in this run (no card_sessions row for one of `sessions`,
      not listed in `reinforced`) lose 0.05. Reinforced cards were already restored by
      graph.merge (min(c + 0.1, original) per reinforcement); with `restore_reinforced` this pass
      applies that restore itself instead (for a merge that does not);
    - needs_maintenance flag set below 0.2 and cleared at or above it;
    - maturity pass + anti-pattern check for every card with feedback or a non-candidate rung;
    - re-validation flag after 180 days without feedback, reinforcement or creation.
    Returns counts. Commits."""
    conn = _conn(db)
    current = _now(now)
    at = iso(current)
    sessions = sorted({str(s) for s in sessions})
    summary: dict[str, Any] = {"run_key": run_key, "sessions": len(sessions), "decayed": 0, "restored": 0,
                               "contradicted": 0, "restated": 0, "flagged": 0, "revalidate": 0, "maturity_changes": 0,
                               "inverted": [], "skipped": False}
    with transaction(conn):
        if conn.execute("SELECT 1 FROM trust_passes WHERE run_key = ?", (run_key,)).fetchone():
            summary["skipped"] = True
            return summary
        for (cid,) in conn.execute(
            "SELECT id FROM cards WHERE status = 'superseded' AND confidence > 0"
        ).fetchall():
            contradict(conn, cid, now=current, source="consolidation")
            summary["contradicted"] += 1
        # A contradicted card restated later comes back active (graph.merge): newest wins, so it
        # gets its original confidence back.
        for cid, orig in conn.execute(
            """SELECT c.id, c.original_confidence FROM cards c JOIN card_trust t ON t.card_id = c.id
               WHERE c.status = 'active' AND t.contradicted = 1"""
        ).fetchall():
            conn.execute("UPDATE cards SET confidence = ? WHERE id = ?", (orig, cid))
            conn.execute("UPDATE card_trust SET contradicted = 0, updated_at = ? WHERE card_id = ?", (at, cid))
            log_maintenance(conn, target="card", target_id=cid, action="restated", source="consolidation", at=at,
                            reason=f"restated after being contradicted: confidence back to {orig:.2f}")
            summary["restated"] += 1
        if sessions:
            touched: set[int] = {int(i) for i in (reinforced or [])}
            for chunk in _chunks(sessions):
                marks = ",".join("?" * len(chunk))
                touched.update(r[0] for r in conn.execute(
                    f"SELECT DISTINCT card_id FROM card_sessions WHERE session IN ({marks})", chunk))
            for cid, conf, orig in conn.execute(
                "SELECT id, confidence, original_confidence FROM cards WHERE status = 'active' AND pinned = 0"
            ).fetchall():
                if cid in touched:
                    if not restore_reinforced:
                        continue
                    new = restored_confidence(conf, orig)
                else:
                    new = decayed_confidence(conf)
                if new != conf:
                    conn.execute("UPDATE cards SET confidence = ? WHERE id = ?", (new, cid))
                    summary["restored" if cid in touched else "decayed"] += 1
        # Maintenance flags follow confidence (set and cleared).
        for cid, conf, flag in conn.execute(
            """SELECT c.id, c.confidence, coalesce(t.needs_maintenance, 0) FROM cards c
               LEFT JOIN card_trust t ON t.card_id = c.id WHERE c.status = 'active'"""
        ).fetchall():
            want = 1 if needs_maintenance(conf) else 0
            if want != flag:
                _ensure_state(conn, cid, at)
                conn.execute("UPDATE card_trust SET needs_maintenance = ?, updated_at = ? WHERE card_id = ?",
                             (want, at, cid))
                if want:
                    summary["flagged"] += 1
                    log_maintenance(conn, target="card", target_id=cid, action="flagged", source="consolidation",
                                    at=at, reason=f"confidence {conf:.2f} < {MAINTENANCE_BELOW:g}")
        # Maturity and anti-patterns.
        ids = [r[0] for r in conn.execute(
            """SELECT DISTINCT card_id FROM feedback
               UNION SELECT card_id FROM card_trust WHERE maturity != 'candidate'"""
        ).fetchall()]
        for cid in sorted(ids):
            status = conn.execute("SELECT status FROM cards WHERE id = ?", (cid,)).fetchone()
            if status is None or status[0] != "active":
                continue
            res = evaluate_card(conn, cid, now=current, half_life_days=half_life_days, source="consolidation")
            if res["maturity"] != res["maturity_before"]:
                summary["maturity_changes"] += 1
            if res["inverted_to"]:
                summary["inverted"].append({"rule": cid, "anti_pattern": res["inverted_to"]})
        # Silence.
        for cid, created, last_seen, last_fb, validated, reval in conn.execute(
            """SELECT c.id, c.created_at, c.last_seen_at, t.last_feedback_at, t.validated_at,
                      coalesce(t.revalidate, 0)
               FROM cards c LEFT JOIN card_trust t ON t.card_id = c.id WHERE c.status = 'active'"""
        ).fetchall():
            stamps = [s for s in map(parse_ts, (created, last_seen, last_fb, validated)) if s is not None]
            last = max(stamps) if stamps else None
            want = 1 if last is not None and silent(last, current) else 0
            if want != reval:
                _ensure_state(conn, cid, at)
                conn.execute("UPDATE card_trust SET revalidate = ?, updated_at = ? WHERE card_id = ?", (want, at, cid))
                if want:
                    summary["revalidate"] += 1
                    days = (current - last).days if last else 0
                    log_maintenance(conn, target="card", target_id=cid, action="revalidate", source="consolidation",
                                    at=at, reason=f"no feedback or reinforcement for {days} days (>= {SILENCE_DAYS})")
        conn.execute("INSERT INTO trust_passes (run_key, at, summary) VALUES (?, ?, ?)",
                     (run_key, at, json.dumps(summary, sort_keys=True)))
    import logging

    logging.getLogger(__name__).info("trust pass %s: %s", run_key, {k: v for k, v in summary.items() if k != "inverted"})
    return summary
