"""Values passed between consolidation and the graph. Standard library only.

A NewCard is what a card writer produced and verification accepted; `graph.merge` turns it into
stored knowledge (insert, reinforce or supersede). Texts in these values are already redacted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

CATEGORIES = ("decision", "fact", "preference", "pattern", "lesson", "correction")

#: The fixed relation verbs (DESIGN.md). Nothing else is stored as a relation.
VERBS = (
    "uses", "depends_on", "runs_on", "hosts", "deploys_to", "stores_data_in", "reads_from",
    "writes_to", "calls", "part_of", "owns", "configures", "requires", "replaces", "fixes",
    "breaks", "affects", "prefers", "decided_on", "rejected",
)

ENTITY_TYPES = (
    "agent", "person", "host", "service", "repo", "file", "function", "tool", "product",
    "library", "organization", "concept", "other",
)


@dataclass(frozen=True)
class EntityRef:
    name: str
    type: str = "other"


@dataclass(frozen=True)
class RelationRef:
    subject: str
    verb: str
    object: str
    holds: bool = True


@dataclass(frozen=True)
class Evidence:
    conversation: str
    message_from: int          # messages.id of the first message cited
    message_to: int            # messages.id of the last message cited
    said_at: str               # ISO-8601 UTC timestamp of the cited text
    passage: str = ""          # the passage kind + index, e.g. "user:3" (no text: texts stay in the index)


@dataclass
class NewCard:
    statement: str
    category: str
    confidence: float
    session: str               # conversation (session) id the card was learned in
    said_at: str               # when it was said (ISO-8601 UTC)
    importance: int = 2
    entities: list[EntityRef] = field(default_factory=list)
    relations: list[RelationRef] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    writer: str = "offline"
    source_key: str = ""       # stable hash of (session, passages) that produced it; forget uses it


def parse_time(value: str) -> "datetime":
    """An ISO-8601 timestamp ("Z" or an offset; naive means UTC) as an aware UTC datetime.
    Raises ValueError for anything else."""
    from datetime import datetime, timezone

    text = (value or "").strip()
    if not text:
        raise ValueError("empty timestamp")
    dt = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc)


def utc_iso(dt: "datetime | str") -> str:
    """The one timestamp format stored by the graph ("2025-03-02T14:05:09.123Z"): UTC, millisecond
    precision, fixed width, so string order is time order."""
    from datetime import timezone

    if isinstance(dt, str):
        dt = parse_time(dt)
    elif dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    dt = dt.astimezone(timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


# ---------------------------------------------------------------------------------------------
# Card statuses: the one vocabulary every graph module uses (stdlib, no imports).
#
#   active      in use: recalled, counts toward relation state and weight, absorbs new learning.
#   faded       taken out by the lifecycle (warm, never recalled, 30 days): not recalled, no
#               relation weight, but its statements still date the relation's state; restating
#               the point (merge) or recalling it revives it.
#   superseded  replaced by a newer opposite card (merge) or by an anti-pattern (trust): not
#               recalled; its statements keep counting (state and weight) as history; restating it
#               after its successor brings it back (merge).
#   retired     a person deleted its line from semantic.md (graph.markdown);
#   removed     maintenance removed it (graph.maintenance);
#   archived    maintenance archived it.
#               These three are *withdrawn* by a decision: not recalled, their relation statements
#               count for nothing (neither state nor weight), and they never absorb new learning.
#               A point restated after its card was withdrawn becomes a NEW active card backed only
#               by the new evidence: the hidden card keeps its history (archive.md) and is not
#               silently revived against the person's or maintenance's decision.

CARD_STATUSES = ("active", "faded", "superseded", "retired", "removed", "archived")
#: Statuses shown by recall (session start, prompts, entity notes).
RECALLED_STATUSES = ("active",)
#: Statuses taken out of use by a person or by maintenance (see above).
WITHDRAWN_STATUSES = ("retired", "removed", "archived")
#: Statuses whose relation statements decide a relation's state (holds / ended, since).
RELATION_STATE_STATUSES = ("active", "faded", "superseded")
#: Statuses whose relation statements count toward a relation's weight (distinct sessions).
RELATION_WEIGHT_STATUSES = ("active", "superseded")
#: Statuses a new card can merge into (reinforce), best first: active, then faded (revived), then
#: superseded (revived only when restated after its successor). Withdrawn cards are never targets.
MERGE_TARGET_STATUSES = ("active", "faded", "superseded")


def sql_in(statuses: tuple[str, ...]) -> str:
    """`('a', 'b')` for an SQL `status IN ...` filter (statuses are constants, never user input)."""
    return "(" + ", ".join(f"'{s}'" for s in statuses) + ")"
