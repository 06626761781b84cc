"""`reverie forget`: delete memories on request, and do not learn them again.

Forgetting a card deletes it with its evidence, sessions, entity links and relation statements;
forgetting an entity deletes the entity, its aliases, every relation statement that names it and
every card that mentions it. Entities left with no card and no statement are deleted too. Cards
that the forgotten card had superseded become active again (nothing supersedes them any more).

What was forgotten is remembered only as hashes in `forgotten`: the SHA-256 of each card's
normalized statement and of each `source_key` (session + passages) behind it. `graph.merge`
refuses a card whose statement or source key hashes to one of them, so consolidating the same
transcripts again does not bring it back.

Why a plain SHA-256 and not an HMAC with the home's secret key: the statements were redacted before
they were stored, so the hash input carries no secret value; a plain hash keeps the graph free of
any dependency on redact's key. The hash is still one-way: the forgotten text is not kept.

Episodes: an episode summary built from a forgotten card's statement ("Learned: ...") is rebuilt
without it in the same transaction. Afterwards the FTS index is merged (`optimize`) and the WAL
checkpointed, with `secure_delete` on, so no byte of the forgotten text stays in the db or -wal.

Invariants: one transaction per call; relation state is recomputed for every touched triple before
commit; `graph_meta['generation']` is bumped so open merge sessions reload their caches.
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any, Iterable

from . import relations
from .store import connection, get_meta, set_meta, transaction

log = logging.getLogger(__name__)


def statement_hash(norm: str) -> str:
    """Hash of a normalized statement (`cards.norm`). See the module docstring for why SHA-256."""
    return hashlib.sha256(("statement:" + norm).encode("utf-8")).hexdigest()


def source_hash(source_key: str) -> str:
    return hashlib.sha256(("source:" + source_key).encode("utf-8")).hexdigest()


def is_forgotten(db: Any, norm: str, source_key: str = "") -> bool:
    """True when this statement (normalized) or this source key was forgotten."""
    conn = connection(db)
    hashes = [statement_hash(norm)] + ([source_hash(source_key)] if source_key else [])
    row = conn.execute(
        f"SELECT 1 FROM forgotten WHERE hash IN ({','.join('?' * len(hashes))}) LIMIT 1", hashes
    ).fetchone()
    return row is not None


def bump_generation(conn) -> None:
    """Tell open merge sessions (maybe in another process) that cards/entities were removed."""
    gen = int(get_meta(conn, "generation") or 0) + 1
    set_meta(conn, "generation", str(gen))


def _remember(conn, card_ids: list[int], now: str) -> int:
    n = 0
    for i in range(0, len(card_ids), 500):
        chunk = card_ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        hashes = {(statement_hash(norm), "statement") for (norm,) in
                  conn.execute(f"SELECT norm FROM cards WHERE id IN ({marks})", chunk)}
        keys = {k for (k,) in conn.execute(f"SELECT source_key FROM cards WHERE id IN ({marks})", chunk) if k}
        keys |= {k for (k,) in conn.execute(f"SELECT source_key FROM card_sessions WHERE card_id IN ({marks})", chunk) if k}
        hashes |= {(source_hash(k), "source") for k in keys}
        for h, kind in hashes:
            cur = conn.execute("INSERT OR IGNORE INTO forgotten(hash, kind, at) VALUES (?, ?, ?)", (h, kind, now))
            n += cur.rowcount
    return n


def _delete_cards(conn, card_ids: list[int], now: str) -> dict[str, int]:
    counts = {"cards": 0, "evidence": 0, "statements": 0, "reactivated": 0}
    touched: set = relations.triples_of_cards(conn, card_ids)
    for i in range(0, len(card_ids), 500):
        chunk = card_ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        counts["statements"] += conn.execute(
            f"DELETE FROM relation_statements WHERE card_id IN ({marks})", chunk).rowcount
        counts["reactivated"] += conn.execute(
            f"""UPDATE cards SET superseded_by = NULL, status = 'active', status_at = ?, updated_at = ?
                WHERE superseded_by IN ({marks}) AND id NOT IN ({marks})""", (now, now, *chunk, *chunk)).rowcount
        conn.execute(f"UPDATE cards SET superseded_by = NULL WHERE superseded_by IN ({marks})", chunk)
        counts["evidence"] += conn.execute(f"DELETE FROM evidence WHERE card_id IN ({marks})", chunk).rowcount
        conn.execute(f"DELETE FROM card_sessions WHERE card_id IN ({marks})", chunk)
        conn.execute(f"DELETE FROM card_entities WHERE card_id IN ({marks})", chunk)
        counts["cards"] += conn.execute(f"DELETE FROM cards WHERE id IN ({marks})", chunk).rowcount
    relations.recompute(conn, touched, now)
    return counts


def _delete_orphan_entities(conn, candidates: Iterable[int] | None = None) -> int:
    """Entities with no card link and no relation statement; returns how many were deleted."""
    where = ""
    params: list[int] = []
    if candidates is not None:
        params = list(set(candidates))
        if not params:
            return 0
        where = f"AND e.id IN ({','.join('?' * len(params))})"
    orphans = [eid for (eid,) in conn.execute(
        f"""SELECT e.id FROM entities e WHERE NOT EXISTS (SELECT 1 FROM card_entities ce WHERE ce.entity_id = e.id)
            AND NOT EXISTS (SELECT 1 FROM relation_statements s WHERE s.subject_id = e.id OR s.object_id = e.id)
            {where}""", params)]
    for eid in orphans:
        conn.execute("DELETE FROM relations WHERE subject_id = ? OR object_id = ?", (eid, eid))
        conn.execute("DELETE FROM entity_aliases WHERE entity_id = ?", (eid,))
        conn.execute("DELETE FROM entities WHERE id = ?", (eid,))
    return len(orphans)


def _entities_of_cards(conn, card_ids: list[int]) -> set[int]:
    out: set[int] = set()
    for i in range(0, len(card_ids), 500):
        chunk = card_ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        out |= {e for (e,) in conn.execute(f"SELECT entity_id FROM card_entities WHERE card_id IN ({marks})", chunk)}
        for s, o in conn.execute(f"SELECT subject_id, object_id FROM relation_statements WHERE card_id IN ({marks})", chunk):
            out |= {s, o}
    return out


def _forget_in_episodes(conn, card_ids: list[int], now: str, names: Iterable[str] = ()) -> int:
    """Take what is forgotten out of the episode summaries: the statements of these cards (about to
    be deleted) and, when an entity is forgotten, its `names` (name and aliases).

    An offline summary ("Worked on: <first request>. Learned: ...") of a session where a forgotten
    card was seen, or that names a forgotten entity, gets its "Learned:" part rebuilt from the
    session's remaining active cards, and loses its request when the request said the forgotten
    point (two distinctive words of a forgotten statement, or a forgotten name). Any summary (model
    or person written too) then has the forgotten statements' text cut out and every whole-word
    mention of a forgotten name replaced by "[forgotten]". Returns how many episodes changed. Runs inside the caller's transaction; a db without the episodes table
    (no trust schema) has nothing to do."""
    from .episodes import SUMMARY_CARD_WORDS, _clip_words, session_card_statements, summarize_offline

    try:
        conn.execute("SELECT 1 FROM episodes LIMIT 1")
    except Exception:  # noqa: BLE001 - sqlite3.OperationalError: no trust schema
        return 0
    statements: list[str] = []
    sessions: set[str] = set()
    for i in range(0, len(card_ids), 500):
        chunk = card_ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        statements += [st for (st,) in conn.execute(f"SELECT statement FROM cards WHERE id IN ({marks})", chunk)]
        sessions |= {x for (x,) in conn.execute(f"SELECT session FROM card_sessions WHERE card_id IN ({marks})", chunk)}
    # What summarize_offline may have written for each forgotten statement (clipped or whole).
    pieces = set()
    for st in statements:
        flat = " ".join(st.split())
        clip = _clip_words(flat, SUMMARY_CARD_WORDS)
        pieces |= {p for p in (flat, flat.rstrip(".;:, "), clip, clip.rstrip(".;:, ")) if p}
    pieces_sorted = sorted(pieces, key=len, reverse=True)
    wanted = sorted({n.strip() for n in names if n and len(n.strip()) >= 2}, key=len, reverse=True)
    name_re = (re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(n) for n in wanted) + r")(?![\w-])", re.I)
               if wanted else None)
    forgotten = set(card_ids)
    statement_words = [_words(st) for st in statements]
    changed = 0
    rows = conn.execute("SELECT id, session, summary, writer FROM episodes").fetchall()
    for eid, session, summary, writer in rows:
        text = summary or ""
        named = bool(name_re and name_re.search(text))
        if session not in sessions and not named and not any(p in text for p in pieces_sorted):
            continue
        new = text
        if writer == "offline" and (session in sessions or named):
            cut = new.rfind("Learned: ")
            request = new[:cut].strip() if cut >= 0 else new.strip()
            if request.startswith("Worked on: "):
                request = request[len("Worked on: "):]
            said = _words(request)
            if named or any(len(said & sw) >= 2 for sw in statement_words):
                request = ""    # the request said what is forgotten (two of its words or more, or a name)
            remaining = [st for st in session_card_statements(conn, session, limit=len(forgotten) + 2)
                         if st not in statements and not (name_re and name_re.search(st))][:2]
            new = summarize_offline(request, remaining)
        for p in pieces_sorted:
            new = new.replace(p, "")
        if name_re:
            new = name_re.sub("[forgotten]", new)
        new = " ".join(new.split())
        if new != text:
            conn.execute("UPDATE episodes SET summary = ?, status = CASE WHEN ? = '' AND status = 'active' "
                         "THEN 'empty' ELSE status END, updated_at = ? WHERE id = ?", (new, new, now, eid))
            changed += 1
    return changed


def _words(text: str) -> set[str]:
    """Distinctive words of a text (`graph.text.words`: identifiers whole; 4+ characters, not
    stopwords)."""
    from .text import STOPWORDS, words

    return {w for w in words(text) if len(w) >= 4 and w not in STOPWORDS}


def scrub_storage(conn) -> None:
    """After a forget: merge the FTS index (old segments keep the tokens of deleted rows until an
    `optimize`) and checkpoint the WAL with TRUNCATE (old pages stay in the -wal file otherwise).
    With `secure_delete` on during the forget, freed pages were zeroed. Failures are logged, not
    raised (the forget itself is committed)."""
    import sqlite3

    try:
        conn.execute("INSERT INTO cards_fts(cards_fts) VALUES ('optimize')")
        conn.commit()
    except sqlite3.Error:
        log.warning("FTS optimize after forget failed; old index segments may keep tokens until the next one")
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error:
        log.warning("WAL checkpoint after forget failed; old pages may remain until the next checkpoint")


def forget_cards(db: Any, card_ids: Iterable[int], *, now: str) -> dict[str, int]:
    """Delete these cards (and everything that hangs on them only) and remember their hashes.
    Returns counts: cards, evidence, statements, entities, reactivated, hashes. Unknown ids are
    ignored (count 0)."""
    conn = connection(db)
    wanted = sorted({int(c) for c in card_ids})
    conn.execute("PRAGMA secure_delete = ON")   # freed pages are zeroed (no copy of the text left)
    with transaction(conn):
        ids = [cid for (cid,) in conn.execute(
            f"SELECT id FROM cards WHERE id IN ({','.join('?' * len(wanted))})", wanted)] if wanted else []
        if not ids:
            return {"cards": 0, "evidence": 0, "statements": 0, "entities": 0, "reactivated": 0, "hashes": 0}
        hashes = _remember(conn, ids, now)
        entities = _entities_of_cards(conn, ids)
        episodes = _forget_in_episodes(conn, ids, now)
        counts = _delete_cards(conn, ids, now)
        counts["entities"] = _delete_orphan_entities(conn, entities)
        counts["hashes"] = hashes
        counts["episodes"] = episodes
        bump_generation(conn)
    scrub_storage(conn)
    log.info("forgot %d card(s)", counts["cards"])
    return counts


def forget_entity(db: Any, entity_id: int, *, now: str) -> dict[str, int]:
    """Delete an entity, its aliases, every statement naming it and every card mentioning it
    (remembering their hashes), then entities left with nothing."""
    conn = connection(db)
    conn.execute("PRAGMA secure_delete = ON")
    with transaction(conn):
        card_ids = sorted({c for (c,) in conn.execute(
            "SELECT card_id FROM card_entities WHERE entity_id = ?", (entity_id,))} | {c for (c,) in conn.execute(
            "SELECT card_id FROM relation_statements WHERE (subject_id = ? OR object_id = ?) AND card_id IS NOT NULL",
            (entity_id, entity_id))})
        hashes = _remember(conn, card_ids, now) if card_ids else 0
        names = [r[0] for r in conn.execute("SELECT name FROM entities WHERE id = ?", (entity_id,))]
        names += [r[0] for r in conn.execute("SELECT alias FROM entity_aliases WHERE entity_id = ?", (entity_id,))]
        episodes = _forget_in_episodes(conn, card_ids, now, names)
        neighbours = _entities_of_cards(conn, card_ids) if card_ids else set()
        neighbours |= {x for row in conn.execute(
            "SELECT subject_id, object_id FROM relation_statements WHERE subject_id = ? OR object_id = ?",
            (entity_id, entity_id)) for x in row}
        counts = _delete_cards(conn, card_ids, now) if card_ids else \
            {"cards": 0, "evidence": 0, "statements": 0, "reactivated": 0}
        touched = {tuple(r) for r in conn.execute(
            "SELECT DISTINCT subject_id, verb, object_id FROM relation_statements WHERE subject_id = ? OR object_id = ?",
            (entity_id, entity_id))}
        counts["statements"] += conn.execute(
            "DELETE FROM relation_statements WHERE subject_id = ? OR object_id = ?", (entity_id, entity_id)).rowcount
        relations.recompute(conn, touched, now)
        conn.execute("DELETE FROM relations WHERE subject_id = ? OR object_id = ?", (entity_id, entity_id))
        conn.execute("DELETE FROM card_entities WHERE entity_id = ?", (entity_id,))
        conn.execute("DELETE FROM entity_aliases WHERE entity_id = ?", (entity_id,))
        counts["entities"] = conn.execute("DELETE FROM entities WHERE id = ?", (entity_id,)).rowcount
        counts["entities"] += _delete_orphan_entities(conn, neighbours - {entity_id})
        counts["hashes"] = hashes
        counts["episodes"] = episodes
        bump_generation(conn)
    scrub_storage(conn)
    log.info("forgot entity %d with %d card(s)", entity_id, counts["cards"])
    return counts
