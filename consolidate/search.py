"""`reverie search`: an agent's cards first, then its raw history from the index.

Invariants: read-only (the db is opened with `mode=ro`, no migration runs); history texts are the
index's, already redacted when stored, and every text returned passes `scrub` (remembered
secrets) again; blocks that carry our own injected memories (`graph.recall.MARKER`) are skipped.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any, Callable


def _term_query(term: str) -> str:
    """One query term for `blocks_fts` (detail=none: no multi-token phrases): a word is a one-token
    phrase; an identifier such as `tool_result` or `parse-config` is the AND of its parts."""
    from graph.recall import _phrase

    parts = [p for p in re.split(r"[\W_]+", term) if p]
    if len(parts) <= 1:
        return _phrase(parts[0] if parts else term)
    return "(" + " AND ".join(_phrase(p) for p in parts) + ")"


def search_history(conn: sqlite3.Connection, query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Message blocks matching `query` (all content words, else any), best BM25 first, with the
    conversation id, timestamp, role and a snippet."""
    from graph.recall import MARKER, _fts_terms, all_then_any

    terms = _fts_terms(query)
    if not terms:
        return []
    rows = all_then_any(lambda match: conn.execute(
        """SELECT m.conversation, m.id, m.timestamp, m.role, b.type, b.tool_name,
                  snippet(blocks_fts, 0, '[', ']', '...', 24), bm25(blocks_fts) AS score
           FROM blocks_fts JOIN blocks b ON b.id = blocks_fts.rowid JOIN messages m ON m.id = b.message_id
           WHERE blocks_fts MATCH ? AND instr(b.text, ?) = 0
           ORDER BY score, b.id LIMIT ?""",
        (match, MARKER, limit)).fetchall(), [_term_query(t) for t in terms])
    return [{"conversation": conv, "message_id": mid, "at": ts or "", "role": role, "type": btype,
             "tool": tool, "snippet": " ".join((snip or "").split()), "score": round(-float(score), 4)}
            for conv, mid, ts, role, btype, tool, snip, score in rows[:limit]]


def search(db_path: Path, query: str, *, limit: int = 10,
           scrub: Callable[[str], str] | None = None) -> dict[str, Any]:
    """{"query", "cards": [...], "history": [...]} for one agent db."""
    from graph.recall import connect_readonly, search_cards

    clean = scrub or (lambda s: s)
    conn = connect_readonly(db_path, busy_timeout_s=2.0)
    try:
        cards = search_cards(conn, query, limit)
        history = search_history(conn, query, limit)
    finally:
        conn.close()
    for c in cards:
        c["statement"] = clean(c["statement"])
    for h in history:
        h["snippet"] = clean(h["snippet"])
    return {"query": query, "cards": cards, "history": history}
