"""`reverie search`: an agent's cards first, then its raw history from the index.

Invariants: read-only (the db is opened with `mode=ro`, no migration runs); history texts are the
index's, already redacted when stored, and every text returned passes `scrub` (remembered
secrets) again; the memories we injected (`graph.recall.MARKER`, inside a hook wrapper or to the
end of their block) are never found nor shown: a block holding them counts only by its own words.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any, Callable


#: The tokenizer of the index's `blocks_fts` (consolidate.store m001_index); `search_history` matches
#: the user's own words beside an injected memory with it too.
BLOCKS_TOKENIZER = "porter unicode61"


def _term_query(term: str) -> str:
    """One query term for `blocks_fts` (detail=none: no multi-token phrases): a word is a one-token
    phrase; an identifier such as `tool_result` or `parse-config` is the AND of its parts."""
    from reverie.graph.recall import _phrase

    parts = [p for p in re.split(r"[\W_]+", term) if p]
    if len(parts) <= 1:
        return _phrase(parts[0] if parts else term)
    return "(" + " AND ".join(_phrase(p) for p in parts) + ")"


#: Wrappers in which Claude Code hands a hook's output to the model, inside a user turn (v1:
#: `<user-prompt-submit-hook>`; later versions: `<system-reminder>`).
_WRAPPED = re.compile(r"<(user-prompt-submit-hook|system-reminder)>.*?</\1>", re.S)


def own_text(text: str, marker: str) -> str:
    """`text` without the memories we injected: every hook wrapper that holds `marker` is cut, and
    what still follows a bare `marker` (an unwrapped injection runs to the end of its block)."""
    out = _WRAPPED.sub(lambda m: " " if marker in m.group(0) else m.group(0), text)
    at = out.find(marker)
    return out[:at] if at >= 0 else out


def _snippet(text: str, terms: list[str], width: int = 24) -> str:
    """About `width` words of `text` around the first query term, the words that match a term (the
    same word or the same stem) in [brackets]: what FTS5's snippet() gives for the other blocks."""
    from reverie.graph.text import fold, stem

    stems = {stem(t) for t in terms}

    def hit(word: str) -> bool:
        w = fold(word).strip(".,;:!?()[]{}\"'`")
        return bool(w) and (stem(w) in stems or w in terms)

    words = text.split()
    first = next((i for i, w in enumerate(words) if hit(w)), 0)
    lo = max(0, first - width // 3)
    piece = words[lo:lo + width]
    shown = " ".join(f"[{w}]" if hit(w) else w for w in piece)
    return ("..." if lo > 0 else "") + shown + ("..." if lo + width < len(words) else "")


def search_history(conn: sqlite3.Connection, query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Message blocks matching `query` (all content words, else any), best BM25 first, with the
    conversation id, timestamp, role and a snippet. A block that carries memories we injected
    (`graph.recall.MARKER`) counts only by the user's own words around them (`own_text`): a query
    that matches the injected memories alone finds nothing there."""
    from reverie.graph.recall import MARKER, _fts_terms, all_then_any

    terms = _fts_terms(query)
    if not terms:
        return []

    def fetch(match: str) -> list:
        rows = conn.execute(
            """SELECT m.conversation, m.id, m.timestamp, m.role, b.type, b.tool_name,
                      snippet(blocks_fts, 0, '[', ']', '...', 24), bm25(blocks_fts) AS score,
                      CASE WHEN instr(b.text, ?) > 0 THEN b.text END
               FROM blocks_fts JOIN blocks b ON b.id = blocks_fts.rowid JOIN messages m ON m.id = b.message_id
               WHERE blocks_fts MATCH ?
               ORDER BY score, b.id LIMIT ?""",
            (MARKER, match, limit * 4)).fetchall()
        out = []
        own_fts = None
        for row in rows:
            text = row[8]
            if text is not None:      # ours inside: keep it only when the user's own words match
                own = own_text(text, MARKER)
                if own_fts is None:   # the same tokenizer and query as blocks_fts, on the own words
                    own_fts = sqlite3.connect(":memory:")
                    own_fts.execute(f"CREATE VIRTUAL TABLE own USING fts5(x, tokenize='{BLOCKS_TOKENIZER}')")
                own_fts.execute("DELETE FROM own")
                own_fts.execute("INSERT INTO own(x) VALUES (?)", (own,))
                if own_fts.execute("SELECT 1 FROM own WHERE own MATCH ?", (match,)).fetchone() is None:
                    continue
                row = (*row[:6], _snippet(own, terms), row[7])
            out.append(row[:8])
        if own_fts is not None:
            own_fts.close()
        return out[:limit]

    from .index_read import conversation_harnesses

    rows = all_then_any(fetch, [_term_query(t) for t in terms])[:limit]
    harness = conversation_harnesses(conn, [r[0] for r in rows])
    return [{"conversation": conv, "harness": harness.get(conv, "claude-code"), "message_id": mid, "at": ts or "",
             "role": role, "type": btype, "tool": tool, "snippet": " ".join((snip or "").split()),
             "score": round(-float(score), 4)}
            for conv, mid, ts, role, btype, tool, snip, score in rows]


def search(db_path: Path, query: str, *, limit: int = 10,
           scrub: Callable[[str], str] | None = None) -> dict[str, Any]:
    """{"query", "cards": [...], "history": [...]} for one agent db. Every card says which harnesses
    its evidence came from (`harnesses`: claude-code | codex | gemini), every history row its
    conversation's `harness`."""
    from reverie.graph.recall import connect_readonly, memory_harnesses, search_cards

    clean = scrub or (lambda s: s)
    conn = connect_readonly(db_path, busy_timeout_s=2.0)
    try:
        cards = search_cards(conn, query, limit)
        history = search_history(conn, query, limit)
        of_cards = memory_harnesses(conn, [c["id"] for c in cards], [])["cards"]
    finally:
        conn.close()
    for c in cards:
        c["harnesses"] = of_cards.get(str(c["id"]), [])
    for c in cards:
        c["statement"] = clean(c["statement"])
    for h in history:
        h["snippet"] = clean(h["snippet"])
    return {"query": query, "cards": cards, "history": history}
