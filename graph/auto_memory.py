"""Claude Code's auto memory as cards: the graph side (storage, sync, dedupe). Stdlib + graph only.

Claude Code (2.1.59+) keeps its own memory per project: `MEMORY.md` (an index it loads into every
session) plus one Markdown file per memory (front matter name / description / type, then the body).
`consolidate.auto_memory` finds and reads those files (redacted); `sync_folder` here turns the
entries of one folder into cards:

* each entry is one card with writer `claude-auto-memory` (its source), confidence
  `CONFIDENCE`, pinned (the file manages it: lifecycle, decay and maintenance leave it alone), and a
  row in `auto_memory` (graph.store m005) holding the file as its evidence: folder, entry name,
  SHA-256 of its bytes, modification time;
* a changed file updates its card's statement and category (same card id); a file that is gone
  retires its card (`state` deleted); one that comes back (or changes after a person retired its
  card) makes it active again; an entry whose card was forgotten (`reverie forget`) stays forgotten;
* `update_covers` links reverie's own active cards that state the same point as an active
  auto-memory card (graph.dedupe.judge_pair, word overlap) in `auto_memory_covers`.

Recall on the hook path injects neither the auto-memory cards nor the cards they cover
(`hidden_card_ids`): Claude Code already loads MEMORY.md. `reverie search` and the MCP server show
them, labelled with their source. Nothing here writes outside the agent db.

Invariants: texts given here are already redacted (the caller redacts every text first); one
card per (folder, entry); `merge` never reinforces an auto-memory card (graph.merge skips writer
`claude-auto-memory`), so reverie's own learning stays its own when a memory file is deleted.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any, Iterable

from .db import connection, transaction

SOURCE = "claude-auto-memory"
#: Confidence of an auto-memory card: the user's own tool wrote it down on purpose.
CONFIDENCE = 0.95
#: Claude Code's memory type -> card category.
CATEGORY = {"user": "preference", "feedback": "preference", "project": "fact", "reference": "fact"}
#: Reverie cards considered per auto-memory card when looking for the same point.
COVER_CANDIDATES = 12


@dataclass(frozen=True)
class Entry:
    """One memory entry as read from its folder (every text already redacted)."""

    entry: str                 # file name in the folder, or 'MEMORY.md#<hash>' for a bare index line
    statement: str             # what the card says (the body's first paragraph, else description/name)
    sha256: str                # of the entry's bytes
    name: str = ""
    description: str = ""
    type: str = ""
    mtime: str | None = None   # ISO-8601 UTC


def category_of(memory_type: str) -> str:
    return CATEGORY.get((memory_type or "").strip().lower(), "fact")


def _has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'auto_memory'").fetchone() \
        is not None


def sync_folder(db: Any, folder: str, entries: Iterable[Entry], *, now: str, state_if_absent: str = "deleted",
                ) -> dict[str, int]:
    """Make the cards of `folder` match `entries` (the folder's whole current content), in one
    transaction. Entries no longer listed are retired with `state_if_absent` (deleted, or disabled
    when auto memory is switched off). Returns counts {added, updated, unchanged, retired,
    restored, forgotten}."""
    from .forget import is_forgotten
    from .text import normalize_statement
    from .trust import insert_card, set_card_status

    conn = connection(db)
    counts = {"added": 0, "updated": 0, "unchanged": 0, "retired": 0, "restored": 0, "forgotten": 0}
    wanted = {e.entry: e for e in entries}
    with transaction(conn):
        rows = {r[0]: r for r in conn.execute(
            """SELECT a.entry, a.card_id, a.sha256, a.state, c.status FROM auto_memory a
               LEFT JOIN cards c ON c.id = a.card_id WHERE a.folder = ?""", (folder,))}
        for name, e in wanted.items():
            row = rows.get(name)
            category = category_of(e.type)
            norm = normalize_statement(e.statement)
            if row is None:
                if not norm or is_forgotten(conn, norm):
                    counts["forgotten"] += 1
                    continue
                cid = insert_card(conn, statement=e.statement, category=category, confidence=CONFIDENCE, now=now,
                                  writer=SOURCE, said_at=e.mtime or now, last_seen_at=e.mtime or now)
                conn.execute("UPDATE cards SET pinned = 1, importance = 3 WHERE id = ?", (cid,))
                conn.execute(
                    """INSERT INTO auto_memory(card_id, source, folder, entry, name, description, type, sha256, mtime,
                           state, seen_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'present', ?, ?)""",
                    (cid, SOURCE, folder, name, e.name, e.description, e.type, e.sha256, e.mtime, now, now))
                counts["added"] += 1
                continue
            _, cid, sha, state, status = row
            changed = sha != e.sha256
            if changed:
                conn.execute(
                    """UPDATE cards SET statement = ?, norm = ?, category = ?, updated_at = ?, last_seen_at = ?,
                           vector = NULL WHERE id = ?""",
                    (e.statement, norm, category, now, e.mtime or now, cid))
                counts["updated"] += 1
            if status != "active" and (changed or state != "present"):
                set_card_status(conn, cid, "active", at=now)   # it came back, or a new version of it
                counts["restored"] += 1
            elif not changed:
                counts["unchanged"] += 1
            conn.execute(
                """UPDATE auto_memory SET name = ?, description = ?, type = ?, sha256 = ?, mtime = ?, state = 'present',
                       seen_at = ?, updated_at = CASE WHEN ? THEN ? ELSE updated_at END WHERE card_id = ?""",
                (e.name, e.description, e.type, e.sha256, e.mtime, now, changed, now, cid))
        for name, row in rows.items():
            if name in wanted:
                continue
            _, cid, _, state, status = row
            if state == "present":
                if status == "active":
                    set_card_status(conn, cid, "retired", at=now)
                    counts["retired"] += 1
                conn.execute("UPDATE auto_memory SET state = ?, updated_at = ? WHERE card_id = ?",
                             (state_if_absent, now, cid))
    return counts


def update_covers(db: Any) -> int:
    """Recompute `auto_memory_covers`: each active reverie card (not from auto memory) that states
    the same point as an active auto-memory card. Returns how many cards are covered."""
    from .dedupe import analyze, judge_pair
    from .text import STOPWORDS, words

    conn = connection(db)
    memories = conn.execute(
        """SELECT c.id, c.statement FROM auto_memory a JOIN cards c ON c.id = a.card_id
           WHERE c.status = 'active' ORDER BY c.id""").fetchall()
    covers: dict[int, int] = {}
    for mid, statement in memories:
        terms = []
        for w in words(statement):
            if w not in STOPWORDS and len(w) >= 2 and f'"{w}"' not in terms:
                terms.append('"' + w.replace('"', "") + '"')
        if not terms:
            continue
        mine = analyze(statement)
        for cid, other in conn.execute(
                f"""SELECT c.id, c.statement FROM
                      (SELECT rowid, bm25(cards_fts) AS score FROM cards_fts WHERE cards_fts MATCH ?
                       ORDER BY score LIMIT {int(COVER_CANDIDATES) * 2}) f
                    JOIN cards c ON c.id = f.rowid
                    WHERE c.status = 'active' AND COALESCE(c.writer, '') != ? ORDER BY f.score, c.id""",
                (" OR ".join(terms[:24]), SOURCE)).fetchall()[:COVER_CANDIDATES]:
            if cid not in covers and judge_pair(mine, other, None, kind="lexical").decision == "same":
                covers[cid] = mid
    with transaction(conn):
        conn.execute("DELETE FROM auto_memory_covers")
        conn.executemany("INSERT INTO auto_memory_covers(card_id, memory_card_id) VALUES (?, ?)",
                         sorted(covers.items()))
    return len(covers)


def memory_labels(conn: Any, card_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """card id -> {"source", "entry", "covered_by"} for the given cards that come from auto memory
    or state the same point as one (for labelling search and MCP results). Empty on a db without
    the tables."""
    conn = connection(conn)
    ids = sorted({int(i) for i in card_ids})
    if not ids:
        return {}
    try:
        if not _has_tables(conn):
            return {}
        marks = ",".join("?" * len(ids))
        out: dict[int, dict[str, Any]] = {}
        for cid, entry in conn.execute(f"SELECT card_id, entry FROM auto_memory WHERE card_id IN ({marks})", ids):
            out[int(cid)] = {"source": SOURCE, "entry": entry}
        for cid, mid in conn.execute(
                f"SELECT card_id, memory_card_id FROM auto_memory_covers WHERE card_id IN ({marks})", ids):
            out[int(cid)] = {"source": "reverie", "covered_by": int(mid)}
        return out
    except sqlite3.OperationalError:
        return {}
