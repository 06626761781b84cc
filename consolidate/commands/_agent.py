"""The `--agent` option of every per-agent command: one place that turns it (or the current
directory) into a validated agent id and its database.

Invariants: an id that is not a valid agent id (`consolidate.agents.valid_agent_id`: lowercase
letters, digits, '.', '_', '-', no leading dot, so never a path like `../x`) is refused before any
path is built from it; every error is an `UnknownAgent` whose message names the fix
(`reverie agents`); nothing here creates an agent folder or a database.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from ..errors import UnknownAgent


def agent_id(home: Path, agent: str | None) -> str:
    """`agent` when it is a valid id, else (when None or empty) the agent of the current directory
    (the nearest registered directory at or above it). Raises UnknownAgent naming the fix."""
    from ..agents import agent_for_cwd, valid_agent_id  # noqa: PLC0415

    if not agent:
        found = agent_for_cwd(home, os.getcwd())
        if not found:
            raise UnknownAgent("No agent for this directory: pass --agent ID (`reverie agents` lists them).")
        agent = found
    if not valid_agent_id(agent):
        raise UnknownAgent(f"{agent!r} is not an agent id (lowercase letters, digits, '.', '_', '-'): "
                           "`reverie agents` lists them.")
    return agent


#: `click.Context.meta` key of the agent database a command opened (for `ReverieGroup`'s messages).
DB_META = "reverie.agent_db"


def agent_db(home: Path, agent: str | None) -> tuple[str, Path]:
    """(agent id, path of its agent.db) for `--agent`; the database must exist."""
    from ..paths import agent_db_path  # noqa: PLC0415

    found = agent_id(home, agent)
    path = agent_db_path(home, found)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:     # named in the message should the database turn out damaged or busy
        ctx.meta[DB_META] = path
    if not path.is_file():
        raise UnknownAgent(
            f"No memory for agent {found!r} yet. Unknown agent {found!r}? Check the id with `reverie agents`; "
            f"a new agent needs `reverie index`, then `reverie consolidate --now --agent {found}`.")
    return found, path


def open_agent(home: Path, agent: str | None) -> tuple[str, Any]:
    """(agent id, opened store database) for `--agent`; the database must exist (never created here).
    Inside a click command the database is closed when the command's context closes (also on
    error), so a command never leaves it to the garbage collector."""
    from ..store import open_db  # noqa: PLC0415

    found, path = agent_db(home, agent)
    db = open_db(path)
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(db.close)
    return found, db
