"""Recall commands: `recall`, `search`, `hook install` (and `hook session-start|user-prompt-submit`,
which normally never reach click: consolidate/cli.py dispatches them first, stdlib only)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from ..errors import ReverieError
from . import emit_json, pass_app
from ._agent import agent_db


_NO_SCRUBBER = ("The remembered-secret check (redact.memory) is unavailable, so nothing is printed: "
                "reinstall reverie (`pip install -e .`) and run `reverie doctor`.")


def _scrubber(home: Path):
    from ..hook import secret_scrubber

    scrub = secret_scrubber(home)
    if scrub is None:
        raise ReverieError(_NO_SCRUBBER)
    return scrub


def register(cli: click.Group) -> None:
    @cli.command("recall")
    @click.option("--agent", "agent", default=None, help="Agent id (default: the agent of this directory).")
    @click.option("--prompt", "prompt", default="", help="The prompt to recall for.")
    @click.option("--session", "session", default=None,
                  help="Act as this session: skip what it already got, remember what it gets, log it.")
    @click.option("--primer", is_flag=True, help="What a session start injects (standing decisions).")
    @click.option("--json", "as_json", is_flag=True, help="Print the JSON (standing, entities, notes, text).")
    @pass_app
    def recall_cmd(app, agent: str | None, prompt: str, session: str | None, primer: bool, as_json: bool) -> None:
        """Show what recall would inject for PROMPT (exactly what the hook injects)."""
        from ..agents import is_disabled
        from ..hook import ScrubberUnavailable, recall_for_agent

        if not primer and not prompt.strip():
            raise ReverieError("Nothing to recall for: pass --prompt TEXT (or --primer for a session start).")
        agent, _db = agent_db(app.home, agent)
        try:
            injection = recall_for_agent(app.home, agent, "primer" if primer else "prompt", prompt, session=session)
        except ScrubberUnavailable:
            raise ReverieError(_NO_SCRUBBER) from None
        if session:
            injection.record()   # acting as the session: it got this text, the log says so
        if as_json:
            emit_json(injection.result)
        elif injection.text:
            click.echo(injection.text)
        else:
            click.echo("(nothing relevant to recall)", err=True)
        if is_disabled(app.home, agent):
            click.echo(f"(agent {agent!r} is switched off: the hook injects nothing for it; "
                       "`reverie settings get agents.disabled` lists the switched-off agents)", err=True)

    # a query may name a flag ("--no-verify"): words click does not know as options are search words
    @cli.command("search", context_settings={"ignore_unknown_options": True})
    @click.argument("query", nargs=-1, required=True, type=click.UNPROCESSED)
    @click.option("--agent", "agent", default=None, help="Agent id (default: the agent of this directory).")
    @click.option("--limit", type=click.IntRange(1, 200), default=10, show_default=True,
                  help="Results per section.")
    @click.option("--json", "as_json", is_flag=True)
    @pass_app
    def search_cmd(app, query: tuple[str, ...], agent: str | None, limit: int, as_json: bool) -> None:
        """Search an agent's memory: cards first, then raw history (redacted) with dates and conversations."""
        from ..scrubber import printable_scrubber
        from ..search import search

        agent, db = agent_db(app.home, agent)
        result = search(db, " ".join(query), limit=limit, scrub=_scrubber(app.home))
        result["query"] = printable_scrubber(app.home)(result["query"])   # a typed query may hold a secret
        result = {"agent": agent, **result}
        if as_json:
            emit_json(result)
            return
        click.echo(_render_search(result))

    @cli.group("hook")
    def hook_group() -> None:
        """Claude Code hooks: install them, or run one (stdin: the hook's JSON)."""

    @hook_group.command("install")
    @click.option("--settings", "settings_file", type=click.Path(dir_okay=False), default=None,
                  help="Claude Code settings.json (default: $CLAUDE_CONFIG_DIR/settings.json or ~/.claude/settings.json).")
    @click.option("--json", "as_json", is_flag=True)
    @pass_app
    def hook_install(app, settings_file: str | None, as_json: bool) -> None:
        """Add reverie's SessionStart and UserPromptSubmit hooks to a Claude Code settings.json
        (backup first; idempotent; other hooks kept)."""
        from ..hook_install import default_settings_file, hook_command, install

        path = Path(settings_file).expanduser() if settings_file else default_settings_file()
        summary = install(path, hook_command(app.home))
        if as_json:
            emit_json(summary)
            return
        if not summary["changed"]:
            click.echo(f"reverie hooks already installed in {summary['settings']}.")
        else:
            click.echo(f"Installed reverie hooks in {summary['settings']} "
                       f"({', '.join(summary['events'])}; command: {summary['command']}).")
            if summary["backup"]:
                click.echo(f"Backup of the previous file: {summary['backup']}")

    def _hook_event(event: str) -> None:
        @hook_group.command(event, help=f"Run the {event} hook (stdin: Claude Code hook JSON; prints nothing on any error).")
        @pass_app
        def _run(app) -> None:
            from ..hook import run_hook

            sys.exit(run_hook(event, str(app.home)))

    for event in ("session-start", "user-prompt-submit"):
        _hook_event(event)


def _render_search(result: dict[str, Any]) -> str:
    lines = [f"Memory of {result['agent']} for {result['query']!r}:"]
    if result["cards"]:
        lines.append("Cards:")
        for c in result["cards"]:
            status = "" if c["status"] == "active" else f", {c['status']}"
            sessions = f", {c['sessions']} sessions" if c["sessions"] > 1 else ""
            harnesses = f", from {'+'.join(c['harnesses'])}" if c.get("harnesses") else ""
            lines.append(f"  #{c['id']} [{c['category']}, {c['date']}{sessions}{harnesses}{status}] {c['statement']}")
    else:
        lines.append("Cards: none")
    if result["history"]:
        lines.append("History:")
        for h in result["history"]:
            lines.append(f"  {h['at'][:16].replace('T', ' ')}  {h['conversation']} ({h.get('harness', 'claude-code')})  "
                         f"{h['role']}: {h['snippet']}")
    else:
        lines.append("History: none")
    return "\n".join(lines)
