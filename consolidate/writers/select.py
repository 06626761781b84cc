"""The `auto` writer choice (settings `writer`, the default): which backend a run uses, and why.

Order: `claude-cli` when the `claude` command (settings `claude_cli.command`) is on PATH and its own
check (`claude auth status --json`, run as the child would run: `claude_cli.auth_status`) says it
is logged in; else `anthropic` when an API key is set (ANTHROPIC_API_KEY, or settings
`anthropic.api_key`); else `offline`. The reason names what was found, never a credential.

The check costs one `claude` start (~2 s measured with 2.1.197), so a choice is kept for
`CACHE_S` seconds per process and configuration (`consolidate --all` checks once; the daemon sees
a new login within minutes).
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any, Mapping

#: Seconds a choice is reused for the same command, key switch and credential presence.
CACHE_S = 300.0
_CACHE: dict[tuple, tuple[float, tuple[str, str]]] = {}


def choose(settings: Mapping[str, Any], *, home: str | os.PathLike | None = None,
           env: Mapping[str, str] | None = None, status: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """(writer name, reason) for settings `writer: auto` (see the module docstring). `status`: an
    `auth_status` already taken (doctor), else it is taken here (and the choice cached)."""
    from .claude_cli import auth_status, describe_credential

    env = os.environ if env is None else env
    cli = settings.get("claude_cli") or {}
    command = str(cli.get("command") or "claude")
    pass_key = bool(cli.get("pass_api_key", False))
    key_env = bool(env.get("ANTHROPIC_API_KEY"))
    key_set = bool((settings.get("anthropic") or {}).get("api_key"))
    found = shutil.which(command, path=env.get("PATH"))
    cache_key = (command, found, pass_key, key_env, key_set, bool(env.get("ANTHROPIC_AUTH_TOKEN")),
                 os.fspath(home) if home is not None else None)
    hit = _CACHE.get(cache_key)
    if status is None and hit is not None and time.monotonic() - hit[0] < CACHE_S:
        return hit[1]
    if found is None:
        why_not = f"`{command}` is not on PATH"
    else:
        if status is None:
            status = auth_status(command, pass_api_key=pass_key, env=env, home=home,
                                 timeout_s=min(30.0, float(cli.get("timeout_s", 30))))
        if status["logged_in"]:
            choice = ("claude-cli", f"`{command}` is on PATH and logged in with {describe_credential(status)}")
            _CACHE[cache_key] = (time.monotonic(), choice)
            return choice
        why_not = (f"`{command}` is on PATH but not logged in" if not status["error"]
                   else f"`{command}` cannot be checked ({status['error']})")
        if not status["error"] and key_env and not pass_key:
            why_not += " (ANTHROPIC_API_KEY is kept from it: claude_cli.pass_api_key is false)"
    if key_env or key_set:
        where = "ANTHROPIC_API_KEY is set" if key_env else "settings anthropic.api_key is set"
        choice = ("anthropic", f"{why_not}; {where}")
    else:
        choice = ("offline", f"{why_not}, and no Anthropic API key is set (ANTHROPIC_API_KEY or "
                             "settings anthropic.api_key)")
    _CACHE[cache_key] = (time.monotonic(), choice)
    return choice


def clear_cache() -> None:
    """Forget earlier choices (tests, and after `reverie settings set`)."""
    _CACHE.clear()
