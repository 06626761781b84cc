"""The index across harnesses (issue 16) and Claude Code 2.1's formats in the index (issue 15):
per-harness watermarks and line accounting, the `harness` column, one agent per working directory
whatever the harness, the harness named by `agents`, `show conversation` and the recall log, titles
by rank, queued prompts as human turns, injected context stored but never a passage; and every
line of every real session accounted for, with no `unknown:*` kind."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from reverie.consolidate import agents
from reverie.consolidate.commands import build_cli
from reverie.consolidate.conversation import rebuild
from reverie.consolidate.index import harness_roots, index_all
from reverie.consolidate.paths import agent_db_path, recall_log_path
from reverie.consolidate.passages import cut_passages, load_messages
from reverie.consolidate.store import open_db
from transcripts import line, write

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "fixtures"
REAL = SHARED / "real-sessions"
CWD = "/home/dev/shop"
S_CLAUDE = "4b1c0d6e-1111-4a2b-9c3d-5e6f7a8b9c0d"
S_CODEX = "019ab760-3d78-7fd0-9ea1-4c39e889b87b"
S_GEMINI = "7d2e4f10-2222-4c3d-8e9f-0a1b2c3d4e5f"


def _rows(db_path: Path, sql: str, *args) -> list[tuple]:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _accounted(part: dict) -> int:
    return sum(sum(outcomes.values()) for outcomes in part["lines"].values())


# ---------------------------------------------------------------------------------------------
# Claude Code 2.1 lines in the index


def _att(uuid: str, att: dict, parent: str | None = None, ts: str = "2026-03-01T10:00:01.000Z") -> str:
    return json.dumps({"parentUuid": parent, "isSidechain": False, "cwd": CWD, "sessionId": S_CLAUDE,
                       "version": "2.1.197", "gitBranch": "main", "type": "attachment", "attachment": att,
                       "uuid": uuid, "timestamp": ts}) + "\n"


def _meta(**obj) -> str:
    return json.dumps({**obj, "sessionId": S_CLAUDE}) + "\n"


def _session_21(projects: Path) -> Path:
    """One 2.1 session with every line type and the attachment subtypes Claude Code 2.1.197 writes."""
    kw = {"session": S_CLAUDE, "version": "2.1.197"}
    return write(
        projects / "-home-dev-shop" / f"{S_CLAUDE}.jsonl",
        _att("h1", {"type": "hook_success", "hookName": "SessionStart:startup", "content": "", "stdout": "ok"}),
        _att("h2", {"type": "hook_additional_context", "hookName": "SessionStart:startup",
                    "content": ["Another plugin's notes: deploy on Tuesdays"]}),
        _att("n1", {"type": "nested_memory", "path": f"{CWD}/CLAUDE.md",
                    "content": {"path": f"{CWD}/CLAUDE.md", "content": "Always run make check before committing."}}),
        _att("k1", {"type": "skill_listing", "content": "- update-config: configure the harness"}),
        _att("d1", {"type": "deferred_tools_delta", "addedNames": ["WebFetch"]}),
        _meta(type="permission-mode", permissionMode="default"),
        _meta(type="mode", mode="normal"),
        line("user", "u1", "Why does the checkout page return a 502 after the nginx upgrade?", **kw),
        _att("t1", {"type": "task_reminder", "content": [], "itemCount": 0}, "u1"),
        _att("f1", {"type": "file", "filename": f"{CWD}/nginx.conf", "content": {"type": "text"}}, "u1"),
        line("assistant", "a1", [{"type": "text", "text": "The upstream buffer is too small for the large headers."}],
             parent="u1", ts="2026-03-01T10:00:05.000Z", **kw),
        _att("q1", {"type": "queued_command", "commandMode": "prompt", "origin": {"kind": "human"},
                    "prompt": "Also raise proxy_buffer_size for the billing location please."}, "a1",
             ts="2026-03-01T10:00:06.000Z"),
        _att("e1", {"type": "edited_text_file", "filename": f"{CWD}/nginx.conf", "snippet": "proxy_buffer_size 16k;"}, "a1"),
        _att("c1", {"type": "date_change", "newDate": "2026-03-02"}, "a1"),
        json.dumps({"parentUuid": "a1", "isSidechain": False, "cwd": CWD, "sessionId": S_CLAUDE, "type": "system",
                    "subtype": "turn_duration", "durationMs": 5000, "uuid": "td1",
                    "timestamp": "2026-03-01T10:00:07.000Z"}) + "\n",
        _meta(type="ai-title", aiTitle="Fix nginx 502 on checkout"),
        _meta(type="last-prompt", lastPrompt="Also raise proxy_buffer_size for the billing location please."),
    )


def test_a_21_session_is_accounted_line_by_line_with_every_kind_named(tmp_path, reverie_home):
    projects = tmp_path / "projects"
    _session_21(projects)
    s = index_all(reverie_home, projects)
    part = s["harnesses"]["claude-code"]
    assert part["lines"] == {
        "ai-title": {"title": 1},
        "assistant": {"stored": 1},
        "attachment:date_change": {"attachment:date_change": 1},
        "attachment:deferred_tools_delta": {"attachment:deferred_tools_delta": 1},
        "attachment:edited_text_file": {"attachment:edited_text_file": 1},
        "attachment:file": {"attachment:file": 1},
        "attachment:hook_additional_context": {"stored": 1},
        "attachment:hook_success": {"attachment:hook_success": 1},
        "attachment:nested_memory": {"stored": 1},
        "attachment:queued_command": {"stored": 1},
        "attachment:skill_listing": {"attachment:skill_listing": 1},
        "attachment:task_reminder": {"attachment:task_reminder": 1},
        "last-prompt": {"last-prompt": 1},
        "mode": {"mode": 1},
        "permission-mode": {"permission-mode": 1},
        "system": {"system:turn_duration": 1},
        "user": {"stored": 1},
    }
    assert (part["lines_read"], _accounted(part), part["rejected"]) == (17, 17, {})
    assert not [k for k in part["skipped"] if k.startswith("unknown:")]
    db = agent_db_path(reverie_home, "shop")
    assert _rows(db, "SELECT uuid, role, kind FROM messages ORDER BY id") == [
        ("h2", "user", "attachment"), ("n1", "user", "attachment"), ("u1", "user", "message"),
        ("a1", "assistant", "message"), ("q1", "user", "message")]
    assert _rows(db, "SELECT b.type, b.text FROM blocks b JOIN messages m ON m.id = b.message_id "
                     "WHERE m.uuid IN ('q1', 'n1') ORDER BY m.id") == [
        ("attachment", f"[nested_memory: {CWD}/CLAUDE.md]\nAlways run make check before committing."),
        ("text", "Also raise proxy_buffer_size for the billing location please.")]
    assert _rows(db, "SELECT id, title, title_source, harness FROM conversations") == [
        (S_CLAUDE, "Fix nginx 502 on checkout", "ai-title", "claude-code")]


def test_queued_prompts_become_passages_and_injected_context_never_does(tmp_path, reverie_home):
    _session_21(tmp_path / "projects")
    index_all(reverie_home, tmp_path / "projects")
    db = open_db(agent_db_path(reverie_home, "shop"))
    try:
        cut = cut_passages(S_CLAUDE, load_messages(db, S_CLAUDE))
    finally:
        db.close()
    texts = [(p.kind, p.text) for p in cut.passages]
    assert ("user", "Also raise proxy_buffer_size for the billing location please.") in texts
    assert ("user", "Why does the checkout page return a 502 after the nginx upgrade?") in texts
    assert not [t for _, t in texts if "make check" in t or "Tuesdays" in t]
    assert cut.skipped.get("attachment") == 2


def test_titles_by_rank_custom_over_ai_title_over_summary(tmp_path, reverie_home):
    projects = tmp_path / "projects"
    f = write(projects / "-home-dev-shop" / f"{S_CLAUDE}.jsonl",
              line("user", "u1", "Fix the flaky login test please", session=S_CLAUDE),
              json.dumps({"type": "summary", "summary": "Login test flakiness", "leafUuid": "u1"}) + "\n")
    db = agent_db_path(reverie_home, "shop")
    title = lambda: _rows(db, "SELECT title, title_source FROM conversations")[0]  # noqa: E731
    index_all(reverie_home, projects)
    assert title() == ("Login test flakiness", "summary")
    write(f, _meta(type="ai-title", aiTitle="Fix flaky login test"), mode="a")
    index_all(reverie_home, projects)
    assert title() == ("Fix flaky login test", "ai-title")
    write(f, json.dumps({"type": "summary", "summary": "A later summary", "leafUuid": "u1"}) + "\n", mode="a")
    index_all(reverie_home, projects)
    assert title() == ("Fix flaky login test", "ai-title")          # a summary never replaces an ai-title
    write(f, _meta(type="custom-title", customTitle="login-flake"), mode="a")
    write(f, _meta(type="ai-title", aiTitle="Another automatic title"), mode="a")
    index_all(reverie_home, projects)
    assert title() == ("login-flake", "custom-title")               # nor an ai-title the user's /rename


# ---------------------------------------------------------------------------------------------
# Harnesses side by side


def _codex_rollout(sessions: Path, cwd: str = CWD, session: str = S_CODEX) -> Path:
    day = sessions / "2026" / "03" / "02"
    lines = [
        {"timestamp": "2026-03-02T09:00:00.000Z", "type": "session_meta",
         "payload": {"id": session, "timestamp": "2026-03-02T09:00:00.000Z", "cwd": cwd, "originator": "codex_cli_rs",
                     "cli_version": "0.63.0", "instructions": None}},
        {"timestamp": "2026-03-02T09:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user",
                     "content": [{"type": "input_text", "text": "Bump the nginx proxy_buffer_size to 16k for billing."}]}},
        {"timestamp": "2026-03-02T09:00:02.000Z", "type": "event_msg",
         "payload": {"type": "user_message", "message": "Bump the nginx proxy_buffer_size to 16k for billing."}},
        {"timestamp": "2026-03-02T09:00:05.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "assistant",
                     "content": [{"type": "output_text", "text": "Done: nginx.conf now sets proxy_buffer_size 16k."}]}},
    ]
    return write(day / f"rollout-2026-03-02T09-00-00-{session}.jsonl", *(json.dumps(x) + "\n" for x in lines))


def _gemini_session(tmp: Path, cwd: str = CWD) -> Path:
    """A Gemini CLI session in its project-hash folder (no readable folder, no projects.json: the
    project is known only by the hash of its root)."""
    h = hashlib.sha256(cwd.encode()).hexdigest()
    doc = {"sessionId": S_GEMINI, "projectHash": h, "startTime": "2026-03-03T08:00:00.000Z",
           "lastUpdated": "2026-03-03T08:00:09.000Z", "messages": [
               {"id": "g-u1", "timestamp": "2026-03-03T08:00:00.000Z", "type": "user",
                "content": "Does billing still need the larger nginx buffer?"},
               {"id": "g-a1", "timestamp": "2026-03-03T08:00:09.000Z", "type": "gemini",
                "content": "Yes: its invoice headers exceed 8k.", "model": "gemini-2.5-pro"}]}
    path = write(tmp / h / "chats" / "session-2026-03-03T08-00-7d2e4f10.json", json.dumps(doc))
    os.utime(path, (1767225600, 1767225600))     # cold: nothing held back as still being written
    return path


def test_one_agent_per_directory_across_harnesses_each_with_its_own_accounting(tmp_path, reverie_home):
    projects, codex, gem = tmp_path / "claude" / "projects", tmp_path / "codex" / "sessions", tmp_path / "gemini" / "tmp"
    _session_21(projects)
    _codex_rollout(codex)
    _codex_rollout(codex, "/home/dev/other", "019ab760-0000-7000-8000-000000000002")
    _gemini_session(gem)
    s = index_all(reverie_home, projects, codex_dir=codex, gemini_dir=gem)
    assert s["agents"] == ["other", "shop"]
    assert list(s["harnesses"]) == ["claude-code", "codex", "gemini"]
    assert {h: (p["root"], p["files_seen"], p["files_changed"], p["messages_added"], p["lines_read"])
            for h, p in s["harnesses"].items()} == {
        "claude-code": (str(projects.resolve()), 1, 1, 5, 17),
        "codex": (str(codex.resolve()), 2, 2, 4, 8),
        "gemini": (str(gem.resolve()), 1, 1, 2, 3)}
    assert s["harnesses"]["codex"]["lines"] == {
        "event_msg": {"event_msg:user_message": 2}, "response_item": {"stored": 4}, "session_meta": {"session_meta": 2}}
    for part in s["harnesses"].values():
        assert _accounted(part) == part["lines_read"]
    # the totals are the sums over the harnesses
    for key in ("files_changed", "messages_added", "lines_read", "blocks_added"):
        assert s[key] == sum(p[key] for p in s["harnesses"].values())
    db = agent_db_path(reverie_home, "shop")
    assert _rows(db, "SELECT id, harness FROM conversations ORDER BY first_at") == [
        (S_CLAUDE, "claude-code"), (S_CODEX, "codex"), (S_GEMINI, "gemini")]
    assert _rows(db, "SELECT harness, COUNT(*) FROM sources GROUP BY harness ORDER BY harness") == [
        ("claude-code", 1), ("codex", 1), ("gemini", 1)]
    # agents stay isolated: the other folder's Codex session is in its own db only
    assert _rows(agent_db_path(reverie_home, "other"), "SELECT harness, messages FROM conversations") == [("codex", 2)]
    rows = {r["id"]: r["harnesses"] for r in agents.list_agents(reverie_home)}
    assert rows == {"other": {"codex": {"conversations": 1, "messages": 2}},
                    "shop": {"claude-code": {"conversations": 1, "messages": 5},
                             "codex": {"conversations": 1, "messages": 2},
                             "gemini": {"conversations": 1, "messages": 2}}}
    conv = rebuild(reverie_home, S_CODEX)
    assert (conv["agent"], conv["harness"], [m["role"] for m in conv["messages"]]) == ("shop", "codex", ["user", "assistant"])
    # a second run reads nothing again, per harness
    again = index_all(reverie_home, projects, codex_dir=codex, gemini_dir=gem)
    assert {h: (p["files_changed"], p["lines_read"]) for h, p in again["harnesses"].items()} == {
        "claude-code": (0, 0), "codex": (0, 0), "gemini": (0, 0)}


def test_index_reads_every_default_folder_that_exists_and_only_the_folders_given(tmp_path, reverie_home, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    _session_21(tmp_path / "claude" / "projects")
    _codex_rollout(tmp_path / "codex" / "sessions")
    _gemini_session(tmp_path / "home" / ".gemini" / "tmp")
    assert harness_roots() == [("claude-code", (tmp_path / "claude" / "projects").resolve()),
                               ("codex", (tmp_path / "codex" / "sessions").resolve()),
                               ("gemini", (tmp_path / "home" / ".gemini" / "tmp").resolve())]
    res = CliRunner().invoke(build_cli(), ["--home", str(reverie_home), "index", "--json"], catch_exceptions=False)
    s = json.loads(res.output)
    assert {h: p["messages_added"] for h, p in s["harnesses"].items()} == {"claude-code": 5, "codex": 2, "gemini": 2}
    assert s["agents"] == ["shop"]
    only = CliRunner().invoke(build_cli(), ["--home", str(tmp_path / "h2"), "index", "--codex-dir",
                                            str(tmp_path / "codex" / "sessions"), "--json"], catch_exceptions=False)
    assert list(json.loads(only.output)["harnesses"]) == ["codex"]
    text = CliRunner().invoke(build_cli(), ["--home", str(reverie_home), "agents"], catch_exceptions=False).output
    assert text.splitlines()[1].endswith(f"{CWD}  [claude-code 1/5, codex 1/2, gemini 1/2]")


def test_a_gone_codex_rollout_is_flagged_missing_and_its_conversation_kept(tmp_path, reverie_home):
    codex = tmp_path / "sessions"
    f = _codex_rollout(codex)
    index_all(reverie_home, codex_dir=codex)
    f.unlink()
    s = index_all(reverie_home, codex_dir=codex)
    assert (s["files_missing"], s["harnesses"]["codex"]["files_seen"]) == (1, 0)
    db = agent_db_path(reverie_home, "shop")
    assert _rows(db, "SELECT missing, harness FROM sources") == [(1, "codex")]
    assert rebuild(reverie_home, S_CODEX)["rebuilt"] is True


def test_the_recall_log_and_search_say_which_harness_a_memory_came_from(tmp_path, reverie_home):
    from reverie.consolidate.hook import build_injection

    projects, codex = tmp_path / "projects", tmp_path / "sessions"
    _session_21(projects)
    _codex_rollout(codex)
    index_all(reverie_home, projects, codex_dir=codex)
    db = agent_db_path(reverie_home, "shop")
    conn = sqlite3.connect(db)
    with conn:
        at = "2026-03-02T09:00:05Z"
        ids = [conn.execute(
            "INSERT INTO cards(statement, norm, category, importance, confidence, original_confidence, status, "
            "sessions, pinned, writer, created_at, said_at, last_seen_at, updated_at) "
            "VALUES (?, ?, 'preference', 2, 0.8, 0.8, 'active', 1, 0, 'offline', ?, ?, ?, ?)",
            (text, text.lower(), at, at, at, at)).lastrowid
            for text in ("Billing needs proxy_buffer_size 16k in nginx.", "Run make check before committing.")]
        conn.executemany("INSERT INTO evidence(card_id, conversation, message_from, message_to) VALUES (?, ?, 1, 1)",
                         [(ids[0], S_CODEX), (ids[0], S_CLAUDE), (ids[1], S_CLAUDE)])
    conn.close()
    got = build_injection("session-start", {"session_id": "s-9", "cwd": CWD, "source": "startup"}, reverie_home)
    assert got is not None
    (entry,) = [json.loads(x) for x in recall_log_path(reverie_home, "shop").read_text().splitlines()]
    assert sorted(entry["ids"]) == sorted(ids)
    assert entry["harnesses"] == {"cards": {str(ids[0]): ["claude-code", "codex"], str(ids[1]): ["claude-code"]},
                                  "episodes": {}}
    res = CliRunner().invoke(build_cli(), ["--home", str(reverie_home), "search", "proxy_buffer_size",
                                           "--agent", "shop", "--json"], catch_exceptions=False)
    found = json.loads(res.output)
    assert [(c["id"], c["harnesses"]) for c in found["cards"]] == [(ids[0], ["claude-code", "codex"])]
    assert {h["harness"] for h in found["history"]} == {"claude-code", "codex"}


# ---------------------------------------------------------------------------------------------
# The schema


def test_m003_harness_on_a_blank_db_and_on_an_upgrade(tmp_path):
    import sqlite_utils

    from reverie.consolidate import store

    blank = store.open_db(tmp_path / "blank.db")
    cols = {r[1]: (r[2], r[3], r[4]) for r in blank.execute("PRAGMA table_info(conversations)").fetchall()}
    assert cols["harness"] == ("TEXT", 1, "'claude-code'")
    assert "harness" in {r[1] for r in blank.execute("PRAGMA table_info(sources)").fetchall()}
    blank.close()

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    db = sqlite_utils.Database(conn)
    store.MIGRATIONS.apply(db, stop_before=["m003_harness"])
    db.execute("INSERT INTO conversations (id, title, messages) VALUES ('s-old', 'old', 4)")
    db.execute("INSERT INTO sources (path, kind, conversation) VALUES ('/p/s-old.jsonl', 'main', 's-old')")
    conn.commit()
    conn.close()
    db = store.open_db(path)
    assert db.execute("SELECT id, title, messages, harness FROM conversations").fetchall() == [
        ("s-old", "old", 4, "claude-code")]
    assert db.execute("SELECT path, harness FROM sources").fetchall() == [("/p/s-old.jsonl", "claude-code")]
    assert store.MIGRATIONS.pending(db) == []
    db.close()


# ---------------------------------------------------------------------------------------------
# Every real session: every line accounted for, no unknown kind


def _claude_sets() -> list[Path]:
    sets = sorted((REAL / "claude-code").glob("*/projects"))
    return sets + ([SHARED / "claude-code"] if (SHARED / "claude-code").is_dir() else [])


@pytest.mark.parametrize("projects", _claude_sets(), ids=lambda p: p.parent.name if p.name == "projects" else p.name)
def test_every_real_claude_session_is_accounted_with_no_unknown_kind(projects, tmp_path):
    """Claude Code 1.0 to 2.1 (../shared/fixtures): every complete line is read and accounted exactly
    once, none rejected, none counted as `unknown:*`."""
    s = index_all(tmp_path / "home", projects)
    part = s["harnesses"]["claude-code"]
    newlines = sum(p.read_bytes().count(b"\n") for p in projects.rglob("*.jsonl"))
    assert (part["files_seen"], part["lines_read"], _accounted(part)) == (
        len(list(projects.rglob("*.jsonl"))), newlines, newlines)
    assert [k for k in part["skipped"] if k.startswith("unknown:") or k.endswith(":other")] == []
    assert part["rejected"] == {}
    assert part["messages_added"] > 0


@pytest.mark.skipif(not (REAL / "codex").is_dir(), reason="../shared/fixtures/real-sessions/codex not present")
def test_every_real_codex_rollout_is_accounted_per_harness(tmp_path):
    s = index_all(tmp_path / "home", codex_dir=REAL / "codex")
    part = s["harnesses"]["codex"]
    newlines = sum(p.read_bytes().count(b"\n") for p in (REAL / "codex").rglob("*.jsonl"))
    assert (part["files_seen"], part["lines_read"], _accounted(part)) == (26, newlines, newlines)
    assert [k for k in part["skipped"] if k.startswith("unknown:")] == []
    assert part["rejected"] == {}
    assert list(s["harnesses"]) == ["codex"]


def test_a_gemini_session_known_only_by_its_project_hash_waits_for_its_agent(tmp_path, reverie_home):
    """A session whose project is known only by its hash is kept aside (no_cwd) while no agent's
    folder hashes to it; once one does (a Claude session in that folder), its next change is read
    whole into that agent."""
    gem, projects = tmp_path / "gemini" / "tmp", tmp_path / "projects"
    f = _gemini_session(gem)
    s = index_all(reverie_home, gemini_dir=gem)
    assert (s["agents"], s["harnesses"]["gemini"]["rejected"]) == ([], {"no_cwd": 2})
    _session_21(projects)
    index_all(reverie_home, projects)
    doc = json.loads(f.read_text())
    doc["messages"].append({"id": "g-u2", "timestamp": "2026-03-03T08:01:00.000Z", "type": "user",
                            "content": "Thanks, leave it then."})
    f.write_text(json.dumps(doc))
    os.utime(f, (1767225700, 1767225700))
    s = index_all(reverie_home, gemini_dir=gem)
    assert (s["agents"], s["harnesses"]["gemini"]["messages_added"], s["harnesses"]["gemini"]["rejected"]) == (
        ["shop"], 3, {})
    assert _rows(agent_db_path(reverie_home, "shop"), "SELECT uuid FROM messages m JOIN conversations c "
                 "ON c.id = m.conversation WHERE c.harness = 'gemini' ORDER BY m.id") == [("g-u1",), ("g-a1",), ("g-u2",)]


# ---------------------------------------------------------------------------------------------
# Gemini documents read again: titles, held-back messages, JSONL record names


def _gemini_readable(tmp: Path, doc: dict | None = None, *, name: str = "session-2026-03-03T08-00-7d2e4f10.json",
                     text: str | None = None, mtime: float | None = 1767225600) -> Path:
    """A Gemini CLI session in a readable project folder (`.project_root` names CWD)."""
    write(tmp / "shop" / ".project_root", CWD)
    path = write(tmp / "shop" / "chats" / name, text if text is not None else json.dumps(doc))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def _gemini_doc(messages: list[dict], **extra) -> dict:
    return {"sessionId": S_GEMINI, "startTime": "2026-03-03T08:00:00.000Z",
            "lastUpdated": "2026-03-03T08:00:09.000Z", **extra, "messages": messages}


_G_U1 = {"id": "g-u1", "timestamp": "2026-03-03T08:00:00.000Z", "type": "user",
         "content": "Does billing still need the larger nginx buffer?"}
_G_A1 = {"id": "g-a1", "timestamp": "2026-03-03T08:00:09.000Z", "type": "gemini",
         "content": "Yes: its invoice headers exceed 8k.", "model": "gemini-2.5-pro"}
_G_U2 = {"id": "g-u2", "timestamp": "2026-03-03T08:01:00.000Z", "type": "user", "content": "Thanks, leave it then."}


def test_a_gemini_summary_added_later_becomes_the_title_and_its_entry_is_accounted_once(tmp_path, reverie_home):
    """Entry 0 of a JSON document is its summary slot: a summary written after the first read (or
    changed in place) becomes the title on the next read, by rank, and the slot is accounted once
    over all runs (only the new messages are accounted on a re-read)."""
    gem = tmp_path / "gemini" / "tmp"
    f = _gemini_readable(gem, _gemini_doc([_G_U1, _G_A1]))
    db = agent_db_path(reverie_home, "shop")
    title = lambda: _rows(db, "SELECT title, title_source FROM conversations")  # noqa: E731
    runs = [index_all(reverie_home, gemini_dir=gem)["harnesses"]["gemini"]]
    assert (runs[0]["lines"], title()) == (
        {"summary": {"no_summary": 1}, "user": {"stored": 1}, "gemini": {"stored": 1}}, [(None, None)])
    _gemini_readable(gem, _gemini_doc([_G_U1, _G_A1, _G_U2], summary="Nginx buffer for billing"), mtime=1767225700)
    runs.append(index_all(reverie_home, gemini_dir=gem)["harnesses"]["gemini"])
    assert (runs[1]["lines"], runs[1]["lines_read"], title()) == (
        {"user": {"stored": 1}}, 1, [("Nginx buffer for billing", "ai-title")])
    _gemini_readable(gem, _gemini_doc([_G_U1, _G_A1, _G_U2], summary="Billing keeps the 16k buffer"), mtime=1767225800)
    runs.append(index_all(reverie_home, gemini_dir=gem)["harnesses"]["gemini"])
    assert (runs[2]["files_changed"], runs[2]["lines"], runs[2]["lines_read"], title()) == (
        1, {}, 0, [("Billing keeps the 16k buffer", "ai-title")])
    conn = sqlite3.connect(db)
    conn.execute("UPDATE conversations SET title = 'buffer-talk', title_source = 'custom-title'")
    conn.commit()
    conn.close()
    _gemini_readable(gem, _gemini_doc([_G_U1, _G_A1, _G_U2], summary="A third summary"), mtime=1767225900)
    runs.append(index_all(reverie_home, gemini_dir=gem)["harnesses"]["gemini"])
    assert (runs[3]["lines"], title()) == ({}, [("buffer-talk", "custom-title")])   # a custom title stays
    assert sum(_accounted(r) for r in runs) == sum(r["lines_read"] for r in runs) == 4
    assert _rows(db, "SELECT lines FROM sources") == [(4,)]


def test_a_gemini_message_held_back_by_a_running_tool_is_read_on_the_next_run_with_the_same_stat(
        tmp_path, reverie_home, monkeypatch):
    """A hot file whose last message has a tool call still running: that message is held back; when
    the session was killed mid-tool the file never changes again, yet the next run (the file now
    cold: a fake clock, HOT_SECONDS 0) stores it, accounting each entry once."""
    from reverie.sources import gemini as gemini_reader

    running = {"id": "g-a1", "timestamp": "2026-03-03T08:00:09.000Z", "type": "gemini", "content": "Checking.",
               "toolCalls": [{"id": "c1", "name": "run_shell_command", "args": {"command": "nginx -T"},
                              "status": "executing"}]}
    gem = tmp_path / "gemini" / "tmp"
    f = _gemini_readable(gem, _gemini_doc([_G_U1, running]), mtime=None)      # just written: hot
    s = index_all(reverie_home, gemini_dir=gem)["harnesses"]["gemini"]
    assert (s["messages_added"], s["lines"]) == (1, {"summary": {"no_summary": 1}, "user": {"stored": 1}})
    monkeypatch.setattr(gemini_reader, "HOT_SECONDS", 0)
    st = os.stat(f)
    s = index_all(reverie_home, gemini_dir=gem)["harnesses"]["gemini"]
    assert os.stat(f).st_mtime_ns == st.st_mtime_ns
    assert (s["files_changed"], s["messages_added"], s["lines"]) == (1, 1, {"gemini": {"stored": 1}})
    db = agent_db_path(reverie_home, "shop")
    assert _rows(db, "SELECT m.uuid, b.type, b.tool_name FROM messages m JOIN blocks b ON b.message_id = m.id "
                 "WHERE m.uuid = 'g-a1' ORDER BY b.idx") == [("g-a1", "text", None), ("g-a1", "tool_use", "run_shell_command")]
    s = index_all(reverie_home, gemini_dir=gem)["harnesses"]["gemini"]
    assert (s["files_changed"], s["lines_read"]) == (0, 0)     # nothing held back any more: one stat


def test_gemini_set_and_rewind_records_are_named_in_the_accounting(tmp_path, reverie_home):
    gem = tmp_path / "gemini" / "tmp"
    recs = [{"sessionId": S_GEMINI, "startTime": "2026-03-03T08:00:00.000Z", "kind": "main"}, _G_U1,
            {"$set": {"lastUpdated": "2026-03-03T08:00:05.000Z"}}, _G_A1, {"$rewindTo": "g-a1"},
            {"$set": {"summary": "Nginx buffer for billing"}}]
    _gemini_readable(gem, name="session-2026-03-03T08-00-7d2e4f10.jsonl",
                     text="".join(json.dumps(r) + "\n" for r in recs))
    s = index_all(reverie_home, gemini_dir=gem)["harnesses"]["gemini"]
    assert s["lines"] == {"metadata": {"metadata": 1}, "message": {"stored": 1, "rewound": 1},
                          "gemini:set": {"metadata_update": 1, "title": 1}, "gemini:rewind": {"rewind": 1}}
    assert _accounted(s) == s["lines_read"] == 6
