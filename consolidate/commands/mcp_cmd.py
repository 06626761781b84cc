"""`reverie mcp`: normally dispatched before click (consolidate/cli.py); this command gives it a
`--help` and serves when click does reach it (e.g. `reverie --home DIR mcp` spelled otherwise)."""

from __future__ import annotations

import sys

import click

from . import pass_app


def register(cli: click.Group) -> None:
    @cli.command("mcp")
    @pass_app
    def mcp_cmd(app) -> None:
        """Serve the agent's memory as an MCP server over stdio (tools: search, recall, graph,
        feedback, forget; see consolidate/mcp_server.py)."""
        from ..mcp_server import run

        sys.exit(run(app.home))
