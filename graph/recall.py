"""Recall: what an agent's memory injects at session start and before each prompt. Stdlib only.

`recall(db_path, prompt, ...)` reads one agent's graph (read-only, never waiting on a writer) and
returns the JSON of issue 6 with the exact text to inject:

1. standing decisions and preferences (categories correction, decision, preference). At session
   start (kind "primer") the strongest of them; on a prompt only those relevant to it. Order:
   pinned, then recurring (seen in >= 2 sessions), then corrections, then more sessions, higher
   importance, more recently seen.
2. for every entity the prompt names (whole-word match of a name or alias of >= 3 characters,
   looked up by the prompt's 1..4-word n-grams in the indexed `norm` columns, so the cost does not
   grow with the number of entities), its relations from the `relations` table that
   `graph.relations` maintains (state = latest statement by said_at; weight = distinct sessions
   among non-faded cards): current first, then strongest, then most recent, at most 12 each;
   ended ones marked "(no longer)".
3. the notes nearest the prompt: candidates from FTS5 BM25 (cards_fts) and from the cards linked
   to the named entities, re-ranked by a hybrid of BM25 (relative to the best hit), cosine
   similarity of the stored card vectors to the prompt's vector (when an embedder is given and the
   vectors are its own) and entity links (`nearest_cards` weights 1 : 1.25 : 0.5); the score is
   relevance x strength ** `STRENGTH_EXP` (graph.trust.strength: recurrence, confidence, feedback;
   the square root keeps it a tie-breaker), so a memory seen in many sessions can overtake a
   slightly closer one but never a much closer one. Details:
   - lexical relevance is BM25 relative to the best hit, but never to less than `LEX_FLOOR` of what
     a card matching every prompt term would score (terms no card has count): a weak match stays
     weak when nothing matches well;
   - the named entities' other cards join as candidates: with vectors, the nearest to the prompt
     among their `ENTITY_CARDS_SCANNED` most recently linked cards (bounded cosine work), without,
     those linked to the most and rarest named entities;
   - at any store size (a range seek on the `evidence_position` index, graph.store m004; a db
     not yet migrated gets it only up to `FULL_SCAN_MAX_CARDS` active cards), the cards whose evidence lies
     within `NEIGHBOUR_SPAN` messages of one of the `NEIGHBOUR_TOP` best candidates' evidence (the
     same moment of the same conversation) have their relevance raised to `NEIGHBOUR_SHARE` of its
     plus the rest of their own: the answer is often in the card next to the one holding the
     question's words (LoCoMo evidence recall at 500 tokens 0.619 -> 0.650 with a flat share,
     both splits up; interpolated, dev 0.708 -> 0.721);
   - a card about another thing of the same type as one the prompt names (the first entity of
     that type its statement mentions is not a named one: "what did Melanie paint?" and a card on
     Caroline's painting; "does billing retry?" and one on the auth service) has its relevance
     multiplied by `SIBLING_FACTOR` (types "other"/"concept" excepted);
   - a card said within a date the prompt names ("in July 2023", "on 13 October", "in 2024")
     has its relevance multiplied by 1 + `DATE_BOOST`;
   - on a prompt, standing memories join the standing block only when they score at least
     `STANDING_RELATIVE` of the best candidate (else they compete with the notes), and what the
     standing and entity blocks leave unused of their caps goes to the notes block (`Budgets`).

Vectors on the hook path (measured, bench/recall_bench.py): the prompt is embedded in pure Python
by `graph.recall_embed` (model2vec: vocabulary cached in SQLite, token rows read from
model.safetensors by offset, ~0.3-1 ms; the lexical fallback embedder reproduced too). An agent with
at most `FULL_SCAN_MAX_CARDS` active cards gets an exact search: every active card's cosine is
computed (~5 us per 256-d vector in pure Python, ~10 ms at 2,000 cards; a bounded count decides,
nothing is cached across calls), and the `VECTOR_CANDIDATES` nearest join the candidates, so a card
sharing no word with the prompt can be found; they join only when the prompt found something by
words or names (small talk has cosines as high as real matches, and a prompt with nothing relevant
must get nothing). Above that size only the bounded candidate set (BM25 top 100 + cards of named
entities) is re-ranked by cosine (a brute-force scan of 100k vectors is impossible without numpy),
at ~1-2 ms over lexical-only recall. Candidates are ordered by the weighted hybrid in both cases
(reciprocal rank fusion of BM25 and cosine ranks was measured worse on LoCoMo, 0.568 vs 0.609 at
500 tokens, because it loses the entity links and the calibrated lexical floor).

Text: block headers are one short line each and a memory line is "- statement [#id date]" (the
category is shown unless it is a plain fact, "N sessions" when more than one): the budget counts
characters. A relation is listed once, under the first named entity it concerns.

Invariants:
- Only active cards are recalled (faded and superseded never are).
- Every block and the whole text respect `Budgets`; lines are never cut, a line that does not fit
  is left out. The text stays well under Claude Code's 10,000-character limit.
- The first line of any non-empty text starts with `MARKER`, and so does every block header
  (consolidation skips text carrying the marker: we never learn from our own injections).
- With a session id, every block's items (standing and note cards, warnings, entities, recent
  episodes) are injected at most once per session: a small JSON file per session under
  `<agent dir>/recall-sessions/`, pruned by age and count (see `SessionState`). A resumed session
  keeps it (Claude Code replays the earlier hook output); `reset_session` (SessionStart after a
  compaction or /clear: the context lost it) empties it.
- Nothing relevant gives an empty text (and nothing is recorded).
- The database is opened read-only with a short busy timeout: a consolidation's write
  transaction never blocks recall (WAL readers do not wait for writers).
- `scrub` (the remembered-secret check) is applied to every text that goes out, before budgets.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import operator
import os
import re
import sqlite3
import time
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hook ~2.4 ms
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Protocol
else:
    Protocol = object   # PromptEmbedder is a structural type for readers and type checkers only

from . import trust as _trust
from .db import connect_readonly as _connect_readonly
from .files import write_text_atomic
from .text import NAME_SEP as _SEP
from .text import NAME_STRIP as _STRIP
from .text import NEGATIONS, STOPWORDS, fold, name_tokens, words

# The figures in the comments of this module are one-off comparisons, each measured by editing the
# constant and rerunning `python bench/recall_bench.py locomo --rebuild` (quality) or `... latency`
# (timing) on the tree of that day; no bench option sets these constants.
MARKER = "[reverie memory]"
STANDING_CATEGORIES = ("correction", "decision", "preference")
#: Busy timeout of the read-only connection (WAL readers normally never wait at all).
BUSY_TIMEOUT_S = 0.25
#: Entity names shorter than this never match (too ambiguous).
MIN_NAME_CHARS = 3
#: Longest entity name matched, in words.
MAX_NGRAM = 4
#: Prompt characters considered (a pasted log should not make recall slow).
MAX_PROMPT_CHARS = 8000
#: Ranked candidates split between the standing and notes blocks.
CANDIDATES = 60
#: Cards per named entity considered as candidates (its most recently linked ones).
ENTITY_CARDS_SCANNED = 300
#: FTS query terms at most (the first ones of the prompt).
MAX_QUERY_TERMS = 24
#: A term matching more than this share of all cards is too common to search by (see fts_query).
COMMON_SHARE = 0.05
#: The terms searched by match at most this many cards together (bounds the BM25 cost: on the
#: 100k-card bench store 8,000 cost the hook 3.4 / 6.3 ms p50 / p95 for the main query, 3,000 cost
#: 2.3 / 3.1 ms; the rarest terms are kept first, so only terms of a few % of all cards are dropped).
MATCHED_CAP = 3000
#: A card said within a date the prompt names ("in July 2023", "on 13 October") is this much more
#: relevant (a multiplier of 1 + DATE_BOOST).
DATE_BOOST = 0.5
#: On a prompt, standing memories scoring below this share of the best candidate go with the notes.
STANDING_RELATIVE = 0.95
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

HEADERS = {
    "standing": f"{MARKER} Your standing decisions and preferences (past sessions; may be outdated, check first):",
    "entities": f"{MARKER} What you know of things named here (past sessions; may be outdated, check first):",
    "notes": f"{MARKER} Your notes nearest this prompt (past sessions; may be outdated, check first):",
    "warnings": f"{MARKER} Warnings: approaches reported harmful in past sessions (check before doing anything like this):",
    "recent": f"{MARKER} Recent context: what your recent sessions in this project worked on (may be outdated):",
}


class Budgets:
    """Caps per block and in total. Defaults: 4,000 characters in all (~1,000 tokens, 40% of
    Claude Code's 10,000-character limit); standing <= 8 memories / 1,500 chars; <= 4 entities,
    <= 12 relations each, 1,600 chars; notes <= 8 / 2,400 chars. Headers count. Overridable with
    the `recall` settings (same names); `max_chars` is never above 9,500.
    `min_relative`: candidates below this share of the best candidate's relevance are not
    recalled. On a prompt, what the standing and entity blocks leave unused of their caps is
    added to the notes block's cap (the total stays `max_chars`), and relevant standing memories
    that did not fit their block compete for the notes block."""

    DEFAULTS: dict[str, int | float] = {
        "max_chars": 4000, "standing_items": 8, "standing_chars": 1500, "entities": 4,
        "relations_per_entity": 12, "entity_chars": 1600, "notes_items": 8, "notes_chars": 2400,
        "min_relative": 0.3,
    }
    HARD_MAX_CHARS = 9500

    max_chars: int
    standing_items: int
    standing_chars: int
    entities: int
    relations_per_entity: int
    entity_chars: int
    notes_items: int
    notes_chars: int
    min_relative: float

    def __init__(self, **values: int | float) -> None:
        unknown = set(values) - set(self.DEFAULTS)
        if unknown:
            raise TypeError(f"unknown budget(s): {', '.join(sorted(unknown))}")
        for key, default in self.DEFAULTS.items():
            setattr(self, key, type(default)(values.get(key, default)))
        self.max_chars = max(0, min(self.max_chars, self.HARD_MAX_CHARS))

    def as_dict(self) -> dict[str, int | float]:
        return {key: getattr(self, key) for key in self.DEFAULTS}

    def __repr__(self) -> str:
        return f"Budgets({self.as_dict()})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Budgets) and self.as_dict() == other.as_dict()

    @classmethod
    def from_settings(cls, values: dict[str, Any] | None) -> "Budgets":
        """Defaults overridden by the numeric keys of a `recall` settings dict (others ignored)."""
        updates = {key: value for key, value in (values or {}).items()
                   if key in cls.DEFAULTS and isinstance(value, (int, float)) and not isinstance(value, bool)
                   and value >= 0}
        return cls(**updates)

    def scaled(self, max_chars: int) -> "Budgets":
        """Every character cap scaled to a new total (item caps unchanged)."""
        k = max_chars / self.max_chars if self.max_chars else 1.0
        return Budgets(**{**self.as_dict(), "max_chars": max_chars,
                          "standing_chars": int(self.standing_chars * k),
                          "entity_chars": int(self.entity_chars * k), "notes_chars": int(self.notes_chars * k)})


class PromptEmbedder(Protocol):
    """What recall needs of an embedder (graph.recall_embed has stdlib ones): `embed(text)`, a unit
    vector as a dense list or a sparse {index: value} dict, or None; `dim`; and `id`, the
    graph_meta 'embedder' value whose vectors it matches (`cards.vector` are used only then)."""

    id: str

    dim: int

    def embed(self, text: str) -> list[float] | dict[int, float] | None: ...


# ---------------------------------------------------------------------------------------------
# Per-session state


def _sessions_dir(db_path: str | os.PathLike) -> str:
    """Where an agent's per-session state lives: `recall-sessions/` beside its database."""
    return os.path.join(os.path.dirname(os.path.abspath(os.fspath(db_path))), "recall-sessions")


#: A new session's first save prunes the folder's stale session files at most this often.
PRUNE_EVERY_S = 600


class SessionState:
    """Which cards, entities and episodes a session was already given. One JSON file per session in
    `state_dir` ({"cards": [...], "entities": [...], "episodes": [...]}; a file from before episodes
    were tracked reads as none shown), written atomically; files older than
    `max_age_days` or beyond the `max_files` newest are deleted when a new session starts (at most
    once per PRUNE_EVERY_S: sessions started in between may add a few files beyond `max_files`)."""

    def __init__(self, state_dir: str | os.PathLike, session: str, *, max_files: int = 500, max_age_days: int = 14,
                 max_ids: int = 5000, now: float | None = None) -> None:
        self.dir = os.fspath(state_dir)   # strings, not pathlib: ~2.7 ms of the hook's import
        safe = re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", session or "") and not session.startswith(".")
        if not safe:
            import hashlib
        name = session if safe else hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:40]
        self.path = os.path.join(self.dir, f"{name}.json")
        self.max_files, self.max_age_days, self.max_ids = max_files, max_age_days, max_ids
        self.now = now
        self.cards: set[int] = set()
        self.entities: set[int] = set()
        self.episodes: set[int] = set()
        self.exists = False
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.loads(fh.read())
            self.cards = {int(x) for x in data.get("cards", [])}
            self.entities = {int(x) for x in data.get("entities", [])}
            self.episodes = {int(x) for x in data.get("episodes", [])}
            self.exists = True
        except (OSError, ValueError, TypeError, AttributeError):
            pass

    def reset(self) -> None:
        """Forget everything shown (the context lost it: a compaction or /clear)."""
        self.cards, self.entities, self.episodes = set(), set(), set()

    def save(self, cards: Iterable[int], entities: Iterable[int], episodes: Iterable[int] = ()) -> None:
        new_file = not self.exists
        self.cards.update(cards)
        self.entities.update(entities)
        self.episodes.update(episodes)
        # Bounded: a very long session keeps its most recent ids (ids grow with time).
        data = {"cards": sorted(self.cards)[-self.max_ids:], "entities": sorted(self.entities)[-self.max_ids:],
                "episodes": sorted(self.episodes)[-self.max_ids:]}
        write_text_atomic(self.path, json.dumps(data))
        self.exists = True
        if new_file and self._prune_due():
            self.prune()

    def _prune_due(self) -> bool:
        """True at most once per PRUNE_EVERY_S per folder (a marker file's mtime says when the last
        prune ran): a prune stats every session file, ~1.2 ms of a hook at 500 files."""
        marker = os.path.join(self.dir, ".pruned")
        try:
            if time.time() - os.stat(marker).st_mtime < PRUNE_EVERY_S:
                return False
        except OSError:
            pass
        try:
            with open(marker, "w"):
                pass
        except OSError:
            pass
        return True

    def prune(self) -> int:
        """Delete stale session files; returns how many."""
        try:
            entries = [(e.stat().st_mtime, e.path) for e in os.scandir(self.dir)
                       if e.name.endswith(".json") and e.is_file()]
        except OSError:
            return 0
        entries.sort(reverse=True)
        cutoff = (self.now if self.now is not None else time.time()) - self.max_age_days * 86400
        removed = 0
        for i, (mtime, path) in enumerate(entries):
            if i >= self.max_files or mtime < cutoff:
                try:
                    os.unlink(path)
                    removed += 1
                except OSError:
                    pass
        return removed


# ---------------------------------------------------------------------------------------------
# Reading


def connect_readonly(db_path: str | os.PathLike, busy_timeout_s: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """`graph.db.connect_readonly` with recall's busy timeout (usable from any thread)."""
    return _connect_readonly(db_path, busy_timeout_s)


def _auto_memory_hidden(conn: sqlite3.Connection) -> set[int]:
    """Cards recall never injects because Claude Code loads them itself: its auto-memory cards and
    reverie's cards that state the same point (graph.auto_memory; empty before migration m005)."""
    try:
        return {r[0] for r in conn.execute(
            "SELECT card_id FROM auto_memory UNION SELECT card_id FROM auto_memory_covers")}
    except sqlite3.OperationalError:
        return set()


def _date(value: str | None) -> str:
    return (value or "")[:10]


_name_tokens = name_tokens   # the same tokens graph.entities keys entities by


def _ngrams(tokens: list[str], max_n: int = MAX_NGRAM) -> dict[str, tuple[int, int]]:
    """Every 1..max_n-gram as an entity norm key -> (start, end) of its first occurrence."""
    out: dict[str, tuple[int, int]] = {}
    for n in range(1, max_n + 1):
        for i in range(len(tokens) - n + 1):
            key = _SEP.sub("-", "-".join(tokens[i:i + n])).strip("-")
            if len(key) >= MIN_NAME_CHARS and key not in out:
                out[key] = (i, i + n)
    return out


def match_entities(conn: sqlite3.Connection, prompt: str) -> list[dict[str, Any]]:
    """Entities named in `prompt` (whole words, names and aliases of >= 3 characters), in order of
    first mention; a longer match hides the shorter names inside it ("New York" hides "York").
    Cost: one indexed lookup of the prompt's n-grams, whatever the number of entities."""
    tokens = _name_tokens(prompt[:MAX_PROMPT_CHARS])
    grams = _ngrams(tokens)
    for tok in tokens:   # path pieces: "src/graph/store.py" also names "store.py" and "graph"
        if "/" in tok or ":" in tok:
            for piece in re.split(r"[/:]+", tok):
                piece = _STRIP.sub("", piece)
                if len(piece) >= MIN_NAME_CHARS and piece not in grams:
                    grams[piece] = (-1, -1)
    if not grams:
        return []
    keys = json.dumps(list(grams))
    rows = conn.execute(
        """SELECT e.id, e.name, e.type, a.norm FROM entity_aliases a JOIN entities e ON e.id = a.entity_id
           WHERE a.norm IN (SELECT value FROM json_each(?1))
           UNION
           SELECT e.id, e.name, e.type, e.norm FROM entities e WHERE e.norm IN (SELECT value FROM json_each(?1))""",
        (keys,),
    ).fetchall()
    hits = sorted(((grams[norm], eid, name, etype) for eid, name, etype, norm in rows),
                  key=lambda h: (-(h[0][1] - h[0][0]), h[0][0]))
    covered: set[int] = set()
    seen: set[int] = set()
    found: list[tuple[int, dict[str, Any]]] = []
    for (start, end), eid, name, etype in hits:
        span = set(range(start, end))   # empty for path pieces: they hide nothing
        if eid in seen or span & covered:
            continue
        seen.add(eid)
        covered |= span
        found.append((start, {"id": eid, "name": name, "type": etype}))
    found.sort(key=lambda f: f[0])
    return [f[1] for f in found]


def entity_relations(conn: sqlite3.Connection, entity_id: int, limit: int) -> list[dict[str, Any]]:
    """Relations of one entity (either side): current first, then strongest, then most recent.
    Relations whose every card has faded (weight 0) are left out."""
    rows = conn.execute(
        """SELECT s.name, r.verb, o.name, r.holds, r.weight, r.last_said, r.subject_id, r.object_id
           FROM relations r JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id
           WHERE (r.subject_id = ?1 OR r.object_id = ?1) AND r.weight > 0
           ORDER BY r.holds DESC, r.weight DESC, r.last_said DESC, r.subject_id, r.verb, r.object_id
           LIMIT ?2""",
        (entity_id, limit),
    ).fetchall()
    return [{"subject": s, "verb": v, "object": o, "state": "holds" if h else "ended",
             "weight": int(w), "last_said": ls, "_key": (si, v, oi)} for s, v, o, h, w, ls, si, oi in rows]


_CARD_COLS = "c.id, c.statement, c.category, c.sessions, c.said_at, c.last_seen_at, c.pinned, c.importance"


def _card(row: tuple) -> dict[str, Any]:
    cid, statement, category, sessions, said_at, last_seen, pinned, importance = row[:8]
    return {"id": cid, "statement": statement, "category": category, "sessions": int(sessions or 1),
            "said_at": said_at, "last_seen_at": last_seen, "pinned": int(pinned or 0),
            "importance": int(importance or 0)}


def _standing_key(card: dict[str, Any]) -> tuple:
    return (-card["pinned"], -(card["sessions"] >= 2), -(card["category"] == "correction"),
            -card["sessions"], -card["importance"], _neg_text(card["last_seen_at"]), card["id"])


def _relevant_standing_key(card: dict[str, Any]) -> tuple:
    """Standing memories relevant to a prompt: pinned, recurring, corrections first, then the
    closest (a prompt's standing block is ordered by relevance, not by overall strength)."""
    return (-card["pinned"], -(card["sessions"] >= 2), -(card["category"] == "correction"), -card["score"],
            card["id"])


def _neg_text(value: str | None) -> tuple:
    return tuple(-ord(c) for c in (value or ""))


def standing_primer(conn: sqlite3.Connection, limit: int, exclude: set[int]) -> list[dict[str, Any]]:
    """The strongest standing memories for a session start (see module doc for the order)."""
    out: list[dict[str, Any]] = []
    excl = json.dumps(sorted(exclude))
    for category in STANDING_CATEGORIES:
        rows = conn.execute(
            f"""SELECT {_CARD_COLS} FROM cards c
                WHERE c.status = 'active' AND c.category = ?
                  AND c.id NOT IN (SELECT value FROM json_each(?))
                ORDER BY c.pinned DESC, c.sessions DESC, c.importance DESC, c.last_seen_at DESC
                LIMIT ?""",
            (category, excl, limit),
        ).fetchall()
        out.extend(_card(r) for r in rows)
    out.sort(key=_standing_key)
    return out[:limit]


_NON_ASCII_WORD = re.compile(r"[^\W_]*[^\x00-\x7f][^\W_]*")


def _fts_terms(prompt: str) -> list[str]:
    """Content words of the prompt (stopwords, negations and short numbers dropped), in order.
    Words with letters beyond ASCII ("Zürich", "Straße", "платежей", "決済") are kept whole (the FTS
    tokenizer folds their case and diacritics the way it folded the stored text); the ASCII words go
    through `graph.text.words`, which keeps identifiers whole."""
    text = fold(prompt[:MAX_PROMPT_CHARS])
    wide = [w for w in _NON_ASCII_WORD.findall(text) if len(w) >= 2 and w not in STOPWORDS]
    if wide:
        text = _NON_ASCII_WORD.sub(" ", text)
    terms: list[str] = []
    for w in wide:
        if w not in terms:
            terms.append(w)
    for w in words(text):
        for piece in re.findall(r"\w+", w):
            if len(piece) < 2 or piece in STOPWORDS or piece in NEGATIONS or (piece.isdigit() and len(piece) < 3):
                continue
            if piece not in terms:
                terms.append(piece)
    return terms[:MAX_QUERY_TERMS]


_MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_MON = r"(?P<m>January|February|March|April|May|June|July|August|September|October|November|December|" \
       r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?"
_YEAR = r"(?P<y>(?:19|20)\d\d)"
_DATE_SOURCES = (
    r"\b(?P<iso>(?:19|20)\d\d-[01]\d-[0-3]\d)\b",
    r"\b" + _MON + r"\s+(?P<d>[0-3]?\d)(?:st|nd|rd|th)?\b(?:,?\s+" + _YEAR + r"\b)?",
    r"\b(?P<d>[0-3]?\d)(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MON + r"\b(?:,?\s+" + _YEAR + r"\b)?",
    r"\b" + _MON + r",?\s+" + _YEAR + r"\b",
    r"\b(?:in|during|since|until|of|last|this|next|early|late|mid)[\s-]+" + _MON + r"\b",
    r"\b(?:in|during|since|of|for)\s+" + _YEAR + r"\b",
)

#: Every date pattern needs a year (19xx/20xx) or a month name, which starts with one of these.
_DATE_HINTS = ("19", "20", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_DATE_COMPILED: list = []


def _may_name_date(text: str) -> bool:
    """False only when no date pattern can match `text` (so most prompts never compile them)."""
    return any(h in text for h in _DATE_HINTS)


def _date_patterns() -> list:
    """The compiled date patterns, compiled on first use (~1 ms: not paid by a hook whose prompt
    names no date)."""
    if not _DATE_COMPILED:
        _DATE_COMPILED.extend(re.compile(src) for src in _DATE_SOURCES)
    return _DATE_COMPILED


def prompt_dates(prompt: str) -> list[tuple[str, str]]:
    """Date ranges the prompt names, as (first, last) 'YYYY-MM-DD' prefixes to compare `said_at`
    with: a day (and the next), a month (and the week after it: "last month" is said later), a
    month of any year ("in June": first = last = '-06'), a year. Capitalised month names only."""
    out: list[tuple[str, str]] = []
    taken: list[tuple[int, int]] = []
    if not _may_name_date(prompt):
        return out
    for rx in _date_patterns():
        for m in rx.finditer(prompt[:MAX_PROMPT_CHARS]):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            g = m.groupdict()
            try:
                if g.get("iso"):
                    day = _dt.date.fromisoformat(g["iso"])
                    out.append((day.isoformat(), (day + _dt.timedelta(days=1)).isoformat()))
                elif g.get("m") and g.get("d") and g.get("y"):
                    day = _dt.date(int(g["y"]), _MONTHS[g["m"].lower()], int(g["d"]))
                    out.append((day.isoformat(), (day + _dt.timedelta(days=1)).isoformat()))
                elif g.get("m") and g.get("y"):
                    y, mo = int(g["y"]), _MONTHS[g["m"].lower()]
                    # the week after the month's last day
                    last = _dt.date(y + mo // 12, mo % 12 + 1, 1) + _dt.timedelta(days=6)
                    out.append((f"{y:04d}-{mo:02d}-01", last.isoformat()))
                elif g.get("m"):
                    mo = _MONTHS[g["m"].lower()]
                    out.append((f"-{mo:02d}", f"-{mo:02d}"))
                elif g.get("y"):
                    out.append((f"{g['y']}-01-01", f"{g['y']}-12-31"))
                else:
                    continue
            except (ValueError, KeyError):
                continue
            taken.append((m.start(), m.end()))
    return out


def _in_dates(said_at: str | None, ranges: list[tuple[str, str]]) -> bool:
    day = (said_at or "")[:10]
    for first, last in ranges:
        if first.startswith("-"):
            if day[4:7] == first:
                return True
        elif first <= day <= last:
            return True
    return False


def _phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def fts_query(conn: sqlite3.Connection, terms: list[str], *, common: float = COMMON_SHARE,
              matched_cap: int = MATCHED_CAP) -> tuple[str | None, float]:
    """(the FTS5 query for `terms`, the BM25 a card matching every term of the prompt once would
    score: the sum of the terms' idf as FTS5 computes it, from the (capped) document frequencies).

    The query is bounded in cost whatever the size of the agent's memory: BM25 ranking costs time
    per matching card, so terms that match more than `common` of all cards (near-stopwords here)
    are dropped, and the rarest terms are kept while the cards they match add up to at most
    `matched_cap`. Document frequencies are counted with a LIMIT, so counting a common term stops
    early. When every term is common, the two rarest must all match (AND)."""
    if not terms:
        return None, 0.0
    total = conn.execute("SELECT max(rowid) FROM cards_fts").fetchone()[0] or 0
    cap = max(1000, int(total * common))
    df: dict[str, int] = {}
    for term in terms:
        df[term] = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM cards_fts WHERE cards_fts MATCH ? LIMIT ?)",
            (_phrase(term), cap + 1)).fetchone()[0]
    def idf(n: int) -> float:   # FTS5's: log((N - n + 0.5) / (n + 0.5)), at least 1e-6
        return max(1e-6, math.log((max(total, n) - n + 0.5) / (n + 0.5)))

    present = sorted((t for t in terms if df[t] > 0), key=lambda t: df[t])
    if not present:
        return None, 0.0
    kept, matched = [], 0
    for term in present:
        if df[term] > cap or (kept and matched + df[term] > matched_cap):
            break
        kept.append(term)
        matched += df[term]
    # Terms no card has count too (the prompt asks about them and nothing matches them), terms
    # dropped as too common do not (they could not have been searched).
    full = sum(idf(df[t]) for t in terms if df[t] <= cap)
    if kept:
        return " OR ".join(_phrase(t) for t in kept), full
    return " AND ".join(_phrase(t) for t in present[:2]), full


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


# ---------------------------------------------------------------------------------------------
# Rendering with budgets


def _verb(verb: str) -> str:
    return verb.replace("_", " ")


def _card_line(card: dict[str, Any]) -> str:
    """"- statement [#id date]", or "[#id category, date, N sessions]": the category unless it is a
    plain fact, the sessions when more than one (compact: every character counts in the budget)."""
    meta = []
    if card["category"] != "fact":
        meta.append(card["category"])
    if card.get("said_at"):
        meta.append(_date(card["said_at"]))
    if card["sessions"] > 1:
        meta.append(f"{card['sessions']} sessions")
    return f"- {card['statement']} [#{card['id']} {', '.join(meta)}]"


def _relation_line(rel: dict[str, Any]) -> str:
    tags = []
    if rel["state"] == "ended":
        tags.append("no longer")
    tags.append(f"{rel['weight']} session{'s' if rel['weight'] != 1 else ''}")
    if rel.get("last_said"):
        tags.append(f"last {_date(rel['last_said'])}")
    return f"  - {rel['subject']} {_verb(rel['verb'])} {rel['object']} ({'; '.join(tags)})"


class _Text:
    """Accumulates lines under a total character budget (newlines count)."""

    def __init__(self, max_chars: int) -> None:
        self.lines: list[str] = []
        self.left = max_chars

    def cost(self, lines: list[str]) -> int:
        return sum(len(line) + 1 for line in lines)

    def fits(self, lines: list[str]) -> bool:
        return self.cost(lines) <= self.left

    def add(self, lines: list[str]) -> None:
        self.lines.extend(lines)
        self.left -= self.cost(lines)

    def text(self) -> str:
        return "\n".join(self.lines)


class _Block:
    """One block: its header is written only with its first line; `try_add` adds whole lines when
    they fit both the block's cap and the total budget (header included), else adds nothing."""

    def __init__(self, text: _Text, header: str, cap: int) -> None:
        self.text, self.header, self.cap = text, header, cap
        self.lines: list[str] = []

    def try_add(self, lines: list[str]) -> bool:
        new = ([] if self.lines else [self.header]) + lines
        if self.text.cost(self.lines + new) > self.cap or not self.text.fits(self.lines + new):
            return False
        self.lines.extend(new)
        return True

    @property
    def used(self) -> int:
        return self.text.cost(self.lines)

    def close(self) -> None:
        if self.lines:
            self.text.add(self.lines)


def recall(db_path: str | os.PathLike, prompt: str, *, session: str | None = None, kind: str = "prompt",
           budgets: Budgets | None = None, now: _dt.datetime | None = None,
           embedder: PromptEmbedder | None = None, scrub: Callable[[str], str] | None = None,
           agent: str | None = None, state_dir: str | os.PathLike | None = None,
           reset_session: bool = False, record: bool = True,
           half_life_days: float = _trust.DEFAULT_HALF_LIFE_DAYS) -> dict[str, Any]:
    """What to inject for `prompt` (kind "prompt") or at a session start (kind "primer").

    Trust (issue 8): notes are ranked by relevance x `graph.trust.strength`; every card carries
    `confidence` and `maturity`; deprecated rules and anti-patterns relevant to the prompt (at
    session start: among the standing memories) are listed under `warnings` instead; a session start
    also shows the `recent` episodes ("Recent context", graph.episodes).

    Returns {"agent", "standing": [...], "entities": [...], "notes": [...], "text"} (issue 6), and
    "harnesses" (`memory_harnesses` of the candidate cards and episodes: which coding-agent harness
    each came from; the recall log keeps those injected).
    With `session`, memories and entities the session already got are skipped and, when `record`,
    the new ones are remembered (`state_dir` defaults to `<db dir>/recall-sessions`); without
    `record` they are returned under "session_pending" for `record_session` instead;
    `reset_session` forgets what the session got first (a compacted or cleared context).
    `embedder` is used only when the graph's stored vectors are its own (graph_meta 'embedder').
    Raises on a missing or unreadable database: callers on the hook path fail open.
    """
    if kind not in ("prompt", "primer"):
        raise ValueError(f"kind must be 'prompt' or 'primer', not {kind!r}")
    budgets = budgets or Budgets()
    clean = scrub or (lambda s: s)
    prompt = (prompt or "")[:MAX_PROMPT_CHARS]
    state = None
    if session:
        state = SessionState(state_dir or _sessions_dir(db_path), session,
                             now=now.timestamp() if now is not None else None)
        if reset_session:
            state.reset()
    seen_cards = state.cards if state else set()
    seen_entities = state.entities if state else set()
    seen_episodes = state.episodes if state else set()

    result: dict[str, Any] = {"agent": agent, "standing": [], "entities": [], "notes": [], "warnings": [],
                              "recent": [], "text": ""}
    conn = connect_readonly(db_path)
    try:
        # Claude Code loads its own auto memory (MEMORY.md): those cards, and ours that state the
        # same point, are never injected (graph.auto_memory).
        seen_cards = seen_cards | _auto_memory_hidden(conn)
        if embedder is not None:
            row = conn.execute("SELECT value FROM graph_meta WHERE key = 'embedder'").fetchone()
            if not row or row[0] != getattr(embedder, "id", None):
                embedder = None
        standing: list[dict[str, Any]] = []
        named: list[dict[str, Any]] = []
        notes: list[dict[str, Any]] = []
        warnings: list[dict[str, Any]] = []
        recent: list[dict[str, Any]] = []
        if kind == "primer":
            standing = standing_primer(conn, budgets.standing_items, seen_cards)
            ann = _trust.recall_annotations(conn, [c["id"] for c in standing], now=now,
                                            half_life_days=half_life_days)
            warnings = ann["warnings"]
            hidden = set(ann["hidden"])
            standing = [c for c in standing if c["id"] not in hidden]
            for c in standing:
                c.update({k: ann["cards"][c["id"]][k] for k in ("confidence", "maturity")})
            from . import episodes as _episodes   # the primer only: ~0.5 ms of every prompt's import

            # An episode the session was given already is not repeated (a resumed session still
            # holds it: Claude Code replays the earlier hook output); the next ones take its place.
            recent = [r for r in _episodes.recent_context(conn, limit=_episodes.RECENT_LIMIT + len(seen_episodes))
                      if r["id"] not in seen_episodes][: _episodes.RECENT_LIMIT]
        elif prompt.strip():
            named = match_entities(conn, prompt)
            near = nearest_cards(conn, prompt, [e["id"] for e in named], embedder=embedder,
                                 limit=CANDIDATES + len(seen_cards),
                                 min_relative=budgets.min_relative, half_life_days=half_life_days, now=now)
            near = [c for c in near if c["id"] not in seen_cards]
            # Deprecated rules and anti-patterns become warnings, contradicted cards are dropped
            # (their trust was read by nearest_cards: no second read).
            flagged = {c["id"]: (c["statement"], t) for c in near if (t := c.pop("_warning", None)) is not None}
            if flagged:
                warnings = [_trust.warning_entry(cid, statement, t)
                            for cid, (statement, t) in sorted(flagged.items()) if t.warning]
                near = [c for c in near if c["id"] not in flagged]
            # A standing memory gets the standing block on a prompt only when it is among the closest
            # (STANDING_RELATIVE of the best score); a looser one competes with the notes.
            standing = sorted((c for c in near if c["category"] in STANDING_CATEGORIES
                               and c.get("_share", 0.0) >= STANDING_RELATIVE),
                              key=_relevant_standing_key)[: budgets.standing_items]
            taken = {c["id"] for c in standing}
            notes = [c for c in near if c["id"] not in taken][: budgets.notes_items]
            named = [e for e in named if e["id"] not in seen_entities][: budgets.entities]
            listed: set[tuple] = set()
            for ent in named:
                # A relation is listed once, under the first named entity it concerns.
                rels = []
                for rel in entity_relations(conn, ent["id"], budgets.relations_per_entity):
                    if rel["_key"] in listed:
                        continue
                    listed.add(rel["_key"])
                    rel.pop("_key")
                    rels.append(rel)
                ent["relations"] = rels
            named = [e for e in named if e["relations"]]
        # which coding-agent harness each candidate memory came from, for the recall log
        result["harnesses"] = memory_harnesses(conn, [c["id"] for c in standing + notes], [r["id"] for r in recent])
    finally:
        conn.close()

    text = _Text(budgets.max_chars)
    block = _Block(text, clean(HEADERS["warnings"]), budgets.standing_chars)
    for w in warnings:
        if block.try_add([clean(f"- {w['text']} [#{w['id']}]")]):
            result["warnings"].append({"id": w["id"], "statement": clean(w["statement"]), "kind": w["kind"]})
    block.close()
    block = _Block(text, clean(HEADERS["standing"]), budgets.standing_chars)
    unfit = []
    for card in standing:
        card["statement"] = clean(card["statement"])
        if block.try_add([_card_line(card)]):
            result["standing"].append({"id": card["id"], "statement": card["statement"],
                                       "category": card["category"], "sessions": card["sessions"],
                                       "confidence": card.get("confidence", 1.0),
                                       "maturity": card.get("maturity", "candidate")})
        else:
            unfit.append(card)
    block.close()
    spare = max(0, budgets.standing_chars - block.used)
    if kind == "prompt" and unfit:
        # Relevant standing memories that did not fit their block compete with the notes.
        notes = sorted(notes + unfit, key=lambda c: (-c["score"], c["id"]))[: budgets.notes_items]
    block = _Block(text, clean(HEADERS["entities"]), budgets.entity_chars)
    for ent in named:
        name = clean(ent["name"])
        head = f"{name} ({ent['type']}):"
        shown = []
        for rel in ent["relations"]:
            rel = {**rel, "subject": clean(rel["subject"]), "object": clean(rel["object"])}
            if block.try_add(([] if shown else [head]) + [_relation_line(rel)]):
                shown.append(rel)
        if shown:
            result["entities"].append({"id": ent["id"], "name": name, "type": ent["type"], "relations": shown})
    block.close()
    spare += max(0, budgets.entity_chars - block.used)
    # What the standing and entity blocks left unused of their caps goes to the notes.
    block = _Block(text, clean(HEADERS["notes"]), budgets.notes_chars + spare)
    for card in notes:
        card["statement"] = clean(card["statement"])
        if block.try_add([_card_line(card)]):
            result["notes"].append({"id": card["id"], "statement": card["statement"], "category": card["category"],
                                    "date": _date(card.get("said_at")), "sessions": card["sessions"],
                                    "score": card["score"], "confidence": card.get("confidence", 1.0),
                                    "maturity": card.get("maturity", "candidate")})
    block.close()
    block = _Block(text, clean(HEADERS["recent"]), budgets.notes_chars)
    for r in recent:
        summary = clean(r["summary"])
        if block.try_add([f"- [{r['date']}] {summary}"]):
            result["recent"].append({**r, "summary": summary})
    block.close()
    result["text"] = text.text()
    if state is not None and (result["text"] or reset_session):
        shown = {"cards": [c["id"] for c in result["standing"]] + [c["id"] for c in result["notes"]]
                 + [w["id"] for w in result["warnings"]],
                 "entities": [e["id"] for e in result["entities"]],
                 "episodes": [r["id"] for r in result["recent"]]}
        if record:
            state.save(shown["cards"], shown["entities"], shown["episodes"])
        else:
            result["session_pending"] = shown
    for ent in result["entities"]:
        ent.pop("id", None)
    return result


def record_session(db_path: str | os.PathLike, session: str, shown: dict[str, list[int]] | None, *,
                   reset_session: bool = False, state_dir: str | os.PathLike | None = None,
                   now: _dt.datetime | None = None) -> None:
    """Remember that `session` was shown `shown` (the `session_pending` of `recall(..., record=False)`:
    {"cards": [...], "entities": [...], "episodes": [...]}); with `reset_session`, forget what it got
    before first.
    Lets a caller record only once the text was really delivered (the hook: after its write)."""
    state = SessionState(state_dir or _sessions_dir(db_path), session,
                         now=now.timestamp() if now is not None else None)
    if reset_session:
        state.reset()
    shown = shown or {}
    state.save(shown.get("cards", []), shown.get("entities", []), shown.get("episodes", []))


def recalled_ids(result: dict[str, Any]) -> tuple[list[int], list[str]]:
    """(card ids, entity names) a recall result injected, for the recall log."""
    ids = [c["id"] for c in result.get("standing", [])] + [c["id"] for c in result.get("notes", [])]
    return ids, [e["name"] for e in result.get("entities", [])]


def memory_harnesses(conn: sqlite3.Connection, card_ids: list[int],
                     episode_ids: list[int]) -> dict[str, dict[str, Any]]:
    """Which harness (claude-code | codex | gemini: the index's `conversations.harness`) each memory
    came from: {"cards": {"<id>": [harnesses of the conversations its evidence cites]}, "episodes":
    {"<id>": harness of its session}}; ids with nothing found are left out (JSON keys are strings).
    A db without the index's harness column (before its m003_harness) reads as Claude Code's; one
    without the index tables gives empty maps. For the recall log and `reverie search`."""
    out: dict[str, dict[str, Any]] = {"cards": {}, "episodes": {}}
    if not card_ids and not episode_ids:
        return out
    try:
        cols = {r[1] for r in conn.execute("PRAGMA table_info(conversations)")}
        col = "c.harness" if "harness" in cols else "'claude-code'"
        for i in range(0, len(card_ids), 500):
            part = [int(x) for x in card_ids[i:i + 500]]
            q = ",".join("?" * len(part))
            for cid, harness in conn.execute(
                    f"SELECT DISTINCT e.card_id, {col} FROM evidence e JOIN conversations c ON c.id = e.conversation "
                    f"WHERE e.card_id IN ({q}) ORDER BY 1, 2", part):
                out["cards"].setdefault(str(cid), []).append(harness)
        for i in range(0, len(episode_ids), 500):
            part = [int(x) for x in episode_ids[i:i + 500]]
            q = ",".join("?" * len(part))
            for eid, harness in conn.execute(
                    f"SELECT e.id, {col} FROM episodes e JOIN conversations c ON c.id = e.session "
                    f"WHERE e.id IN ({q})", part):
                out["episodes"][str(eid)] = harness
    except sqlite3.Error:
        pass
    return out


def all_then_any(fetch: Callable[[str], list], parts: list[str]) -> list:
    """`fetch(match)` for the FTS5 query that needs every part (AND); when that finds nothing and
    there are several parts, for the query that needs any of them (OR). `reverie search` uses it
    over cards and over history."""
    rows = fetch(" AND ".join(parts))
    if rows or len(parts) <= 1:
        return rows
    return fetch(" OR ".join(parts))


def search_cards(conn: sqlite3.Connection, query: str, limit: int = 10) -> list[dict[str, Any]]:
    """Cards matching `query` (every content word if any card has them all, else any): active ones
    first, then best BM25. Faded and superseded cards are listed after them with their status (search
    is an explicit look-up, so nothing is hidden). For `reverie search`."""
    terms = _fts_terms(query)
    if not terms:
        return []
    rows = all_then_any(lambda match: conn.execute(
        f"""SELECT {_CARD_COLS}, c.status, c.superseded_by, f.score FROM
              (SELECT rowid, bm25(cards_fts) AS score FROM cards_fts WHERE cards_fts MATCH ?
               ORDER BY score LIMIT ?) f
            JOIN cards c ON c.id = f.rowid ORDER BY c.status != 'active', f.score, c.id""",
        (match, limit)).fetchall(), [_phrase(t) for t in terms])
    out = []
    for r in rows:
        card = _card(r)
        out.append({"id": card["id"], "statement": card["statement"], "category": card["category"],
                    "status": r[8], "superseded_by": r[9], "sessions": card["sessions"],
                    "date": _date(card["said_at"]), "last_seen": _date(card["last_seen_at"]),
                    "score": round(-float(r[10]), 4)})
    return out
