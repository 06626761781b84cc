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
        "SQLite FTS5": (True, None),
        "Anthropic API key": (False, "export ANTHROPIC_API_KEY=...   or   reverie settings set anthropic.api_key -   (reads it from stdin / a hidden prompt)"),
        "claude CLI": (False, "npm install -g @anthropic-ai/claude-code   (then `claude` once to log in)"),
        "embedding model": (False, "reverie settings set embedding_model /path/to/model2vec-model"),
    }
    assert not home.exists()


def test_configured_parts_and_agent_dbs(tmp_path, monkeypatch):
    from reverie.consolidate.index import index_all

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\n")
    (bin_dir / "claude").chmod(0o755)
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
