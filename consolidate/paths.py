"""Where reverie keeps its files.

Invariants: the home is `--home` if given, else `$REVERIE_HOME`, else the platform's user data dir;
every agent lives in `<home>/agents/<agent-id>/` and owns exactly one `agent.db` there. Standard
library only (the hook path imports this module). The names of a home's files are defined once,
below; the `Path` functions serve the application, `home_dir` and `in_home` (plain strings, no
pathlib: importing it costs the hook ~2.7 ms) the hook path.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs the hook ~2.4 ms
if TYPE_CHECKING:
    from pathlib import Path

ENV_HOME = "REVERIE_HOME"
#: Set in the environment of child processes we start (the claude-cli writer): our hooks print
#: nothing and our indexer skips transcripts whose sessions carry it.
ENV_CHILD_GUARD = "REVERIE_CHILD"
ENV_PAUSE = "REVERIE_PAUSE"

# The layout of a home (see docs/architecture.md).
AGENTS_DIR = "agents"
AGENT_DB = "agent.db"
RECALL_LOG = "memory-recalls.jsonl"
SETTINGS_FILE = "settings.json"
SECRETS_DIR = "secrets"
CACHE_DIR = "cache"


def _platform_data_str() -> str:
    user = os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.join(user, "Library", "Application Support", "reverie")
    if os.name == "nt":
        return os.path.join(os.environ.get("LOCALAPPDATA") or os.path.join(user, "AppData", "Local"), "reverie")
    return os.path.join(os.environ.get("XDG_DATA_HOME") or os.path.join(user, ".local", "share"), "reverie")


def _platform_data_dir() -> Path:
    from pathlib import Path

    return Path(_platform_data_str())


def _platform_log_dir() -> Path:
    from pathlib import Path

    if sys.platform == "darwin":
        return Path.home() / "Library" / "Logs" / "reverie"
    if os.name == "nt":
        return _platform_data_dir() / "logs"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "reverie" / "log"


def home_dir(home: str | os.PathLike | None = None) -> str:
    """The reverie home as an absolute path string: explicit argument > $REVERIE_HOME > platform
    user data dir (`resolve_home` is the same as a `Path`)."""
    chosen = os.fspath(home) if home else os.environ.get(ENV_HOME)
    if chosen:
        return os.path.realpath(os.path.expanduser(chosen))
    return _platform_data_str()


def resolve_home(home: str | os.PathLike | None = None) -> Path:
    """The reverie home: explicit argument > $REVERIE_HOME > platform user data dir."""
    from pathlib import Path

    return Path(home_dir(home))


def in_home(home: str | os.PathLike, *parts: str) -> str:
    """`<home>/<parts...>` as a string: `in_home(h, AGENTS_DIR, agent, AGENT_DB)`."""
    return os.path.join(os.fspath(home), *parts)


def log_dir(home: Path) -> Path:
    """Log folder: `<home>/logs` when the home is explicit or from the environment, else the platform's."""
    if os.environ.get(ENV_HOME) or home != _platform_data_dir():
        return home / "logs"
    return _platform_log_dir()


def agents_dir(home: Path) -> Path:
    return home / AGENTS_DIR


def agent_dir(home: Path, agent_id: str) -> Path:
    return agents_dir(home) / agent_id


def agent_db_path(home: Path, agent_id: str) -> Path:
    return agent_dir(home, agent_id) / AGENT_DB


def recall_log_path(home: Path, agent_id: str) -> Path:
    return agent_dir(home, agent_id) / RECALL_LOG


def settings_path(home: Path) -> Path:
    return home / SETTINGS_FILE


def secrets_dir(home: Path) -> Path:
    """Remembered-secret key and hashes of this home (shared by all its agents)."""
    return home / SECRETS_DIR


def default_projects_dir() -> Path:
    """Claude Code's transcript root: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects."""
    from pathlib import Path

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
