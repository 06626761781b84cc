"""Recall commands: `recall`, `search`, `hook install` (and `hook session-start|user-prompt-submit`,
which normally never reach click: consolidate/cli.py dispatches them first, stdlib only)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from ..errors import ReverieError, UnknownAgent
from . import emit_json, pass_app


def _agent_db(home: Path, agent: str | None) -> tuple[str, Path]:
    """(agent id, db path) for `--agent`, else for the current directory; errors name the fix."""
    from ..agents import agent_for_cwd, valid_agent_id
    from ..paths import agent_db_path

    if not agent:
        agent = agent_for_cwd(home, os.getcwd())
        if not agent:
            raise UnknownAgent("No agent for this directory: pass --agent ID (`reverie agents` lists them).")
    if not valid_agent_id(agent):
        raise UnknownAgent(f"{agent!r} is not an agent id: `reverie agents` lists them.")
    db = agent_db_path(home, agent)
    if not db.is_file():
        raise UnknownAgent(f"No agent {agent!r} in {home}: `reverie agents` lists them "
                           "(run `reverie index` first if the list is empty).")
    return agent, db


def _scrubber(home: Path):
    from ..hook import secret_scrubber

    scrub = secret_scrubber(home)
    if scrub is None:
        raise ReverieError("The remembered-secret check (redact.memory) is unavailable, so nothing is printed: "
                           "reinstall reverie (`pip install -e .`) and run `reverie doctor`.")
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
        from graph.recall import Budgets, recall, recalled_ids
        from graph.recall_embed import prompt_embedder

        from ..hook import _now_iso, append_recall_log
        from ..paths import recall_log_path
        from ..settings import get, load_settings

        if not primer and not prompt.strip():
            raise ReverieError("Nothing to recall for: pass --prompt TEXT (or --primer for a session start).")
        agent, db = _agent_db(app.home, agent)
        settings = load_settings(app.home)
        kind = "primer" if primer else "prompt"
        result = recall(db, prompt, session=session, kind=kind,
                        budgets=Budgets.from_settings(get(settings, "recall", {})),
                        embedder=prompt_embedder(get(settings, "embedding_model"), app.home / "cache"),
                        scrub=_scrubber(app.home), agent=agent)
        if session and result["text"]:
            ids, entities = recalled_ids(result)
            append_recall_log(recall_log_path(app.home, agent),
                              {"at": _now_iso(), "session": session, "kind": kind, "ids": ids, "entities": entities})
        if as_json:
            emit_json(result)
        elif result["text"]:
            click.echo(result["text"])
        else:
            click.echo("(nothing relevant to recall)", err=True)

    @cli.command("search")
    @click.argument("query", nargs=-1, required=True)
    @click.option("--agent", "agent", default=None, help="Agent id (default: the agent of this directory).")
    @click.option("--limit", type=click.IntRange(1, 200), default=10, show_default=True,
                  help="Results per section.")
    @click.option("--json", "as_json", is_flag=True)
    @pass_app
    def search_cmd(app, query: tuple[str, ...], agent: str | None, limit: int, as_json: bool) -> None:
        """Search an agent's memory: cards first, then raw history (redacted) with dates and conversations."""
        from ..search import search

        agent, db = _agent_db(app.home, agent)
        result = search(db, " ".join(query), limit=limit, scrub=_scrubber(app.home))
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
        from ..hook import default_settings_file, hook_command, install

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
            lines.append(f"  #{c['id']} [{c['category']}, {c['date']}{sessions}{status}] {c['statement']}")
    else:
        lines.append("Cards: none")
    if result["history"]:
        lines.append("History:")
        for h in result["history"]:
            lines.append(f"  {h['at'][:16].replace('T', ' ')}  {h['conversation']}  {h['role']}: {h['snippet']}")
    else:
        lines.append("History: none")
    return "\n".join(lines)
