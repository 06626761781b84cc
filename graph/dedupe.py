"""Does a new card state the same point as an existing one, its opposite, or something else?

Two steps:
1. Candidates (in `graph.merge.MergeSession`): exact normalized text (index on `cards.norm`),
   FTS5 token overlap (so near-exact text is always found whatever the embedding says) and the
   nearest vectors by cosine.
2. Judgement (`judge_pair`), deterministic first:
   - equal normalized text: same;
   - the same lead choice ("uses X, not Y" / "use X instead of Y" / "prefer X over Y": same X, same
     Y, no polarity conflict, no exception on one side only, the clauses stating it not scoped
     differently on both sides): same, whatever reasons each adds after it;
   - polarity: every content word gets a sign from its clause (negation scopes "never X", "X is not
     allowed", contrast "A instead of / rather than / over / not B", "moved off B", "switch from B
     to A", and antonyms mapped onto one base word with a sign: "disable" = not "enable"). A word
     both cards share with opposite signs on a shared topic makes them opposite;
   - exception markers ("except", "unless", "only when", ...) on one side only: a qualified rule
     is a different point;
   - a value change: the same sentence about a state with only its number changed ("runs
     PostgreSQL 15" / "runs PostgreSQL 16", "CI runs on Node 18" / "... 20"): an update or two values
     of one setting, which words cannot tell: ambiguous (`value_update`);
   - substitution: both sides name a different identifier, number or value of the same kind
     ("node 18 in auth-service" / "node 20 in billing", "staging" / "production", "auth-service" /
     "billing-service"): different;
   - otherwise similarity decides: same when embedding and word overlap agree, different below.
   Cases in between are "ambiguous": a model `judge` callable decides when one is given, else
   they are kept apart (a duplicate is cheaper than a wrong merge).

Invariants: `judge_pair` never says "same" for a pair whose polarity conflicts, and never calls the
model judge for exact text or for clear decisions. Stdlib only except the vectors it is handed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Literal

from .text import STOPWORDS, fold, is_identifier, normalize_statement, stem

Decision = Literal["same", "opposite", "different"]
#: A model backend's judgement of two statements: "same" | "opposite" | "different" (None: no answer).
Judge = Callable[[str, str], "str | None"]

_TOKEN = re.compile(r"[a-z0-9][a-z0-9_./\-+#@]*[a-z0-9+#]|[a-z0-9]|[,;:!?()]|\.(?=\s|$)|—| - ")
_POSS = re.compile(r"'s\b")
_APOS = re.compile(r"(?<=[a-z])'(?=[a-z])")

#: Words that open a negated scope running to the end of the clause.
NEG_CUES = frozenset(
    """not never no nor cannot avoid avoids avoided avoiding without stop stops stopped quit
    dislike dislikes disliked hate hates forbid forbids forbade ban bans skip skips
    dont doesnt didnt isnt arent wasnt werent wont wouldnt cant couldnt shouldnt mustnt neednt
    havent hasnt hadnt""".split()
)
#: Contrast cues: what follows is the rejected alternative ("A instead of B").
_CONTRAST_2 = {("instead", "of"), ("rather", "than"), ("in", "place"), ("as", "opposed"), ("moved", "off"),
               ("move", "off"), ("moving", "off"), ("migrated", "off"), ("migrate", "off"), ("away", "from")}
_PREFER_VERBS = {"prefer", "prefers", "preferred", "favor", "favors", "favour", "favours", "use", "uses",
                 "chose", "choose", "picked", "pick", "choosing", "prefering", "preferring"}
_SWITCH_VERBS = {"switch", "switched", "switching", "migrate", "migrated", "migrating", "move", "moved",
                 "moving", "port", "ported"}
#: Predicates that negate the clause before them ("pushing to main is forbidden").
_NEG_PREDICATES = frozenset("forbidden prohibited banned disallowed discouraged deprecated unsafe".split())
#: Words that, when negated, negate the clause before them ("emojis are not allowed").
_PERMISSION = frozenset(
    "allowed permitted ok okay fine acceptable needed required necessary recommended wanted supported safe".split()
)
#: Words that end a negated scope early when they start a new imperative ("avoid X and use Y").
_RESTART = frozenset("use run prefer keep always instead switch rely pick choose go put write call add let make".split())
_BOUNDARY = frozenset({",", ";", ":", "!", "?", ".", "(", ")", "—", " - ", "but", "however", "whereas",
                       "although", "though", "so", "because", "since"})
#: Antonyms mapped onto (base word, sign): "disable" is "enable" with a minus.
ANTONYMS = {
    "disable": ("enable", -1), "disabled": ("enable", -1), "disables": ("enable", -1), "disabling": ("enable", -1),
    "deny": ("allow", -1), "denied": ("allow", -1),
    "block": ("allow", -1), "remove": ("add", -1), "removed": ("add", -1), "removes": ("add", -1),
    "exclude": ("include", -1), "excluded": ("include", -1), "excludes": ("include", -1),
    "decrease": ("increase", -1), "decreased": ("increase", -1), "lower": ("raise", -1),
    "after": ("before", -1), "false": ("true", -1), "off": ("on", -1),
    "async": ("sync", -1), "asynchronous": ("sync", -1), "synchronous": ("sync", 1),
    "private": ("public", -1), "optional": ("required", -1), "mandatory": ("required", 1),
    "drop": ("keep", -1), "delete": ("keep", -1), "reject": ("accept", -1), "rejected": ("accept", -1),
    "lowercase": ("uppercase", -1), "remote": ("local", -1), "manual": ("automatic", -1),
    "manually": ("automatically", -1), "fail": ("pass", -1), "fails": ("pass", -1), "hide": ("show", -1),
    "unlock": ("lock", -1), "outside": ("inside", -1), "less": ("more", -1), "fewer": ("more", -1),
    "slower": ("faster", -1), "descending": ("ascending", -1), "relative": ("absolute", -1),
    "unpin": ("pin", -1), "unpinned": ("pin", -1), "insecure": ("secure", -1),
    "disallow": ("allow", -1), "uninstall": ("install", -1),
}
#: Mutually exclusive values: one on each side (and not on the other) = a different point.
CONTRAST_CLASSES = [
    {"staging", "production", "prod", "dev", "development", "test", "qa", "preview", "sandbox"},
    {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"},
    {"linux", "macos", "windows"}, {"tabs", "spaces"}, {"tab", "space"},
    {"npm", "pnpm", "yarn", "bun"}, {"pip", "poetry", "uv", "pipenv", "conda"},
    {"jest", "vitest", "mocha"}, {"merge", "rebase", "squash"}, {"json", "yaml", "toml", "xml", "csv"},
    {"get", "post", "put", "patch"}, {"debug", "info", "warning", "error"},
    {"mysql", "postgres", "postgresql", "sqlite", "mongodb", "redis", "dynamodb"},
    {"webpack", "vite", "rollup", "esbuild", "parcel"}, {"black", "ruff", "yapf", "autopep8"},
    {"snake_case", "camelcase", "kebab-case", "pascalcase"}, {"daily", "weekly", "monthly", "hourly", "nightly"},
    {"minute", "hour", "day", "week", "month", "year", "second"},
    {"minutes", "hours", "days", "weeks", "months", "years", "seconds"},
    {"unit", "integration", "e2e"}, {"frontend", "backend"}, {"ios", "android", "web", "mobile"},
    {"primary", "replica"}, {"read", "write"}, {"reads", "writes"}, {"email", "emails", "sms", "slack"},
    {"github", "gitlab", "bitbucket"}, {"aws", "gcp", "azure"}, {"docker", "podman"},
    {"lexer", "parser"}, {"api", "worker", "frontend", "web"},
]
_ANTONYM_BASES = frozenset(base for base, _ in ANTONYMS.values())
_CLASS_OF: dict[str, list[int]] = {}
for _i, _cls in enumerate(CONTRAST_CLASSES):
    for _w in _cls:
        _CLASS_OF.setdefault(_w, []).append(_i)
#: Exception / restriction markers: a rule with one is a narrower rule than one without.
_EXCEPTION_1 = frozenset({"except", "unless", "excluding", "apart", "only"})
_EXCEPTION_2 = {("only", "when"), ("only", "if"), ("only", "for"), ("other", "than"), ("but", "not"),
                ("only", "in"), ("as", "long"), ("only", "on")}
_FILLER = STOPWORDS | {"always", "should", "must", "please", "make", "sure", "remember", "lesson", "correction",
                       "decided", "decide", "team", "user", "wants", "want", "prefer", "prefers", "preferred",
                       "favor", "instead", "rather", "never", "do", "be", "ever", "every", "all"}


@dataclass
class Analysis:
    """What the judgement needs to know about one statement."""

    text: str
    norm: str
    content: set[str] = field(default_factory=set)        # stemmed content words (antonyms on their base)
    polarity: dict[str, set[int]] = field(default_factory=dict)
    negated: set[str] = field(default_factory=set)        # words inside a negation/contrast scope
    identifiers: set[str] = field(default_factory=set)
    numbers: set[str] = field(default_factory=set)
    classes: dict[int, set[str]] = field(default_factory=dict)
    exception: bool = False
    raw: set[str] = field(default_factory=set)           # unstemmed words
    choice: tuple[str, str] | None = None                 # (chosen, rejected) of a lead "use X, not Y"
    lead: frozenset[str] = frozenset()                    # stemmed content words of the choice's clauses
    sequence: list[str] = field(default_factory=list)    # content words in order, identifiers split
    _pieces: set[str] | None = field(default=None, repr=False)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(_APOS.sub("", _POSS.sub("", fold(text))))


def _clauses(toks: list[str]) -> list[list[str]]:
    out, cur = [], []
    for t in toks:
        if t in _BOUNDARY:
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(t)
    if cur:
        out.append(cur)
    return out


_ADJUNCT = frozenset("""in for on at within when whenever while during across inside under unless except if
    because since so until before after per via where""".split())
_NP_END = _ADJUNCT | {"to", "with", "by", "from", "into", "onto", "and", "or", "it", "is", "are", "was",
                      "should", "must", "will", "can"}


def _clause_signs(clause: list[str], prefer_before: bool = False) -> list[int]:
    """Sign of each token of one clause (+1 asserted, -1 negated/rejected).

    Negation ("never", "don't", "avoid", "dislikes") covers the verb phrase after it up to an
    adjunct ("in integration tests", "for installing", "before pushing") or a new imperative
    ("and use"); a contrast ("instead of", "rather than", "over" after prefer/use, "switch from",
    "moved off") covers the rejected noun phrase only; "X is forbidden / is not allowed" negates
    the clause before the predicate."""
    n = len(clause)
    signs = [1] * n
    i = 0
    while i < n:
        t = clause[i]
        pair = (t, clause[i + 1]) if i + 1 < n else None
        start, stops = None, _ADJUNCT
        if t in NEG_CUES:
            start = i + 1
        elif pair in _CONTRAST_2:
            start, stops = i + 2, _NP_END
            if pair[1] in ("place", "opposed") and i + 2 < n and clause[i + 2] in ("of", "to"):
                start = i + 3
            if pair[0] in ("moved", "move", "moving", "migrated", "migrate", "away"):
                stops = _NP_END - {"from"}
        elif t == "over" and (prefer_before or any(w in _PREFER_VERBS for w in clause[:i])):
            start, stops = i + 1, _NP_END
        elif t == "from" and any(w in _SWITCH_VERBS for w in clause[:i]):
            start, stops = i + 1, _NP_END - {"from"}
        elif t == "off" and any(w in _SWITCH_VERBS for w in clause[:i]):
            start, stops = i + 1, _NP_END          # "moved auth-service off mini-lola"
        if start is None:
            i += 1
            continue
        j = start
        while j < n:
            w = clause[j]
            if j > start and w in stops:
                break
            if w in ("and", "or") and j + 1 < n and clause[j + 1] in _RESTART:
                break
            if j > start and w in _RESTART and stops is _ADJUNCT and w in ("use", "prefer", "instead", "always"):
                break
            signs[j] = -signs[j]
            j += 1
        i = max(j, i + 1)
    # Post-posed negation: "X is forbidden", "X is not allowed" negate what precedes in the clause.
    for k, w in enumerate(clause):
        negated_permission = w in _PERMISSION and signs[k] < 0
        if w in _NEG_PREDICATES or negated_permission:
            for m in range(k):
                if clause[m] not in NEG_CUES:
                    signs[m] = -signs[m]
            break
    return signs


def analyze(text: str) -> Analysis:
    toks = _tokens(text)
    a = Analysis(text=text, norm=normalize_statement(text))
    flat: list[str] = []
    signed: list[tuple[str, int, int]] = []     # (word, sign, clause number) for `_choice`
    prefer_seen = False
    for n_clause, clause in enumerate(_clauses(toks)):
        signs = _clause_signs(clause, prefer_seen)
        prefer_seen = prefer_seen or any(w in _PREFER_VERBS for w in clause)
        for w, sign in zip(clause, signs):
            flat.append(w)
            signed.append((w, sign, n_clause))
            if w in NEG_CUES or w in ("instead", "rather"):
                continue
            base, asign = ANTONYMS.get(w, (None, 1))
            if w == "off" and any(x in _SWITCH_VERBS for x in clause):
                continue   # "moved X off Y": a contrast cue here, not the antonym of "on"
            key = stem(base or w)
            scope_sign = sign
            sign = sign * asign
            if w in _FILLER and base is None and w not in _ANTONYM_BASES:
                continue
            a.content.add(key)
            a.polarity.setdefault(key, set()).add(sign)
            if scope_sign < 0:
                a.negated.add(key)
            a.raw.add(w)
            if is_identifier(w) and not w[0].isdigit():
                a.sequence += [stem(p) for p in re.split(r"[-_./:@+#]+", w) if p]
            else:
                a.sequence.append(key)
            if w.isdigit() or re.fullmatch(r"v?\d+(\.\d+)*[a-z]?", w):
                a.numbers.add(w.lstrip("v"))
            elif is_identifier(w):
                a.identifiers.add(w)
            for cls in _CLASS_OF.get(w, ()):
                a.classes.setdefault(cls, set()).add(w)
    found = _choice(signed)
    if found:
        a.choice, clauses = found
        a.lead = frozenset(stem(w) for w, _, c in signed
                           if c in clauses and w not in _FILLER and w not in NEG_CUES and re.search(r"[a-z0-9]", w))
    for i, w in enumerate(flat):
        if w in _EXCEPTION_1 or (i + 1 < len(flat) and (w, flat[i + 1]) in _EXCEPTION_2):
            a.exception = True
            break
    return a


def _choice(signed: list[tuple[str, int, int]]) -> tuple[tuple[str, str], set[int]] | None:
    """The choice a statement leads with: "(this repo) uses X, not Y", "use X instead of Y",
    "prefer X over Y" -> (stem X, stem Y). The verb must be in the first two clauses, X is the
    first asserted content word after it, Y the first rejected one in X's clause or the next.
    Returns the choice and the clause numbers it spans."""
    for i, (w, sign, cl) in enumerate(signed):
        if cl > 1:
            return None
        if w not in _PREFER_VERBS or sign < 0:
            continue
        chosen = None
        for w2, s2, c2 in signed[i + 1:]:
            if chosen is None:
                if c2 != cl:
                    return None
                if w2 in _FILLER or w2 in NEG_CUES or s2 < 0 or not re.search(r"[a-z]", w2):
                    continue
                chosen = (w2, cl)
                continue
            if c2 > chosen[1] + 1:
                return None
            if s2 < 0 and w2 not in _FILLER and w2 not in NEG_CUES and re.search(r"[a-z]", w2) and w2 != chosen[0]:
                return (stem(chosen[0]), stem(w2)), set(range(cl, c2 + 1))
        return None
    return None


@dataclass(frozen=True)
class Judgement:
    decision: Decision
    reason: str
    similarity: float
    by_model: bool = False


@dataclass(frozen=True)
class Thresholds:
    """Cut-offs per embedder kind. `same_cos` with `same_overlap`: embedding and words agree;
    `near_exact`: word overlap alone (always applies, whatever the embedding says)."""

    same_cos: float
    same_overlap: float
    strong_cos: float          # alone enough (with some overlap) when nothing else objects
    strong_overlap: float
    topic_cos: float           # same topic (for opposites)
    topic_overlap: float
    ambiguous_cos: float       # below this (and below same_overlap) clearly different
    near_exact: float = 0.85
    anchored_overlap: float = 0.6   # enough when both name exactly the same identifiers


THRESHOLDS = {
    "model2vec": Thresholds(same_cos=0.84, same_overlap=0.45, strong_cos=0.93, strong_overlap=0.25,
                            topic_cos=0.80, topic_overlap=0.5, ambiguous_cos=0.78),
    "lexical": Thresholds(same_cos=0.62, same_overlap=0.5, strong_cos=0.80, strong_overlap=0.5,
                          topic_cos=0.6, topic_overlap=0.5, ambiguous_cos=0.5),
}


def _overlap(a: Analysis, b: Analysis) -> float:
    """Dice coefficient of stemmed content words."""
    if not a.content or not b.content:
        return 0.0
    return 2 * len(a.content & b.content) / (len(a.content) + len(b.content))


def _containment(a: Analysis, b: Analysis) -> float:
    if not a.content or not b.content:
        return 0.0
    return len(a.content & b.content) / min(len(a.content), len(b.content))


def _pieces(word: str) -> list[str]:
    return [stem(p) for p in re.split(r"[-_./:@+#]+", word) if p]


def _all_pieces(a: Analysis) -> set[str]:
    if a._pieces is None:
        a._pieces = a.content | {p for w in a.raw if is_identifier(w) for p in _pieces(w)}
    return a._pieces


def _covered(word: str, other: Analysis) -> bool:
    """An identifier of one side that the other side also names (whole, or by its pieces:
    "squash-merge" / "squash-merged", "auth-service" / "auth service")."""
    if word in other.raw:
        return True
    pieces = _pieces(word)
    if not pieces:
        return False
    theirs = _all_pieces(other)
    return all(p in theirs for p in pieces)


def substitution(a: Analysis, b: Analysis) -> str | None:
    """A reason string when each side names something the other does not, of the same kind."""
    if a.numbers - b.numbers and b.numbers - a.numbers:
        return "different numbers"
    ia = {w for w in a.identifiers if not _covered(w, b)}
    ib = {w for w in b.identifiers if not _covered(w, a)}
    if ia and ib:
        return "different identifiers"
    for cls, va in a.classes.items():
        vb = b.classes.get(cls)
        if vb and (va - vb) and (vb - va) and not (va & vb):
            return "different values"
    return slot_substitution(a, b)


#: Predicates that paraphrases swap freely ("lives in" / "is stored in"), and permission words:
#: a slot filled by these is not a different point.
_LIGHT = frozenset(stem(w) for w in """live lives living stored store kept keep managed manage located locate
    reside sit sits go goes put hold holds contain contains handle handled done happen happens
    fine ok okay allowed permitted acceptable required needed necessary""".split())


def slot_substitution(a: Analysis, b: Analysis) -> str | None:
    """Same sentence with one slot filled differently ("enable the query cache in the reporting
    service" / "... in the search service"): the content words align in order, all equal except
    one replaced run of at most three words on each side."""
    runs = _one_replaced_run(a, b)
    if runs is None or len(runs[0]) > 3 or len(runs[1]) > 3:
        return None
    left, right = set(runs[0]), set(runs[1])
    if left & right or left <= _LIGHT or right <= _LIGHT:
        return None
    return "one slot differs: " + " ".join(runs[0]) + " / " + " ".join(runs[1])


def _one_replaced_run(a: Analysis, b: Analysis) -> tuple[list[str], list[str]] | None:
    """(a's run, b's run) when the content words of both (3 or more each) align in order, all equal
    but one replaced run; else None."""
    from difflib import SequenceMatcher

    if len(a.sequence) < 3 or len(b.sequence) < 3:
        return None
    ops = [op for op in SequenceMatcher(None, a.sequence, b.sequence, autojunk=False).get_opcodes()
           if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = ops[0]
    return a.sequence[i1:i2], b.sequence[j1:j2]


#: Words of a sentence that states a current setting or state ("runs", "listens on", "has", "port").
_STATE_WORDS = frozenset("""is are runs run uses use listens listen has have set pinned requires require needs
    need targets target defaults default keeps keep retries retry version versions port ports timeout limit
    size replicas""".split())
_NUMBER = re.compile(r"v?\d[\d.]*[a-z]{0,3}")


def value_update(a: Analysis, b: Analysis) -> str | None:
    """The same sentence about a state with only its number changed ("The staging database runs
    PostgreSQL 15." / "... 16.", "billing-api listens on port 8080." / "... 9090."): the later one
    updates the earlier. A reason string, or None. Sentences about an event ("ran a 5K" / "ran a
    10K") name no state word and are not updates."""
    if not (a.numbers - b.numbers and b.numbers - a.numbers):
        return None
    runs = _one_replaced_run(a, b)
    if runs is None:
        return None
    left, right = runs
    if len(left) > 2 or len(right) > 2 or not all(_NUMBER.fullmatch(t) for t in left + right):
        return None
    if not (_STATE_WORDS & set(_tokens(a.text)) & set(_tokens(b.text))):
        return None
    return "value updated: " + " ".join(left) + " / " + " ".join(right)


def polarity_conflicts(a: Analysis, b: Analysis) -> set[str]:
    """Shared content words asserted on one side and negated on the other."""
    out = set()
    for w in a.content & b.content:
        pa, pb = a.polarity.get(w, set()), b.polarity.get(w, set())
        if pa and pb and not (pa & pb):
            out.add(w)
    return out


def judge_pair(a: str | Analysis, b: str | Analysis, cosine: float | None, *, kind: str = "model2vec",
               judge: Judge | None = None) -> Judgement:
    """Same point, opposite point or different? `cosine`: the embedder's similarity of the two
    texts (None: use word overlap). `kind` picks the thresholds; `judge` (a model backend) is asked
    only for ambiguous pairs."""
    a = a if isinstance(a, Analysis) else analyze(a)
    b = b if isinstance(b, Analysis) else analyze(b)
    th = THRESHOLDS.get(kind, THRESHOLDS["lexical"])
    overlap = _overlap(a, b)
    cos = overlap if cosine is None else float(cosine)
    if a.norm == b.norm:
        return Judgement("same", "same text", 1.0)
    if a.choice and a.choice == b.choice and a.exception == b.exception and not polarity_conflicts(a, b) \
            and (a.lead <= b.lead or b.lead <= a.lead or not (a.lead - b.lead and b.lead - a.lead)):
        # Both lead with the same choice ("uses pnpm, not npm" / "use pnpm instead of npm"), and
        # the clauses stating it do not each add a different scope ("... in Makefiles" / "... in
        # Python"): the same point, whatever reasons or details each adds after it.
        return Judgement("same", "same choice: " + " over ".join(a.choice), cos)
    update = value_update(a, b)
    if update and not polarity_conflicts(a, b):
        # One setting with its value changed ("runs PostgreSQL 15" / "16"), or two true values of a
        # setting that has several ("CI runs on Node 18" / "20", a test matrix): words cannot tell.
        # A model judge decides ("opposite": the later replaces the earlier by date); without one
        # both are kept and recall shows each with its date.
        return _ask(judge, a, b, cos, "different", update)
    sub = substitution(a, b)
    if sub:
        return Judgement("different", sub, cos)
    conflicts = polarity_conflicts(a, b)
    containment = _containment(a, b)
    on_topic = (cos >= th.topic_cos or containment >= 0.75) and (overlap >= th.topic_overlap or containment >= 0.7)
    if conflicts:
        agree = a.negated & b.negated
        if agree and len(agree) > len(conflicts):
            pass  # both negate the same things; the disagreement is scope noise
        elif agree:
            # both negate something and disagree on something else: word signs cannot tell
            return _ask(judge, a, b, cos, "different", "mixed polarity")
        elif on_topic:
            return Judgement("opposite", "polarity: " + ",".join(sorted(conflicts)), cos)
        else:
            return _ask(judge, a, b, cos, "different", "polarity conflict off topic")
    if a.exception != b.exception:
        return _ask(judge, a, b, cos, "different", "exception on one side")
    if overlap >= th.near_exact:
        return Judgement("same", "near-exact text", cos)
    if cos >= th.same_cos and overlap >= th.same_overlap:
        return Judgement("same", "similar", cos)
    if cos >= th.strong_cos and overlap >= th.strong_overlap:
        return Judgement("same", "very similar", cos)
    anchors = a.identifiers | b.identifiers
    if anchors and all(_covered(w, b) for w in a.identifiers) and all(_covered(w, a) for w in b.identifiers) \
            and overlap >= th.anchored_overlap and cos >= th.ambiguous_cos:
        return Judgement("same", "same named things, similar", cos)
    if cos >= th.ambiguous_cos or overlap >= th.same_overlap:
        return _ask(judge, a, b, cos, "different", "ambiguous similarity")
    return Judgement("different", "dissimilar", cos)


def _ask(judge: Judge | None, a: Analysis, b: Analysis, cos: float, default: Decision, reason: str) -> Judgement:
    if judge is not None:
        try:
            answer = judge(a.text, b.text)
        except Exception:  # a model failure never breaks a merge: fall back to the default
            answer = None
        if answer in ("same", "opposite", "different"):
            return Judgement(answer, f"model ({reason})", cos, by_model=True)
    return Judgement(default, reason, cos)
