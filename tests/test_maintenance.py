"""Maintenance: proposals below the thresholds, applied only with --apply, each one logged."""

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate.paths import agent_db_path
from reverie.consolidate.store import open_db
from reverie.graph import episodes as ep
from reverie.graph import maintenance, trust

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
NOW = T0 + timedelta(days=200)


def add_card(db, statement, *, confidence, original=None, sessions=1, access=0, pinned=0, category="fact"):
    ts = T0.isoformat()
    return db.conn.execute(
        """INSERT INTO cards (statement, norm, category, confidence, original_confidence, sessions, access_count,
               pinned, created_at, said_at, last_seen_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (statement, statement.lower(), category, confidence, original if original is not None else confidence,
         sessions, access, pinned, ts, ts, ts, ts),
    ).lastrowid


@pytest.fixture
def db(reverie_home):
    db = open_db(agent_db_path(reverie_home, "proj"))
    add_card(db, "healthy card", confidence=0.9)                                     # 1: not listed
    add_card(db, "guess about the build cache", confidence=0.1, original=0.5)        # 2: remove
    add_card(db, "api runs on fly.io", confidence=0.15, original=0.9, sessions=4)    # 3: archive
    add_card(db, "never commit .env files", confidence=0.1, original=1.0, pinned=1)  # 4: keep (pinned)
    add_card(db, "use ruff for linting", confidence=0.1, original=0.9, category="preference")  # 5: keep (proven)
    for i in range(10):
        trust.record_feedback(db, 5, "helpful", source="user", at=T0 + timedelta(days=i))
    trust.evaluate_card(db, 5, now=T0 + timedelta(days=10))
    db.conn.commit()
    # Card 1 is silent for 200 days: flagged for re-validation by the consolidation pass.
    trust.consolidation_pass(db, run_key="r", sessions=[], now=NOW)
    for n in range(13):
        ep.record_episode(db, f"s{n}", (T0 + timedelta(days=n)).isoformat(), f"task {n}", now=T0, confidence=1.0)
    db.conn.commit()
    # An old episode that was recalled once, left below the salience threshold (no pass since).
    db.conn.execute("UPDATE episodes SET salience = 0.05, recalled_count = 1 WHERE session = 's0'")
    db.conn.execute("UPDATE episodes SET confidence = 0.1 WHERE session = 's1'")
    db.conn.commit()
    return db


def test_plan_proposes_actions(db):
    entries = maintenance.plan(db, now=NOW)
    got = [(e["target"], e["id"], e["action"], e["reason"]) for e in entries]
    assert got == [
        ("card", 1, "keep", "silent but confidence 0.90 >= 0.5: nothing says it went wrong"),
        ("card", 2, "remove", "confidence 0.10 < 0.2; low signal: one session, rarely or never recalled, "
                              "no helpful feedback"),
        ("card", 3, "archive", "confidence 0.15 < 0.2; once strong: seen in 4 sessions, learned with confidence 0.90"),
        ("card", 4, "keep", "pinned"),
        # sum of 0.5 ** (age / 90) for ages 191..200 days = 2.22
        ("card", 5, "keep", "confirmed by feedback (proven, helpful 2.22 > harmful 0.00)"),
        ("episode", 1, "archive", "salience 0.050 < 0.1; recalled 1 times"),
        ("episode", 2, "remove", "confidence 0.10 < 0.2; never recalled"),
    ]
    assert entries[0]["flags"] == ["revalidate"]
    assert entries[1]["flags"] == ["revalidate", "needs_maintenance"]


def test_nothing_changes_without_apply_and_apply_logs_each(db):
    before = db.conn.execute("SELECT id, status, confidence FROM cards ORDER BY id").fetchall()
    r = CliRunner().invoke(build_cli(), ["maintenance", "--agent", "proj", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["applied"] is None and len(data["entries"]) == 7
    assert db.conn.execute("SELECT id, status, confidence FROM cards ORDER BY id").fetchall() == before
    r = CliRunner().invoke(build_cli(), ["maintenance", "--agent", "proj", "--apply", "--json"])
    assert json.loads(r.output)["applied"] == {"removed": 2, "archived": 2, "reinforced": 3, "skipped": 0}
    assert db.conn.execute("SELECT id, status, confidence FROM cards ORDER BY id").fetchall() == [
        (1, "active", 0.9), (2, "removed", 0.1), (3, "archived", 0.15), (4, "active", 1.0), (5, "active", 0.9)]
    assert db.conn.execute("SELECT session, status FROM episodes WHERE status != 'active' ORDER BY id").fetchall() == [
        ("s0", "archived"), ("s1", "removed")]
    log = db.conn.execute("SELECT target, target_id, action FROM maintenance_log WHERE source = 'maintenance' "
                          "ORDER BY id").fetchall()
    assert log == [("card", 1, "reinforced"), ("card", 2, "removed"), ("card", 3, "archived"),
                   ("card", 4, "reinforced"), ("card", 5, "reinforced"), ("episode", 1, "archived"),
                   ("episode", 2, "removed")]
    # Kept cards are validated: the next pass does not flag them again; nothing is left to propose.
    trust.consolidation_pass(db, run_key="r2", sessions=[], now=NOW + timedelta(days=1))
    assert maintenance.plan(db, now=NOW + timedelta(days=1)) == []
    r = CliRunner().invoke(build_cli(), ["maintenance", "--agent", "proj"])
    assert r.output == "proj: nothing below the thresholds\n"


def test_text_listing(db):
    r = CliRunner().invoke(build_cli(), ["maintenance", "--agent", "proj"])
    lines = r.output.splitlines()
    assert lines[0] == "keep     c:1      healthy card"
    assert lines[2] == "remove   c:2      guess about the build cache"
    assert lines[-1] == "7 proposals; run `reverie maintenance --apply --agent proj` to apply them"
