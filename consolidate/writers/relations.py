"""Relations and findings the offline writer reads off a statement (the 20 fixed verbs only).

`relations(statement, ents)` links consecutive named things through the verb lexicon (`LEXICON`);
"moved X off Y", "no longer" and "retired" end a relation (`holds: false`); nothing when no phrase
matches. `findings(text, known)` reads a list of findings about named things as one statement.
Names are kept within the model limit (`writers.repair.short_name`).
"""

from __future__ import annotations

import re

from ..names import Named, named_things
from .base import MAX_WORDS, RelationDraft
from .repair import short_name

#: First and second person left in a statement (no speaker to resolve them to): not self-contained.
UNRESOLVED_PERSON = re.compile(r"(?<![\w'\u2019\-])(?:I|(?i:me|my|mine|myself|you|your|yours|yourself))"
                               r"(?:['\u2019](?:m|ve|ll|d|re))?(?![\w\-])")


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
#: "moved X (back) to Y", "migrated X from Y to Z": X now on the last place named, off the "from" one.
_MOVED_TO = re.compile(r"\b(?:moved|migrated|switched) (.+?)(?: from (.+?))? (?:back )?(?:to|onto|over to) (.+?)"
                       r"(?:[,.;]|\band\b|$)", re.I)
_DATA_PLACES = frozenset({"bucket", "database", "table", "queue", "topic"})



def _pronoun_subject(text_before: str) -> bool:
    return bool(re.search(r"\b(it|which|that|this)\s*$", text_before.strip(), re.I))


def relations(statement: str, ents: list[Named]) -> list[RelationDraft]:
    """Relations between consecutive named things through the verb lexicon (fixed verbs only)."""
    out: list[RelationDraft] = []
    seen: set[tuple] = set()

    def add(s: str, v: str, o: str, holds: bool) -> None:
        s, o = short_name(s) or "", short_name(o) or ""
        if not s or not o or s.lower() == o.lower():
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
    for m in _MOVED_TO.finditer(statement):
        subj = next((e for e in ents if e.name.lower() in m.group(1).lower()), None)
        old_place = next((e for e in ents if m.group(2) and e.name.lower() in m.group(2).lower()), None)
        new_place = next((e for e in ents if e.name.lower() in m.group(3).lower()), None)
        if subj and new_place and subj is not new_place:
            verb = "stores_data_in" if new_place.type in _DATA_PLACES else "runs_on"
            if old_place and old_place is not subj and old_place is not new_place:
                add(subj.name, verb, old_place.name, False)
            add(subj.name, verb, new_place.name, True)
            last_subject = last_subject or subj
    if not ents:
        return out
    ordered = sorted(ents, key=lambda e: statement.lower().find(e.name.lower()))
    # A named thing that only qualifies the next one ("the S3 bucket `acme-invoices`", "the
    # DynamoDB table tf-locks") is not a relation's end: the thing it qualifies is.
    low = statement.lower()
    ordered = [e for e, nxt in zip(ordered, ordered[1:] + [None]) if nxt is None or not re.fullmatch(
        r"\s*(?:bucket|table|queue|topic|host|server|cluster|namespace|repo|repository|database|db|"
        r"instance|vm|box|project|account|region)s?\s*[`'\"]?",
        low[low.find(e.name.lower()) + len(e.name):max(0, low.find(nxt.name.lower()))])]
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
        else:
            skipped = _across(statement, a, b, ordered)
            if skipped:
                verb, c, holds = skipped
                add(a.name, verb, c.name, holds)
                last_subject = last_subject or a
    # "Y was retired" / "retired Y": every relation to Y in this statement ended.
    for m in re.finditer(r"\bretired (?:the )?([\w.\-/]+)|([\w.\-/]+) (?:was|is|has been) retired\b", statement, re.I):
        target = (m.group(1) or m.group(2) or "").lower()
        for i, r in enumerate(out):
            if r.object.lower() == target:
                out[i] = RelationDraft(subject=r.subject, verb=r.verb, object=r.object, holds=False)
    return out


_ITEM_SPLIT = re.compile(r"(?:^|\s)[-*•]\s+|(?:^|\s)\d{1,2}[.)]\s+(?=\S)")
#: Findings a list states about named things (`findings`) fill at most this many words.
FINDINGS_WORDS = MAX_WORDS


def findings(text: str, known: dict[str, str]) -> tuple[str, list[Named], list[RelationDraft]] | None:
    """A list of findings ("- **Storage**: billing-api stores invoice PDFs in the S3 bucket
    `acme-invoices` ... - **Auth**: billing-api depends on auth-service; ...") as one statement:
    the leading clause of every item that relates two named things through the verb lexicon,
    joined with "; " in list order while they fit `FINDINGS_WORDS`, with the union of their
    entities and relations. None unless at least two items relate named things (a list of steps or
    options is no finding)."""
    items = [i.strip() for i in _ITEM_SPLIT.split(text) if i and i.strip()]
    if len(items) < 2:
        return None
    clauses: list[str] = []
    ents: list[Named] = []
    rels: list[RelationDraft] = []
    words = 0
    for item in items:
        s = re.sub(r"^(?:\*\*|__)?[^*_:\n]{1,40}?(?:\*\*|__):\s+", "", item)      # "**Label**: "
        s = re.sub(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", r"\2", s)
        s = re.split(r";\s+|(?<=[.!?])\s+(?=[A-Z`])|\s+[—–]\s+", s, maxsplit=1)[0]
        s = re.sub(r"\s*\([^()]{0,80}\)", "", s).strip().rstrip(".!:,")
        if not s or s.endswith("?") or UNRESOLVED_PERSON.search(s):
            continue
        named = named_things(s, known)
        found = relations(s, named)
        if not found:
            continue
        n = len(s.split())
        if words + n > FINDINGS_WORDS:
            break
        clauses.append(s)
        words += n
        for e in named:
            if not any(e.name.lower() == x.name.lower() for x in ents):
                ents.append(e)
        rels.extend(r for r in found if r not in rels)
    if len(clauses) < 2:
        return None
    statement = "; ".join(clauses)
    statement = statement[0].upper() + statement[1:] if statement[:1].islower() and \
        statement.split(" ", 1)[0].lower() not in {e.name.lower() for e in ents} else statement
    return statement + ".", ents, rels


def _across(statement: str, a: Named, b: Named, ordered: list[Named]) -> tuple[str, Named, bool] | None:
    """A verb phrase of `a` whose object is the named thing after `b`: "billing-api stores invoice
    PDFs in the S3 bucket `acme-invoices`" (b = "PDFs", the thing stored, named in between).
    (verb, object, holds), or None. Only when the phrase spans at most 8 words with no clause break."""
    low = statement.lower()
    i = ordered.index(b) if b in ordered else -1
    if i < 0 or i + 1 >= len(ordered):
        return None
    c = ordered[i + 1]
    ia, ic = low.find(a.name.lower()), low.find(c.name.lower())
    if ia < 0 or ic <= ia:
        return None
    between = statement[ia + len(a.name):ic]
    if len(between.split()) > 8 or re.search(r"[,;:]", between):
        return None
    for verb, rx in _LEX:
        m = rx.search(between)
        if m and verb in ("stores_data_in", "reads_from", "writes_to", "deploys_to", "runs_on"):
            holds = not (_ENDED.search(between) or re.search(r"\b(not|n't)\b", between))
            return verb, c, holds
    return None
