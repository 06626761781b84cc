"""Verification of written cards: supported by their evidence, no secret, within the rules.

A card is dropped, and counted under its reason, when:

* ``over_cap``          it is beyond the request's card cap (max(1, min(5, ceil(n/3))));
* ``missing_evidence``  it cites no passage of the request (unknown labels);
* ``too_long`` / ``too_short``  more than `MAX_WORDS_HARD` (35 words plus slack) or fewer than 3;
* ``narration``         it narrates the conversation ("the user said", "we discussed", "in this session");
* ``unsupported``       a named entity of the card is absent from its evidence, or fewer than half of
                        its content words (stemmed) occur in the evidence and the request it answers;
* ``quote_not_found``   model backends only: its supporting quote is not in the cited passages (the
                        model's own support check, compared fuzzily against the evidence);
* ``secret``            the redactor finds a secret in its statement, entities or relations, or the
                        statement carries a redaction placeholder;
* ``duplicate``         the same statement twice in one response.

Relations whose ends are not named in the card are removed from it (counted as
``relations_dropped``), the card itself stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .writers.base import MAX_WORDS, CardDraft, Candidate, WriteRequest

MAX_WORDS_HARD = MAX_WORDS + 10
MIN_TERM_SHARE = 0.5

_NARRATION = re.compile(
    r"\b(the )?user (said|says|asked|asks|mentioned|mentions|told|wants me|wanted me|requested)\b|"
    r"\bwe (discussed|talked about)\b|\bin this (conversation|session|chat)\b|\bthe assistant (said|did)\b|"
    r"\b(today|earlier today|just now) (we|i|the)\b", re.I)
_PLACEHOLDER = re.compile(r"\[REDACTED[^\]]*\]|\*{4,}", re.I)
_STOP = set("""a an the and or but if then than that this these those there their them they it its is are was were be
been being to of in on at by for with from into onto over under about after before not no nor so such very can could
should would will shall may might must do does did done have has had having use used using uses also just only
when where which while who whom whose what why how all any each every more most other some same own our your his her
we you he she i me my mine us him here now new old one two three via per""".split())


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\-./@:]+", " ", text.lower())).strip()


def _stem(word: str) -> str:
    w = word.lower()
    for suf in ("ing", "ed", "es", "s", "ly"):
        if len(w) > len(suf) + 3 and w.endswith(suf):
            w = w[: -len(suf)]
            break
    return w[:6]


def content_terms(text: str) -> list[str]:
    words = re.findall(r"[A-Za-z][\w\-]{2,}", text)
    return [w for w in words if w.lower() not in _STOP]


@dataclass
class Verified:
    draft: CardDraft
    candidates: list[Candidate]


@dataclass
class Verdict:
    accepted: list[Verified] = field(default_factory=list)
    rejected: dict[str, int] = field(default_factory=dict)
    relations_dropped: int = 0

    def reject(self, reason: str) -> None:
        self.rejected[reason] = self.rejected.get(reason, 0) + 1


def _has_secret(redactor: Any, text: str) -> bool:
    if not text:
        return False
    result = redactor.redact(text)
    findings = getattr(result, "findings", None)
    out = getattr(result, "text", result)
    return bool(findings) or out != text


def _quote_supported(quote: str, evidence: str) -> bool:
    q, e = _norm(quote), _norm(evidence)
    if len(q) < 8:
        return False
    if q in e:
        return True
    try:
        from rapidfuzz import fuzz
    except ImportError:  # pragma: no cover - rapidfuzz is a dependency
        return False
    return fuzz.partial_ratio(q, e) >= 90


def verify(
    drafts: list[CardDraft],
    request: WriteRequest,
    *,
    redactor: Any,
    model_backed: bool,
    scrub: Callable[[str], str] | None = None,
) -> Verdict:
    """Check every draft of one writer response; returns the accepted cards and rejection counts."""
    verdict = Verdict()
    by_label = request.by_label()
    cap = request.max_cards
    seen: set[str] = set()
    for draft in drafts:
        if len(verdict.accepted) >= cap:
            verdict.reject("over_cap")
            continue
        cited = [by_label[label] for label in dict.fromkeys(draft.evidence) if label in by_label]
        if not cited:
            verdict.reject("missing_evidence")
            continue
        statement = draft.statement.strip()
        n_words = len(statement.split())
        if n_words > MAX_WORDS_HARD:
            verdict.reject("too_long")
            continue
        if n_words < 3:
            verdict.reject("too_short")
            continue
        if _NARRATION.search(statement):
            verdict.reject("narration")
            continue
        parts = [statement] + [e.name for e in draft.entities] + \
                [f"{r.subject} {r.object}" for r in draft.relations] + [draft.quote]
        if _PLACEHOLDER.search(" ".join(parts)) or any(_has_secret(redactor, p) for p in parts if p):
            verdict.reject("secret")
            continue
        if scrub is not None and any(scrub(p) != p for p in parts if p):
            verdict.reject("secret")
            continue
        evidence_text = " ".join(c.passage.text for c in cited)
        support_text = _norm(evidence_text + " " + " ".join(c.passage.context for c in cited))
        missing_entity = [e.name for e in draft.entities if _norm(e.name) and _norm(e.name) not in support_text]
        terms = content_terms(statement)
        support_stems = {_stem(w) for w in re.findall(r"[A-Za-z][\w\-]{2,}", support_text)}
        share = (sum(1 for t in terms if _stem(t) in support_stems) / len(terms)) if terms else 0.0
        if missing_entity or share < MIN_TERM_SHARE:
            verdict.reject("unsupported")
            continue
        if model_backed and not _quote_supported(draft.quote, evidence_text):
            verdict.reject("quote_not_found")
            continue
        key = _norm(statement)
        if key in seen:
            verdict.reject("duplicate")
            continue
        seen.add(key)
        names = {_norm(e.name) for e in draft.entities}
        kept = [r for r in draft.relations if _norm(r.subject) in names and _norm(r.object) in names]
        verdict.relations_dropped += len(draft.relations) - len(kept)
        if len(kept) != len(draft.relations):
            draft = draft.model_copy(update={"relations": kept})
        verdict.accepted.append(Verified(draft, cited))
    return verdict
