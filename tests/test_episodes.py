"""Episodic context: summaries, salience decay per later session, pruning, cap, recall boost, reader."""

from datetime import datetime, timedelta, timezone

import pytest

from reverie.graph import episodes as ep

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=timezone.utc)


def consolidate_session(db, n, *, confidence=ep.OFFLINE_CONFIDENCE, summary=None):
    """What consolidation does per session: record its episode, then fold later sessions in."""
    start = T0 + timedelta(days=n)
    ep.record_episode(db, f"s{n}", start.isoformat(), summary or f"Worked on: task number {n}.",
                      now=start, confidence=confidence)
    db.conn.commit()
    return ep.apply_decay(db, now=start + timedelta(hours=1))


def state(db, session):
    return db.conn.execute("SELECT salience, confidence, status FROM episodes WHERE session = ?",
                           (session,)).fetchone()


def test_offline_summary():
    text = ep.summarize_offline(
        "<system-reminder>ignore me</system-reminder> Please fix the flaky login test in auth-service, it fails "
        "about one run in five on CI and blocks merges for everyone on the team since Monday morning",
        ["auth-service tests need the fake clock fixture.", "CI runs on GitHub Actions with 4 shards.", "third"],
    )
    assert text == ("Worked on: Please fix the flaky login test in auth-service, it fails about one run in five on "
                    "CI and blocks merges for everyone on the team... Learned: auth-service tests need "
                    "the fake clock fixture; CI runs on GitHub Actions with 4 shards.")
    assert ep.summarize_offline("", []) == ""
    assert ep.summarize_offline("", ["Use pnpm."]) == "Learned: Use pnpm."


def test_episode_pruned_when_the_eleventh_later_session_arrives(db):
    # 0.8 ** 10 = 0.107 >= 0.1 and 0.7 - 10 x 0.05 = 0.2 (not below 0.2): kept after 10 later sessions.
    # 0.8 ** 11 = 0.086 < 0.1 (and confidence 0.15 < 0.2): pruned when the 11th later session comes.
    for n in range(0, 11):
        consolidate_session(db, n)
    assert state(db, "s0") == (pytest.approx(0.8 ** 10), pytest.approx(0.2), "active")
    assert state(db, "s1") == (pytest.approx(0.8 ** 9), pytest.approx(0.25), "active")
    res = consolidate_session(db, 11)
    assert state(db, "s0") == (pytest.approx(0.8 ** 11), pytest.approx(0.15), "pruned")
    assert state(db, "s1") == (pytest.approx(0.8 ** 10), pytest.approx(0.2), "active")
    s0 = db.conn.execute("SELECT id FROM episodes WHERE session = 's0'").fetchone()[0]
    assert res == {"decayed": 11, "pruned": [s0], "capped": []}
    assert db.conn.execute("SELECT target, target_id, action, reason, source FROM maintenance_log").fetchall() == [
        ("episode", s0, "pruned", "salience 0.086 < 0.1; confidence 0.15 < 0.2", "consolidation")]
    # Salience alone prunes too: a confident episode (1.0) goes at the same session.
    for n in range(20, 32):
        consolidate_session(db, n, confidence=1.0)
    assert state(db, "s20")[2] == "pruned" and state(db, "s20")[1] == pytest.approx(0.45)
    assert state(db, "s21")[2] == "active"


def test_decay_is_order_independent_and_idempotent(db):
    # A backlog session consolidated after newer ones lands at 0.8 ** (its later sessions) at once.
    for n in (3, 4, 5):
        consolidate_session(db, n)
    consolidate_session(db, 1)
    assert state(db, "s1")[0] == pytest.approx(0.8 ** 3)
    assert state(db, "s5")[0] == 1.0
    before = db.conn.execute("SELECT * FROM episodes ORDER BY id").fetchall()
    assert ep.apply_decay(db, now=T0 + timedelta(days=30)) == {"decayed": 0, "pruned": [], "capped": []}
    assert db.conn.execute("SELECT * FROM episodes ORDER BY id").fetchall() == before


def test_empty_sessions_count_as_later_sessions_but_are_not_shown(db):
    consolidate_session(db, 1)
    ep.record_episode(db, "s2", (T0 + timedelta(days=2)).isoformat(), "", now=T0 + timedelta(days=2))
    db.conn.commit()
    ep.apply_decay(db, now=T0 + timedelta(days=2))
    assert state(db, "s1")[0] == pytest.approx(0.8)
    assert state(db, "s2") == (1.0, 0.7, "empty")
    assert [r["session"] for r in ep.recent_context(db)] == ["s1"]


def test_recall_boost_and_cap(db):
    for n in range(0, 4):
        consolidate_session(db, n)
    s0 = db.conn.execute("SELECT id FROM episodes WHERE session = 's0'").fetchone()[0]
    # 0.8 ** 3 = 0.512; nine recalls: +0.2 each, capped at 2.0; confidence 0.55 back to 0.7 at most.
    events = [{"at": (T0 + timedelta(days=4, minutes=i)).isoformat(), "episodes": [s0]} for i in range(9)]
    assert ep.fold_recall_events(db, events) == 9
    sal, conf, status = state(db, "s0")
    assert (sal, conf, status) == (2.0, 0.7, "active")
    assert db.conn.execute("SELECT recalled_count FROM episodes WHERE id = ?", (s0,)).fetchone() == (9,)
    # Events of the same second all count (no timestamp watermark: the log's one reader,
    # graph.lifecycle, delivers each line once).
    same = [{"at": (T0 + timedelta(days=5)).isoformat(), "episodes": [s0]}] * 2
    assert ep.fold_recall_events(db, same) == 2
    assert db.conn.execute("SELECT recalled_count FROM episodes WHERE id = ?", (s0,)).fetchone() == (11,)
    # 25 sessions with no recalls: the cap keeps 20 active; the boosted s0 survives longer than its peers.
    for n in range(4, 30):
        consolidate_session(db, n)
    active = db.conn.execute("SELECT count(*) FROM episodes WHERE status = 'active'").fetchone()[0]
    assert active <= ep.MAX_EPISODES
    assert state(db, "s1")[2] == "pruned"
    # s0's salience (2.0 x 0.8 ** k) would keep it until k = 14 more sessions, but its confidence was
    # only restored to 0.7 at 3 later sessions: 0.7 - 11 x 0.05 = 0.15 < 0.2 when s14 arrives, together
    # with s3 (0.8 ** 11). s1 and s2 went before it.
    assert state(db, "s0")[2] == "pruned"
    log = db.conn.execute("SELECT target_id, reason FROM maintenance_log WHERE action = 'pruned' ORDER BY id").fetchall()
    order = [db.conn.execute("SELECT session FROM episodes WHERE id = ?", (i,)).fetchone()[0] for (i, _) in log]
    assert order[:5] == ["s1", "s2", "s3", "s0", "s4"]
    assert log[3][1] == "confidence 0.15 < 0.2"


def test_cap_of_twenty(db):
    # Every active episode is recalled once per session: salience stays near 1 and confidence at 1.0
    # (- 0.05 + 0.1, capped), so no threshold prunes; only the cap does, the least salient (oldest) first.
    capped = []
    for n in range(25):
        res = consolidate_session(db, n, confidence=1.0)
        assert res["pruned"] == []
        capped += res["capped"]
        ids = [r[0] for r in db.conn.execute("SELECT id FROM episodes WHERE status = 'active'")]
        ep.reinforce(db, ids)
        db.conn.commit()
    active = [r[0] for r in db.conn.execute("SELECT session FROM episodes WHERE status = 'active' ORDER BY started_at")]
    assert active == [f"s{n}" for n in range(5, 25)]
    assert [db.conn.execute("SELECT session FROM episodes WHERE id = ?", (i,)).fetchone()[0] for i in capped] == \
        ["s0", "s1", "s2", "s3", "s4"]
    # The older ones settle at 0.8 x (x + 0.2) -> 0.8 (plus a shrinking surplus) when the cap is applied.
    reasons = [r for (r,) in db.conn.execute("SELECT reason FROM maintenance_log WHERE action = 'pruned' ORDER BY id")]
    assert len(reasons) == 5 and all(r.startswith("over the 20-episode cap (salience 0.80") for r in reasons)


def test_recent_context_reader(db, tmp_path):
    for n in range(0, 8):
        consolidate_session(db, n)
    rows = ep.recent_context(db)
    # s7: (1.0, 0.7), s6: (0.8, 0.65), s5: (0.64, 0.6); the top three by salience.
    assert [(r["session"], r["salience"], r["confidence"]) for r in rows] == [
        ("s7", 1.0, 0.7), ("s6", 0.8, 0.65), ("s5", 0.64, 0.6)]
    everything = ep.recent_context(db, limit=20)
    # Salience >= 0.3 (0.8 ** 5 = 0.328 ok, 0.8 ** 6 = 0.262 no) and confidence >= 0.4: s2..s7.
    assert [r["session"] for r in everything] == ["s7", "s6", "s5", "s4", "s3", "s2"]


def test_resumed_session_updates_summary_keeps_place(db):
    consolidate_session(db, 1)
    consolidate_session(db, 2)
    ep.record_episode(db, "s1", (T0 + timedelta(days=9)).isoformat(), "Worked on: a longer story.",
                      now=T0 + timedelta(days=9))
    db.conn.commit()
    row = db.conn.execute("SELECT summary, started_at, salience FROM episodes WHERE session = 's1'").fetchone()
    assert row == ("Worked on: a longer story.", (T0 + timedelta(days=1)).isoformat(), pytest.approx(0.8))


def test_session_card_statements(db):
    ts = T0.isoformat()
    for statement, importance, status in (("low", 1, "active"), ("high", 4, "active"), ("gone", 4, "superseded")):
        cid = db.conn.execute(
            """INSERT INTO cards (statement, norm, category, importance, confidence, original_confidence, status,
                   created_at, said_at, last_seen_at, updated_at) VALUES (?, ?, 'fact', ?, 1, 1, ?, ?, ?, ?, ?)""",
            (statement, statement, importance, status, ts, ts, ts, ts)).lastrowid
        db.conn.execute("INSERT INTO card_sessions (card_id, session) VALUES (?, 's1')", (cid,))
    db.conn.commit()
    assert ep.session_card_statements(db, "s1") == ["high", "low"]
    assert ep.session_card_statements(db, "s2") == []
