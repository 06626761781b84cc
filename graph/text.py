"""Text normalization shared by dedupe, entity resolution and the lexical embedder. Stdlib only.

Invariants: every function here is pure and deterministic (same input, same output, on every
machine), because its results are stored (`cards.norm`, `entities.norm`) and hashed (`forgotten`).
Changing what `normalize_statement` returns changes stored keys: do it only with a migration that
recomputes `cards.norm`.
"""

from __future__ import annotations

import re
import unicodedata

# A word: letters/digits, with inner joiners kept so identifiers stay one token
# ("mini-lola", "node.js", "pyproject.toml", "src/app.py", "c++", "v1.2").
_WORD = re.compile(r"[a-z0-9][a-z0-9_./\-+#@:]*[a-z0-9+#]|[a-z0-9]")
_POSS = re.compile(r"'s\b")                     # "mini-lola's" -> "mini-lola"
_APOS = re.compile(r"(?<=[a-z])'(?=[a-z])")   # "don't" -> "dont", "user's" -> "users"
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "`": " ", "\u2014": " - ", "\u2013": " - "})

#: Function words: ignored for content overlap (but kept in `norm`, which is about exact text).
STOPWORDS = frozenset(
    """a an the this that these those it its it's is are was were be been being am do does did
    of to in on at by for from with as into onto about than then so such there here we our us you your
    they them their he she his her i me my and or if when while which who whom whose what where how
    will would shall should can could may might must has have had having also just only very really
    all any each every some more most other own same both few many much new now up out per via
    get gets got make makes made let lets use uses used using need needs needed one""".split()
)

#: Words that negate what follows them in a clause (see `graph.dedupe` for the scope rules).
NEGATIONS = frozenset(
    """not never no nor cannot avoid avoids avoided avoiding without stop stops stopped quit
    dont doesnt didnt isnt arent wasnt werent wont wouldnt cant couldnt shouldnt mustnt
    havent hasnt hadnt neednt""".split()
)


def fold(text: str) -> str:
    """NFKC, lowercase, typographic quotes/dashes made plain, backticks dropped."""
    return unicodedata.normalize("NFKC", text or "").translate(_QUOTES).lower()


def words(text: str) -> list[str]:
    """Word tokens of `text` after `fold` (identifiers kept whole, trailing dots dropped)."""
    out = []
    for w in _WORD.findall(_APOS.sub("", _POSS.sub("", fold(text)))):
        out.append(w.rstrip(".:"))
    return [w for w in out if w]


def normalize_statement(text: str) -> str:
    """The stored `cards.norm`: folded word tokens joined by one space. Equal norms = same text
    up to case, punctuation, quotes and spacing."""
    return " ".join(words(text))


def stem(word: str) -> str:
    """A light, deterministic English suffix stripper, enough to equate "deploy"/"deploys"/
    "deployed"/"deploying"/"deployment" or "use"/"uses"/"used"/"using". Identifiers (anything with
    a digit or inner punctuation) and short words are kept as they are."""
    if not word.isalpha() or word.endswith(("ss", "us", "is")):
        return word
    if len(word) <= 3:
        return word[:-1] if len(word) == 3 and word.endswith("e") else word
    base = word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            base = word[: len(word) - len(suffix)] + repl
            if suffix in ("ed", "ing", "ings", "er", "ers") and len(base) >= 4 and base[-1] == base[-2] \
                    and base[-1] not in "lsz":
                base = base[:-1]   # "committed" -> "commit", "running" -> "run"
            break
    if base.endswith("e") and len(base) >= 3:
        base = base[:-1]           # "use"/"uses"/"used" -> "us"; "cache"/"caching" -> "cach"
    return base


_SUFFIXES = (
    ("ations", "ate"), ("ation", "ate"), ("ments", ""), ("ment", ""), ("ings", ""), ("ing", ""),
    ("ies", "y"), ("ied", "y"), ("edly", ""), ("ed", ""), ("es", ""), ("ly", ""), ("s", ""),
)


def content_words(text: str) -> list[str]:
    """Stemmed tokens of `text` without stopwords and negations, in order."""
    return [stem(w) for w in words(text) if w not in STOPWORDS and w not in NEGATIONS]


def is_identifier(word: str) -> bool:
    """A token that names something precisely: has a digit or inner punctuation ("prod-k8s",
    "node18", "app.py", "v2")."""
    return any(c.isdigit() for c in word) or any(c in word for c in "-_./:@+#")


NAME_SEP = re.compile(r"[\s_\-]+")                               # joins a name's tokens into its key
NAME_STRIP = re.compile(r"^[\"'`(\[<{]+|[\"'`)\]>},;:!?.]+$")   # wrapping punctuation of a token


def name_tokens(text: str) -> list[str]:
    """Folded tokens of an entity name or a prompt, possessive `'s` and wrapping punctuation
    removed: what entity keys are made of (graph.entities on write, graph.recall on read)."""
    text = fold(text).replace("`", " ")
    text = re.sub(r"'s\b", "", text)
    toks = [NAME_STRIP.sub("", t) for t in text.split()]
    return [t for t in toks if t]


def lexical_features(text: str) -> dict[str, float]:
    """Weighted features of the lexical embedder (graph.embed.LexicalEmbedder with numpy,
    graph.recall_embed.LexicalLite without): stemmed content words, their bigrams (0.5) and the
    pieces of identifiers (0.5)."""
    feats: dict[str, float] = {}
    toks = content_words(text)
    for tok in toks:
        feats["w:" + tok] = feats.get("w:" + tok, 0.0) + 1.0
    for a, b in zip(toks, toks[1:]):
        key = f"b:{a} {b}"
        feats[key] = feats.get(key, 0.0) + 0.5
    for w in words(text):
        if is_identifier(w):
            for piece in (q for q in re.split(r"[-_./:@+#]+", w) if q):
                key = "p:" + piece
                feats[key] = feats.get(key, 0.0) + 0.5
    return feats

