"""Agents: which working directory belongs to which agent, and the registry that keeps ids stable.

An agent is, by default, one working directory (the first `cwd` of a session); its id is the slug of
the folder's last path component, with a short hash of the directory appended when another
directory already holds that slug. Settings can map several directories to one agent
(`agents.map`: {"/abs/dir": "id"}, the directory and everything below it) and switch agents off
(`agents.disabled`: [ids]; off means nothing new is indexed or built, what exists stays readable).

Registry `<home>/agents.json`: `{"version": 1, "agents": {id: {"cwds": [dir, ...], "created": iso}}}`,
written atomically (temp file + rename) under an advisory lock, by the indexer only.

Invariants: once assigned, an id never changes and is never given to another directory (the
registry is append-only for ids and cwds); `agent_for_cwd` and everything it calls use the standard
library only and read at most two small JSON files (the hook path calls it); a folder below a
registered directory belongs to the nearest one (not above the user's home or the root); the registry holds
directories as the indexer saw them after redaction.
"""

from __future__ import annotations

import json
import os
import re

from . import settings as _settings
from .paths import AGENT_DB, AGENTS_DIR, agent_db_path, in_home

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the hook path imports this module (typing costs it ~2.4 ms)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Iterator

REGISTRY_NAME = "agents.json"
_SLUG_MAX = 40
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def registry_path(home: Path) -> Path:
    from pathlib import Path

    return Path(home) / REGISTRY_NAME


def slugify(name: str) -> str:
    """Lowercase, runs of anything but [a-z0-9] become '-', trimmed; 'root' when nothing is left."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:_SLUG_MAX].strip("-")
    return slug or "root"


def valid_agent_id(agent_id: str) -> bool:
    """Ids are path components: lowercase letters, digits, '.', '_', '-' (no leading dot)."""
    return bool(_ID_RE.match(agent_id or ""))


def _norm_dir(path: str) -> str:
    """Normalise a directory for comparison (no trailing slash, `..` folded; not resolved on disk)."""
    if not path:
        return path
    return os.path.normpath(os.path.expanduser(path))


def load_registry(home: str | Path) -> dict[str, Any]:
    """The registry (empty when absent or unreadable)."""
    try:
        with open(in_home(home, REGISTRY_NAME), encoding="utf-8") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return {"version": 1, "agents": {}}
    if not isinstance(data, dict) or not isinstance(data.get("agents"), dict):
        return {"version": 1, "agents": {}}
    return data


def _mapped(settings: dict, cwd: str) -> str | None:
    mapping = _settings.get(settings, "agents.map", {}) or {}
    if not isinstance(mapping, dict):
        return None
    cwd_n = _norm_dir(cwd)
    best, best_len = None, -1
    for directory, agent_id in mapping.items():
        if not isinstance(directory, str) or not isinstance(agent_id, str):
            continue
        d = _norm_dir(directory)
        # Claude Code records the real cwd: a directory named through a symlink also counts as its
        # target (a few lstat calls, only for a map directory that does not hold the cwd as written)
        if _holds(d, cwd_n) or _holds(_real_dir(d), cwd_n):
            if len(d) > best_len:
                best, best_len = agent_id, len(d)
    return best


def _holds(directory: str | None, cwd: str) -> bool:
    """Whether `cwd` is `directory` or below it (both normalized)."""
    return bool(directory) and (cwd == directory or cwd.startswith(directory.rstrip(os.sep) + os.sep)
                                or directory == os.sep)


def _real_dir(directory: str) -> str | None:
    """`directory` with its symlinks resolved, when that differs from it (else None)."""
    try:
        real = os.path.realpath(directory)
    except (OSError, ValueError):
        return None
    return real if real != directory else None


def _stop_dirs() -> tuple[str, ...]:
    """Directories that hold only themselves when walking up: the filesystem root and the user's
    home (an agent registered there must not capture every project below it)."""
    home = os.path.expanduser("~")
    return (os.sep, _norm_dir(home)) if home and home != "~" else (os.sep,)


def resolve(cwd: str, settings: dict, registry: dict) -> str | None:
    """The agent of `cwd`: the longest `agents.map` directory containing it, else the nearest
    registered directory at or above it, else None.

    The walk up stops below the user's home directory and the filesystem root: those hold only
    themselves (use `agents.map` to give a whole tree to one agent). Cost: one pass over the
    registry's directories plus at most the path depth in dict lookups; no disk access but the
    symlink resolution of the `agents.map` directories (a directory named through a symlink maps
    the sessions recorded under its target).
    """
    if not cwd:
        return None
    mapped = _mapped(settings, cwd)
    if mapped:
        return mapped
    owner: dict[str, str] = {}
    for agent_id, entry in registry.get("agents", {}).items():
        cwds = entry.get("cwds", []) if isinstance(entry, dict) else []
        for d in cwds if isinstance(cwds, list) else []:
            if isinstance(d, str):
                owner.setdefault(d, agent_id)
    cwd_n = _norm_dir(cwd)
    hit = owner.get(cwd_n)
    if hit is not None:
        return hit
    stops = _stop_dirs()
    here = cwd_n
    while True:
        parent = os.path.dirname(here)
        if parent == here or parent in stops:
            return None
        hit = owner.get(parent)
        if hit is not None:
            return hit
        here = parent


def agent_for_cwd(home: Path, cwd: str) -> str | None:
    """The agent id for a working directory, or None when no agent holds it (standard library
    only, two small JSON reads; the hook path calls it). Disabled agents are still returned: what
    exists stays readable (see `is_disabled`)."""
    try:
        return resolve(cwd, _settings.load_settings(home), load_registry(home))
    except Exception:  # noqa: BLE001  (the hook fails open)
        return None


def agent_for_project_hash(home: Path, project_hash: str) -> str | None:
    """The registered agent whose directory hashes to `project_hash` (Gemini CLI names a session's
    project by the sha256 hex of its root folder), else None. Reads the registry only."""
    import hashlib

    want = (project_hash or "").strip().lower()
    if not want:
        return None
    for agent_id, entry in sorted((load_registry(home).get("agents") or {}).items()):
        for cwd in (entry or {}).get("cwds") or []:
            if isinstance(cwd, str) and hashlib.sha256(cwd.encode("utf-8", "surrogatepass")).hexdigest() == want:
                return agent_id
    return None


def disabled_agents(settings: dict) -> set[str]:
    value = _settings.get(settings, "agents.disabled", []) or []
    return {v for v in value if isinstance(v, str)} if isinstance(value, list) else set()


def is_disabled(home: Path, agent_id: str) -> bool:
    return agent_id in disabled_agents(_settings.load_settings(home))


def _registry_lock(home: Path):
    """Exclusive lock on the registry while it is read, changed and written (not on the hook path,
    so contextlib is imported here)."""
    import contextlib

    return contextlib.contextmanager(_registry_locked)(home)


def _registry_locked(home: Path) -> Iterator[None]:
    from pathlib import Path

    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    lock_path = home / (REGISTRY_NAME + ".lock")
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover  (Windows: single writer assumed)
            pass
        yield
    finally:
        os.close(fd)


def _save_registry(home: Path, data: dict) -> None:
    from reverie.graph.files import write_json_atomic

    write_json_atomic(registry_path(home), data, sort_keys=True)


def _new_id(cwd: str, taken: set[str]) -> str:
    base = slugify(os.path.basename(cwd.rstrip(os.sep)) or cwd)
    if base not in taken:
        return base
    import hashlib  # only when an id is made (not on the hook path)

    digest = hashlib.sha1(cwd.encode("utf-8", "surrogatepass")).hexdigest()
    for width in (6, 8, 12, 40):
        candidate = f"{base}-{digest[:width]}"
        if candidate not in taken:
            return candidate
    n = 2
    while f"{base}-{n}" in taken:  # pragma: no cover  (a full sha1 collision)
        n += 1
    return f"{base}-{n}"


def assign_agent(home: Path, cwd: str, settings: dict | None = None) -> str:
    """The agent for `cwd`, creating and registering a new id when no agent holds it yet.

    Mapped directories join their mapped agent (the cwd is recorded under it); a folder below a
    registered directory joins that directory's agent (see `resolve`; not recorded). Safe against a
    concurrent indexer: the read-modify-write runs under the registry lock.
    """
    from pathlib import Path

    home = Path(home)
    settings = settings if settings is not None else _settings.load_settings(home)
    cwd_n = _norm_dir(cwd)
    with _registry_lock(home):
        registry = load_registry(home)
        agents = registry.setdefault("agents", {})
        agent_id = resolve(cwd_n, settings, registry)
        # A folder below a registered directory (not a mapped one) is already held by its agent:
        # it is not added to the registry, which keeps each agent's own directories only.
        below = (agent_id is not None and agent_id in agents and _mapped(settings, cwd_n) is None)
        if agent_id is None:
            agent_id = _new_id(cwd_n, set(agents) | _existing_dirs(home) | _mapped_ids(settings))
        entry = agents.setdefault(agent_id, {"cwds": [], "created": _now()})
        if not below and cwd_n not in entry.setdefault("cwds", []):
            entry["cwds"].append(cwd_n)
            registry["version"] = 1
            _save_registry(home, registry)
        elif not registry_path(home).exists():
            _save_registry(home, registry)
    return agent_id


def _mapped_ids(settings: dict) -> set[str]:
    mapping = _settings.get(settings, "agents.map", {}) or {}
    return {v for v in mapping.values() if isinstance(v, str)} if isinstance(mapping, dict) else set()


def _existing_dirs(home: Path) -> set[str]:
    try:
        return {e.name for e in os.scandir(in_home(home, AGENTS_DIR)) if e.is_dir()}
    except OSError:
        return set()


def _now() -> str:
    import datetime as _dt  # not on the hook path

    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def known_agent_ids(home: Path, registry: dict[str, Any] | None = None) -> list[str]:
    """Ids in the registry (`registry` when the caller has read it) plus any agent folder holding
    an agent.db, sorted."""
    ids = set((registry if registry is not None else load_registry(home)).get("agents", {}))
    ids |= {i for i in _existing_dirs(home) if os.path.exists(in_home(home, AGENTS_DIR, i, AGENT_DB))}
    return sorted(ids)


def list_agents(home: Path) -> list[dict[str, Any]]:
    """One dict per agent: id, cwd (first directory), cwds, conversations, messages, first, last
    (timestamps), transcripts_on_disk (main session files of this agent still on disk), harnesses
    ({harness: {"conversations", "messages"}}: one agent per directory, whichever harness worked
    there), disabled, db_bytes. Read-only: an agent without a db lists zeros."""
    from pathlib import Path

    from .index_read import agent_stats  # SQL of the index lives in consolidate.index_read

    home = Path(home)
    data = load_registry(home)
    registry = data.get("agents", {})
    disabled = disabled_agents(_settings.load_settings(home))
    out = []
    for agent_id in known_agent_ids(home, data):
        entry = registry.get(agent_id) or {}
        cwds = list(entry.get("cwds") or [])
        stats = agent_stats(agent_db_path(home, agent_id))
        out.append({
            "id": agent_id,
            "cwd": cwds[0] if cwds else stats.get("cwd"),
            "cwds": cwds or ([stats["cwd"]] if stats.get("cwd") else []),
            "conversations": stats["conversations"],
            "messages": stats["messages"],
            "first": stats["first"],
            "last": stats["last"],
            "transcripts_on_disk": stats["transcripts_on_disk"],
            "harnesses": stats["harnesses"],
            "disabled": agent_id in disabled,
            "db_bytes": stats["db_bytes"],
        })
    return out
