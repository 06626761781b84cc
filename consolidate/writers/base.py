"""The card-writer interface and the response model every backend's output is validated into.

A writer receives `WriteRequest`s (one per model call: the candidate passages of one stretch of one
conversation) and yields one `WriteResult` per request, in request order. Rules for every backend:

* a card is one self-contained statement of at most ~35 words (`MAX_WORDS`), with specific names,
  never narration about "the user";
* category from graph.model.CATEGORIES; entities are named things only; relations use the fixed
  verbs only (`holds: false` when the text says the relation ended), left empty rather than guessed;
* evidence cites passage labels of the request ("P1", "P2", ...);
* at most `max_cards(n)` = max(1, min(5, ceil(n / 3))) cards for n candidate passages; zero when
  nothing qualifies; a correction yields a card stating the right way; never a secret value.

A writer never raises for bad model output: it reports it in `WriteResult.error` and the pipeline
leaves those passages for the next run. Kinds are of two families:

* faults of the request's content (`STRETCH_FAULTS` in the pipeline): malformed, schema, refusal,
  max_tokens, failed; they count against the stretch, which is given up after repeated failures;
* faults of the run (`RUN_FAULTS`): transient (outage, rate limit, timeout after retries), budget
  (a cap reached, retries and re-sends included), auth (credentials refused) and account (the
  account or the configuration cannot serve any request: credit balance too low, billing, usage
  limit reached, model not found). They never count against a stretch; auth and account stop the
  run at once and their message names the fix (an account message keeps the provider's reason,
  which the pipeline redacts before it is stored or shown).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Literal, Optional, Protocol

from pydantic import BaseModel, ConfigDict, Field

from reverie.graph.model import CATEGORIES, ENTITY_TYPES, VERBS

from ..classify import Judgement
from ..passages import Passage

MAX_WORDS = 35

Category = Literal["decision", "fact", "preference", "pattern", "lesson", "correction"]
Verb = Literal[
    "uses", "depends_on", "runs_on", "hosts", "deploys_to", "stores_data_in", "reads_from",
    "writes_to", "calls", "part_of", "owns", "configures", "requires", "replaces", "fixes",
    "breaks", "affects", "prefers", "decided_on", "rejected",
]
EntityType = Literal[
    "agent", "person", "host", "service", "repo", "file", "function", "tool", "product",
    "library", "organization", "concept", "other",
]
assert set(Category.__args__) == set(CATEGORIES)  # type: ignore[attr-defined]
assert set(Verb.__args__) == set(VERBS)  # type: ignore[attr-defined]
assert set(EntityType.__args__) == set(ENTITY_TYPES)  # type: ignore[attr-defined]


class EntityDraft(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=120)
    type: EntityType = "other"


class RelationDraft(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: str = Field(min_length=1, max_length=120)
    verb: Verb
    object: str = Field(min_length=1, max_length=120)
    holds: bool = True


class CardDraft(BaseModel):
    """One card as a writer proposes it (before verification)."""

    model_config = ConfigDict(extra="forbid")
    statement: str = Field(min_length=3, max_length=400)
    category: Category
    importance: int = Field(default=2, ge=0, le=4)
    entities: list[EntityDraft] = Field(default_factory=list)
    relations: list[RelationDraft] = Field(default_factory=list)
    evidence: list[str] = Field(min_length=1)       # passage labels, "P1", ...
    quote: str = ""                                  # verbatim span of the evidence that supports it


class CardsResponse(BaseModel):
    """What a model backend must return (validated; anything else is malformed or a schema error)."""

    model_config = ConfigDict(extra="forbid")
    cards: list[CardDraft]


def response_schema() -> dict:
    """JSON schema of CardsResponse in the subset structured outputs accept (no length limits,
    every object closed, every property required except where noted)."""
    verbs = list(VERBS)
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["cards"],
        "properties": {
            "cards": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["statement", "category", "importance", "entities", "relations", "evidence", "quote"],
                    "properties": {
                        "statement": {"type": "string", "description": "<= 35 words, self-contained, specific names"},
                        "category": {"type": "string", "enum": list(CATEGORIES)},
                        "importance": {"type": "integer", "enum": [0, 1, 2, 3, 4]},
                        "entities": {
                            "type": "array",
                            "items": {
                                "type": "object", "additionalProperties": False, "required": ["name", "type"],
                                "properties": {"name": {"type": "string"},
                                               "type": {"type": "string", "enum": list(ENTITY_TYPES)}},
                            },
                        },
                        "relations": {
                            "type": "array",
                            "items": {
                                "type": "object", "additionalProperties": False,
                                "required": ["subject", "verb", "object", "holds"],
                                "properties": {"subject": {"type": "string"},
                                               "verb": {"type": "string", "enum": verbs},
                                               "object": {"type": "string"},
                                               "holds": {"type": "boolean"}},
                            },
                        },
                        "evidence": {"type": "array", "items": {"type": "string"},
                                     "description": "labels of the passages that support the card, e.g. P2"},
                        "quote": {"type": "string", "description": "a short verbatim span of the cited passage"},
                    },
                },
            }
        },
    }


def max_cards(n: int) -> int:
    """At most max(1, min(5, ceil(n/3))) cards for n candidate passages; 0 when n == 0."""
    if n <= 0:
        return 0
    return max(1, min(5, math.ceil(n / 3)))


@dataclass
class Candidate:
    """A passage the classifier kept, with its label in the request."""

    label: str                 # "P1", ...
    passage: Passage
    judgement: Judgement


@dataclass
class WriteRequest:
    """One writer call: candidate passages from one stretch of one conversation."""

    id: str                    # unique within a run, e.g. "<conversation>:<segment>"
    agent: str
    conversation: str
    candidates: list[Candidate]
    known_entities: dict[str, str] = field(default_factory=dict)   # lower-cased name -> type
    #: exchange id -> the agent's final answer in that exchange when no candidate holds it
    #: (`passages.final_answers`): context for the model writers, never a passage to cite
    answers: dict[int, str] = field(default_factory=dict)

    @property
    def max_cards(self) -> int:
        return max_cards(len(self.candidates))

    def by_label(self) -> dict[str, Candidate]:
        return {c.label: c for c in self.candidates}


REASON_CHARS = 300


def clip_reason(text: str, limit: int = REASON_CHARS) -> str:
    """A provider's reason on one line, at most `limit` characters, cut only between words, so a
    secret in it is either whole (the redactor recognises it) or left out, never half kept."""
    words = str(text or "").split()
    out: list[str] = []
    size = 0
    for w in words:
        if size + len(w) + (1 if out else 0) > limit - 4:
            return (" ".join(out) + " ...").strip()
        out.append(w)
        size += len(w) + (1 if len(out) > 1 else 0)
    return " ".join(out)


#: Error kinds that belong to the run (never to the stretch's content); see the module docstring.
RUN_FAULTS = ("transient", "budget", "auth", "account")


@dataclass
class WriteError:
    kind: str                  # malformed | schema | refusal | max_tokens | failed | RUN_FAULTS
    message: str               # redacted, short; never passage text or keys
    retryable: bool = False


@dataclass
class WriteResult:
    request_id: str
    cards: list[CardDraft] = field(default_factory=list)
    error: Optional[WriteError] = None
    calls: int = 0             # model calls made for this request (retries included)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    #: drafts the writer itself repaired away or rejected (`writers.repair`), by reason; the
    #: pipeline adds them to the run's `cards_rejected`
    rejected: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


class CardWriter(Protocol):
    """A backend. `model_backed` writers get the support check in verification and count calls."""

    name: str
    model_backed: bool

    def write_many(self, requests: list[WriteRequest], budget) -> Iterator[WriteResult]:
        """Yield one result per request, in order; stop early (yielding budget errors) when the
        budget says no more calls, never raising for model faults."""
        ...


def sequential(writer, requests: Iterable[WriteRequest], budget) -> Iterator[WriteResult]:
    """Default `write_many`: one call per request, stop calling after a run fault (`RUN_FAULTS`:
    transient, budget, auth, account) or when the budget is spent (the remaining requests get an
    error result of the same kind and are left for the next run). `write_one(request, budget)`
    checks the budget again before each retry and re-send; results are charged here."""
    stop: Optional[WriteError] = None
    for req in requests:
        if stop is not None:
            yield WriteResult(req.id, error=stop)
            continue
        refusal = budget.refuse_call(writer, req) if budget is not None else None
        if refusal:
            stop = WriteError("budget", refusal, retryable=True)
            yield WriteResult(req.id, error=stop)
            continue
        result = writer.write_one(req, budget)
        if budget is not None:
            budget.charge(result)
        if result.error is not None and result.error.kind in RUN_FAULTS:
            stop = WriteError(result.error.kind, "not attempted: " + result.error.message, retryable=True)
        yield result
