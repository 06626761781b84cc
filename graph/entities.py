"""Entity resolution: one node per thing, whatever it is called.

Order of resolution for a mention (an `EntityRef` from a card):
1. Generic words ("config", "tests", "the server", "database") are not entities: `resolve` returns
   None and the caller drops the mention (and relations through it).
2. Exact match of the normalized name ("the mini-lola host", "Mini-Lola", "mini_lola" all
   normalize to "mini-lola") against every known name and alias.
3. Same canonical key: separators removed ("minilola") and common synonyms applied per token
   ("k8s" = "kubernetes", "postgres" = "postgresql").
4. Fuzzy (rapidfuzz) candidates, then embedding candidates when an embedder is given, each
   confirmed by type (equal, or one side "other"), by identical numbers ("api-v1" is never
   "api-v2") and token by token (a typo is allowed, a different word is not), and - below a high
   score - by context (the candidate is already mentioned together with another entity of the card).
5. Otherwise a new entity.
Every resolution other than by exact name records the mention as an alias (`entity_aliases.how`
says how it was decided), so the next mention resolves in step 2.

Invariants: `entities.norm` and `entity_aliases.norm` are `normalize_entity` keys; an entity's own
norm is always one of its aliases; nothing here commits (callers own the transaction).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from .model import ENTITY_TYPES, EntityRef
from .store import connection
from .text import NAME_SEP, NAME_STRIP, name_tokens

log = logging.getLogger(__name__)

_LEADING = {"the", "a", "an", "our", "my", "your", "their", "this", "that", "its"}
#: Trailing/leading nouns that say what kind of thing a name is, not which one
#: ("the mini-lola host", "the reverie repo", "host mini-lola").
_KIND_WORDS = {"host", "server", "machine", "box", "vm", "instance", "repo", "repository", "cluster",
               "library", "lib", "package", "tool", "project", "environment", "env", "linter"}

#: Names that are never entities on their own (normalized form).
GENERIC = frozenset(
    """config configs configuration settings setting test tests testing spec specs server servers
    database databases db dbs app apps application code codebase repo repository project file files
    function functions method methods class classes module modules package packages library libraries
    lib tool tools script scripts service services host hosts machine system systems user users
    api apis frontend backend build builds docs doc documentation readme data logs log cache env
    environment environments team we it this that thing things something error errors bug bugs issue
    issues feature features branch branches main master local
    localhost cli ui ux client clients command commands terminal shell output input file-system
    folder directory dir path paths test-suite suite pipeline ci cd ci/cd deploy deployment release
    version versions dependency dependencies package.json? the-server the-app the-database
    model models agent assistant claude human person people someone anyone everyone
    id ids uuid uuids json jsonl ndjson yaml yml toml csv tsv xml html pdf pdfs png jpg jpeg gif svg txt md
    markdown url urls uri uris http https ssh tcp udp dns sql cpu gpu ram os mac pc""".replace("?", "").split()
)

#: Per-token synonyms used for the canonical key (both sides mapped to the right-hand form).
SYNONYMS = {
    "k8s": "kubernetes", "kube": "kubernetes", "postgres": "postgresql", "pg": "postgresql",
    "psql": "postgresql", "js": "javascript", "ts": "typescript", "py": "python", "gh": "github",
    "mongo": "mongodb", "tf": "terraform", "gcp": "google-cloud", "gcloud": "google-cloud",
    "es": "elasticsearch", "rmq": "rabbitmq", "nodejs": "node", "node.js": "node",
}

_SEP, _STRIP = NAME_SEP, NAME_STRIP
_DIGITS = re.compile(r"\d+")


_tokens = name_tokens


def _clean(tokens: list[str]) -> list[str]:
    """Leading articles and kind words dropped, trailing kind words dropped (never all of it)."""
    toks = list(tokens)
    while len(toks) > 1 and toks[0] in _LEADING:
        toks.pop(0)
    while len(toks) > 1 and toks[-1] in _KIND_WORDS:
        toks.pop()
    while len(toks) > 1 and toks[0] in _KIND_WORDS:
        toks.pop(0)
    return toks


def normalize_entity(name: str) -> str:
    """The matching key of a name: folded, articles and kind words dropped, separators (space,
    underscore, hyphen) unified to "-". "The Mini-Lola host" -> "mini-lola"."""
    toks = _clean(_tokens(name))
    return _SEP.sub("-", "-".join(toks)).strip("-")


def display_name(name: str) -> str:
    """The name as shown: the mention without articles and kind words, original case kept."""
    raw = [t for t in (name or "").replace("`", " ").split() if t]
    folded = _tokens(name)
    if len(raw) != len(folded):
        return name.strip()
    keep = _clean(folded)
    start = next((i for i in range(len(folded)) if folded[i:i + len(keep)] == keep), 0)
    return " ".join(_STRIP.sub("", t) for t in raw[start:start + len(keep)]).strip() or name.strip()


def canonical_key(norm: str) -> str:
    """Separators removed and synonyms applied per token: "Postgres-15" and "postgresql 15" meet."""
    parts = [p for p in re.split(r"[-./]+", norm) if p]
    return "".join(SYNONYMS.get(p, p) for p in parts) or norm


def _compact(norm: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", norm)


_VENDOR_PREFIX = ("apache-", "google-", "aws-", "amazon-", "microsoft-", "azure-")
_DOMAIN_SUFFIX = (".io", ".com", ".dev", ".org", ".net", ".ai", ".app")


def _variants(norm: str) -> list[str]:
    """Other spellings of the same name: "-svc" / "-service" swapped or dropped, a vendor prefix
    ("apache-kafka") or a domain suffix ("sentry.io") removed."""
    out = []
    for suffix in ("-service", "-svc"):
        if norm.endswith(suffix) and len(norm) > len(suffix) + 2:
            base = norm[: -len(suffix)]
            out += [base, base + ("-svc" if suffix == "-service" else "-service")]
    if not norm.endswith(("-service", "-svc")):
        out.append(norm + "-service")
    for prefix in _VENDOR_PREFIX:
        if norm.startswith(prefix) and len(norm) > len(prefix) + 2:
            out.append(norm[len(prefix):])
    for suffix in _DOMAIN_SUFFIX:
        if norm.endswith(suffix) and len(norm) > len(suffix) + 2:
            out.append(norm[: -len(suffix)])
    return out


def is_generic(name: str) -> bool:
    """True for words that are not entities on their own: generic nouns, pure numbers, one letter."""
    norm = normalize_entity(name)
    if not norm or len(norm) < 2 or norm.isdigit():
        return True
    if norm in GENERIC:
        return True
    if " " not in name.strip() and re.search(r"\w[-_]\w", name):
        return False   # a hyphenated/underscored name ("api-server") was chosen as a name
    words_ = [w for w in name.replace("`", " ").split() if w.lower() not in _LEADING]
    if len(words_) > 1 and all(w[:1].isupper() for w in words_):
        return False   # a Title Case proper name ("Claude Code", "GitHub Actions")
    toks = norm.split("-")
    return all(t in GENERIC or t in _LEADING or t in _KIND_WORDS for t in toks)


def _tokens_compatible(a: str, b: str) -> bool:
    """Token by token: a typo is allowed, a different word or number is not."""
    if _DIGITS.findall(a) != _DIGITS.findall(b):
        return False
    ta = [t for t in re.split(r"[-./]+", a) if t]
    tb = [t for t in re.split(r"[-./]+", b) if t]
    if len(ta) != len(tb):
        return canonical_key(a) == canonical_key(b)
    for x, y in zip(ta, tb):
        if x == y or SYNONYMS.get(x, x) == SYNONYMS.get(y, y):
            continue
        if not _typo(x, y):
            return False
    return True


def _typo(x: str, y: str) -> bool:
    """Two spellings of one word: both >= 4 letters, the same first letter, lengths within one, and
    one edit apart (two for words of 8 or more letters; a swap of neighbours is one edit), with a
    similarity ratio of 80 or more. "servcie" and "service" are; "auth"/"oauth", "mail"/"email",
    "main"/"mail", "ledger"/"leader", "search"/"research" are not."""
    from rapidfuzz import fuzz
    from rapidfuzz.distance import OSA

    if min(len(x), len(y)) < 4 or x[0] != y[0] or abs(len(x) - len(y)) > 1:
        return False
    # and similar enough as a whole: one letter swapped in a short word is another word
    # ("main"/"mail", "prod"/"prom", "test"/"text": ratio 75), a transposition is not ("servcie": 86)
    return OSA.distance(x, y) <= (2 if min(len(x), len(y)) >= 8 else 1) and fuzz.ratio(x, y) >= 80


def _types_compatible(a: str, b: str) -> bool:
    return a == b or "other" in (a, b)


@dataclass(frozen=True)
class Resolution:
    entity_id: int
    how: str          # exact | alias-new how (normalized | canonical | fuzzy | embedding) | created
    created: bool


class EntityResolver:
    """Resolves mentions against one agent's entities. Keeps its lookup tables in memory for the
    life of a merge session (consolidation run); `invalidate()` after outside changes."""

    def __init__(self, db: Any, embedder: Any = None) -> None:
        self.conn = connection(db)
        self.embedder = embedder
        self._loaded = False

    def invalidate(self) -> None:
        self._loaded = False

    def _load(self) -> None:
        self.alias: dict[str, int] = {}
        self.canon: dict[str, int] = {}
        self.info: dict[int, tuple[str, str, str]] = {}
        for eid, name, norm, etype in self.conn.execute("SELECT id, name, norm, type FROM entities"):
            self.info[eid] = (name, norm, etype)
            self.alias[norm] = eid
        for norm, eid in self.conn.execute("SELECT norm, entity_id FROM entity_aliases"):
            self.alias.setdefault(norm, eid)
        for norm, eid in self.alias.items():
            self.canon.setdefault(canonical_key(norm), eid)
        self._alias_keys: list[str] | None = None
        self._vecs = None
        self._loaded = True

    # -- lookups -----------------------------------------------------------------------------
    def lookup(self, name: str) -> int | None:
        """Exact (normalized name or alias) or canonical-key match only; no fuzzy guessing."""
        if not self._loaded:
            self._load()
        norm = normalize_entity(name)
        if norm in self.alias:
            return self.alias[norm]
        return self.canon.get(canonical_key(norm))

    def _co_mentioned(self, entity_id: int, context: set[int]) -> bool:
        if not context:
            return False
        marks = ",".join("?" * len(context))
        row = self.conn.execute(
            f"""SELECT 1 FROM card_entities a JOIN card_entities b ON a.card_id = b.card_id
                WHERE a.entity_id = ? AND b.entity_id IN ({marks}) LIMIT 1""",
            (entity_id, *context),
        ).fetchone()
        return row is not None

    def _fuzzy(self, norm: str, etype: str, context: set[int]) -> tuple[int, str] | None:
        from rapidfuzz import fuzz, process

        if self._alias_keys is None:
            self._alias_keys = list(self.alias)
        if len(norm) < 4 or not self._alias_keys:
            return None
        for key, score, _ in process.extract(norm, self._alias_keys, scorer=fuzz.ratio, score_cutoff=84, limit=5):
            eid = self.alias[key]
            if not _types_compatible(self.info[eid][2], etype) or not _tokens_compatible(norm, key):
                continue
            needed = 90 if len(norm.replace("-", "")) >= 8 else 95
            if score >= needed or self._co_mentioned(eid, context):
                return eid, "fuzzy"
        # Same letters ("Mongo DB"/"mongodb") or a known short form with a conventional suffix
        # ("mongo"/"mongodb", "react.js"/"react").
        ck = _compact(norm)
        for key in self._alias_keys:
            other = _compact(key)
            long, short = (ck, other) if len(ck) > len(other) else (other, ck)
            suffix = long[len(short):]
            if len(short) >= 4 and long.startswith(short) and suffix in ("", "db", "ql", "sql", "js"):
                long_norm = norm if len(ck) > len(other) else key
                if suffix and re.search(r"[-_. ]" + suffix + "$", long_norm):
                    continue    # "billing-db" is billing's database, not another spelling of billing
                eid = self.alias[key]
                if _types_compatible(self.info[eid][2], etype):
                    return eid, "fuzzy"
        return None

    def _embedding(self, name: str, norm: str, etype: str, context: set[int]) -> tuple[int, str] | None:
        if self.embedder is None or not self.info:
            return None
        import numpy as np

        if self._vecs is None:
            self._vec_ids = list(self.info)
            self._vecs = self.embedder.encode([self.info[i][0] for i in self._vec_ids])
        q = self.embedder.encode_one(name)
        sims = self._vecs @ q
        for idx in np.argsort(-sims)[:3]:
            if sims[idx] < 0.9:
                break
            eid = self._vec_ids[int(idx)]
            _, enorm, et = self.info[eid]
            if et != etype or etype == "other":
                continue
            if _DIGITS.findall(norm) != _DIGITS.findall(enorm):
                continue
            if self._co_mentioned(eid, context):
                return eid, "embedding"
        return None

    # -- resolution --------------------------------------------------------------------------
    def resolve(self, ref: EntityRef, context: set[int] | None = None, *, create: bool = True,
                now: str = "") -> Resolution | None:
        """The entity a mention refers to (created if new and `create`), or None for a generic
        word. `context`: ids of the other entities of the same card (confirms weak matches)."""
        if not self._loaded:
            self._load()
        etype = ref.type if ref.type in ENTITY_TYPES else "other"
        norm = normalize_entity(ref.name)
        context = context or set()
        eid = self.alias.get(norm)   # a name already known is an entity even if it looks generic
        how = "exact"
        if eid is None and is_generic(ref.name):
            return None
        if eid is None:
            eid = self.canon.get(canonical_key(norm))
            how = "canonical"
            if eid is not None and not _types_compatible(self.info[eid][2], etype):
                eid = None
        if eid is None:
            for variant in _variants(norm):
                cand = self.alias.get(variant)
                if cand is None:
                    cand = self.canon.get(canonical_key(variant))
                if cand is not None and _types_compatible(self.info[cand][2], etype):
                    eid, how = cand, "normalized"
                    break
        if eid is None and etype == "person" and "-" not in norm:
            firsts = [i for i, (_, n, t) in self.info.items() if t == "person" and n.split("-")[0] == norm]
            if len(firsts) == 1:
                eid, how = firsts[0], "first-name"
        if eid is None:
            hit = self._fuzzy(norm, etype, context) or self._embedding(ref.name, norm, etype, context)
            if hit:
                eid, how = hit
        if eid is not None:
            self._remember_alias(eid, norm, ref.name, how)
            if self.info[eid][2] == "other" and etype != "other":
                self.conn.execute("UPDATE entities SET type = ? WHERE id = ?", (etype, eid))
                name, enorm, _ = self.info[eid]
                self.info[eid] = (name, enorm, etype)
            return Resolution(eid, how, False)
        if not create:
            return None
        name = display_name(ref.name)
        cur = self.conn.execute(
            "INSERT INTO entities(name, norm, type, created_at) VALUES (?, ?, ?, ?)", (name, norm, etype, now)
        )
        eid = int(cur.lastrowid)
        self.conn.execute(
            "INSERT OR IGNORE INTO entity_aliases(norm, alias, entity_id, how) VALUES (?, ?, ?, 'name')",
            (norm, name, eid),
        )
        self.info[eid] = (name, norm, etype)
        self.alias[norm] = eid
        self.canon.setdefault(canonical_key(norm), eid)
        if self._alias_keys is not None:
            self._alias_keys.append(norm)
        if self._vecs is not None:
            import numpy as np

            self._vecs = np.vstack([self._vecs, self.embedder.encode([name])])
            self._vec_ids.append(eid)
        return Resolution(eid, "created", True)

    def _remember_alias(self, eid: int, norm: str, alias: str, how: str) -> None:
        if norm in self.alias:
            return
        self.conn.execute(
            "INSERT OR IGNORE INTO entity_aliases(norm, alias, entity_id, how) VALUES (?, ?, ?, ?)",
            (norm, alias.strip(), eid, how),
        )
        self.alias[norm] = eid
        self.canon.setdefault(canonical_key(norm), eid)
        if self._alias_keys is not None:
            self._alias_keys.append(norm)


def known_entities(db: Any) -> list[tuple[str, str]]:
    """Every name and alias an entity of this agent is known by, with the entity's type, most
    mentioned entities first (for the offline card writer's entity patterns)."""
    conn = connection(db)
    rows = conn.execute(
        """SELECT a.alias, e.type FROM entity_aliases a JOIN entities e ON e.id = a.entity_id
           LEFT JOIN (SELECT entity_id, count(*) n FROM card_entities GROUP BY entity_id) m
             ON m.entity_id = e.id
           ORDER BY coalesce(m.n, 0) DESC, e.id, a.how != 'name', a.alias"""
    ).fetchall()
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for alias, etype in rows:
        if alias.lower() not in seen:
            seen.add(alias.lower())
            out.append((alias, etype))
    return out


def find_entity(db: Any, name: str) -> dict | None:
    """The entity a user typed (exact or canonical match, then a confident fuzzy match), as a row
    dict {id, name, type, aliases}; None when nothing matches."""
    resolver = EntityResolver(db)
    eid = resolver.lookup(name)
    if eid is None and not is_generic(name):
        hit = resolver._fuzzy(normalize_entity(name), "other", set())
        eid = hit[0] if hit else None
    if eid is None:
        return None
    return entity_row(db, eid)


def entity_row(db: Any, eid: int) -> dict | None:
    conn = connection(db)
    row = conn.execute("SELECT id, name, type, norm FROM entities WHERE id = ?", (eid,)).fetchone()
    if row is None:
        return None
    aliases = [a for (a,) in conn.execute(
        "SELECT alias FROM entity_aliases WHERE entity_id = ? ORDER BY how = 'name' DESC, alias", (eid,))
        if a != row[1]]
    return {"id": row[0], "name": row[1], "type": row[2], "aliases": aliases}


def suggestions(db: Any, name: str, limit: int = 5) -> list[str]:
    """Names close to `name` (for "did you mean" in error messages)."""
    from rapidfuzz import fuzz, process

    conn = connection(db)
    names = [r[0] for r in conn.execute("SELECT name FROM entities")]
    return [n for n, _, _ in process.extract(name, names, scorer=fuzz.WRatio, limit=limit, score_cutoff=60)]
