"""Repair or reject card drafts that break a model limit, so no draft ever raises.

Every writer builds its drafts through `build_draft` (the offline writer) or `repair_cards` (a model's
parsed JSON): one draft that breaks a limit of `CardDraft` (statement 3-400 characters, entity and
relation names 1-120 characters, a known category/verb/type, at least one evidence label) is
repaired when the repair keeps its meaning, else rejected with a counted reason; the other drafts
of the response are unaffected.

Repairs (each keeps the draft's meaning):

* an entity or relation name over `NAME_MAX` that is a path becomes its last components that fit
  (``/Users/me/app/src/components/TodoItem.vue`` -> ``components/TodoItem.vue``); any other long
  name is cut at a word boundary; a relation whose end was renamed is renamed with it;
* a statement over `STATEMENT_MAX` is cut at the last sentence or clause boundary (". ", "; ",
  ", ", " - ", " (") that leaves at least `STATEMENT_KEEP` of the limit, and ends with a period;
* an unknown entity type becomes "other"; an importance out of 0-4 is clamped.

Rejections (counted by reason in the run's ``cards_rejected``):

* ``repair_statement``  the statement is empty, too short, or cannot be cut at a clause boundary;
* ``repair_category``   the category is not one of graph.model.CATEGORIES;
* ``repair_evidence``   no evidence label;
* ``repair_invalid``    anything else the model rejects (wrong types from a model's JSON).

Relations with an unknown verb or an empty end are dropped from the card (the card stays).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from pydantic import ValidationError

from reverie.graph.model import CATEGORIES, ENTITY_TYPES, VERBS

from .base import CardDraft

log = logging.getLogger(__name__)

#: The limits of `CardDraft` (statement) and `EntityDraft` / `RelationDraft` (names).
STATEMENT_MAX = 400
NAME_MAX = 120
#: A cut statement keeps at least this share of `STATEMENT_MAX` (else the draft is rejected).
STATEMENT_KEEP = 0.4
STATEMENT_MIN = 3

_CLAUSE_BREAKS = re.compile(r"(?<=[.!?])\s+|;\s+|,\s+|\s+[-\u2013\u2014]\s+|\s+\(")


def short_name(name: Any, limit: int = NAME_MAX) -> str | None:
    """A name within `limit` characters that still names the same thing, or None when nothing is
    left. A path keeps its last components that fit (at least the last one, cut from the left if
    even that is too long); other text is cut at a word boundary."""
    text = re.sub(r"\s+", " ", str(name or "")).strip()
    if not text:
        return None
    if len(text) <= limit:
        return text
    if "/" in text or "\\" in text:
        parts = [p for p in re.split(r"[/\\]+", text) if p]
        kept: list[str] = []
        for part in reversed(parts):
            candidate = "/".join([part] + kept)
            if len(candidate) > limit:
                break
            kept.insert(0, part)
        if kept:
            return "/".join(kept)
        return parts[-1][-limit:] if parts else None
    cut = text[:limit]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") or None


def cut_statement(statement: Any, limit: int = STATEMENT_MAX) -> str | None:
    """The statement within `limit` characters: unchanged when it fits, else cut at the last
    sentence or clause boundary that keeps at least `STATEMENT_KEEP` of the limit (ending with a
    period); None when no such boundary exists (an unbroken run of text is no sentence)."""
    text = re.sub(r"\s+", " ", str(statement or "")).strip()
    if len(text) < STATEMENT_MIN:
        return None
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    best = -1
    for m in _CLAUSE_BREAKS.finditer(head):
        if m.start() >= limit * STATEMENT_KEEP:
            best = m.start()
    if best < 0:
        return None
    out = head[:best].rstrip(" ,;:-\u2013\u2014(")
    return out if out.endswith((".", "!", "?")) else out + "."


def _entity(raw: Any) -> dict | None:
    if isinstance(raw, dict):
        name, typ = raw.get("name"), raw.get("type", "other")
    else:
        name, typ = getattr(raw, "name", None), getattr(raw, "type", "other")
    name = short_name(name)
    if name is None:
        return None
    return {"name": name, "type": typ if typ in ENTITY_TYPES else "other"}


def _relation(raw: Any) -> dict | None:
    get = raw.get if isinstance(raw, dict) else (lambda k, d=None: getattr(raw, k, d))
    subject, obj, verb = short_name(get("subject")), short_name(get("object")), get("verb")
    if subject is None or obj is None or verb not in VERBS:
        return None
    holds = get("holds", True)
    return {"subject": subject, "verb": verb, "object": obj, "holds": holds if isinstance(holds, bool) else True}


def build_draft(**fields: Any) -> tuple[CardDraft | None, str | None]:
    """(draft, None) with every limit repaired, or (None, reason) when the draft cannot be kept.
    Never raises."""
    try:
        statement = cut_statement(fields.get("statement"))
        if statement is None:
            return None, "repair_statement"
        if fields.get("category") not in CATEGORIES:
            return None, "repair_category"
        evidence = [str(e) for e in (fields.get("evidence") or []) if str(e).strip()]
        if not evidence:
            return None, "repair_evidence"
        entities = [e for e in (_entity(x) for x in fields.get("entities") or []) if e]
        relations = [r for r in (_relation(x) for x in fields.get("relations") or []) if r]
        try:
            importance = max(0, min(4, int(fields.get("importance", 2))))
        except (TypeError, ValueError):
            importance = 2
        quote = str(fields.get("quote") or "")
        return CardDraft(statement=statement, category=fields["category"], importance=importance,
                         entities=entities, relations=relations, evidence=evidence, quote=quote), None
    except (ValidationError, TypeError, ValueError, AttributeError):
        log.debug("card draft rejected as invalid", exc_info=False)
        return None, "repair_invalid"


def repair_cards(raw_cards: Any) -> tuple[list[CardDraft], dict[str, int]]:
    """Drafts from a model's parsed `cards` list, each repaired or rejected on its own (see the
    module doc): (drafts, {reason: n}). A non-list gives no drafts and one ``repair_invalid``."""
    rejected: dict[str, int] = {}
    if not isinstance(raw_cards, list):
        return [], {"repair_invalid": 1}
    out: list[CardDraft] = []
    for raw in raw_cards:
        if not isinstance(raw, dict):
            rejected["repair_invalid"] = rejected.get("repair_invalid", 0) + 1
            continue
        draft, reason = build_draft(**{k: raw.get(k) for k in ("statement", "category", "importance", "entities",
                                                                  "relations", "evidence", "quote") if k in raw})
        if draft is None:
            rejected[reason or "repair_invalid"] = rejected.get(reason or "repair_invalid", 0) + 1
        else:
            out.append(draft)
    return out, rejected
