"""Merge one verified card into an agent's graph: insert, reinforce or supersede.

`merge_card(db, card, now=..., embedder=None, judge=None)` is the entry point consolidation calls
for each verified card; a consolidation run should create one `MergeSession` and call
`session.merge(card, now=...)` for each card instead (it keeps the card vectors and the entity
tables in memory between cards; `merge_card` reuses a session per db and embedder as well).

What a merge does, all in one transaction (a crash at any step leaves the db as it was):
1. Refuse a card whose normalized statement or source key was forgotten (action "forgotten"), and
   reject malformed cards (action "rejected", with the reason; nothing raised).
2. Find existing cards stating the same point: exact normalized text, FTS5 token overlap, and the
   nearest vectors; judge each candidate (`graph.dedupe.judge_pair`).
3. Same point: reinforce it (a new session counts once; evidence appended up to EVIDENCE_CAP;
   confidence restored to min(current + 0.1, original); a faded card is revived; a superseded card
   restated after its successor comes back and supersedes that successor). Action "reinforced"
   ("unchanged" when this session and evidence were already recorded).
   Opposite point: the new card is stored and the older of the two is marked superseded with a
   link (`superseded_by`) to the newer one by `said_at` (action "superseded"; "outdated" when the
   incoming card is the older one). Nothing is deleted.
   Otherwise: inserted.
4. Resolve the card's entities and the ends of its relations (`graph.entities`), link them.
5. Record its relation statements (dated `said_at` of this session) and recompute relation state.

Invariants: one card per point (among the candidates found); `cards.sessions` equals the number of
`card_sessions` rows; at most EVIDENCE_CAP evidence rows per card; texts are stored as given
(already redacted by consolidation) and never logged.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from . import relations
from .dedupe import Judge, Judgement, analyze, judge_pair
from .embed import Embedder, LexicalEmbedder, from_blob, to_blob
from .entities import EntityResolver
from .forget import is_forgotten
from .model import CATEGORIES, MERGE_TARGET_STATUSES, NewCard, utc_iso
from .store import connection, ensure_vectors, get_meta, transaction
from .text import STOPWORDS, normalize_statement, words

log = logging.getLogger(__name__)

EVIDENCE_CAP = 20
#: Candidates taken from each source (vectors, FTS5).
TOP_K = 12
#: Words of a statement used for its FTS5 candidate query (the rarest ones).
FTS_TERMS = 6
#: Vector candidates below this cosine are not judged at all.
MIN_VECTOR_SIM = {"model2vec": 0.6, "lexical": 0.35}


@dataclass
class MergeResult:
    action: str                      # inserted | reinforced | unchanged | superseded | outdated | forgotten | rejected
    card_id: int | None
    reason: str = ""
    superseded: list[int] = field(default_factory=list)   # cards this merge marked superseded
    revived: bool = False
    entities: list[int] = field(default_factory=list)
    statements: int = 0
    dropped: dict[str, int] = field(default_factory=dict)  # mentions/relations not stored, by reason


class _Vectors:
    """Card vectors in one growing float32 matrix (unit rows) for brute-force cosine search."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.mat = np.zeros((1024, dim), dtype=np.float32)
        self.ids = np.zeros(1024, dtype=np.int64)
        self.n = 0
        self.pos: dict[int, int] = {}

    def add(self, card_id: int, vec: np.ndarray) -> None:
        if card_id in self.pos:
            self.mat[self.pos[card_id]] = vec
            return
        if self.n == len(self.ids):
            self.mat = np.vstack([self.mat, np.zeros_like(self.mat)])
            self.ids = np.concatenate([self.ids, np.zeros_like(self.ids)])
        self.mat[self.n] = vec
        self.ids[self.n] = card_id
        self.pos[card_id] = self.n
        self.n += 1

    def nearest(self, q: np.ndarray, k: int, floor: float) -> list[tuple[int, float]]:
        if self.n == 0:
            return []
        sims = self.mat[: self.n] @ q
        if self.n > k:
            idx = np.argpartition(-sims, k)[:k]
        else:
            idx = np.arange(self.n)
        return [(int(self.ids[i]), float(sims[i])) for i in idx if sims[i] >= floor]


def _term(word: str) -> str:
    """`word` as one FTS5 phrase term (quoted; quotes inside dropped)."""
    return '"' + word.replace('"', "") + '"'


class MergeSession:
    """Merges cards into one agent db, keeping vectors, analyses and the entity tables cached.

    Reloads its caches when the db changed behind its back (cards added or removed by another
    connection, or a `forget`)."""

    def __init__(self, db: Any, *, embedder: Embedder | None = None, judge: Judge | None = None) -> None:
        self.db = db
        self.conn = connection(db)
        self.embedder = embedder or LexicalEmbedder(fallback_reason="no embedder given")
        self.judge = judge
        self.resolver = EntityResolver(self.conn, self.embedder if self.embedder.kind != "lexical" else None)
        # Lexical vectors are word overlap, which FTS5 already finds: no full scan for them.
        self._scan = self.embedder.kind != "lexical"
        self._version = -1
        self._analyses: dict[int, Any] = {}
        self._dfs: dict[str, int] = {}
        self._load()

    # -- cache ---------------------------------------------------------------------------------
    def _fingerprint(self) -> tuple:
        count, top = self.conn.execute("SELECT count(*), coalesce(max(id), 0) FROM cards").fetchone()
        return count, top, get_meta(self.conn, "generation"), get_meta(self.conn, "embedder")

    def _data_version(self) -> int:
        """Changes only when another connection commits (cheap: no table read)."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def _load(self) -> None:
        ensure_vectors(self.conn, self.embedder)
        self.vectors = _Vectors(self.embedder.dim)
        if self._scan:
            for cid, blob in self.conn.execute("SELECT id, vector FROM cards WHERE vector IS NOT NULL"):
                vec = from_blob(blob, self.embedder.dim)
                if vec is not None:
                    self.vectors.add(cid, vec)
        self.resolver.invalidate()
        self._analyses.clear()
        self._dfs.clear()
        self._seen = self._fingerprint()
        self._version = self._data_version()

    def _refresh(self) -> None:
        version = self._data_version()
        if self._seen and version == self._version and get_meta(self.conn, "generation") == self._seen[2]:
            return      # nobody else committed since we last looked, and nothing was forgotten
        self._version = version
        now = self._fingerprint()
        if now == self._seen:
            return
        if not self._seen:
            self._load()
            return
        count, top, gen, emb = now
        old_count, old_top, old_gen, old_emb = self._seen
        if gen == old_gen and emb == old_emb and top >= old_top and count - old_count == top - old_top:
            # only appended by someone else: load the new rows
            ensure_vectors(self.conn, self.embedder)
            if self._scan:
                for cid, blob in self.conn.execute("SELECT id, vector FROM cards WHERE id > ?", (old_top,)):
                    vec = from_blob(blob, self.embedder.dim)
                    if vec is not None:
                        self.vectors.add(cid, vec)
            self.resolver.invalidate()
            self._dfs.clear()
            self._seen = self._fingerprint()
            return
        self._load()

    def describe(self) -> dict:
        return {"embedder": self.embedder.describe(), "cards_loaded": self.vectors.n,
                "judge": self.judge is not None}

    # -- candidates ----------------------------------------------------------------------------
    def _df(self, term: str) -> int:
        """Cards containing `term` (FTS5 tokenization), cached for the session: an estimate used
        only to pick the rarest words of a query."""
        n = self._dfs.get(term)
        if n is None:
            n = self.conn.execute("SELECT count(*) FROM cards_fts WHERE cards_fts MATCH ?", (term,)).fetchone()[0]
            if len(self._dfs) > 200_000:
                self._dfs.clear()
            self._dfs[term] = n
        return n

    def _fts_query(self, statement: str) -> str | None:
        """OR of the statement's rare words (in at least one card and at most 1% of them; at most
        FTS_TERMS of them), else AND of its three rarest words: ranking every card that shares a
        common word costs tens of milliseconds on a big store, and common words do not tell which card
        states the same point. Words in no card cannot find one and never take a slot, so the query
        does not depend on what the process merged before (`_df` counts are dropped when cards change)."""
        terms: list[str] = []
        for w in words(statement):
            if w in STOPWORDS or len(w) < 2:
                continue
            term = _term(w)
            if term not in terms:
                terms.append(term)
        if not terms:
            return None
        ranked = sorted(terms, key=lambda t: (self._df(t), terms.index(t)))
        rare_limit = max(50, self._seen[0] // 100 if self._seen else 50)
        present = [t for t in ranked if self._df(t) > 0]
        if not present:
            return None
        rare = [t for t in present if self._df(t) <= rare_limit][:FTS_TERMS]
        if rare:
            return " OR ".join(rare)
        # only common words: cards that have the three rarest of them all (cheap, and what a
        # near-exact restatement has)
        return " AND ".join(present[:3])

    def candidates(self, statement: str, norm: str, vec: np.ndarray,
                   nearest: list[tuple[int, float]] | None = None, since: int = 0) -> dict[int, float | None]:
        """Existing card id -> cosine with `vec` (None until `_rows` fills it from the stored vector).
        `nearest`: vector candidates computed ahead for a batch (`merge_many`), valid for the first
        `since` rows of the matrix; rows added after that are scanned here."""
        found: dict[int, float | None] = {}
        for (cid,) in self.conn.execute("SELECT id FROM cards WHERE norm = ?", (norm,)):
            found[cid] = None
        query = self._fts_query(statement)
        if query:
            for (cid,) in self.conn.execute(
                "SELECT rowid FROM cards_fts WHERE cards_fts MATCH ? ORDER BY rank LIMIT ?", (query, TOP_K)
            ):
                found.setdefault(cid, None)
        if self._scan:
            floor = MIN_VECTOR_SIM.get(self.embedder.kind, 0.5)
            if nearest is None:
                hits = self.vectors.nearest(vec, TOP_K, floor)
            else:
                hits = list(nearest)
                n = self.vectors.n
                if n > since:
                    sims = self.vectors.mat[since:n] @ vec
                    hits += [(int(self.vectors.ids[since + i]), float(sims[i])) for i in np.nonzero(sims >= floor)[0]]
            for cid, sim in hits:
                found[cid] = sim
        return found

    def _analysis(self, cid: int, statement: str):
        hit = self._analyses.get(cid)
        if hit is None or hit.text != statement:
            if len(self._analyses) > 50_000:
                self._analyses.clear()
            hit = analyze(statement)
            self._analyses[cid] = hit
        return hit

    # -- merge ---------------------------------------------------------------------------------
    def merge_many(self, cards: list[NewCard], *, now: datetime | str, chunk: int = 512) -> list[MergeResult]:
        """Merge cards one by one (one transaction each), with their vectors and nearest stored
        cards computed ahead in matrix products (much faster than one scan per card on big stores).
        Cards merged earlier in the batch are still candidates for later ones."""
        results: list[MergeResult] = []
        floor = MIN_VECTOR_SIM.get(self.embedder.kind, 0.5)
        for start in range(0, len(cards), chunk):
            part = cards[start:start + chunk]
            self._refresh()
            texts = [c.statement.strip() if isinstance(c.statement, str) else "" for c in part]
            vecs = self.embedder.encode(texts)
            since = self.vectors.n
            nearest: list[list[tuple[int, float]] | None] = [None] * len(part)
            if self._scan and since:
                sims = vecs @ self.vectors.mat[:since].T          # (batch, stored), rows contiguous
                k = min(TOP_K, since)
                for j in range(len(part)):
                    row = sims[j]
                    top = np.argpartition(-row, k - 1)[:k] if since > k else np.arange(since)
                    nearest[j] = [(int(self.vectors.ids[i]), float(row[i])) for i in top if row[i] >= floor]
            for j, card in enumerate(part):
                results.append(self.merge(card, now=now, _vec=vecs[j], _nearest=nearest[j] if self._scan else None,
                                          _since=since))
        return results

    def merge(self, card: NewCard, *, now: datetime | str, _vec: np.ndarray | None = None,
              _nearest: list[tuple[int, float]] | None = None, _since: int = 0) -> MergeResult:
        """Merge one card (one transaction). Returns what was done; raises only on database
        errors (after rolling back; the caches are reloaded)."""
        problem = _validate(card)
        if problem:
            return MergeResult("rejected", None, reason=problem)
        now_s = utc_iso(now)
        said_at = utc_iso(card.said_at)
        statement = card.statement.strip()
        norm = normalize_statement(statement)
        if is_forgotten(self.conn, norm, card.source_key):
            return MergeResult("forgotten", None, reason="statement or source was forgotten")
        if _nearest is not None and self._data_version() != self._version:
            _nearest = None     # someone else wrote since the batch was prepared: scan afresh
        self._refresh()
        vec = _vec if _vec is not None else self.embedder.encode_one(statement)
        new_an = analyze(statement)
        rows = {}
        cands = self.candidates(statement, norm, vec, _nearest, _since)
        if cands:
            marks = ",".join("?" * len(cands))
            for r in self.conn.execute(
                f"""SELECT id, statement, status, superseded_by, said_at, last_seen_at, vector FROM cards
                    WHERE id IN ({marks}) AND COALESCE(writer, '') != 'claude-auto-memory'""", list(cands)):
                # (cards of Claude Code's auto memory follow their files, graph.auto_memory: never merged into)
                rows[r[0]] = r[:6]
                if cands[r[0]] is None:
                    other = from_blob(r[6], self.embedder.dim)
                    cands[r[0]] = float(other @ vec) if other is not None else None
        same: list[tuple[Judgement, tuple]] = []
        opposite: list[tuple[Judgement, tuple]] = []
        for cid, row in rows.items():
            j = judge_pair(new_an, self._analysis(cid, row[1]), cands.get(cid), kind=self.embedder.kind,
                           judge=self.judge)
            if j.decision == "same":
                same.append((j, row))
            elif j.decision == "opposite":
                opposite.append((j, row))
        # Withdrawn cards (retired/removed/archived by a person or maintenance, graph.model) are
        # neither reinforced nor superseded: a restated point becomes a new active card.
        same = [jr for jr in same if jr[1][2] in MERGE_TARGET_STATUSES]
        opposite = [jr for jr in opposite if jr[1][2] in MERGE_TARGET_STATUSES]
        rank = {s: i for i, s in enumerate(MERGE_TARGET_STATUSES)}
        same.sort(key=lambda jr: (rank[jr[1][2]], -jr[0].similarity, jr[1][0]))
        try:
            with transaction(self.conn):
                if same:
                    result = self._reinforce(card, same[0][1], opposite, said_at, now_s)
                else:
                    result = self._insert(card, statement, norm, vec, opposite, said_at, now_s)
                self._link(card, result, said_at, now_s)
        except BaseException:
            self.resolver.invalidate()
            self._dfs.clear()
            self._seen = ()
            raise
        if result.action in ("inserted", "superseded", "outdated"):
            # the new card changes counts, also of terms FTS splits out of its names ("gateway" of
            # "api-gateway"): all are read again
            self._dfs.clear()
            if self._scan:
                self.vectors.add(result.card_id, vec)
            self._analyses[result.card_id] = new_an
            count, top, gen, emb = self._seen
            self._seen = (count + 1, max(top, result.card_id), gen, emb)
        self._version = self._data_version()
        return result

    def _supersede(self, older_ids: list[int], newer_id: int, now_s: str) -> None:
        for oid in older_ids:
            self.conn.execute(
                """UPDATE cards SET status = 'superseded', superseded_by = ?, status_at = ?, updated_at = ?
                   WHERE id = ?""", (newer_id, now_s, now_s, oid))

    def _insert(self, card: NewCard, statement: str, norm: str, vec: np.ndarray, opposite, said_at: str,
                now_s: str) -> MergeResult:
        conf = min(1.0, max(0.0, float(card.confidence)))
        # the newest statement of the point wins: older opposites are superseded by this card; an
        # opposite said after this card supersedes it instead.
        older = [row[0] for _, row in opposite if row[2] != "superseded" and row[5] <= said_at]
        newer = [row for _, row in opposite if row[5] > said_at]
        status, superseded_by = "active", None
        if newer:
            status, superseded_by = "superseded", max(newer, key=lambda r: r[5])[0]
        cur = self.conn.execute(
            """INSERT INTO cards(statement, norm, category, importance, confidence, original_confidence, status,
               superseded_by, sessions, writer, source_key, created_at, said_at, last_seen_at, updated_at,
               status_at, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (statement, norm, card.category, int(card.importance), conf, conf, status, superseded_by,
             card.writer, card.source_key or None, now_s, said_at, said_at, now_s,
             now_s if superseded_by else None, to_blob(vec)),
        )
        cid = int(cur.lastrowid)
        self._supersede(older, cid, now_s)
        self._add_session(cid, card, said_at, now_s)
        self._add_evidence(cid, card)
        if newer:
            return MergeResult("outdated", cid, reason="a later card states the opposite", superseded=older)
        if older:
            return MergeResult("superseded", cid, reason="states the opposite of an older card", superseded=older)
        return MergeResult("inserted", cid)

    def _reinforce(self, card: NewCard, row: tuple, opposite, said_at: str, now_s: str) -> MergeResult:
        cid, _, status, superseded_by, first_said, last_seen = row
        new_session = self._add_session(cid, card, said_at, now_s)
        evidence = self._add_evidence(cid, card)
        revived = False
        superseded: list[int] = []
        sets = ["updated_at = ?", "said_at = min(said_at, ?)", "last_seen_at = max(last_seen_at, ?)",
                "importance = max(importance, ?)"]
        params: list[Any] = [now_s, said_at, said_at, int(card.importance)]
        if new_session:
            sets.append("confidence = min(confidence + 0.1, original_confidence)")
        if status == "faded":
            sets += ["status = 'active'", "status_at = ?", "revived = revived + 1"]
            params.append(now_s)
            revived = True
        elif status == "superseded" and superseded_by is not None:
            succ = self.conn.execute("SELECT last_seen_at, status FROM cards WHERE id = ?", (superseded_by,)).fetchone()
            if succ is not None and said_at > succ[0]:
                # restated after the card that superseded it: the point is back, its successor is not
                sets += ["status = 'active'", "superseded_by = NULL", "status_at = ?"]
                params.append(now_s)
                revived = True
                if succ[1] != "superseded":
                    superseded.append(superseded_by)
        self.conn.execute(f"UPDATE cards SET {', '.join(sets)} WHERE id = ?", (*params, cid))
        superseded += [r[0] for _, r in opposite
                       if r[0] != cid and r[2] != "superseded" and r[5] <= said_at and r[0] not in superseded]
        self._supersede(superseded, cid, now_s)
        action = "reinforced" if (new_session or evidence or revived or superseded) else "unchanged"
        return MergeResult(action, cid, reason="same point" + ("" if new_session else " (session already counted)"),
                           superseded=superseded, revived=revived)

    def _add_session(self, cid: int, card: NewCard, said_at: str, now_s: str) -> bool:
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO card_sessions(card_id, session, said_at, source_key, learned_at) VALUES (?, ?, ?, ?, ?)",
            (cid, card.session, said_at, card.source_key or None, now_s))
        if cur.rowcount:
            self.conn.execute(
                "UPDATE cards SET sessions = (SELECT count(*) FROM card_sessions WHERE card_id = ?) WHERE id = ?",
                (cid, cid))
            return True
        self.conn.execute(
            "UPDATE card_sessions SET said_at = min(said_at, ?) WHERE card_id = ? AND session = ?",
            (said_at, cid, card.session))
        return False

    def _add_evidence(self, cid: int, card: NewCard) -> int:
        have = self.conn.execute("SELECT count(*) FROM evidence WHERE card_id = ?", (cid,)).fetchone()[0]
        added = 0
        for ev in card.evidence:
            if have >= EVIDENCE_CAP:
                break
            dup = self.conn.execute(
                """SELECT 1 FROM evidence WHERE card_id = ? AND conversation = ? AND message_from IS ?
                   AND message_to IS ?""", (cid, ev.conversation, ev.message_from, ev.message_to)).fetchone()
            if dup:
                continue
            self.conn.execute(
                """INSERT INTO evidence(card_id, conversation, message_from, message_to, said_at, passage)
                   VALUES (?, ?, ?, ?, ?, ?)""",
                (cid, ev.conversation, ev.message_from, ev.message_to,
                 utc_iso(ev.said_at) if ev.said_at else None, ev.passage))
            have += 1
            added += 1
        return added

    def _link(self, card: NewCard, result: MergeResult, said_at: str, now_s: str) -> None:
        """Entities and relation statements of the card (the new one or the reinforced one)."""
        cid = result.card_id
        dropped: dict[str, int] = {}
        ids: dict[str, int] = {}
        context: set[int] = set()
        mentions = [(e.name, e.type) for e in card.entities]
        types = {e.name: e.type for e in card.entities}
        for rel in card.relations:
            for name in (rel.subject, rel.object):
                mentions.append((name, types.get(name, "other")))
        from .model import EntityRef

        for name, etype in mentions:
            if name in ids:
                continue
            res = self.resolver.resolve(EntityRef(name, etype), context, now=now_s)
            if res is None:
                dropped["generic entity"] = dropped.get("generic entity", 0) + 1
                continue
            ids[name] = res.entity_id
            context.add(res.entity_id)
        for eid in sorted(set(ids.values())):
            self.conn.execute("INSERT OR IGNORE INTO card_entities(card_id, entity_id) VALUES (?, ?)", (cid, eid))
        statements = []
        from .model import VERBS

        for rel in card.relations:
            if rel.verb not in VERBS:
                dropped["unknown verb"] = dropped.get("unknown verb", 0) + 1
                continue
            s, o = ids.get(rel.subject), ids.get(rel.object)
            if s is None or o is None:
                dropped["relation to a generic word"] = dropped.get("relation to a generic word", 0) + 1
                continue
            if s == o:
                dropped["relation to itself"] = dropped.get("relation to itself", 0) + 1
                continue
            statements.append(relations.Statement(s, rel.verb, o, bool(rel.holds)))
        added, touched = relations.add_statements(self.conn, cid, card.session, said_at, now_s, statements)
        relations.recompute(self.conn, touched, now_s)
        result.entities = sorted(set(ids.values()))
        result.statements = added
        result.dropped = dropped


def _validate(card: NewCard) -> str | None:
    if not isinstance(card.statement, str) or not card.statement.strip():
        return "empty statement"
    if card.category not in CATEGORIES:
        return f"unknown category {card.category!r}"
    if not card.session:
        return "no session"
    try:
        utc_iso(card.said_at)
    except (ValueError, TypeError):
        return "said_at is not an ISO-8601 timestamp"
    try:
        float(card.confidence)
    except (TypeError, ValueError):
        return "confidence is not a number"
    for ev in card.evidence:
        if ev.said_at:
            try:
                utc_iso(ev.said_at)
            except (ValueError, TypeError):
                return "evidence said_at is not an ISO-8601 timestamp"
    return None


_sessions: "weakref.WeakKeyDictionary[Any, dict[str, MergeSession]]" = weakref.WeakKeyDictionary()


def merge_card(db: Any, card: NewCard, *, now: datetime | str, embedder: Embedder | None = None,
               judge: Judge | None = None) -> MergeResult:
    """Merge one verified card (one transaction). Reuses a cached `MergeSession` per db object and
    embedder, so calling it card after card in one run does not reload the vectors."""
    key_obj = db
    try:
        per_db = _sessions.setdefault(key_obj, {})
    except TypeError:  # not weak-referenceable (a raw sqlite3.Connection): no cache
        return MergeSession(db, embedder=embedder, judge=judge).merge(card, now=now)
    emb_key = embedder.id if embedder is not None else "default-lexical"
    session = per_db.get(emb_key)
    if session is None:
        session = MergeSession(db, embedder=embedder, judge=judge)
        per_db[emb_key] = session
    session.judge = judge
    return session.merge(card, now=now)

