"""Offline passage classifier: is this passage worth remembering, as what, how strongly.

For each passage: `keep` probability, category (decision, fact, preference, pattern, lesson,
correction, none), importance 0-4, whether a user turn corrects the agent's previous reply, and a
confidence from the strength of the signal (the issue's scale):

* 1.0  explicit rules: "always", "never", "from now on", "remember that/to", "don't ever";
* 0.9  "prefer", "use X instead of Y", "don't/stop doing X", a user's explicit decision
       ("we decided", "let's go with"), and corrections of the agent's previous reply;
* 0.7  success without feedback: the agent reports something fixed/working and the lesson in it;
* 0.5  inference: anything else kept (facts and patterns read off ordinary text).

The probability is built from cue phrases (each a weight, combined as 1 - prod(1 - w)), named
things (entity patterns), and chatter markers that pull it down. No network, no model: the same
text always gives the same judgement. Thresholds live in settings (`consolidate.keep_threshold`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .passages import Passage

CATEGORY_NONE = "none"

# --------------------------------------------------------------------------------------------
# Named things (shared with the offline writer).

_COMMON_HYPHENATED = {
    "follow-up", "built-in", "e-mail", "re-run", "long-term", "short-term", "one-off", "up-to-date",
    "real-time", "read-only", "well-known", "third-party", "so-called", "step-by-step", "end-to-end",
    "opt-in", "opt-out", "check-in", "sign-in", "log-in", "set-up", "co-worker", "x-ray", "full-time",
    "part-time", "high-level", "low-level", "non-empty", "re-use", "pre-commit", "self-hosted",
    "open-source", "user-facing", "right-click", "drag-and-drop", "out-of-the-box", "in-memory",
    "on-call", "day-to-day", "year-old", "first-time", "last-minute", "mid-day", "half-way",
    "case-insensitive", "case-sensitive", "thread-safe", "human-readable", "machine-readable",
    "back-end", "front-end", "well-being", "t-shirt", "old-fashioned", "brand-new", "so-so",
}
_HYPHEN_PREFIXES = ("re-", "pre-", "non-", "co-", "self-", "multi-", "well-", "anti-", "sub-", "un-",
                    "over-", "under-", "semi-", "post-", "ex-", "mid-", "all-", "twenty-", "thirty-",
                    "forty-", "fifty-", "sixty-", "seventy-", "eighty-", "ninety-")

BACKTICK_RE = re.compile(r"`([^`\n]{2,80})`")
URL_BUCKET_RE = re.compile(r"\b(?:s3|gs|az|r2)://([a-z0-9][a-z0-9.\-_]{1,62})", re.I)
REPO_RE = re.compile(r"(?:github\.com|gitlab\.com|bitbucket\.org)[/:]([A-Za-z0-9_.\-]+/[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*?)(?:\.git)?(?![\w\-/])")
PATH_RE = re.compile(r"(?<![\w/:.])((?:~|\.{1,2})?/(?:[\w.\-]+/)*[\w.\-]+|(?:[\w\-]+/)+[\w\-]+\.[A-Za-z0-9]{1,6})(?![\w/])")
HOST_RE = re.compile(r"\b((?:[a-z0-9](?:[a-z0-9\-]{0,61}[a-z0-9])?\.)+(?:com|net|org|io|dev|app|cloud|internal|local|lan|corp|ai|co|sh|xyz|svc|cluster\.local))\b", re.I)
IP_RE = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{2,5})?\b")
HYPHEN_RE = re.compile(r"(?<![\w\-./])([a-z][a-z0-9]*(?:-[a-z0-9]+)+)(?![\w\-]|\.\w)")
PROPER_RE = re.compile(r"(?<=[a-z,;:] )([A-Z][a-zA-Z0-9]+(?:[ \-][A-Z][a-zA-Z0-9]+){0,2})\b")
CAMEL_RE = re.compile(r"\b([A-Z][a-z0-9]+[A-Z][A-Za-z0-9]+|[a-z]+[A-Z][A-Za-z0-9]+)\b")
NUMBER_RE = re.compile(r"\b\d+(?:[.:]\d+)*\s*(?:%|ms|s|gb|mb|kb|k|px|am|pm|h|min)?\b", re.I)

_PROPER_STOP = {
    "I", "I'm", "I've", "I'll", "I'd", "The", "This", "That", "These", "Those", "It", "We", "You",
    "He", "She", "They", "My", "Our", "Your", "His", "Her", "Their", "Yes", "No", "Ok", "Okay", "OK",
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "Also", "But",
    "And", "Or", "So", "If", "When", "Then", "Now", "Here", "There", "What", "Why", "How", "Thanks",
    "Great", "Sure", "Wow", "Hey", "Hi", "Hello", "Let", "Please", "Note", "Done", "Next", "First",
}

#: Well-known tools and products recognised without capitals or punctuation.
KNOWN_TOOLS = {
    "postgres": "product", "postgresql": "product", "mysql": "product", "sqlite": "library",
    "redis": "product", "kafka": "product", "rabbitmq": "product", "docker": "tool",
    "kubernetes": "product", "k8s": "product", "terraform": "tool", "ansible": "tool", "nginx": "product",
    "npm": "tool", "pnpm": "tool", "yarn": "tool", "pip": "tool", "uv": "tool", "poetry": "tool",
    "pytest": "tool", "jest": "tool", "vitest": "tool", "git": "tool", "github": "product",
    "gitlab": "product", "aws": "organization", "gcp": "product", "azure": "product", "s3": "product",
    "django": "library", "flask": "library", "fastapi": "library", "react": "library", "vue": "library",
    "node": "tool", "python": "tool", "rust": "tool", "go": "tool", "typescript": "tool", "elixir": "tool",
    "phoenix": "library", "celery": "library", "sqlalchemy": "library", "pydantic": "library",
    "systemd": "tool", "cron": "tool", "launchd": "tool", "make": "tool", "bazel": "tool",
    "webpack": "tool", "vite": "tool", "eslint": "tool", "ruff": "tool", "mypy": "tool", "black": "tool",
    "claude": "product", "anthropic": "organization", "openai": "organization", "sentry": "product",
    "datadog": "product", "grafana": "product", "prometheus": "product", "elasticsearch": "product",
    "mongodb": "product", "dynamodb": "product", "cloudflare": "organization", "vercel": "product",
    "heroku": "product", "jenkins": "tool", "circleci": "product", "tailwind": "library",
}
_KNOWN_RE = re.compile(r"\b(" + "|".join(sorted(map(re.escape, KNOWN_TOOLS), key=len, reverse=True)) + r")\b", re.I)


@dataclass(frozen=True)
class Named:
    name: str
    type: str
    start: int


def _good_hyphenated(word: str) -> bool:
    w = word.lower()
    if w in _COMMON_HYPHENATED or w.startswith(_HYPHEN_PREFIXES):
        return False
    parts = w.split("-")
    return len(w) >= 4 and any(len(p) >= 2 and p.isalpha() for p in parts) and not all(p.isdigit() for p in parts)


def _hyphen_type(word: str) -> str:
    w = word.lower()
    if re.search(r"-(service|svc|api|worker|server|daemon|gateway|proxy|queue|job|app|web|backend|frontend)$", w):
        return "service"
    if re.search(r"(^|-)(host|node|box|vm|prod|staging|dev|db|k8s|cluster|mini|macbook)\d*($|-)", w) or re.search(r"\d$", w):
        return "host"
    return "service"


def named_things(text: str, known: dict[str, str] | None = None) -> list[Named]:
    """Named things in `text`, by pattern, in order of appearance, deduplicated case-insensitively.

    Patterns: backticked identifiers, buckets (s3://...), repos (github.com/owner/name), paths,
    host names and IPs, hyphenated service names, CamelCase identifiers, well-known tools, capitalised
    names inside a sentence, and `known` names (lower-cased name -> type) from the agent's graph.
    """
    found: list[Named] = []
    taken: list[tuple[int, int]] = []

    def add(name: str, typ: str, start: int, end: int) -> None:
        name = name.strip().strip(".,;:'\"()[]")
        if len(name) < 2 or any(s < end and start < e for s, e in taken):
            return
        taken.append((start, end))
        found.append(Named(name, typ, start))

    for m in BACKTICK_RE.finditer(text):
        ident = m.group(1).strip()
        if " " in ident and not ident.endswith(")"):
            if len(ident.split()) > 3:
                continue
            typ = "tool"
        elif "/" in ident or re.search(r"\.[A-Za-z0-9]{1,6}$", ident):
            typ = "file"
        elif ident.endswith(")") or re.fullmatch(r"[a-z_][a-z0-9_]*", ident):
            typ = "function"
        else:
            typ = "other"
        add(ident, typ, m.start(), m.end())
    for m in URL_BUCKET_RE.finditer(text):
        add(m.group(1), "other", m.start(), m.end())
    for m in REPO_RE.finditer(text):
        add(m.group(1), "repo", m.start(), m.end())
    for m in IP_RE.finditer(text):
        add(m.group(0), "host", m.start(), m.end())
    for m in HOST_RE.finditer(text):
        add(m.group(1), "host", m.start(), m.end())
    for m in PATH_RE.finditer(text):
        p = m.group(1)
        if p.count("/") >= 1 and not p.startswith("//") and not re.fullmatch(r"\d+/\d+", p) and len(p) > 3:
            if re.fullmatch(r"[A-Za-z]+/[A-Za-z]+", p):
                continue  # "and/or", "client/server"
            add(p, "file", m.start(), m.end())
    if known:
        low = text.lower()
        for name, typ in known.items():
            if len(name) < 3:
                continue
            for m in re.finditer(r"(?<![\w\-])" + re.escape(name) + r"(?![\w\-])", low):
                add(text[m.start():m.end()], typ, m.start(), m.end())
    for m in HYPHEN_RE.finditer(text):
        if _good_hyphenated(m.group(1)):
            add(m.group(1), _hyphen_type(m.group(1)), m.start(), m.end())
    for m in _KNOWN_RE.finditer(text):
        w = m.group(1)
        if w.lower() == "go" and not re.search(r"\bGo\b", w):
            continue
        if w.lower() in ("make", "black", "node", "react") and w.islower():
            continue
        add(w, KNOWN_TOOLS[w.lower()], m.start(), m.end())
    for m in CAMEL_RE.finditer(text):
        add(m.group(1), "other", m.start(), m.end())
    for m in PROPER_RE.finditer(text):
        name = m.group(1)
        if name.split()[0] in _PROPER_STOP:
            continue
        add(name, "other", m.start(), m.end())
    found.sort(key=lambda n: n.start)
    seen: set[str] = set()
    out = []
    for n in found:
        k = n.name.lower()
        if k not in seen:
            seen.add(k)
            out.append(n)
    return out


# --------------------------------------------------------------------------------------------
# Cues.

@dataclass(frozen=True)
class Cue:
    name: str
    pattern: re.Pattern
    weight: float
    category: str
    strength: float          # confidence this cue supports (1.0 / 0.9 / 0.7 / 0.5)


def _c(name: str, rx: str, weight: float, category: str, strength: float) -> Cue:
    return Cue(name, re.compile(rx, re.I), weight, category, strength)


CUES: tuple[Cue, ...] = (
    _c("always", r"\balways\b", 0.45, "preference", 1.0),
    _c("never", r"\bnever\b", 0.45, "preference", 1.0),
    _c("from_now_on", r"\bfrom now on\b|\bgoing forward\b|\bin the future\b", 0.5, "preference", 1.0),
    _c("remember_that", r"\bremember (that|to|this)\b|\bkeep in mind\b|\bdon'?t ever\b|\bdo not ever\b", 0.5, "preference", 1.0),
    _c("prefer", r"\bprefer(s|red|ence)?\b|\bI'?d rather\b|\bI like (to|it when)\b", 0.4, "preference", 0.9),
    _c("instead_of", r"\binstead of\b|\brather than\b|\bnot \w+,? but\b", 0.35, "decision", 0.9),
    _c("dont_do", r"\b(don'?t|do not|stop|quit|avoid|no more)\s+(use|using|doing|run|running|call|calling|add|adding|"
                  r"put|putting|write|writing|commit|committing|push|pushing|touch|modify|change|changing|"
                  r"mock|mocking|create|creating|rely|relying|import|importing|install|installing|edit|editing)\b", 0.4, "preference", 0.9),
    _c("decided", r"\b(we|I|team) (have |'ve )?(decided|agreed|chose|settled)\b|\bdecided to\b|\bthe decision\b|"
                  r"\blet'?s (go with|use|stick with|keep)\b|\bwe('ll| will) (go with|use|stick with)\b|\bgoing with\b|\bwe use\b|\bwe'?re using\b", 0.4, "decision", 0.9),
    _c("because", r"\bbecause\b|\bso that\b|\bdue to\b|\bthe reason\b|\bsince (it|the|we|this)\b", 0.15, "", 0.5),
    _c("lesson", r"\blesson\b|\broot cause\b|\bthe (problem|issue|bug|culprit) (was|is)\b|\bturn(s|ed) out\b|"
                 r"\bcaused by\b|\bthe fix (was|is)\b|\bgotcha\b|\bpitfall\b|\bwatch out\b|\bbe careful\b|\bnote to self\b|"
                 r"\blearned\b|\bworkaround\b|\bthe trick (is|was)\b|\bonly works (if|when)\b|\bmake sure\b", 0.4, "lesson", 0.5),
    _c("no_longer", r"\bno longer\b|\bnot anymore\b|\bretired\b|\bdeprecated\b|\bdecommissioned\b|\bmoved \S+(?: \S+)? off\b|"
                    r"\bmigrated\b|\breplaced\b|\bswitched (from|to)\b|\bnow (runs|lives|uses)\b", 0.35, "fact", 0.5),
    _c("pattern", r"\bwhenever\b|\bevery time\b|\beach time\b|\bconvention\b|\bas a rule\b|\bby default\b|"
                  r"\bwe usually\b|\btypically\b|\bthe pattern\b|\bworkflow\b", 0.3, "pattern", 0.5),
    _c("fact_verb", r"\b(runs|is running|is hosted|lives|is deployed|deploys|is stored|stores|depends|reads|writes|"
                    r"talks|connects|listens|points|is configured|is located|belongs)\s+(on|in|to|at|from)\b|"
                    r"\bdepends on\b|\bis part of\b|\bowned by\b|\bowns\b|\brequires\b|\bport \d+\b|\bversion \d", 0.3, "fact", 0.5),
    _c("personal", r"\b(?:I|we)(?:'m|'ve|'re|\s+(?:am|are|was|were|have|had|got|went|started|moved|live|work|joined|bought|"
                   r"adopted|visited|volunteer(ed)?|love|hate|made|painted|finished|signed|took|met|lost|ran|"
                   r"just|recently|used to|currently|also|finally))\b|\bmy (\w+ )?(wife|husband|partner|kids?|son|daughter|"
                   r"mom|mother|dad|father|family|friends?|sister|brother|dog|cat|pets?|job|boss|team|house|"
                   r"home|car|birthday|name)\b", 0.25, "fact", 0.5),
    _c("first_person_event", r"\b(?:I|we|my \w+|our \w+)(?:'ve|'d|'m|'ll)?\s+(?:\w+\s+)?(?:\w{3,}ed|\w{3,}ing|went|got|had|made|took|saw|met|found|"
                             r"bought|began|held|won|lost|ran|wrote|read|gave|left|came|felt|told|built|sold|kept|"
                             r"taught|caught|flew|drove|became|chose|ate|drank|grew|spent|tried|did|do|play|love|"
                             r"have|own|teach|work|live|volunteer|paint|write|run|collect|study)\b", 0.2, "fact", 0.5),
    _c("time_ref", r"\b(yesterday|last (week|month|year|night|weekend|summer|friday|time)|next (week|month|year)|"
                   r"tomorrow|this (morning|weekend|week|month|year)|ago|in (19|20)\d\d|since (19|20)\d\d)\b", 0.2, "fact", 0.5),
)

SUCCESS_RE = re.compile(r"\b(fixed|works now|now works|resolved|passes now|all tests pass|tests pass|succeeded|"
                        r"is working|solved)\b", re.I)
CHATTER_START = re.compile(
    r"^\s*(let me|let's see|i'?ll|i will|now let me|now i|i'?m going to|i need to|first,? let|next,? let|"
    r"great|perfect|excellent|awesome|done|ok(ay)?\b|thanks|thank you|thx|sounds good|looks good|lgtm|"
    r"sure|got it|yes|yep|yeah|no problem|nice|cool|wow|haha|lol|hmm|good (job|work|catch|morning|night)|"
    r"hey|hi\b|hello|bye|see you|take care|congrats|congratulations|here'?s|here is|i can see|i see|"
    r"i found|i've (updated|added|made|created|changed|fixed|removed)|i have (updated|added|made|created)|"
    r"now,? |the (file|test|build|command) (has been|was) |running|checking|looking)", re.I)
CHATTER_ANY = re.compile(r"\b(let me know|hope (this|that) helps|feel free|anything else|good luck|"
                         r"sounds (great|awesome|fun|amazing)|that'?s (great|awesome|amazing|cool|so \w+)|"
                         r"can'?t wait|so (happy|glad|proud) for you)\b", re.I)
CORRECTION_RE = re.compile(
    r"^\s*(?:no[,.!]|(?:nope|wrong|that'?s (not|wrong|incorrect)|that is (not|wrong|incorrect)|not quite|incorrect|"
    r"actually[,]? (it|the|we|you|that|no)|you (should(n'?t)?|did(n'?t)?|forgot|missed|broke|used the wrong)|"
    r"i (said|told you|asked)|why did you|please don'?t|don'?t|stop|instead|undo|revert)\b)", re.I)
QUESTION_RE = re.compile(r"\?\s*$")


@dataclass
class Judgement:
    """What the classifier says about one passage."""

    keep: float                          # probability the passage holds something worth remembering
    category: str                        # a graph.model.CATEGORIES value, or "none"
    importance: int                      # 0-4
    correction: bool                     # a user turn correcting the agent's previous reply
    confidence: float                    # 1.0 / 0.9 / 0.7 / 0.5 by signal strength
    cues: list[str] = field(default_factory=list)
    named: list[Named] = field(default_factory=list)


KIND_PRIOR = {"user": 0.2, "assistant": 0.05, "summary": 0.0}


def classify(passage: Passage, *, known: dict[str, str] | None = None) -> Judgement:
    """Judge one passage (deterministic). `known`: lower-cased entity names of the agent's graph."""
    text = passage.text
    cues = [c for c in CUES if c.pattern.search(text)]
    named = named_things(text, known)
    words = len(text.split())
    user = passage.kind == "user"

    correction = bool(user and passage.previous_reply and CORRECTION_RE.search(text) and words >= 3)
    # "never"/"always" in an assistant's narration ("I never got output") is not a rule.
    if not user:
        cues = [c for c in cues if c.name not in ("always", "never", "from_now_on") or
                re.search(r"\b(always|never)\s+(use|run|call|commit|push|do|put|add|set|keep|write|check|make)\b", text, re.I)]
        cues = [c for c in cues if c.name not in ("personal", "first_person_event")]

    pos = [KIND_PRIOR.get(passage.kind, 0.1)] + [c.weight for c in cues]
    if correction:
        pos.append(0.5)
    if named:
        pos.append(min(0.3, 0.1 * len(named)))
    if NUMBER_RE.search(text) and (named or cues):
        pos.append(0.1)
    if words >= 12:
        pos.append(0.1)
    if words >= 25:
        pos.append(0.1)
    prod = 1.0
    for w in pos:
        prod *= 1.0 - w
    p = 1.0 - prod

    neg = 0.0
    substantive = [c for c in cues if c.name not in ("time_ref",)] or (named and words >= 12)
    if CHATTER_START.search(text):
        neg += 0.25 if (words < 15 or not substantive) else 0.05
    if CHATTER_ANY.search(text):
        neg += 0.15 if (words < 15 or not substantive) else 0.05
    if QUESTION_RE.search(text) and not correction:
        neg += 0.2
    if words < 4 and not correction:
        neg += 0.3
    if passage.kind == "summary":
        neg += 0.1
    strong = any(c.strength >= 0.9 for c in cues) or correction
    if strong:
        neg *= 0.4
    p = max(0.0, min(1.0, p - neg))

    # Category: correction first, then the strongest cue's category.
    category = CATEGORY_NONE
    if correction:
        category = "correction"
    else:
        ranked = sorted((c for c in cues if c.category), key=lambda c: (-c.strength, -c.weight))
        if ranked:
            category = ranked[0].category
            if category == "preference" and not user:
                category = "pattern" if ranked[0].name in ("always", "never") else "lesson"
            if category == "lesson" and any(c.name == "decided" for c in cues) and user:
                category = "decision"
        elif named and words >= 6:
            category = "fact"

    # Confidence by signal strength.
    if correction:
        confidence = 0.9
    elif any(c.strength >= 1.0 for c in cues) and user:
        confidence = 1.0
    elif any(c.strength >= 0.9 for c in cues) and user:
        confidence = 0.9
    elif passage.kind == "assistant" and SUCCESS_RE.search(text):
        confidence = 0.7
    else:
        confidence = 0.5

    if category == CATEGORY_NONE:
        importance = 0
    elif correction or confidence >= 1.0:
        importance = 4
    elif category in ("decision", "lesson", "preference"):
        importance = 3
    else:
        importance = 2
    if category != CATEGORY_NONE and p < 0.6 and confidence <= 0.5:
        importance = max(1, importance - 1)
    return Judgement(keep=round(p, 4), category=category, importance=importance, correction=correction,
                     confidence=confidence, cues=[c.name for c in cues] + (["correction"] if correction else []),
                     named=named)
