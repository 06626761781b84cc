"""consolidate.index: the shared fixtures fully accounted for, incremental watermarks, agents, redaction."""

from __future__ import annotations

import json
import os
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from reverie.consolidate import index as index_mod
from reverie.consolidate.index import index_all
from reverie.consolidate.paths import agent_db_path
from reverie.consolidate.settings import set_value
from transcripts import line, write


def _rows(home: Path, agent: str, sql: str, args=()) -> list[tuple]:
    conn = sqlite3.connect(agent_db_path(home, agent))
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


@pytest.fixture
def projects(tmp_path) -> Path:
    return tmp_path / "projects"


# ---------------------------------------------------------------------------------------------
# The shared fixtures, every line accounted for


def _independent_count(root: Path) -> dict:
    by_type: Counter = Counter()
    system: Counter = Counter()
    assistant_ids: set = set()
    assistant_lines = empty = 0
    for f in sorted(root.rglob("*.jsonl")):
        for raw in f.read_bytes().splitlines():
            d = json.loads(raw)
            by_type[d["type"]] += 1
            if d["type"] == "system":
                system[d["subtype"]] += 1
            if d["type"] == "assistant":
                blocks = d["message"]["content"]
                # A line whose blocks are all whitespace-only text carries nothing to store.
                if all(b["type"] in ("text", "thinking") and not b.get(b["type"], "").strip() for b in blocks):
                    empty += 1
                    continue
                assistant_lines += 1
                assistant_ids.add((d["sessionId"], d["message"]["id"]))
    return {"by_type": by_type, "system": system, "assistant_messages": len(assistant_ids),
            "assistant_lines": assistant_lines, "assistant_empty": empty}


def test_shared_fixtures_every_line_accounted_for(shared_fixtures, reverie_home):
    truth = _independent_count(shared_fixtures)
    s = index_all(reverie_home, shared_fixtures)
    stored_system = truth["system"]["compact_boundary"] + truth["system"]["local_command"]
    expected_lines = {
        "assistant": {"stored": truth["assistant_messages"], "empty:assistant": truth["assistant_empty"],
                      "merged": truth["assistant_lines"] - truth["assistant_messages"]},
        "user": {"stored": truth["by_type"]["user"]},
        "system": {"stored": stored_system,
                   **{f"system:{k}": v for k, v in truth["system"].items() if k not in ("compact_boundary", "local_command")}},
        "progress": {"progress": truth["by_type"]["progress"]},
        "file-history-snapshot": {"file-history-snapshot": truth["by_type"]["file-history-snapshot"]},
        "queue-operation": {"queue-operation": truth["by_type"]["queue-operation"]},
        "summary": {"summary_foreign": truth["by_type"]["summary"]},
    }
    assert s["lines"] == {k: dict(sorted(v.items())) for k, v in sorted(expected_lines.items())}
    assert s["lines_read"] == sum(truth["by_type"].values())
    messages = truth["by_type"]["user"] + truth["assistant_messages"] + stored_system
    assert (s["files_seen"], s["files_changed"], s["messages_added"], s["rejected"], s["lines_merged"], s["titles"]) == (
        5, 5, messages, {}, truth["assistant_lines"] - truth["assistant_messages"], 0)
    assert s["skipped"] == {
        "file-history-snapshot": truth["by_type"]["file-history-snapshot"],
        "progress": truth["by_type"]["progress"],
        "queue-operation": truth["by_type"]["queue-operation"],
        "summary_foreign": 1,
        "empty:assistant": truth["assistant_empty"],
        **{f"system:{k}": v for k, v in truth["system"].items() if k not in ("compact_boundary", "local_command")},
    }
    assert s["agents"] == ["demo", "spotter", "spotter-gqc"]
    total = 0
    for agent in s["agents"]:
        (n_msgs,), = _rows(reverie_home, agent, "SELECT COUNT(*) FROM messages")
        (n_conv_msgs,), = _rows(reverie_home, agent, "SELECT SUM(messages) FROM conversations")
        (n_lines,), = _rows(reverie_home, agent, "SELECT COUNT(*) FROM message_lines")
        assert n_msgs == n_conv_msgs
        total += n_msgs
        assert n_lines >= n_msgs
    assert total == messages

    # v2: sub-agent files keep their agentId and join the parent session; v1: sidechain roots.
    assert _rows(reverie_home, "spotter-gqc",
                 "SELECT subagent, conversation, COUNT(*) FROM messages WHERE is_sidechain = 1 GROUP BY 1, 2 ORDER BY 1") == [
        ("a881341", "258c7280-ae70-4798-800f-63464d01a85d", 6),
        ("acompact-fffbd0", "258c7280-ae70-4798-800f-63464d01a85d", 4),
    ]
    roots = _rows(reverie_home, "demo", "SELECT uuid FROM messages WHERE is_sidechain = 1 AND parent_uuid IS NULL ORDER BY uuid")
    subagents = _rows(reverie_home, "demo", "SELECT DISTINCT subagent FROM messages WHERE is_sidechain = 1 ORDER BY 1")
    assert len(roots) == 5 and subagents == roots
    assert _rows(reverie_home, "spotter-gqc", "SELECT role, kind, COUNT(*) FROM messages "
                 "WHERE kind IN ('compact_summary', 'compact_boundary') GROUP BY 1, 2 ORDER BY 1") == [
        ("system", "compact_boundary", 1), ("user", "compact_summary", 1)]

    again = index_all(reverie_home, shared_fixtures)
    assert (again["files_seen"], again["files_changed"], again["messages_added"], again["lines_read"],
            again["skipped"], again["rejected"]) == (5, 0, 0, 0, {}, {})


# ---------------------------------------------------------------------------------------------
# Incremental behaviour


def test_split_api_message_is_one_row_across_incremental_runs(projects, reverie_home):
    f = write(projects / "-home-dev-shop" / "s-1.jsonl",
              line("user", "u1", "hi"),
              line("assistant", "a1", [{"type": "thinking", "thinking": "hmm", "signature": "x"}], parent="u1", msg_id="msg_A"))
    assert index_all(reverie_home, projects)["messages_added"] == 2
    write(f, line("assistant", "a2", [{"type": "text", "text": "Hello."}], parent="a1", msg_id="msg_A"),
          line("assistant", "a3", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
               parent="a2", msg_id="msg_A"), mode="a")
    s = index_all(reverie_home, projects)
    assert (s["messages_added"], s["lines_merged"], s["blocks_added"]) == (0, 2, 2)
    assert _rows(reverie_home, "shop", "SELECT m.uuid, m.api_id, b.idx, b.type, b.text FROM messages m "
                 "JOIN blocks b ON b.message_id = m.id WHERE m.role = 'assistant' ORDER BY b.idx") == [
        ("a1", "msg_A", 0, "thinking", "hmm"), ("a1", "msg_A", 1, "text", "Hello."), ("a1", "msg_A", 2, "tool_use", "command: ls")]
    assert _rows(reverie_home, "shop", "SELECT messages FROM conversations") == [(2,)]


def test_half_written_last_line_waits_until_complete(projects, reverie_home):
    f = projects / "-home-dev-shop" / "s-1.jsonl"
    full = line("user", "u2", "second")
    write(f, line("user", "u1", "first"), full[:25])
    s = index_all(reverie_home, projects)
    assert (s["messages_added"], s["rejected"]) == (1, {})
    assert _rows(reverie_home, "shop", "SELECT offset, lines FROM sources") == [(len(line("user", "u1", "first")), 1)]
    assert index_all(reverie_home, projects)["files_changed"] == 0     # unchanged stat: one stat, no read
    write(f, full[25:], mode="a")
    s = index_all(reverie_home, projects)
    assert (s["messages_added"], s["rejected"]) == (1, {})
    assert _rows(reverie_home, "shop", "SELECT uuid FROM messages ORDER BY id") == [("u1",), ("u2",)]


def test_truncated_or_replaced_file_is_reread_without_duplicates(projects, reverie_home):
    f = write(projects / "-home-dev-shop" / "s-1.jsonl", line("user", "u1", "one"), line("user", "u2", "two"))
    index_all(reverie_home, projects)
    # Replaced by a different, shorter file (new first bytes): re-read from the start.
    tmp = f.with_suffix(".tmp")
    write(tmp, line("user", "u1", "one", ts="2026-03-01T10:00:00.001Z"), line("user", "u3", "three"))
    os.replace(tmp, f)
    s = index_all(reverie_home, projects)
    assert (s["messages_added"], s["skipped"]) == (1, {"duplicate": 1})
    # Truncated in place to less than the watermark.
    with open(f, "r+b") as fh:
        fh.truncate(len(line("user", "u1", "one", ts="2026-03-01T10:00:00.001Z")))
    s = index_all(reverie_home, projects)
    assert (s["messages_added"], s["skipped"]) == (0, {"duplicate": 1})
    assert _rows(reverie_home, "shop", "SELECT uuid FROM messages ORDER BY id") == [("u1",), ("u2",), ("u3",)]
    assert index_all(reverie_home, projects)["files_changed"] == 0


def test_a_killed_run_leaves_a_consistent_db_and_resumes(projects, reverie_home, monkeypatch):
    lines = [line("user", f"u{i}", f"message number {i} " + "x" * 200) for i in range(40)]
    write(projects / "-home-dev-shop" / "s-1.jsonl", *lines)
    calls = {"n": 0}
    real = index_mod._AgentWriter.write_chunk

    def dying(self, *a, **kw):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt("killed")
        return real(self, *a, **kw)

    monkeypatch.setattr(index_mod._AgentWriter, "write_chunk", dying)
    with pytest.raises(KeyboardInterrupt):
        index_all(reverie_home, projects, chunk_bytes=2048)
    monkeypatch.setattr(index_mod._AgentWriter, "write_chunk", real)
    (n,), = _rows(reverie_home, "shop", "SELECT COUNT(*) FROM messages")
    (offset, nlines), = _rows(reverie_home, "shop", "SELECT offset, lines FROM sources")
    assert 0 < n < 40 and nlines == n and offset == sum(len(x) for x in lines[:n])
    s = index_all(reverie_home, projects, chunk_bytes=2048)
    assert (s["messages_added"], s["skipped"]) == (40 - n, {})
    assert _rows(reverie_home, "shop", "SELECT COUNT(DISTINCT uuid), COUNT(*) FROM messages") == [(40, 40)]


def test_deleted_transcript_counts_as_gone_and_stays_in_the_index(projects, reverie_home):
    f = write(projects / "-home-dev-shop" / "s-1.jsonl", line("user", "u1", "keep me"))
    write(projects / "-home-dev-shop" / "s-2.jsonl", line("user", "v1", "other", session="s-2"))
    index_all(reverie_home, projects)
    f.unlink()
    s = index_all(reverie_home, projects)
    assert (s["files_seen"], s["files_missing"], s["messages_added"]) == (1, 1, 0)
    assert _rows(reverie_home, "shop", "SELECT path LIKE '%s-1.jsonl', missing FROM sources ORDER BY path") == [(1, 1), (0, 0)]
    from reverie.consolidate.agents import list_agents

    (row,) = list_agents(reverie_home)
    assert (row["conversations"], row["messages"], row["transcripts_on_disk"]) == (2, 2, 1)


def test_tool_results_are_clipped_after_redaction_with_original_size(projects, reverie_home):
    set_value(reverie_home, "index.tool_result_cap", 300)
    big = "HEAD " + "noise line\n" * 2000 + "TAIL"
    write(projects / "-home-dev-shop" / "s-1.jsonl",
          line("assistant", "a1", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat log"}}]),
          line("user", "u1", [{"type": "tool_result", "tool_use_id": "t1", "content": big}], parent="a1"))
    index_all(reverie_home, projects)
    ((text, orig, clipped, tool),) = _rows(
        reverie_home, "shop", "SELECT text, original_size, clipped, tool_name FROM blocks WHERE type = 'tool_result'")
    assert (orig, clipped, tool) == (len(big), 1, "Bash")
    assert text.startswith("HEAD noise line") and text.endswith("TAIL") and len(text) < 400
    assert f"[... {len(big) - 300} characters clipped ...]" in text


def test_summary_title_only_when_its_leaf_is_in_the_file(projects, reverie_home):
    write(projects / "-home-dev-shop" / "s-1.jsonl",
          json.dumps({"type": "summary", "summary": "Fix the checkout bug", "leafUuid": "u2"}) + "\n",
          json.dumps({"type": "summary", "summary": "Another session's title", "leafUuid": "elsewhere"}) + "\n",
          line("user", "u1", "checkout is broken"), line("user", "u2", "thanks", parent="u1"))
    s = index_all(reverie_home, projects)
    assert (s["titles"], s["skipped"]) == (1, {"summary_foreign": 1})
    assert _rows(reverie_home, "shop", "SELECT id, title, messages FROM conversations") == [("s-1", "Fix the checkout bug", 2)]


def test_own_consolidation_sessions_and_their_subagents_are_never_indexed(projects, reverie_home):
    proj = projects / "-home-dev-shop"
    write(proj / "own.jsonl", line("user", "o1", "[reverie-consolidation] Extract cards from these passages", session="own"),
          line("assistant", "o2", [{"type": "text", "text": "[]"}], session="own", parent="o1"))
    write(proj / "own" / "subagents" / "agent-x1.jsonl",
          line("user", "o3", "sub prompt", session="own", isSidechain=True, agentId="x1"))
    write(proj / "s-1.jsonl", line("user", "u1", "real work"))
    s = index_all(reverie_home, projects)
    assert (s["messages_added"], s["skipped"]) == (1, {"own_session": 2})
    write(proj / "own.jsonl", line("user", "o4", "more", session="own"), mode="a")
    s = index_all(reverie_home, projects)
    assert (s["messages_added"], s["skipped"]) == (0, {"own_session": 1})
    assert _rows(reverie_home, "shop", "SELECT uuid FROM messages") == [("u1",)]


def test_disabled_agent_gets_nothing_new_until_switched_back_on(projects, reverie_home):
    f = write(projects / "-home-dev-shop" / "s-1.jsonl", line("user", "u1", "one"))
    index_all(reverie_home, projects)
    set_value(reverie_home, "agents.disabled", ["shop"])
    write(f, line("user", "u2", "two"), mode="a")
    write(projects / "-home-dev-shop" / "s-2.jsonl", line("user", "v1", "new session", session="s-2"))
    s = index_all(reverie_home, projects)
    assert (s["messages_added"], s["skipped"]) == (0, {"agent_disabled": 2})
    assert _rows(reverie_home, "shop", "SELECT uuid FROM messages") == [("u1",)]
    set_value(reverie_home, "agents.disabled", [])
    s = index_all(reverie_home, projects)
    assert (s["messages_added"], s["skipped"]) == (2, {})
    assert _rows(reverie_home, "shop", "SELECT uuid FROM messages ORDER BY uuid") == [("u1",), ("u2",), ("v1",)]


def test_agents_map_joins_directories_and_subfolders(projects, reverie_home):
    set_value(reverie_home, "agents.map", {"/home/dev/mono": "mono"})
    write(projects / "a" / "s-1.jsonl", line("user", "u1", "root", cwd="/home/dev/mono"))
    write(projects / "b" / "s-2.jsonl", line("user", "u2", "sub", cwd="/home/dev/mono/web", session="s-2"))
    write(projects / "c" / "s-3.jsonl", line("user", "u3", "other", cwd="/home/dev/other", session="s-3"))
    s = index_all(reverie_home, projects)
    assert s["agents"] == ["mono", "other"]
    assert _rows(reverie_home, "mono", "SELECT id, cwd FROM conversations ORDER BY id") == [
        ("s-1", "/home/dev/mono"), ("s-2", "/home/dev/mono/web")]
    registry = json.loads((reverie_home / "agents.json").read_text())
    assert {k: v["cwds"] for k, v in registry["agents"].items()} == {
        "mono": ["/home/dev/mono", "/home/dev/mono/web"], "other": ["/home/dev/other"]}


def test_subagent_file_goes_with_its_parent_sessions_agent(projects, reverie_home):
    proj = projects / "-home-dev-shop"
    write(proj / "s-1.jsonl", line("user", "u1", "spawn a helper"))
    # The sub-agent ran in a subfolder: its own cwd would make another agent.
    write(proj / "s-1" / "subagents" / "agent-ab12.jsonl",
          line("user", "x1", "helper prompt", cwd="/home/dev/shop/pkg", isSidechain=True, agentId="ab12"))
    s = index_all(reverie_home, projects)
    assert s["agents"] == ["shop"]
    assert _rows(reverie_home, "shop", "SELECT uuid, conversation, is_sidechain, subagent FROM messages ORDER BY id") == [
        ("u1", "s-1", 0, None), ("x1", "s-1", 1, "ab12")]


def test_secrets_never_reach_the_home(tmp_path, reverie_home):
    import importlib.util

    spec = importlib.util.spec_from_file_location("mk", Path(__file__).resolve().parent.parent / "fixtures" / "make_samples.py")
    mk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mk)
    projects = tmp_path / "samples"
    mk.write(projects)
    s = index_all(reverie_home, projects)
    assert s["messages_added"] > 50
    for path in reverie_home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in mk.PLANTED_SECRETS:
                assert secret.encode() not in data, path
    stored = [t for (t,) in _rows(reverie_home, "billing-api", "SELECT text FROM blocks WHERE text LIKE '%AWS_SECRET%'")]
    assert any("AWS_SECRET_ACCESS_KEY=[REDACTED:" in t for t in stored)


def test_agent_dirs_are_private(projects, reverie_home):
    write(projects / "-home-dev-shop" / "s-1.jsonl", line("user", "u1", "x"))
    index_all(reverie_home, projects)
    assert oct(agent_db_path(reverie_home, "shop").parent.stat().st_mode & 0o777) == "0o700"
    assert oct((reverie_home / "agents.json").stat().st_mode & 0o777) == "0o600"


def test_a_merely_truncated_line_is_one_rejected_line_not_a_nested_phantom():
    """Torn-line recovery takes the rest of a malformed line as a second line only when it is a whole
    transcript line (a message or a title with its session): an object nested in a truncated line
    (`"content":[{"type":"text",...}`) is not one."""
    from reverie.consolidate.index import _torn_line_rest
    from reverie.sources.claude_code import line_parser

    parse = line_parser(None)

    whole = json.dumps({"type": "user", "uuid": "u3", "sessionId": "s1", "cwd": "/w",
                         "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": "hi there"}})
    rest = _torn_line_rest(('{"type":"us' + whole).encode(), parse)
    assert (rest.outcome, rest.record.uuid, rest.session_id) == ("message", "u3", "s1")
    truncated = json.dumps({"type": "assistant", "uuid": "a", "sessionId": "s", "message": {
        "role": "assistant", "content": [{"type": "text", "text": "x"}]}})[:-2]
    assert _torn_line_rest(truncated.encode(), parse) is None
    assert _torn_line_rest(b'{"type":"user","message":{"role":"user","content":[{"type":"text"', parse) is None
