"""Console entry point `reverie`.

The hook commands (`reverie [--home DIR] hook session-start|user-prompt-submit`) are dispatched
before click is imported, so a hook process runs on the standard library and our light modules;
so is `reverie [--home DIR] mcp` (the MCP server: only the SDK at startup).
"""

from __future__ import annotations

import sys

HOOK_EVENTS = ("session-start", "user-prompt-submit")


def _split_home(argv: list[str]) -> tuple[str | None, list[str]]:
    """(--home value, the rest) of argv."""
    if len(argv) >= 2 and argv[0] == "--home":
        return argv[1], argv[2:]
    if argv and argv[0].startswith("--home="):
        return argv[0].split("=", 1)[1], argv[1:]
    return None, list(argv)


def _hook_request(argv: list[str]) -> tuple[str, str | None] | None:
    """(event, home) when argv is exactly a hook invocation, else None."""
    home, rest = _split_home(argv)
    if len(rest) == 2 and rest[0] == "hook" and rest[1] in HOOK_EVENTS:
        return rest[1], home
    return None


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    home, rest = _split_home(args)
    if rest == ["mcp"]:
        # `reverie [--home DIR] mcp`: the stdio MCP server, started without our commands and click
        # (consolidate/mcp_server.py)
        from .mcp_server import run

        sys.exit(run(home))
    hook = _hook_request(args)
    if hook is not None:
        from .hook import run_hook

        code = run_hook(hook[0], hook[1])
        if argv is None:
            # A hook process: what it printed is flushed and what it recorded is closed, so skip the
            # interpreter's teardown (freeing every module: ~3 ms of the hook's budget).
            import os

            try:
                sys.stdout.flush()
            except BaseException:  # noqa: BLE001  (fail open: a closed pipe is not an error)
                pass
            os._exit(code)
        sys.exit(code)
    from .commands import build_cli

    build_cli().main(args=args, prog_name="reverie")


if __name__ == "__main__":
    main()
