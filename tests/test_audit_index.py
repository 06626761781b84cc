"""Audit 8: the index and the agent registry as a user relies on them.

Drives the real CLI (`build_cli()` through click's CliRunner) and the real indexer on the shared
Claude Code fixtures (../shared/fixtures/claude-code, copied to a tmp dir) and on transcripts built
with tests/transcripts.py. Covers: every fixture parsed as its README describes it, sub-agents and
compaction, titles, `show conversation` after deletion, agents by cwd (map, nesting, symlinks,
trailing slash, case, a cwd that moves, switched-off agents), `reverie agents --json` counts,
`reverie search` (cards then history, FTS syntax, unicode, our own injected memory), and
incrementality (no-op runs, appends at any byte, a file growing while it is read).

Seven began as proofs of a defect: unicode search words, a sub-agent file of a switched-off agent,
a summary titling a transcript bigger than one chunk, a custom title kept over a later summary, an
agents.map directory named through a symlink, a query naming a flag, the user's words beside an
injected memory block.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from reverie.consolidate import index as index_mod
from reverie.consolidate.commands import build_cli
from reverie.consolidate.index import index_all
from transcripts import line, write

ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures" / "claude-code"

V2_SESSION = "258c7280-ae70-4798-800f-63464d01a85d"
TOOL_HEAVY_SESSION = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"
V1_SESSION = "fe5e1c67-53e7-4862-81ae-d0e013e3270b"
FIXTURE_CONVERSATIONS = {V2_SESSION: "spotter-gqc", TOOL_HEAVY_SESSION: "spotter", V1_SESSION: "demo"}

#: What `graph.recall` injects (its MARKER first), as Claude Code 2.1 stores a hook's additional
#: context: a user line with isMeta and a <system-reminder> (see the acompact fixture's first lines).
MEMORY = ("[reverie memory] Your notes nearest this prompt (past sessions; may be outdated, check first):\n"
          "- billing-api runs on kubernetes-prod (3 sessions)")


# ---------------------------------------------------------------------------------------------
# helpers


def cli(home: Path, *args: str):
    return CliRunner().invoke(build_cli(), ["--home", str(home), *args], catch_exceptions=True)


def index_json(home: Path, projects: Path) -> dict:
    res = cli(home, "index", "--json", "--projects-dir", str(projects))
    assert res.exit_code == 0, (res.output, res.exception)
    return json.loads(res.output)


def agents_json(home: Path) -> dict[str, dict]:
    res = cli(home, "agents", "--json")
    assert res.exit_code == 0, (res.output, res.exception)
    return {a["id"]: a for a in json.loads(res.output)}


def search_json(home: Path, agent: str, *query: str) -> dict:
    res = cli(home, "search", "--agent", agent, "--json", *query)
    assert res.exit_code == 0 and res.exception is None, (res.output, res.exception)
    return json.loads(res.output)


def show_json(home: Path, conversation: str) -> dict:
    res = cli(home, "show", "conversation", conversation, "--json")
    assert res.exit_code == 0, (res.output, res.exception)
    return json.loads(res.output)


def rows(home: Path, agent: str, sql: str, args=()) -> list[tuple]:
    conn = sqlite3.connect(home / "agents" / agent / "agent.db")
    try:
        return [tuple(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()


def copy_fixtures(dest: Path, *only: str) -> Path:
    if not SHARED_FIXTURES.exists():
        pytest.skip("../shared/fixtures not present")
    dest.mkdir(parents=True)
    for d in sorted(SHARED_FIXTURES.iterdir()):
        if d.is_dir() and (not only or d.name in only):
            shutil.copytree(d, dest / d.name)
    for p in [dest, *dest.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    return dest


def index_dump(home: Path) -> dict:
    """Every stored row that carries content, in an order that does not depend on how many runs
    stored it (message ids and block ids do; file order and block idx do not)."""
    out = {}
    for agent in sorted(os.listdir(home / "agents")):
        rel = lambda p: p.split("/projects/", 1)[1] if p else p  # noqa: E731
        msgs = rows(home, agent,
                    "SELECT m.conversation, m.uuid, m.api_id, m.parent_uuid, m.role, m.kind, m.is_sidechain, "
                    "m.subagent, m.cwd, m.timestamp, m.model, s.path, m.line_no "
                    "FROM messages m LEFT JOIN sources s ON s.id = m.source")
        msgs = sorted((m[:11] + (rel(m[11]), m[12]) for m in msgs), key=lambda m: (m[11], m[12]))
        blocks = sorted(rows(home, agent,
                             "SELECT m.uuid, b.idx, b.type, b.tool_name, b.tool_use_id, b.is_error, b.text, "
                             "b.original_size, b.clipped FROM blocks b JOIN messages m ON m.id = b.message_id"),
                        key=lambda b: (b[0], b[1]))
        lines = sorted(rows(home, agent, "SELECT l.uuid, m.uuid FROM message_lines l JOIN messages m ON m.id = l.message_id"),
                       key=repr)
        convs = rows(home, agent, "SELECT id, title, cwd, git_branch, version, first_at, last_at, messages "
                                  "FROM conversations ORDER BY id")
        srcs = [(rel(s[0]),) + s[1:] for s in rows(
            home, agent, "SELECT path, kind, conversation, size, offset, lines FROM sources ORDER BY path")]
        out[agent] = {"messages": msgs, "blocks": blocks, "lines": lines, "conversations": convs, "sources": srcs}
    return out


@pytest.fixture
def projects(tmp_path) -> Path:
    return tmp_path / "projects"


# ---------------------------------------------------------------------------------------------
# The shared fixtures as their README describes them


def test_each_fixture_file_is_stored_as_its_readme_describes_it(tmp_path):
    """Block-level fidelity per file (the existing fixture test counts lines by type only)."""
    home = tmp_path / "home"
    projects = copy_fixtures(tmp_path / "projects")
    s = index_json(home, projects)
    assert (s["rejected"], s["repaired"], s["agents"]) == ({}, {}, ["demo", "spotter", "spotter-gqc"])

    main = str(projects / "v2-compact-subagents" / f"{V2_SESSION}.jsonl")
    # v2 main file: tool_use 186 / tool_result 186 (7 with is_error), thinking 19, 5 string user turns,
    # 95 list text blocks of which 9 are whitespace only ("\n\n").
    assert rows(home, "spotter-gqc",
                "SELECT b.type, COUNT(*), SUM(b.is_error) FROM blocks b JOIN messages m ON m.id = b.message_id "
                "JOIN sources s ON s.id = m.source WHERE s.path = ? GROUP BY 1 ORDER BY 1", (main,)) == [
        ("text", 95 - 9 + 5 + 1, 0), ("thinking", 19, 0), ("tool_result", 186, 7), ("tool_use", 186, 0)]
    # Compaction: the boundary and the summary are their own kinds, in this order, in the main file.
    assert rows(home, "spotter-gqc", "SELECT role, kind, line_no FROM messages "
                "WHERE kind IN ('compact_boundary', 'compact_summary') ORDER BY id") == [
        ("system", "compact_boundary", 1256), ("user", "compact_summary", 1257)]
    (summary,), = rows(home, "spotter-gqc", "SELECT b.text FROM blocks b JOIN messages m ON m.id = b.message_id "
                       "WHERE m.kind = 'compact_summary'")
    assert summary.startswith("This session is being continued from a previous conversation")
    # Sub-agent files join the parent conversation with their agent id; the Task prompt opens a881341.
    assert rows(home, "spotter-gqc", "SELECT subagent, conversation, is_sidechain, COUNT(*) FROM messages "
                "WHERE subagent IS NOT NULL GROUP BY 1, 2, 3 ORDER BY 1") == [
        ("a881341", V2_SESSION, 1, 6), ("acompact-fffbd0", V2_SESSION, 1, 4)]
    (first_sub,), = rows(home, "spotter-gqc", "SELECT b.text FROM blocks b JOIN messages m ON m.id = b.message_id "
                         "WHERE m.subagent = 'a881341' ORDER BY m.id, b.idx LIMIT 1")
    assert first_sub.startswith("What is the output contract for Claude Code hooks")
    # Tools as the README lists them (WebFetch comes from the sub-agent).
    assert [t for t, in rows(home, "spotter-gqc", "SELECT DISTINCT tool_name FROM blocks WHERE type = 'tool_use' ORDER BY 1")] == [
        "Bash", "Edit", "Glob", "Grep", "Read", "Task", "TaskOutput", "WebFetch", "Write"]

    # tool_heavy: two local_command system lines, the /mcp command and its output, one thinking block.
    assert rows(home, "spotter", "SELECT role, kind, COUNT(*) FROM messages GROUP BY 1, 2 ORDER BY 1, 2") == [
        ("assistant", "message", 4), ("system", "local_command", 2), ("user", "command", 1),
        ("user", "command_output", 1), ("user", "message", 4), ("user", "meta", 1), ("user", "tool_result", 6)]
    assert [t for t, in rows(home, "spotter", "SELECT DISTINCT tool_name FROM blocks WHERE type = 'tool_use' ORDER BY 1")] == [
        "Bash", "Glob", "Read", "WebFetch", "WebSearch"]
    assert rows(home, "spotter", "SELECT COUNT(*) FROM blocks WHERE type = 'thinking'") == [(1,)]

    # v1: 405 of the 437 message lines are inline sidechains, stored (merged by message.id) under 5 roots.
    assert rows(home, "demo", "SELECT COUNT(*) FROM message_lines l JOIN messages m ON m.id = l.message_id "
                "WHERE m.is_sidechain = 1") == [(405,)]
    assert rows(home, "demo", "SELECT COUNT(DISTINCT subagent) FROM messages WHERE is_sidechain = 1") == [(5,)]
    assert rows(home, "demo", "SELECT COUNT(*) FROM message_lines") == [(437,)]
    assert [t for t, in rows(home, "demo", "SELECT DISTINCT tool_name FROM blocks WHERE type = 'tool_use' ORDER BY 1")] == [
        "Bash", "BashOutput", "Edit", "Glob", "KillBash", "MultiEdit", "Read", "Task", "TodoWrite", "Write"]
    # Its summary line points into another session: not this conversation's title.
    assert rows(home, "demo", "SELECT title FROM conversations") == [(None,)]


def test_show_conversation_after_every_transcript_is_deleted_is_the_same_conversation(tmp_path):
    home = tmp_path / "home"
    projects = copy_fixtures(tmp_path / "projects")
    index_json(home, projects)
    before = {c: show_json(home, c) for c in FIXTURE_CONVERSATIONS}
    counts_before = agents_json(home)
    v2 = before[V2_SESSION]["messages"]
    task = next(i for i, m in enumerate(v2) if any(b["tool_name"] == "Task" and b["type"] == "tool_use" for b in m["blocks"]))
    # The sub-agent's turns sit between the Task call and its result.
    assert [m["subagent"] for m in v2[task + 1:task + 8]] == ["a881341"] * 6 + [None]
    assert v2[task + 7]["blocks"][0]["tool_name"] == "Task"

    shutil.rmtree(projects)
    projects.mkdir()
    s = index_json(home, projects)
    assert (s["files_seen"], s["files_missing"], s["messages_added"]) == (0, 5, 0)
    for conv, agent in FIXTURE_CONVERSATIONS.items():
        after = show_json(home, conv)
        assert (after["agent"], after["rebuilt"], after["transcript_on_disk"]) == (agent, True, False)
        assert all(not t["on_disk"] for t in after["transcripts"])
        same = {k: v for k, v in after.items() if k not in ("rebuilt", "transcript_on_disk", "transcripts")}
        assert same == {k: v for k, v in before[conv].items() if k not in ("rebuilt", "transcript_on_disk", "transcripts")}
        text = cli(home, "show", "conversation", conv).output
        assert "Rebuilt from the index: the transcript is no longer on disk." in text
    after_counts = agents_json(home)
    assert {a: {**r, "transcripts_on_disk": 1, "db_bytes": 0} for a, r in after_counts.items()} == {
        a: {**r, "db_bytes": 0} for a, r in counts_before.items()}
    assert [r["transcripts_on_disk"] for r in after_counts.values()] == [0, 0, 0]


# ---------------------------------------------------------------------------------------------
# Titles


def test_summary_and_custom_title_lines_title_their_conversation(projects, tmp_path):
    home = tmp_path / "home"
    write(projects / "-home-dev-shop" / "s1.jsonl",
          line("user", "u1", "first prompt here", session="s1"),
          json.dumps({"type": "custom-title", "customTitle": "Checkout overflow bug", "sessionId": "s1"}) + "\n",
          line("assistant", "a1", [{"type": "text", "text": "ok"}], session="s1", parent="u1"))
    write(projects / "-home-dev-shop" / "s2.jsonl",
          json.dumps({"type": "summary", "summary": "Cart total overflow fix", "leafUuid": "a2"}) + "\n",
          line("user", "u2", "why does the cart overflow", session="s2"),
          line("assistant", "a2", [{"type": "text", "text": "int32"}], session="s2", parent="u2"))
    s = index_json(home, projects)
    assert (s["titles"], s["skipped"], s["rejected"]) == (2, {}, {})
    assert (show_json(home, "s1")["title"], show_json(home, "s2")["title"]) == (
        "Checkout overflow bug", "Cart total overflow fix")


def test_a_custom_title_is_not_replaced_by_a_later_automatic_summary(projects, tmp_path):
    home = tmp_path / "home"
    f = write(projects / "-home-dev-shop" / "s1.jsonl",
              line("user", "u1", "first prompt here", session="s1"),
              json.dumps({"type": "custom-title", "customTitle": "Checkout overflow bug", "sessionId": "s1"}) + "\n",
              line("assistant", "a1", [{"type": "text", "text": "ok"}], session="s1", parent="u1"))
    index_json(home, projects)
    write(f, json.dumps({"type": "summary", "summary": "Assistant answers ok", "leafUuid": "a1"}) + "\n", mode="a")
    index_json(home, projects)
    assert show_json(home, "s1")["title"] == "Checkout overflow bug"


def test_a_summary_at_the_top_of_a_big_transcript_titles_it(projects, tmp_path):
    home = tmp_path / "home"
    big = "The cart module computes totals per line item and applies discounts. " * 40
    lines = [json.dumps({"type": "summary", "summary": "Long refactor of the cart", "leafUuid": "a-last"}) + "\n"]
    prev = None
    for i in range(3000):      # ~9.3 MB: more than one read chunk (index.DEFAULT_CHUNK_BYTES = 8 MiB)
        kind = "assistant" if i % 2 else "user"
        lines.append(line(kind, f"m{i}", [{"type": "text", "text": big}] if i % 2 else big, session="s9", parent=prev,
                          ts=f"2026-03-01T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z"))
        prev = f"m{i}"
    lines.append(line("assistant", "a-last", [{"type": "text", "text": "done"}], session="s9", parent=prev,
                      ts="2026-03-01T11:00:00.000Z"))
    f = write(projects / "-home-dev-shop" / "s9.jsonl", *lines)
    assert f.stat().st_size > index_mod.DEFAULT_CHUNK_BYTES
    s = index_json(home, projects)
    assert (s["titles"], s["skipped"], s["messages_added"]) == (1, {}, 3001)
    assert show_json(home, "s9")["title"] == "Long refactor of the cart"


# ---------------------------------------------------------------------------------------------
# Agents


def test_agents_by_cwd_nesting_trailing_slash_case_prefix_and_a_cwd_that_moves(projects, tmp_path):
    home = tmp_path / "home"
    assert cli(home, "settings", "set", "agents.map", json.dumps({"/home/me/work/mono/": "mono"})).exit_code == 0
    p = projects / "-p"
    write(p / "s1.jsonl", line("user", "u1", "hello shop", session="s1", cwd="/home/dev/shop"))
    write(p / "s2.jsonl", line("user", "u2", "trailing slash", session="s2", cwd="/home/dev/shop/",
                               ts="2026-03-02T10:00:00.000Z"))
    write(p / "s3.jsonl", line("user", "u3", "other case", session="s3", cwd="/home/dev/Shop"))
    write(p / "s4.jsonl", line("user", "u4", "nested", session="s4", cwd="/home/dev/shop/packages/api"))
    write(p / "s5.jsonl", line("user", "u5", "prefix only", session="s5", cwd="/home/dev/shop-admin"))
    write(p / "s6.jsonl", line("user", "u6", "in the monorepo", session="s6", cwd="/home/me/work/mono/tools/x"))
    write(p / "s7.jsonl", line("user", "u7", "not the monorepo", session="s7", cwd="/home/me/work/monorepo"))
    # A session that starts in web and moves into a subfolder, then into another agent's folder.
    write(p / "s8.jsonl",
          line("user", "w1", "start in web", session="s8", cwd="/home/dev/web", ts="2026-03-03T09:00:00.000Z"),
          line("user", "w2", "now in a subfolder", session="s8", cwd="/home/dev/web/packages/ui", parent="w1",
               ts="2026-03-03T09:05:00.000Z"),
          line("user", "w3", "now next door", session="s8", cwd="/home/dev/shop", parent="w2",
               ts="2026-03-03T09:10:00.000Z"))
    s = index_json(home, projects)
    assert s["rejected"] == {}
    got = {a: {k: r[k] for k in ("cwd", "cwds", "conversations", "messages", "first", "last", "transcripts_on_disk",
                                 "disabled")} for a, r in agents_json(home).items()}
    shop_admin = next(a for a in got if a.startswith("shop-admin"))
    shop_upper = next(a for a in got if a.startswith("shop-") and a != shop_admin)
    ts = "2026-03-01T10:00:00.000Z"
    assert got == {
        "mono": {"cwd": "/home/me/work/mono/tools/x", "cwds": ["/home/me/work/mono/tools/x"], "conversations": 1,
                 "messages": 1, "first": ts, "last": ts, "transcripts_on_disk": 1, "disabled": False},
        "monorepo": {"cwd": "/home/me/work/monorepo", "cwds": ["/home/me/work/monorepo"], "conversations": 1,
                     "messages": 1, "first": ts, "last": ts, "transcripts_on_disk": 1, "disabled": False},
        "shop": {"cwd": "/home/dev/shop", "cwds": ["/home/dev/shop"], "conversations": 3, "messages": 3,
                 "first": ts, "last": "2026-03-02T10:00:00.000Z", "transcripts_on_disk": 3, "disabled": False},
        shop_admin: {"cwd": "/home/dev/shop-admin", "cwds": ["/home/dev/shop-admin"], "conversations": 1,
                     "messages": 1, "first": ts, "last": ts, "transcripts_on_disk": 1, "disabled": False},
        shop_upper: {"cwd": "/home/dev/Shop", "cwds": ["/home/dev/Shop"], "conversations": 1, "messages": 1,
                     "first": ts, "last": ts, "transcripts_on_disk": 1, "disabled": False},
        "web": {"cwd": "/home/dev/web", "cwds": ["/home/dev/web"], "conversations": 1, "messages": 3,
                "first": "2026-03-03T09:00:00.000Z", "last": "2026-03-03T09:10:00.000Z", "transcripts_on_disk": 1,
                "disabled": False},
    }
    assert shop_admin == "shop-admin" and shop_upper.startswith("shop-")
    # The moved session is one conversation of web, every line kept with the cwd it was said in.
    assert rows(home, "web", "SELECT m.uuid, COALESCE(m.cwd, c.cwd) FROM messages m JOIN conversations c "
                "ON c.id = m.conversation ORDER BY m.id") == [
        ("w1", "/home/dev/web"), ("w2", "/home/dev/web/packages/ui"), ("w3", "/home/dev/shop")]


def test_agents_map_directory_named_through_a_symlink_maps_the_sessions_in_it(projects, tmp_path):
    home = tmp_path / "home"
    real = tmp_path / "data" / "work" / "mono"
    real.mkdir(parents=True)
    (tmp_path / "work").symlink_to(tmp_path / "data" / "work")
    assert cli(home, "settings", "set", "agents.map", json.dumps({str(tmp_path / "work" / "mono"): "mono"})).exit_code == 0
    write(projects / "-p" / "s1.jsonl", line("user", "u1", "hello mono", session="s1", cwd=str(real / "tools")))
    s = index_json(home, projects)
    assert s["agents"] == ["mono"]


def test_a_switched_off_agent_gets_nothing_new_and_stays_readable(projects, tmp_path):
    home = tmp_path / "home"
    f = write(projects / "-home-dev-shop" / "s1.jsonl",
              line("user", "u1", "why does the checkout overflow", session="s1"),
              line("assistant", "a1", [{"type": "text", "text": "The cart total uses int32."}], session="s1",
                   parent="u1", ts="2026-03-01T10:01:00.000Z"))
    index_json(home, projects)
    assert cli(home, "settings", "set", "agents.disabled", '["shop"]').exit_code == 0
    write(f, line("user", "u2", "a later question", session="s1", parent="a1", ts="2026-03-02T10:00:00.000Z"), mode="a")
    write(projects / "-home-dev-shop-api" / "s2.jsonl",
          line("user", "v1", "a new session in a subfolder", session="s2", cwd="/home/dev/shop/api"))
    s = index_json(home, projects)
    assert (s["messages_added"], s["skipped"], s["rejected"]) == (0, {"agent_disabled": 2}, {})
    row = agents_json(home)["shop"]
    assert {k: row[k] for k in ("conversations", "messages", "first", "last", "transcripts_on_disk", "disabled")} == {
        "conversations": 1, "messages": 2, "first": "2026-03-01T10:00:00.000Z", "last": "2026-03-01T10:01:00.000Z",
        "transcripts_on_disk": 1, "disabled": True}
    found = search_json(home, "shop", "checkout")
    assert [(h["conversation"], h["at"], h["role"], h["snippet"]) for h in found["history"]] == [
        ("s1", "2026-03-01T10:00:00.000Z", "user", "why does the [checkout] overflow")]
    shown = show_json(home, "s1")
    assert [(m["uuid"], m["blocks"][0]["text"]) for m in shown["messages"]] == [
        ("u1", "why does the checkout overflow"), ("a1", "The cart total uses int32.")]
    # Switched back on: what was written meanwhile is indexed, once.
    assert cli(home, "settings", "set", "agents.disabled", "[]").exit_code == 0
    s = index_json(home, projects)
    assert (s["messages_added"], s["skipped"], s["rejected"]) == (2, {}, {})
    assert agents_json(home)["shop"]["messages"] == 4


def test_a_switched_off_agent_gets_no_new_sub_agent_file_either(projects, tmp_path):
    home = tmp_path / "home"
    session = "5d0c1a2b-0000-4000-8000-000000000001"
    write(projects / "-home-dev-shop" / f"{session}.jsonl",
          line("user", "u1", "start the audit", session=session),
          line("assistant", "a1", [{"type": "text", "text": "Launching a sub-agent."}], session=session, parent="u1"))
    index_json(home, projects)
    assert cli(home, "settings", "set", "agents.disabled", '["shop"]').exit_code == 0
    write(projects / "-home-dev-shop" / session / "subagents" / "agent-a1b2c3.jsonl",
          line("user", "s1", "list the payment configuration files", session=session, isSidechain=True, agentId="a1b2c3"),
          line("assistant", "s2", [{"type": "text", "text": "Found three."}], session=session, parent="s1",
               isSidechain=True, agentId="a1b2c3"))
    s = index_json(home, projects)
    assert (s["messages_added"], s["skipped"], s["agents"]) == (0, {"agent_disabled": 1}, [])
    assert agents_json(home)["shop"]["messages"] == 2


# ---------------------------------------------------------------------------------------------
# Search


@pytest.fixture
def searchable(projects, tmp_path):
    """An indexed shop agent with one card (consolidated offline) and history, including our own
    memory injected by the UserPromptSubmit hook (as Claude Code 2.1 stores it)."""
    home = tmp_path / "home"
    write(projects / "-home-dev-shop" / "s1.jsonl",
          line("user", "u1", "From now on always deploy billing-api to staging first, because prod broke last week.",
               session="s1"),
          line("user", "m1", "<system-reminder>\nUserPromptSubmit hook additional context: " + MEMORY + "\n</system-reminder>",
               session="s1", parent="u1", isMeta=True, ts="2026-03-01T10:00:01.000Z"),
          line("assistant", "a1", [{"type": "text", "text": "Understood: billing-api goes to staging before prod."}],
               session="s1", parent="m1", ts="2026-03-01T10:00:05.000Z"))
    index_json(home, projects)
    res = cli(home, "consolidate", "--now", "--agent", "shop", "--writer", "offline", "--json")
    assert res.exit_code == 0, res.output
    return home


def test_search_lists_cards_then_history_and_never_our_injected_memory(searchable):
    found = search_json(searchable, "shop", "billing-api", "staging")
    unscored = lambda items: [{k: v for k, v in i.items() if k != "score"} for i in items]  # noqa: E731
    assert (found["agent"], found["query"]) == ("shop", "billing-api staging")
    assert unscored(found["cards"]) == [{
        "id": 1, "statement": "Always deploy billing-api to staging first, because prod broke last week.",
        "category": "preference", "status": "active", "superseded_by": None, "sessions": 1, "date": "2026-03-01",
        "last_seen": "2026-03-01", "harnesses": ["claude-code"]}]
    assert unscored(found["history"]) == [
        {"conversation": "s1", "harness": "claude-code", "message_id": 3, "at": "2026-03-01T10:00:05.000Z", "role": "assistant", "type": "text",
         "tool": None, "snippet": "Understood: [billing]-[api] goes to [staging] before prod."},
        {"conversation": "s1", "harness": "claude-code", "message_id": 1, "at": "2026-03-01T10:00:00.000Z", "role": "user", "type": "text",
         "tool": None,
         "snippet": "From now on always deploy [billing]-[api] to [staging] first, because prod broke last week."}]
    text = cli(searchable, "search", "--agent", "shop", "billing-api", "staging").output.splitlines()
    assert text[:3] == ["Memory of shop for 'billing-api staging':", "Cards:",
                        "  #1 [preference, 2026-03-01, from claude-code] Always deploy billing-api to staging first, because prod broke last week."]
    assert text[3] == "History:" and text[4].startswith("  2026-03-01 10:00  s1 (claude-code)  assistant: ")
    # Words only in the injected block are never found; the block is not history.
    for words_only_injected in ("kubernetes", "nearest", "outdated"):
        assert search_json(searchable, "shop", words_only_injected) == {
            "agent": "shop", "query": words_only_injected, "cards": [], "history": []}


QUERIES = ['"', '""', "'", "*", "billing*", "NEAR(billing staging)", "billing NEAR staging", "AND", "OR OR", "NOT",
           "billing NOT staging", "billing -staging", "(billing", "billing)", "{billing}", "billing:staging",
           "^billing", "billing + staging", "\x00billing", "billing OR prod AND NOT x", 'x"y"z', "\\", "%", "_",
           "billing' OR 1=1", "rowid", "blocks_fts", "cards_fts", "🙂", "ﬁle", "a" * 3000, " ".join(["billing"] * 300)]


def test_search_never_errors_on_fts_syntax(searchable):
    for q in QUERIES:
        res = cli(searchable, "search", "--agent", "shop", "--json", "--", q)
        assert res.exit_code == 0 and res.exception is None, (q, res.output, res.exception)
        assert set(json.loads(res.output)) == {"agent", "query", "cards", "history"}
    # Operators are words here, never syntax: the same hits as the plain query.
    plain = search_json(searchable, "shop", "billing", "staging")
    assert search_json(searchable, "shop", "billing AND staging")["history"] == plain["history"]
    assert search_json(searchable, "shop", '"billing" (staging)')["history"] == plain["history"]


def test_search_for_a_flag_is_a_search(projects, tmp_path):
    home = tmp_path / "home"
    write(projects / "-home-dev-shop" / "s1.jsonl",
          line("user", "u1", "Never commit with --no-verify, the pre-commit hook catches leaked keys.", session="s1"))
    index_json(home, projects)
    res = cli(home, "search", "--agent", "shop", "--json", "--no-verify")
    assert res.exit_code == 0, res.output
    assert [h["conversation"] for h in json.loads(res.output)["history"]] == ["s1"]


def test_search_finds_words_outside_ascii(projects, tmp_path):
    home = tmp_path / "home"
    write(projects / "-home-dev-shop" / "s1.jsonl",
          line("user", "u1", "The Zürich café-service and the Straße feed share one queue.", session="s1"),
          line("user", "u2", "Сервер платежей падает ночью.", session="s1", parent="u1"),
          line("user", "u3", "東京 の 決済 サーバー を 移行 する", session="s1", parent="u2"),
          line("user", "u4", "The rich text editor is slow.", session="s1", parent="u3"))
    index_json(home, projects)
    hits = {q: [h["message_id"] for h in search_json(home, "shop", q)["history"]]
            for q in ("Zürich", "ZÜRICH", "café", "Straße", "платежей", "決済")}
    assert hits == {"Zürich": [1], "ZÜRICH": [1], "café": [1], "Straße": [1], "платежей": [2], "決済": [3]}


def test_search_finds_the_users_words_next_to_an_injected_block_but_not_the_block(projects, tmp_path):
    home = tmp_path / "home"
    write(projects / "-home-dev-shop" / "s1.jsonl",
          line("user", "u1", "Ship the ledger export tonight\n<user-prompt-submit-hook>" + MEMORY
               + "</user-prompt-submit-hook>", session="s1", version="1.0.98"))
    index_json(home, projects)
    assert search_json(home, "shop", "kubernetes")["history"] == []
    assert [h["message_id"] for h in search_json(home, "shop", "ledger", "export")["history"]] == [1]


# ---------------------------------------------------------------------------------------------
# Incrementality


def _count_statements(monkeypatch) -> list[str]:
    """Every SQL statement run on any sqlite3 connection opened from now on."""
    seen: list[str] = []
    real = sqlite3.connect

    def connect(*args, **kwargs):
        conn = real(*args, **kwargs)
        conn.set_trace_callback(seen.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", connect)
    return seen


def test_a_second_index_is_a_no_op_whose_cost_does_not_grow_with_unchanged_files(tmp_path, monkeypatch):
    per_size = {}
    real_open = index_mod._Run._open
    for n in (1, 40):
        home, projects = tmp_path / f"home{n}", tmp_path / f"projects{n}"
        for i in range(n):
            write(projects / "-home-dev-shop" / f"s{i}.jsonl", line("user", f"u{i}", f"prompt {i}", session=f"s{i}"))
        assert index_all(home, projects)["messages_added"] == n
        opened: list = []
        monkeypatch.setattr(index_mod._Run, "_open", lambda self, p: (opened.append(p), real_open(self, p))[1])
        with monkeypatch.context() as m:
            stmts = _count_statements(m)
            s = index_all(home, projects)
        assert {k: s[k] for k in ("files_seen", "files_changed", "messages_added", "lines_read", "skipped", "rejected")} == {
            "files_seen": n, "files_changed": 0, "messages_added": 0, "lines_read": 0, "skipped": {}, "rejected": {}}
        assert opened == []
        writes = [x for x in stmts if x.split()[0].upper() in ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "DROP")]
        assert writes == []
        per_size[n] = len(stmts)
    assert per_size[40] == per_size[1]


def test_appends_cut_at_any_byte_index_exactly_what_one_run_over_the_whole_files_does(tmp_path):
    one = tmp_path / "one"
    index_all(one / "home", copy_fixtures(one / "projects", "v1-summary-inline-sidechains", "v2-tool-heavy"))
    inc = tmp_path / "inc"
    projects = copy_fixtures(inc / "projects", "v1-summary-inline-sidechains", "v2-tool-heavy")
    files = sorted(projects.rglob("*.jsonl"))
    full = {f: f.read_bytes() for f in files}
    added = 0
    for share in (0.0, 0.137, 0.5, 0.731, 1.0):           # cuts land mid-line and mid split message
        for f in files:
            f.write_bytes(full[f][:int(len(full[f]) * share)])
        s = index_all(inc / "home", projects)
        assert s["rejected"] == {} and "duplicate" not in s["skipped"]
        added += s["messages_added"]
    assert index_dump(inc / "home") == index_dump(one / "home")
    assert added == sum(a["messages"] for a in agents_json(one / "home").values())


def test_a_transcript_growing_while_it_is_read_ends_equal_to_one_clean_run(tmp_path):
    src = SHARED_FIXTURES / "v1-summary-inline-sidechains" / f"{V1_SESSION}.jsonl"
    one = tmp_path / "one"
    index_all(one / "home", copy_fixtures(one / "projects", "v1-summary-inline-sidechains"))
    grow = tmp_path / "grow" / "projects" / "v1-summary-inline-sidechains"
    grow.mkdir(parents=True)
    full = src.read_bytes()
    f = grow / src.name
    step = 50_001                                       # slices end mid-line
    f.write_bytes(full[:step])
    at = [step]

    def progress(path, offset):                         # after every committed chunk, the writer appends more
        if at[0] < len(full):
            with open(f, "ab") as fh:
                fh.write(full[at[0]:at[0] + step])
            at[0] += step

    s = index_all(tmp_path / "grow" / "home", grow.parent, chunk_bytes=32_768, progress=progress)
    assert at[0] >= len(full) and s["rejected"] == {}
    again = index_all(tmp_path / "grow" / "home", grow.parent)
    assert (again["messages_added"], again["rejected"], again["skipped"]) == (0, {}, {})
    assert index_dump(tmp_path / "grow" / "home") == index_dump(one / "home")
