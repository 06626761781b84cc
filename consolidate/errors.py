"""Domain errors. Each message names the fix; the CLI prints it and exits 1."""

API_KEY_FIX = ("set ANTHROPIC_API_KEY, or run `reverie settings set anthropic.api_key -` "
               "(it reads the key from stdin or a hidden prompt, so it stays out of your shell history)")


class ReverieError(Exception):
    """An error the user can act on; str(e) says what to do."""


class InvalidSetting(ReverieError):
    """An unknown settings key, or a value of the wrong type or shape for it."""


class UnknownAgent(ReverieError):
    pass


class AgentBusy(ReverieError):
    pass


class AgentDbUnreadable(ReverieError):
    """An agent's agent.db cannot be opened or read (damaged, not a database, locked by a foreign tool)."""


class NoApiKey(ReverieError):
    def __init__(self) -> None:
        super().__init__(f"No API key: {API_KEY_FIX}.")


class ApiAuthFailed(ReverieError):
    """The API refused the key (401/403): every further call would fail the same way."""

    def __init__(self, detail: str, *, writer: str = "anthropic") -> None:
        if writer == "claude-cli":
            # the writer's message names the fix (a login, or claude_cli.pass_api_key)
            message = f"{detail}. `reverie doctor` shows which credential the claude child uses."
        else:
            message = (f"The Anthropic API refused the key ({detail}). Check it with `reverie doctor`; "
                       f"{API_KEY_FIX}. ANTHROPIC_API_KEY, when set, takes precedence over settings.")
        super().__init__(message)


def is_busy(exc: BaseException) -> bool:
    """A database error that only means another connection holds a lock (busy, not damaged)."""
    import sqlite3

    return isinstance(exc, sqlite3.OperationalError) and (
        getattr(exc, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED") or any(
            w in str(exc).lower() for w in ("database is locked", "database table is locked", "database is busy")))
