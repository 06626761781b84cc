"""Claude Code hook entry: `reverie [--home DIR] hook session-start|user-prompt-submit`.

Reads the hook JSON from stdin (session_id, cwd, prompt, source, hook_event_name), finds the agent of
`cwd`, runs `graph.recall.recall` and prints
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": "<text>"}}`, then appends the
injection to the agent's recall log.

Invariants:
- Fails open: on any error, empty or invalid stdin, an unknown cwd, a switched-off agent, a missing
  database, a busy database, our own child process (`REVERIE_CHILD` set) or past its own deadline
  it prints nothing and returns 0. It never returns anything but 0 (exit 2 would block the prompt).
- Fails closed on secrets: what it prints has passed `redact.memory.SecretMemory.scrub`; when that
  check is unavailable it prints nothing.
- Imports only the standard library and light modules of ours (paths, settings, agents,
  graph.recall, graph.recall_embed, redact.memory).
- Output goes out in one write, after the deadline timer is disarmed; nothing is printed after it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from .paths import ENV_CHILD_GUARD, agent_db_path, recall_log_path, resolve_home, secrets_dir

EVENTS = {"session-start": ("SessionStart", "primer"), "user-prompt-submit": ("UserPromptSubmit", "prompt")}
#: Seconds a hook may take before it gives up silently (settings `recall.hook_deadline_s`); below the
#: timeouts `hook install` writes (SessionStart 10 s, UserPromptSubmit 5 s).
DEFAULT_DEADLINE_S = 2.0
#: Largest stdin read (a prompt with a pasted file can be long; recall reads its start only).
MAX_STDIN_BYTES = 4 * 1024 * 1024
#: The recall log is renamed to `<name>.1` (replacing an older one) when it passes this size.
RECALL_LOG_MAX_BYTES = 1_000_000
#: SessionStart sources after which the context no longer holds what we injected.
RESET_SOURCES = ("clear", "compact")


class _Deadline(Exception):
    pass


def _arm(seconds: float):
    """Raise `_Deadline` in the main thread after `seconds` (SIGALRM), or exit silently from a
    timer thread where there is no SIGALRM. Returns a function that disarms it."""
    try:
        import signal

        def _fire(signum, frame):  # noqa: ARG001
            raise _Deadline()

        previous = signal.signal(signal.SIGALRM, _fire)
        signal.setitimer(signal.ITIMER_REAL, seconds)

        def disarm() -> None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

        return disarm
    except (ImportError, AttributeError, ValueError):
        import threading

        timer = threading.Timer(seconds, lambda: os._exit(0))
        timer.daemon = True
        timer.start()
        return timer.cancel


def append_recall_log(path: Path, entry: dict[str, Any], max_bytes: int = RECALL_LOG_MAX_BYTES) -> None:
    """Append one JSON line; first rotate `path` to `path.1` when it has reached `max_bytes`.
    Rotation and append happen under an advisory lock (where fcntl exists), so concurrent hooks
    neither interleave lines nor rotate twice."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    lock_fd = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            import fcntl

            fcntl.flock(lock_fd, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover  (Windows)
            pass
        try:
            if path.stat().st_size >= max_bytes:
                os.replace(path, path.with_name(path.name + ".1"))
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    finally:
        os.close(lock_fd)


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _half_life(value: Any) -> float:
    """settings feedback.half_life_days, or 90 when it is not a positive number."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 90.0


def build_injection(event: str, data: dict[str, Any], home: Path, settings: dict[str, Any] | None = None,
                    ) -> tuple[dict[str, Any], str, dict[str, Any]] | None:
    """(hook output, agent id, recall-log entry) for one hook call, or None when nothing is to be
    injected. Raises on errors (the caller fails open)."""
    from . import agents
    from . import settings as settings_mod
    from graph.recall import Budgets, recall, recalled_ids
    from graph.recall_embed import prompt_embedder

    hook_name, kind = EVENTS[event]
    if not isinstance(data, dict):
        return None
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return None
    settings = settings if settings is not None else settings_mod.load_settings(home)
    agent = agents.resolve(cwd, settings, agents.load_registry(home))
    if not agent or agent in agents.disabled_agents(settings) or not agents.valid_agent_id(agent):
        return None
    db = agent_db_path(home, agent)
    if not db.is_file():
        return None
    prompt = data.get("prompt") if kind == "prompt" else ""
    if kind == "prompt" and (not isinstance(prompt, str) or not prompt.strip()):
        return None
    scrub = secret_scrubber(home)
    if scrub is None:
        return None   # fail closed: nothing leaves without the remembered-secret check
    session = data.get("session_id") if isinstance(data.get("session_id"), str) else None
    embedder = prompt_embedder(settings_mod.get(settings, "embedding_model"), home / "cache")
    result = recall(db, prompt or "", session=session, kind=kind,
                    budgets=Budgets.from_settings(settings_mod.get(settings, "recall", {})),
                    embedder=embedder, scrub=scrub, agent=agent,
                    reset_session=kind == "primer" and data.get("source") in RESET_SOURCES,
                    half_life_days=_half_life(settings_mod.get(settings, "feedback.half_life_days", 90)))
    text = result["text"]
    if not text:
        return None
    ids, entities = recalled_ids(result)
    output = {"hookSpecificOutput": {"hookEventName": hook_name, "additionalContext": text}}
    entry = {"at": _now_iso(), "session": session, "kind": kind, "ids": ids, "entities": entities,
             "episodes": [r["id"] for r in result.get("recent", [])],
             "warnings": [w["id"] for w in result.get("warnings", [])]}
    return output, agent, entry


def secret_scrubber(home: Path):
    """`text -> text` with remembered secrets removed, or None when the check is unavailable."""
    try:
        from redact.memory import SecretMemory

        memory = SecretMemory(secrets_dir(home))
    except Exception:  # noqa: BLE001
        return None

    def scrub(text: str) -> str:
        return memory.scrub(text)[0]

    return scrub


def run_hook(event: str, home: str | None) -> int:
    """Run one hook event; always returns 0 (see module invariants)."""
    if os.environ.get(ENV_CHILD_GUARD) or event not in EVENTS:
        return 0
    started = time.monotonic()
    disarm = None
    try:
        home_path = resolve_home(home)
        from . import settings as settings_mod

        settings = settings_mod.load_settings(home_path)
        deadline = settings_mod.get(settings, "recall.hook_deadline_s", DEFAULT_DEADLINE_S)
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or deadline <= 0:
            deadline = DEFAULT_DEADLINE_S
        disarm = _arm(float(deadline))
        raw = sys.stdin.buffer.read(MAX_STDIN_BYTES) if sys.stdin is not None else b""
        if not raw.strip():
            return 0
        data = json.loads(raw.decode("utf-8", "replace"))
        built = build_injection(event, data, home_path, settings)
        disarm()
        disarm = None
        if built is None or time.monotonic() - started > deadline:
            return 0
        output, agent, entry = built
        sys.stdout.write(json.dumps(output, ensure_ascii=False))
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001  (fail open, whatever happened; never exit 2)
        return 0
    finally:
        if disarm is not None:
            try:
                disarm()
            except BaseException:  # noqa: BLE001
                pass
    try:
        append_recall_log(recall_log_path(home_path, agent), entry)
    except Exception:  # noqa: BLE001  (the injection happened; a lost log line only costs a count)
        import logging

        logging.getLogger(__name__).debug("recall log append failed", exc_info=True)
    return 0


# ---------------------------------------------------------------------------------------------
# `reverie hook install` (not on the hook path: its imports stay inside the functions)

#: (Claude Code event, our event, matcher or None, timeout in seconds)
HOOK_EVENTS = (
    ("SessionStart", "session-start", "startup|resume|clear|compact", 10),
    ("UserPromptSubmit", "user-prompt-submit", None, 5),
)


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
    if not isinstance(command, str):
        return False
    words = command.split()
    return (len(words) >= 3 and words[-2:] == ["hook", event]
            and Path(words[0].strip("'\"")).name in ("reverie", "reverie.exe"))


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
    from .files import write_json_atomic

    from .errors import ReverieError

    path = Path(path)
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
