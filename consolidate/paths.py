"""Where reverie keeps its files.

Invariants: the home is `--home` if given, else `$REVERIE_HOME`, else the platform's user data dir;
every agent lives in `<home>/agents/<agent-id>/` and owns exactly one `agent.db` there. Standard
library only (the hook path imports this module).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ENV_HOME = "REVERIE_HOME"
#: Set in the environment of child processes we start (the claude-cli writer): our hooks print
#: nothing and our indexer skips transcripts whose sessions carry it.
ENV_CHILD_GUARD = "REVERIE_CHILD"
ENV_PAUSE = "REVERIE_PAUSE"


def _platform_data_dir() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "reverie"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "reverie"
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "reverie"


def _platform_log_dir() -> Path:
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Logs" / "reverie"
    if os.name == "nt":
        return _platform_data_dir() / "logs"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "reverie" / "log"


def resolve_home(home: str | os.PathLike | None = None) -> Path:
    """The reverie home: explicit argument > $REVERIE_HOME > platform user data dir."""
    if home:
        return Path(home).expanduser().resolve()
    env = os.environ.get(ENV_HOME)
    if env:
        return Path(env).expanduser().resolve()
    return _platform_data_dir()


def log_dir(home: Path) -> Path:
    """Log folder: `<home>/logs` when the home is explicit or from the environment, else the platform's."""
    if os.environ.get(ENV_HOME) or home != _platform_data_dir():
        return home / "logs"
    return _platform_log_dir()


def agents_dir(home: Path) -> Path:
    return home / "agents"


def agent_dir(home: Path, agent_id: str) -> Path:
    return agents_dir(home) / agent_id


def agent_db_path(home: Path, agent_id: str) -> Path:
    return agent_dir(home, agent_id) / "agent.db"


def recall_log_path(home: Path, agent_id: str) -> Path:
    return agent_dir(home, agent_id) / "memory-recalls.jsonl"


def settings_path(home: Path) -> Path:
    return home / "settings.json"


def secrets_dir(home: Path) -> Path:
    """Remembered-secret key and hashes of this home (shared by all its agents)."""
    return home / "secrets"


def default_projects_dir() -> Path:
    """Claude Code's transcript root: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects."""
    cfg = os.environ.get("CLAUDE_CONFIG_DIR")
    if cfg:
        return Path(cfg).expanduser() / "projects"
    return Path.home() / ".claude" / "projects"


def ensure_private_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    try:
        os.chmod(path, 0o700)
    except OSError:
        pass
    return path
