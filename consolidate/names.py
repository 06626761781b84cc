"""Named things in text: the services, hosts, buckets, repos, paths, tools and proper names a
passage mentions, by pattern (`named_things`). Shared by the classifier and the offline writer.

No network, no model: regular expressions and set lookups only, linear in the text; the same text
always gives the same names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
                    "forty-", "fifty-", "sixty-", "seventy-", "eighty-", "ninety-",
                    # numerals and common adjectives open compound adjectives ("two-step upload",
                    # "long-running worker"), not names
                    "one-", "two-", "three-", "four-", "five-", "six-", "seven-", "eight-", "nine-", "ten-",
                    "single-", "double-", "long-", "short-", "high-", "low-", "full-", "half-", "hard-",
                    "soft-", "fast-", "slow-")

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

PROPER_STOP = {
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


#: Words that make a hyphenated name a piece of infrastructure, as its last part or the word after it.
_INFRA_WORDS = frozenset("""service services svc api apis worker workers server servers daemon gateway proxy queue
    job jobs app web backend frontend host hosts node nodes box vm cluster db database bucket table topic repo
    repository namespace instance client lib sdk cli bot pipeline stack cron lambda function cache store
    consumer producer scheduler router exporter controller manager runner broker builder indexer crawler poller
    listener handler loader parser checker watcher logger tracker scanner uploader container""".split())
_COMPOUND_PARTICLES = frozenset("""out up down in off over back on away like free friendly based related oriented
    made style fashioned minded hearted looking filled packed""".split())


def english_compound(word: str, following: str = "") -> bool:
    """A hyphenated lowercase word that reads as an English compound adjective or noun ("chilled-out",
    "heart-warming", "mood-booster", "eye-opening"), not a name: 2-3 alphabetic parts, no digits, no
    capitals, the last part a particle or an -ing/-ed/-er/-ful/-ly/-ous/-ive/-able word (an -er part
    naming a piece of software, "kafka-consumer", excepted), or the first an -ed/-ing word; never when
    an infrastructure word ends it ("auth-service"), nor when one follows it and it does not end in
    -ed/-ly/-ful/-ous/-ive/-able ("acme-invoices bucket", "order-processing service"; but the
    "content-addressed store" is a compound)."""
    parts = word.split("-")
    if not (2 <= len(parts) <= 3) or not all(p.isalpha() and p.islower() for p in parts):
        return False
    last, first = parts[-1], parts[0]
    if last in _INFRA_WORDS:
        return False
    if following.lower() in _INFRA_WORDS and not re.search(r"(?:ed|ly|ful|ous|ive|able|ible)$", last):
        return False   # "order-processing service" may be its name; "content-addressed store" is not
    return (last in _COMPOUND_PARTICLES or bool(re.search(r"(?:ing|ed|er|ful|ly|ous|ive|able|ible)$", last))
            or bool(re.search(r"(?:ed|ing)$", first)) and len(first) > 4)


def _good_hyphenated(word: str, following: str = "") -> bool:
    w = word.lower()
    if w in _COMMON_HYPHENATED or w.startswith(_HYPHEN_PREFIXES):
        return False
    if word == w and english_compound(w, following):
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
        name = name.strip().strip(".,;:'\"()[]").strip()   # `(  )` leaves only spaces: no name
        if len(name) < 2 or any(s < end and start < e for s, e in taken):
            return
        taken.append((start, end))
        found.append(Named(name, typ, start))

    for m in BACKTICK_RE.finditer(text):
        ident = m.group(1).strip()
        if re.search(r"[{}\[\],;=<>|&]", ident) or (re.search(r"[()]", ident)
                                                     and not re.fullmatch(r"[\w.:]+\(.*\)", ident)):
            continue   # a code fragment ("{:shared, self()}", "x = 1"), not a name
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
        nxt = re.match(r"[`'\"]?\s*([A-Za-z]+)", text[m.end():])
        if _good_hyphenated(m.group(1), nxt.group(1) if nxt else ""):
            add(m.group(1), _hyphen_type(m.group(1)), m.start(), m.end())
    for m in _KNOWN_RE.finditer(text):
        w = m.group(1)
        if w.lower() == "go" and not re.search(r"\bGo\b", w):
            continue
        if w.lower() in ("make", "black", "node", "react") and w.islower():
            continue
        if w.lower() in ("make", "go") and re.search(r"(?:^|[.!?:;]\s+|\n\s*)$", text[:m.start()]):
            continue   # "Make sure ...", "Go ahead ...": a verb opening a sentence
        add(w, KNOWN_TOOLS[w.lower()], m.start(), m.end())
    for m in CAMEL_RE.finditer(text):
        add(m.group(1), "other", m.start(), m.end())
    for m in PROPER_RE.finditer(text):
        name = m.group(1)
        if name.split()[0] in PROPER_STOP:
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
