"""consolidate.index storage: packed line keys, per-conversation caches, leaf packing, the FTS index."""

from __future__ import annotations

import os
import random
import sqlite3
from functools import partial
from pathlib import Path

import pytest

from reverie.consolidate import index as index_mod
from reverie.consolidate.index import index_all
from reverie.consolidate.index_read import load_conversation
from reverie.consolidate.index_shape import line_key, unkey
from reverie.consolidate.index_write import _LeafPacker
from reverie.consolidate.paths import agent_db_path
import transcripts
from transcripts import write

U1 = "0f0e0d0c-0b0a-4908-8706-050403020100"
U2 = "1f0e0d0c-0b0a-4908-8706-050403020101"
U3 = "2f0e0d0c-0b0a-4908-8706-050403020102"


line = partial(transcripts.line, user_type=None)   # lines without the userType field


def rows(home: Path, sql: str, args=()) -> list[tuple]:
    conn = sqlite3.connect(agent_db_path(home, "shop"))
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


@pytest.fixture
def proj(tmp_path) -> Path:
    return tmp_path / "projects" / "-home-dev-shop"


def test_line_key_packs_canonical_uuids_only_and_round_trips():
    assert line_key(U1) == bytes.fromhex("0f0e0d0c0b0a49088706050403020100")
    assert unkey(line_key(U1)) == U1
    upper = U1.upper()
    for other in (upper, "u1", "line-" + "a" * 32, U1.replace("-", ""), U1[:-1] + "g", U1[:8] + " " + U1[9:], ""):
        assert line_key(other) == other and unkey(other) == other
    assert unkey(None) is None


def test_line_uuids_are_stored_packed_and_read_back_as_strings(proj, reverie_home):
    f = write(proj / "s-1.jsonl", line("user", U1, "first"), line("user", U2, "second", parent=U1),
              line("user", "u-plain", "third", parent=U2))
    index_all(reverie_home, proj.parent)
    assert rows(reverie_home, "SELECT typeof(uuid), length(uuid), message_id FROM message_lines ORDER BY message_id") == [
        ("blob", 16, 1), ("blob", 16, 2), ("text", 7, 3)]
    assert rows(reverie_home, "SELECT uuid, typeof(parent_uuid) FROM messages ORDER BY id") == [
        (U1, "null"), (U2, "blob"), ("u-plain", "blob")]
    conv = load_conversation(agent_db_path(reverie_home, "shop"), "s-1")
    assert [(m["uuid"], m["parent_uuid"]) for m in conv["messages"]] == [(U1, None), (U2, U1), ("u-plain", U2)]
    # A replaced file is re-read: packed and plain keys are both recognised as duplicates.
    tmp = f.with_suffix(".tmp")
    write(tmp, line("user", U1, "first"), line("user", "u-plain", "third", parent=U2), line("user", U3, "fourth"))
    os.replace(tmp, f)
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["skipped"]) == (1, {"duplicate": 2})
    assert rows(reverie_home, "SELECT uuid FROM messages ORDER BY id") == [(U1,), (U2,), ("u-plain",), (U3,)]


def test_tool_result_is_named_when_its_tool_use_came_in_an_earlier_run(proj, reverie_home):
    f = write(proj / "s-1.jsonl",
              line("assistant", "a1", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]))
    write(proj / "s-2.jsonl",
          line("assistant", "b1", [{"type": "tool_use", "id": "toolu_2", "name": "Read", "input": {"file_path": "/a"}}],
               session="s-2"))
    index_all(reverie_home, proj.parent)
    write(f, line("user", "u1", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}], parent="a1"),
          # toolu_2 belongs to another conversation: not this one's tool.
          line("user", "u2", [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "?"}], parent="u1"),
          mode="a")
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["blocks_added"]) == (2, 2)
    assert rows(reverie_home, "SELECT m.uuid, b.type, b.tool_name, b.tool_use_id, b.text FROM blocks b "
                              "JOIN messages m ON m.id = b.message_id ORDER BY m.id, b.idx") == [
        ("a1", "tool_use", "Bash", "toolu_1", "command: ls"),
        ("b1", "tool_use", "Read", "toolu_2", "file_path: /a"),
        ("u1", "tool_result", "Bash", "toolu_1", "a.py"),
        ("u2", "tool_result", None, "toolu_2", "?")]


def test_a_failed_chunk_leaves_no_trace_in_the_conversation_caches(proj, reverie_home, monkeypatch):
    # Chunk 1: u1 + a1 (msg_A). Chunk 2 (fails once): a2 (new message msg_B) + a3 (msg_A, a merge).
    # The sub-agent file of the same session, read later in the same run, continues msg_B: it must
    # not be merged into the message of the rolled back chunk.
    c1 = line("user", "u1", "go") + line("assistant", "a1", [{"type": "text", "text": "one"}], msg_id="msg_A", parent="u1")
    c2 = (line("assistant", "a2", [{"type": "text", "text": "two"}], msg_id="msg_B", parent="a1")
          + line("assistant", "a3", [{"type": "text", "text": "three"}], msg_id="msg_A", parent="a2"))
    write(proj / "s-1.jsonl", c1, c2)
    write(proj / "s-1" / "subagents" / "agent-x.jsonl",
          line("assistant", "x1", [{"type": "text", "text": "sub"}], msg_id="msg_B", isSidechain=True, agentId="x"))
    real = index_mod._AgentWriter._save_mark
    calls = {"n": 0}

    def failing(self, fs, *a, **kw):
        if fs.tf.kind == "main" and fs.mark.offset > 0:
            calls["n"] += 1
            if calls["n"] == 1:
                raise sqlite3.OperationalError("disk I/O error")
        return real(self, fs, *a, **kw)

    monkeypatch.setattr(index_mod._AgentWriter, "_save_mark", failing)
    s = index_all(reverie_home, proj.parent, chunk_bytes=len(c1))
    assert (s["messages_added"], s["lines_merged"], s["rejected"]) == (3, 0, {"file_write_error": 1})
    assert rows(reverie_home, "SELECT m.uuid, m.api_id, b.idx, b.text FROM messages m JOIN blocks b ON b.message_id = m.id "
                              "ORDER BY m.id, b.idx") == [
        ("u1", None, 0, "go"), ("a1", "msg_A", 0, "one"), ("x1", "msg_B", 0, "sub")]
    s = index_all(reverie_home, proj.parent, chunk_bytes=len(c1))
    assert (s["messages_added"], s["lines_merged"], s["rejected"]) == (0, 2, {})
    assert rows(reverie_home, "SELECT m.uuid, m.api_id, b.idx, b.text FROM messages m JOIN blocks b ON b.message_id = m.id "
                              "ORDER BY m.id, b.idx") == [
        ("u1", None, 0, "go"), ("a1", "msg_A", 0, "one"), ("a1", "msg_A", 1, "three"),
        ("x1", "msg_B", 0, "sub"), ("x1", "msg_B", 1, "two")]
    assert rows(reverie_home, "SELECT messages FROM conversations") == [(3,)]


def test_leaf_packer_keeps_every_row_and_fills_pages_greedily():
    packer = _LeafPacker(4096)
    rows_in = [(1, i, "tool_result", None, None, 0, "x" * n, n, 0) for i, n in enumerate((3000, 900, 2500, 1000, 40))]
    sizes = {r[1]: packer.cell(r) for r in rows_in}
    # cell = payload-size varint + rowid varint (4, an upper bound) + record + 2-byte pointer; the
    # record of a 3,000-byte text: 12 header bytes + 11 (type) + 3,000 (text) + 2 (original_size).
    assert sizes == {0: 3033, 1: 933, 2: 2534, 3: 1034, 4: 71}
    out = packer.order(rows_in)
    # The last page's fill is unknown: the largest row opens a page, then the largest that still
    # fits (1,034 of the 1,055 bytes left); nothing fits the last 21 bytes, so 2,534 opens the next
    # page, followed by 933 and 71. (SQLite puts exactly these rows on these two pages.)
    assert [r[1] for r in out] == [0, 3, 2, 1, 4]
    assert packer.free == 4088 - 2534 - 933 - 71
    assert packer.order([]) == []


def test_blocks_leaf_pages_are_nearly_full(proj, reverie_home):
    rng = random.Random(5)
    lines = []
    for i in range(300):
        out = " ".join(f"w{rng.randrange(10_000)}" for _ in range(rng.randrange(100, 1200)))
        lines.append(line("assistant", f"a{i}", [{"type": "tool_use", "id": f"t{i}", "name": "Bash",
                                                  "input": {"command": f"cmd {i}"}}], parent=f"u{i - 1}" if i else None))
        lines.append(line("user", f"u{i}", [{"type": "tool_result", "tool_use_id": f"t{i}", "content": out}],
                          parent=f"a{i}"))
    write(proj / "s-1.jsonl", *lines)
    s = index_all(reverie_home, proj.parent, chunk_bytes=200_000)
    assert s["blocks_added"] == 600
    (leaf, unused, pages), = rows(reverie_home, "SELECT SUM(pgsize), SUM(unused), COUNT(*) FROM dbstat "
                                                "WHERE name = 'blocks' AND pagetype = 'leaf'")
    # In conversation order about a fifth of each leaf page stays empty; packed, a few percent.
    assert pages > 50 and unused < 0.05 * leaf
    # Ids follow the packing, the (message_id, idx) order is intact.
    got = rows(reverie_home, "SELECT m.uuid, b.idx, b.type FROM blocks b JOIN messages m ON m.id = b.message_id "
                             "ORDER BY b.message_id, b.idx")
    assert got == [(f"{k}{i}", 0, t) for i in range(300) for k, t in (("a", "tool_use"), ("u", "tool_result"))]


def test_history_search_works_on_the_index(proj, reverie_home):
    from reverie.consolidate.search import search_history

    write(proj / "s-1.jsonl",
          line("user", "u1", "Deploying the billing service failed: tool_result missing in parse_line"),
          line("user", "u2", "deploy deploy deploy: the deploy script runs on the build host", parent="u1"),
          line("user", "u3", "nothing relevant here", parent="u2"))
    index_all(reverie_home, proj.parent)
    conn = sqlite3.connect(agent_db_path(reverie_home, "shop"))
    try:
        def hits(q):
            return [(h["message_id"], h["snippet"]) for h in search_history(conn, q)]

        # Porter stems (deploying = deploy); BM25 ranks the row with more occurrences first.
        assert hits("deploy") == [
            (2, "[deploy] [deploy] [deploy]: the [deploy] script runs on the build host"),
            (1, "[Deploying] the billing service failed: tool_result missing in parse_line")]
        # An identifier is the AND of its parts (detail=none has no multi-token phrases), and a
        # part alone finds the identifier, as it finds the word in prose.
        assert hits("tool_result") == [(1, "Deploying the billing service failed: [tool]_[result] missing in parse_line")]
        assert hits("result") == [(1, "Deploying the billing service failed: tool_[result] missing in parse_line")]
        assert hits("parse_line failed") == [
            (1, "Deploying the billing service [failed]: tool_result missing in [parse]_[line]")]
        assert hits("xyzzy") == []
    finally:
        conn.close()


def test_a_secret_learned_later_is_scrubbed_from_rows_stored_before(proj, reverie_home):
    value = "Zq8vN3kP2xLm9Ta7wB4c"
    f = write(proj / "s-1.jsonl", line("user", "u1", f"try this one: {value} and tell me"))
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["rescanned"]) == (1, 0)
    assert rows(reverie_home, "SELECT text FROM blocks") == [(f"try this one: {value} and tell me",)]
    # Seen in a context that gives it away: remembered, and every agent's earlier rows re-scrubbed.
    write(f, line("user", "u2", f"export DB_PASSWORD={value}", parent="u1"), mode="a")
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["rescanned"]) == (1, 1)
    texts = [t for (t,) in rows(reverie_home, "SELECT text FROM blocks ORDER BY id")]
    assert texts[0] == "try this one: [REDACTED:remembered] and tell me"
    assert value not in texts[1] and texts[1].startswith("export DB_PASSWORD=[REDACTED")
    assert rows(reverie_home, "SELECT COUNT(*) FROM blocks_fts WHERE blocks_fts MATCH ?", (f'"{value}"',)) == [(0,)]
