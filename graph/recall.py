"""Recall: what an agent's memory injects at session start and before each prompt. Stdlib only.

`recall(db_path, prompt, ...)` reads one agent's graph (read-only, never waiting on a writer) and
returns the JSON of issue 6 with the exact text to inject (its parts: `graph.nearest` ranks the
notes, `graph.recall_query` reads a prompt's search terms and dates, `graph.recall_sessions` keeps
what each session was given):

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
import os
import re
import sqlite3
TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hook ~2.4 ms
if TYPE_CHECKING:
    from typing import Any, Callable, Protocol
else:
    Protocol = object   # PromptEmbedder is a structural type for readers and type checkers only

from . import trust as _trust
from .db import connect_readonly as _connect_readonly
# The parts of recall in their own modules (ranking: graph.nearest; query terms and dates:
# graph.recall_query; per-session state: graph.recall_sessions). Their tunables are read there:
# set them on those modules.
from .nearest import _CARD_COLS, _card, nearest_cards
from .recall_query import MAX_PROMPT_CHARS, _fts_terms, _phrase  # noqa: F401  (_phrase: consolidate.search's)
from .recall_sessions import SessionState, _sessions_dir
from .text import NAME_SEP as _SEP
from .text import NAME_STRIP as _STRIP
from .text import name_tokens

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
#: Ranked candidates split between the standing and notes blocks.
CANDIDATES = 60
#: On a prompt, standing memories scoring below this share of the best candidate go with the notes.
STANDING_RELATIVE = 0.95

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
