"""The CLI of the index: `index`, `agents`, `show conversation` (text and --json), errors that name the fix."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from reverie.consolidate.commands import build_cli

SESSION = "4b1c0d6e-1111-4a2b-9c3d-5e6f7a8b9c0d"


def _write(projects: Path) -> Path:
    f = projects / "-home-dev-shop" / f"{SESSION}.jsonl"
    f.parent.mkdir(parents=True)
    base = {"isSidechain": False, "cwd": "/home/dev/shop", "sessionId": SESSION, "version": "2.1.39", "gitBranch": "main"}
    lines = [
        {**base, "parentUuid": None, "type": "user", "uuid": "u1", "timestamp": "2026-03-01T10:00:00.000Z",
         "message": {"role": "user", "content": "Why does checkout fail?"}},
        {**base, "parentUuid": "u1", "type": "assistant", "uuid": "a1", "timestamp": "2026-03-01T10:00:05.000Z",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-6",
                     "content": [{"type": "text", "text": "The cart total overflows."}]}},
        {"type": "progress", "data": {}},
    ]
    f.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return f


def run(home: Path, *args: str):
    return CliRunner().invoke(build_cli(), ["--home", str(home), *args], catch_exceptions=False)


def test_index_agents_show_json_contracts(tmp_path):
    home = tmp_path / "home"
    f = _write(tmp_path / "projects")
    r = run(home, "index", "--projects-dir", str(tmp_path / "projects"), "--json")
    assert r.exit_code == 0
    s = json.loads(r.output)
    assert {k: s[k] for k in ("files_seen", "files_changed", "messages_added", "skipped", "rejected")} == {
        "files_seen": 1, "files_changed": 1, "messages_added": 2, "skipped": {"progress": 1}, "rejected": {}}
    # only the folder given is read, with its own accounting
    assert s["harnesses"] == {"claude-code": {
        "root": str((tmp_path / "projects").resolve()), "files_seen": 1, "files_changed": 1, "messages_added": 2,
        "skipped": {"progress": 1}, "rejected": {}, "blocks_added": 2, "lines_merged": 0, "titles": 0,
        "lines_read": 3, "lines": {"assistant": {"stored": 1}, "progress": {"progress": 1}, "user": {"stored": 1}},
        "repaired": {}}}

    r = run(home, "agents", "--json")
    (row,) = json.loads(r.output)
    assert {k: row[k] for k in ("id", "cwd", "conversations", "messages", "first", "last", "transcripts_on_disk")} == {
        "id": "shop", "cwd": "/home/dev/shop", "conversations": 1, "messages": 2,
        "first": "2026-03-01T10:00:00.000Z", "last": "2026-03-01T10:00:05.000Z", "transcripts_on_disk": 1}
    assert row["harnesses"] == {"claude-code": {"conversations": 1, "messages": 2}}
    text = run(home, "agents").output.splitlines()
    assert text[1].startswith("shop ") and text[1].endswith("/home/dev/shop  [claude-code 1/2]")

    r = run(home, "show", "conversation", SESSION[:8], "--json")
    conv = json.loads(r.output)
    assert (conv["id"], conv["agent"], conv["harness"], conv["rebuilt"], conv["transcript_on_disk"]) == (
        SESSION, "shop", "claude-code", False, True)
    assert [(m["role"], [b["text"] for b in m["blocks"]]) for m in conv["messages"]] == [
        ("user", ["Why does checkout fail?"]), ("assistant", ["The cart total overflows."])]

    f.unlink()
    run(home, "index", "--projects-dir", str(tmp_path / "projects"))
    r = run(home, "show", "conversation", SESSION, "--agent", "shop")
    assert r.exit_code == 0
    assert r.output.splitlines()[:6] == [
        f"Conversation {SESSION}  (agent shop, claude-code)",
        "Title: Why does checkout fail?",
        "Directory: /home/dev/shop   branch: main",
        "From 2026-03-01T10:00:00.000Z to 2026-03-01T10:00:05.000Z, 2 messages",
        "Rebuilt from the index: the transcript is no longer on disk.",
        "",
    ]
    assert "The cart total overflows." in r.output
    r = run(home, "agents")
    assert r.output.splitlines()[1].split()[:4] == ["shop", "1", "2", "0"]


def test_index_text_summary_and_unknown_conversation(tmp_path):
    home = tmp_path / "home"
    _write(tmp_path / "projects")
    r = run(home, "index", "--projects-dir", str(tmp_path / "projects"))
    assert r.output.splitlines()[0].startswith("Indexed 1 transcript files (1 changed, 0 gone from disk): 2 messages added")
    assert r.output.splitlines()[1:3] == ["skipped:  progress 1", "rejected: none"]
    r = run(home, "show", "conversation", "nope")
    assert r.exit_code == 1
    assert "No conversation 'nope' in any agent" in r.output and "reverie index" in r.output
