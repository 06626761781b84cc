"""The notes nearest a prompt (stdlib only, hook path): `nearest_cards` gathers candidates (FTS5
BM25, the named entities' cards, card vectors) and ranks them by the weighted hybrid that
graph/recall.py's docstring describes (relevance x strength ** `STRENGTH_EXP`, with the lexical
floor, the conversation-neighbour lift, the sibling and date factors).

Invariants: only active cards are candidates; the work is bounded at any store size (a full vector
scan only up to `FULL_SCAN_MAX_CARDS` active cards, `ENTITY_CARDS_SCANNED` cards per named entity,
`NEIGHBOUR_ROWS` evidence rows per window).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import operator
import sqlite3
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hook ~2.4 ms
if TYPE_CHECKING:
    from typing import Any
    from .recall import PromptEmbedder

from . import trust as _trust
from .recall_query import MAX_PROMPT_CHARS, _fts_terms, _in_dates, fts_query, prompt_dates

# The figures in the comments of this module are one-off comparisons, each measured by editing the
# constant and rerunning `python bench/recall_bench.py locomo --rebuild` (quality) or `... latency`
# (timing) on the tree of that day; no bench option sets these constants.

#: Cards per named entity considered as candidates (its most recently linked ones).
ENTITY_CARDS_SCANNED = 300
#: A card said within a date the prompt names ("in July 2023", "on 13 October") is this much more
#: relevant (a multiplier of 1 + DATE_BOOST).
DATE_BOOST = 0.5
#: Lexical relevance is BM25 over max(best hit, this share of a whole-query match's BM25).
LEX_FLOOR = 0.5
#: An agent with at most this many active cards has every card vector compared with the prompt's
#: (exact hybrid search: ~5 us per 256-d vector in pure Python, so ~10 ms at this size); above it,
#: only the bounded candidates (BM25 top hits + named entities' cards) are.
FULL_SCAN_MAX_CARDS = 2000
#: In a full scan, the cards nearest the prompt by cosine that join the candidates.
VECTOR_CANDIDATES = 100
#: A card found by its vector alone (no query word, no named entity) needs at least this cosine.
VECTOR_FLOOR = 0.0
#: Memories from the same moment of a conversation as one of the this many best candidates
#: (evidence within NEIGHBOUR_SPAN messages) have their relevance raised to NEIGHBOUR_SHARE x its
#: relevance + (1 - NEIGHBOUR_SHARE) x their own, when that is higher (see `_add_neighbours`).
NEIGHBOUR_TOP = 5
NEIGHBOUR_SPAN = 2
NEIGHBOUR_SHARE = 0.5
#: A neighbour's evidence starts at most this many messages before the window (spans are one
#: passage in practice); at most NEIGHBOUR_ROWS evidence rows are read per window.
NEIGHBOUR_LOOKBACK = 20
NEIGHBOUR_ROWS = 200
#: Notes are ranked by relevance x strength ** STRENGTH_EXP (graph.trust.strength: recurrence x
#: confidence x feedback, 0.3-1.56): the square root keeps strength a tie-breaker among close
#: matches (a fresh card of confidence 0.5 keeps 0.84 of its relevance, not 0.7; one seen in 20
#: sessions gains 12%) while a deprecated or contradicted card (strength 0) is still never a note.
#: Measured on LoCoMo (500 tokens, offline writer: facts 0.5, explicit rules 1.0): exponent 1 -> 0.5
#: lifted evidence recall 0.685 -> 0.695 on the dev split, 0.648 -> 0.684 held out.
STRENGTH_EXP = 0.5
#: A card about another thing of the same type as one the prompt names (see `_about_sibling`) has
#: its relevance multiplied by this.
SIBLING_FACTOR = 0.8
#: Entity types too loose to tell siblings by.
SIBLING_LOOSE_TYPES = ("other", "concept")

_CARD_COLS = "c.id, c.statement, c.category, c.sessions, c.said_at, c.last_seen_at, c.pinned, c.importance"


def _card(row: tuple) -> dict[str, Any]:
    cid, statement, category, sessions, said_at, last_seen, pinned, importance = row[:8]
    return {"id": cid, "statement": statement, "category": category, "sessions": int(sessions or 1),
            "said_at": said_at, "last_seen_at": last_seen, "pinned": int(pinned or 0),
            "importance": int(importance or 0)}


def _cosine(query: list[float] | dict[int, float], blob: bytes) -> float:
    """Dot product of a unit query vector (dense list, or sparse {index: value}) with a stored
    float32 unit vector."""
    vec = memoryview(blob).cast("f")   # native float32 (little-endian stores, see graph.embed)
    if isinstance(query, dict):
        return sum(v * vec[i] for i, v in query.items())
    return sum(map(operator.mul, query, vec))


class _Candidate:
    """card; bm25 (FTS5's, negative, lower is better; 0 when not a lexical hit); entity (sum of the
    idf of the named entities the card is linked to); cosine (None without vectors)."""

    __slots__ = ("card", "bm25", "entity", "cosine", "relevance", "strength", "score")

    def __init__(self, card: dict[str, Any], bm25: float = 0.0, entity: float = 0.0) -> None:
        self.card, self.bm25, self.entity = card, bm25, entity
        self.cosine: float | None = None
        self.relevance = 0.0
        self.strength = 1.0   # graph.trust.strength ** STRENGTH_EXP
        self.score = 0.0

    def trust(self, t: Any) -> None:
        """Take the card's trust (a graph.trust.CardTrust, or None for a card without any): its
        confidence and maturity go on the card, and under `_warning` the trust itself when the card
        is a warning or contradicted (None otherwise); its strength multiplies the score.
        Strength (graph.trust, docs/trust.md): recurrence x confidence x feedback score; a fresh
        card is 1.0, a deprecated or contradicted one 0 (shown only as a warning line)."""
        self.card["confidence"] = t.confidence if t else 1.0
        self.card["maturity"] = t.maturity if t else "candidate"
        self.card["_warning"] = t if t and (t.warning or t.contradicted) else None
        self.strength = (t.strength if t else _trust.strength(self.card["sessions"], 1.0)) ** STRENGTH_EXP
        self.score = self.relevance * self.strength


def nearest_cards(conn: sqlite3.Connection, prompt: str, entity_ids: list[int], *,
                  embedder: PromptEmbedder | None = None, limit: int = 50,
                  min_relative: float = 0.3, fts_limit: int = 100, entity_limit: int = 60,
                  weights: tuple[float, float, float] = (1.0, 1.25, 0.5),
                  half_life_days: float = _trust.DEFAULT_HALF_LIFE_DAYS,
                  now: _dt.datetime | None = None) -> list[dict[str, Any]]:
    """Active cards relevant to `prompt`, best first, each with its `score` (see module doc).

    `weights` = (bm25, cosine, entity) weights of the hybrid relevance; trust decays to `now`
    (default: the current time)."""
    cands: dict[int, _Candidate] = {}
    qvec = embedder.embed(prompt[:MAX_PROMPT_CHARS]) if embedder is not None else None
    dim = int(getattr(embedder, "dim", 0) or len(qvec)) if qvec is not None else 0
    try:
        match, full_bm25 = fts_query(conn, _fts_terms(prompt))
    except sqlite3.OperationalError as exc:
        if "fts5" not in str(exc).lower() and "syntax" not in str(exc).lower():
            raise
        match, full_bm25 = None, 0.0
    small = FULL_SCAN_MAX_CARDS > 0 and conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM cards WHERE status = 'active' LIMIT ?)",
        (FULL_SCAN_MAX_CARDS + 1,)).fetchone()[0] <= FULL_SCAN_MAX_CARDS
    # A small store's every cosine, computed once (the named entities' cards read theirs from it);
    # not when neither words nor names can find a candidate: vectors alone never add one then.
    scanned = _full_scan(conn, qvec, dim) if qvec is not None and small and (match or entity_ids) else None
    if match:
        try:
            rows = conn.execute(
                f"""SELECT {_CARD_COLS}, c.vector, f.score FROM
                      (SELECT rowid, bm25(cards_fts) AS score FROM cards_fts WHERE cards_fts MATCH ?
                       ORDER BY score LIMIT ?) f
                    JOIN cards c ON c.id = f.rowid
                    WHERE c.status = 'active'""",
                (match, fts_limit),
            ).fetchall()
        except sqlite3.OperationalError as exc:
            if "fts5" not in str(exc).lower() and "syntax" not in str(exc).lower():
                raise
            rows = []
        for r in rows:
            cands[r[0]] = _Candidate(card=_card(r), bm25=float(r[9]))
            cands[r[0]].card["_vector"] = r[8]
    if entity_ids:
        total = conn.execute("SELECT max(id) FROM cards").fetchone()[0] or 1
        linked: dict[int, list[int]] = {}
        idf: dict[int, float] = {}
        for eid in entity_ids:
            # The most recently linked cards of each entity (bounded for hub entities).
            rows = conn.execute("SELECT card_id FROM card_entities WHERE entity_id = ? ORDER BY rowid DESC LIMIT ?",
                                (eid, ENTITY_CARDS_SCANNED + 1)).fetchall()
            df = len(rows) if len(rows) <= ENTITY_CARDS_SCANNED else conn.execute(
                "SELECT count(*) FROM card_entities WHERE entity_id = ?", (eid,)).fetchone()[0]
            idf[eid] = math.log(1 + total / max(1, df))
            for (cid,) in rows[:ENTITY_CARDS_SCANNED]:
                linked.setdefault(cid, []).append(eid)
        order = sorted(linked, key=lambda cid: (-sum(idf[e] for e in linked[cid]), -cid))
        for cid in order:
            if cid in cands:
                cands[cid].entity = sum(idf[e] for e in linked[cid])
        # The named entities' other cards: with vectors, the ones nearest the prompt among the most
        # recently linked (bounded: at most ENTITY_CARDS_SCANNED cosines in all); without, the ones
        # linked to the most (and rarest) named entities.
        pool = [cid for cid in order if cid not in cands][: ENTITY_CARDS_SCANNED if qvec is not None
                                                            else entity_limit * 3]
        rows = conn.execute(
            f"SELECT {_CARD_COLS}, c.vector FROM cards c WHERE c.id IN (SELECT value FROM json_each(?)) "
            "AND c.status = 'active'", (json.dumps(pool),)).fetchall()
        fetched = {r[0]: r for r in rows}
        extra = []
        for cid in pool:
            if cid not in fetched:
                continue
            cand = _Candidate(card=_card(fetched[cid]), entity=sum(idf[e] for e in linked[cid]))
            cand.card["_vector"] = fetched[cid][8]
            if scanned is not None:
                cand.cosine = scanned.get(cid)
            elif qvec is not None:
                blob = fetched[cid][8]
                cand.cosine = _cosine(qvec, blob) if blob and len(blob) == 4 * dim else None
            extra.append(cand)
        if qvec is not None:
            extra.sort(key=lambda c: -(c.cosine if c.cosine is not None else -1.0))
        for cand in extra[:entity_limit]:
            cands[cand.card["id"]] = cand
    if scanned is not None:
        _join_nearest(conn, scanned, cands)
    if not cands:
        return []
    if qvec is not None:
        for cand in cands.values():
            blob = cand.card.get("_vector")
            if cand.cosine is None and blob and len(blob) == 4 * dim:
                cand.cosine = _cosine(qvec, blob)
    # BM25 relative to the best hit, but never to less than LEX_FLOOR of what a card matching the
    # whole query would score: when nothing matches well, a weak match (a name shared by half the
    # cards, in a six-word card) stays weak instead of counting as a perfect one.
    best_bm25 = min(min((c.bm25 for c in cands.values()), default=0.0), -LEX_FLOOR * full_bm25)
    best_ent = max((c.entity for c in cands.values()), default=0.0)
    w_lex, w_vec, w_ent = weights
    info = _trust.trust_for_cards(conn, list(cands), now=now, half_life_days=half_life_days)
    dates = prompt_dates(prompt)
    elsewhere = _about_sibling(conn, cands, entity_ids) if entity_ids and SIBLING_FACTOR < 1.0 else set()
    for c in cands.values():
        lex = c.bm25 / best_bm25 if best_bm25 < 0 else 0.0
        ent = c.entity / best_ent if best_ent > 0 else 0.0
        vec = max(0.0, c.cosine) if c.cosine is not None else 0.0
        c.relevance = w_lex * lex + w_ent * ent + (w_vec * vec if qvec is not None else 0.0)
        if dates and _in_dates(c.card["said_at"], dates):
            c.relevance *= 1.0 + DATE_BOOST
        if c.card["id"] in elsewhere:
            c.relevance *= SIBLING_FACTOR
        c.trust(info.get(c.card["id"]))
    if NEIGHBOUR_TOP > 0:
        indexed = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'evidence_position'"
                               ).fetchone() is not None
        if indexed or small:
            _add_neighbours(conn, cands, indexed=indexed, half_life_days=half_life_days, now=now)
    top = max(c.relevance for c in cands.values())
    top_score = max(c.score for c in cands.values()) or 1.0
    share = {cid: c.score / top_score for cid, c in cands.items()}
    ranked = sorted(cands.values(), key=lambda c: (-c.score, c.card["id"]))
    out = []
    for c in ranked:
        if c.relevance < min_relative * top or (c.score <= 0 and c.card.get("_warning") is None):
            continue   # too far from the best; or strength 0 (zero confidence) and not a warning
        card = dict(c.card)
        card.pop("_vector", None)
        card["score"] = round(c.score, 4)
        card["_share"] = share[c.card["id"]]
        out.append(card)
        if len(out) >= limit:
            break
    return out


def _word_at(text: str, word: str) -> int:
    """Index of the first whole-word occurrence of `word` in `text` (no letter or digit right before
    or after it: "art" is not in "started"), or -1."""
    at = text.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not text[at - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            return at
        at = text.find(word, at + 1)
    return -1


def _about_sibling(conn: sqlite3.Connection, cands: dict[int, "_Candidate"], entity_ids: list[int]) -> set[int]:
    """Candidates about another thing of the same kind as one the prompt names: the first entity of
    a named entity's type that the card's statement mentions is not a named one ("what did Melanie
    paint?": a card on what Caroline painted; "does billing retry?": a card on the auth service).
    Left alone: a card linked to a named entity whose name its text does not show (an alias), a
    card stating a relation that involves a named entity, and entities of types "other" and
    "concept" (too loose to tell siblings by). Cost: two indexed reads over the candidates."""
    named = json.dumps(entity_ids)
    types = [t for (t,) in conn.execute(
        "SELECT DISTINCT type FROM entities WHERE id IN (SELECT value FROM json_each(?))", (named,))
        if t and t not in SIBLING_LOOSE_TYPES]
    if not types:
        return set()
    links: dict[int, list[tuple[int, str]]] = {}
    for cid, eid, name in conn.execute(
            "SELECT ce.card_id, e.id, e.name FROM card_entities ce JOIN entities e ON e.id = ce.entity_id "
            "WHERE ce.card_id IN (SELECT value FROM json_each(?)) AND e.type IN (SELECT value FROM json_each(?))",
            (json.dumps(list(cands)), json.dumps(types))):
        links.setdefault(cid, []).append((eid, name))
    wanted = set(entity_ids)
    out = set()
    for cid, ents in links.items():
        text = cands[cid].card["statement"].casefold()
        first_named, first_other, named_hidden = None, None, False
        for eid, name in ents:
            at = _word_at(text, name.casefold()) if name else -1
            if eid in wanted:
                if at < 0:
                    named_hidden = True
                elif first_named is None or at < first_named:
                    first_named = at
            elif at >= 0 and (first_other is None or at < first_other):
                first_other = at
        if first_other is not None and not named_hidden and (first_named is None or first_other < first_named):
            out.add(cid)
    if out:
        # A relation the card states about a named entity makes it about that entity too, whatever
        # comes first ("recall.py imports store.py" answers "what imports store.py?").
        related = conn.execute(
            "SELECT DISTINCT card_id FROM relation_statements WHERE card_id IN (SELECT value FROM json_each(?1)) "
            "AND (subject_id IN (SELECT value FROM json_each(?2)) OR object_id IN (SELECT value FROM json_each(?2)))",
            (json.dumps(sorted(out)), named)).fetchall()
        out.difference_update(cid for (cid,) in related)
    return out


def _add_neighbours(conn: sqlite3.Connection, cands: dict[int, "_Candidate"], *, indexed: bool = True,
                    half_life_days: float = _trust.DEFAULT_HALF_LIFE_DAYS,
                    now: _dt.datetime | None = None) -> None:
    """Memories drawn from the same moment of the same conversation as one of the NEIGHBOUR_TOP
    best candidates (evidence within NEIGHBOUR_SPAN messages) have their relevance raised to
    NEIGHBOUR_SHARE x that candidate's + (1 - NEIGHBOUR_SHARE) x their own when it is higher than
    their own: a card often holds the answer while its neighbour holds the words of the question
    ("how did she feel watching the meteor shower?" / "she felt tiny and in awe of the universe").
    Interpolating (instead of a flat share of the best candidate's) keeps the neighbours of one
    moment in the order of their own relevance, and the closest of them ahead of weak ones
    (LoCoMo dev, 500 tokens: a flat 0.8 share 0.708, the half-and-half interpolation 0.721).
    A neighbour's score is its lifted relevance times its own strength, so a deprecated or
    contradicted card is not lifted into the notes (it stays a warning).

    Cost is bounded at any store size: one range seek per best candidate's evidence on the
    `evidence_position` index (graph.store m004); a neighbour is a card with evidence starting at
    most NEIGHBOUR_LOOKBACK messages before the window (evidence spans are one passage in
    practice) and reading at most NEIGHBOUR_ROWS evidence rows per window. Without the index
    (`indexed` False: a db not yet migrated) the same query scans, so the caller runs it only on
    small stores."""
    best = sorted(cands.values(), key=lambda c: (-c.score, c.card["id"]))[:NEIGHBOUR_TOP]
    if not best:
        return
    ids = json.dumps([c.card["id"] for c in best])
    spans: list[tuple[str, int, int, "_Candidate"]] = []
    for cid, conv, lo, hi in conn.execute(
            "SELECT card_id, conversation, message_from, message_to FROM evidence "
            "WHERE card_id IN (SELECT value FROM json_each(?)) AND message_from IS NOT NULL", (ids,)):
        spans.append((conv, lo, hi if hi is not None else lo, cands[cid]))
    if not spans:
        return
    lift: dict[int, float] = {}   # card id -> relevance of its most relevant best neighbour
    sql = ("SELECT card_id, message_from, message_to FROM evidence "
           + ("INDEXED BY evidence_position " if indexed else "")
           + "WHERE conversation = ? AND message_from BETWEEN ? AND ? LIMIT ?")
    for conv, plo, phi, parent in spans[:NEIGHBOUR_TOP * 4]:
        for cid, lo, hi in conn.execute(
                sql, (conv, plo - NEIGHBOUR_SPAN - NEIGHBOUR_LOOKBACK, phi + NEIGHBOUR_SPAN, NEIGHBOUR_ROWS)):
            hi = hi if hi is not None else lo
            if parent.card["id"] != cid and hi >= plo - NEIGHBOUR_SPAN:
                lift[cid] = max(lift.get(cid, 0.0), parent.relevance)
    new = [cid for cid in lift if cid not in cands]
    if new:
        rows = conn.execute(f"SELECT {_CARD_COLS} FROM cards c WHERE c.id IN (SELECT value FROM json_each(?)) "
                            "AND c.status = 'active'", (json.dumps(new),)).fetchall()
        info = _trust.trust_for_cards(conn, [r[0] for r in rows], now=now, half_life_days=half_life_days)
        for r in rows:
            cand = cands[r[0]] = _Candidate(card=_card(r))
            cand.trust(info.get(r[0]))
    for cid, parent_relevance in lift.items():
        c = cands.get(cid)
        if c is not None and parent_relevance > c.relevance:
            c.relevance = NEIGHBOUR_SHARE * parent_relevance + (1.0 - NEIGHBOUR_SHARE) * c.relevance
            c.score = c.relevance * c.strength


def _full_scan(conn: sqlite3.Connection, qvec: list[float] | dict[int, float], dim: int) -> dict[int, float]:
    """Exact vector search when the agent has at most FULL_SCAN_MAX_CARDS active cards: every
    active card's cosine to the prompt (card id -> cosine, cards with a vector of `dim` only). The
    caller checks the store's size first. Reads only committed rows of this connection's
    snapshot: nothing is cached across calls."""
    size = 4 * dim
    return {cid: _cosine(qvec, blob)
            for cid, blob in conn.execute("SELECT id, vector FROM cards WHERE status = 'active' AND vector IS NOT NULL")
            if blob and len(blob) == size}


def _join_nearest(conn: sqlite3.Connection, cosine: dict[int, float], cands: dict[int, "_Candidate"]) -> None:
    """After a full scan (`cosine`, see `_full_scan`): every candidate gets its cosine, and the
    VECTOR_CANDIDATES nearest cards (cosine >= VECTOR_FLOOR) join `cands` when it is not empty."""
    for cid, cand in cands.items():
        if cid in cosine:
            cand.cosine = cosine[cid]
    # Vector-only candidates join only a prompt that found something by words or names: model2vec
    # cosines of small talk to a chatty memory are as high as a real match's (measured: "thanks,
    # that is all for now" scores 0.75 against LoCoMo cards), so a cosine alone cannot tell that a
    # prompt concerns nothing remembered.
    if not cands:
        return
    nearest = sorted(cosine.items(), key=lambda x: (-x[1], x[0]))[:VECTOR_CANDIDATES]
    new = [cid for cid, cos in nearest if cid not in cands and cos >= VECTOR_FLOOR]
    if new:
        rows = conn.execute(f"SELECT {_CARD_COLS} FROM cards c WHERE c.id IN (SELECT value FROM json_each(?))",
                            (json.dumps(new),)).fetchall()
        for r in rows:
            cand = _Candidate(card=_card(r))
            cand.cosine = cosine[r[0]]
            cands[r[0]] = cand
