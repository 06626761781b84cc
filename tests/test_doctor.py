"""`reverie doctor`: what is there, what is missing, the command that fixes each gap; no secrets shown."""

from __future__ import annotations

import json

from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.consolidate.doctor import diagnose
from reverie.consolidate.settings import set_value


def _checks(report):
    return {c["name"]: (c["ok"], c["fix"]) for c in report["checks"]}


def test_fresh_home_reports_every_gap_with_its_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    home = tmp_path / "h"
    report = diagnose(home, tmp_path / "no-projects")
    assert (report["home"], report["home_exists"], report["agents"], report["ok"]) == (str(home), False, [], False)
    assert _checks(report) == {
        "settings file": (True, None),
        "Claude Code transcripts": (False, "reverie index --projects-dir DIR   (or set CLAUDE_CONFIG_DIR)"),
        "redaction engine": (True, None),
        "remembered secrets": (True, None),
        "SQLite FTS5": (True, None),
        "Anthropic API key": (False, "export ANTHROPIC_API_KEY=...   or   reverie settings set anthropic.api_key -   (reads it from stdin / a hidden prompt)"),
        "claude CLI": (False, "npm install -g @anthropic-ai/claude-code   (then `claude auth login`)"),
        "card writer": (True, None),
        "consolidation budgets": (True, None),
        "embedding model": (False, "let `reverie consolidate --now` reach the model hub (huggingface.co, or "
                                   "$HF_ENDPOINT) once; or copy the model folder to "
                                   f"{tmp_path / 'reverie-cache' / 'models' / 'minishlab--potion-base-8M'}; or "
                                   "reverie settings set embedding_model /path/to/model2vec-folder"),
    }
    assert not home.exists()


def test_configured_parts_and_agent_dbs(tmp_path, monkeypatch):
    from reverie.consolidate.index import index_all

    from fakes import install_fake_claude

    bin_dir = tmp_path / "bin"
    install_fake_claude(bin_dir, tmp_path / "claude-calls.jsonl", login=True)
    monkeypatch.setenv("PATH", str(bin_dir))
    key = "sk-ant-api03-" + "Qw7" * 20
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    home = tmp_path / "h"
    model = tmp_path / "model"
    model.mkdir()
    set_value(home, "embedding_model", str(model))
    projects = tmp_path / "projects" / "-w"
    projects.mkdir(parents=True)
    (projects / "s.jsonl").write_text(json.dumps({"type": "user", "cwd": "/w", "sessionId": "s", "uuid": "u",
                                                  "message": {"role": "user", "content": "hi"}}) + "\n")
    index_all(home, projects.parent)
    report = diagnose(home, projects.parent)
    assert {k: v[0] for k, v in _checks(report).items()} == {k: True for k in _checks(report)}
    (agent,) = report["agents"]
    assert (agent["id"], agent["db_exists"], agent["pending_migrations"], agent["schema"]["reverie.index"][0]) == (
        "w", True, [], "m001_index")
    assert agent["db_bytes"] > 0
    out = CliRunner().invoke(build_cli(), ["--home", str(home), "doctor", "--projects-dir", str(projects.parent)]).output
    assert key not in out and "set in ANTHROPIC_API_KEY" in out and out.startswith(f"home: {home}\n")
    js = CliRunner().invoke(build_cli(), ["--home", str(home), "doctor", "--json"]).output
    assert key not in js and json.loads(js)["agents"][0]["id"] == "w"


def _details(report):
    return {c["name"]: c["detail"] for c in report["checks"]}


def test_doctor_reports_the_credential_the_claude_child_would_use_and_the_fix(tmp_path, monkeypatch):
    """A key in the environment, no Claude login, pass_api_key off: the child has no credential and
    the fix names the login and the setting; with the setting on, the child would bill the key. The
    key, the account's e-mail and the home are never printed or created."""
    from fakes import install_fake_claude

    bin_dir = tmp_path / "bin"
    log = tmp_path / "claude-calls.jsonl"
    install_fake_claude(bin_dir, log, login=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    key = "sk-ant-api03-" + "Zx4" * 20
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    home = tmp_path / "h"
    report = diagnose(home, tmp_path)
    login = next(c for c in report["checks"] if c["name"] == "claude login")
    assert login == {"name": "claude login", "ok": False, "optional": True,
                     "detail": "the claude child would use none: not logged in",
                     "fix": "ANTHROPIC_API_KEY is set, but reverie keeps it from the child because "
                            "claude_cli.pass_api_key is false, so `claude` needs your Claude login: run `claude auth "
                            "login` (or /login inside `claude`); or let it bill the key: `reverie settings set "
                            "claude_cli.pass_api_key true`; or use --writer anthropic"}
    assert _details(report)["card writer"] == (
        "auto -> anthropic: `claude` is on PATH but not logged in (ANTHROPIC_API_KEY is kept from it: "
        "claude_cli.pass_api_key is false); ANTHROPIC_API_KEY is set")
    assert _details(report)["consolidation budgets"] == (
        "scheduled runs: at most 10 model calls and $1.00 per night across all agents, each `consolidate --now` "
        "run the same (consolidate.max_calls, consolidate.max_cost_usd); 1000 passages per run "
        "(consolidate.max_passages); `reverie schedule status` shows the cost per night")
    assert not home.exists()
    (call,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert (call["argv"][-3:], "ANTHROPIC_API_KEY" in call["env"]) == (["auth", "status", "--json"], False)

    set_value(home, "claude_cli.pass_api_key", True)
    report = diagnose(home, tmp_path)
    assert _details(report)["claude login"] == ("the claude child would use an API key from ANTHROPIC_API_KEY "
                                                "(claude_cli.pass_api_key is true: calls bill the API)")
    out = CliRunner().invoke(build_cli(), ["--home", str(home), "doctor", "--json"]).output
    assert key not in out and json.loads(out)["checks"]


def test_doctor_names_a_logged_in_claude_and_the_auto_choice(tmp_path, monkeypatch):
    from fakes import install_fake_claude

    install_fake_claude(tmp_path / "bin", tmp_path / "calls.jsonl", login=True)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    details = _details(diagnose(tmp_path / "h", tmp_path))
    assert (details["claude login"], details["card writer"]) == (
        "the claude child would use your Claude login (claude.ai, max plan)",
        "auto -> claude-cli: `claude` is on PATH and logged in with your Claude login (claude.ai, max plan)")
    out = CliRunner().invoke(build_cli(), ["--home", str(tmp_path / "h"), "doctor"]).output
    assert "dev@example.com" not in out and "ok  claude login" in out


def test_doctor_lists_each_harness_folder_with_its_transcripts_and_how_to_point_elsewhere(tmp_path, monkeypatch):
    """Claude Code projects given by flag (one session and its sub-agent), Codex sessions found by
    CODEX_HOME (one rollout), Gemini's default folder under the home missing: each listed with the
    flag and the variable that point reverie elsewhere, in text and in --json."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    projects = tmp_path / "projects"
    (projects / "-w" / "s" / "subagents").mkdir(parents=True)
    (projects / "-w" / "s.jsonl").write_text("{}\n")
    (projects / "-w" / "s" / "subagents" / "agent-a1.jsonl").write_text("{}\n")
    day = tmp_path / "codex-home" / "sessions" / "2026" / "03" / "02"
    day.mkdir(parents=True)
    (day / "rollout-2026-03-02T09-00-00-019ab760-3d78-7fd0-9ea1-4c39e889b87b.jsonl").write_text("{}\n")
    (day / "notes.txt").write_text("not a rollout")
    home = tmp_path / "h"
    gem = tmp_path / "home" / ".gemini" / "tmp"
    expected = [
        {"harness": "claude-code", "name": "Claude Code projects", "root": str(projects), "found": True,
         "transcripts": 2, "setting": "--projects-dir DIR or CLAUDE_CONFIG_DIR"},
        {"harness": "codex", "name": "Codex sessions", "root": str(tmp_path / "codex-home" / "sessions"),
         "found": True, "transcripts": 1, "setting": "--codex-dir DIR or CODEX_HOME"},
        {"harness": "gemini", "name": "Gemini tmp", "root": str(gem), "found": False, "transcripts": 0,
         "setting": "--gemini-dir DIR or GEMINI_CLI_HOME"}]
    assert diagnose(home, projects)["harnesses"] == expected
    args = ["--home", str(home), "doctor", "--projects-dir", str(projects)]
    js = CliRunner().invoke(build_cli(), [*args, "--json"]).output
    assert json.loads(js)["harnesses"] == expected
    out = CliRunner().invoke(build_cli(), args).output.splitlines()
    at = out.index("harness folders:")
    assert out[at - 2:at + 5] == [
        "agents: none yet (run `reverie index`)", "", "harness folders:",
        f"  Claude Code projects   2 transcripts    {projects}   (elsewhere: --projects-dir DIR or CLAUDE_CONFIG_DIR)",
        f"  Codex sessions         1 transcripts    {tmp_path / 'codex-home' / 'sessions'}   "
        "(elsewhere: --codex-dir DIR or CODEX_HOME)",
        f"  Gemini tmp             not found        {gem}   (elsewhere: --gemini-dir DIR or GEMINI_CLI_HOME)", ""]
    # the flags point the doctor at other folders
    js = CliRunner().invoke(build_cli(), [*args, "--codex-dir", str(tmp_path / "none"), "--gemini-dir",
                                          str(tmp_path), "--json"]).output
    assert [(h["root"], h["found"], h["transcripts"]) for h in json.loads(js)["harnesses"]] == [
        (str(projects), True, 2), (str(tmp_path / "none"), False, 0), (str(tmp_path), True, 0)]
