"""sources.gemini: discovery of Gemini CLI chat recordings (hash and readable project folders,
JSON documents and JSONL logs, sub-agents) and their parsing into entries, on the hand-written
fixtures under fixtures/gemini (one file per format variant; fixtures/gemini/README.md)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

import pytest

from reverie.sources import gemini
from reverie.sources.model import Block, Record

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "gemini"
DEMO, OTHER = "/home/dev/reverie-demo", "/home/dev/other-app"
H_DEMO, H_OTHER = (hashlib.sha256(p.encode()).hexdigest() for p in (DEMO, OTHER))
SESSION_A = "session-2025-09-12T10-15-3f2a9c1e.json"
COLD = 4_000_000_000.0       # a clock far after every fixture's mtime: nothing is hot


@pytest.fixture
def gem(tmp_path) -> Path:
    """A copy of fixtures/gemini (a ~/.gemini) with every file's mtime at 2026-01-01."""
    home = tmp_path / ".gemini"
    shutil.copytree(FIXTURES, home)
    for p in home.rglob("*"):
        os.utime(p, (1767225600, 1767225600))
    return home


def _files(gem: Path) -> dict[str, gemini.TranscriptFile]:
    return {tf.path.name: tf for tf in gemini.discover(gem / "tmp")}


def _entries(doc) -> list[tuple]:
    return [(p.outcome, p.kind, p.line_type) for p in doc.entries]


def test_discover_lists_each_session_once_readable_folder_first(gem):
    got = [(str(tf.path.relative_to(gem / "tmp")), tf.kind, tf.project, tf.session_hint, tf.harness)
           for tf in gemini.discover(gem / "tmp")]
    assert got == [
        ("reverie-demo/chats/5d9b2f61-0c3a-4e8e-9b7d-2f1a6c3e9d40/0e7f3a9c-1d2b-4c5e-8f6a-7b8c9d0e1f2a.jsonl",
         "subagent", "reverie-demo", "5d9b2f61-0c3a-4e8e-9b7d-2f1a6c3e9d40", "gemini"),
        (f"reverie-demo/chats/{SESSION_A}", "main", "reverie-demo", None, "gemini"),
        ("reverie-demo/chats/session-2025-11-20T14-02-8c4e1d7a.json", "main", "reverie-demo", None, "gemini"),
        ("reverie-demo/chats/session-2025-12-01T09-00-e7c1a2b3.json", "main", "reverie-demo", None, "gemini"),
        ("reverie-demo/chats/session-2025-12-05T16-45-b4d8e0f2.json", "main", "reverie-demo", None, "gemini"),
        ("reverie-demo/chats/session-2026-03-02T08-30-5d9b2f61.jsonl", "main", "reverie-demo", None, "gemini"),
        (f"{H_OTHER}/chats/session-2025-07-28T18-20-1a2b3c4d.json", "main", H_OTHER, None, "gemini"),
    ]
    assert all(tf.stat is not None for tf in gemini.discover(gem / "tmp"))
    assert gemini.discover(gem / "missing") == []


def test_the_newer_copy_of_a_session_under_two_folders_wins(gem):
    hashed = gem / "tmp" / H_DEMO / "chats" / SESSION_A
    readable = gem / "tmp" / "reverie-demo" / "chats" / SESSION_A
    assert hashed.read_bytes() == readable.read_bytes()
    os.utime(hashed, (1767225700, 1767225700))
    assert _files(gem)[SESSION_A].project == H_DEMO
    # a session migrated from .json to .jsonl: the log, written later, stands for it
    os.utime(readable, (1767225800, 1767225800))
    log = readable.with_suffix(".jsonl")
    a = json.loads(readable.read_text())
    log.write_text("\n".join(json.dumps(r) for r in [{k: v for k, v in a.items() if k != "messages"}, *a["messages"]]) + "\n")
    os.utime(log, (1767225900, 1767225900))
    files = [tf for tf in gemini.discover(gem / "tmp") if tf.path.stem == readable.stem]
    assert [(tf.project, tf.path.suffix) for tf in files] == [("reverie-demo", ".jsonl")]
    # both copies are the same session with the same message uuids, whichever one is read
    d1 = gemini.parse_document(gemini.TranscriptFile(hashed, "main", H_DEMO, None, harness="gemini"), now=COLD)
    d2 = gemini.parse_document(files[0], now=COLD)
    assert d1.session_id == d2.session_id == "3f2a9c1e-6b7d-4c21-9e8f-0a1b2c3d4e5f"
    assert [p.record.uuid for p in d1.entries if p.record] == [p.record.uuid for p in d2.entries if p.record]


def test_cwd_comes_from_the_marker_the_registry_or_the_hash(gem):
    files = _files(gem)
    assert gemini.project_roots(gem / "tmp") == {"reverie-demo": DEMO, "other-app": OTHER, H_DEMO: DEMO, H_OTHER: OTHER}
    other = gemini.parse_document(files["session-2025-07-28T18-20-1a2b3c4d.json"], now=COLD)
    assert (other.cwd, other.project_hash) == (OTHER, H_OTHER)
    assert {p.cwd for p in other.entries} == {OTHER} and {p.record.cwd for p in other.entries if p.record} == {OTHER}
    # without the registry and markers, the hash folder still names the project by its hash
    (gem / "projects.json").unlink()
    (gem / "tmp" / "reverie-demo" / ".project_root").unlink()
    os.utime(gem / "tmp", (1767225999, 1767225999))
    bare = gemini.parse_document(files["session-2025-07-28T18-20-1a2b3c4d.json"], now=COLD)
    assert (bare.cwd, bare.project_hash) == (None, H_OTHER)


def test_a_2025_document_with_tool_calls_thoughts_and_notices(gem):
    doc = gemini.parse_document(_files(gem)[SESSION_A], now=COLD)
    assert (doc.session_id, doc.cwd, doc.project_hash, doc.title) == (
        "3f2a9c1e-6b7d-4c21-9e8f-0a1b2c3d4e5f", DEMO, H_DEMO, None)
    assert _entries(doc) == [("skip", "no_summary", "summary"), ("message", "message", "user"),
                             ("message", "message", "gemini"), ("message", "message", "gemini"),
                             ("message", "message", "user"), ("message", "message", "gemini"),
                             ("skip", "info", "info"), ("skip", "error", "error")]
    r = doc.entries[5].record
    assert r == Record(
        uuid="f7b8c9d0-e1f2-4a3b-8c4d-5e6f708192a3", role="assistant", kind="message", session_id=doc.session_id,
        cwd=DEMO, timestamp="2025-09-12T10:16:08.215Z", model=None, blocks=[
            Block("thinking", "Applying the fix\nAdd the requirement, then install and rerun."),
            Block("tool_use", "file_path: /home/dev/reverie-demo/requirements-dev.txt", tool_name="replace",
                  tool_use_id="replace-1757672168215-9c2d"),
            Block("tool_result", "Successfully modified file: /home/dev/reverie-demo/requirements-dev.txt (1 replacements).",
                  tool_name="replace", tool_use_id="replace-1757672168215-9c2d"),
            Block("tool_use", "description: Install the dev requirements and rerun the tests\n"
                              "command: pip install -r requirements-dev.txt && make test",
                  tool_name="run_shell_command", tool_use_id="run_shell_command-1757672170101-77e0"),
            Block("tool_result", "Command exited with code 1: 2 failed, 118 passed (test_index_rescan.py)",
                  tool_name="run_shell_command", tool_use_id="run_shell_command-1757672170101-77e0", is_error=True)])
    assert [b.text for b in doc.entries[1].record.blocks] == ["Why does `make test` fail on a clean checkout?"]


def test_a_late_2025_document_with_summary_display_content_and_an_image(gem):
    doc = gemini.parse_document(_files(gem)["session-2025-11-20T14-02-8c4e1d7a.json"], now=COLD)
    assert _entries(doc) == [("title", "ai-title", "summary"), ("message", "message", "user"),
                             ("message", "message", "gemini"), ("message", "message", "user"),
                             ("message", "message", "gemini"), ("skip", "warning", "warning"),
                             ("message", "message", "user"), ("message", "message", "gemini"), ("skip", "info", "info")]
    assert (doc.entries[0].title, doc.title) == ("Switch the release workflow to PyPI trusted publishing",) * 2
    recs = [p.record for p in doc.entries if p.record]
    assert recs[0].blocks == [Block("text", "@.github/workflows/release.yml switch this to PyPI trusted publishing")]
    assert recs[2].blocks == [Block("text", "What does this screenshot of the failed run show?"),
                              Block("image", "[image: image/png, 70 bytes]")]
    assert [r.model for r in recs] == [None, "gemini-2.5-pro", None, "gemini-2.5-flash", None, "gemini-2.5-pro"]
    assert recs[5].blocks == [
        Block("tool_use", "description: Dry-run the release build\ncommand: make release-dry-run",
              tool_name="run_shell_command", tool_use_id="run_shell_command-1763648324902-1c5e"),
        Block("tool_result", "[Operation Cancelled] Reason: User cancelled the operation.", tool_name="run_shell_command",
              tool_use_id="run_shell_command-1763648324902-1c5e", is_error=True)]
    texts = "\n".join(b.text for r in recs for b in r.blocks)
    assert "iVBORw0KGgo" not in texts and "10517" not in texts     # no image data, no token counts


def test_a_jsonl_log_with_updates_a_rewind_and_a_summary(gem):
    tf = _files(gem)["session-2026-03-02T08-30-5d9b2f61.jsonl"]
    doc = gemini.parse_document(tf, now=COLD)
    assert len(doc.entries) == tf.path.read_bytes().count(b"\n") == 14
    assert _entries(doc) == [
        ("skip", "metadata", "metadata"), ("message", "message", "message"), ("skip", "metadata_update", "gemini:set"),
        ("skip", "superseded", "message"), ("skip", "superseded", "message"), ("message", "message", "message"),
        ("skip", "metadata_update", "gemini:set"), ("message", "message", "message"), ("skip", "rewound", "message"),
        ("skip", "rewound", "message"), ("skip", "rewind", "gemini:rewind"), ("message", "message", "message"),
        ("message", "message", "message"), ("title", "ai-title", "gemini:set")]
    assert (doc.session_id, doc.title, doc.entries[13].title) == (
        "5d9b2f61-0c3a-4e8e-9b7d-2f1a6c3e9d40", "Find the migration that adds the harness column",
        "Find the migration that adds the harness column")
    g1 = doc.entries[5].record
    # its third record: a uuid of its own (derived from the id and content), so that a first version
    # stored by an earlier read does not make the completed one a duplicate
    assert g1.uuid not in ("90a1b2c3-d4e5-4f60-8172-839405a6b7c8", doc.entries[1].record.uuid)
    assert (g1.synthetic_uuid, g1.model, [b.type for b in g1.blocks]) == (
        True, "gemini-3-pro-preview", ["thinking", "text", "tool_use", "tool_result"])
    assert [(p.record.uuid, p.record.synthetic_uuid) for p in doc.entries if p.record][1:] == [
        (g1.uuid, True), ("a1b2c3d4-e5f6-4071-8283-94a5b6c7d8e9", False), ("d4e5f6a7-b8c9-43a4-95b6-c7d8e9f00112", False),
        ("e5f6a7b8-c9d0-44b5-86c7-d8e9f0011223", False)]
    assert g1.blocks[2:] == [
        Block("tool_use", "pattern: harness\ninclude: *.py", tool_name="search_file_content",
              tool_use_id="search_file_content-1772440225440-0d1e"),
        Block("tool_result", "Found 2 matches for pattern \"harness\" in **/*.py:\n---\nFile: consolidate/store.py\n"
              "L181: # Which coding-agent harness wrote a conversation\nL184: def m004_harness(db):\n---",
              tool_name="search_file_content", tool_use_id="search_file_content-1772440225440-0d1e")]
    stored = [b.text for p in doc.entries if p.record for b in p.record.blocks if b.type == "text"]
    assert "Rename it to m004_harnesses" not in stored and "Never mind, keep the name. Thanks!" in stored


def test_a_subagent_log_is_a_sidechain_of_its_parent(gem):
    tf = next(tf for tf in gemini.discover(gem / "tmp") if tf.kind == "subagent")
    doc = gemini.parse_document(tf, now=COLD)
    assert (doc.session_id, doc.cwd) == ("0e7f3a9c-1d2b-4c5e-8f6a-7b8c9d0e1f2a", DEMO)
    recs = [p.record for p in doc.entries if p.record]
    assert {(r.session_id, r.agent_id, r.is_sidechain) for r in recs} == {
        ("5d9b2f61-0c3a-4e8e-9b7d-2f1a6c3e9d40", "0e7f3a9c-1d2b-4c5e-8f6a-7b8c9d0e1f2a", True)}
    assert {p.session_id for p in doc.entries} == {"5d9b2f61-0c3a-4e8e-9b7d-2f1a6c3e9d40"}


def test_missing_fields_are_counted_and_synthetic_uuids_stable(gem):
    tf = _files(gem)["session-2025-12-01T09-00-e7c1a2b3.json"]
    doc = gemini.parse_document(tf, now=COLD)
    assert _entries(doc) == [("skip", "no_summary", "summary"), ("message", "message", "user"),
                             ("skip", "empty:gemini", "gemini"), ("reject", "missing_type", "message"),
                             ("reject", "not_an_object", "message"), ("message", "message", "gemini"),
                             ("skip", "unknown:review", "review")]
    first = doc.entries[1].record
    assert (first.synthetic_uuid, first.timestamp) == (True, None)
    assert first.uuid == gemini.parse_document(tf, now=COLD).entries[1].record.uuid
    assert doc.entries[5].record.blocks[1:] == [
        Block("tool_use", "absolute_path: /home/dev/reverie-demo/docs/CONTRIBUTING.md", tool_name="read_file")]


def test_a_truncated_document_keeps_its_whole_messages(gem):
    tf = _files(gem)["session-2025-12-05T16-45-b4d8e0f2.json"]
    doc = gemini.parse_document(tf, now=COLD)
    assert doc.session_id == "b4d8e0f2-6a7b-4c8d-9e0f-1a2b3c4d5e6f"
    assert _entries(doc) == [("reject", "truncated_document", "document"), ("message", "message", "user"),
                             ("message", "message", "gemini")]
    assert [p.record.uuid for p in doc.entries[1:]] == ["6d14c5d6-e7f8-4c3d-8e45-566778899aab",
                                                        "7e25d6e7-f809-4d4e-9f56-6778899aabbc"]
    # rewritten whole later: the entries it had keep their positions, the rest follow
    whole = gemini.parse_bytes(tf.path.read_bytes() + b'fill ends at 08:00?"}]}]}')
    assert _entries(whole) == [("skip", "no_summary", "summary"), ("message", "message", "user"),
                               ("message", "message", "gemini"), ("message", "message", "user")]


def test_a_running_tool_call_waits_while_the_file_is_hot(gem):
    files = _files(gem)
    log = files["session-2026-03-02T08-30-5d9b2f61.jsonl"]
    # the log as it was while the search ran (its 5th line: the call `executing`)
    log.path.write_bytes(b"".join(log.path.read_bytes().splitlines(keepends=True)[:5]))
    os.utime(log.path, (1767225600, 1767225600))
    hot = gemini.parse_document(log, now=1767225600 + 60)
    assert (_entries(hot), hot.held_back) == ([("skip", "metadata", "metadata"), ("message", "message", "message"),
                                               ("skip", "metadata_update", "gemini:set"), ("skip", "superseded", "message")], 1)
    cold = gemini.parse_document(log, now=COLD)
    assert cold.held_back == 0 and cold.entries[4].record.blocks[2:] == [
        Block("tool_use", "pattern: harness\ninclude: *.py", tool_name="search_file_content",
              tool_use_id="search_file_content-1772440225440-0d1e")]
    doc = json.loads(files[SESSION_A].path.read_text())
    doc["messages"][1]["toolCalls"][0].update(status="executing", result=None)
    running = gemini.parse_bytes(json.dumps(doc).encode(), hot=True)
    assert (_entries(running), running.held_back) == ([("skip", "no_summary", "summary"), ("message", "message", "user")], 6)
    assert gemini.parse_bytes(json.dumps(doc).encode()).held_back == 0


def test_entries_only_grow_as_a_document_grows(gem):
    files = _files(gem)
    doc = json.loads(files[SESSION_A].path.read_text())
    first = gemini.parse_bytes(json.dumps(dict(doc, messages=doc["messages"][:3])).encode())
    grown = gemini.parse_bytes(json.dumps(dict(doc, summary="Fix the clean-checkout test run")).encode())
    key = [(p.outcome, p.kind, p.record.uuid if p.record else None) for p in grown.entries]
    assert [(p.outcome, p.kind, p.record.uuid if p.record else None) for p in first.entries][1:] == key[1:4]
    assert key[0] == ("title", "ai-title", None) and len(key) == 8
    lines = files["session-2026-03-02T08-30-5d9b2f61.jsonl"].path.read_bytes().splitlines(keepends=True)
    for n in range(1, len(lines)):
        part = [(p.outcome, p.kind) for p in gemini.parse_bytes(b"".join(lines[:n])).entries]
        full = [(p.outcome, p.kind) for p in gemini.parse_bytes(b"".join(lines)).entries]
        # a line's entry only changes from a message to superseded/rewound by what follows it
        assert len(part) == n and all(a == b or (a[0] == "message" and b[1] in ("superseded", "rewound"))
                                      for a, b in zip(part, full))


def test_bad_input_never_raises(gem, tmp_path, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    cases = {
        b"": [("reject", "malformed_json", "document")],
        b"\x00\xff binary": [("reject", "malformed_json", "document")],
        b"[]": [("reject", "not_an_object", "document")],
        b"null": [("reject", "not_an_object", "document")],
        b"[" * 100000: [("reject", "malformed_json", "document")],
        b'{"sessionId": "s", "messages": {"a": 1}}': [("skip", "no_summary", "summary"),
                                                     ("reject", "missing_messages", "document")],
        b'{"sessionId": "s", "projectHash": "h"}': [("skip", "metadata", "metadata")],
        b'{"sessionId": "s", "messages": [{"type": "user", "content": [{"text": 5}, {"weird": 1}, 3]}]}':
            [("skip", "no_summary", "summary"), ("message", "message", "user")],
        b'{"sessionId":"s","projectHash":"h"}\n{"id":"m1","type":"user","content":"hi"}\nnot json\n[1]\n\n{"x":1}\n{"id":"m2","type":"user","content":"par':
            [("skip", "metadata", "metadata"), ("message", "message", "message"), ("reject", "malformed_json", "?"),
             ("reject", "not_an_object", "?"), ("skip", "blank", "blank"), ("skip", "unknown:record", "record"),
             ("reject", "malformed_json", "?")],
    }
    for data, want in cases.items():
        assert _entries(gemini.parse_bytes(data)) == want, data[:60]
    bad_utf8 = gemini.parse_bytes(b'{"sessionId": "s", "messages": [{"id": "m", "type": "user", "content": "caf\xe9"}]}')
    assert (bad_utf8.entries[1].repaired, bad_utf8.entries[1].record.blocks) == (True, [Block("text", "caf\ufffd")])
    lone = gemini.parse_bytes(b'{"sessionId": "s", "messages": [{"id": "m", "type": "user", "content": "a\\ud800b"}]}')
    assert (lone.entries[1].surrogates, lone.entries[1].record.blocks) == (True, [Block("text", "a\ufffdb")])
    weird = gemini.parse_bytes(b'{"sessionId": "s", "messages": [{"id": "m", "type": "user", "content": [{"text": 5}, {"weird": 1}, 3]}]}')
    assert weird.entries[1].record.blocks == [Block("other", "[text part]"), Block("other", "[weird part]")]
    missing = gemini.TranscriptFile(tmp_path / "nope.json", "main", "p", None, harness="gemini")
    assert _entries(gemini.parse_document(missing)) == [("reject", "file_unreadable", "document")]
    assert caplog.records == [] and capsys.readouterr() == ("", "")


def test_default_root_honours_gemini_cli_home(monkeypatch, tmp_path):
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path))
    assert gemini.default_root() == tmp_path / ".gemini" / "tmp"
