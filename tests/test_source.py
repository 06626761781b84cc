"""consolidate.source: discovery of the Claude Code layout and line parsing into records."""

from __future__ import annotations

import base64
import json

from reverie.consolidate.source import Block, clip, discover, parse_line


def _line(obj) -> bytes:
    return json.dumps(obj).encode()


BASE = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w/app",
        "sessionId": "s-1", "version": "2.1.39", "gitBranch": "main", "timestamp": "2026-01-01T00:00:00.000Z"}


def _user(content, **extra):
    return _line({**BASE, "type": "user", "message": {"role": "user", "content": content}, "uuid": "u-1", **extra})


def _assistant(*blocks):
    return _line({**BASE, "type": "assistant", "uuid": "a-1", "message": {
        "model": "claude-opus-4-6", "id": "msg_1", "type": "message", "role": "assistant", "content": list(blocks)}})


def test_user_string_is_a_human_turn_with_every_field():
    p = parse_line(_user("deploy it"))
    assert (p.outcome, p.kind, p.line_type, p.cwd, p.session_id) == ("message", "message", "user", "/w/app", "s-1")
    r = p.record
    assert (r.uuid, r.role, r.kind, r.parent_uuid, r.session_id, r.api_id, r.is_sidechain, r.agent_id, r.cwd,
            r.git_branch, r.version, r.timestamp) == (
        "u-1", "user", "message", None, "s-1", None, False, None, "/w/app", "main", "2.1.39",
        "2026-01-01T00:00:00.000Z")
    assert r.blocks == [Block("text", "deploy it")]


def test_assistant_blocks_keep_tool_name_and_chosen_input_fields_only():
    p = parse_line(_assistant(
        {"type": "thinking", "thinking": "plan", "signature": "sig"},
        {"type": "text", "text": "Running it."},
        {"type": "tool_use", "id": "toolu_1", "name": "Edit",
         "input": {"file_path": "/w/app/a.py", "old_string": "OLD BODY", "new_string": "NEW BODY"}},
        {"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {"command": "ls", "description": "List"}},
    ))
    r = p.record
    assert (r.api_id, r.model, r.kind) == ("msg_1", "claude-opus-4-6", "message")
    assert r.blocks == [
        Block("thinking", "plan"),
        Block("text", "Running it."),
        Block("tool_use", "file_path: /w/app/a.py", tool_name="Edit", tool_use_id="toolu_1"),
        Block("tool_use", "description: List\ncommand: ls", tool_name="Bash", tool_use_id="toolu_2"),
    ]


def test_tool_results_string_and_list_content_and_images_become_placeholders():
    png = base64.b64encode(b"\x89PNG" + b"\0" * 296).decode()
    p = parse_line(_user([
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "out", "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": [
            {"type": "text", "text": "line"}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}]},
    ]))
    assert p.record.kind == "tool_result"
    assert p.record.blocks == [
        Block("tool_result", "out", tool_use_id="toolu_1", is_error=True),
        Block("tool_result", "line\n[image: image/png, 300 bytes]", tool_use_id="toolu_2"),
    ]
    p = parse_line(_user([{"type": "text", "text": "look"},
                          {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": png}}]))
    assert p.record.kind == "message"
    assert p.record.blocks == [Block("text", "look"), Block("image", "[image: image/jpeg, 300 bytes]")]
    assert png not in repr(p)


def test_user_kinds():
    kinds = {
        "compact": parse_line(_user("This session is being continued", isCompactSummary=True)).kind,
        "meta": parse_line(_user([{"type": "text", "text": "Skill body"}], isMeta=True)).kind,
        "command": parse_line(_user("<command-message>x</command-message>\n<command-name>/x</command-name>")).kind,
        "command_out": parse_line(_user("<local-command-stdout>ok</local-command-stdout>")).kind,
        "notification": parse_line(_user("<task-notification>\n<task-id>b1</task-id>")).kind,
    }
    assert kinds == {"compact": "compact_summary", "meta": "meta", "command": "command",
                     "command_out": "command_output", "notification": "notification"}


def test_system_lines_stored_or_skipped_by_subtype():
    boundary = parse_line(_line({**BASE, "type": "system", "subtype": "compact_boundary", "uuid": "b-1",
                                 "content": "Conversation compacted",
                                 "compactMetadata": {"trigger": "auto", "preTokens": 167094}}))
    assert (boundary.outcome, boundary.record.role, boundary.record.kind, boundary.record.blocks) == (
        "message", "system", "compact_boundary", [Block("text", "Conversation compacted (trigger auto, preTokens 167094)")])
    local = parse_line(_line({**BASE, "type": "system", "subtype": "local_command", "uuid": "l-1",
                              "content": "<command-name>/mcp</command-name>"}))
    assert (local.outcome, local.kind, local.record.blocks) == ("message", "local_command",
                                                                [Block("text", "<command-name>/mcp</command-name>")])
    turn = parse_line(_line({**BASE, "type": "system", "subtype": "turn_duration", "durationMs": 5, "uuid": "t-1"}))
    assert (turn.outcome, turn.kind, turn.line_type) == ("skip", "system:turn_duration", "system")


def test_skipped_titles_and_unreadable_lines():
    got = [(p.outcome, p.kind, p.line_type) for p in map(parse_line, [
        _line({"type": "progress", "data": {"type": "hook_progress"}}),
        _line({"type": "file-history-snapshot", "messageId": "m"}),
        _line({"type": "queue-operation", "operation": "enqueue"}),
        _line({"type": "brand-new-thing", "x": 1}),
        b'{"type": "user", "message": ',
        b"[1, 2]",
        _line({"uuid": "x"}),
        _line({**BASE, "type": "user", "uuid": "u"}),
        _line({**BASE, "type": "assistant", "uuid": "a", "message": {"role": "assistant", "content": []}}),
        b"   ",
    ])]
    assert got == [
        ("skip", "progress", "progress"),
        ("skip", "file-history-snapshot", "file-history-snapshot"),
        ("skip", "queue-operation", "queue-operation"),
        ("skip", "unknown:brand-new-thing", "brand-new-thing"),
        ("reject", "malformed_json", "?"),
        ("reject", "not_an_object", "?"),
        ("reject", "missing_type", "?"),
        ("reject", "missing_message", "user"),
        ("skip", "empty:assistant", "assistant"),
        ("skip", "blank", "blank"),
    ]
    title = parse_line(_line({"type": "summary", "summary": "Fix login", "leafUuid": "u-9"}))
    assert (title.outcome, title.kind, title.title, title.leaf_uuid) == ("title", "summary", "Fix login", "u-9")


def test_invalid_utf8_is_replaced_and_flagged():
    raw = _user("caf\u00e9").replace("caf\\u00e9".encode(), b"caf\xff\xfe")
    p = parse_line(raw)
    assert (p.outcome, p.repaired, p.record.blocks[0].text) == ("message", True, "caf\ufffd\ufffd")


def test_lone_surrogate_escapes_are_replaced_and_flagged_pairs_kept():
    # json.dumps writes both as \\udXXX escapes; only the pair is a character.
    p = parse_line(_user("bad \ud800 end, pair \U0001f600", cwd="/w/\udfff"))
    assert (p.outcome, p.repaired, p.surrogates) == ("message", False, True)
    assert (p.record.blocks[0].text, p.record.cwd, p.cwd) == ("bad \ufffd end, pair \U0001f600", "/w/\ufffd", "/w/\ufffd")
    fine = parse_line(_user("pair \U0001f600 and a path C:\\udir"))
    assert (fine.surrogates, fine.record.blocks[0].text) == (False, "pair \U0001f600 and a path C:\\udir")


def test_missing_uuid_gets_a_stable_synthetic_one():
    raw = _line({**BASE, "type": "user", "message": {"role": "user", "content": "hi"}})
    a, b = parse_line(raw).record, parse_line(raw).record
    assert a.uuid == b.uuid and a.uuid.startswith("line-") and a.synthetic_uuid


def test_clip_keeps_head_and_tail():
    text = "H" * 700 + "M" * 1000 + "T" * 300
    out, n, clipped = clip(text, 1000)
    assert (n, clipped) == (2000, True)
    assert out == "H" * 666 + "\n[... 1000 characters clipped ...]\n" + "M" * 34 + "T" * 300
    assert clip("short", 1000) == ("short", 5, False)


def test_discover_finds_main_subagent_and_v20_layouts(tmp_path):
    proj = tmp_path / "-w-app"
    (proj / "s-1" / "subagents").mkdir(parents=True)
    for rel in ("s-1.jsonl", "s-2.jsonl", "agent-old.jsonl", "s-1/subagents/agent-a1.jsonl", "notes.txt"):
        (proj / rel).write_text("")
    (tmp_path / "stray.jsonl").write_text("")
    got = [(str(f.path.relative_to(tmp_path)), f.kind, f.session_hint,
            f.parent_path.name if f.parent_path else None, f.stat is not None) for f in discover(tmp_path)]
    assert got == [
        ("-w-app/s-1.jsonl", "main", "s-1", None, True),
        ("-w-app/s-2.jsonl", "main", "s-2", None, True),
        ("-w-app/agent-old.jsonl", "subagent", None, None, True),
        ("-w-app/s-1/subagents/agent-a1.jsonl", "subagent", "s-1", "s-1.jsonl", True),
    ]
    assert discover(tmp_path / "nope") == []
