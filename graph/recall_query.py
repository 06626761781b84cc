"""What recall searches a prompt by (stdlib only, hook path): its FTS terms, the dates it names,
and the FTS5 query over `cards_fts` built from them.

Invariants: at most `MAX_PROMPT_CHARS` of a prompt and `MAX_QUERY_TERMS` terms are read; a term
matching more than `COMMON_SHARE` of all cards is not searched by, and the terms searched match at
most `MATCHED_CAP` cards together (the rarest first), so the BM25 cost is bounded at any store size.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import sqlite3

from .text import NEGATIONS, STOPWORDS, fold, words

# The timings in the comments of this module are one-off comparisons, each measured by editing the
# constant and rerunning `python bench/recall_bench.py latency` on the tree of that day; no bench
# option sets these constants.

#: Prompt characters considered (a pasted log should not make recall slow).
MAX_PROMPT_CHARS = 8000
#: FTS query terms at most (the first ones of the prompt).
MAX_QUERY_TERMS = 24
#: A term matching more than this share of all cards is too common to search by (see fts_query).
COMMON_SHARE = 0.05
#: The terms searched by match at most this many cards together (bounds the BM25 cost: on the
#: 100k-card bench store 8,000 cost the hook 3.4 / 6.3 ms p50 / p95 for the main query, 3,000 cost
#: 2.3 / 3.1 ms; the rarest terms are kept first, so only terms of a few % of all cards are dropped).
MATCHED_CAP = 3000

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
