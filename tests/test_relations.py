"""graph.relations: dated statements, state = latest by said_at, single-valued verbs, weights."""

from datetime import datetime, timezone
from itertools import permutations

import pytest

from reverie.graph import lifecycle
from reverie.graph.merge import MergeSession
from reverie.graph.model import EntityRef, NewCard, RelationRef

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)


def fact(statement, session, said_at, relations, entities=()):
    return NewCard(statement=statement, category="fact", confidence=0.9, session=session, said_at=said_at,
                   entities=list(entities), relations=list(relations))


def relate(session, statement, sess, said_at, subject, verb, obj, *, now=NOW):
    """Merge a fact that states one relation."""
    session.merge(fact(statement, sess, said_at, [RelationRef(subject, verb, obj)]), now=now)


def state(db):
    """(subject, verb, object, holds, weight, since, last_said) of every relation, by names."""
    return [tuple(r) for r in db.conn.execute(
        """SELECT s.name, r.verb, o.name, r.holds, r.weight, substr(r.since, 1, 10), substr(r.last_said, 1, 10)
           FROM relations r JOIN entities s ON s.id = r.subject_id JOIN entities o ON o.id = r.object_id
           ORDER BY s.name, r.verb, o.name""")]


OLD = fact("auth-service runs on the mini-lola host.", "s1", "2025-01-10T09:00:00Z",
           [RelationRef("auth-service", "runs_on", "the mini-lola host")],
           [EntityRef("auth-service", "service"), EntityRef("the mini-lola host", "host")])
MOVE = fact("We moved auth-service off mini-lola, it runs on prod-k8s now.", "s2", "2025-02-20T15:30:00Z",
            [RelationRef("auth-service", "runs_on", "mini-lola", holds=False),
             RelationRef("auth-service", "runs_on", "prod-k8s")],
            [EntityRef("auth-service", "service"), EntityRef("mini-lola", "host"), EntityRef("prod-k8s", "host")])
# Only the new host, said later: the single-valued verb ends mini-lola implicitly.
ONLY_NEW = fact("auth-service runs on prod-k8s.", "s3", "2025-02-25T08:00:00Z",
                [RelationRef("auth-service", "runs_on", "prod-k8s")],
                [EntityRef("auth-service", "service"), EntityRef("prod-k8s", "host")])


@pytest.mark.parametrize("order", [(OLD, MOVE), (MOVE, OLD)], ids=["in-order", "reversed"])
def test_move_ends_old_runs_on_and_starts_new_in_either_order(db, order):
    session = MergeSession(db)
    for c in order:
        session.merge(c, now=NOW)
    assert state(db) == [
        ("auth-service", "runs_on", "mini-lola", 0, 2, "2025-02-20", "2025-02-20"),
        ("auth-service", "runs_on", "prod-k8s", 1, 1, "2025-02-20", "2025-02-20"),
    ]
    assert [tuple(r) for r in db.conn.execute(
        "SELECT verb, holds, substr(said_at, 1, 10), implicit FROM relation_statements ORDER BY said_at, holds")] == [
        ("runs_on", 1, "2025-01-10", 0), ("runs_on", 0, "2025-02-20", 0), ("runs_on", 1, "2025-02-20", 0)]
    # the card of the old fact is superseded by the move, whichever came first
    move_id = db.conn.execute("SELECT id FROM cards WHERE statement = ?", (MOVE.statement,)).fetchone()[0]
    assert [tuple(r) for r in db.conn.execute("SELECT statement, status, superseded_by FROM cards ORDER BY said_at")] == [
        (OLD.statement, "superseded", move_id), (MOVE.statement, "active", None)]


@pytest.mark.parametrize("order", list(permutations([OLD, ONLY_NEW, MOVE])), ids=lambda o: "-".join(c.session for c in o))
def test_single_valued_verb_ends_the_previous_object_implicitly_in_any_order(db, order):
    session = MergeSession(db)
    for c in order:
        session.merge(c, now=NOW)
    assert state(db) == [
        ("auth-service", "runs_on", "mini-lola", 0, 2, "2025-02-20", "2025-02-20"),
        ("auth-service", "runs_on", "prod-k8s", 1, 2, "2025-02-20", "2025-02-25"),
    ]


def test_implicit_end_is_dated_by_the_new_statement(db):
    session = MergeSession(db)
    session.merge(OLD, now=NOW)
    session.merge(ONLY_NEW, now=NOW)
    assert state(db) == [
        ("auth-service", "runs_on", "mini-lola", 0, 1, "2025-02-25", "2025-02-25"),
        ("auth-service", "runs_on", "prod-k8s", 1, 1, "2025-02-25", "2025-02-25"),
    ]
    assert [tuple(r) for r in db.conn.execute(
        "SELECT o.name, holds, substr(said_at, 1, 10), implicit, card_id FROM relation_statements r "
        "JOIN entities o ON o.id = r.object_id WHERE implicit = 1")] == [("mini-lola", 0, "2025-02-25", 1, 2)]


def test_multi_valued_verbs_never_end_implicitly(db):
    session = MergeSession(db)
    relate(session, "billing-worker depends on redis-01.", "s1", "2025-01-01T00:00:00Z",
           "billing-worker", "depends_on", "redis-01")
    relate(session, "billing-worker depends on postgres-main.", "s2", "2025-02-01T00:00:00Z",
           "billing-worker", "depends_on", "postgres-main")
    assert state(db) == [
        ("billing-worker", "depends_on", "postgres-main", 1, 1, "2025-02-01", "2025-02-01"),
        ("billing-worker", "depends_on", "redis-01", 1, 1, "2025-01-01", "2025-01-01"),
    ]


def test_hosts_and_runs_on_share_one_slot(db):
    session = MergeSession(db)
    relate(session, "mini-lola hosts auth-service.", "s1", "2025-01-01T00:00:00Z", "mini-lola", "hosts", "auth-service")
    relate(session, "auth-service runs on prod-k8s.", "s2", "2025-02-01T00:00:00Z", "auth-service", "runs_on", "prod-k8s")
    assert state(db) == [
        ("auth-service", "runs_on", "prod-k8s", 1, 1, "2025-02-01", "2025-02-01"),
        ("mini-lola", "hosts", "auth-service", 0, 1, "2025-02-01", "2025-02-01"),
    ]


def test_a_relation_restated_later_holds_again(db):
    session = MergeSession(db)
    for c in (OLD, MOVE, fact("auth-service is back on mini-lola.", "s9", "2025-03-01T00:00:00Z",
                              [RelationRef("auth-service", "runs_on", "mini-lola")])):
        session.merge(c, now=NOW)
    assert state(db) == [
        ("auth-service", "runs_on", "mini-lola", 1, 3, "2025-03-01", "2025-03-01"),
        ("auth-service", "runs_on", "prod-k8s", 0, 1, "2025-03-01", "2025-03-01"),
    ]


def test_weight_counts_distinct_sessions_of_non_faded_cards(db):
    session = MergeSession(db)
    # learned the night after it was said, so by NOW it is older than 30 days on both counts
    relate(session, "The api uses redis-01 for sessions.", "s1", "2024-11-01T00:00:00Z",
           "api-server", "uses", "redis-01", now=datetime(2024, 11, 2, tzinfo=timezone.utc))
    relate(session, "api-server keeps its sessions in redis-01.", "s2", "2025-02-01T00:00:00Z",
           "api-server", "uses", "redis-01")
    relate(session, "api-server keeps its sessions in redis-01.", "s2", "2025-02-01T00:00:00Z",
           "api-server", "uses", "redis-01")
    assert state(db) == [("api-server", "uses", "redis-01", 1, 2, "2024-11-01", "2025-02-01")]
    assert lifecycle.fade(db, now=NOW) == [1]
    assert state(db) == [("api-server", "uses", "redis-01", 1, 1, "2024-11-01", "2025-02-01")]
