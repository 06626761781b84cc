"""sources.claude_code: discovery of the Claude Code layout and line parsing into records."""

from __future__ import annotations

import base64
import json

import pytest

from reverie.sources.claude_code import discover, parse_line
from reverie.sources.model import Block, clip


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


# ---------------------------------------------------------------------------------------------
# Claude Code 2.1: attachments, ai-title and the session-setting lines (issue 15)


def _attachment(att: dict, uuid: str = "at-1", **extra) -> bytes:
    return _line({**BASE, "type": "attachment", "attachment": att, "uuid": uuid, **extra})


def test_21_session_lines_are_named_and_ai_title_is_a_title():
    got = [(p.outcome, p.kind, p.line_type, p.session_id) for p in map(parse_line, [
        _line({"type": "ai-title", "aiTitle": "Fix the login redirect", "sessionId": "s-1"}),
        _line({"type": "last-prompt", "lastPrompt": "and the tests?", "sessionId": "s-1"}),
        _line({"type": "mode", "mode": "normal", "sessionId": "s-1"}),
        _line({"type": "permission-mode", "permissionMode": "default", "sessionId": "s-1"}),
        _line({"type": "ai-title", "sessionId": "s-1"}),
    ])]
    assert got == [
        ("title", "ai-title", "ai-title", "s-1"),
        ("skip", "last-prompt", "last-prompt", "s-1"),
        ("skip", "mode", "mode", "s-1"),
        ("skip", "permission-mode", "permission-mode", "s-1"),
        ("reject", "missing_title", "ai-title", None),
    ]
    assert parse_line(_line({"type": "ai-title", "aiTitle": "Fix the login redirect"})).title == "Fix the login redirect"


def test_v1_system_lines_without_subtype_are_named_by_level():
    p = parse_line(_line({**BASE, "type": "system", "uuid": "s", "level": "info", "isMeta": False,
                          "content": "SessionStart:startup [hooks/setup.py] completed successfully"}))
    assert (p.outcome, p.kind, p.line_type) == ("skip", "system:info", "system")
    bare = parse_line(_line({**BASE, "type": "system", "uuid": "s2", "content": "x"}))
    assert (bare.outcome, bare.kind) == ("skip", "system:untyped")


def test_known_attachment_subtypes_are_skipped_and_counted_by_subtype():
    subtypes = ["hook_success", "task_reminder", "file", "edited_text_file", "skill_listing", "date_change",
                "deferred_tools_delta", "todo_reminder", "plan_mode", "selected_lines_in_ide"]
    got = [(p.outcome, p.kind, p.line_type) for p in
           (parse_line(_attachment({"type": t, "content": "whatever it holds"})) for t in subtypes)]
    assert got == [("skip", f"attachment:{t}", f"attachment:{t}") for t in subtypes]


def test_an_unknown_attachment_subtype_is_format_drift():
    p = parse_line(_attachment({"type": "brand_new_reminder", "content": "x"}))
    assert (p.outcome, p.kind, p.line_type) == ("skip", "unknown:attachment:brand_new_reminder",
                                                "attachment:brand_new_reminder")
    no_att = parse_line(_line({**BASE, "type": "attachment", "uuid": "x"}))
    assert (no_att.outcome, no_att.kind, no_att.line_type) == ("reject", "missing_attachment", "attachment")


def test_a_queued_prompt_typed_by_the_user_is_a_human_turn():
    p = parse_line(_attachment({"type": "queued_command", "commandMode": "prompt", "origin": {"kind": "human"},
                                "prompt": "also update the changelog"}, uuid="q-1", parentUuid="a-1"))
    assert (p.outcome, p.kind, p.line_type, p.session_id, p.cwd) == (
        "message", "message", "attachment:queued_command", "s-1", "/w/app")
    r = p.record
    assert (r.uuid, r.role, r.kind, r.parent_uuid, r.timestamp, r.blocks) == (
        "q-1", "user", "message", "a-1", "2026-01-01T00:00:00.000Z", [Block("text", "also update the changelog")])
    # older 2.1 lines carry neither a mode nor an origin: still the user's words
    bare = parse_line(_attachment({"type": "queued_command", "prompt": [{"type": "text", "text": "and docs"}]}))
    assert (bare.record.kind, bare.record.blocks) == ("message", [Block("text", "and docs")])
    command = parse_line(_attachment({"type": "queued_command", "prompt": "<command-name>/compact</command-name>"}))
    assert command.record.kind == "command"


def test_a_queued_command_nobody_typed_is_meta_or_a_notification():
    peer = parse_line(_attachment({"type": "queued_command", "commandMode": "prompt", "origin": {"kind": "peer"},
                                   "prompt": "message from another session"}))
    meta = parse_line(_attachment({"type": "queued_command", "commandMode": "prompt", "isMeta": True,
                                   "prompt": "auto-continue"}))
    note = parse_line(_attachment({"type": "queued_command", "commandMode": "task-notification",
                                   "prompt": "<task-notification><status>completed</status></task-notification>"}))
    empty = parse_line(_attachment({"type": "queued_command", "prompt": "  "}))
    assert [(p.outcome, p.kind, p.record.role) for p in (peer, meta, note)] == [
        ("message", "meta", "user"), ("message", "meta", "user"), ("message", "notification", "user")]
    assert (empty.outcome, empty.kind) == ("skip", "empty:attachment:queued_command")


def test_injected_context_and_claude_md_are_stored_as_attachments():
    hook = parse_line(_attachment({"type": "hook_additional_context", "hookName": "SessionStart:startup",
                                   "content": ["Project notes from another plugin", "second part"]}))
    memory = parse_line(_attachment({"type": "nested_memory", "path": "/w/app/CLAUDE.md",
                                     "content": {"path": "/w/app/CLAUDE.md", "type": "Project",
                                                 "content": "Use pnpm. Run make check before pushing."}}))
    assert (hook.outcome, hook.kind, hook.line_type, hook.record.role, hook.record.blocks) == (
        "message", "attachment", "attachment:hook_additional_context", "user",
        [Block("attachment", "[hook_additional_context: SessionStart:startup]\nProject notes from another plugin\nsecond part")])
    assert (memory.outcome, memory.kind, memory.record.blocks) == (
        "message", "attachment",
        [Block("attachment", "[nested_memory: /w/app/CLAUDE.md]\nUse pnpm. Run make check before pushing.")])
    blank = parse_line(_attachment({"type": "nested_memory", "path": "/w/CLAUDE.md", "content": {"content": ""}}))
    assert (blank.outcome, blank.kind) == ("skip", "empty:attachment:nested_memory")


def test_line_parser_is_the_reader_interface():
    from reverie.sources import claude_code
    from reverie.sources.model import TranscriptFile

    parse = claude_code.line_parser(TranscriptFile(__import__("pathlib").Path("/x.jsonl"), "main", "p", "x"))
    assert (claude_code.HARNESS, claude_code.FORMAT) == ("claude-code", "jsonl")
    assert parse(_user("hi"), 1234) == parse_line(_user("hi"))
    assert claude_code.ATTACHMENTS >= {"hook_success", "hook_additional_context", "task_reminder", "queued_command",
                                       "file", "edited_text_file", "skill_listing", "date_change",
                                       "deferred_tools_delta", "nested_memory"}


def test_default_root_honours_claude_config_dir(monkeypatch, tmp_path):
    from reverie.sources import claude_code

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    assert claude_code.default_root() == tmp_path / "cfg" / "projects"
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    assert claude_code.default_root() == tmp_path / "h" / ".claude" / "projects"


@pytest.mark.parametrize("line_type", ["api-request", "api-request-blob", "api-request-shape", "atis-latch",
                                       "cost-state", "tools-used"])
def test_claude_code_2_1_3xx_bookkeeping_lines_are_named_skips_and_never_stored(line_type):
    """2.1.3xx writes request records (`api-request-blob` holds a whole request body: system prompt,
    CLAUDE.md, anything pasted) and accounting lines: each is skipped under its own name."""
    raw = json.dumps({"type": line_type, "uuid": "u-1", "sessionId": "s-1", "body": {"system": "CLAUDE.md text"}})
    parsed = parse_line(raw.encode())
    assert (parsed.outcome, parsed.kind, parsed.line_type, parsed.record) == ("skip", line_type, line_type, None)


@pytest.mark.parametrize("subtype", ["agent_listing_delta", "date", "environment", "model", "prompt_snapshot",
                                     "remote_session_change", "session_context"])
def test_claude_code_2_1_3xx_attachment_subtypes_are_named_skips(subtype):
    raw = json.dumps({"type": "attachment", "uuid": "u-2", "sessionId": "s-1", "attachment": {"type": subtype}})
    parsed = parse_line(raw.encode())
    assert (parsed.outcome, parsed.kind, parsed.line_type, parsed.record) == ("skip", f"attachment:{subtype}", f"attachment:{subtype}", None)
