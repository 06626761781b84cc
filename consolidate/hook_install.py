"""`reverie hook install`: merge our two hooks into a Claude Code settings.json (backup first,
idempotent, other hooks kept, explicit timeouts). Not on the hook path (`consolidate.hook` is)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from .hook import EVENTS

#: (Claude Code event, our event, matcher or None, timeout in seconds); the Claude Code names are
#: those `consolidate.hook.EVENTS` answers to (a missing event fails here, at import).
HOOK_EVENTS = tuple((EVENTS[event][0], event, matcher, timeout) for event, matcher, timeout in (
    ("session-start", "startup|resume|clear|compact", 10),
    ("user-prompt-submit", None, 5),
))


def default_settings_file() -> Path:
    """Claude Code's user settings: $CLAUDE_CONFIG_DIR/settings.json, else ~/.claude/settings.json."""
    cfg = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(cfg).expanduser() if cfg else Path.home() / ".claude") / "settings.json"


def reverie_executable() -> str:
    """Absolute path of the `reverie` console script running now, else the one on PATH."""
    import shutil

    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name in ("reverie", "reverie.exe"):
        found = argv0 if argv0.is_absolute() or os.sep in str(argv0) else shutil.which(str(argv0))
        if found:
            return str(Path(found).absolute())
    found = shutil.which("reverie")
    if found:
        return str(Path(found).absolute())
    beside = Path(sys.executable).with_name("reverie")
    if beside.exists():
        return str(beside)
    from .errors import ReverieError

    raise ReverieError("Cannot find the `reverie` executable: install reverie (`pip install -e .`) "
                       "so that `reverie` is on PATH, then run `reverie hook install` again.")


def hook_command(home: Path) -> str:
    """The command prefix the hooks run: `<abs reverie> [--home HOME]` (--home when the home is
    not the platform default, since Claude Code will not pass our environment)."""
    import shlex

    from .paths import _platform_data_dir

    parts = [reverie_executable()]
    if Path(home) != _platform_data_dir():
        parts += ["--home", str(home)]
    return " ".join(shlex.quote(p) for p in parts)


def _is_ours(command: Any, event: str) -> bool:
    """Whether a settings hook command runs our `event`: shell words (shlex, so a quoted path with
    spaces is one word) ending in `hook EVENT`, starting with a `reverie` executable (also when an
    older install left the path unquoted: `/opt/my tools/reverie hook EVENT`)."""
    if not isinstance(command, str):
        return False
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if len(words) < 3 or words[-2:] != ["hook", event]:
        return False
    if Path(words[0]).name in ("reverie", "reverie.exe"):
        return True
    raw = command.split()   # an unquoted path with spaces: its pieces come before any option
    for i, word in enumerate(raw[:-2]):
        if word.startswith("-"):
            return False
        if Path(word).name in ("reverie", "reverie.exe"):
            return i > 0 and os.path.isabs(raw[0])
    return False


def merge_hooks(settings: dict[str, Any], command: str) -> dict[str, Any]:
    """`settings` with our two hooks (and only one copy of each); everything else kept as it was."""
    import copy

    out = copy.deepcopy(settings)
    hooks = out.get("hooks")
    if hooks is None:
        hooks = out["hooks"] = {}
    if not isinstance(hooks, dict):
        from .errors import ReverieError

        raise ReverieError("The settings file's \"hooks\" is not an object: fix it by hand, then run "
                           "`reverie hook install` again.")
    for cc_event, event, matcher, timeout in HOOK_EVENTS:
        groups = hooks.get(cc_event)
        if not isinstance(groups, list):
            groups = []
        kept = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                inner = [h for h in group["hooks"] if not (isinstance(h, dict) and _is_ours(h.get("command"), event))]
                if not inner and group["hooks"]:
                    continue   # the group held only our old hook
                group = {**group, "hooks": inner}
            kept.append(group)
        ours: dict[str, Any] = {"hooks": [{"type": "command", "command": f"{command} hook {event}", "timeout": timeout}]}
        if matcher:
            ours = {"matcher": matcher, **ours}
        kept.append(ours)
        hooks[cc_event] = kept
    return out


def install(path: Path, command: str) -> dict[str, Any]:
    """Merge our hooks into the settings file at `path` (created if absent). The previous file is
    copied to `<name>.reverie-backup-<UTC time>` first; nothing is written when nothing changes."""
    import shutil
    from reverie.graph.files import write_json_atomic

    from .errors import ReverieError

    path = Path(path)
    if path.is_symlink():   # a settings file kept in a dotfiles folder: update the file the link points to
        path = path.resolve()
    existing: dict[str, Any] = {}
    raw = None
    if path.exists():
        raw = path.read_text(encoding="utf-8")
        try:
            existing = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            raise ReverieError(f"{path} is not valid JSON ({exc}): fix it (or move it away), then run "
                               "`reverie hook install` again.") from None
        if not isinstance(existing, dict):
            raise ReverieError(f"{path} does not hold a JSON object: fix it, then run `reverie hook install` again.")
    merged = merge_hooks(existing, command)
    summary = {"settings": str(path), "command": command, "events": [e[0] for e in HOOK_EVENTS],
               "changed": merged != existing or raw is None, "backup": None}
    if not summary["changed"]:
        return summary
    path.parent.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        backup = path.with_name(f"{path.name}.reverie-backup-{stamp}")
        n = 1
        while backup.exists():
            n += 1
            backup = path.with_name(f"{path.name}.reverie-backup-{stamp}-{n}")
        shutil.copy2(path, backup)
        summary["backup"] = str(backup)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    write_json_atomic(path, merged, mode=mode)
    return summary
