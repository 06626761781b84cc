"""`reverie hook ...` as Claude Code runs it (the real console script), the recall log, and
`reverie hook install`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate import hook as hook_mod
from reverie.consolidate import hook_install
from reverie.consolidate.hook import append_recall_log
from reverie.consolidate.hook_install import merge_hooks
from reverie.consolidate.paths import recall_log_path, secrets_dir
from reverie.consolidate.settings import set_value
from reverie.graph.recall import MARKER, recall
from reverie.redact.memory import SecretMemory
from test_recall import WRITER, Store

REVERIE = shutil.which("reverie", path=str(Path(sys.executable).parent)) or shutil.which("reverie")


def run_hook(event: str, stdin: bytes, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([REVERIE, "hook", event], input=stdin, capture_output=True, timeout=60,
                          env={**os.environ, **(env or {})})


@pytest.fixture
def store(reverie_home):
    s = Store(reverie_home)
    api = s.entity("billing-api")
    pg = s.entity("PostgreSQL", "library")
    s.say(api, "uses", pg, session="s1")
    s.rule = s.card("Use pnpm, not npm.", "preference", sessions=2)
    s.note = s.card("billing-api connection pool size is 20.", entities=(api,))
    yield s
    s.close()


def payload(store, **extra) -> bytes:
    return json.dumps({"session_id": "sess-1", "cwd": store.cwd, "transcript_path": "/tmp/x.jsonl",
                       "permission_mode": "default", **extra}).encode()


@pytest.mark.parametrize("stdin", [b"", b"   \n", b"{not json", b"[]", b'"text"', b'{"cwd": 5}'])
@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_bad_input_prints_nothing_and_exits_0(store, event, stdin):
    out = run_hook(event, stdin)
    assert (out.returncode, out.stdout) == (0, b"")


def test_unknown_cwd_switched_off_agent_missing_db_and_own_child_print_nothing(store, reverie_home):
    prompt = dict(prompt="tune the billing-api connection pool", hook_event_name="UserPromptSubmit")
    unknown = json.dumps({"session_id": "s", "cwd": "/somewhere/else", **prompt}).encode()
    assert (run_hook("user-prompt-submit", unknown).returncode, run_hook("user-prompt-submit", unknown).stdout) == (0, b"")
    child = run_hook("user-prompt-submit", payload(store, **prompt), env={"REVERIE_CHILD": "1"})
    assert (child.returncode, child.stdout) == (0, b"")
    set_value(reverie_home, "agents.disabled", [store.agent])
    off = run_hook("user-prompt-submit", payload(store, **prompt))
    assert (off.returncode, off.stdout) == (0, b"")
    set_value(reverie_home, "agents.disabled", [])
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(store.path) + suffix).unlink(missing_ok=True)
    gone = run_hook("user-prompt-submit", payload(store, **prompt))
    assert (gone.returncode, gone.stdout) == (0, b"")
    assert not store.path.exists()


def test_session_start_injects_the_primer_and_logs_it(store, reverie_home):
    expected = recall(store.path, "", kind="primer")["text"]

    out = run_hook("session-start", payload(store, source="startup", hook_event_name="SessionStart"))

    assert out.returncode == 0
    assert json.loads(out.stdout) == {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                             "additionalContext": expected}}
    assert expected.startswith(MARKER) and "Use pnpm, not npm." in expected
    entries = [json.loads(line) for line in recall_log_path(reverie_home, store.agent).read_text().splitlines()]
    assert len(entries) == 1
    assert {k: v for k, v in entries[0].items() if k != "at"} == {
        "session": "sess-1", "kind": "primer", "ids": [store.rule], "entities": [], "episodes": [], "warnings": [],
            "harnesses": {"cards": {}, "episodes": {}}}
    assert entries[0]["at"].endswith("Z")


def test_user_prompt_submit_injects_once_per_session(store, reverie_home):
    prompt = "tune the billing-api connection pool"
    expected = recall(store.path, prompt)["text"]
    data = payload(store, prompt=prompt, hook_event_name="UserPromptSubmit")

    first = run_hook("user-prompt-submit", data)
    second = run_hook("user-prompt-submit", data)

    assert json.loads(first.stdout) == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                               "additionalContext": expected}}
    assert "billing-api uses PostgreSQL (1 session" in expected and "connection pool size is 20" in expected
    assert (second.returncode, second.stdout) == (0, b"")
    entries = [json.loads(line) for line in recall_log_path(reverie_home, store.agent).read_text().splitlines()]
    assert [{k: v for k, v in e.items() if k != "at"} for e in entries] == [
        {"session": "sess-1", "kind": "prompt", "ids": [store.note], "entities": ["billing-api"], "episodes": [],
         "warnings": [], "harnesses": {"cards": {}, "episodes": {}}}]


def test_what_is_printed_passed_the_remembered_secret_check(store, reverie_home):
    secret = "hunter2-Zq8vLk3Rt9"
    SecretMemory(secrets_dir(reverie_home)).remember([secret])
    store.card(f"The staging deploy token is {secret} for the billing-api.", "fact")

    out = run_hook("user-prompt-submit", payload(store, prompt="staging deploy token for billing-api",
                                                 hook_event_name="UserPromptSubmit"))

    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "staging deploy token is" in text and secret not in text


def test_hook_answers_while_a_consolidation_holds_a_write_transaction(store):
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store.path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "holding"
        out = run_hook("user-prompt-submit", payload(store, prompt="billing-api connection pool",
                                                     hook_event_name="UserPromptSubmit"))
    finally:
        writer.stdin.write("\n")
        writer.stdin.close()
        writer.wait(timeout=60)
    assert "connection pool size is 20" in json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]


def test_hook_session_start_through_click(store, reverie_home):
    result = CliRunner().invoke(build_cli(), ["--home", str(reverie_home), "hook", "session-start"],
                                input=payload(store, source="startup").decode())
    assert result.exit_code == 0
    assert json.loads(result.output)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


def test_recall_log_rotates_at_its_size_cap(tmp_path):
    path = tmp_path / "memory-recalls.jsonl"
    entry = {"at": "2026-01-10T10:00:00Z", "session": "s", "kind": "prompt", "ids": [1, 2], "entities": ["x"]}
    size = len(json.dumps(entry, separators=(",", ":"))) + 1
    for _ in range(5):
        append_recall_log(path, entry, max_bytes=size * 3)
    assert path.with_name(path.name + ".1").read_text().count("\n") == 3
    assert path.read_text().count("\n") == 2
    assert [json.loads(line) for line in path.read_text().splitlines()] == [entry, entry]


def test_two_rotations_keep_every_line(tmp_path):
    path = tmp_path / "memory-recalls.jsonl"
    entries = [{"at": "2026-01-10T10:00:00Z", "session": "s", "kind": "prompt", "ids": [i], "entities": []}
               for i in range(1, 8)]
    size = len(json.dumps(entries[0], separators=(",", ":"))) + 1
    for e in entries:
        append_recall_log(path, e, max_bytes=size * 3)
    files = [path.with_name(path.name + ".2"), path.with_name(path.name + ".1"), path]
    assert [[json.loads(line)["ids"][0] for line in f.read_text().splitlines()] for f in files] == [
        [1, 2, 3], [4, 5, 6], [7]]


def test_recall_command_json_and_session(store, reverie_home):
    runner = CliRunner()
    res = runner.invoke(build_cli(), ["recall", "--agent", store.agent, "--prompt", "billing-api pool", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data == {**recall(store.path, "billing-api pool", agent=store.agent)}
    assert set(data) == {"agent", "standing", "entities", "notes", "warnings", "recent", "text", "harnesses"}
    assert not recall_log_path(reverie_home, store.agent).exists()   # a preview logs nothing

    res = runner.invoke(build_cli(), ["recall", "--agent", store.agent, "--prompt", "billing-api pool",
                                      "--session", "cli-1"])
    assert res.output.strip() == data["text"]
    again = runner.invoke(build_cli(), ["recall", "--agent", store.agent, "--prompt", "billing-api pool",
                                        "--session", "cli-1"])
    assert again.exit_code == 0 and again.stdout == ""
    bad = runner.invoke(build_cli(), ["recall", "--agent", "nobody", "--prompt", "x"])
    assert bad.exit_code == 1 and "reverie agents" in bad.output


OTHER_HOOKS = {
    "model": "sonnet",
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi", "timeout": 3}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard"}]}],
    },
}


def test_hook_install_keeps_other_hooks_backs_up_and_is_idempotent(tmp_path, reverie_home):
    settings = tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(OTHER_HOOKS))
    runner = CliRunner()

    first = runner.invoke(build_cli(), ["hook", "install", "--settings", str(settings), "--json"])
    assert first.exit_code == 0, first.output
    summary = json.loads(first.output)
    command = summary["command"]
    assert Path(command.split()[0]).is_absolute() and Path(command.split()[0]).name == "reverie"
    assert command.split()[1:] == ["--home", str(reverie_home)]   # REVERIE_HOME is not the default
    installed = json.loads(settings.read_text())
    assert installed == {
        "model": "sonnet",
        "hooks": {
            "SessionStart": [
                OTHER_HOOKS["hooks"]["SessionStart"][0],
                {"matcher": "startup|resume|clear|compact",
                 "hooks": [{"type": "command", "command": f"{command} hook session-start", "timeout": 10}]},
            ],
            "PreToolUse": OTHER_HOOKS["hooks"]["PreToolUse"],
            "UserPromptSubmit": [
                {"hooks": [{"type": "command", "command": f"{command} hook user-prompt-submit", "timeout": 5}]}],
        },
    }
    assert json.loads(Path(summary["backup"]).read_text()) == OTHER_HOOKS

    second = runner.invoke(build_cli(), ["hook", "install", "--settings", str(settings), "--json"])
    assert json.loads(second.output)["changed"] is False
    assert json.loads(settings.read_text()) == installed
    assert len(list(settings.parent.glob("settings.json.reverie-backup-*"))) == 1


def test_hook_install_replaces_an_old_reverie_hook_instead_of_adding_one():
    old = {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "/old/bin/reverie hook user-prompt-submit", "timeout": 30},
        {"type": "command", "command": "notify-send prompt"}]}]}}
    merged = merge_hooks(old, "/new/bin/reverie")
    assert merged["hooks"]["UserPromptSubmit"] == [
        {"hooks": [{"type": "command", "command": "notify-send prompt"}]},
        {"hooks": [{"type": "command", "command": "/new/bin/reverie hook user-prompt-submit", "timeout": 5}]},
    ]


def test_hook_install_refuses_a_broken_settings_file(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text("{broken")
    res = CliRunner().invoke(build_cli(), ["hook", "install", "--settings", str(settings)])
    assert res.exit_code == 1 and "not valid JSON" in res.output
    assert settings.read_text() == "{broken"


# The plugin's hooks (plugin/hooks/hooks.json, scripts/reverie.sh, the self-install): tests/test_plugin.py.
ROOT = Path(__file__).resolve().parent.parent


def test_hook_install_with_a_space_in_the_reverie_path_keeps_one_entry_per_event(monkeypatch, reverie_home):
    monkeypatch.setattr(hook_install, "reverie_executable", lambda: "/opt/my tools/reverie")
    command = hook_install.hook_command(reverie_home)
    assert command == f"'/opt/my tools/reverie' --home {reverie_home}"
    once = merge_hooks({}, command)
    twice = merge_hooks(once, command)
    assert twice == once == {"hooks": {
        "SessionStart": [{"matcher": "startup|resume|clear|compact", "hooks": [
            {"type": "command", "command": f"{command} hook session-start", "timeout": 10}]}],
        "UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": f"{command} hook user-prompt-submit", "timeout": 5}]}]}}
    import shlex

    assert shlex.split(once["hooks"]["SessionStart"][0]["hooks"][0]["command"]) == [
        "/opt/my tools/reverie", "--home", str(reverie_home), "hook", "session-start"]
    # An older install that wrote the path unquoted is replaced too, not kept beside ours.
    legacy = {"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": "/opt/my tools/reverie hook user-prompt-submit", "timeout": 5}]}]}}
    assert merge_hooks(legacy, command)["hooks"]["UserPromptSubmit"] == once["hooks"]["UserPromptSubmit"]


def test_hook_in_a_subfolder_of_the_agent_directory_injects(store):
    prompt = "tune the billing-api connection pool"
    expected = recall(store.path, prompt)["text"]
    data = json.dumps({"session_id": "sub-1", "cwd": store.cwd + "/src/api", "prompt": prompt,
                       "hook_event_name": "UserPromptSubmit"}).encode()
    out = run_hook("user-prompt-submit", data)
    assert json.loads(out.stdout) == {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                             "additionalContext": expected}}
    assert expected


def test_hook_past_its_deadline_prints_nothing_and_the_next_call_still_injects(store, reverie_home):
    prompt = "tune the billing-api connection pool"
    expected = recall(store.path, prompt)["text"]
    data = payload(store, prompt=prompt, hook_event_name="UserPromptSubmit")

    late = run_hook("user-prompt-submit", data, env={"REVERIE_HOOK_DEADLINE_S": "0"})
    assert (late.returncode, late.stdout) == (0, b"")
    assert not recall_log_path(reverie_home, store.agent).exists()

    on_time = run_hook("user-prompt-submit", data)
    assert json.loads(on_time.stdout)["hookSpecificOutput"]["additionalContext"] == expected != ""
    again = run_hook("user-prompt-submit", data)
    assert (again.returncode, again.stdout) == (0, b"")


class _BrokenStdout:
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_failed_write_marks_nothing_as_shown(store, reverie_home, monkeypatch):
    import io

    prompt = "tune the billing-api connection pool"
    data = payload(store, prompt=prompt, hook_event_name="UserPromptSubmit")
    with monkeypatch.context() as m:
        m.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
        m.setattr(sys, "stdout", _BrokenStdout())
        assert hook_mod.run_hook("user-prompt-submit", str(reverie_home)) == 0

    assert not recall_log_path(reverie_home, store.agent).exists()
    out = run_hook("user-prompt-submit", data)
    assert json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] == recall(store.path, prompt)["text"]


def test_a_cleared_session_gets_its_primer_again(store):
    start = payload(store, source="startup", hook_event_name="SessionStart")
    first = run_hook("session-start", start)
    assert "Use pnpm, not npm." in json.loads(first.stdout)["hookSpecificOutput"]["additionalContext"]
    assert run_hook("session-start", start).stdout == b""
    cleared = run_hook("session-start", payload(store, source="clear", hook_event_name="SessionStart"))
    assert json.loads(cleared.stdout) == json.loads(first.stdout)


@pytest.mark.parametrize("reset", ["compact", "clear"])
def test_a_resume_injects_nothing_twice_and_a_compaction_or_clear_injects_it_again(store, reverie_home, reset):
    """Claude Code replays a resumed session's earlier hook output, so the `resume` SessionStart
    repeats no block (standing memories, recent episodes); after `compact` or `clear` the context
    no longer holds it, so the same primer comes again. Every injection is one recall-log line."""
    from reverie.graph.episodes import record_episode

    ep = record_episode(store.db, "s0", "2026-01-09T10:00:00Z", "Moved billing-api to PostgreSQL 16.")
    store.conn.commit()
    start = lambda source: run_hook("session-start", payload(store, source=source,  # noqa: E731
                                                              hook_event_name="SessionStart"))
    first = start("startup")
    context = json.loads(first.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Use pnpm, not npm." in context and "Moved billing-api to PostgreSQL 16." in context

    resumed = start("resume")
    assert (resumed.returncode, resumed.stdout) == (0, b"")
    again = start(reset)
    assert json.loads(again.stdout) == json.loads(first.stdout)
    assert start("resume").stdout == b""
    lines = [json.loads(line) for line in recall_log_path(reverie_home, store.agent).read_text().splitlines()]
    assert [(e["kind"], e["ids"], e["episodes"]) for e in lines] == [("primer", [store.rule], [ep])] * 2


def test_recall_command_prints_what_the_hook_injects_and_logs_the_same_line(store, reverie_home):
    prompt = "tune the billing-api connection pool"
    set_value(reverie_home, "feedback.half_life_days", 7)
    hook_out = run_hook("user-prompt-submit", json.dumps({
        "session_id": "hook-s", "cwd": store.cwd, "prompt": prompt, "hook_event_name": "UserPromptSubmit"}).encode())
    injected = json.loads(hook_out.stdout)["hookSpecificOutput"]["additionalContext"]

    res = CliRunner().invoke(build_cli(), ["recall", "--agent", store.agent, "--prompt", prompt, "--json",
                                           "--session", "cli-s"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["text"] == injected != ""
    hook_line, cli_line = [json.loads(line) for line in recall_log_path(reverie_home, store.agent).read_text().splitlines()]
    strip = lambda e: {k: v for k, v in e.items() if k not in ("at", "session")}  # noqa: E731
    assert (hook_line["session"], cli_line["session"]) == ("hook-s", "cli-s")
    assert strip(cli_line) == strip(hook_line) == {"kind": "prompt", "ids": [store.note], "entities": ["billing-api"],
                                                   "episodes": [], "warnings": [],
            "harnesses": {"cards": {}, "episodes": {}}}


def test_recall_command_uses_the_feedback_half_life_setting(store, reverie_home, monkeypatch):
    import reverie.graph.recall as graph_recall

    seen = []
    real = graph_recall.recall
    monkeypatch.setattr(graph_recall, "recall", lambda *a, **kw: seen.append(kw["half_life_days"]) or real(*a, **kw))
    set_value(reverie_home, "feedback.half_life_days", 7)
    res = CliRunner().invoke(build_cli(), ["recall", "--agent", store.agent, "--prompt", "billing-api pool"])
    assert res.exit_code == 0, res.output
    assert seen == [7.0]


HEAVY = ("numpy", "sqlite_utils", "click", "presidio_analyzer", "anthropic", "networkx", "model2vec", "re2",
         "ahocorasick", "dataclasses", "logging")


def test_real_hook_on_a_consolidated_home_imports_no_heavy_module(tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, "REVERIE_HOME": str(home), "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": ""}
    for args in (["index", "--projects-dir", str(ROOT / "fixtures" / "sample-projects")],
                 ["consolidate", "--now", "--agent", "billing-api", "--writer", "offline"]):
        done = subprocess.run([REVERIE, *args, "--json"], capture_output=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
    for event, extra in (("session-start", {"source": "startup", "hook_event_name": "SessionStart"}),
                         ("user-prompt-submit", {"prompt": "deploy the PDF export worker for billing-api",
                                                 "hook_event_name": "UserPromptSubmit"})):
        data = json.dumps({"session_id": "imports", "cwd": "/home/dev/acme/billing-api", **extra}).encode()
        out = subprocess.run([sys.executable, "-X", "importtime", "-m", "reverie.consolidate", "hook", event], input=data,
                             capture_output=True, env=env, timeout=60)
        assert out.returncode == 0
        assert json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] != ""
        imported = {line.rsplit("|", 1)[1].strip() for line in out.stderr.decode().splitlines()
                    if line.startswith("import time:") and line.count("|") == 2}
        assert "reverie.graph.recall" in imported and "reverie.redact.memory" in imported
        assert sorted(m for m in imported if m.split(".")[0] in HEAVY) == []


def test_the_entry_the_installer_and_the_hook_name_the_same_events():
    """A hook event the CLI fast path does not dispatch, or the installer writes under another
    name, would never run: the three lists are one."""
    from reverie.consolidate import cli, hook, hook_install

    assert set(cli.HOOK_EVENTS) == set(hook.EVENTS) == {e[1] for e in hook_install.HOOK_EVENTS}
    assert [(e[0], e[1]) for e in hook_install.HOOK_EVENTS] == [
        ("SessionStart", "session-start"), ("UserPromptSubmit", "user-prompt-submit")]
