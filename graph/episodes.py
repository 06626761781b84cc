"""Episodic context: one short summary per session of what it worked on, fading as later sessions come.

Standard library only (session start reads "Recent context" in the hook process).

Rules (docs/trust.md):
- One episode per session, written at consolidation: offline from the session's first user request
  and its cards (`summarize_offline`), or by a model backend. Texts are already redacted.
- Salience starts at 1.0 and is multiplied by 0.8 for every later session of the agent (a session
  whose episode starts later); the episode's confidence decays with it, by the cards' step (0.05 per
  later session). Recalled: salience + 0.2 (at most 2.0) and confidence + 0.1 (at most its original).
- Pruned (status 'pruned', logged, listed in archive.md; never deleted) below salience 0.1 or
  confidence 0.2; at most 20 active episodes (the lowest salience, then the oldest, go first).
- Later sessions are counted from the episodes table itself (every consolidated session has a row,
  pruned and empty ones included; episodes a person added in episodic.md do not count), so the arithmetic is exact whatever order sessions are consolidated in:
  an episode with k later sessions has salience 0.8 ** k x (its recall boosts, applied in order).
- Session start shows the top RECENT_LIMIT active episodes with salience >= 0.3 and confidence >= 0.4.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import datetime
TYPE_CHECKING = False  # typing costs the hook path ~2.4 ms
if TYPE_CHECKING:
    from typing import Any, Iterable

from reverie.graph.trust import (
    DECAY_STEP,
    RESTORE_STEP,
    _conn,
    _now,
    transaction,
    iso,
    log_maintenance,
    parse_ts,
)


SALIENCE_FACTOR = 0.8
PRUNE_SALIENCE = 0.1
PRUNE_CONFIDENCE = 0.2
MAX_EPISODES = 20
RECALL_BOOST = 0.2
MAX_SALIENCE = 2.0
RECENT_SALIENCE = 0.3
RECENT_CONFIDENCE = 0.4
RECENT_LIMIT = 3
#: An offline summary is a literal extract of the request plus the session's own cards: trusted like
#: "success without feedback" (0.7), below an explicit statement.
OFFLINE_CONFIDENCE = 0.7
SUMMARY_REQUEST_WORDS = 25
SUMMARY_CARDS = 2
SUMMARY_CARD_WORDS = 18
SUMMARY_MAX_CHARS = 400

_ROUND = 6


def _clip_words(text: str, n: int) -> str:
    words = text.split()
    if len(words) <= n:
        return " ".join(words)
    return " ".join(words[:n]).rstrip(",;:.") + "..."


def _sentence(text: str) -> str:
    """End `text` with exactly one full stop, unless it already ends with "...", "?" or "!"."""
    return text if text.endswith(("...", "?", "!")) else text.rstrip(".;:, ") + "."


_NOISE = re.compile(r"<(system-reminder|command-[a-z-]+|local-command-[a-z-]+|task-notification)>.*?</\1>",
                    re.S | re.I)


def summarize_offline(first_request: str, card_statements: Iterable[str] = ()) -> str:
    """"Worked on: <first request, clipped>. Learned: <up to two card statements>." Deterministic.
    Empty request and no cards: an empty string (the caller records no episode text)."""
    request = " ".join(_NOISE.sub(" ", first_request or "").split())
    cards = [" ".join(s.split()) for s in card_statements if s and s.strip()][:SUMMARY_CARDS]
    parts = []
    if request:
        parts.append("Worked on: " + _sentence(_clip_words(request, SUMMARY_REQUEST_WORDS)))
    if cards:
        clips = [_clip_words(s, SUMMARY_CARD_WORDS) for s in cards]
        learned = "; ".join(c if c.endswith("...") else c.rstrip(".;:, ") for c in clips)
        parts.append("Learned: " + _sentence(learned))
    text = " ".join(parts)
    if len(text) > SUMMARY_MAX_CHARS:
        text = text[: SUMMARY_MAX_CHARS - 3].rstrip() + "..."
    return text


def session_card_statements(db: Any, session: str, *, limit: int = SUMMARY_CARDS) -> list[str]:
    """Statements of the active cards seen in `session`, most important first (for summarize_offline)."""
    rows = _conn(db).execute(
        """SELECT c.statement FROM cards c JOIN card_sessions s ON s.card_id = c.id
           WHERE s.session = ? AND c.status = 'active' ORDER BY c.importance DESC, c.sessions DESC, c.id LIMIT ?""",
        (session, int(limit)),
    ).fetchall()
    return [r[0] for r in rows]


def record_episode(db: Any, session: str, started_at: str, summary: str, *, now: datetime | None = None,
                   confidence: float = OFFLINE_CONFIDENCE, writer: str = "offline") -> int:
    """Insert the episode of `session`, or update its summary when the session already has one (a
    resumed session keeps its salience and its place in time). Call it for every consolidated
    session: a session with nothing to summarize gets a row with status 'empty' (it still counts as
    a later session for the others, and is never shown). `summary` must already be redacted.
    Returns the id. Does not commit."""
    conn = _conn(db)
    text = " ".join((summary or "").split())
    at = iso(_now(now))
    start = iso(parse_ts(started_at) or _now(now))
    row = conn.execute("SELECT id, summary, status FROM episodes WHERE session = ?", (session,)).fetchone()
    if row:
        if text and row[1] != text:
            status = "active" if row[2] == "empty" else row[2]
            conn.execute("UPDATE episodes SET summary = ?, writer = ?, status = ?, updated_at = ? WHERE id = ?",
                         (text, writer, status, at, row[0]))
        return int(row[0])
    conf = max(0.0, min(1.0, float(confidence)))
    cur = conn.execute(
        """INSERT INTO episodes (session, started_at, summary, writer, salience, confidence, original_confidence,
               later_sessions, recalled_count, status, created_at, updated_at)
           VALUES (?, ?, ?, ?, 1.0, ?, ?, 0, 0, ?, ?, ?)""",
        (session, start, text, writer, conf, conf, "active" if text else "empty", at, at),
    )
    return int(cur.lastrowid)


def apply_decay(db: Any, *, now: datetime | None = None) -> dict[str, Any]:
    """Fold later sessions into salience and confidence, then prune. Idempotent: each episode stores
    how many later sessions it has absorbed. Returns {"decayed", "pruned": [ids], "capped": [ids]}.
    Commits."""
    conn = _conn(db)
    at = iso(_now(now))
    out: dict[str, Any] = {"decayed": 0, "pruned": [], "capped": []}
    with transaction(conn):
        rows = conn.execute(
            """SELECT e.id, e.salience, e.confidence, e.later_sessions,
                      (SELECT count(*) FROM episodes l WHERE l.started_at > e.started_at AND l.writer != 'human') AS later
               FROM episodes e WHERE e.status IN ('active', 'empty')"""
        ).fetchall()
        for eid, sal, conf, applied, later in rows:
            k = later - applied
            if k <= 0:
                continue
            new_sal = round(sal * SALIENCE_FACTOR ** k, 12)
            new_conf = max(0.0, round(conf - DECAY_STEP * k, _ROUND))
            conn.execute("UPDATE episodes SET salience = ?, confidence = ?, later_sessions = ?, updated_at = ? "
                         "WHERE id = ?", (new_sal, new_conf, later, at, eid))
            out["decayed"] += 1
        for eid, sal, conf in conn.execute(
            "SELECT id, salience, confidence FROM episodes WHERE status = 'active' AND (salience < ? OR confidence < ?)",
            (PRUNE_SALIENCE, PRUNE_CONFIDENCE),
        ).fetchall():
            why = []
            if sal < PRUNE_SALIENCE:
                why.append(f"salience {sal:.3f} < {PRUNE_SALIENCE:g}")
            if conf < PRUNE_CONFIDENCE:
                why.append(f"confidence {conf:.2f} < {PRUNE_CONFIDENCE:g}")
            _set_status(conn, eid, "pruned", at=at, reason="; ".join(why), source="consolidation", action="pruned")
            out["pruned"].append(eid)
        active = conn.execute(
            "SELECT id, salience FROM episodes WHERE status = 'active' ORDER BY salience DESC, started_at DESC, id DESC"
        ).fetchall()
        for eid, sal in active[MAX_EPISODES:]:
            _set_status(conn, eid, "pruned", at=at, source="consolidation", action="pruned",
                        reason=f"over the {MAX_EPISODES}-episode cap (salience {sal:.3f})")
            out["capped"].append(eid)
    return out


def _set_status(conn: sqlite3.Connection, eid: int, status: str, *, at: str, reason: str, source: str,
                action: str) -> None:
    conn.execute("UPDATE episodes SET status = ?, updated_at = ? WHERE id = ?", (status, at, eid))
    log_maintenance(conn, target="episode", target_id=eid, action=action, reason=reason, source=source, at=at)


def reinforce(db: Any, episode_ids: Iterable[int], *, at: Any = None) -> int:
    """A recall of each listed episode (repeat an id to count it twice): salience + 0.2 (max 2.0),
    confidence + 0.1 (max original). Only active episodes. Returns how many were reinforced. Does not
    commit."""
    conn = _conn(db)
    when = iso(_now(at))
    n = 0
    for eid in episode_ids:
        cur = conn.execute(
            """UPDATE episodes SET salience = min(?, round(salience + ?, 6)),
                   confidence = max(confidence, min(original_confidence, round(confidence + ?, 6))),
                   recalled_count = recalled_count + 1, last_recalled_at = ?, updated_at = ?
               WHERE id = ? AND status = 'active'""",
            (MAX_SALIENCE, RECALL_BOOST, RESTORE_STEP, when, when, int(eid)),
        )
        n += cur.rowcount
    return n


def fold_recall_events(db: Any, events: Iterable[dict[str, Any]]) -> int:
    """Reinforce the episodes named in recall-log events (`"episodes": [ids]`), each event once.
    The events come from the one reader of the log (`graph.lifecycle.read_recall_events`, via the
    consolidation pass), whose cursor delivers every line once: no timestamp watermark here, so
    events of the same second are all counted. Returns the number of reinforcements. Commits."""
    conn = _conn(db)
    n = 0
    with transaction(conn):
        for ev in events:
            if not isinstance(ev, dict):
                continue
            when = parse_ts(ev.get("at"))
            ids = ev.get("episodes") or []
            if when is None or not isinstance(ids, list):
                continue
            n += reinforce(conn, [i for i in ids if isinstance(i, int) and not isinstance(i, bool)
                                  and 1 <= i <= 2 ** 62], at=when)
    return n


# --- session start: "Recent context" (stdlib, read-only) --------------------------------------------

def recent_context(db: Any, *, limit: int = RECENT_LIMIT) -> list[dict[str, Any]]:
    """Top `limit` active episodes with salience >= 0.3 and confidence >= 0.4, most salient first
    (then newest). A db without the episodes table yields []."""
    conn = _conn(db)
    try:
        rows = conn.execute(
            """SELECT id, session, started_at, summary, salience, confidence FROM episodes
               WHERE status = 'active' AND salience >= ? AND confidence >= ?
               ORDER BY salience DESC, started_at DESC, id DESC LIMIT ?""",
            (RECENT_SALIENCE, RECENT_CONFIDENCE, int(limit)),
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise
    return [
        {"id": r[0], "session": r[1], "date": (r[2] or "")[:10], "summary": r[3],
         "salience": round(r[4], 3), "confidence": round(r[5], 3)}
        for r in rows
    ]
