"""Audit: nothing is lost, bad input is counted and reported, hooks fail open.

Every test drives the real CLI (`build_cli()` through click's CliRunner, or the `reverie` console
script in a subprocess) or the real index/pipeline on transcripts built with tests/transcripts.py
and the project's own sample transcripts (fixtures/sample-projects). Nine began as proofs of a defect:
a resumed consolidation that duplicated a card, a garbage timestamp that dropped a card, a locked or
damaged db (index crash, "damaged" for busy, raw tracebacks, doctor blind to it), an over-long last
line counted twice, a torn line that ate the next one, one file behind two symlinks counted twice.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from transcripts import line, write

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "fixtures" / "sample-projects"
REVERIE = shutil.which("reverie", path=str(Path(sys.executable).parent)) or shutil.which("reverie")
CWD = "/home/dev/shop"


# ---------------------------------------------------------------------------------------------
# helpers


def ul(uuid: str, text, **extra) -> str:
    """A user line of the shop agent (no userType / gitBranch)."""
    return line("user", uuid, text, user_type=None, git_branch=None, **extra)


def cli(home: Path, *args: str, input: bytes | str | None = None):
    return CliRunner().invoke(build_cli(), ["--home", str(home), *args], input=input, catch_exceptions=True)


def index_json(home: Path, projects: Path) -> dict:
    res = cli(home, "index", "--json", "--projects-dir", str(projects))
    assert res.exit_code == 0, (res.output, res.exception)
    return json.loads(res.output)


def rows(db: Path, sql: str, args=()) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return [tuple(r) for r in conn.execute(sql, args)]
    finally:
        conn.close()


def shop_db(home: Path) -> Path:
    return home / "agents" / "shop" / "agent.db"


def run_hook(home: Path, event: str, stdin: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([REVERIE, "--home", str(home), "hook", event], input=stdin, capture_output=True,
                          timeout=60, env={k: v for k, v in os.environ.items() if k != "REVERIE_HOOK_DEADLINE_S"})


def hook_json(**fields) -> bytes:
    base = {"session_id": "sess-audit", "cwd": CWD, "transcript_path": "/tmp/none.jsonl",
            "permission_mode": "default"}
    base.update(fields)
    return json.dumps(base).encode()


RULE = "From now on, always use pnpm instead of npm in this repo."
DECISION = "Never commit directly to main; always open a pull request because CI gates the deploy."


@pytest.fixture
def projects(tmp_path) -> Path:
    return tmp_path / "projects"


@pytest.fixture
def shop(projects) -> Path:
    """One project folder of the shop agent."""
    p = projects / "-home-dev-shop"
    p.mkdir(parents=True)
    return p


@pytest.fixture
def consolidated(tmp_path, shop, projects, reverie_home) -> Path:
    """A home with the shop agent indexed and consolidated offline (two standing rules)."""
    write(shop / "s-1.jsonl", ul("u1", RULE), line("assistant", "a1", "Understood, pnpm it is.", parent="u1"),
          ul("u2", DECISION, parent="a1"), line("assistant", "a2", "Got it.", parent="u2"))
    index_json(reverie_home, projects)
    res = cli(reverie_home, "consolidate", "--now", "--agent", "shop", "--json")
    assert res.exit_code == 0 and json.loads(res.output)["cards_written"] == 2, res.output
    return reverie_home


# ---------------------------------------------------------------------------------------------
# bad lines: exact counts through `reverie index --json`


def test_every_kind_of_bad_line_is_counted_exactly_and_good_lines_around_it_are_kept(shop, projects, reverie_home):
    bad = [
        b'{"type": "user", "message": {"rol',                                   # malformed JSON
        b"\x00\x00\x00",                                                        # NUL bytes
        ul("x1", "raw-NUL").encode().replace(b"raw-NUL", b"raw\x00nul").rstrip(b"\n"),  # raw NUL in a string
        b"[1, 2]", b"null", b"123", b'"just a string"',                        # not an object
        json.dumps({"uuid": "x2", "message": {"content": "?"}}).encode(),      # no type
        json.dumps({"type": ["user"], "uuid": "x3"}).encode(),                 # type of the wrong type
        json.dumps({"type": "user", "cwd": CWD, "uuid": "x4"}).encode(),       # no message
        json.dumps({"type": "user", "cwd": CWD, "uuid": "x5", "message": "hello"}).encode(),  # message not an object
        b"",                                                                    # blank line
        json.dumps({"type": "hologram", "uuid": "x6"}).encode(),               # unknown type
        b"\xff\xfe\xfa not utf-8 and not json",                                # binary junk
    ]
    weird_but_good = [
        # content as a number, garbage timestamp, uuid as a number, sessionId as a list
        json.dumps({"type": "user", "uuid": "g2", "sessionId": "s-1", "cwd": CWD, "timestamp": "garbage",
                    "message": {"role": "user", "content": 42}}),
        json.dumps({"type": "user", "uuid": 5, "sessionId": ["x"], "cwd": CWD, "timestamp": 1234,
                    "message": {"role": "user", "content": "typed wrong"}}),
    ]
    data = (ul("g1", "first good").encode() + b"\n".join(bad) + b"\n"
            + "".join(w + "\n" for w in weird_but_good).encode() + ul("g3", "last good").encode())
    (shop / "s-1.jsonl").write_bytes(data)
    s = index_json(reverie_home, projects)
    assert (s["messages_added"], s["rejected"], s["skipped"]) == (
        4, {"malformed_json": 4, "missing_message": 2, "missing_type": 2, "not_an_object": 4},
        {"blank": 1, "unknown:hologram": 1})
    assert s["lines_read"] == len(bad) + len(weird_but_good) + 2
    got = rows(shop_db(reverie_home), "SELECT m.conversation, m.uuid LIKE 'line-%', m.timestamp, b.text FROM messages m "
               "JOIN blocks b ON b.message_id = m.id ORDER BY m.id")
    assert got == [("s-1", 0, "2026-03-01T10:00:00.000Z", "first good"), ("s-1", 0, None, "[int content]"),
                   ("s-1", 1, None, "typed wrong"), ("s-1", 0, "2026-03-01T10:00:00.000Z", "last good")]
    again = index_json(reverie_home, projects)
    assert (again["files_changed"], again["messages_added"], again["rejected"], again["skipped"]) == (0, 0, {}, {})


def test_an_over_long_last_line_is_rejected_once_not_again_after_an_append(shop, projects, reverie_home):
    from reverie.consolidate.settings import set_value

    # Longer than the limit and than two reads (8 MiB each): the line is dropped while it is read.
    set_value(reverie_home, "index.max_line_bytes", 1_000_000)
    f = shop / "s-1.jsonl"
    write(f, ul("u1", "a"), ul("u2", "x" * 20_000_000))
    s = index_json(reverie_home, projects)
    assert (s["messages_added"], s["rejected"]) == (1, {"line_too_long": 1})
    write(f, ul("u3", "c"), mode="a")
    s = index_json(reverie_home, projects)
    assert (s["messages_added"], s["rejected"]) == (1, {})
    assert rows(shop_db(reverie_home), "SELECT offset, lines FROM sources") == [(f.stat().st_size, 3)]


def test_a_torn_line_followed_by_new_lines_does_not_lose_the_next_good_line(shop, projects, reverie_home):
    f = shop / "s-1.jsonl"
    write(f, ul("u1", "before the crash"))
    with open(f, "a") as fh:
        fh.write(ul("u2", "torn")[:40])             # the writer died mid-line
    s = index_json(reverie_home, projects)
    assert (s["messages_added"], s["rejected"]) == (1, {})
    write(f, ul("u3", "first line after the resume"), ul("u4", "second line after the resume"), mode="a")
    s = index_json(reverie_home, projects)
    assert s["rejected"] == {"malformed_json": 1}    # the torn fragment itself
    assert rows(shop_db(reverie_home), "SELECT uuid FROM messages ORDER BY id") == [("u1",), ("u3",), ("u4",)]


# ---------------------------------------------------------------------------------------------
# files that move under the index


def test_deleted_transcript_is_rebuilt_by_show_and_consolidates_to_the_same_cards(tmp_path, shop, projects,
                                                                                   reverie_home):
    f = write(shop / "s-1.jsonl", ul("u1", RULE), line("assistant", "a1", "Understood.", parent="u1"),
              ul("u2", DECISION, parent="a1"))
    kept = tmp_path / "kept-home"
    index_json(reverie_home, projects)
    index_json(kept, projects)
    f.unlink()
    s = index_json(reverie_home, projects)
    assert (s["files_seen"], s["files_missing"], s["messages_added"]) == (0, 1, 0)
    shown = cli(reverie_home, "show", "conversation", "s-1", "--json")
    assert shown.exit_code == 0, shown.output
    conv = json.loads(shown.output)
    assert (conv["rebuilt"], conv["transcript_on_disk"]) == (True, False)
    assert [(m["uuid"], [b["text"] for b in m["blocks"]]) for m in conv["messages"]] == [
        ("u1", [RULE]), ("a1", ["Understood."]), ("u2", [DECISION])]
    gone = cli(reverie_home, "consolidate", "--now", "--agent", "shop", "--json")
    there = cli(kept, "consolidate", "--now", "--agent", "shop", "--json")
    assert gone.exit_code == there.exit_code == 0
    q = "SELECT statement, category, sessions, said_at FROM cards ORDER BY statement"
    assert rows(shop_db(reverie_home), q) == rows(shop_db(kept), q) != []


def test_a_transcript_replaced_by_a_shorter_one_then_rewritten_in_place_loses_and_duplicates_nothing(
        shop, projects, reverie_home):
    f = write(shop / "s-1.jsonl", *[ul(f"u{i}", f"original {i} " + "x" * 100) for i in range(10)])
    assert index_json(reverie_home, projects)["messages_added"] == 10
    tmp = shop / "s-1.jsonl.tmp"                       # replaced by rename: a new inode, shorter
    write(tmp, ul("u0", "original 0 " + "x" * 100), ul("n1", "new after the replace"))
    os.replace(tmp, f)
    s = index_json(reverie_home, projects)
    assert (s["messages_added"], s["skipped"], s["rejected"]) == (1, {"duplicate": 1}, {})
    with open(f, "r+") as fh:                          # rewritten in place: same inode, longer
        fh.truncate(0)
        fh.write("".join(ul(f"r{i}", f"rewritten {i} " + "y" * 150) for i in range(12)))
    s = index_json(reverie_home, projects)
    assert (s["messages_added"], s["skipped"], s["rejected"]) == (12, {}, {})
    db = shop_db(reverie_home)
    assert rows(db, "SELECT count(*), count(DISTINCT uuid) FROM messages") == [(23, 23)]
    assert rows(db, "SELECT offset, lines, size FROM sources") == [(f.stat().st_size, 12, f.stat().st_size)]
    assert index_json(reverie_home, projects)["files_changed"] == 0


def test_a_symlinked_project_folder_is_indexed_once_and_unchanged_next_run(tmp_path, projects, reverie_home):
    real = tmp_path / "elsewhere" / "-home-dev-shop"
    write(real / "s-1.jsonl", ul("u1", "through a symlink"), ul("u2", "second", parent="u1"))
    projects.mkdir()
    os.symlink(real, projects / "-home-dev-shop")
    s = index_json(reverie_home, projects)
    assert (s["files_seen"], s["messages_added"], s["skipped"], s["rejected"], s["agents"]) == (1, 2, {}, {}, ["shop"])
    s = index_json(reverie_home, projects)
    assert (s["files_changed"], s["messages_added"], s["files_missing"]) == (0, 0, 0)
    agents = json.loads(cli(reverie_home, "agents", "--json").output)
    assert [(a["id"], a["conversations"], a["messages"], a["transcripts_on_disk"]) for a in agents] == [("shop", 1, 2, 1)]


def test_one_transcript_behind_two_symlinks_is_one_transcript_on_disk(tmp_path, projects, reverie_home):
    real = tmp_path / "elsewhere" / "-home-dev-shop"
    write(real / "s-1.jsonl", ul("u1", "one file"), ul("u2", "two lines", parent="u1"))
    projects.mkdir()
    os.symlink(real, projects / "-home-dev-shop")
    os.symlink(real, projects / "-home-dev-shop-link")
    index_json(reverie_home, projects)
    agents = json.loads(cli(reverie_home, "agents", "--json").output)
    assert [(a["id"], a["conversations"], a["messages"], a["transcripts_on_disk"]) for a in agents] == [("shop", 1, 2, 1)]


def test_a_zero_byte_agent_db_is_rebuilt_by_the_next_index(consolidated, projects):
    db = shop_db(consolidated)
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.write_bytes(b"")
    s = index_json(consolidated, projects)
    assert (s["messages_added"], s["rejected"]) == (4, {})
    assert rows(db, "SELECT uuid FROM messages ORDER BY id") == [("u1",), ("a1",), ("u2",), ("a2",)]


# ---------------------------------------------------------------------------------------------
# a garbage timestamp must not cost knowledge


def test_a_garbage_timestamp_does_not_drop_the_card_of_that_turn(shop, projects, reverie_home):
    write(shop / "s-1.jsonl",
          ul("u1", RULE, ts="2026-99-99T99:99:99Z"),
          line("assistant", "a1", "Understood, pnpm it is.", parent="u1", ts="2026-99-99T99:99:99Z"),
          ul("u2", DECISION, parent="a1", ts="2026-03-01T10:05:00.000Z"),
          line("assistant", "a2", "Got it.", parent="u2", ts="2026-03-01T10:06:00.000Z"))
    s = index_json(reverie_home, projects)
    assert (s["messages_added"], s["rejected"]) == (4, {})
    res = cli(reverie_home, "consolidate", "--now", "--agent", "shop", "--json")
    summary = json.loads(res.output)
    assert (summary["cards_written"], summary["cards_rejected"], summary["errors"]) == (2, {}, [])
    assert [r[0] for r in rows(shop_db(reverie_home), "SELECT statement FROM cards ORDER BY id")] == [
        "Always use pnpm instead of npm in this repo.", DECISION]


# ---------------------------------------------------------------------------------------------
# agent.db locked by another writer, or damaged


@pytest.fixture
def short_busy(monkeypatch):
    """The store's busy timeout cut to 0.1 s so a held lock fails fast (in-process CLI only)."""
    from reverie.consolidate import store

    monkeypatch.setattr(store, "BUSY_TIMEOUT_MS", 100)


def _hold_exclusive(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None, timeout=0.1)
    conn.execute("BEGIN EXCLUSIVE")
    return conn


def test_index_with_a_db_locked_by_another_writer_reports_it_and_loses_nothing(consolidated, shop, projects,
                                                                              short_busy):
    write(shop / "s-1.jsonl", ul("u3", "written while the db was locked", parent="a2"), mode="a")
    holder = _hold_exclusive(shop_db(consolidated))
    try:
        res = cli(consolidated, "index", "--json", "--projects-dir", str(projects))
    finally:
        holder.rollback()
        holder.close()
    assert res.exit_code == 0, repr(res.exception)
    s = json.loads(res.output)
    assert (s["messages_added"], s["rejected"]) == (0, {"file_write_error": 1})
    s = index_json(consolidated, projects)
    assert (s["messages_added"], s["rejected"]) == (1, {})


def test_consolidate_with_a_db_locked_by_another_writer_is_busy_not_damaged(consolidated, shop, projects,
                                                                            short_busy):
    write(shop / "s-1.jsonl", ul("u3", "We decided to deploy billing-api to prod-k8s because of cost.",
                                 parent="a2"), mode="a")
    index_json(consolidated, projects)
    holder = _hold_exclusive(shop_db(consolidated))
    try:
        res = cli(consolidated, "consolidate", "--now", "--json")
    finally:
        holder.rollback()
        holder.close()
    out = json.loads(res.output)
    assert [(s["agent"], s.get("failed"), [e["kind"] for e in s["errors"]]) for s in out] == [("shop", False, ["busy"])]
    assert "moved aside" not in res.output and res.exit_code == 0


def test_recall_and_hooks_answer_while_another_writer_holds_the_db(consolidated, short_busy):
    holder = _hold_exclusive(shop_db(consolidated))
    try:
        res = cli(consolidated, "recall", "--agent", "shop", "--prompt", "pnpm or npm?", "--json")
        hook = run_hook(consolidated, "session-start", hook_json(source="startup", hook_event_name="SessionStart"))
    finally:
        holder.rollback()
        holder.close()
    assert res.exit_code == 0, repr(res.exception)
    unlocked = cli(consolidated, "recall", "--agent", "shop", "--prompt", "pnpm or npm?", "--json")
    assert json.loads(res.output) == json.loads(unlocked.output)
    assert [c["statement"] for c in json.loads(res.output)["standing"]] == ["Always use pnpm instead of npm in this repo."]
    assert hook.returncode == 0 and hook.stderr == b""
    out = json.loads(hook.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Always use pnpm instead of npm in this repo." in out["hookSpecificOutput"]["additionalContext"]


def _corrupt(db: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    db.write_bytes(b"this is not a database " * 400)


@pytest.mark.parametrize("args", [
    pytest.param(("recall", "--agent", "shop", "--prompt", "pnpm or npm?"), id="recall"),
    pytest.param(("search", "pnpm", "--agent", "shop"), id="search"),
    pytest.param(("graph", "pnpm", "--agent", "shop"), id="graph"),
])
def test_reading_commands_on_a_damaged_db_name_the_fix(consolidated, args):
    _corrupt(shop_db(consolidated))
    res = cli(consolidated, *args)
    assert res.exit_code == 1
    assert not isinstance(res.exception, sqlite3.Error), repr(res.exception)
    assert "agent.db" in res.output and "reverie doctor" in res.output


def test_index_and_consolidate_on_a_damaged_db_report_it_and_carry_on(consolidated, projects, tmp_path):
    other = projects / "-home-dev-other"
    write(other / "o-1.jsonl", ul("o1", RULE, session="o-1", cwd="/home/dev/other"))
    _corrupt(shop_db(consolidated))
    s = index_json(consolidated, projects)
    assert (s["messages_added"], s["rejected"], s["agents"]) == (1, {"file_write_error": 1}, ["other"])
    res = cli(consolidated, "consolidate", "--now", "--json")
    assert res.exit_code == 1
    out = {s["agent"]: s for s in json.loads(res.output)}
    assert (out["other"]["cards_written"], out["other"]["errors"]) == (1, [])
    assert (out["shop"]["failed"], [e["kind"] for e in out["shop"]["errors"]]) == (True, ["agent_failed"])


def test_doctor_flags_a_damaged_agent_db(consolidated, projects):
    healthy = json.loads(cli(consolidated, "doctor", "--json", "--projects-dir", str(projects)).output)
    assert healthy["ok"] is True and healthy["agents"][0]["schema"] != {}
    _corrupt(shop_db(consolidated))
    text = cli(consolidated, "doctor", "--projects-dir", str(projects))
    report = json.loads(cli(consolidated, "doctor", "--json", "--projects-dir", str(projects)).output)
    assert "no db yet" not in text.output
    assert report["ok"] is False


# ---------------------------------------------------------------------------------------------
# hooks: exit 0, nothing on error, valid JSON when they print


HOOK_INPUTS = {
    "20 MB of JSON": hook_json(prompt="pnpm or npm? " + "x" * 20_000_000, hook_event_name="UserPromptSubmit"),
    "20 MB of binary": os.urandom(20_000_000),
    "binary junk prompt": hook_json(prompt=os.urandom(4000).decode("latin-1"), hook_event_name="UserPromptSubmit"),
    "NUL bytes raw": b'{"cwd": "/home/dev/shop", "prompt": "pnpm \x00 npm"}',
    "lone surrogate prompt": b'{"cwd": "/home/dev/shop", "session_id": "s-sur", "prompt": "pnpm \\ud800 npm"}',
    "no cwd": json.dumps({"session_id": "s", "prompt": "pnpm"}).encode(),
    "cwd not a string": hook_json(cwd=["/home/dev/shop"], prompt="pnpm"),
    "prompt a number": hook_json(prompt=5, session_id="s-num"),
    "session a dict": hook_json(session_id={"a": 1}, prompt="pnpm or npm?"),
    "deep nesting": b"[" * 200_000 + b"]" * 200_000,
    "utf-16": hook_json(prompt="pnpm or npm?").decode().encode("utf-16"),
}


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_hooks_exit_0_and_print_nothing_or_valid_json_on_hostile_stdin(consolidated, event):
    for name, stdin in HOOK_INPUTS.items():
        out = run_hook(consolidated, event, stdin)
        assert (name, out.returncode, out.stderr) == (name, 0, b"")
        if out.stdout:
            data = json.loads(out.stdout)
            assert set(data) == {"hookSpecificOutput"}, name
            assert data["hookSpecificOutput"]["hookEventName"] == (
                "SessionStart" if event == "session-start" else "UserPromptSubmit"), name
            assert isinstance(data["hookSpecificOutput"]["additionalContext"], str), name


def test_hooks_with_a_missing_home_or_a_damaged_db_exit_0_print_nothing_and_create_nothing(consolidated, tmp_path):
    missing = tmp_path / "no-such-home"
    for event in ("session-start", "user-prompt-submit"):
        out = run_hook(missing, event, hook_json(prompt="pnpm or npm?", source="startup"))
        assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")
    assert not missing.exists()
    _corrupt(shop_db(consolidated))
    for event in ("session-start", "user-prompt-submit"):
        out = run_hook(consolidated, event, hook_json(prompt="pnpm or npm?", source="startup"))
        assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")


# ---------------------------------------------------------------------------------------------
# SIGKILL: index and consolidation resume to exactly what a clean run gives

_KILL_CHILD = r"""
import os, signal, sys
where, n = os.environ["AUDIT_KILL_WHERE"], int(os.environ["AUDIT_KILL_AT"])
calls = {"n": 0}

def hit():
    calls["n"] += 1
    if calls["n"] == n:
        os.kill(os.getpid(), signal.SIGKILL)

def after(owner, name):
    real = getattr(owner, name)
    def patched(*a, **k):
        result = real(*a, **k)
        hit()
        return result
    setattr(owner, name, patched)

import reverie.consolidate.index as index
import reverie.consolidate.pipeline as pipeline
index.index_all.__kwdefaults__["chunk_bytes"] = 4096
if where == "index_in_tx":        # inside a chunk's transaction, before COMMIT
    after(index._AgentWriter, "_save_mark")
elif where == "index_committed":  # right after a chunk committed
    after(index._AgentWriter, "write_chunk")
elif where == "stretch_in_tx":    # inside a stretch's transaction (cards merged, progress saved, no COMMIT)
    after(pipeline, "_save_progress")
from reverie.consolidate.cli import main
main(sys.argv[1:])
"""


def _killed(home: Path, where: str, n: int, *args: str) -> int:
    env = dict(os.environ, AUDIT_KILL_WHERE=where, AUDIT_KILL_AT=str(n), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", _KILL_CHILD, "--home", str(home), *args], env=env,
                          capture_output=True, timeout=120)
    return proc.returncode


def _reverie(home: Path, *args: str) -> dict:
    proc = subprocess.run([REVERIE, "--home", str(home), *args], capture_output=True, timeout=120, check=True)
    return json.loads(proc.stdout)


def _corpus(projects: Path) -> None:
    for p in range(2):
        for s in range(3):
            lines, prev = [], None
            for i in range(40):
                uuid = f"{p:08d}-{s:04d}-4000-8000-{i:012d}"
                common = dict(session=f"sess-{p}-{s}", cwd=f"/home/dev/app{p}", parent=prev,
                              ts=f"2026-03-0{s + 1}T10:{i:02d}:00.000Z")
                if i % 2 == 0:
                    lines.append(line("user", uuid, f"turn {i}: svc-{i} runs on host-{i} " + "lorem ipsum " * 25,
                                      **common))
                else:   # assistant responses split over two lines sharing message.id
                    lines.append(line("assistant", uuid, [{"type": "text", "text": f"noted {i} " + "dolor " * 25}],
                                      msg_id=f"msg_{p}_{s}_{i // 4}", **common))
                prev = uuid
            write(projects / f"-home-dev-app{p}" / f"sess-{p}-{s}.jsonl", *lines)


_INDEX_STATE = {
    "messages": "SELECT conversation, uuid, api_id, role, kind, timestamp FROM messages ORDER BY conversation, uuid",
    "blocks": "SELECT m.uuid, b.idx, b.type, b.text FROM blocks b JOIN messages m ON m.id = b.message_id "
              "ORDER BY m.uuid, b.idx",
    "conversations": "SELECT id, messages, first_at, last_at, cwd FROM conversations ORDER BY id",
    "sources": "SELECT path, offset, lines, size, missing FROM sources ORDER BY path",
    "lines": "SELECT count(*), count(DISTINCT uuid) FROM message_lines",
    "fts": "SELECT count(*) FROM blocks_fts WHERE blocks_fts MATCH 'lorem'",
}


def _state(home: Path, queries: dict[str, str]) -> dict:
    return {db.parent.name: {k: rows(db, q) for k, q in queries.items()}
            for db in sorted((home / "agents").glob("*/agent.db"))}


@pytest.mark.parametrize("where,n", [("index_in_tx", 1), ("index_in_tx", 9), ("index_committed", 4)])
def test_index_sigkilled_mid_run_resumes_to_exactly_a_clean_index(tmp_path, projects, where, n):
    _corpus(projects)
    clean = tmp_path / "clean"
    assert _reverie(clean, "index", "--json", "--projects-dir", str(projects))["messages_added"] == 180
    home = tmp_path / "killed"
    assert _killed(home, where, n, "index", "--json", "--projects-dir", str(projects)) == -signal.SIGKILL
    s = _reverie(home, "index", "--json", "--projects-dir", str(projects))
    assert (s["skipped"], s["rejected"]) == ({}, {})
    state = _state(home, _INDEX_STATE)
    assert state == _state(clean, _INDEX_STATE)
    assert all(st["lines"][0][0] == st["lines"][0][1] for st in state.values())   # no duplicate lines
    assert all(off == size for st in state.values() for _, off, _, size, _ in st["sources"])


_GRAPH_STATE = {
    "cards": "SELECT statement, category, status, sessions, confidence, said_at FROM cards ORDER BY statement",
    "card_sessions": "SELECT c.statement, s.session FROM card_sessions s JOIN cards c ON c.id = s.card_id ORDER BY 1, 2",
    "evidence": "SELECT c.statement, e.conversation, e.message_from, e.message_to FROM evidence e "
                "JOIN cards c ON c.id = e.card_id ORDER BY 1, 2, 3",
    "relations": "SELECT s.name, r.verb, o.name, r.holds, r.weight FROM relations r JOIN entities s ON s.id = r.subject_id "
                 "JOIN entities o ON o.id = r.object_id ORDER BY 1, 2, 3",
    "progress": "SELECT conversation, last_message_id FROM progress ORDER BY 1",
    "episodes": "SELECT session FROM episodes ORDER BY 1",
}


def test_consolidation_sigkilled_mid_stretch_resumes_to_exactly_a_clean_run(tmp_path):
    base = tmp_path / "base"
    _reverie(base, "index", "--json", "--projects-dir", str(SAMPLES))
    clean, home = tmp_path / "clean", tmp_path / "killed"
    shutil.copytree(base, clean)
    shutil.copytree(base, home)
    _reverie(clean, "consolidate", "--now", "--json")
    assert _killed(home, "stretch_in_tx", 5, "consolidate", "--now", "--json") == -signal.SIGKILL
    _reverie(home, "consolidate", "--now", "--json")
    got, want = _state(home, _GRAPH_STATE), _state(clean, _GRAPH_STATE)
    for agent in want:
        statements = [r[0] for r in got[agent]["cards"]]
        assert len(statements) == len(set(statements))
        assert got[agent] == want[agent], agent
