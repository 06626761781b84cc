"""The click command tree. Each module registers one command group; commands parse, open, call one
library function, and turn domain errors into a message that names the fix."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import click

from ..errors import ReverieError, is_busy
from ..paths import resolve_home


@dataclass
class AppContext:
    home: Path


pass_app = click.make_pass_decorator(AppContext)


def emit_json(data) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def emit(data, as_json: bool, render) -> None:
    """`data` as JSON with --json, else the text `render(data)`."""
    if as_json:
        emit_json(data)
    else:
        click.echo(render(data))


def _database_message(exc: sqlite3.DatabaseError, path: object) -> str:
    """What to say when a database fails under a command (the library did not name it)."""
    what = f"{path}" if path else "A reverie database"
    if is_busy(exc):
        return f"{what} is busy (held by another reverie process): try again when it finishes."
    return (f"{what} cannot be used ({type(exc).__name__}: {exc}). Run `reverie doctor` to check it; a "
            "damaged agent.db can be moved aside and rebuilt with `reverie index`.")


class ReverieGroup(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (sqlite3.DatabaseError, ReverieError) as exc:
            # A message may quote what the user typed (an entity name, an id) or a database's words:
            # scrubbed like any print.
            from ..scrubber import printable_scrubber
            from ._agent import DB_META

            message = (_database_message(exc, ctx.meta.get(DB_META)) if isinstance(exc, sqlite3.DatabaseError)
                       else str(exc))
            raise click.ClickException(printable_scrubber(getattr(ctx.obj, "home", None))(message)) from None


def installed_version() -> str:
    """The installed distribution's version (importlib.metadata), or a note when reverie runs from
    a checkout that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reverie")
    except PackageNotFoundError:
        return "unknown (not installed: run from a checkout)"


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"reverie {installed_version()}")
    ctx.exit()


def build_cli() -> click.Group:
    @click.group(cls=ReverieGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
                  help="Print the installed version and exit.")
    @click.option("--home", type=click.Path(file_okay=False), default=None,
                  help="reverie home (default: $REVERIE_HOME, else the platform's user data dir).")
    @click.pass_context
    def cli(ctx: click.Context, home: str | None) -> None:
        """reverie: long-term memory for coding agents."""
        ctx.obj = AppContext(home=resolve_home(home))

    from . import (  # noqa: PLC0415  (each module keeps its heavy imports inside its commands)
        consolidate_cmd,
        graph_cmd,
        index_cmd,
        mcp_cmd,
        recall_cmd,
        redact_cmd,
        schedule_cmd,
        trust_cmd,
    )

    for module in (index_cmd, redact_cmd, consolidate_cmd, recall_cmd, graph_cmd, trust_cmd, schedule_cmd, mcp_cmd):
        module.register(cli)
    return cli
