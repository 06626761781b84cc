"""Dated relation statements and the current state of each relation.

A statement is (subject, verb, object, card, session, said_at, learned_at, holds): somebody said, at
`said_at`, that the relation holds (or no longer holds). A relation's state is its latest statement
by `said_at`; its weight is the number of distinct sessions behind it among non-faded cards.
Which card statuses count is defined once in `graph.model`: statements of cards a person or
maintenance withdrew (retired, removed, archived) count for nothing (neither state, weight nor
implicit ends); faded cards date the state but add no weight (RELATION_STATE_STATUSES,
RELATION_WEIGHT_STATUSES). Whoever changes a card's status recomputes `triples_of_cards`.

Single-valued verbs: some relations admit one object at a time per "slot" (see SLOTS). When a
holding statement names another object for the same slot, every other object that held before is
ended as of that statement's date, by an *implicit* statement (`implicit = 1`). Implicit statements
are derived data: for every slot touched by a change they are deleted and recomputed from the
explicit statements, sorted by `said_at`, so the result is the same in any processing order.
Multi-valued verbs never end implicitly (only an explicit `holds = false` ends them).

Invariants: only the 20 verbs of `graph.model.VERBS` are stored; `relations` (the materialized
state) always equals what `_state_of` computes from `relation_statements` for every triple touched
by the last change; nothing here commits (callers own the transaction).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from itertools import groupby
from typing import Any, Iterable

from .model import RELATION_STATE_STATUSES, RELATION_WEIGHT_STATUSES, VERBS
from .store import connection

log = logging.getLogger(__name__)

#: Verbs that are single-valued per subject: a thing runs on one host, deploys to one target, is
#: part of one parent at a time.
SINGLE_VALUED_PER_SUBJECT = frozenset({"runs_on", "deploys_to", "part_of"})
#: Verbs that are single-valued per object: a thing has one owner and one host at a time.
SINGLE_VALUED_PER_OBJECT = frozenset({"owns", "hosts"})
#: "H hosts S" is the same fact as "S runs_on H": both share S's runs_on slot.
_SLOT_OF_VERB = {
    "runs_on": ("runs_on", "subject"),
    "hosts": ("runs_on", "object"),
    "deploys_to": ("deploys_to", "subject"),
    "part_of": ("part_of", "subject"),
    "owns": ("owns", "object"),
}
#: slot name -> [(verb, which end is the slot's key entity)]
SLOTS = {
    "runs_on": [("runs_on", "subject"), ("hosts", "object")],
    "deploys_to": [("deploys_to", "subject")],
    "part_of": [("part_of", "subject")],
    "owns": [("owns", "object")],
}

Triple = tuple[int, str, int]


@dataclass(frozen=True)
class Statement:
    subject_id: int
    verb: str
    object_id: int
    holds: bool


def is_single_valued(verb: str) -> bool:
    return verb in _SLOT_OF_VERB


def add_statements(db: Any, card_id: int, session: str, said_at: str, learned_at: str,
                   statements: Iterable[Statement]) -> tuple[int, set[Triple]]:
    """Record explicit statements of one card in one session; an identical statement (same triple,
    card, session, time, holds) is not recorded twice. Returns (added, triples touched). Call
    `recompute` with the triples afterwards (merge does, in the same transaction)."""
    conn = connection(db)
    added = 0
    touched: set[Triple] = set()
    for st in statements:
        if st.verb not in VERBS or st.subject_id == st.object_id:
            continue
        exists = conn.execute(
            """SELECT 1 FROM relation_statements WHERE subject_id = ? AND verb = ? AND object_id = ?
               AND card_id = ? AND session IS ? AND said_at = ? AND holds = ? AND implicit = 0""",
            (st.subject_id, st.verb, st.object_id, card_id, session, said_at, int(st.holds)),
        ).fetchone()
        touched.add((st.subject_id, st.verb, st.object_id))
        if exists:
            continue
        conn.execute(
            """INSERT INTO relation_statements(subject_id, verb, object_id, card_id, session, said_at,
               learned_at, holds, implicit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)""",
            (st.subject_id, st.verb, st.object_id, card_id, session, said_at, learned_at, int(st.holds)),
        )
        added += 1
    return added, touched


def _slot_key(triple: Triple) -> tuple[str, int] | None:
    s, verb, o = triple
    slot = _SLOT_OF_VERB.get(verb)
    if slot is None:
        return None
    name, end = slot
    return name, (s if end == "subject" else o)


def _rederive_slot(conn, slot: str, key_id: int, learned_at: str) -> set[Triple]:
    """Delete and recompute the implicit ends of one slot; returns every triple of the slot."""
    rows = []
    for verb, end in SLOTS[slot]:
        col = "subject_id" if end == "subject" else "object_id"
        rows += conn.execute(
            f"""SELECT st.id, st.subject_id, st.verb, st.object_id, st.card_id, st.session, st.said_at,
                       st.holds, st.implicit, c.status
                FROM relation_statements st LEFT JOIN cards c ON c.id = st.card_id
                WHERE st.verb = ? AND st.{col} = ?""",
            (verb, key_id),
        ).fetchall()
    triples = {(r[1], r[2], r[3]) for r in rows}
    implicit_ids = [r[0] for r in rows if r[8]]
    for rid in implicit_ids:
        conn.execute("DELETE FROM relation_statements WHERE id = ?", (rid,))
    # statements of withdrawn cards end nothing (their card is out of use)
    explicit = sorted((r for r in rows if not r[8] and _counts_for_state(r[4], r[9])), key=lambda r: (r[6], r[0]))

    def other_end(r) -> int:
        # the entity that is not the slot's key: the host for runs_on/hosts, the target, parent, owner
        return r[3] if r[1] == key_id and r[2] != "hosts" and r[2] != "owns" else r[1]

    def end(triple: Triple, cause, said_at: str) -> None:
        conn.execute(
            """INSERT INTO relation_statements(subject_id, verb, object_id, card_id, session,
               said_at, learned_at, holds, implicit) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 1)""",
            (*triple, cause[4], cause[5], said_at, learned_at),
        )

    # other end -> {triple: holding}; "X runs_on H" and "H hosts X" are two triples of one other end H
    state: dict[int, dict[Triple, bool]] = {}
    for said_at, group in groupby(explicit, key=lambda r: r[6]):
        group = list(group)
        asserting = [r for r in group if r[7]]
        asserted = {other_end(r) for r in asserting}
        for r in group:
            if not r[7]:
                # an explicit end also ends the same fact stated the other way round
                forms = state.setdefault(other_end(r), {})
                forms[(r[1], r[2], r[3])] = False
                if other_end(r) not in asserted:
                    for triple, holding in list(forms.items()):
                        if holding:
                            end(triple, r, said_at)
                            forms[triple] = False
        if asserting:
            for other, forms in state.items():
                if other in asserted:
                    continue
                for triple, holding in list(forms.items()):
                    if holding:
                        end(triple, asserting[0], said_at)
                        forms[triple] = False
        for r in asserting:
            state.setdefault(other_end(r), {})[(r[1], r[2], r[3])] = True
    return triples


def _counts_for_state(card_id: int | None, status: str | None) -> bool:
    """A statement decides state when it has no card (kept as said) or its card's status is one of
    RELATION_STATE_STATUSES; a statement whose card row is gone counts for nothing."""
    if card_id is None:
        return True
    return status in RELATION_STATE_STATUSES


def _state_of(conn, triple: Triple) -> dict | None:
    rows = conn.execute(
        """SELECT st.said_at, st.holds, st.implicit, st.session, st.id, c.status, st.card_id
           FROM relation_statements st LEFT JOIN cards c ON c.id = st.card_id
           WHERE st.subject_id = ? AND st.verb = ? AND st.object_id = ?""",
        triple,
    ).fetchall()
    rows = [r for r in rows if _counts_for_state(r[6], r[5])]
    if not rows:
        return None
    # latest by said_at; at the same instant an explicit statement beats an implicit end, then the
    # statement recorded last.
    ordered = sorted(rows, key=lambda r: (r[0], 1 - r[2], r[4]))
    latest = ordered[-1]
    since = latest[0]
    for r in reversed(ordered):     # the start of the current unbroken run of the same state
        if r[1] != latest[1]:
            break
        since = r[0]
    sessions = {r[3] for r in rows if not r[2] and r[5] in RELATION_WEIGHT_STATUSES}
    return {
        "holds": int(latest[1]),
        "weight": len(sessions),
        "first_said": min(r[0] for r in rows if not r[2]) if any(not r[2] for r in rows) else latest[0],
        "last_said": max(r[0] for r in rows),
        "since": since,
    }


def recompute(db: Any, triples: Iterable[Triple], now: str) -> int:
    """Re-derive implicit ends for every slot touched by `triples` and refresh their `relations`
    rows (deleting rows whose statements are all gone). Returns the number of rows refreshed."""
    conn = connection(db)
    affected: set[Triple] = set(triples)
    slots = {k for k in (_slot_key(t) for t in affected) if k}
    for slot, key_id in sorted(slots):
        affected |= _rederive_slot(conn, slot, key_id, now)
    for triple in sorted(affected):
        st = _state_of(conn, triple)
        if st is None:
            conn.execute("DELETE FROM relations WHERE subject_id = ? AND verb = ? AND object_id = ?", triple)
            continue
        conn.execute(
            """INSERT INTO relations(subject_id, verb, object_id, holds, weight, first_said, last_said,
               since, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT(subject_id, verb, object_id) DO UPDATE SET holds = excluded.holds,
               weight = excluded.weight, first_said = excluded.first_said,
               last_said = excluded.last_said, since = excluded.since, updated_at = excluded.updated_at""",
            (*triple, st["holds"], st["weight"], st["first_said"], st["last_said"], st["since"], now),
        )
    return len(affected)


def triples_of_cards(db: Any, card_ids: Iterable[int]) -> set[Triple]:
    """Triples with a statement (explicit or implicit) from any of these cards."""
    conn = connection(db)
    ids = list(card_ids)
    out: set[Triple] = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        out |= {tuple(r) for r in conn.execute(
            f"SELECT DISTINCT subject_id, verb, object_id FROM relation_statements WHERE card_id IN ({','.join('?' * len(chunk))})",
            chunk)}
    return out


def relations_of(db: Any, entity_id: int, *, limit: int | None = None) -> list[dict]:
    """Relations where the entity is subject or object: current first, then strongest, then most
    recent. Each: subject, verb, object (names), state "holds"|"ended", weight, last_said, since,
    cards (ids of the cards that stated it explicitly, newest first)."""
    conn = connection(db)
    rows = conn.execute(
        """SELECT r.subject_id, s.name, r.verb, r.object_id, o.name, r.holds, r.weight, r.last_said, r.since,
                  r.first_said
           FROM relations r JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id
           WHERE r.subject_id = ? OR r.object_id = ?
           ORDER BY r.holds DESC, r.weight DESC, r.last_said DESC, r.verb, o.name""",
        (entity_id, entity_id),
    ).fetchall()
    out = []
    for sid, sname, verb, oid, oname, holds, weight, last_said, since, first_said in rows[:limit]:
        cards = [c for (c,) in conn.execute(
            """SELECT card_id FROM relation_statements WHERE subject_id = ? AND verb = ? AND object_id = ?
               AND implicit = 0 AND card_id IS NOT NULL GROUP BY card_id ORDER BY max(said_at) DESC""",
            (sid, verb, oid))]
        out.append({
            "subject": sname, "verb": verb, "object": oname,
            "subject_id": sid, "object_id": oid,
            "state": "holds" if holds else "ended", "weight": weight,
            "first_said": first_said, "last_said": last_said, "since": since, "cards": cards,
        })
    return out
