"""Secrets learned later reach every stored text (consolidate.index.rescan_agent), and transcript
strings stored verbatim (ids, model, version, timestamps, line types) are shape-checked."""

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from reverie.consolidate.index import index_all
from reverie.consolidate.index_rescan import rescan_agent
from reverie.consolidate.index_shape import shape_checked
from reverie.consolidate.paths import agent_db_path, secrets_dir
from reverie.sources.claude_code import parse_line
from reverie.consolidate.store import open_db
from reverie.graph import episodes as ep
from reverie.graph import trust
from reverie.graph.merge import merge_card
from reverie.graph.model import EntityRef, NewCard
from reverie.redact.memory import SecretMemory
from transcripts import db_bytes

SECRET = "ghp_Zq8vT3kLmN9pR2sW5xY7aB4cD6eF1gH0jK2m"
NOW = datetime(2026, 3, 1, tzinfo=timezone.utc)


def _remember(home: Path) -> None:
    mem = SecretMemory(secrets_dir(home))
    try:
        assert mem.remember([SECRET]) == 1
    finally:
        mem.close()


def test_secret_learned_elsewhere_is_scrubbed_from_graph_and_trust_text(reverie_home):
    path = agent_db_path(reverie_home, "demo")
    path.parent.mkdir(parents=True, exist_ok=True)
    db = open_db(path)
    assert rescan_agent(reverie_home, "demo") == 0          # nothing remembered yet: generation stored
    res = merge_card(db, NewCard(statement=f"The deploy token {SECRET} lives in vault.", category="fact",
                                 confidence=0.8, session="s1", said_at="2026-02-01T10:00:00Z",
                                 entities=[EntityRef(f"vault {SECRET}", "service")]), now=NOW)
    ep.record_episode(db, "s1", "2026-02-01T10:00:00Z", f"Worked on: token {SECRET}.", now=NOW)
    trust.record_feedback(db, res.card_id, "harmful", source="user", at=NOW, note=f"leaked {SECRET}")
    db.conn.commit()
    db.close()
    assert SECRET.encode() in db_bytes(path)
    _remember(reverie_home)         # as `reverie redact --remember` or consolidation's redactor would

    changed = rescan_agent(reverie_home, "demo")

    assert changed == 5        # card, feedback note, entity, its alias, episode
    assert SECRET.encode() not in db_bytes(path)
    assert SECRET.lower().encode() not in db_bytes(path).lower()
    db = open_db(path)
    statement, norm = db.conn.execute("SELECT statement, norm FROM cards").fetchone()
    assert statement == "The deploy token [REDACTED:remembered] lives in vault."
    assert SECRET.lower() not in norm
    assert db.conn.execute("SELECT rowid FROM cards_fts WHERE cards_fts MATCH 'remembered'").fetchall() == [(1,)]
    assert db.conn.execute("SELECT summary FROM episodes").fetchall() == [("Worked on: token [REDACTED:remembered].",)]
    assert db.conn.execute("SELECT note FROM feedback").fetchall() == [("leaked [REDACTED:remembered]",)]
    # the append-only trigger is back
    with pytest.raises(Exception, match="append-only"):
        db.conn.execute("UPDATE feedback SET kind = 'helpful'")
    db.close()
    assert rescan_agent(reverie_home, "demo") == 0          # generation already rescanned


def test_index_run_rescans_when_the_memory_learned_elsewhere(reverie_home, tmp_path):
    projects = tmp_path / "projects"
    f = projects / "-home-dev-shop" / "s-1.jsonl"
    f.parent.mkdir(parents=True)
    msg = {"role": "user", "content": f"remember {SECRET} please"}
    f.write_text(json.dumps({"type": "user", "uuid": "u1", "sessionId": "s-1", "cwd": "/home/dev/shop",
                             "timestamp": "2026-03-01T10:00:00.000Z", "message": msg}) + "\n")

    index_all(reverie_home, projects, redactor=_NullRedactor())
    dbs = list(Path(reverie_home).rglob("*.db"))
    assert dbs and any(SECRET.encode() in db_bytes(p) for p in dbs)
    _remember(reverie_home)
    s = index_all(reverie_home, projects, redactor=_NullRedactor())
    assert s["rescanned"] >= 1
    assert not any(SECRET.encode() in db_bytes(p) for p in Path(reverie_home).rglob("*.db"))


class _NullRedactor:
    """Stands in for a redactor that missed the value (detection is not what is tested here)."""

    class _Result:
        def __init__(self, text):
            self.text = text
            self.findings = []

    def redact(self, text, *a, **k):
        return self._Result(text)

    def scrub(self, text):
        return text, 0


def test_secret_in_transcript_id_fields_never_lands_on_disk(reverie_home, tmp_path):
    projects = tmp_path / "projects"
    f = projects / "-home-dev-shop" / "s-1.jsonl"
    f.parent.mkdir(parents=True)
    bad = "sk-" + "A" * 10 + " " + SECRET            # not an id shape (space, too)
    lines = [
        {"type": "user", "uuid": bad, "sessionId": bad, "cwd": "/home/dev/shop", "version": bad,
         "timestamp": bad, "message": {"role": "user", "content": "hello"}},
        {"type": "assistant", "uuid": "a1", "parentUuid": bad, "sessionId": "s-1", "cwd": "/home/dev/shop",
         "timestamp": "2026-03-01T10:00:01.000Z",
         "message": {"role": "assistant", "id": bad, "model": bad, "type": "message",
                     "content": [{"type": "tool_use", "id": bad, "name": "Bash", "input": {"command": "ls"}}]}},
        {"type": "system", "subtype": SECRET, "uuid": "x1", "sessionId": "s-1", "timestamp": "2026-03-01T10:00:02Z"},
        {"type": "weird-" + SECRET, "uuid": "x2", "sessionId": "s-1"},
    ]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    summary = index_all(reverie_home, projects)
    assert SECRET not in json.dumps(summary)
    for p in Path(reverie_home).rglob("*"):
        if p.is_file():
            assert SECRET.encode() not in p.read_bytes(), p


def test_shape_checked_keeps_good_ids_and_hashes_bad_ones():
    good = parse_line(json.dumps({"type": "user", "uuid": "0b6f2c1e-1111-2222-3333-444455556666",
                                  "sessionId": "s-1", "timestamp": "2026-03-01T10:00:00.000Z", "version": "2.1.39",
                                  "message": {"role": "user", "content": "hi"}}).encode())
    p = shape_checked(good)
    assert (p.record.uuid, p.record.session_id, p.record.timestamp, p.record.version) == (
        "0b6f2c1e-1111-2222-3333-444455556666", "s-1", "2026-03-01T10:00:00.000Z", "2.1.39")
    bad = parse_line(json.dumps({"type": "user", "uuid": "x" * 129, "sessionId": "a b",
                                 "timestamp": "yesterday", "message": {"role": "user", "content": "hi"}}).encode())
    p = shape_checked(bad)
    assert p.record.uuid.startswith("h:") and len(p.record.uuid) == 34
    assert p.record.session_id.startswith("h:") and p.record.timestamp is None
