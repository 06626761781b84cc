"""sources.codex: discovery of Codex CLI rollouts and incremental line parsing into records, on
synthetic lines and on every licensed real rollout under ../shared/fixtures/real-sessions/codex."""

from __future__ import annotations

import base64
import collections
import json
import logging
import os
import uuid
from pathlib import Path

import pytest

from reverie.sources import codex
from reverie.sources.model import Block, Record

REAL = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real-sessions" / "codex"

META = {"id": "019a0000-0000-7000-8000-000000000001", "timestamp": "2025-11-01T10:00:00.000Z",
        "cwd": "/w/app", "originator": "codex_cli_rs", "cli_version": "0.63.0", "instructions": None,
        "source": "cli", "git": {"commit_hash": "abc", "branch": "main"}}


def _line(type_: str, payload: dict, ts: str = "2025-11-01T10:00:01.000Z") -> bytes:
    return json.dumps({"timestamp": ts, "type": type_, "payload": payload}, ensure_ascii=False).encode()


def _item(payload: dict, ts: str = "2025-11-01T10:00:01.000Z") -> bytes:
    return _line("response_item", payload, ts)


def _user(*texts: str, ts: str = "2025-11-01T10:00:01.000Z") -> bytes:
    return _item({"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": t} for t in texts]}, ts)


def _assistant(text: str, ts: str = "2025-11-01T10:00:02.000Z") -> bytes:
    return _item({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}, ts)


def _write(tmp_path: Path, lines: list[bytes], name: str = "rollout-2025-11-01T10-00-00-"
           "019a0000-0000-7000-8000-000000000001.jsonl") -> codex.TranscriptFile:
    day = tmp_path / "sessions" / "2025" / "11" / "01"
    day.mkdir(parents=True, exist_ok=True)
    (day / name).write_bytes(b"".join(raw + b"\n" for raw in lines))
    return next(tf for tf in codex.discover(tmp_path / "sessions") if tf.path.name == name)


def _read(tf, start_line: int = 0) -> list:
    """Every line of tf through one line_parser, from line `start_line` (at its byte offset)."""
    data = tf.path.read_bytes()
    lines = data.split(b"\n")[:-1]
    parse = codex.line_parser(tf)
    out, offset = [], 0
    for i, raw in enumerate(lines):
        if i >= start_line:
            out.append(parse(raw, offset))
        offset += len(raw) + 1
    return out


def _summary(parsed) -> list[tuple]:
    return [(p.outcome, p.kind, p.line_type) for p in parsed]


# ---------------------------------------------------------------------------------------------
# Synthetic lines


def test_meta_and_turn_context_go_onto_every_record(tmp_path):
    tf = _write(tmp_path, [
        _line("session_meta", META, "2025-11-01T10:00:00.000Z"),
        _line("turn_context", {"cwd": "/w/app/sub", "approval_policy": "on-request", "model": "gpt-5.1-codex"}),
        _user("deploy it"),
        _assistant("Deployed."),
    ])
    parsed = _read(tf)
    assert _summary(parsed) == [("skip", "session_meta", "session_meta"), ("skip", "turn_context", "turn_context"),
                                ("message", "message", "response_item"), ("message", "message", "response_item")]
    assert [(p.session_id, p.cwd) for p in parsed] == [(META["id"], "/w/app"), (META["id"], "/w/app/sub"),
                                                       (META["id"], "/w/app/sub"), (META["id"], "/w/app/sub")]
    u, a = parsed[2].record, parsed[3].record
    assert str(uuid.UUID(u.uuid)) == u.uuid and str(uuid.UUID(a.uuid)) == a.uuid and u.uuid != a.uuid
    assert u == Record(uuid=u.uuid, role="user", kind="message", blocks=[Block("text", "deploy it")],
                       parent_uuid=None, session_id=META["id"], cwd="/w/app/sub", git_branch="main",
                       version="0.63.0", timestamp="2025-11-01T10:00:01.000Z", model=None, synthetic_uuid=True)
    assert a == Record(uuid=a.uuid, role="assistant", kind="message", blocks=[Block("text", "Deployed.")],
                       parent_uuid=u.uuid, session_id=META["id"], cwd="/w/app/sub", git_branch="main",
                       version="0.63.0", timestamp="2025-11-01T10:00:02.000Z", model="gpt-5.1-codex",
                       synthetic_uuid=True)


def test_injected_turn_text_is_dropped_and_counted(tmp_path):
    env = "<environment_context>\n  <cwd>/w/app</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>"
    agents = "# AGENTS.md instructions for /w/app\n\n<INSTRUCTIONS>\nUse pnpm.\n</INSTRUCTIONS>"
    tf = _write(tmp_path, [
        _line("session_meta", META),
        _user(env),
        _user(agents),
        _user("<user_instructions>\n\nAlways run the linter.\n\n</user_instructions>"),
        _user(env, "fix the flaky test"),
        _item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions instructions>x"}]}),
        _user("   "),
    ])
    parsed = _read(tf)
    assert _summary(parsed) == [
        ("skip", "session_meta", "session_meta"),
        ("skip", "injected:environment_context", "response_item"),
        ("skip", "injected:agents_md", "response_item"),
        ("skip", "injected:user_instructions", "response_item"),
        ("message", "message", "response_item"),
        ("skip", "response_item:message:developer", "response_item"),
        ("skip", "empty:user", "response_item"),
    ]
    assert parsed[4].record.blocks == [Block("text", "fix the flaky test")]


def test_ide_context_is_an_attachment_and_the_request_the_text(tmp_path):
    text = ("# Context from my IDE setup:\n\n## Active file: src/app.py\n\n## Open tabs:\n- app.py: src/app.py\n\n"
            "## My request for Codex:\nwhy is this slow?\n")
    tf = _write(tmp_path, [_line("session_meta", META), _user(text),
                           _user("# Context from my IDE setup:\n\n## My request for Codex:\nhello\n")])
    parsed = _read(tf)
    assert parsed[1].record.blocks == [
        Block("attachment", "# Context from my IDE setup:\n\n## Active file: src/app.py\n\n## Open tabs:\n- app.py: src/app.py"),
        Block("text", "why is this slow?")]
    assert parsed[2].record.blocks == [Block("text", "hello")]


def test_tool_calls_and_outputs_pair_by_call_id(tmp_path):
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: src/b.py\n+z\n*** End Patch"
    tf = _write(tmp_path, [
        _line("session_meta", META),
        _item({"type": "function_call", "name": "shell", "call_id": "c1",
               "arguments": json.dumps({"command": ["bash", "-lc", "pytest -q"], "workdir": "/w/app", "timeout_ms": 1000})}),
        _item({"type": "function_call_output", "call_id": "c1",
               "output": json.dumps({"output": "1 failed", "metadata": {"exit_code": 1, "duration_seconds": 0.5}})}),
        _item({"type": "function_call", "name": "shell_command", "call_id": "c2",
               "arguments": json.dumps({"command": "ls", "workdir": "/w/app"})}),
        _item({"type": "function_call_output", "call_id": "c2", "output": "Exit code: 0\nWall time: 0 seconds\nOutput:\na.py\n"}),
        _item({"type": "custom_tool_call", "status": "completed", "call_id": "c3", "name": "apply_patch", "input": patch}),
        _item({"type": "custom_tool_call_output", "call_id": "c3",
               "output": json.dumps({"output": "Success.", "metadata": {"exit_code": 0}})}),
        _item({"type": "function_call", "name": "update_plan", "call_id": "c4", "arguments": json.dumps(
            {"explanation": "Two steps", "plan": [{"step": "Read", "status": "completed"}, {"step": "Fix", "status": "pending"}]})}),
        _item({"type": "function_call", "name": "mcp__db__query", "call_id": "c5", "arguments": "not json"}),
        _item({"type": "function_call_output", "call_id": "c9", "output": "orphan"}),
        _item({"type": "function_call_output", "call_id": "c5",
               "output": json.dumps({"output": "", "metadata": {"exit_code": 3}})}),
    ])
    blocks = [p.record.blocks for p in _read(tf)[1:]]
    assert blocks == [
        [Block("tool_use", "command: pytest -q\nworkdir: /w/app", tool_name="shell", tool_use_id="c1")],
        [Block("tool_result", "1 failed", tool_name="shell", tool_use_id="c1", is_error=True)],
        [Block("tool_use", "command: ls\nworkdir: /w/app", tool_name="shell_command", tool_use_id="c2")],
        [Block("tool_result", "Exit code: 0\nWall time: 0 seconds\nOutput:\na.py\n", tool_name="shell_command",
               tool_use_id="c2")],
        [Block("tool_use", "update: src/a.py\nadd: src/b.py", tool_name="apply_patch", tool_use_id="c3")],
        [Block("tool_result", "Success.", tool_name="apply_patch", tool_use_id="c3")],
        [Block("tool_use", "explanation: Two steps\nplan: [completed] Read\n[pending] Fix", tool_name="update_plan",
               tool_use_id="c4")],
        [Block("tool_use", "input: not json", tool_name="mcp__db__query", tool_use_id="c5")],
        [Block("tool_result", "orphan", tool_name=None, tool_use_id="c9")],
        [Block("tool_result", "[exit code 3]", tool_name="mcp__db__query", tool_use_id="c5", is_error=True)],
    ]
    kinds = [(p.record.role, p.record.kind) for p in _read(tf)[1:3]]
    assert kinds == [("assistant", "message"), ("user", "tool_result")]


def test_reasoning_events_titles_and_unknown_types(tmp_path):
    tf = _write(tmp_path, [
        _line("session_meta", META),
        _item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "**Plan**\n\nRead first."}],
               "content": None, "encrypted_content": "gAAAA"}),
        _item({"type": "reasoning", "summary": [], "content": None, "encrypted_content": "gAAAA"}),
        _line("event_msg", {"type": "agent_reasoning", "text": "**Plan**"}),
        _line("event_msg", {"type": "token_count", "info": None, "rate_limits": {}}),
        _line("event_msg", {"type": "thread_name_updated", "thread_name": "Fix the flaky test"}),
        _line("event_msg", {"type": "brand_new_event"}),
        _item({"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
        _item({"type": "brand_new_item"}),
        _line("brand_new_line", {"x": 1}),
        _line("compacted", {"message": "Summary: the flaky test was a race.", "replacement_history": []}),
        _line("compacted", {"message": ""}),
    ])
    parsed = _read(tf)
    assert _summary(parsed)[1:] == [
        ("message", "message", "response_item"),
        ("skip", "reasoning:encrypted", "response_item"),
        ("skip", "event_msg:agent_reasoning", "event_msg"),
        ("skip", "event_msg:token_count", "event_msg"),
        ("title", "custom-title", "event_msg"),
        ("skip", "unknown:event_msg:brand_new_event", "event_msg"),
        ("skip", "response_item:ghost_snapshot", "response_item"),
        ("skip", "unknown:response_item:brand_new_item", "response_item"),
        ("skip", "unknown:brand_new_line", "brand_new_line"),
        ("message", "compact_summary", "compacted"),
        ("skip", "compacted:empty", "compacted"),
    ]
    assert parsed[1].record.blocks == [Block("thinking", "**Plan**\n\nRead first.")]
    assert (parsed[5].title, parsed[5].session_id) == ("Fix the flaky test", META["id"])
    assert (parsed[10].record.role, parsed[10].record.blocks) == (
        "user", [Block("text", "Summary: the flaky test was a race.")])


def test_images_become_placeholders(tmp_path):
    png = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    tf = _write(tmp_path, [
        _line("session_meta", META),
        _item({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{png}"}]}),
        _item({"type": "function_call_output", "call_id": "v1", "output": [
            {"type": "input_text", "text": "screenshot"}, {"type": "input_image", "image_url": f"data:image/jpeg;base64,{png}"}]}),
    ])
    parsed = _read(tf)
    assert parsed[1].record.blocks == [Block("text", "what is this?"), Block("image", "[image: image/png, 100 bytes]")]
    assert parsed[2].record.blocks == [Block("tool_result", "screenshot\n[image: image/jpeg, 100 bytes]", tool_use_id="v1")]


def test_bad_lines_are_counted_and_never_raise(tmp_path):
    deep = b'{"type":"response_item","payload":' + b"[" * 100000 + b"]" * 100000 + b"}"
    huge = _assistant("x" * (8 << 20))
    tf = _write(tmp_path, [
        _line("session_meta", META),
        b'{"type": "response_item", "payload": {"type": "mess',
        b"\x00\xff\xfe binary \x81",
        b"[1, 2]",
        b'{"payload": {}}',
        b'{"type": "response_item", "payload": "text"}',
        b"",
        deep,
        huge,
        b'{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"caf\xe9 ok"}]}}',
        b'{"timestamp":"t","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"a\\ud800b"}]}}',
        _item({"type": "function_call", "name": 7, "call_id": None, "arguments": {"command": 1}}),
        _item({"type": "function_call_output", "call_id": ["x"], "output": {"content": [{"weird": True}], "success": False}}),
        _item({"type": "message", "role": "user", "content": [1, None, {"type": "input_file", "filename": "spec.pdf"}]}),
    ])
    parsed = _read(tf)
    assert _summary(parsed) == [
        ("skip", "session_meta", "session_meta"),
        ("reject", "malformed_json", "?"),
        ("reject", "malformed_json", "?"),
        ("reject", "not_an_object", "?"),
        ("reject", "missing_type", "?"),
        ("reject", "missing_payload", "response_item"),
        ("skip", "blank", "blank"),
        ("reject", "malformed_json", "?"),
        ("message", "message", "response_item"),
        ("message", "message", "response_item"),
        ("message", "message", "response_item"),
        ("message", "message", "response_item"),
        ("message", "tool_result", "response_item"),
        ("message", "message", "response_item"),
    ]
    assert all(p.session_id == META["id"] for p in parsed)
    assert len(parsed[8].record.blocks[0].text) == 8 << 20
    assert (parsed[9].repaired, parsed[9].record.blocks) == (True, [Block("text", "caf\ufffd ok")])
    assert (parsed[10].surrogates, parsed[10].record.blocks) == (True, [Block("text", "a\ufffdb")])
    assert parsed[11].record.blocks == [Block("tool_use", "command: 1", tool_name="?")]
    assert parsed[12].record.blocks == [Block("tool_result", "[unknown]", is_error=True)]
    assert parsed[13].record.blocks == [Block("document", "[document: spec.pdf]")]


def test_legacy_direct_format(tmp_path):
    tf = _write(tmp_path, [
        json.dumps({"id": "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "timestamp": "2025-05-01T10:00:00.000Z",
                    "instructions": None, "git": {"branch": "dev"}}).encode(),
        json.dumps({"record_type": "state"}).encode(),
        json.dumps({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}).encode(),
        json.dumps({"type": "function_call", "name": "shell", "call_id": "c1",
                    "arguments": "{\"command\": [\"ls\"]}"}).encode(),
    ])
    parsed = _read(tf)
    assert _summary(parsed) == [("skip", "session_meta", "session_meta"), ("skip", "legacy:state", "legacy:state"),
                                ("message", "message", "response_item"), ("message", "message", "response_item")]
    r = parsed[2].record
    assert (r.session_id, r.git_branch, r.timestamp, r.blocks) == (
        "5973b6c0-94b8-487b-a530-2aeb6098ae0e", "dev", None, [Block("text", "hi")])
    assert parsed[3].record.blocks == [Block("tool_use", "command: ls", tool_name="shell", tool_use_id="c1")]


def test_subagent_rollout_is_a_sidechain_of_its_parent(tmp_path):
    sub = dict(META, id="019a0000-0000-7000-8000-0000000000aa",
               source={"subagent": {"thread_spawn": {"parent_thread_id": META["id"], "depth": 1}}})
    tf = _write(tmp_path, [_line("session_meta", sub), _user("review the diff")],
                name="rollout-2025-11-01T10-05-00-019a0000-0000-7000-8000-0000000000aa.jsonl")
    r = _read(tf)[1].record
    assert (r.session_id, r.agent_id, r.is_sidechain) == (META["id"], sub["id"], True)


def _original_and_resumed(tmp_path):
    first = [_line("session_meta", META, "2025-11-01T10:00:00.000Z"),
             _user("continue", ts="2025-11-01T10:00:01.000Z"), _assistant("Done step 1.", "2025-11-01T10:00:02.000Z"),
             _user("continue", ts="2025-11-01T10:00:03.000Z"), _assistant("Done step 1.", "2025-11-01T10:00:04.000Z"),
             _line("event_msg", {"type": "token_count", "info": None}, "2025-11-01T10:00:05.000Z")]
    orig = _write(tmp_path, first)
    new_meta = dict(META, id="019a0000-0000-7000-8000-0000000000bb", timestamp="2025-11-02T09:00:00.000Z")
    copied = [json.dumps(dict(json.loads(raw), timestamp="2025-11-02T09:00:00.500Z")).encode() for raw in first]
    copied = [raw for raw in copied if b"token_count" not in raw]    # a copy may drop skipped lines
    resumed = _write(tmp_path, [_line("session_meta", new_meta, "2025-11-02T09:00:00.000Z"), *copied,
                                _user("continue", ts="2025-11-02T09:01:00.000Z"),
                                _assistant("Done step 2.", "2025-11-02T09:01:01.000Z")],
                     name="rollout-2025-11-02T09-00-00-019a0000-0000-7000-8000-0000000000bb.jsonl")
    return orig, resumed


def test_a_resumed_copy_has_the_original_keys_and_repeats_stay_distinct(tmp_path):
    orig, resumed = _original_and_resumed(tmp_path)
    a = [p.record.uuid for p in _read(orig) if p.record]
    b = [p.record.uuid for p in _read(resumed) if p.record]
    assert len(set(a)) == 4                  # "continue" / "Done step 1." twice: four different keys
    assert b[:4] == a and not set(b[4:]) & set(a)
    rec = [p.record for p in _read(resumed) if p.record]
    assert {r.session_id for r in rec} == {"019a0000-0000-7000-8000-0000000000bb"}


def test_a_parser_started_mid_file_rebuilds_its_state(tmp_path):
    orig, resumed = _original_and_resumed(tmp_path)
    for tf in (orig, resumed):
        full = _read(tf)
        for start in range(len(full)):
            part = _read(tf, start)
            assert [(p.outcome, p.kind, p.record) for p in part] == [(p.outcome, p.kind, p.record) for p in full[start:]]


@pytest.mark.parametrize("chunk", [7, 1 << 20])
def test_the_head_is_reread_in_chunks_passing_over_overlong_lines(tmp_path, monkeypatch, chunk):
    """Rebuilding the state reads the head in chunks and passes over a line longer than the
    indexer's limit, as the indexer does (it never hands such a line to the parser)."""
    orig, _ = _original_and_resumed(tmp_path)
    lines = orig.path.read_bytes().split(b"\n")[:-1]
    lines.insert(2, _user("y" * 3000))
    orig.path.write_bytes(b"".join(raw + b"\n" for raw in lines))
    monkeypatch.setattr(codex, "REPLAY_CHUNK", chunk)
    monkeypatch.setattr(codex, "MAX_REPLAY_LINE", 2000)

    def read(start):
        parse, out, offset = codex.line_parser(orig), [], 0
        for i, raw in enumerate(lines):
            if i >= start and len(raw) <= 2000:      # the indexer's line_too_long: not parsed
                out.append((i, parse(raw, offset).record))
            offset += len(raw) + 1
        return out

    # the reference: the same rollout without the over-long line (which must leave no trace)
    short = [p.record for p in _read(_write(tmp_path / "short", lines[:2] + lines[3:]))]
    full = read(0)
    assert [r for _, r in full] == short
    for start in range(1, len(lines)):
        assert read(start) == [(i, r) for i, r in full if i >= start]


def test_torn_line_salvage_calls_keep_the_state(tmp_path):
    """The indexer re-parses the tail of a malformed line at offsets inside it (a torn line fused
    with the next); that must not restart the parser's state."""
    whole = _user("second")
    torn = b'{"timestamp":"t","type":"response_item","payload":{"type":"mess' + whole
    tf = _write(tmp_path, [_line("session_meta", META), _user("first"), torn, _assistant("third")])
    data = tf.path.read_bytes()
    lines = data.split(b"\n")[:-1]
    offsets = [0]
    for raw in lines[:-1]:
        offsets.append(offsets[-1] + len(raw) + 1)
    parse = codex.line_parser(tf)
    got = [parse(lines[0], offsets[0]), parse(lines[1], offsets[1]), parse(lines[2], offsets[2])]
    cut = lines[2].index(whole)
    got.append(parse(lines[2][cut:], offsets[2] + cut))
    got.append(parse(lines[3], offsets[3]))
    clean = _read(_write(tmp_path / "clean", [_line("session_meta", META), _user("first"), whole, _assistant("third")]))
    assert [p.kind for p in got] == ["session_meta", "message", "malformed_json", "message", "message"]
    assert [p.record.uuid for p in got if p.record] == [p.record.uuid for p in clean if p.record]


def test_discover_finds_rollouts_at_any_depth(tmp_path, monkeypatch):
    root = tmp_path / "sessions"
    (root / "2025" / "09" / "16").mkdir(parents=True)
    (root / "flat").mkdir()
    a = root / "2025" / "09" / "16" / "rollout-2025-09-16T12-47-48-9cd28a74-da7e-4458-a91a-fffec2be9d7a.jsonl"
    a.write_bytes(b"")
    (root / "flat" / "rollout-x.jsonl").write_bytes(b"")
    (root / "2025" / "notes.jsonl").write_bytes(b"")
    (root / "2025" / "09" / "16" / "rollout-y.json").write_bytes(b"")
    os.symlink(a, root / "flat" / "rollout-z-link.jsonl")
    got = [(str(tf.path.relative_to(root)), tf.kind, tf.project, tf.session_hint, tf.harness)
           for tf in codex.discover(root)]
    assert got == [
        ("2025/09/16/rollout-2025-09-16T12-47-48-9cd28a74-da7e-4458-a91a-fffec2be9d7a.jsonl", "main", "2025/09/16",
         "9cd28a74-da7e-4458-a91a-fffec2be9d7a", "codex"),
        ("flat/rollout-x.jsonl", "main", "flat", None, "codex"),
    ]
    assert all(tf.stat is not None for tf in codex.discover(root))
    assert codex.discover(tmp_path / "missing") == []
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "ch"))
    assert codex.default_root() == tmp_path / "ch" / "sessions"


# ---------------------------------------------------------------------------------------------
# The real rollouts


def _real_files():
    if not REAL.exists():
        pytest.skip("../shared/fixtures/real-sessions/codex not present")
    files = codex.discover(REAL)
    assert len(files) == 26
    return files


def _raw_objects(tf):
    return [json.loads(raw) for raw in tf.path.read_bytes().split(b"\n")[:-1]]


def test_every_real_rollout_line_is_accounted_once(caplog, capsys):
    caplog.set_level(logging.DEBUG)
    totals = collections.Counter()
    for tf in _real_files():
        parsed = _read(tf)
        objs = _raw_objects(tf)
        assert len(parsed) == tf.path.read_bytes().count(b"\n") == len(objs)
        assert not [p for p in parsed if p.outcome == "reject" or p.kind.startswith("unknown:")]
        by_type = collections.Counter((o["type"], o["payload"].get("type")) for o in objs)
        recs = [p.record for p in parsed if p.record]
        blocks = [b for r in recs for b in r.blocks]
        # every human turn the UI logged (event_msg user_message) is one stored user message
        assert sum(1 for r in recs if (r.role, r.kind) == ("user", "message")) == by_type["event_msg", "user_message"]
        # every assistant message item is one stored assistant text
        assistant = sum(1 for o in objs if o["type"] == "response_item" and o["payload"].get("role") == "assistant")
        assert sum(1 for r in recs if r.role == "assistant" for b in r.blocks if b.type == "text") == assistant
        calls = by_type["response_item", "function_call"] + by_type["response_item", "custom_tool_call"]
        assert sum(1 for b in blocks if b.type == "tool_use") == calls
        assert sum(1 for b in blocks if b.type == "tool_result") == calls
        named = {b.tool_use_id: b.tool_name for b in blocks if b.type == "tool_use"}
        assert all(named[b.tool_use_id] == b.tool_name for b in blocks if b.type == "tool_result")
        # the user messages not stored are exactly the injected ones
        injected = sum(1 for p in parsed if p.kind.startswith("injected:"))
        assert injected == sum(1 for o in objs if o["type"] == "response_item" and o["payload"].get("type") == "message"
                               and o["payload"]["role"] == "user") - sum(1 for r in recs if r.kind == "message" and r.role == "user")
        assert not [b for b in blocks if b.type in ("text", "attachment")
                    and b.text.lstrip().startswith(("<environment_context>", "<user_instructions>", "# AGENTS.md"))]
        meta = objs[0]["payload"]
        cwds = {meta["cwd"]} | {o["payload"]["cwd"] for o in objs if o["type"] == "turn_context"}
        models = {o["payload"].get("model") for o in objs if o["type"] == "turn_context"}
        assert {r.session_id for r in recs} <= {meta["id"]} and {r.cwd for r in recs} <= {c[0].upper() + c[1:] for c in cwds}
        assert {r.version for r in recs} <= {meta["cli_version"]}
        assert {r.model for r in recs if r.role == "assistant"} <= (models or {None})
        assert {p.session_id for p in parsed} == {meta["id"]}
        for p in parsed:
            totals["stored" if p.outcome == "message" else f"{p.outcome}:{p.kind}"] += 1
    assert sum(totals.values()) == 7365
    assert caplog.records == [] and capsys.readouterr() == ("", "")


def test_the_resumed_real_rollout_stores_its_copied_turns_once():
    files = {tf.session_hint: tf for tf in _real_files()}
    orig = _read(files["9cd28a74-da7e-4458-a91a-fffec2be9d7a"])
    resumed = _read(files["613a9a68-8816-40b2-a2d4-041ade599da6"])
    orig_keys = {p.record.uuid for p in orig if p.record}
    orig_prompts = [b.text for p in orig if p.record and (p.record.role, p.record.kind) == ("user", "message")
                    for b in p.record.blocks]
    # the first prompt of the resumed session that the original never had: where the copy ends
    first_new = next(i for i, p in enumerate(resumed) if p.record and (p.record.role, p.record.kind) == ("user", "message")
                     and p.record.blocks[0].text not in orig_prompts)
    before = [p.record.uuid for p in resumed[:first_new] if p.record]
    after = [p.record.uuid for p in resumed[first_new:] if p.record]
    assert before and set(before) <= orig_keys and not set(after) & orig_keys
    # what the original has beyond the copy is its last, aborted turn (after the last copied key)
    last_copied = max(i for i, p in enumerate(orig) if p.record and p.record.uuid in set(before))
    assert [p.record.uuid for p in orig if p.record and p.record.uuid not in set(before)] == \
        [p.record.uuid for p in orig[last_copied + 1:] if p.record]
    assert resumed[1].kind == "session_meta" and {p.session_id for p in resumed} == {"613a9a68-8816-40b2-a2d4-041ade599da6"}


def test_real_rollouts_read_from_any_line_give_the_same_records():
    for tf in _real_files():
        full = _read(tf)
        for start in sorted({1, len(full) // 3, len(full) // 2, len(full) - 1}):
            if 0 < start < len(full):
                assert [p.record for p in _read(tf, start)] == [p.record for p in full[start:]], (tf.path.name, start)


def test_real_windows_and_empty_rollouts():
    files = _real_files()
    win = [tf for tf in files if "Python-AI-Solutions" in str(tf.path)]
    cwds = {p.cwd for tf in win for p in _read(tf)}
    # the VS Code extension's `c:\\` and the CLI's `C:\\` name one folder
    assert cwds == {"C:\\Users\\shahh", "C:\\Users\\shahh\\OneDrive\\Desktop\\agentic-neurodata-conversion-2",
                    "C:\\Users\\shahh\\OneDrive\\Desktop\\agentic-neurodata-conversion-2\\agentic-neurodaata-conversion"}
    short = [tf for tf in files if tf.path.read_bytes().count(b"\n") <= 3]
    assert len(short) == 4
    for tf in short:
        kinds = [p.kind for p in _read(tf)]
        assert kinds[0] == "session_meta" and set(kinds[1:]) == {"injected:environment_context"}
