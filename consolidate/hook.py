"""Claude Code hook entry (placeholder; the Recall work replaces it). Fails open: prints nothing, exits 0."""


def run_hook(event: str, home: str | None) -> int:
    return 0
