"""Claude Code's auto memory as cards (consolidate.auto_memory, graph.auto_memory) and
`reverie export --claude-memory`.

Each test indexes one transcript of a project whose directory exists (so its `.claude/settings.json`
can be written) under $CLAUDE_CONFIG_DIR/projects (the autouse fixture points it at a tmp dir), writes
a memory folder beside the transcript and syncs it; assertions are on whole rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

from transcripts import db_bytes, line, write

PNPM_FILE = """---
name: pnpm only
description: use pnpm, never npm, in this repo
type: feedback
---
This repo uses **pnpm**, not npm: the lockfile is `pnpm-lock.yaml`, so never generate a package-lock.json.

**Why:** the workspace has 14 packages.
"""
DEPLOY_FILE = """---
name: Deploy target
description: where billing deploys
type: project
---
# Deploys

billing deploys to the fly.io app acme-billing; its DB_PASSWORD=hunter2-Xq9!zz lives in fly secrets.
"""
INDEX = """# Memory index
- [pnpm only](feedback_pnpm.md) — use pnpm, never npm
- [Deploy target](project_deploy.md) — where billing deploys
- Always run the export tests before pushing invoice changes.
"""
NOW = "2026-04-01T00:00:00.000Z"
LATER = "2026-04-02T00:00:00.000Z"


@pytest.fixture
def project(tmp_path, reverie_home):
    """(home, agent id, project cwd, memory folder, claude config dir) with one indexed session."""
    from reverie.consolidate.index import index_all

    config = Path(os.environ["CLAUDE_CONFIG_DIR"])
    cwd = tmp_path / "work" / "shop"
    cwd.mkdir(parents=True)
    folder = config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(cwd))
    write(folder / "s-1.jsonl",
          line("user", "u1", "Use pnpm, not npm, in this repo: the lockfile is pnpm-lock.yaml.", cwd=str(cwd)),
          line("assistant", "a1", [{"type": "text", "text": "Understood: pnpm only, never npm."}], cwd=str(cwd),
               parent="u1", ts="2026-03-01T10:00:05.000Z"))
    index_all(reverie_home)
    memory = folder / "memory"
    memory.mkdir()
    (memory / "MEMORY.md").write_text(INDEX)
    (memory / "feedback_pnpm.md").write_text(PNPM_FILE)
    (memory / "project_deploy.md").write_text(DEPLOY_FILE)
    return reverie_home, "shop", cwd, memory, config


def _sync(home: Path, agent: str, now: str = NOW) -> dict:
    from reverie.consolidate.auto_memory import sync_agent
    from reverie.consolidate.index import load_redactor
    from reverie.consolidate.paths import agent_db_path
    from reverie.consolidate.store import open_db

    db = open_db(agent_db_path(home, agent))
    try:
        return sync_agent(home, agent, db, now=now, redactor=lambda: load_redactor(home))
    finally:
        db.close()


def _conn(home: Path, agent: str = "shop") -> sqlite3.Connection:
    return sqlite3.connect(home / "agents" / agent / "agent.db")


def _memory_rows(home: Path) -> list[tuple]:
    with _conn(home) as conn:
        return conn.execute(
            """SELECT a.entry, a.name, a.description, a.type, a.state, c.statement, c.category, c.confidence, c.pinned,
                      c.writer, c.status, c.sessions
               FROM auto_memory a JOIN cards c ON c.id = a.card_id ORDER BY a.entry""").fetchall()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


PNPM_STATEMENT = "This repo uses pnpm, not npm: the lockfile is pnpm-lock.yaml, so never generate a package-lock.json."
DEPLOY_STATEMENT = ("billing deploys to the fly.io app acme-billing; its DB_PASSWORD=[REDACTED:password] lives in "
                    "fly secrets.")
BARE = "Always run the export tests before pushing invoice changes."


def test_migration_on_a_blank_db_and_on_an_upgrade(tmp_path):
    from reverie.consolidate.store import open_db

    db = open_db(tmp_path / "blank.db")
    cols = {t: [(r[1], r[2], r[3], r[5]) for r in db.execute(f"PRAGMA table_info({t})").fetchall()]
            for t in ("auto_memory", "auto_memory_covers")}
    assert cols == {
        "auto_memory": [("card_id", "INTEGER", 0, 1), ("source", "TEXT", 1, 0), ("folder", "TEXT", 1, 0),
                        ("entry", "TEXT", 1, 0), ("name", "TEXT", 0, 0), ("description", "TEXT", 0, 0),
                        ("type", "TEXT", 0, 0), ("sha256", "TEXT", 1, 0), ("mtime", "TEXT", 0, 0),
                        ("state", "TEXT", 1, 0), ("seen_at", "TEXT", 1, 0), ("updated_at", "TEXT", 1, 0)],
        "auto_memory_covers": [("card_id", "INTEGER", 0, 1), ("memory_card_id", "INTEGER", 1, 0)]}
    # an agent db from before m005: the tables and the migration row gone, a card in it
    db.execute("INSERT INTO cards (statement, norm, category, confidence, original_confidence, created_at, said_at, "
               "last_seen_at, updated_at) VALUES ('uses pnpm', 'uses pnpm', 'fact', 0.8, 0.8, 'x', 'x', 'x', 'x')")
    db.execute("DROP TABLE auto_memory")
    db.execute("DROP TABLE auto_memory_covers")
    db.execute("DELETE FROM _sqlite_migrations WHERE name = 'm005_claude_auto_memory'")
    db.conn.commit()
    db.close()
    from reverie.graph.recall import _auto_memory_hidden
    from reverie.graph.db import connect_readonly

    old = connect_readonly(tmp_path / "blank.db", 1.0)
    assert _auto_memory_hidden(old) == set()          # recall on a db not yet migrated: nothing hidden
    old.close()
    db = open_db(tmp_path / "blank.db")
    assert [(r[1], r[2]) for r in db.execute("PRAGMA table_info(auto_memory_covers)").fetchall()] == [
        ("card_id", "INTEGER"), ("memory_card_id", "INTEGER")]
    assert db.execute("SELECT statement, category FROM cards").fetchall() == [("uses pnpm", "fact")]
    assert [r[0] for r in db.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = 'reverie.graph' "
                                     "ORDER BY id").fetchall()][-1] == "m005_claude_auto_memory"
    db.close()


def test_entries_become_pinned_high_confidence_cards_redacted(project):
    home, agent, _cwd, memory, _config = project
    summary = _sync(home, agent)
    bare_digest = hashlib.sha256(BARE.lower().encode()).hexdigest()
    assert summary == {"folders": [{"folder": str(memory), "enabled": True, "why": "default", "entries": 3,
                                    "skipped": {}, "added": 3, "updated": 0, "unchanged": 0, "retired": 0,
                                    "restored": 0, "forgotten": 0}],
                       "added": 3, "updated": 0, "unchanged": 0, "retired": 0, "restored": 0, "forgotten": 0,
                       "covered": 0}
    assert _memory_rows(home) == [
        (f"MEMORY.md#{bare_digest[:12]}", "", "", "", "present", BARE, "fact", 0.95, 1, "claude-auto-memory",
         "active", 1),
        ("feedback_pnpm.md", "pnpm only", "use pnpm, never npm, in this repo", "feedback", "present",
         PNPM_STATEMENT, "preference", 0.95, 1, "claude-auto-memory", "active", 1),
        ("project_deploy.md", "Deploy target", "where billing deploys", "project", "present", DEPLOY_STATEMENT,
         "fact", 0.95, 1, "claude-auto-memory", "active", 1)]
    with _conn(home) as conn:
        assert conn.execute("SELECT entry, sha256, mtime, folder, source FROM auto_memory ORDER BY entry").fetchall()[1:] == [
            ("feedback_pnpm.md", _sha(memory / "feedback_pnpm.md"), _mtime(memory / "feedback_pnpm.md"), str(memory),
             "claude-auto-memory"),
            ("project_deploy.md", _sha(memory / "project_deploy.md"), _mtime(memory / "project_deploy.md"),
             str(memory), "claude-auto-memory")]
    assert b"hunter2-Xq9!zz" not in db_bytes(home / "agents" / agent / "agent.db")
    # a second sync of unchanged files changes nothing
    again = _sync(home, agent, LATER)
    assert {k: again[k] for k in ("added", "updated", "unchanged", "retired", "restored")} == \
        {"added": 0, "updated": 0, "unchanged": 3, "retired": 0, "restored": 0}


def _mtime(path: Path) -> str:
    import datetime as dt

    from reverie.graph.model import utc_iso

    return utc_iso(dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc))


def test_changed_file_updates_its_card_deleted_retires_returned_restores(project):
    home, agent, _cwd, memory, _config = project
    _sync(home, agent)
    with _conn(home) as conn:
        ids = dict(conn.execute("SELECT entry, card_id FROM auto_memory").fetchall())
    (memory / "feedback_pnpm.md").write_text(PNPM_FILE.replace("never generate", "never commit"))
    (memory / "project_deploy.md").unlink()
    summary = _sync(home, agent, LATER)
    assert {k: summary[k] for k in ("added", "updated", "unchanged", "retired", "restored")} == \
        {"added": 0, "updated": 1, "unchanged": 1, "retired": 1, "restored": 0}
    rows = {r[0]: r for r in _memory_rows(home)}
    assert rows["feedback_pnpm.md"][4:] == ("present", PNPM_STATEMENT.replace("never generate", "never commit"),
                                            "preference", 0.95, 1, "claude-auto-memory", "active", 1)
    assert rows["project_deploy.md"][4:] == ("deleted", DEPLOY_STATEMENT, "fact", 0.95, 1, "claude-auto-memory",
                                             "retired", 1)
    with _conn(home) as conn:
        assert dict(conn.execute("SELECT entry, card_id FROM auto_memory").fetchall()) == ids   # same cards
        assert conn.execute("SELECT updated_at, sha256 FROM auto_memory WHERE entry = 'feedback_pnpm.md'").fetchone() \
            == ("2026-04-02T00:00:00.000Z", _sha(memory / "feedback_pnpm.md"))
    (memory / "project_deploy.md").write_text(DEPLOY_FILE)
    back = _sync(home, agent, "2026-04-03T00:00:00.000Z")
    assert (back["restored"], back["retired"]) == (1, 0)
    assert {r[0]: r[4:11] for r in _memory_rows(home)}["project_deploy.md"] == (
        "present", DEPLOY_STATEMENT, "fact", 0.95, 1, "claude-auto-memory", "active")


@pytest.mark.parametrize("switch", ["user_settings", "project_settings", "env"])
def test_disable_switches_retire_the_cards(project, monkeypatch, switch):
    home, agent, cwd, memory, config = project
    _sync(home, agent)
    if switch == "user_settings":
        (config / "settings.json").write_text(json.dumps({"autoMemoryEnabled": False}))
        why = f"autoMemoryEnabled in {config / 'settings.json'}"
    elif switch == "project_settings":
        (cwd / ".claude").mkdir()
        (cwd / ".claude" / "settings.json").write_text(json.dumps({"autoMemoryEnabled": False}))
        why = f"autoMemoryEnabled in {cwd / '.claude' / 'settings.json'}"
    else:
        monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
        why = "$CLAUDE_CODE_DISABLE_AUTO_MEMORY"
    summary = _sync(home, agent, LATER)
    assert summary["folders"] == [{"folder": str(memory), "enabled": False, "why": why, "entries": 0, "skipped": {},
                                   "added": 0, "updated": 0, "unchanged": 0, "retired": 3, "restored": 0,
                                   "forgotten": 0}]
    assert [(r[0][:9], r[4], r[10]) for r in _memory_rows(home)] == [
        ("MEMORY.md", "disabled", "retired"), ("feedback_", "disabled", "retired"), ("project_d", "disabled", "retired")]


def test_auto_memory_directory_is_honoured(project, tmp_path):
    home, agent, cwd, memory, config = project
    custom = tmp_path / "elsewhere"
    custom.mkdir()
    (custom / "note.md").write_text("---\nname: n\ndescription: d\ntype: user\n---\nThe user prefers tabs over spaces.\n")
    (cwd / ".claude").mkdir()
    (cwd / ".claude" / "settings.local.json").write_text(json.dumps({"autoMemoryDirectory": "../../elsewhere"}))
    summary = _sync(home, agent)
    assert [(f["folder"], f["entries"], f["added"]) for f in summary["folders"]] == [(str(cwd / "../../elsewhere"), 1, 1)]
    assert [(r[0], r[5], r[6]) for r in _memory_rows(home)] == [("note.md", "The user prefers tabs over spaces.",
                                                                "preference")]


def test_recall_leaves_auto_memory_and_the_cards_it_covers_to_claude_code(project):
    from reverie.graph.auto_memory import memory_labels
    from reverie.graph.db import connect_readonly
    from reverie.graph.merge import merge_card
    from reverie.graph.model import NewCard
    from reverie.graph.recall import recall
    from reverie.consolidate.store import open_db

    home, agent, _cwd, _memory, _config = project
    _sync(home, agent)
    path = home / "agents" / agent / "agent.db"
    db = open_db(path)
    same = merge_card(db, NewCard(statement="This repo uses pnpm, not npm: the lockfile is pnpm-lock.yaml.",
                                  category="preference", confidence=0.8, session="s-1",
                                  said_at="2026-03-01T10:00:00.000Z"), now=NOW)
    other = merge_card(db, NewCard(statement="Invoice PDFs are rendered by a BullMQ worker in billing.",
                                   category="fact", confidence=0.8, session="s-1", said_at="2026-03-01T10:00:00.000Z"),
                       now=NOW)
    db.close()
    assert (same.action, other.action) == ("inserted", "inserted")   # never merged into an auto-memory card
    summary = _sync(home, agent, LATER)
    assert summary["covered"] == 1
    with _conn(home) as conn:
        pnpm = conn.execute("SELECT card_id FROM auto_memory WHERE entry = 'feedback_pnpm.md'").fetchone()[0]
        assert conn.execute("SELECT card_id, memory_card_id FROM auto_memory_covers").fetchall() == [(same.card_id, pnpm)]
    out = recall(path, "which package manager: pnpm or npm? the lockfile pnpm-lock.yaml; invoice PDFs BullMQ")
    shown = [c["id"] for c in out["standing"] + out["notes"]]
    assert shown == [other.card_id]
    primer = recall(path, "", kind="primer")
    assert [c["id"] for c in primer["standing"]] == []
    conn = connect_readonly(path, 1.0)
    assert memory_labels(conn, [same.card_id, other.card_id, pnpm]) == {
        same.card_id: {"source": "reverie", "covered_by": pnpm},
        pnpm: {"source": "claude-auto-memory", "entry": "feedback_pnpm.md"}}
    conn.close()
    # the file deleted: its card retires, the cover goes, reverie's own card is recalled again
    (_memory / "feedback_pnpm.md").unlink()
    assert _sync(home, agent, "2026-04-03T00:00:00.000Z")["covered"] == 0
    out = recall(path, "which package manager: pnpm or npm? the lockfile pnpm-lock.yaml")
    assert same.card_id in [c["id"] for c in out["standing"] + out["notes"]]


def test_a_forgotten_memory_is_not_read_again(project):
    from reverie.graph.forget import forget_cards
    from reverie.consolidate.store import open_db

    home, agent, _cwd, _memory, _config = project
    _sync(home, agent)
    with _conn(home) as conn:
        cid = conn.execute("SELECT card_id FROM auto_memory WHERE entry = 'project_deploy.md'").fetchone()[0]
    db = open_db(home / "agents" / agent / "agent.db")
    forget_cards(db, [cid], now=NOW)
    db.close()
    summary = _sync(home, agent, LATER)
    assert {k: summary[k] for k in ("added", "unchanged", "forgotten")} == {"added": 0, "unchanged": 2, "forgotten": 1}
    assert [r[0] for r in _memory_rows(home)][1:] == ["feedback_pnpm.md"]


def test_consolidation_runs_the_sync(project):
    from reverie.consolidate.pipeline import consolidate_agent

    home, agent, _cwd, memory, _config = project
    summary = consolidate_agent(home, agent, writer="offline")
    assert {k: v for k, v in summary["auto_memory"].items() if k != "folders"} == {
        "added": 3, "updated": 0, "unchanged": 0, "retired": 0, "restored": 0, "forgotten": 0,
        "covered": summary["auto_memory"]["covered"]}
    assert [f["folder"] for f in summary["auto_memory"]["folders"]] == [str(memory)]
    assert len(_memory_rows(home)) == 3


def test_export_writes_one_topic_file_and_one_index_line_idempotently(project):
    from reverie.consolidate.auto_memory import INDEX_LINE
    from reverie.consolidate.cli import main

    home, agent, _cwd, memory, _config = project
    from reverie.consolidate.pipeline import consolidate_agent

    consolidate_agent(home, agent, writer="offline")
    before = {p.name: p.read_bytes() for p in memory.iterdir()}
    with pytest.raises(SystemExit) as done:
        main(["export", "--claude-memory", "--agent", agent, "--json"])
    assert done.value.code in (None, 0)
    after = {p.name: p.read_bytes() for p in memory.iterdir()}
    assert sorted(after) == ["MEMORY.md", "feedback_pnpm.md", "project_deploy.md", "reverie.md"]
    assert after["MEMORY.md"] == (INDEX + INDEX_LINE + "\n").encode()
    assert {k: after[k] for k in ("feedback_pnpm.md", "project_deploy.md")} == \
        {k: before[k] for k in ("feedback_pnpm.md", "project_deploy.md")}
    with _conn(home) as conn:
        hidden = {r[0] for r in conn.execute("SELECT card_id FROM auto_memory UNION SELECT card_id FROM auto_memory_covers")}
        cards = [r for r in conn.execute("SELECT id, statement, category FROM cards WHERE status = 'active' "
                                         "ORDER BY sessions DESC, confidence DESC, said_at DESC, id") if r[0] not in hidden]
    assert after["reverie.md"].decode() == "\n".join(
        ["---", "name: reverie", "description: Durable memories reverie consolidated from past sessions of shop "
         "(decisions, facts, preferences); written by `reverie export --claude-memory`", "type: project", "---", "",
         "What reverie learned from earlier sessions in this project. This file is rewritten by `reverie export "
         "--claude-memory`; edit memories with `reverie export --markdown` instead.", ""]
        + [f"- {s} [#{i}, {c}]" for i, s, c in cards]) + "\n"
    stamps = {p.name: p.stat().st_mtime_ns for p in memory.iterdir()}
    with pytest.raises(SystemExit):
        main(["export", "--claude-memory", "--agent", agent])
    assert {p.name: p.read_bytes() for p in memory.iterdir()} == after           # nothing changed
    assert {p.name: p.stat().st_mtime_ns for p in memory.iterdir()} == stamps    # nothing rewritten
    # our own file and index line are never read back as auto memory
    summary = _sync(home, agent, LATER)
    assert {k: summary[k] for k in ("added", "unchanged")} == {"added": 0, "unchanged": 3}


def test_index_line_is_kept_single_and_other_lines_untouched():
    from reverie.consolidate.auto_memory import INDEX_LINE, _with_index_line

    text = "# idx\n- [a](a.md) — x\n- [reverie](reverie.md) — old words\nfree line\n- [reverie](reverie.md) — dup\n"
    assert _with_index_line(text) == f"# idx\n- [a](a.md) — x\n{INDEX_LINE}\nfree line\n"
    assert _with_index_line("") == INDEX_LINE + "\n"
    assert _with_index_line("no newline at end") == "no newline at end\n" + INDEX_LINE + "\n"
    assert _with_index_line(_with_index_line(text)) == _with_index_line(text)


def test_export_refuses_when_auto_memory_is_off(project, monkeypatch, capsys):
    from reverie.consolidate.cli import main

    home, agent, _cwd, memory, _config = project
    monkeypatch.setenv("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
    with pytest.raises(SystemExit) as done:
        main(["export", "--claude-memory", "--agent", agent])
    assert done.value.code == 1
    assert capsys.readouterr().err.strip() == (
        f"Error: Claude Code's auto memory is switched off for {_cwd} ($CLAUDE_CODE_DISABLE_AUTO_MEMORY): it would "
        "not load the file. Switch it on, or use `reverie export --markdown DIR`.")
    assert sorted(p.name for p in memory.iterdir()) == ["MEMORY.md", "feedback_pnpm.md", "project_deploy.md"]
