"""Audit of the user's view: the CLI contract (exit codes, errors that name the fix, no tracebacks,
`--json` that parses and carries the documented fields), settings round trips, `hook install`, and
the docs' claims, on an empty home and on a home with the shared Claude Code fixtures indexed and
consolidated.

Each test checks a contract no other test file checks end to end; several began as proofs of a
defect (settings checks, unwritable paths, a path as agent id, a symlinked settings file).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli

ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures" / "claude-code"
REVERIE = Path(sys.executable).with_name("reverie")

#: Issue 4, item 7: the per-agent summary of `reverie consolidate --now --json`.
ISSUE4_KEYS = ("agent", "conversations", "passages", "candidates", "calls", "cards_written", "cards_rejected",
               "cost_usd", "backlog", "errors")
#: The conversation of the shared fixture `v2-tool-heavy/tool_heavy.jsonl` (agent `spotter`).
TOOL_HEAVY_SESSION = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"


def cli(home: Path, *args: str, input: str | None = None):
    """`reverie --home HOME ARGS` in process; exceptions are caught so a traceback shows up as
    `result.exception` (anything but SystemExit is an uncaught Python exception)."""
    return CliRunner().invoke(build_cli(), ["--home", str(home), *args], input=input, prog_name="reverie")


def no_traceback(res) -> bool:
    return res.exception is None or isinstance(res.exception, SystemExit)


# ---------------------------------------------------------------------------------------------
# homes built once per module from the shared fixtures (each test works on its own copy)


@pytest.fixture(scope="module")
def _built(tmp_path_factory):
    if not SHARED_FIXTURES.exists():
        pytest.skip("../shared/fixtures not present")
    from reverie.consolidate.index import index_all

    base = tmp_path_factory.mktemp("audit-cli")
    projects = base / "projects"
    shutil.copytree(SHARED_FIXTURES, projects)
    for p in [projects, *projects.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    indexed = base / "indexed"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
        mp.delenv("ANTHROPIC_API_KEY", raising=False)
        index_all(indexed, projects)
        consolidated = base / "consolidated"
        shutil.copytree(indexed, consolidated)
        res = cli(consolidated, "consolidate", "--now", "--all", "--json")
    assert res.exit_code == 0, res.output
    return {"projects": projects, "indexed": indexed, "consolidated": consolidated,
            "first_run": json.loads(res.stdout)}


@pytest.fixture
def indexed_home(_built, tmp_path) -> Path:
    return Path(shutil.copytree(_built["indexed"], tmp_path / "indexed-home"))


@pytest.fixture
def consolidated_home(_built, tmp_path) -> Path:
    return Path(shutil.copytree(_built["consolidated"], tmp_path / "consolidated-home"))


def _rows(db_path: Path, skip: tuple[str, ...] = ()) -> dict[str, list]:
    """Every row of every ordinary table (FTS shadow tables and `skip` left out)."""
    conn = sqlite3.connect(db_path)
    try:
        names = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
                 if not n.startswith("sqlite_") and "fts" not in n and n not in skip]
        return {n: sorted(map(repr, conn.execute(f"SELECT * FROM [{n}]"))) for n in names}
    finally:
        conn.close()


# ---------------------------------------------------------------------------------------------
# passing: contracts checked end to end


def test_every_command_on_an_empty_home_exits_0_1_or_2_with_no_traceback(tmp_path):
    """Every leaf command of `reverie --help` on a home that does not exist yet: 0 with JSON that
    parses, 1 with `Error:` naming a `reverie ...` fix, 2 for usage errors; never a traceback."""
    home = tmp_path / "home"
    empty_projects = tmp_path / "projects"
    empty_projects.mkdir()
    ok_json = [
        ["index", "--projects-dir", str(empty_projects), "--json"], ["agents", "--json"], ["doctor", "--json"],
        ["settings", "get", "--json"], ["consolidate", "--now", "--json"], ["schedule", "status", "--json"],
        ["redact", "--json"],
    ]
    domain_errors = [
        ["show", "conversation", "abc"], ["consolidate"], ["recall", "--agent", "ghost", "--prompt", "x"],
        ["search", "x", "--agent", "ghost"], ["graph", "x", "--agent", "ghost"], ["forget", "1", "--agent", "ghost"],
        ["feedback", "1", "helpful", "--agent", "ghost"], ["pin", "1", "--agent", "ghost"],
        ["unpin", "1", "--agent", "ghost"], ["export", "--markdown", str(tmp_path / "md"), "--agent", "ghost"],
        ["maintenance", "--agent", "ghost"], ["settings", "get", "nope"], ["settings", "set", "nope", "1"],
        ["consolidate", "--now", "--agent", "ghost"],
    ]
    usage_errors = [
        ["consolidate", "--now", "--writer", "bogus"], ["feedback", "abc", "helpful"], ["nosuch"],
        ["import", "--markdown", str(tmp_path / "missing")], ["graph", "x", "--depth", "9"],
        ["schedule", "install", "--system", "windows"],
    ]
    seen = []
    for args in ok_json:
        res = cli(home, *args, input="")
        assert no_traceback(res), (args, res.exception)
        assert res.exit_code == 0, (args, res.output)
        json.loads(res.stdout)
        seen.append((args[0], res.exit_code))
    for args in domain_errors:
        res = cli(home, *args)
        assert no_traceback(res), (args, res.exception)
        assert (res.exit_code, res.stdout) == (1, ""), (args, res.output)
        assert res.stderr.startswith("Error: ") and "`reverie " in res.stderr, (args, res.stderr)
        seen.append((args[0], res.exit_code))
    for args in usage_errors:
        res = cli(home, *args)
        assert no_traceback(res), (args, res.exception)
        assert res.exit_code == 2 and "Usage: reverie" in res.stderr, (args, res.output)
        seen.append((args[0], res.exit_code))
    assert len(seen) == len(ok_json) + len(domain_errors) + len(usage_errors)
    assert not (home / "agents").exists()   # nothing above created an agent


def test_consolidate_now_json_has_the_issue_4_fields_and_a_second_run_writes_nothing(_built, consolidated_home):
    first = _built["first_run"]
    assert [{k: s[k] for k in ISSUE4_KEYS} for s in first] == [
        # Issue 13: sub-agent conclusions, the files read, what the agent wrote into docs, the user's
        # answers and failed commands are passages too; the agent's narration is not. The demo
        # session's sub-agent reports judge the code ("modern React patterns", "proper Date
        # serialization"): verdicts, no offline card.
        {"agent": "demo", "conversations": 1, "passages": 91, "candidates": 32, "calls": 0, "cards_written": 0,
         "cards_rejected": {}, "cost_usd": 0.0, "backlog": False, "errors": []},
        {"agent": "spotter", "conversations": 1, "passages": 2, "candidates": 1, "calls": 0, "cards_written": 0,
         "cards_rejected": {}, "cost_usd": 0.0, "backlog": False, "errors": []},
        {"agent": "spotter-gqc", "conversations": 1, "passages": 176, "candidates": 53, "calls": 0,
         "cards_written": 8, "cards_rejected": {}, "cost_usd": 0.0, "backlog": False, "errors": []},
    ]
    dbs = {a: consolidated_home / "agents" / a / "agent.db" for a in ("demo", "spotter", "spotter-gqc")}
    # The run record (`runs`) and the trust pass's idempotence key are bookkeeping of the run itself.
    before = {a: _rows(p, skip=("runs", "trust_passes")) for a, p in dbs.items()}
    runs_before = {a: len(_rows(p)["runs"]) for a, p in dbs.items()}

    res = cli(consolidated_home, "consolidate", "--now", "--all", "--json")
    assert res.exit_code == 0, res.output
    second = json.loads(res.stdout)
    assert [{k: s[k] for k in ISSUE4_KEYS} for s in second] == [
        {"agent": a, "conversations": 0, "passages": 0, "candidates": 0, "calls": 0, "cards_written": 0,
         "cards_rejected": {}, "cost_usd": 0.0, "backlog": False, "errors": []}
        for a in ("demo", "spotter", "spotter-gqc")]
    assert {a: _rows(p, skip=("runs", "trust_passes")) for a, p in dbs.items()} == before
    assert {a: len(_rows(p)["runs"]) for a, p in dbs.items()} == {a: n + 1 for a, n in runs_before.items()}


def test_reporting_commands_print_the_documented_json_on_the_consolidated_fixtures(_built, consolidated_home):
    home = consolidated_home

    def j(*args: str, input: str | None = None):
        res = cli(home, *args, input=input)
        assert res.exit_code == 0 and no_traceback(res), (args, res.output)
        return json.loads(res.stdout)

    s = j("index", "--projects-dir", str(_built["projects"]), "--json")        # issue 2, item 6
    assert {k: s[k] for k in ("files_seen", "files_changed", "messages_added", "skipped", "rejected")} == {
        "files_seen": 5, "files_changed": 0, "messages_added": 0, "skipped": {}, "rejected": {}}

    agents = j("agents", "--json")                                              # issue 2, item 6
    assert [{k: a[k] for k in ("id", "cwd", "conversations", "messages", "transcripts_on_disk")} for a in agents] == [
        {"id": "demo", "cwd": "/path/to/Demo", "conversations": 1, "messages": 345, "transcripts_on_disk": 1},
        {"id": "spotter", "cwd": "/home/marco/projects/spotter", "conversations": 1, "messages": 19,
         "transcripts_on_disk": 1},
        {"id": "spotter-gqc", "cwd": "/home/USER/projects/spotter-worktrees/spotter-gqc", "conversations": 1,
         "messages": 355, "transcripts_on_disk": 1},
    ]
    assert all(a["first"] <= a["last"] for a in agents)

    r = j("recall", "--agent", "spotter-gqc", "--prompt", "SQLite table-rewrite migrations", "--json")
    assert {"agent", "standing", "entities", "notes", "text", "warnings"} <= set(r)   # issues 6 and 8
    assert r["notes"] and all({"id", "statement", "category", "date", "sessions", "score", "confidence",
                               "maturity"} <= set(n) for n in r["notes"])
    assert r["notes"][0]["statement"] in r["text"]

    found = j("search", "table-rewrite", "--agent", "spotter-gqc", "--json")          # issue 6, item 9
    assert (found["agent"], found["query"]) == ("spotter-gqc", "table-rewrite")
    assert found["cards"] and all({"id", "statement", "date"} <= set(c) for c in found["cards"])
    assert all({"conversation", "at", "snippet"} <= set(h) for h in found["history"])

    g = j("graph", "mix ash.codegen", "--agent", "spotter-gqc", "--json")           # issue 5, item 8
    assert g["entity"] == {"name": "mix ash.codegen", "type": "tool", "aliases": []}
    assert isinstance(g["relations"], list)

    st = j("schedule", "status", "--json")                                          # issue 7, item 4
    assert [(a["agent"], a["last_run"], a["backlog"], a["next_run"] is not None) for a in st["agents"]] == [
        ("demo", None, False, True), ("spotter", None, False, True), ("spotter-gqc", None, False, True)]

    d = j("doctor", "--json")                                                       # issue 2, item 9
    assert [a["id"] for a in d["agents"]] == ["demo", "spotter", "spotter-gqc"]
    assert all(c["ok"] or c["fix"] for c in d["checks"])      # every missing part names its fix

    red = j("redact", "--json", input="export DB_PASSWORD=hunter2-Xq9!\n")           # issue 3, item 5
    assert red["text"] == "export DB_PASSWORD=[REDACTED:password]\n"
    assert [(f["type"], f["start"], f["end"]) for f in red["findings"]] == [("password", 19, 31)]
    assert "hunter2" not in json.dumps(red)

    conv = j("show", "conversation", TOOL_HEAVY_SESSION[:8], "--json")               # issue 2, item 7
    assert (conv["id"], conv["agent"], conv["rebuilt"], len(conv["messages"])) == (
        TOOL_HEAVY_SESSION, "spotter", False, 19)


def test_installed_hook_command_runs_under_sh_and_injects_and_install_is_idempotent(consolidated_home, tmp_path):
    """`reverie hook install` into a temp Claude settings dir, then the installed command string run
    the way Claude Code runs it (through a shell, with a bare environment, hook JSON on stdin)."""
    claude = tmp_path / "claude"
    claude.mkdir()
    settings = claude / "settings.json"
    user_hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/guard"}]}
    settings.write_text(json.dumps({"model": "opus", "hooks": {"PreToolUse": [user_hook]}}))

    first = cli(consolidated_home, "hook", "install", "--settings", str(settings), "--json")
    assert first.exit_code == 0, first.output
    installed = settings.read_bytes()
    second = cli(consolidated_home, "hook", "install", "--settings", str(settings), "--json")
    assert (second.exit_code, json.loads(second.stdout)["changed"], json.loads(second.stdout)["backup"]) == (
        0, False, None)
    assert settings.read_bytes() == installed
    assert len(list(claude.glob("settings.json.reverie-backup-*"))) == 1
    data = json.loads(installed)
    assert data["hooks"]["PreToolUse"] == [user_hook] and data["model"] == "opus"
    (ups,) = data["hooks"]["UserPromptSubmit"]
    (hook,) = ups["hooks"]
    assert hook["timeout"] == 5

    stdin = json.dumps({"session_id": "audit-1", "cwd": "/home/USER/projects/spotter-worktrees/spotter-gqc",
                        "hook_event_name": "UserPromptSubmit", "permission_mode": "default",
                        "prompt": "Why does the migration for SQLite need a table rewrite?"})
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run(["sh", "-c", hook["command"]], input=stdin, capture_output=True, text=True,
                          env=env, timeout=30)
    assert (proc.returncode, proc.stderr) == (0, "")
    out = json.loads(proc.stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert ("- This project uses table-rewrite migrations for any column modification SQLite doesn't support "
            "natively." in out["hookSpecificOutput"]["additionalContext"])


# ---------------------------------------------------------------------------------------------
# defects: settings


@pytest.mark.parametrize("key", ["consolidate.max_passages", "consolidate.keep_threshold", "consolidate"])
def test_settings_set_refuses_null_for_a_typed_key(key, tmp_path):
    home = tmp_path / "home"
    res = cli(home, "settings", "set", key, "null")
    assert res.exit_code == 1 and res.stderr.startswith("Error: ") and "reverie settings set" in res.stderr
    assert not (home / "settings.json").exists()


def test_consolidate_with_a_null_budget_in_settings_names_the_fix_without_a_traceback(indexed_home):
    (indexed_home / "settings.json").write_text(json.dumps({"consolidate": {"max_passages": None}}))
    proc = subprocess.run([str(REVERIE), "--home", str(indexed_home), "consolidate", "--now", "--agent", "spotter"],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": ""})
    assert "Traceback" not in proc.stderr, proc.stderr[-400:]
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: ") and "consolidate.max_passages" in proc.stderr


@pytest.mark.parametrize("key,value", [
    ("writer", "bogus"),                 # consolidate then fails: "Unknown writer 'bogus'"
    ("schedule.hour", "25"),             # schedule status/tick then fail: "must be a whole number from 0 to 23"
    ("schedule.timezone", "Mars/Olympus"),   # schedule status/tick then fail: "not a known time zone"
    ("recall.max_chars", "abc"),         # recall ignores it (Budgets.from_settings keeps numbers only)
    ("recall.max_char", "2000"),         # a typo: no such budget, nothing reads it
])
def test_settings_set_refuses_values_its_readers_reject(key, value, tmp_path):
    home = tmp_path / "home"
    res = cli(home, "settings", "set", key, value)
    assert res.exit_code == 1 and res.stderr.startswith("Error: ")
    assert not (home / "settings.json").exists()


def test_settings_get_shows_the_documented_recall_defaults(tmp_path):
    res = cli(tmp_path / "home", "settings", "get", "recall.max_chars", "--json")
    assert (res.exit_code, json.loads(res.stdout)) == (0, 4000)


BROKEN_SETTINGS = ('{\n  "agents": {"disabled": ["scratch"], "map": {"/home/me/work/mono": "mono"}},\n'
                   '  "schedule": {"hour": 4},\n}\n')   # a trailing comma: one hand-editing slip


def test_settings_set_keeps_a_settings_file_it_cannot_parse(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(BROKEN_SETTINGS)
    res = cli(home, "settings", "set", "writer", "offline")
    assert (home / "settings.json").read_text() == BROKEN_SETTINGS
    assert res.exit_code == 1 and "settings.json" in res.stderr


def test_doctor_reports_an_unparseable_settings_file(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(BROKEN_SETTINGS)
    (home / "settings.json").chmod(0o600)
    res = cli(home, "doctor", "--json")
    (check,) = [c for c in json.loads(res.stdout)["checks"] if c["name"] == "settings file"]
    assert check["ok"] is False and check["fix"]


# ---------------------------------------------------------------------------------------------
# defects: commands


def test_export_into_a_path_that_cannot_be_created_names_the_fix(consolidated_home, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    res = cli(consolidated_home, "export", "--markdown", str(blocker / "md"), "--agent", "spotter-gqc")
    assert no_traceback(res), repr(res.exception)
    assert res.exit_code == 1 and res.stderr.startswith("Error: ")


def test_graph_html_into_a_missing_directory_names_the_fix(consolidated_home, tmp_path):
    res = cli(consolidated_home, "graph", "spotter-gqc", "--agent", "spotter-gqc",
              "--html", str(tmp_path / "missing" / "graph.html"))
    assert no_traceback(res), repr(res.exception)
    assert res.exit_code == 1 and res.stderr.startswith("Error: ")


def test_import_of_a_semantic_md_that_is_not_utf8_is_reported(consolidated_home, tmp_path):
    md = tmp_path / "md"
    assert cli(consolidated_home, "export", "--markdown", str(md), "--agent", "spotter-gqc").exit_code == 0
    text = (md / "semantic.md").read_text(encoding="utf-8")
    assert "## fact\n" in text
    edited = text.replace("## fact\n", "## fact\n\n- The staging proxy runs on the caf\u00e9 host.\n", 1)
    (md / "semantic.md").write_bytes(edited.encode("latin-1", "replace"))
    res = cli(consolidated_home, "import", "--markdown", str(md), "--agent", "spotter-gqc")
    assert no_traceback(res), repr(res.exception)
    assert res.exit_code in (0, 1) and "semantic.md" in res.output


def test_index_of_a_projects_dir_that_does_not_exist_names_the_fix(tmp_path):
    res = cli(tmp_path / "home", "index", "--projects-dir", str(tmp_path / "typo"))
    assert no_traceback(res)
    assert res.exit_code in (1, 2) and "typo" in res.stderr


def test_consolidate_now_builds_nothing_for_a_switched_off_agent(indexed_home):
    assert cli(indexed_home, "settings", "set", "agents.disabled", '["spotter-gqc"]').exit_code == 0
    res = cli(indexed_home, "consolidate", "--now", "--agent", "spotter-gqc", "--json")
    conn = sqlite3.connect(indexed_home / "agents" / "spotter-gqc" / "agent.db")
    try:
        cards = conn.execute("SELECT count(*) FROM cards").fetchone()[0]
    finally:
        conn.close()
    assert cards == 0
    assert res.exit_code == 1 and "agents.disabled" in res.stderr


def test_show_conversation_refuses_a_path_as_agent_id(indexed_home):
    shutil.copytree(indexed_home / "agents" / "spotter", indexed_home / "x")
    res = cli(indexed_home, "show", "conversation", TOOL_HEAVY_SESSION, "--agent", "../x")
    assert (res.exit_code, res.output) == (
        1, "Error: '../x' is not an agent id (lowercase letters, digits, '.', '_', '-'): "
           "`reverie agents` lists them.\n")


def test_hook_install_through_a_symlinked_settings_file_updates_its_target(tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    target.write_text(json.dumps({"model": "opus"}))
    claude = tmp_path / "claude"
    claude.mkdir()
    link = claude / "settings.json"
    link.symlink_to(target)
    res = cli(tmp_path / "home", "hook", "install", "--settings", str(link), "--json")
    assert res.exit_code == 0, res.output
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert set(json.loads(target.read_text())["hooks"]) == {"SessionStart", "UserPromptSubmit"}
