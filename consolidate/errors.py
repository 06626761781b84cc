"""Domain errors. Each message names the fix; the CLI prints it and exits 1."""


class ReverieError(Exception):
    """An error the user can act on; str(e) says what to do."""


class UnknownAgent(ReverieError):
    pass


class AgentBusy(ReverieError):
    pass


class NoApiKey(ReverieError):
    def __init__(self) -> None:
        super().__init__(
            "No API key: set ANTHROPIC_API_KEY or run `reverie settings set anthropic.api_key KEY`."
        )
