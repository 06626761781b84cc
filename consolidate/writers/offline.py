"""The offline card writer: deterministic extraction, no model, no network.

For each candidate passage (best first: importance, then keep probability, then confidence), up to
the request's card cap:

* statement: the passage's key sentence (the sentence with the strongest cues and most named
  things), made self-contained: discourse openers and correction openers stripped ("No, ...",
  "From now on, ...", "Remember that ..."), a speaker prefix ("Caroline: I ...") turned into the
  speaker's name, a leading "it/this/that" replaced by the thing the request named, clipped at a
  clause boundary to at most 35 words;
* entities: named things of the statement by pattern (`consolidate.classify.named_things`: hyphenated
  service names, hosts, buckets, repos, paths, backticked identifiers, well-known tools, capitalised
  names) plus the agent's known entity names;
* relations: a lexicon of verb phrases between two entities for the 20 fixed verbs; "moved X off
  Y", "no longer" and "retired" end a relation (`holds: false`); nothing when no phrase matches.

Two candidates that give the same statement yield one card citing both.
"""

from __future__ import annotations

import re
from typing import Iterator

from ..classify import KNOWN_TOOLS, Named, named_things
from .base import CardDraft, EntityDraft, RelationDraft, WriteRequest, WriteResult, sequential, MAX_WORDS

_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])|\n+|(?<=:)\s+(?=[-*•]\s)|\s+[-*•]\s+")
_OPENERS = re.compile(
    r"^(?:ok(?:ay)?|so|well|also|btw|by the way|hey|please|and|but|oh|alright|right|note|fyi|just|hmm|"
    r"one more thing|important|heads up|ps)\b[,:;!.\-]*\s+", re.I)
_CORRECTION_OPENERS = re.compile(
    r"^(?:no|nope|wrong|actually|not quite|incorrect|that'?s (?:not right|not correct|wrong|incorrect)|"
    r"that is (?:not right|wrong|incorrect))\b[,.!:;\-]*\s*", re.I)
_RULE_OPENERS = re.compile(r"^(?:from now on|going forward|in the future|remember(?: that)?|keep in mind(?: that)?|"
                           r"note that|for the record)\b[,:]?\s*", re.I)
_SPEAKER = re.compile(r"^([A-Z][\w.'\-]{1,30}(?: [A-Z][\w.'\-]{1,30})?):\s+")
_LEADING_PRONOUN = re.compile(r"^(it|this|that)\b(?!'s (?:great|fine|ok|okay))\s", re.I)

_FIRST_PERSON = (
    (r"\bI'm\b", "{S} is"), (r"\bI am\b", "{S} is"), (r"\bI've\b", "{S} has"), (r"\bI have\b", "{S} has"),
    (r"\bI was\b", "{S} was"), (r"\bI'll\b", "{S} will"), (r"\bI'd\b", "{S} would"), (r"\bI\b", "{S}"),
    (r"\bmy\b", "{S}'s"), (r"\bMy\b", "{S}'s"), (r"\bmine\b", "{S}'s"), (r"\bmyself\b", "{S}"), (r"\bme\b", "{S}"),
)
_KNOWN_LOWER = set(KNOWN_TOOLS)
_I_PREFER = re.compile(r"^I (prefer|like|want|hate|dislike|need)\b", re.I)

# (verb, regex of the phrase between subject and object)
LEXICON: tuple[tuple[str, str], ...] = (
    ("depends_on", r"\bdepends? on\b|\brel(?:y|ies) on\b"),
    ("stores_data_in", r"\bstores? (?:\w+ ){0,3}(?:in|on)\b|\bpersists? (?:\w+ ){0,2}(?:to|in)\b|\bkeeps? (?:its |the )?data in\b"),
    ("reads_from", r"\breads? (?:\w+ ){0,2}from\b|\bconsumes? (?:\w+ )?from\b|\bpulls? (?:\w+ )?from\b"),
    ("writes_to", r"\bwrites? (?:\w+ ){0,2}(?:to|into)\b|\bpublishes? (?:\w+ )?to\b|\blogs? to\b"),
    ("deploys_to", r"\bdeploy(?:s|ed)? (?:\w+ )?to\b|\bis deployed (?:to|on)\b|\bships to\b"),
    ("runs_on", r"\bruns? on\b|\b(?:is )?running on\b|\bis hosted on\b|\blives on\b|\bmoved (?:\w+ )?(?:to|onto)\b|"
                r"\bmigrated (?:\w+ )?to\b|\bruns? (?:now )?on\b"),
    ("hosts", r"\bhosts\b|\bserves\b"),
    ("part_of", r"\bis (?:a )?part of\b|\bbelongs to\b|\bis a (?:module|package|component) (?:of|in)\b"),
    ("owns", r"\bowns\b|\bmaintains\b|\bis responsible for\b"),
    ("configures", r"\bconfigures?\b|\bsets up\b"),
    ("requires", r"\brequires?\b|\bneeds\b"),
    ("replaces", r"\breplace[sd]?\b|\bsupersedes?\b"),
    ("fixes", r"\bfix(?:es|ed)?\b|\bresolves?\b"),
    ("breaks", r"\bbreaks?\b|\bbroke\b|\bcrashes\b"),
    ("affects", r"\baffects?\b|\bimpacts?\b"),
    ("prefers", r"\bprefers?\b"),
    ("decided_on", r"\bdecided on\b|\bchose\b|\bwent with\b|\bsettled on\b"),
    ("rejected", r"\brejected\b|\bruled out\b"),
    ("calls", r"\bcalls?\b|\btalks? to\b|\binvokes?\b|\bsends (?:\w+ )?(?:requests|events) to\b"),
    ("uses", r"\buses?\b|\busing\b|\bswitched to\b|\bstarted using\b|\bis built (?:on|with)\b"),
)
_LEX = tuple((verb, re.compile(rx, re.I)) for verb, rx in LEXICON)
_ENDED = re.compile(r"\bno longer\b|\bnot anymore\b|\bretired\b|\bstopped using\b|\bdropped\b|\bdecommissioned\b", re.I)
_MOVED_OFF = re.compile(r"\b(?:moved|migrated|took|pulled) (.+?) (?:off|away from|out of) (.+?)(?:[,.;]|\band\b|$)", re.I)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT_SPLIT.split(text) if s and s.strip()]


def _score_sentence(s: str, known: dict[str, str]) -> float:
    from ..classify import CUES, CORRECTION_RE

    score = sum(c.weight for c in CUES if c.pattern.search(s))
    score += 0.1 * min(3, len(named_things(s, known)))
    if CORRECTION_RE.search(s):
        score += 0.2
    if s.rstrip().endswith("?"):
        score -= 0.3
    n = len(s.split())
    if n < 4:
        score -= 0.3
    return score


def key_sentence(text: str, known: dict[str, str]) -> str:
    sents = sentences(text)
    if not sents:
        return text.strip()
    best = max(range(len(sents)), key=lambda i: (_score_sentence(sents[i], known), -i))
    s = sents[best]
    # A reason that follows in the next sentence belongs with it.
    if best + 1 < len(sents) and re.match(r"^(because|since|that's because|the reason)\b", sents[best + 1], re.I):
        s = s.rstrip(".") + ", " + sents[best + 1][0].lower() + sents[best + 1][1:]
    return s


def _clip_words(s: str, limit: int = MAX_WORDS) -> str:
    words = s.split()
    if len(words) <= limit:
        return s
    head = " ".join(words[:limit])
    for sep in ("; ", ", ", " - ", " — ", ": "):
        i = head.rfind(sep)
        if i > len(head) * 0.5:
            return head[:i].rstrip(" ,;:") + "."
    return head.rstrip(" ,;:") + "…"


def self_contained(sentence: str, *, speaker: str | None, correction: bool, context_named: list[Named]) -> str:
    s = sentence.strip().strip("*_ ")
    s = re.sub(r"^[-*•>]+\s*", "", s)
    for _ in range(3):
        before = s
        s = _OPENERS.sub("", s)
        if correction:
            s = _CORRECTION_OPENERS.sub("", s)
        s = _RULE_OPENERS.sub("", s)
        if s == before:
            break
    m = _SPEAKER.match(s)
    if m:
        speaker = speaker or m.group(1)
        s = s[m.end():]
    if speaker:
        for rx, rep in _FIRST_PERSON:
            s = re.sub(rx, rep.format(S=speaker), s)
    elif _I_PREFER.match(s):
        s = _I_PREFER.sub(lambda mm: "The user " + mm.group(1).lower() + ("s" if not mm.group(1).lower().endswith("s") else "es"), s)
    pm = _LEADING_PRONOUN.match(s)
    if pm and context_named:
        s = context_named[0].name + " " + s[pm.end():]
    s = re.sub(r"\s+", " ", s).strip()
    s = _clip_words(s)
    first = s.split(" ", 1)[0] if s else ""
    if s and s[0].islower() and re.fullmatch(r"[a-z]+", first) and first not in _KNOWN_LOWER:
        s = s[0].upper() + s[1:]
    if s and s[-1] not in ".!?…":
        s += "."
    return s


def _pronoun_subject(text_before: str) -> bool:
    return bool(re.search(r"\b(it|which|that|this)\s*$", text_before.strip(), re.I))


def relations(statement: str, ents: list[Named]) -> list[RelationDraft]:
    """Relations between consecutive named things through the verb lexicon (fixed verbs only)."""
    out: list[RelationDraft] = []
    seen: set[tuple] = set()

    def add(s: str, v: str, o: str, holds: bool) -> None:
        if s.lower() == o.lower():
            return
        key = (s.lower(), v, o.lower())
        if key in seen:
            return
        seen.add(key)
        out.append(RelationDraft(subject=s, verb=v, object=o, holds=holds))

    last_subject = None
    for m in _MOVED_OFF.finditer(statement):
        subj = next((e for e in ents if e.name.lower() in m.group(1).lower()), None)
        obj = next((e for e in ents if e.name.lower() in m.group(2).lower()), None)
        if subj and obj:
            add(subj.name, "runs_on", obj.name, False)
            last_subject = last_subject or subj
    if not ents:
        return out
    ordered = sorted(ents, key=lambda e: statement.lower().find(e.name.lower()))
    if last_subject is None and statement.lower().find(ordered[0].name.lower()) <= 12:
        last_subject = ordered[0]
    for a, b in zip(ordered, ordered[1:]):
        ia = statement.lower().find(a.name.lower())
        ib = statement.lower().find(b.name.lower())
        if ia < 0 or ib < 0 or ib <= ia:
            continue
        between = statement[ia + len(a.name):ib]
        if len(between.split()) > 7:
            # "X ..., it runs on Y": a pronoun right before the verb refers to the sentence's subject.
            tail = re.split(r"[,;]", between)[-1]
            subj = last_subject or a
            if re.match(r"^\s*(it|which|that|this)\b", tail, re.I) and len(tail.split()) <= 6:
                between, a = tail, subj
            else:
                continue
        elif re.search(r"[,;]", between):
            tail = re.split(r"[,;]", between)[-1]
            if re.match(r"^\s*(it|which|that|this)\b", tail, re.I):
                a = last_subject or a
                between = tail
            elif not re.search(r"\b(and|now)\b", between):
                continue
        if re.search(r"\b(off|away from|out of)\s*$", between.strip(), re.I):
            continue  # handled by _MOVED_OFF
        if re.match(r"^\s*(,\s*)?and\b", between) and last_subject is not None and \
                any(r.object.lower() == a.name.lower() for r in out):
            a = last_subject  # "X depends on Y and writes to Z": X is still the subject
        for verb, rx in _LEX:
            if rx.search(between):
                holds = not (_ENDED.search(between) or re.search(r"\b(not|n't)\b", between))
                add(a.name, verb, b.name, holds)
                last_subject = last_subject or a
                break
    # "Y was retired" / "retired Y": every relation to Y in this statement ended.
    for m in re.finditer(r"\bretired (?:the )?([\w.\-/]+)|([\w.\-/]+) (?:was|is|has been) retired\b", statement, re.I):
        target = (m.group(1) or m.group(2) or "").lower()
        for i, r in enumerate(out):
            if r.object.lower() == target:
                out[i] = RelationDraft(subject=r.subject, verb=r.verb, object=r.object, holds=False)
    return out


def _sentence_category(sentence: str, passage, fallback: str) -> str:
    """The category the key sentence's own cues give (a passage may mix a rule and a decision)."""
    from dataclasses import replace

    from ..classify import classify

    j = classify(replace(passage, text=sentence))
    return j.category if j.category not in ("none", "fact") or fallback == "none" else fallback


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", s.lower()).strip()


class OfflineWriter:
    """Deterministic card writer (the default)."""

    name = "offline"
    model_backed = False

    def write_many(self, requests: list[WriteRequest], budget) -> Iterator[WriteResult]:
        return sequential(self, requests, budget)

    def write_one(self, request: WriteRequest, budget=None) -> WriteResult:
        cap = request.max_cards
        ranked = sorted(request.candidates,
                        key=lambda c: (-c.judgement.importance, -c.judgement.keep, -c.judgement.confidence,
                                       c.passage.message_id))
        cards: list[CardDraft] = []
        by_norm: dict[str, int] = {}
        known = request.known_entities
        for cand in ranked:
            j, p = cand.judgement, cand.passage
            if j.category == "none":
                continue
            sent = key_sentence(p.text, known)
            context_named = named_things(p.context, known) if p.context else []
            statement = self_contained(sent, speaker=None, correction=j.correction, context_named=context_named)
            if len(statement.split()) < 3:
                continue
            norm = _norm(statement)
            if norm in by_norm:
                card = cards[by_norm[norm]]
                if cand.label not in card.evidence:
                    card.evidence.append(cand.label)
                continue
            if len(cards) >= cap:
                continue
            ents = named_things(statement, known)
            entity_drafts = [EntityDraft(name=e.name, type=e.type) for e in ents]
            category = "correction" if j.correction else _sentence_category(sent, p, j.category)
            cards.append(CardDraft(
                statement=statement, category=category, importance=j.importance,
                entities=entity_drafts, relations=relations(statement, ents), evidence=[cand.label],
                quote=sent[:200]))
            by_norm[norm] = len(cards) - 1
        return WriteResult(request.id, cards=cards)
