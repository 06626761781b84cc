"""Bad input: each case is counted and reported, the rest of the file is indexed, nothing crashes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from reverie.consolidate import index as index_mod
from reverie.consolidate.index import index_all
from reverie.consolidate.paths import agent_db_path
import transcripts
from transcripts import CWD


def line(uuid: str, text: str, **extra) -> str:
    """A user line without the userType and gitBranch fields."""
    return transcripts.line("user", uuid, text, user_type=None, git_branch=None, **extra)


def uuids(home: Path) -> list[str]:
    conn = sqlite3.connect(agent_db_path(home, "shop"))
    try:
        return [r[0] for r in conn.execute("SELECT uuid FROM messages ORDER BY id")]
    finally:
        conn.close()


@pytest.fixture
def proj(tmp_path) -> Path:
    p = tmp_path / "projects" / "-home-dev-shop"
    p.mkdir(parents=True)
    return p


def test_malformed_json_line(proj, reverie_home):
    (proj / "s-1.jsonl").write_text(line("u1", "a") + '{"type": "user", "message": {"rol\n' + line("u2", "b"))
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["rejected"], s["lines"]["?"]) == (2, {"malformed_json": 1}, {"malformed_json": 1})
    assert uuids(reverie_home) == ["u1", "u2"]


def test_non_utf8_bytes_are_replaced_and_counted(proj, reverie_home):
    bad = line("u2", "caf-X").encode().replace(b"caf-X", b"caf\xc3\x28 \xff")
    (proj / "s-1.jsonl").write_bytes(line("u1", "a").encode() + bad + line("u3", "c").encode())
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["rejected"], s["repaired"]) == (3, {}, {"invalid_utf8": 1})
    conn = sqlite3.connect(agent_db_path(reverie_home, "shop"))
    (text,), = conn.execute("SELECT b.text FROM blocks b JOIN messages m ON m.id = b.message_id WHERE m.uuid = 'u2'")
    assert text == "caf\ufffd( \ufffd"


def test_lone_surrogate_escapes_are_replaced_and_counted(proj, reverie_home):
    # \\ud800 alone is valid JSON but not text: SQLite cannot store it.
    (proj / "s-1.jsonl").write_text(line("u1", "a") + line("u2", "x \ud800 y") + line("u3", "c"))
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["rejected"], s["repaired"]) == (3, {}, {"lone_surrogates": 1})
    conn = sqlite3.connect(agent_db_path(reverie_home, "shop"))
    assert conn.execute("SELECT m.uuid, b.text FROM blocks b JOIN messages m ON m.id = b.message_id "
                        "ORDER BY m.id").fetchall() == [("u1", "a"), ("u2", "x \ufffd y"), ("u3", "c")]


def test_utf8_encoded_surrogates_are_invalid_utf8(proj, reverie_home):
    bad = line("u2", "x-S-y").encode().replace(b"-S-", b" \xed\xa0\x80 ")
    (proj / "s-1.jsonl").write_bytes(line("u1", "a").encode() + bad)
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["rejected"], s["repaired"]) == (2, {}, {"invalid_utf8": 1})
    assert uuids(reverie_home) == ["u1", "u2"]


def test_a_20_mb_line_is_indexed_clipped_and_the_rest_of_the_file_too(proj, reverie_home):
    huge = "0123456789abcdef" * (20 * 1024 * 1024 // 16)
    big = json.dumps({"parentUuid": None, "cwd": CWD, "sessionId": "s-1", "type": "user", "uuid": "u2",
                      "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": huge}]}})
    assert len(big) > 20 * 1024 * 1024
    (proj / "s-1.jsonl").write_text(line("u1", "a") + big + "\n" + line("u3", "c"))
    s = index_all(reverie_home, proj.parent, chunk_bytes=1 << 20)
    assert (s["messages_added"], s["rejected"]) == (3, {})
    conn = sqlite3.connect(agent_db_path(reverie_home, "shop"))
    assert conn.execute("SELECT original_size, clipped, length(text) < 9000 FROM blocks WHERE type = 'tool_result'").fetchall() == [
        (len(huge), 1, 1)]
    assert uuids(reverie_home) == ["u1", "u2", "u3"]


def test_a_line_longer_than_the_limit_is_rejected_without_holding_it(proj, reverie_home):
    from reverie.consolidate.settings import set_value

    set_value(reverie_home, "index.max_line_bytes", 100_000)
    long_line = line("u2", "x" * 300_000)
    (proj / "s-1.jsonl").write_text(line("u1", "a") + long_line + line("u3", "c"))
    s = index_all(reverie_home, proj.parent, chunk_bytes=16_384)
    assert (s["messages_added"], s["rejected"]) == (2, {"line_too_long": 1})
    assert uuids(reverie_home) == ["u1", "u3"]
    assert index_all(reverie_home, proj.parent)["files_changed"] == 0


def test_unknown_line_type(proj, reverie_home):
    (proj / "s-1.jsonl").write_text(line("u1", "a") + json.dumps({"type": "hologram", "uuid": "h"}) + "\n" + line("u2", "b"))
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["skipped"], s["lines"]["hologram"]) == (2, {"unknown:hologram": 1}, {"unknown:hologram": 1})


def test_missing_fields(proj, reverie_home):
    no_uuid = json.dumps({"type": "user", "cwd": CWD, "message": {"role": "user", "content": "no uuid or session"}})
    no_message = json.dumps({"type": "user", "cwd": CWD, "uuid": "u9"})
    no_type = json.dumps({"uuid": "u8", "message": {"content": "?"}})
    no_summary = json.dumps({"type": "summary", "leafUuid": "u1"})
    (proj / "s-1.jsonl").write_text(
        line("u1", "a") + "\n".join([no_uuid, no_message, no_type, no_summary]) + "\n" + line("u2", "b"))
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["rejected"]) == (3, {"missing_message": 1, "missing_summary": 1, "missing_type": 1})
    conn = sqlite3.connect(agent_db_path(reverie_home, "shop"))
    rows = conn.execute("SELECT conversation, uuid LIKE 'line-%' FROM messages ORDER BY id").fetchall()
    assert rows == [("s-1", 0), ("s-1", 1), ("s-1", 0)]   # no sessionId: the file's session


def test_a_file_name_that_is_no_id_is_stored_as_its_hash(proj, reverie_home):
    """The file's session (its name, when no line carries a sessionId) is stored as every other
    id is: verbatim only when it has an id's shape, else as `h:<sha256 prefix>`."""
    from reverie.consolidate.index_shape import shaped_id

    name = "notes for Bob (token hunter2)"
    no_session = json.dumps({"type": "user", "cwd": CWD, "uuid": "u1",
                             "message": {"role": "user", "content": "a file named by hand"}})
    (proj / f"{name}.jsonl").write_text(no_session + "\n")
    assert index_all(reverie_home, proj.parent)["messages_added"] == 1
    conn = sqlite3.connect(agent_db_path(reverie_home, "shop"))
    hashed = shaped_id(name)
    assert hashed.startswith("h:") and "hunter2" not in hashed
    assert conn.execute("SELECT conversation, uuid FROM messages").fetchall() == [(hashed, "u1")]
    assert conn.execute("SELECT id FROM conversations").fetchall() == [(hashed,)]


def test_empty_file_and_file_without_cwd(proj, reverie_home):
    (proj / "empty.jsonl").write_text("")
    (proj / "titles.jsonl").write_text(json.dumps({"type": "summary", "summary": "T", "leafUuid": "zz"}) + "\n")
    (proj / "s-1.jsonl").write_text(line("u1", "a"))
    s = index_all(reverie_home, proj.parent)
    assert (s["files_seen"], s["messages_added"], s["skipped"], s["rejected"]) == (3, 1, {"summary_foreign": 1}, {})
    again = index_all(reverie_home, proj.parent)
    assert (again["files_changed"], again["lines_read"]) == (0, 0)
    # The no-cwd file grows a real session: it is indexed from where it stopped.
    with open(proj / "titles.jsonl", "a") as fh:
        fh.write(line("t1", "now with a cwd", sessionId="s-9"))
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["skipped"]) == (1, {})


def test_file_deleted_between_discovery_and_read(proj, reverie_home, monkeypatch):
    (proj / "a.jsonl").write_text(line("u1", "a", sessionId="a"))
    (proj / "b.jsonl").write_text(line("u2", "b", sessionId="b"))
    real = index_mod._Run._open

    def vanish(self, path):
        if path.name == "a.jsonl":
            path.unlink()
        return real(self, path)

    monkeypatch.setattr(index_mod._Run, "_open", vanish)
    s = index_all(reverie_home, proj.parent)
    assert (s["files_seen"], s["messages_added"], s["rejected"]) == (2, 1, {"file_vanished": 1})
    assert uuids(reverie_home) == ["u2"]


def test_unreadable_file_and_read_error_mid_file(proj, reverie_home, monkeypatch):
    (proj / "a.jsonl").write_text(line("u1", "a", sessionId="a"))
    (proj / "b.jsonl").write_text("".join(line(f"v{i}", "b" * 100, sessionId="b") for i in range(30)))
    (proj / "c.jsonl").write_text(line("w1", "c", sessionId="c"))
    real_open, real_read = index_mod._Run._open, index_mod._Run._read
    reads = {"n": 0}

    def no_access(self, path):
        if path.name == "a.jsonl":
            raise PermissionError(13, "Permission denied")
        return real_open(self, path)

    def failing_read(self, fd, n):
        reads["n"] += 1
        if reads["n"] == 3:
            raise OSError(5, "Input/output error")
        return real_read(self, fd, n)

    monkeypatch.setattr(index_mod._Run, "_open", no_access)
    monkeypatch.setattr(index_mod._Run, "_read", failing_read)
    s = index_all(reverie_home, proj.parent, chunk_bytes=1024)
    assert s["rejected"] == {"file_read_error": 1, "file_unreadable": 1}
    got = uuids(reverie_home)
    assert "w1" in got and "u1" not in got and 0 < len([u for u in got if u.startswith("v")]) < 30
    monkeypatch.undo()
    s = index_all(reverie_home, proj.parent)
    assert (s["rejected"], s["skipped"]) == ({}, {})
    assert sorted(uuids(reverie_home)) == sorted(["u1", "w1"] + [f"v{i}" for i in range(30)])


def test_transcript_appended_while_it_is_indexed(proj, reverie_home):
    f = proj / "s-1.jsonl"
    f.write_text("".join(line(f"u{i}", "x" * 200) for i in range(20)))
    appended = {"done": False}

    def progress(path, offset):
        if not appended["done"]:
            appended["done"] = True
            with open(f, "a") as fh:
                fh.write(line("late-1", "written during the run"))
                fh.write(line("late-2", "half")[:30])          # and a half-written line

    s = index_all(reverie_home, proj.parent, chunk_bytes=1024, progress=progress)
    assert appended["done"] and s["rejected"] == {}
    assert uuids(reverie_home)[-1] == "late-1" and len(uuids(reverie_home)) == 21
    with open(f, "a") as fh:
        fh.write(line("late-2", "half")[30:])
    s = index_all(reverie_home, proj.parent)
    assert (s["messages_added"], s["rejected"], s["skipped"]) == (1, {}, {})
    assert uuids(reverie_home)[-1] == "late-2" and len(set(uuids(reverie_home))) == 22
