"""`--agent` of every per-agent command (consolidate/commands/_agent.py): one validated id, errors that
name the fix, the agent of the current directory (or a folder below it) by default."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from reverie.consolidate.agents import assign_agent
from reverie.consolidate.commands import build_cli
from reverie.consolidate.paths import agent_db_path
from reverie.consolidate.store import open_db
from test_recall import Store

#: Every command that takes --agent, with the arguments it needs besides it.
COMMANDS = {
    "recall": ["recall", "--prompt", "billing-api pool", "--json"],
    "search": ["search", "billing-api", "--json"],
    "graph": ["graph", "billing-api", "--json"],
    "forget": ["forget", "billing-api", "--json"],
    "feedback": ["feedback", "1", "helpful", "--json"],
    "pin": ["pin", "1", "--json"],
    "unpin": ["unpin", "1", "--json"],
    "export": ["export", "--markdown", "{out}", "--json"],
    "import": ["import", "--markdown", "{existing}", "--json"],
    "maintenance": ["maintenance", "--json"],
}


def _args(name: str, tmp_path: Path) -> list[str]:
    existing = tmp_path / "existing"
    existing.mkdir(exist_ok=True)
    return [a.format(out=tmp_path / "out", existing=existing) for a in COMMANDS[name]]


@pytest.fixture
def outside_db(reverie_home):
    """A real agent database at <home>/x/agent.db: where `--agent ../x` would lead."""
    path = agent_db_path(reverie_home, "../x")
    assert path.resolve() == (reverie_home / "x" / "agent.db").resolve()
    store = Store.__new__(Store)
    store.db = open_db(path)
    store.conn = store.db.conn
    store.card("billing-api pool size is 20.")
    store.conn.close()
    return path, path.read_bytes()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_path_as_agent_id_is_refused(name, outside_db, tmp_path):
    path, before = outside_db
    res = CliRunner().invoke(build_cli(), [*_args(name, tmp_path), "--agent", "../x"])
    assert (res.exit_code, res.output) == (
        1, "Error: '../x' is not an agent id (lowercase letters, digits, '.', '_', '-'): "
           "`reverie agents` lists them.\n")
    assert path.read_bytes() == before
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_unknown_agent_names_the_fix_and_creates_nothing(name, reverie_home, tmp_path):
    res = CliRunner().invoke(build_cli(), [*_args(name, tmp_path), "--agent", "ghost"])
    assert (res.exit_code, res.output) == (
        1, "Error: No memory for agent 'ghost' yet. Unknown agent 'ghost'? Check the id with `reverie agents`; "
           "a new agent needs `reverie index`, then `reverie consolidate --now --agent ghost`.\n")
    assert not agent_db_path(reverie_home, "ghost").parent.exists()


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_no_agent_for_the_current_directory_names_the_fix(name, reverie_home, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(build_cli(), _args(name, tmp_path))
    assert (res.exit_code, res.output) == (
        1, "Error: No agent for this directory: pass --agent ID (`reverie agents` lists them).\n")


def test_commands_find_the_agent_of_a_folder_below_its_directory(reverie_home, tmp_path, monkeypatch):
    project = tmp_path / "billing-api"
    (project / "src" / "api").mkdir(parents=True)
    store = Store(reverie_home, cwd=str(project))
    note = store.card("billing-api pool size is 20.")
    store.close()
    assert assign_agent(reverie_home, str(project)) == store.agent == "billing-api"
    monkeypatch.chdir(project / "src" / "api")
    res = CliRunner().invoke(build_cli(), ["search", "pool", "--json"])
    assert res.exit_code == 0, res.output
    assert '"agent": "billing-api"' in res.output and f'"id": {note}' in res.output
    res = CliRunner().invoke(build_cli(), ["pin", str(note), "--json"])
    assert res.exit_code == 0, res.output
    assert '"agent": "billing-api"' in res.output
