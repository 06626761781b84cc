"""Markdown memory files: export, round trip, edits, deletions, additions, restore, episodes."""

import json
from datetime import datetime, timedelta, timezone

import pytest
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate.store import open_db
from reverie.graph import episodes as ep
from reverie.graph import markdown as md
from reverie.graph import trust

T0 = datetime(2026, 2, 11, 20, 0, tzinfo=timezone.utc)
LATER = T0 + timedelta(days=3)


def add_card(db, statement, category, confidence, *, status="active", sessions=("s1",)):
    ts = T0.isoformat()
    cid = db.conn.execute(
        """INSERT INTO cards (statement, norm, category, confidence, original_confidence, status, sessions,
               created_at, said_at, last_seen_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (statement, statement.lower(), category, confidence, confidence, status, len(sessions), ts, ts, ts, ts),
    ).lastrowid
    for s in sessions:
        db.conn.execute("INSERT INTO card_sessions (card_id, session, said_at) VALUES (?, ?, ?)", (cid, s, ts))
    db.conn.commit()
    return cid


def redact(text):
    return text.replace("sk-live-123456", "[REDACTED:api_key]")


@pytest.fixture
def db(tmp_path):
    db = open_db(tmp_path / "agent.db")
    add_card(db, "Use pnpm instead of npm in the web repo", "preference", 0.9, sessions=("s1", "s2"))
    add_card(db, "auth-service runs on prod-k8s since February", "fact", 0.7)
    add_card(db, "Deploys go through make ship, never kubectl apply by hand", "decision", 1.0)
    add_card(db, "The old CI ran on Jenkins", "fact", 0.0, status="superseded")
    ep.record_episode(db, "sess-a", T0.isoformat(), "Worked on: the auth-service outage.", now=T0)
    ep.record_episode(db, "sess-b", (T0 + timedelta(days=1)).isoformat(), "Worked on: pnpm migration.", now=T0)
    db.conn.commit()
    ep.apply_decay(db, now=T0 + timedelta(days=1))
    trust.log_maintenance(db, target="card", target_id=4, action="archived", reason="confidence 0.15 < 0.2",
                          source="maintenance", at=T0.isoformat())
    db.conn.commit()
    return db


def exported(db, tmp_path, name="semantic.md"):
    """Export `db` to tmp_path/mem at T0: (the folder, its file `name`, that file's text)."""
    out = tmp_path / "mem"
    md.export_markdown(db, out, agent="web", now=T0)
    path = out / name
    return out, path, path.read_text()


def snapshot(db):
    tables = ["cards", "card_sessions", "card_entities", "card_trust", "feedback", "episodes", "maintenance_log"]
    return {t: db.conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}


def test_export_writes_the_three_files(db, tmp_path):
    out = tmp_path / "mem"
    res = md.export_markdown(db, out, agent="web", now=T0)
    assert res == {"directory": str(out), "cards": 3, "archived_cards": 1, "episodes": 2, "archived_episodes": 0}
    semantic = (out / "semantic.md").read_text()
    assert semantic == "\n".join([
        "# Semantic memory: web",
        "",
        "<!-- reverie:semantic agent=web exported=2026-02-11T20:00:00+00:00 -->",
        "",
        "> Edit a line to correct a memory, delete it to retire it, add `- statement` under a category to teach a "
        "new one, then run `reverie import --markdown DIR`. Keep the `<!-- c:N -->` markers: they tie lines to "
        "memories.",
        "",
        "## decision",
        "",
        "- [2026-02-11] [1.00] Deploys go through make ship, never kubectl apply by hand <!-- c:3 -->",
        "",
        "## fact",
        "",
        "- [2026-02-11] [0.70] auth-service runs on prod-k8s since February <!-- c:2 -->",
        "",
        "## preference",
        "",
        "- [2026-02-11] [0.90] Use pnpm instead of npm in the web repo <!-- c:1 -->",
        "",
        "## pattern",
        "",
        "",
        "## lesson",
        "",
        "",
        "## correction",
        "",
        "",
        "## Maintenance Log",
        "",
        "<!-- generated: what maintenance and consolidation removed, archived, pruned or reinforced, and why; "
        "edits here are ignored -->",
        "",
        '- 2026-02-11 20:00 c:4 archived (maintenance): confidence 0.15 < 0.2. "The old CI ran on Jenkins"',
        "",
    ])
    episodic = (out / "episodic.md").read_text()
    assert "### [salience: 1.00] [confidence: 0.70] [2026-02-12] [sess-b] <!-- e:2 -->\n\nWorked on: pnpm migration." \
        in episodic
    assert "### [salience: 0.80] [confidence: 0.65] [2026-02-11] [sess-a] <!-- e:1 -->\n\nWorked on: the auth-service " \
           "outage." in episodic
    assert episodic.rstrip().endswith("- (nothing yet)")
    archive = (out / "archive.md").read_text()
    assert "## Superseded\n\n- [2026-02-11] [0.00] [fact] The old CI ran on Jenkins <!-- c:4 -->" in archive
    assert "## Maintenance Log" in archive
    manifest = json.loads((out / ".reverie-export.json").read_text())
    assert manifest["cards"]["1"] == {"category": "preference", "confidence": "0.90",
                                      "statement": "Use pnpm instead of npm in the web repo"}


def test_round_trip_without_edits_changes_nothing(db, tmp_path):
    out = tmp_path / "mem"
    md.export_markdown(db, out, agent="web", now=T0)
    files = {p.name: p.read_text() for p in out.iterdir()}
    before = snapshot(db)
    res = md.import_markdown(db, out, agent="web", redact=redact, now=LATER)
    assert res == {"unchanged": 3, "edited": 0, "retired": 0, "added": 0, "restored": 0, "recategorized": 0,
                   "confidence_changed": 0, "duplicates": 0, "forgotten": 0, "uncategorized": 0, "redacted": 0,
                   "episodes_unchanged": 2, "episodes_edited": 0, "episodes_removed": 0, "episodes_added": 0,
                   "unreadable": {}, "changed": False}
    assert snapshot(db) == before
    assert {p.name: p.read_text() for p in out.iterdir()} == files


def test_edit_delete_and_add_applied(db, tmp_path):
    out, path, text = exported(db, tmp_path)
    # Edit card 1, delete card 2, add a line under "lesson" (with a secret that must be redacted).
    text = text.replace("Use pnpm instead of npm in the web repo <!-- c:1 -->",
                        "Use pnpm instead of npm in the web and docs repos <!-- c:1 -->")
    text = text.replace("- [2026-02-11] [0.70] auth-service runs on prod-k8s since February <!-- c:2 -->\n", "")
    text = text.replace("## lesson\n\n", "## lesson\n\n- Rotate the staging key sk-live-123456 every month\n")
    path.write_text(text)
    res = md.import_markdown(db, out, agent="web", redact=redact, now=LATER)
    assert {k: v for k, v in res.items() if v} == {"unchanged": 1, "edited": 1, "retired": 1, "added": 1,
                                                   "redacted": 1, "episodes_unchanged": 2, "changed": True}
    rows = db.conn.execute(
        "SELECT id, statement, category, confidence, original_confidence, status, superseded_by, sessions, writer "
        "FROM cards ORDER BY id").fetchall()
    assert rows == [
        (1, "Use pnpm instead of npm in the web repo", "preference", 0.0, 0.9, "superseded", 5, 2, None),
        (2, "auth-service runs on prod-k8s since February", "fact", 0.7, 0.7, "retired", None, 1, None),
        (3, "Deploys go through make ship, never kubectl apply by hand", "decision", 1.0, 1.0, "active", None, 1, None),
        (4, "The old CI ran on Jenkins", "fact", 0.0, 0.0, "superseded", None, 1, None),
        (5, "Use pnpm instead of npm in the web and docs repos", "preference", 1.0, 1.0, "active", None, 2, "human"),
        (6, "Rotate the staging key [REDACTED:api_key] every month", "lesson", 1.0, 1.0, "active", None, 1, "human"),
    ]
    # The replacement inherits the sessions of the card it replaces.
    assert db.conn.execute("SELECT session FROM card_sessions WHERE card_id = 5 ORDER BY session").fetchall() == \
        [("s1",), ("s2",)]
    log = db.conn.execute("SELECT target_id, action, reason, source, related_id FROM maintenance_log "
                          "WHERE source = 'import' ORDER BY id").fetchall()
    assert log == [
        (1, "edited", "line edited in semantic.md: replaced by a new card", "import", 5),
        (2, "retired", "line deleted from semantic.md", "import", None),
        (6, "added", "new line in semantic.md (line 23)", "import", None),
    ]
    # The files were re-exported: the new cards carry markers; importing again changes nothing.
    text = path.read_text()
    assert "Use pnpm instead of npm in the web and docs repos <!-- c:5 -->" in text
    assert "- [2026-02-14] [1.00] Rotate the staging key [REDACTED:api_key] every month <!-- c:6 -->" in text
    assert "sk-live" not in "".join(p.read_text() for p in out.iterdir())
    assert "c:2 retired (import): line deleted from semantic.md." in (out / "archive.md").read_text()
    before = snapshot(db)
    assert md.import_markdown(db, out, agent="web", redact=redact, now=LATER)["changed"] is False
    assert snapshot(db) == before


def test_confidence_category_restore_and_duplicates(db, tmp_path):
    out, path, text = exported(db, tmp_path)
    text = text.replace("[0.70] auth-service", "[0.40] auth-service")
    line3 = "- [2026-02-11] [1.00] Deploys go through make ship, never kubectl apply by hand <!-- c:3 -->\n"
    text = text.replace(line3, "").replace("## lesson\n\n", "## lesson\n\n" + line3)
    # Restore card 4 from the archive, add a duplicate of card 1, and a line under no category.
    text = text.replace("## pattern\n\n", "## pattern\n\n- [2026-02-11] [0.00] The old CI ran on Jenkins <!-- c:4 -->\n"
                        "- use pnpm instead of NPM in the web repo.\n")
    text = text.replace("# Semantic memory: web\n", "# Semantic memory: web\n\n- a note at the top\n")
    path.write_text(text)
    res = md.import_markdown(db, out, agent="web", redact=redact, now=LATER)
    assert {k: v for k, v in res.items() if v} == {
        "unchanged": 1, "confidence_changed": 1, "recategorized": 1, "restored": 1, "duplicates": 1,
        "added": 1, "uncategorized": 1, "episodes_unchanged": 2, "changed": True}
    rows = db.conn.execute("SELECT id, category, confidence, status FROM cards ORDER BY id").fetchall()
    assert rows == [(1, "preference", 0.9, "active"), (2, "fact", 0.4, "active"), (3, "lesson", 1.0, "active"),
                    (4, "fact", 0.0, "active"), (5, "fact", 1.0, "active")]
    assert db.conn.execute("SELECT statement FROM cards WHERE id = 5").fetchone() == ("a note at the top",)


def test_episode_edit_delete_add(db, tmp_path):
    out, path, text = exported(db, tmp_path, "episodic.md")
    text = text.replace("Worked on: pnpm migration.", "Worked on: the pnpm migration of the web repo.")
    text = text.replace("### [salience: 0.80] [confidence: 0.65] [2026-02-11] [sess-a] <!-- e:1 -->\n\n"
                        "Worked on: the auth-service outage.\n", "")
    text = text.replace("## Maintenance Log", "### [salience: 1.00] [confidence: 1.00] [2026-02-13] [offsite]\n\n"
                        "Planned the Q2 roadmap with the team.\n\n## Maintenance Log")
    path.write_text(text)
    res = md.import_markdown(db, out, agent="web", redact=redact, now=LATER)
    assert (res["episodes_edited"], res["episodes_removed"], res["episodes_added"]) == (1, 1, 1)
    rows = db.conn.execute("SELECT session, summary, status, writer, salience, confidence FROM episodes ORDER BY id"
                           ).fetchall()
    assert rows == [
        ("sess-a", "Worked on: the auth-service outage.", "removed", "offline", 0.8, 0.65),
        ("sess-b", "Worked on: the pnpm migration of the web repo.", "active", "human", 1.0, 0.7),
        ("offsite", "Planned the Q2 roadmap with the team.", "active", "human", 1.0, 1.0),
    ]
    # A person's episode does not count as a later session for the others.
    ep.apply_decay(db, now=LATER)
    assert db.conn.execute("SELECT salience FROM episodes WHERE session = 'sess-b'").fetchone() == (1.0,)


def test_import_needs_a_manifest_of_the_same_agent(db, tmp_path):
    with pytest.raises(md.MarkdownError, match="run `reverie export --markdown"):
        md.import_markdown(db, tmp_path, agent="web", redact=redact)
    md.export_markdown(db, tmp_path / "m", agent="web", now=T0)
    with pytest.raises(md.MarkdownError, match="holds an export of agent 'web', not 'api'"):
        md.import_markdown(db, tmp_path / "m", agent="api", redact=redact)


def test_cli_export_import(reverie_home, tmp_path, monkeypatch):
    from reverie.consolidate.paths import agent_db_path

    db = open_db(agent_db_path(reverie_home, "web"))
    add_card(db, "Use pnpm instead of npm in the web repo", "preference", 0.9)
    out = tmp_path / "mem"
    r = CliRunner().invoke(build_cli(), ["export", "--markdown", str(out), "--agent", "web", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {"directory": str(out), "cards": 1, "archived_cards": 0, "episodes": 0,
                                    "archived_episodes": 0, "agent": "web"}
    path = out / "semantic.md"
    path.write_text(path.read_text().replace("## fact\n\n", "## fact\n\n- The web repo deploys to vercel\n"))
    # Redaction goes through redact.engine; a stand-in keeps this test fast and offline.
    monkeypatch.setattr("reverie.consolidate.commands.trust_cmd._redactor", lambda app: redact)
    r = CliRunner().invoke(build_cli(), ["import", "--markdown", str(out), "--agent", "web"])
    assert r.exit_code == 0, r.output
    assert r.output == "web: 1 added; files re-exported\n"
    r = CliRunner().invoke(build_cli(), ["import", "--markdown", str(out), "--agent", "web"])
    assert r.output == "web: no edits found, nothing changed\n"


def test_retired_card_stops_feeding_relations_and_a_restatement_is_a_new_card(tmp_path):
    from reverie.graph.merge import merge_card
    from reverie.graph.model import EntityRef, NewCard, RelationRef
    from reverie.graph.recall import entity_relations

    db = open_db(tmp_path / "agent2.db")

    def runs_on(session, said_at):
        return NewCard(statement="auth-service runs on prod-k8s.", category="fact", confidence=0.8,
                       session=session, said_at=said_at,
                       entities=[EntityRef("auth-service", "service"), EntityRef("prod-k8s", "host")],
                       relations=[RelationRef("auth-service", "runs_on", "prod-k8s")])

    first = merge_card(db, runs_on("s1", "2026-02-01T10:00:00Z"), now=T0)
    assert [(r["subject"], r["verb"], r["object"], r["weight"]) for r in entity_relations(db.conn, 1, 10)] == [
        ("auth-service", "runs_on", "prod-k8s", 1)]
    out = tmp_path / "mem"
    md.export_markdown(db, out, agent="web", now=T0)
    path = out / "semantic.md"
    path.write_text("".join(ln for ln in path.read_text().splitlines(True) if f"<!-- c:{first.card_id} -->" not in ln))
    assert md.import_markdown(db, out, agent="web", redact=redact, now=LATER)["retired"] == 1
    assert db.conn.execute("SELECT status FROM cards").fetchall() == [("retired",)]
    # backed only by the retired card: no relation left, recall shows nothing
    assert db.conn.execute("SELECT * FROM relations").fetchall() == []
    assert entity_relations(db.conn, 1, 10) == []
    # the point said again later: a new active card, the retired one stays retired and untouched
    again = merge_card(db, runs_on("s2", "2026-02-20T10:00:00Z"), now=LATER)
    assert again.action == "inserted" and again.card_id != first.card_id
    assert db.conn.execute("SELECT id, status, sessions FROM cards ORDER BY id").fetchall() == [
        (first.card_id, "retired", 1), (again.card_id, "active", 1)]
    assert [(r["subject"], r["verb"], r["object"], r["weight"]) for r in entity_relations(db.conn, 1, 10)] == [
        ("auth-service", "runs_on", "prod-k8s", 1)]
    # moved back into semantic.md by a person: it counts again
    trust.set_card_status(db, first.card_id, "active", at=LATER.isoformat())
    db.conn.commit()
    assert [r["weight"] for r in entity_relations(db.conn, 1, 10)] == [2]
    db.close()


def test_old_export_does_not_bring_a_forgotten_card_back(db, tmp_path):
    from reverie.graph import forget

    out = tmp_path / "mem"
    md.export_markdown(db, out, agent="web", now=T0)
    old = (out / "semantic.md").read_text()
    forget.forget_cards(db, [2], now=LATER.isoformat())
    md.export_markdown(db, out, agent="web", now=LATER)
    # the person restores the old file (marker c:2 points at a card that is gone) and adds the
    # forgotten line again by hand as well
    (out / "semantic.md").write_text(old.replace(
        "## fact\n\n", "## fact\n\n- auth-service runs on prod-k8s since February\n"))
    res = md.import_markdown(db, out, agent="web", redact=redact, now=LATER)
    assert {k: v for k, v in res.items() if v} == {"unchanged": 2, "forgotten": 2, "episodes_unchanged": 2,
                                                   "changed": True}
    assert db.conn.execute("SELECT id FROM cards WHERE statement LIKE 'auth-service%'").fetchall() == []


def test_new_episode_session_and_date_are_scrubbed(db, tmp_path):
    out, path, text = exported(db, tmp_path, "episodic.md")
    text = text.replace(
        "### [salience: 1.00]",
        "### [salience: 0.90] [confidence: 0.80] [2026-02-13 sk-live-123456] [deploy sk-live-123456]\n\n"
        "Worked on: rotating sk-live-123456.\n\n### [salience: 1.00]", 1)
    path.write_text(text)
    res = md.import_markdown(db, out, agent="web", redact=redact, now=LATER)
    assert (res["episodes_added"], res["redacted"]) == (1, 3)
    rows = db.conn.execute("SELECT session, started_at, summary, writer FROM episodes WHERE id = 3").fetchall()
    assert rows == [("deploy [REDACTED:api_key]", "2026-02-14T20:00:00+00:00",
                     "Worked on: rotating [REDACTED:api_key].", "human")]
    dump = "".join(str(r) for t in ("episodes", "maintenance_log", "trust_meta")
                   for r in db.conn.execute(f"SELECT * FROM {t}"))
    assert "sk-live" not in dump
    assert "sk-live" not in "".join(p.read_text() for p in out.iterdir())
