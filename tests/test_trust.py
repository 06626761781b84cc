"""Trust signals: confidence decay/restore, feedback scoring, maturity, anti-patterns, ranking, CLI."""

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate.store import open_db
from reverie.graph import trust
from reverie.graph.trust import FeedbackScore, next_maturity, score_events

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def add_card(db, statement, *, category="decision", confidence=0.9, sessions=("s0",), pinned=0, at=T0,
             status="active"):
    """A card as the graph stores it, with one card_sessions row per session."""
    ts = at.isoformat()
    cur = db.conn.execute(
        """INSERT INTO cards (statement, norm, category, confidence, original_confidence, status, sessions,
               pinned, created_at, said_at, last_seen_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (statement, statement.lower(), category, confidence, confidence, status, len(sessions), pinned,
         ts, ts, ts, ts),
    )
    cid = cur.lastrowid
    for s in sessions:
        db.conn.execute("INSERT INTO card_sessions (card_id, session, said_at) VALUES (?, ?, ?)", (cid, s, ts))
    db.conn.commit()
    return cid


def conf(db, cid):
    return db.conn.execute("SELECT confidence FROM cards WHERE id = ?", (cid,)).fetchone()[0]


# --- confidence ------------------------------------------------------------------------------------

def test_decay_and_restore_over_many_sessions(db):
    quiet = add_card(db, "deploy with make ship", confidence=0.9)
    busy = add_card(db, "auth-service runs on prod-k8s", confidence=0.9)
    pinned = add_card(db, "never force-push main", confidence=1.0, pinned=1)
    history = []
    for n in range(1, 21):
        session = f"s{n}"
        if n in (5, 6, 7, 15):   # busy is reinforced in these sessions
            db.conn.execute("INSERT INTO card_sessions (card_id, session) VALUES (?, ?)", (busy, session))
            db.conn.commit()
        res = trust.consolidation_pass(db, run_key=f"run-{n}", sessions=[session], now=T0 + timedelta(days=n),
                                       restore_reinforced=True)
        history.append((conf(db, quiet), conf(db, busy)))
        assert res["skipped"] is False
    # quiet: 0.9 - 0.05 n, floored at 0; exact at every step.
    assert [q for q, _ in history] == [max(0.0, round(0.9 - 0.05 * n, 6)) for n in range(1, 21)]
    # busy: -0.05 x4 = 0.70; +0.1 x3 (capped at 0.9) = 0.9; -0.05 x7 = 0.55; +0.1 = 0.65; -0.05 x5 = 0.40
    assert [b for _, b in history] == [0.85, 0.8, 0.75, 0.7, 0.8, 0.9, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6,
                                       0.55, 0.65, 0.6, 0.55, 0.5, 0.45, 0.4]
    assert conf(db, pinned) == 1.0
    # Same run key again: nothing moves.
    again = trust.consolidation_pass(db, run_key="run-20", sessions=["s20"], now=T0 + timedelta(days=21))
    assert again["skipped"] is True and conf(db, busy) == 0.4
    # A run with no new sessions does not decay.
    trust.consolidation_pass(db, run_key="run-21", sessions=[], now=T0 + timedelta(days=22))
    assert conf(db, busy) == 0.4
    flags = dict(db.conn.execute("SELECT card_id, needs_maintenance FROM card_trust").fetchall())
    assert flags[quiet] == 1 and flags.get(busy, 0) == 0
    logged = db.conn.execute(
        "SELECT target_id, action, reason FROM maintenance_log WHERE action = 'flagged'").fetchall()
    assert logged == [(quiet, "flagged", "confidence 0.15 < 0.2")]


def test_reinforced_cards_are_left_to_the_merge_by_default(db):
    quiet = add_card(db, "a", confidence=0.5)
    seen = add_card(db, "b", confidence=0.5)
    db.conn.execute("INSERT INTO card_sessions (card_id, session) VALUES (?, 'new')", (seen,))
    db.conn.commit()
    res = trust.consolidation_pass(db, run_key="r", sessions=["new"], now=T0)
    assert (res["decayed"], res["restored"]) == (1, 0)
    assert (conf(db, quiet), conf(db, seen)) == (0.45, 0.5)


def test_contradicted_card_restated_gets_its_confidence_back(db):
    old = add_card(db, "deploy on fridays is fine", confidence=0.9)
    new = add_card(db, "never deploy on fridays", confidence=0.9)
    db.conn.execute("UPDATE cards SET status = 'superseded', superseded_by = ? WHERE id = ?", (new, old))
    db.conn.commit()
    trust.consolidation_pass(db, run_key="r1", sessions=[], now=T0)
    assert conf(db, old) == 0.0
    # graph.merge revives it when it is said again after its successor (and restores + 0.1).
    db.conn.execute("UPDATE cards SET status = 'active', superseded_by = NULL, confidence = 0.1 WHERE id = ?", (old,))
    db.conn.commit()
    res = trust.consolidation_pass(db, run_key="r2", sessions=[], now=T0)
    assert res["restated"] == 1 and conf(db, old) == 0.9
    assert db.conn.execute("SELECT contradicted FROM card_trust WHERE card_id = ?", (old,)).fetchone() == (0,)


def test_restore_never_exceeds_original_nor_lowers():
    assert trust.restored_confidence(0.5, 0.9) == 0.6
    assert trust.restored_confidence(0.85, 0.9) == 0.9
    assert trust.restored_confidence(1.0, 0.9) == 1.0
    assert trust.decayed_confidence(0.03) == 0.0


def test_superseded_card_is_contradicted_to_zero(db):
    old = add_card(db, "use npm for installs", confidence=0.9)
    new = add_card(db, "use pnpm instead of npm", confidence=0.9)
    db.conn.execute("UPDATE cards SET status = 'superseded', superseded_by = ? WHERE id = ?", (new, old))
    db.conn.commit()
    res = trust.consolidation_pass(db, run_key="r1", sessions=[], now=T0)
    assert res["contradicted"] == 1
    assert conf(db, old) == 0.0
    info = trust.trust_for_cards(db, [old, new], now=T0)
    assert info[old].contradicted and info[old].strength == 0.0
    assert not info[new].contradicted and info[new].strength > 0


# --- feedback scoring and maturity ------------------------------------------------------------------

def events(kinds_ages, now=T0):
    return [(k, (now - timedelta(days=age)).isoformat()) for k, age in kinds_ages]


def test_score_decays_with_half_life():
    s = score_events(events([("helpful", 0), ("helpful", 90), ("harmful", 180)]), now=T0, half_life_days=90)
    assert (s.events, s.helpful_count, s.harmful_count) == (3, 2, 1)
    assert s.helpful == pytest.approx(1.5) and s.harmful == pytest.approx(0.25)
    assert trust.effective_score(s, "established") == pytest.approx(1.5 - 4 * 0.25)
    assert trust.effective_score(s, "candidate") == pytest.approx(0.25)
    assert trust.effective_score(s, "proven") == pytest.approx(0.75)
    assert trust.effective_score(s, "deprecated") == 0.0


def test_earned_maturity_rules():
    assert trust.earned_maturity(score_events(events([("helpful", 0)] * 2), now=T0)) == "candidate"
    assert trust.earned_maturity(score_events(events([("helpful", 0)] * 3), now=T0)) == "established"
    assert trust.earned_maturity(score_events(events([("helpful", 0)] * 10), now=T0)) == "proven"
    # 10 helpful + 1 harmful: harmful share 1/11 = 9.1% < 10% -> proven; +2 harmful: 16.7% -> established
    assert trust.earned_maturity(score_events(events([("helpful", 0)] * 10 + [("harmful", 0)]), now=T0)) == "proven"
    assert trust.earned_maturity(
        score_events(events([("helpful", 0)] * 10 + [("harmful", 0)] * 2), now=T0)) == "established"
    # 7 helpful + 3 harmful: 30% is not over 30% -> established; 7 + 4: 36% -> deprecated
    assert trust.earned_maturity(
        score_events(events([("helpful", 0)] * 7 + [("harmful", 0)] * 3), now=T0)) == "established"
    assert trust.earned_maturity(
        score_events(events([("helpful", 0)] * 7 + [("harmful", 0)] * 4), now=T0)) == "deprecated"


def test_maturity_transitions_jump_up_and_demote_one_rung(db):
    cid = add_card(db, "run migrations before deploy", category="lesson")
    t = T0
    walk = []

    def feed(kind, n):
        nonlocal t
        for _ in range(n):
            t += timedelta(minutes=1)
            trust.record_feedback(db, cid, kind, source="user", at=t)
        db.conn.commit()

    def step():
        res = trust.evaluate_card(db, cid, now=t, half_life_days=90)
        db.conn.commit()
        walk.append(res["maturity"])
        return res

    feed("helpful", 2)
    step()                      # 2 events: candidate
    feed("helpful", 8)
    step()                      # 10 helpful, 0 harmful: jumps candidate -> proven
    feed("harmful", 2)          # 2/12 harmful = 16.7%: earns established
    step()                      # proven -> established
    feed("harmful", 3)          # 5/15 = 33%: earns deprecated; score at established 10 - 20 = -10 < -3
    res = step()                # -> deprecated outright (score under -3)
    assert walk == ["candidate", "proven", "established", "deprecated"]
    assert res["score"] == 0.0
    log = db.conn.execute(
        "SELECT action FROM maintenance_log WHERE target_id = ? AND action LIKE 'maturity:%' ORDER BY id",
        (cid,)).fetchall()
    assert [a for (a,) in log] == ["maturity:proven", "maturity:established", "maturity:deprecated"]


def test_one_rung_demotion_without_outright_deprecation():
    # 10 helpful now, then the log ages: proven needs < 10% decayed harm; score stays positive.
    s = FeedbackScore(events=12, helpful_count=10, harmful_count=2, helpful=10.0, harmful=2.0)
    assert trust.earned_maturity(s) == "established"          # 2/12 > 10%
    assert next_maturity("proven", s) == "established"
    # Earned deprecated (harm share 40%) but score above -3 at the current rung: one rung per pass.
    s = FeedbackScore(events=10, helpful_count=6, harmful_count=4, helpful=6.0, harmful=0.9)
    s_dep = FeedbackScore(events=10, helpful_count=6, harmful_count=4, helpful=1.2, harmful=0.8)
    assert trust.earned_maturity(s_dep) == "deprecated"
    assert trust.effective_score(s_dep, "proven") == pytest.approx((1.2 - 3.2) * 1.5)   # -3.0, not under -3
    assert next_maturity("proven", s_dep) == "established"
    assert next_maturity("established", s_dep) == "candidate"
    assert next_maturity("candidate", s_dep) == "deprecated"
    assert trust.earned_maturity(s) == "established"
    assert next_maturity("deprecated", s) == "established"    # promotion jumps


def test_pinned_never_moves(db):
    cid = add_card(db, "always run the linter before committing", pinned=1)
    for i in range(6):
        trust.record_feedback(db, cid, "harmful", source="user", at=T0 + timedelta(minutes=i))
    db.conn.commit()
    res = trust.evaluate_card(db, cid, now=T0 + timedelta(hours=1))
    assert (res["maturity_before"], res["maturity"], res["inverted_to"]) == ("candidate", "candidate", None)
    assert next_maturity("proven", FeedbackScore(events=9, harmful_count=9, harmful=9.0), pinned=True) == "proven"


def test_feedback_rescored_when_half_life_changes(db):
    cid = add_card(db, "prefer small pull requests", category="preference")
    now = T0 + timedelta(days=360)
    for age in (0, 0, 0):
        trust.record_feedback(db, cid, "helpful", source="user", at=now - timedelta(days=age))
    for age in (360, 360, 360):
        trust.record_feedback(db, cid, "harmful", source="user", at=now - timedelta(days=age))
    db.conn.commit()
    # Half-life 90: old harm weighs 3 x 0.5^4 = 0.1875; share 5.9% -> established, score 3 - 0.75.
    short = trust.trust_for_cards(db, [cid], now=now, half_life_days=90)[cid]
    assert (short.maturity, short.score) == ("candidate", pytest.approx((3 - 0.75) * 0.5))
    res = trust.evaluate_card(db, cid, now=now, half_life_days=90)
    assert res["maturity"] == "established" and res["harmful"] == pytest.approx(0.1875)
    db.conn.commit()
    # Half-life 3650: the old harm barely decayed (3 x 0.5^(360/3650) = 2.80); share 48% -> deprecated,
    # and score at established 3 - 11.2 < -3: deprecated outright. Nothing in the log changed.
    res = trust.evaluate_card(db, cid, now=now, half_life_days=3650)
    assert res["harmful"] == pytest.approx(3 * 0.5 ** (360 / 3650), abs=1e-4)
    assert (res["maturity_before"], res["maturity"]) == ("established", "deprecated")
    assert db.conn.execute("SELECT count(*) FROM feedback WHERE card_id = ?", (cid,)).fetchone()[0] == 6


def test_feedback_is_append_only_and_forget_cascades(db):
    import sqlite3

    cid = add_card(db, "pin node to 20")
    trust.record_feedback(db, cid, "helpful", source="user", at=T0)
    db.conn.commit()
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.conn.execute("UPDATE feedback SET kind = 'harmful'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.conn.execute("DELETE FROM feedback")
    db.conn.rollback()
    db.conn.execute("DELETE FROM card_sessions WHERE card_id = ?", (cid,))
    db.conn.execute("DELETE FROM cards WHERE id = ?", (cid,))
    db.conn.commit()
    assert db.conn.execute("SELECT count(*) FROM feedback").fetchone()[0] == 0
    assert db.conn.execute("SELECT count(*) FROM card_trust").fetchone()[0] == 0


def test_detected_feedback_is_idempotent_by_key(db):
    cid = add_card(db, "use pnpm")
    assert trust.record_feedback(db, cid, "harmful", source="correction", at=T0, key="k1") is not None
    assert trust.record_feedback(db, cid, "harmful", source="correction", at=T0, key="k1") is None
    assert db.conn.execute("SELECT count(*) FROM feedback").fetchone()[0] == 1


# --- anti-patterns ----------------------------------------------------------------------------------

def test_anti_pattern_inversion(db):
    rule = add_card(db, "Mock the database in integration tests", category="pattern", sessions=("a", "b"))
    ent = db.conn.execute("INSERT INTO entities (name, norm, type, created_at) VALUES ('db', 'db', 'service', ?)",
                          (T0.isoformat(),)).lastrowid
    db.conn.execute("INSERT INTO card_entities (card_id, entity_id) VALUES (?, ?)", (rule, ent))
    fact = add_card(db, "The staging db is postgres 15", category="fact")
    t = T0   # all events at the evaluation time: decayed weights are exactly 1
    for kind in ("helpful", "harmful", "harmful"):
        trust.record_feedback(db, rule, kind, source="user", at=t)
        trust.record_feedback(db, fact, kind, source="user", at=t)
    db.conn.commit()
    # harm 2 < 3: not yet.
    assert trust.evaluate_card(db, rule, now=t)["inverted_to"] is None
    trust.record_feedback(db, rule, "harmful", source="correction", at=t)
    trust.record_feedback(db, fact, "harmful", source="correction", at=t)
    db.conn.commit()
    res = trust.evaluate_card(db, rule, now=t)
    db.conn.commit()
    anti = res["inverted_to"]
    assert anti is not None
    row = db.conn.execute("SELECT statement, category, status, confidence, sessions FROM cards WHERE id = ?",
                          (anti,)).fetchone()
    assert row == ("AVOID: Mock the database in integration tests", "pattern", "active", 0.9, 2)
    assert db.conn.execute("SELECT status, superseded_by, confidence FROM cards WHERE id = ?",
                           (rule,)).fetchone() == ("superseded", anti, 0.0)
    assert db.conn.execute("SELECT entity_id FROM card_entities WHERE card_id = ?", (anti,)).fetchall() == [(ent,)]
    assert sorted(db.conn.execute("SELECT session FROM card_sessions WHERE card_id = ?", (anti,)).fetchall()) == \
        [("a",), ("b",)]
    assert db.conn.execute("SELECT anti_pattern_of FROM card_trust WHERE card_id = ?", (anti,)).fetchone() == (rule,)
    # A fact is never inverted (it is deprecated instead).
    fres = trust.evaluate_card(db, fact, now=t)
    assert fres["inverted_to"] is None and fres["maturity"] == "deprecated"
    ann = trust.recall_annotations(db, [rule, anti, fact], now=t)
    assert ann["warnings"] == [
        {"id": fact, "statement": "The staging db is postgres 15", "kind": "deprecated",
         "text": "Deprecated (reported harmful): The staging db is postgres 15"},
        {"id": anti, "statement": "AVOID: Mock the database in integration tests", "kind": "anti_pattern",
         "text": "AVOID: Mock the database in integration tests"},
    ]
    assert ann["hidden"] == sorted([rule, anti, fact])
    assert ann["cards"][anti] == {"confidence": 0.9, "maturity": "candidate", "strength": trust.strength(2, 0.9)}


def test_anti_pattern_inverted_in_consolidation_pass(db):
    rule = add_card(db, "Skip the flaky e2e suite on release branches", category="lesson")
    # Three harmful reports a week apart weigh 1 + 0.947 + 0.897 = 2.84 < 3 a week after the last: not yet.
    for week in range(3):
        trust.record_feedback(db, rule, "harmful", source="correction", at=T0 + timedelta(days=7 * week))
    db.conn.commit()
    res = trust.consolidation_pass(db, run_key="r1", sessions=[], now=T0 + timedelta(days=14))
    assert res["inverted"] == []
    trust.record_feedback(db, rule, "harmful", source="correction", at=T0 + timedelta(days=21))
    db.conn.commit()
    res = trust.consolidation_pass(db, run_key="r2", sessions=[], now=T0 + timedelta(days=21))
    assert len(res["inverted"]) == 1 and res["inverted"][0]["rule"] == rule


# --- silence ----------------------------------------------------------------------------------------

def test_silence_flags_revalidation_after_180_days(db):
    cid = add_card(db, "the api gateway is kong", category="fact", at=T0)
    trust.record_feedback(db, cid, "helpful", source="user", at=T0 + timedelta(days=10))
    db.conn.commit()
    trust.consolidation_pass(db, run_key="a", sessions=[], now=T0 + timedelta(days=189))
    assert db.conn.execute("SELECT revalidate FROM card_trust WHERE card_id = ?", (cid,)).fetchone() == (0,)
    trust.consolidation_pass(db, run_key="b", sessions=[], now=T0 + timedelta(days=190))
    assert db.conn.execute("SELECT revalidate FROM card_trust WHERE card_id = ?", (cid,)).fetchone() == (1,)
    trust.record_feedback(db, cid, "helpful", source="user", at=T0 + timedelta(days=191))
    db.conn.commit()
    assert db.conn.execute("SELECT revalidate FROM card_trust WHERE card_id = ?", (cid,)).fetchone() == (0,)


# --- ranking ----------------------------------------------------------------------------------------

def test_strength_term():
    assert trust.strength(1, 1.0) == 1.0
    assert trust.strength(1, 0.0) == 0.0
    assert trust.strength(5, 1.0, 0, "deprecated") == 0.0
    assert trust.strength(1, 0.2) == pytest.approx(0.52)
    assert trust.strength(21, 1.0, 6.0, "proven") == pytest.approx(1.25 * 1.25)
    assert trust.strength(1, 1.0, -100.0) == pytest.approx(0.75)
    # More sessions, more confidence and a better score each raise strength.
    assert trust.strength(1, 0.5) < trust.strength(4, 0.5) < trust.strength(4, 0.9) < trust.strength(4, 0.9, 3.0)


def test_trust_for_cards_on_db_without_trust_tables(tmp_path):
    import sqlite3

    from reverie.graph import store as graph_store
    import sqlite_utils

    conn = sqlite3.connect(tmp_path / "old.db")
    graph_store.MIGRATIONS.apply(sqlite_utils.Database(conn))
    conn.execute("""INSERT INTO cards (statement, norm, category, confidence, original_confidence, sessions,
                        created_at, said_at, last_seen_at, updated_at) VALUES ('x y', 'x y', 'fact', 0.7, 0.7, 3,
                        '2026-01-01', '2026-01-01', '2026-01-01', '2026-01-01')""")
    info = trust.trust_for_cards(conn, [1, 99])
    assert list(info) == [1]
    t = info[1]
    assert (t.confidence, t.maturity, t.score, t.strength, t.flags) == (0.7, "candidate", 0.0,
                                                                        trust.strength(3, 0.7), [])


def test_trust_module_is_stdlib_only():
    import subprocess
    import sys

    code = ("import sys, graph.trust, graph.episodes, graph.feedback_detect; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('sqlite_utils','numpy','click','consolidate','presidio_analyzer','networkx')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- CLI --------------------------------------------------------------------------------------------

@pytest.fixture
def agent_db(reverie_home):
    from reverie.consolidate.paths import agent_db_path

    db = open_db(agent_db_path(reverie_home, "proj"))
    return db


def run(args):
    result = CliRunner().invoke(build_cli(), args, catch_exceptions=False)
    return result


def test_cli_feedback_pin_unpin(agent_db):
    cid = add_card(agent_db, "use uv for python envs", category="preference")
    out = run(["feedback", str(cid), "helpful", "--agent", "proj", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert {k: data[k] for k in ("id", "kind", "maturity_before", "maturity", "helpful_count", "harmful_count",
                                 "events", "inverted_to", "agent")} == {
        "id": cid, "kind": "helpful", "maturity_before": "candidate", "maturity": "candidate",
        "helpful_count": 1, "harmful_count": 0, "events": 1, "inverted_to": None, "agent": "proj"}
    out = run(["feedback", str(cid), "harmful", "--note", "it broke CI", "--agent", "proj"])
    assert out.exit_code == 0
    assert out.output.startswith(f"card {cid}: harmful recorded; 1 helpful / 1 harmful")
    assert agent_db.conn.execute("SELECT kind, source, note FROM feedback ORDER BY id").fetchall() == [
        ("helpful", "user", None), ("harmful", "user", "it broke CI")]
    out = run(["pin", str(cid), "--agent", "proj", "--json"])
    assert json.loads(out.output) == {"id": cid, "pinned": True, "changed": True, "agent": "proj"}
    out = run(["pin", str(cid), "--agent", "proj"])
    assert out.output == f"card {cid} pinned (already)\n"
    out = run(["unpin", str(cid), "--agent", "proj"])
    assert out.output == f"card {cid} unpinned\n"
    assert agent_db.conn.execute("SELECT pinned FROM cards WHERE id = ?", (cid,)).fetchone() == (0,)


def test_cli_errors_name_the_fix(agent_db):
    out = CliRunner().invoke(build_cli(), ["feedback", "42", "helpful", "--agent", "proj"])
    assert out.exit_code == 1
    assert "No card 42 in agent 'proj'" in out.output and "reverie search" in out.output
    out = CliRunner().invoke(build_cli(), ["pin", "1", "--agent", "nope"])
    assert out.exit_code == 1 and "Unknown agent 'nope'" in out.output and "reverie agents" in out.output


def test_cli_commands_close_the_database_they_open_also_on_error(agent_db, monkeypatch, tmp_path):
    import sqlite3

    from reverie.consolidate import store

    opened = []
    real = store.open_db

    def tracking(path, *a, **kw):
        db = real(path, *a, **kw)
        opened.append(db)
        return db

    monkeypatch.setattr(store, "open_db", tracking)
    cid = add_card(agent_db, "use uv for python envs", category="preference")
    for args in (["feedback", str(cid), "helpful", "--agent", "proj"], ["pin", str(cid), "--agent", "proj"],
                 ["maintenance", "--agent", "proj"], ["export", "--markdown", str(tmp_path / "md"), "--agent", "proj"],
                 ["feedback", "999", "helpful", "--agent", "proj"]):
        CliRunner().invoke(build_cli(), args)
    assert len(opened) == 5
    for db in opened:
        with pytest.raises(sqlite3.ProgrammingError):
            db.conn.execute("SELECT 1")
