"""graph.lifecycle: warm / recurring / faded / revived with a fake clock; the recall log fold."""

import json
import os
from datetime import datetime, timedelta, timezone


from reverie.graph import lifecycle
from reverie.graph.merge import MergeSession
from reverie.graph.model import NewCard

T0 = datetime(2025, 1, 1, 9, 0, tzinfo=timezone.utc)


def note(statement, session, at):
    return NewCard(statement=statement, category="fact", confidence=0.7, session=session,
                   said_at=at.isoformat())


def cards(db):
    return [tuple(r) for r in db.conn.execute(
        "SELECT id, status, sessions, access_count, revived FROM cards ORDER BY id")]


def seed(db):
    s = MergeSession(db)
    s.merge(note("The nightly-export job runs on batch-01.", "s1", T0), now=T0)            # 1: warm
    s.merge(note("Terraform state lives in the infra-state bucket.", "s1", T0), now=T0)   # 2: recurring
    s.merge(note("Terraform state lives in the infra-state bucket.", "s2", T0 + timedelta(days=1)), now=T0)
    s.merge(note("The staging db is reset every Sunday.", "s1", T0), now=T0)              # 3: recalled
    s.merge(note("Sentry alerts go to the ops channel.", "s1", T0), now=T0)               # 4: pinned
    db.conn.execute("UPDATE cards SET pinned = 1 WHERE id = 4")
    db.conn.commit()
    return s


def test_strength_names():
    assert [lifecycle.strength(n, st) for n, st in [(1, "active"), (2, "active"), (5, "faded"), (3, "superseded")]] == [
        "warm", "recurring", "faded", "superseded"]


def test_fade_after_thirty_days_only_warm_unrecalled_unpinned(db, tmp_path):
    seed(db)
    log = tmp_path / "memory-recalls.jsonl"
    log.write_text(json.dumps({"at": "2025-01-05T10:00:00Z", "session": "x", "kind": "prompt", "ids": [3],
                               "entities": []}) + "\n")
    lifecycle.fold_recall_log(db, log, now=T0 + timedelta(days=5))
    assert lifecycle.fade(db, now=T0 + timedelta(days=29)) == []
    assert lifecycle.fade(db, now=T0 + timedelta(days=31)) == [1]
    assert cards(db) == [(1, "faded", 1, 0, 0), (2, "active", 2, 0, 0), (3, "active", 1, 1, 0), (4, "active", 1, 0, 0)]
    assert lifecycle.lifecycle_counts(db) == {"warm": 2, "recurring": 1, "faded": 1, "superseded": 0}


def test_faded_card_that_comes_up_again_is_revived(db):
    s = seed(db)
    lifecycle.fade(db, now=T0 + timedelta(days=40))
    res = s.merge(note("The nightly-export job runs on batch-01", "s9", T0 + timedelta(days=41)), now=T0 + timedelta(days=41))
    assert (res.action, res.card_id, res.revived) == ("reinforced", 1, True)
    assert cards(db)[0] == (1, "active", 2, 0, 1)
    # recurring now: never fades again on the one-session rule
    assert lifecycle.fade(db, now=T0 + timedelta(days=400)) == []
    assert [c[1] for c in cards(db)] == ["active", "active", "faded", "active"]


def test_recalling_a_faded_card_revives_it(db, tmp_path):
    seed(db)
    lifecycle.fade(db, now=T0 + timedelta(days=40))
    log = tmp_path / "memory-recalls.jsonl"
    log.write_text(json.dumps({"at": "2025-02-15T10:00:00Z", "session": "x", "kind": "prompt", "ids": [1],
                               "entities": []}) + "\n")
    counts = lifecycle.fold_recall_log(db, log, now=T0 + timedelta(days=45))
    assert counts == {"lines": 1, "recalls": 1, "entities": 0, "unknown": 0, "bad": 0, "revived": 1}
    assert cards(db)[0] == (1, "active", 1, 1, 1)


def test_recall_log_fold_is_incremental_and_counts_bad_lines(db, tmp_path):
    seed(db)
    from reverie.graph.merge import merge_card
    from reverie.graph.model import EntityRef

    merge_card(db, NewCard("batch-01 hosts nightly-export.", "fact", 0.7, "s3", "2025-01-02T00:00:00Z",
                           entities=[EntityRef("batch-01", "host")]), now=T0)
    log = tmp_path / "memory-recalls.jsonl"
    lines = [
        {"at": "2025-01-03T10:00:00Z", "session": "a", "kind": "primer", "ids": [1, 2], "entities": ["batch-01"]},
        "not json",
        {"at": "2025-01-03T11:00:00Z", "session": "a", "kind": "prompt", "ids": [2, 999], "entities": ["nowhere"]},
    ]
    log.write_text("".join((json.dumps(x) if isinstance(x, dict) else x) + "\n" for x in lines)
                   + '{"at": "2025-01-04T00:00:00Z", "ids": [1')   # partial line: not yet
    first = lifecycle.fold_recall_log(db, log, now=T0)
    assert first == {"lines": 3, "recalls": 3, "entities": 1, "unknown": 2, "bad": 1, "revived": 0}
    with open(log, "a") as fh:
        fh.write(', 3], "entities": []}\n')
    second = lifecycle.fold_recall_log(db, log, now=T0)
    assert second == {"lines": 1, "recalls": 2, "entities": 0, "unknown": 0, "bad": 0, "revived": 0}
    third = lifecycle.fold_recall_log(db, log, now=T0)
    assert third["lines"] == 0
    assert [tuple(r) for r in db.conn.execute("SELECT id, access_count, last_accessed_at FROM cards ORDER BY id")] == [
        (1, 2, "2025-01-04T00:00:00.000Z"), (2, 2, "2025-01-03T11:00:00.000Z"),
        (3, 1, "2025-01-04T00:00:00.000Z"), (4, 0, None), (5, 0, None)]
    assert [tuple(r) for r in db.conn.execute("SELECT name, access_count FROM entities")] == [("batch-01", 1)]


def test_recall_log_rotation_reads_the_rest_of_the_old_file(db, tmp_path):
    seed(db)
    log = tmp_path / "memory-recalls.jsonl"
    log.write_text(json.dumps({"at": "2025-01-03T10:00:00Z", "ids": [1]}) + "\n")
    lifecycle.fold_recall_log(db, log, now=T0)
    with open(log, "a") as fh:
        fh.write(json.dumps({"at": "2025-01-03T11:00:00Z", "ids": [2]}) + "\n")
    os.replace(log, tmp_path / "memory-recalls.jsonl.1")
    log.write_text(json.dumps({"at": "2025-01-03T12:00:00Z", "ids": [3]}) + "\n")
    counts = lifecycle.fold_recall_log(db, log, now=T0)
    assert (counts["lines"], counts["recalls"]) == (2, 2)
    assert [tuple(r) for r in db.conn.execute("SELECT id, access_count FROM cards ORDER BY id")] == [
        (1, 1), (2, 1), (3, 1), (4, 0)]


def test_missing_recall_log_is_nothing_to_do(db, tmp_path):
    assert lifecycle.maintain(db, now=T0, recall_log=tmp_path / "none.jsonl") == {
        "recall_lines": 0, "recall_recalls": 0, "recall_entities": 0, "recall_unknown": 0, "recall_bad": 0,
        "recall_revived": 0, "faded": 0}


def test_a_card_learned_from_old_history_gets_its_thirty_days_from_when_it_was_learned(db):
    learned = T0 + timedelta(days=90)          # a first backfill of transcripts three months old
    MergeSession(db).merge(note("The billing-api PDF worker runs on batch-02.", "s1", T0), now=learned)
    assert lifecycle.fade(db, now=learned + timedelta(days=1)) == []
    assert lifecycle.fade(db, now=learned + timedelta(days=29)) == []
    assert lifecycle.fade(db, now=learned + timedelta(days=31)) == [1]
    assert cards(db) == [(1, "faded", 1, 0, 0)]


def test_bad_ids_are_counted_never_raised_and_fade_still_runs(db, tmp_path):
    seed(db)
    log = tmp_path / "memory-recalls.jsonl"
    log.write_text(
        '{"at": "2025-01-03T10:00:00Z", "ids": [1e400, 99999999999999999999999, -3, 0, true, "2", 3]}\n'
        '{"at": "2025-01-03T10:00:01Z", "ids": [4611686018427387904, 4611686018427387905], "episodes": [1e400]}\n'
        '{"at": 12, "ids": [3]}\n'
        '{"at": "2025-01-03T10:00:02Z", "ids": "1"}\n')
    out = lifecycle.maintain(db, now=T0 + timedelta(days=40), recall_log=log)
    # ids: 1e400, 1e23, -3, 0, true, "2" (6) + 2**62+1 + the episode 1e400 + a non-list = 9 bad; one bad line
    assert out == {"recall_lines": 4, "recall_recalls": 1, "recall_entities": 0, "recall_unknown": 1,
                   "recall_bad": 10, "recall_revived": 0, "faded": 1}
    assert cards(db) == [(1, "faded", 1, 0, 0), (2, "active", 2, 0, 0), (3, "active", 1, 1, 0), (4, "active", 1, 0, 0)]
    # the cursor advanced: nothing is read twice
    assert lifecycle.fold_recall_log(db, log, now=T0)["lines"] == 0


def _line(at, ids, episodes=()):
    return json.dumps({"at": at, "session": "a", "kind": "prompt", "ids": ids, "episodes": list(episodes),
                       "entities": []}) + "\n"


def test_one_reader_feeds_all_consumers_same_second_events_and_lock_file(db, tmp_path):
    from reverie.graph import feedback_detect

    seed(db)
    log = tmp_path / "memory-recalls.jsonl"
    (tmp_path / "memory-recalls.jsonl.lock").write_text(_line("2025-01-03T09:00:00Z", [1]) * 3)
    log.write_text(_line("2025-01-03T10:00:00Z", [2], [7]) + _line("2025-01-03T10:00:00Z", [3], [7]))
    lifecycle.maintain(db, now=T0, recall_log=log)
    events, bad = feedback_detect.read_recall_log(log)
    assert ([e["ids"] for e in events], bad) == ([[2], [3]], 0)
    assert feedback_detect.read_recall_log(log) == ([], 0)      # handed out once
    # same second again, in the next pass: still read (no timestamp watermark)
    with open(log, "a") as fh:
        fh.write(_line("2025-01-03T10:00:00Z", [3], [7]))
    lifecycle.maintain(db, now=T0, recall_log=log)
    events, _ = feedback_detect.read_recall_log(log)
    assert [e["ids"] for e in events] == [[3]]
    assert [tuple(r) for r in db.conn.execute("SELECT id, access_count FROM cards ORDER BY id")] == [
        (1, 0), (2, 1), (3, 2), (4, 0)]


def test_two_rotations_between_runs(db, tmp_path):
    seed(db)
    log = tmp_path / "memory-recalls.jsonl"
    log.write_text(_line("2025-01-03T10:00:00Z", [1]))
    lifecycle.fold_recall_log(db, log, now=T0)
    with open(log, "a") as fh:
        fh.write(_line("2025-01-03T10:00:01Z", [2]))
    # the hook rotates twice (each time to .1): the file read last time is overwritten and gone
    os.replace(log, tmp_path / "memory-recalls.jsonl.1")
    log.write_text(_line("2025-01-03T10:00:02Z", [3]))
    os.replace(log, tmp_path / "memory-recalls.jsonl.1")
    log.write_text(_line("2025-01-03T10:00:03Z", [4]))
    counts = lifecycle.fold_recall_log(db, log, now=T0)
    assert counts == {"lines": 2, "recalls": 2, "entities": 0, "unknown": 0, "bad": 0, "revived": 0,
                      "lost_rotations": 1}
    # one rotation kept beside it (.2 older than .1) is found by identity and finished
    with open(log, "a") as fh:
        fh.write(_line("2025-01-03T10:00:04Z", [1]))
    os.replace(tmp_path / "memory-recalls.jsonl.1", tmp_path / "memory-recalls.jsonl.2")
    os.replace(log, tmp_path / "memory-recalls.jsonl.1")
    log.write_text(_line("2025-01-03T10:00:05Z", [2]))
    counts = lifecycle.fold_recall_log(db, log, now=T0)
    assert (counts["lines"], counts["recalls"], counts.get("lost_rotations", 0)) == (2, 2, 0)
    assert [tuple(r) for r in db.conn.execute("SELECT id, access_count FROM cards ORDER BY id")] == [
        (1, 2), (2, 1), (3, 1), (4, 1)]
