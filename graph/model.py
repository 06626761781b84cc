"""Values passed between consolidation and the graph. Standard library only.

A NewCard is what a card writer produced and verification accepted; `graph.merge` turns it into
stored knowledge (insert, reinforce or supersede). Texts in these values are already redacted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
