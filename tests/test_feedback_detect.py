"""Feedback detected during consolidation from the recall log and the session's turns."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from reverie.consolidate.store import open_db
from reverie.graph import feedback_detect as fd
from reverie.graph.feedback_detect import CardPoint, Turn

T = datetime(2026, 4, 2, 10, 0, tzinfo=timezone.utc)


def ts(seconds):
    return (T + timedelta(seconds=seconds)).isoformat()


@pytest.fixture
def db(tmp_path):
    db = open_db(tmp_path / "agent.db")
    for statement, category in (
        ("Use pnpm instead of npm for installs in this repo", "preference"),
        ("auth-service runs on prod-k8s", "fact"),
        ("Run the database migrations before deploying the api", "lesson"),
    ):
        db.conn.execute(
            """INSERT INTO cards (statement, norm, category, confidence, original_confidence, created_at, said_at,
                   last_seen_at, updated_at) VALUES (?, ?, ?, 0.9, 0.9, ?, ?, ?, ?)""",
            (statement, statement.lower(), category, ts(-9999), ts(-9999), ts(-9999), ts(-9999)))
    db.conn.commit()
    return db


EVENTS = [
    # s1: pnpm card recalled with the prompt, the agent used pnpm, the user corrected it.
    {"at": ts(1), "session": "s1", "kind": "prompt", "ids": [1, 2], "entities": ["pnpm"]},
    # s2: session start primer with the migrations card; the agent followed it, no correction.
    {"at": ts(1000), "session": "s2", "kind": "primer", "ids": [3], "entities": []},
    # s3: migrations card recalled; the user corrects something else: still helpful.
    {"at": ts(2000), "session": "s3", "kind": "prompt", "ids": [3, 999], "entities": []},
    # s4: no turns consolidated for this session.
    {"at": ts(3000), "session": "s4", "kind": "prompt", "ids": [1], "entities": []},
    {"at": "not a time", "session": "s5", "ids": [1]},
]

TURNS = [
    Turn("s1", ts(0), "install the deps and run the unit tests", False, "user"),
    Turn("s1", ts(20), "Installing with pnpm install, then running pnpm test.", False, "assistant"),
    Turn("s1", ts(90), "no, don't use pnpm here, this package uses npm workspaces", True, "user"),
    Turn("s1", ts(120), "Switching to npm install.", False, "assistant"),
    ("s2", ts(1003), "deploy the api to staging", False, "user"),
    ("s2", ts(1030), "Running the database migrations first, then deploying the api to staging.", False, "assistant"),
    ("s2", ts(1100), "great, thanks", False, "user"),
    ("s3", ts(2000), "ship the api", False, "user"),
    ("s3", ts(2030), "I'll run the migrations, then deploy the api to prod.", False, "assistant"),
    ("s3", ts(2100), "no, deploy to the staging cluster first", True, "user"),
]


def test_on_point_rule():
    card = CardPoint(1, "Use pnpm instead of npm for installs in this repo", ("pnpm", "npm"))
    assert fd.terms(card.statement) == {"pnpm", "npm", "install", "repo"}
    assert fd.on_point(card, "no, don't use pnpm here, this package uses npm workspaces")
    assert not fd.on_point(card, "no, deploy to the staging cluster first")
    # One entity name plus one more key term is enough.
    assert fd.on_point(card, "pnpm install keeps failing")
    assert not fd.on_point(card, "pnpm is slow")


def test_correction_after_recall_records_harmful_and_followed_records_helpful(db):
    report = fd.detect(EVENTS, TURNS, fd.card_points(db, [1, 2, 3, 999]))
    got = [(d.card_id, d.kind, d.source, d.session, d.at) for d in report.detections]
    assert got == [
        (1, "harmful", "correction", "s1", ts(90)),
        (3, "helpful", "successful_use", "s2", ts(1100)),
        (3, "helpful", "successful_use", "s3", ts(2100)),
    ]
    assert report.counts() == {"recall_events": 4, "events_without_turns": 1, "unknown_cards": 1,
                               "bad_events": 1, "harmful": 1, "helpful": 2}


def test_detect_and_record_is_idempotent(db):
    out = fd.detect_and_record(db, EVENTS, TURNS)
    assert out["recorded"] == 3 and out["harmful"] == 1 and out["helpful"] == 2
    rows = db.conn.execute("SELECT card_id, kind, source, session, at, key FROM feedback ORDER BY id").fetchall()
    assert rows == [
        (1, "harmful", "correction", "s1", ts(90), "detect:harmful:s1:1"),
        (3, "helpful", "successful_use", "s2", ts(1100), "detect:helpful:s2:3"),
        (3, "helpful", "successful_use", "s3", ts(2100), "detect:helpful:s3:3"),
    ]
    again = fd.detect_and_record(db, EVENTS, TURNS)
    assert again["recorded"] == 0
    assert db.conn.execute("SELECT count(*) FROM feedback").fetchone()[0] == 3
    # Only some sessions: the others' events are not looked at.
    only = fd.detect_and_record(db, EVENTS, TURNS, sessions=["s2"])
    assert (only["recall_events"], only["helpful"], only["recorded"]) == (1, 1, 0)


def test_corrected_card_is_not_also_helpful_in_that_session(db):
    events = [{"at": ts(1), "session": "s1", "kind": "prompt", "ids": [1]},
              {"at": ts(100), "session": "s1", "kind": "prompt", "ids": [1]}]
    turns = [Turn("s1", ts(0), "install deps", False, "user"),
             Turn("s1", ts(20), "pnpm install done", False, "assistant"),
             Turn("s1", ts(90), "stop using pnpm, npm only in this repo", True, "user"),
             Turn("s1", ts(100), "now run the tests", False, "user"),
             Turn("s1", ts(120), "Ran npm test after a clean npm install.", False, "assistant")]
    report = fd.detect(events, turns, fd.card_points(db, [1]))
    assert [(d.card_id, d.kind) for d in report.detections] == [(1, "harmful")]


def test_user_turns_only_give_no_helpful(db):
    turns = [t for t in TURNS if (t[4] if not isinstance(t, Turn) else t.role) == "user"]
    report = fd.detect(EVENTS, turns, fd.card_points(db, [1, 2, 3]))
    assert [(d.card_id, d.kind) for d in report.detections] == [(1, "harmful")]


def test_read_recall_log_with_rotation_and_bad_lines(db, tmp_path):
    from reverie.graph import lifecycle

    path = tmp_path / "memory-recalls.jsonl"
    (tmp_path / "memory-recalls.jsonl.1").write_text(json.dumps(EVENTS[0]) + "\n{broken\n")
    (tmp_path / "memory-recalls.jsonl.lock").write_text(json.dumps(EVENTS[0]) + "\n")
    path.write_text(json.dumps(EVENTS[1]) + "\n\n[1, 2]\n" + json.dumps(EVENTS[2]) + "\n")
    # nothing folded in this process yet: nothing to hand out
    assert fd.read_recall_log(path) == ([], 0)
    lifecycle.fold_recall_log(db, path, now="2026-01-01T00:00:00Z")
    events, bad = fd.read_recall_log(path)
    assert events == [EVENTS[0], EVENTS[1], EVENTS[2]]
    assert bad == 2
    assert fd.read_recall_log(path) == ([], 0)
    assert fd.read_recall_log(tmp_path / "none" / "memory-recalls.jsonl") == ([], 0)


def test_a_card_the_session_itself_made_out_of_date_is_not_helpful(tmp_path):
    from reverie.graph.merge import merge_card
    from reverie.graph.model import NewCard, RelationRef

    store = open_db(tmp_path / "outdated.db")
    now = datetime(2026, 3, 12, tzinfo=timezone.utc)

    def card(statement, session, at, *relations):
        return merge_card(store, NewCard(statement=statement, category="fact", confidence=0.7, session=session,
                                         said_at=at, relations=list(relations)), now=now).card_id

    host = card("auth-service runs on mini-lola.", "s1", "2026-03-02T10:00:00Z",
                RelationRef("auth-service", "runs_on", "mini-lola"))
    deps = card("billing-api depends on auth-service.", "s1", "2026-03-02T10:01:00Z",
                RelationRef("billing-api", "depends_on", "auth-service"))
    card("Moved auth-service off mini-lola; it runs on prod-k8s now.", "s2", "2026-03-12T10:00:00Z",
         RelationRef("auth-service", "runs_on", "prod-k8s"))
    card("billing-api also depends on ledger-api.", "s2", "2026-03-12T10:02:00Z",
         RelationRef("billing-api", "depends_on", "ledger-api"))
    conn = store.conn
    # single-valued runs_on moved in s2: out of date there, not in s1; depends_on is multi-valued
    assert [fd.outdated_in_session(conn, host, "s2"), fd.outdated_in_session(conn, host, "s1"),
            fd.outdated_in_session(conn, deps, "s2")] == [True, False, False]
    helpful = [fd.Detection(host, "helpful", "successful_use", "s2", "2026-03-12T10:05:00Z", "test"),
               fd.Detection(deps, "helpful", "successful_use", "s2", "2026-03-12T10:05:00Z", "test"),
               fd.Detection(host, "harmful", "correction", "s2", "2026-03-12T10:05:00Z", "test")]
    kept, dropped = fd.drop_outdated(conn, helpful)
    assert (kept, dropped) == ([helpful[1], helpful[2]], 1)
    store.close()
