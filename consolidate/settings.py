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
    # Card writer used when `--writer` is not given: auto | offline | anthropic | claude-cli.
    # auto: claude-cli when `claude` is on PATH and logged in, else anthropic when an API key is
    # set, else offline (consolidate.writers.select).
    "writer": "auto",
    "anthropic": {
        "api_key": None, "model": "claude-haiku-4-5", "use_batches": False,
        "max_tokens": 2048, "timeout_s": 60,
        # Message Batches (nightly runs): poll interval, and how long to wait before leaving the
        # batch for the next run.
        "batch_poll_s": 30, "batch_wait_s": 21600,
    },
    # pass_api_key: hand ANTHROPIC_API_KEY to the `claude` child (it then bills the API, not your login).
    "claude_cli": {"command": "claude", "model": "haiku", "timeout_s": 120, "pass_api_key": False},
    # A model2vec model: a hub name (downloaded once by consolidation into the platform cache dir,
    # graph.model_cache) or a local folder; null switches vectors off (lexical matching only).
    "embedding_model": "minishlab/potion-base-8M",
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
    # Recall budgets (graph.recall.Budgets.DEFAULTS: characters and items per block, and in all) and
    # the hook's deadline in seconds (consolidate.hook.DEFAULT_DEADLINE_S).
    "recall": {
        "max_chars": 4000, "standing_items": 8, "standing_chars": 1500, "entities": 4,
        "relations_per_entity": 12, "entity_chars": 1600, "notes_items": 8, "notes_chars": 2400,
        "min_relative": 0.3, "hook_deadline_s": 2.0,
    },
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
    "feedback": {"half_life_days": 90.0},
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
    return with_defaults(user_settings(home))


def with_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """The user's settings `data` deep-merged over DEFAULTS (every key of DEFAULTS present)."""
    return _deep_merge(DEFAULTS, data)


def save_settings(home: Path, data: dict[str, Any]) -> Path:
    """Write settings atomically with mode 0600 (graph.files creates it so); returns the path."""
    from reverie.graph.files import write_json_atomic

    return write_json_atomic(settings_path(home), data, sort_keys=True)


def user_settings(home: str | Path) -> dict[str, Any]:
    """Only what the user has set (no defaults): the thing to edit and save back; {} when the
    file is absent, unreadable or not a JSON object."""
    return read_user(home)[0]


def read_user(home: str | Path) -> tuple[dict[str, Any], str | None]:
    """(what the user has set, why the file cannot be used or None), from one read of
    `<home>/settings.json`: an absent file is ({}, None); an unreadable one, one that is not JSON or
    not a JSON object is ({}, the reason)."""
    try:
        with open(in_home(home, SETTINGS_FILE), encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"cannot be read ({exc.__class__.__name__}: {getattr(exc, 'strerror', None) or exc})"
    try:
        data = json.loads(text)
    except ValueError as exc:
        return {}, f"is not valid JSON ({exc})"
    return (data, None) if isinstance(data, dict) else ({}, "is not a JSON object")


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
    """Set one dotted key in the user's settings file and save it (0600). A file that exists but
    cannot be used is never overwritten: `InvalidSetting` names it."""
    data, bad = read_user(home)
    if bad:
        from .errors import InvalidSetting

        raise InvalidSetting(f"{in_home(home, SETTINGS_FILE)} {bad}: fix or remove it first; "
                             f"nothing was changed.")
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

#: Ranges (low, high; None: open) of numeric settings, and the choices of enumerated ones.
RANGES: dict[str, tuple[float | None, float | None]] = {
    "anthropic.max_tokens": (1, 64000), "anthropic.timeout_s": (1, None), "anthropic.batch_poll_s": (1, None),
    "anthropic.batch_wait_s": (0, None), "claude_cli.timeout_s": (1, None),
    "index.tool_result_cap": (200, None), "index.max_line_bytes": (4096, None),
    "consolidate.max_passages": (1, None), "consolidate.max_calls": (0, None), "consolidate.max_cost_usd": (0, None),
    "consolidate.keep_threshold": (0, 1), "consolidate.max_stretch_attempts": (1, None),
    "consolidate.retry.attempts": (0, 20), "consolidate.retry.base_delay_s": (0, None),
    "consolidate.retry.max_delay_s": (0, None),
    "recall.max_chars": (0, 9500), "recall.min_relative": (0, 1), "recall.hook_deadline_s": (0, 60),
    "feedback.half_life_days": (0.001, None),
}
RANGES.update({f"recall.{k}": (0, None) for k in ("standing_items", "standing_chars", "entities",
                                                    "relations_per_entity", "entity_chars", "notes_items", "notes_chars")})
CHOICES: dict[str, tuple[str, ...]] = {"writer": ("auto", "offline", "anthropic", "claude-cli")}


#: Settings that take null although their default is not (null means "off").
NULLABLE = frozenset({"embedding_model"})


def check_value(dotted: str, value: Any) -> None:
    """Raise `InvalidSetting` (its message names the fix) unless `value` may be stored under the
    known key `dotted`: the default's type (an int where a float is expected; never a bool for a
    number; null only where the default is null), `RANGES` and `CHOICES`, the shapes of
    `agents.map` and `agents.disabled`, and for `schedule.*` what the scheduler accepts. A whole
    section is checked key by key."""
    from .agents import valid_agent_id
    from .errors import InvalidSetting

    known, default = default_for(dotted)
    if not known:
        raise InvalidSetting(f"Unknown setting {dotted!r}. See all keys with `reverie settings get`.")
    example = f"Example: reverie settings set {dotted} {json.dumps(default)}"
    if dotted == "agents.map":
        import os.path

        if not isinstance(value, dict) or not all(isinstance(k, str) and os.path.isabs(k) for k in value):
            raise InvalidSetting("agents.map is an object of absolute directory -> agent id, e.g. "
                                 "reverie settings set agents.map '{\"/home/me/work/api\": \"api\"}'")
        bad = [i for i in value.values() if not (isinstance(i, str) and valid_agent_id(i))]
        if bad:
            raise InvalidSetting(f"Invalid agent id(s) {bad}: use lowercase letters, digits, '.', '_' and '-'.")
        return
    if dotted == "agents.disabled" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise InvalidSetting("agents.disabled is a list of agent ids, e.g. "
                             "reverie settings set agents.disabled '[\"scratch\"]'")
    if value is None:
        if default is not None and dotted not in NULLABLE:
            raise InvalidSetting(f"{dotted} cannot be null (default {json.dumps(default)}). {example}")
        return
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        raise InvalidSetting(f"{dotted} must be a finite number; got {value}. {example}")
    if default is not None:
        ok = isinstance(value, type(default)) or (isinstance(default, float) and isinstance(value, int))
        if isinstance(default, (int, float)) and isinstance(value, bool) and not isinstance(default, bool):
            ok = False
        if not ok:
            raise InvalidSetting(f"{dotted} expects {_KINDS.get(type(default), type(default).__name__)} "
                                 f"(default {json.dumps(default)}); got {json.dumps(value)}. {example}")
    elif dotted in ("embedding_model", "schedule.timezone", "anthropic.api_key") and not isinstance(value, str):
        raise InvalidSetting(f"{dotted} expects a string or null; got {json.dumps(value)}.")
    if isinstance(default, dict):
        for key, sub in value.items():
            check_value(f"{dotted}.{key}", sub)
    if dotted in RANGES:
        lo, hi = RANGES[dotted]
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            span = (f"from {lo:g} to {hi:g}" if lo is not None and hi is not None
                    else f"at least {lo:g}" if lo is not None else f"at most {hi:g}")
            raise InvalidSetting(f"{dotted} must be {span}; got {json.dumps(value)}. {example}")
    if dotted in CHOICES and value not in CHOICES[dotted]:
        raise InvalidSetting(f"{dotted} must be one of {', '.join(CHOICES[dotted])}; got {json.dumps(value)}. {example}")
    if dotted.split(".")[0] == "schedule" and dotted != "schedule":
        _check_schedule({dotted.split(".", 1)[1]: value})


def _check_schedule(section: dict[str, Any]) -> None:
    """What the scheduler makes of the `schedule` section with `section` set over the defaults."""
    from reverie.schedules.policy import ScheduleConfigError, config_from_settings

    from .errors import InvalidSetting

    try:
        config_from_settings(_deep_merge(DEFAULTS["schedule"], section))
    except ScheduleConfigError as exc:
        raise InvalidSetting(str(exc)) from None


def problems(data: dict[str, Any], prefix: str = "") -> list[str]:
    """Every reason the user's settings `data` (`user_settings`, not merged with the defaults) would
    be refused by `reverie settings set`, one message per offending key (each names the fix)."""
    from .errors import InvalidSetting

    out: list[str] = []
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        known, default = default_for(dotted)
        if known and isinstance(default, dict) and default and isinstance(value, dict):
            out += problems(value, dotted + ".")
            continue
        try:
            check_value(dotted, value)
        except InvalidSetting as exc:
            out.append(str(exc))
    return out


def file_problem(home: str | Path) -> str | None:
    """Why `<home>/settings.json` cannot be used (`read_user`), or None when it is fine or absent.
    `reverie index` and `consolidate` then refuse to run; the hooks and recall use the defaults."""
    return read_user(home)[1]


def checked_settings(home: str | Path) -> dict[str, Any]:
    """`load_settings`, for the commands that act on settings (index, consolidate): raises
    `InvalidSetting` naming the file or each bad key and its fix, instead of running on values that
    would fail later or silently fall back (the hook keeps reading `load_settings` and fails open)."""
    from .errors import InvalidSetting

    data, bad = read_user(home)
    if bad:
        raise InvalidSetting(f"{in_home(home, SETTINGS_FILE)} {bad}: fix or remove it "
                             f"(`reverie doctor` checks it).")
    found = problems(data)
    if found:
        raise InvalidSetting("Invalid settings: " + " ".join(found))
    return with_defaults(data)


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
