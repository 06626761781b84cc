"""User settings: `<home>/settings.json`, written atomically with mode 0600 (it may hold an API key).

Invariants: `load_settings` always returns every key of DEFAULTS (user values deep-merged over them);
a missing or unreadable file means defaults. Standard library only (the hook path reads settings).
"""

from __future__ import annotations

import copy
import json

from .paths import SETTINGS_FILE, in_home, settings_path

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the hook path imports this module (typing costs it ~2.4 ms)
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

DEFAULTS: dict[str, Any] = {
    # Card writer used when `--writer` is not given: offline | anthropic | claude-cli.
    "writer": "offline",
    "anthropic": {
        "api_key": None, "model": "claude-haiku-4-5", "use_batches": False,
        "max_tokens": 2048, "timeout_s": 60,
        # Message Batches (nightly runs): poll interval, and how long to wait before leaving the
        # batch for the next run.
        "batch_poll_s": 30, "batch_wait_s": 21600,
    },
    # pass_api_key: hand ANTHROPIC_API_KEY to the `claude` child (it then bills the API, not your login).
    "claude_cli": {"command": "claude", "model": "haiku", "timeout_s": 120, "pass_api_key": False},
    # Path of a model2vec model folder, or a hub name for online users; None: lexical fallback.
    "embedding_model": None,
    "agents": {
        # Absolute directory -> agent id; sessions whose cwd is this directory or below it join that agent.
        "map": {},
        # Agent ids switched off: nothing new is indexed or built; what exists stays readable.
        "disabled": [],
    },
    "index": {
        # Tool results longer than this many characters are clipped (head and tail kept).
        "tool_result_cap": 8000,
        # A transcript line longer than this is rejected (counted, never parsed into memory).
        "max_line_bytes": 64 * 1024 * 1024,
    },
    "consolidate": {
        "max_passages": 1000,
        "max_calls": 10,
        "max_cost_usd": 1.0,
        "keep_threshold": 0.5,
        # A stretch whose cards fail this many times (malformed output, merge error) is skipped.
        "max_stretch_attempts": 3,
        # Retries of 429/529/5xx/timeouts (exponential backoff), then the work is left for the next run.
        "retry": {"attempts": 3, "base_delay_s": 1.0, "max_delay_s": 30.0},
    },
    "recall": {},
    "schedule": {
        # Nightly consolidation time (local wall clock); per agent: <home>/agents/<id>/schedule.json.
        "hour": 2, "minute": 0,
        # Automatic consolidation only inside this window (end <= start crosses midnight).
        "window_start": "02:00", "window_end": "08:00",
        # Pause every automatic run (also $REVERIE_PAUSE=1); `consolidate --now` still works.
        "paused": False,
        # tz database name; None: the machine's zone.
        "timezone": None,
        # Daemon: a job missed by up to this many seconds still runs (missed nightly runs are also
        # made up later in the same window).
        "misfire_grace_s": 3600,
        "index_every_minutes": 60,
        # Daemon: how often to look for missed nightly runs and backlogs inside the window.
        "backfill_every_minutes": 10,
    },
    "feedback": {"half_life_days": 90},
}


def _deep_merge(base: dict, override: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def load_settings(home: str | Path) -> dict[str, Any]:
    """Defaults merged with `<home>/settings.json` (ignored if absent or not a JSON object)."""
    return _deep_merge(DEFAULTS, user_settings(home))


def save_settings(home: Path, data: dict[str, Any]) -> Path:
    """Write settings atomically with mode 0600 (graph.files creates it so); returns the path."""
    from graph.files import write_json_atomic

    return write_json_atomic(settings_path(home), data, sort_keys=True)


def user_settings(home: str | Path) -> dict[str, Any]:
    """Only what the user has set (no defaults): the thing to edit and save back; {} when the
    file is absent, unreadable or not a JSON object."""
    try:
        with open(in_home(home, SETTINGS_FILE), encoding="utf-8") as fh:
            data = json.loads(fh.read())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def get(settings: dict[str, Any], dotted: str, default: Any = None) -> Any:
    """`get(s, "consolidate.max_calls")`."""
    node: Any = settings
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def half_life_days(settings: dict[str, Any]) -> float:
    """`feedback.half_life_days` when it is a positive number, else the default (90): recall and
    consolidation read it the same way (`reverie` commands that take it explicitly validate it)."""
    value = get(settings, "feedback.half_life_days", None)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if ok else float(DEFAULTS["feedback"]["half_life_days"])


def set_value(home: Path, dotted: str, value: Any) -> Path:
    """Set one dotted key in the user's settings file and save it (0600)."""
    data = user_settings(home)
    node = data
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return save_settings(home, data)


#: Settings whose values are secrets: stored as given (never parsed), never printed.
SECRET_KEYS = frozenset({"anthropic.api_key"})


def default_for(dotted: str) -> tuple[bool, Any]:
    """(known?, default) for a dotted key; keys below a free-form section (an empty {} default) are
    known with no default; `agents.map` is set whole."""
    node: Any = DEFAULTS
    parts = dotted.split(".")
    for part in parts:
        if not isinstance(node, dict):
            return False, None
        if part not in node:
            return (node == {} and parts[:2] != ["agents", "map"]), None
        node = node[part]
    return True, node


def parse_value(dotted: str, raw: str) -> Any:
    """The value `reverie settings set` stores for the text `raw`: JSON when it parses (numbers,
    true/false, lists, objects), else the string; a secret key's value is always the string."""
    if dotted in SECRET_KEYS:
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


_KINDS = {bool: "true or false", int: "a whole number", float: "a number", str: "a string", list: "a list",
          dict: "an object"}


def check_value(dotted: str, value: Any) -> None:
    """Raise `InvalidSetting` (its message names the fix) unless `value` may be stored under the
    known key `dotted`: the default's type (an int where a float is expected; never a bool for a
    number), and the shapes of `agents.map` and `agents.disabled`."""
    from .agents import valid_agent_id
    from .errors import InvalidSetting

    known, default = default_for(dotted)
    if not known:
        raise InvalidSetting(f"Unknown setting {dotted!r}. See all keys with `reverie settings get`.")
    if dotted == "agents.map":
        import os.path

        if not isinstance(value, dict) or not all(isinstance(k, str) and os.path.isabs(k) for k in value):
            raise InvalidSetting("agents.map is an object of absolute directory -> agent id, e.g. "
                                 "reverie settings set agents.map '{\"/home/me/work/api\": \"api\"}'")
        bad = [i for i in value.values() if not (isinstance(i, str) and valid_agent_id(i))]
        if bad:
            raise InvalidSetting(f"Invalid agent id(s) {bad}: use lowercase letters, digits, '.', '_' and '-'.")
    if dotted == "agents.disabled" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise InvalidSetting("agents.disabled is a list of agent ids, e.g. "
                             "reverie settings set agents.disabled '[\"scratch\"]'")
    if default is not None and value is not None:
        ok = isinstance(value, type(default)) or (isinstance(default, float) and isinstance(value, int))
        if isinstance(default, (int, float)) and isinstance(value, bool) and not isinstance(default, bool):
            ok = False
        if not ok:
            raise InvalidSetting(f"{dotted} expects {_KINDS.get(type(default), type(default).__name__)} "
                                 f"(default {json.dumps(default)}); "
                                 f"got {json.dumps(value)}. Example: reverie settings set {dotted} {json.dumps(default)}")


def set_checked(home: Path, dotted: str, raw: str) -> tuple[Path, Any]:
    """Parse `raw` (`parse_value`), check it (`check_value`, raising `InvalidSetting`), store it;
    returns (settings file, stored value). Nothing is written when the check fails."""
    value = parse_value(dotted, raw)
    check_value(dotted, value)
    return set_value(home, dotted, value), value


def masked(dotted: str, value: Any) -> Any:
    """`value` with every secret replaced by "(set)" (or None when unset): what may be printed."""
    if dotted in SECRET_KEYS:
        return "(set)" if value else None
    if isinstance(value, dict):
        return {k: masked(f"{dotted}.{k}" if dotted else k, v) for k, v in value.items()}
    return value
