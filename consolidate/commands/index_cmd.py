"""Commands of the index: `index`, `agents`, `show conversation`, `doctor`, `settings get|set`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..errors import ReverieError
from . import emit, emit_json, pass_app

def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(d.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"


def _render_index(s: dict[str, Any]) -> str:
    lines = [
        f"Indexed {s['files_seen']} transcript files ({s['files_changed']} changed, {s['files_missing']} gone from disk): "
        f"{s['messages_added']} messages added ({s['blocks_added']} blocks; {s['lines_merged']} split lines merged), "
        f"{s['titles']} titles, in {s['seconds']} s.",
        f"skipped:  {_counts(s['skipped'])}",
        f"rejected: {_counts(s['rejected'])}",
    ]
    if s.get("repaired"):
        lines.append(f"repaired: {_counts(s['repaired'])}")
    for harness, h in (s.get("harnesses") or {}).items():
        lines.append(f"{harness}: {h['files_seen']} files ({h['files_changed']} changed), {h['lines_read']} lines read, "
                     f"{h['messages_added']} messages added  [{h['root']}]")
    if s.get("agents"):
        lines.append(f"agents updated: {', '.join(s['agents'])}")
    if s.get("rescanned"):
        lines.append(f"re-scrubbed {s['rescanned']} stored values after learning new secrets")
    return "\n".join(lines)


def _harness_counts(h: dict[str, dict[str, int]]) -> str:
    """`claude-code 3/120, codex 1/40`: conversations/messages per harness, `-` when none."""
    return ", ".join(f"{name} {v['conversations']}/{v['messages']}" for name, v in sorted(h.items())) or "-"


def _render_agents(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "No agents yet: run `reverie index`."
    head = f"{'id':<24} {'conv':>5} {'msgs':>7} {'on disk':>7}  {'first':<20} {'last':<20} cwd  [harness conv/msgs]"
    out = [head]
    for r in rows:
        first = (r["first"] or "-")[:19]
        last = (r["last"] or "-")[:19]
        flag = "  (off)" if r.get("disabled") else ""
        harnesses = f"  [{_harness_counts(r['harnesses'])}]" if r.get("harnesses") else ""
        out.append(f"{r['id']:<24} {r['conversations']:>5} {r['messages']:>7} {r['transcripts_on_disk']:>7}  "
                   f"{first:<20} {last:<20} {r['cwd'] or '-'}{flag}{harnesses}")
    return "\n".join(out)


def register(cli: click.Group) -> None:
    @cli.command("index")
    @click.option("--projects-dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
                  help="Claude Code projects folder (default: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects).")
    @click.option("--codex-dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
                  help="Codex CLI sessions folder, searched recursively (default: $CODEX_HOME/sessions, else ~/.codex/sessions).")
    @click.option("--gemini-dir", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
                  help="Gemini CLI folder, searched recursively (default: ~/.gemini/tmp).")
    @click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
    @pass_app
    def index_command(app, projects_dir: Path | None, codex_dir: Path | None, gemini_dir: Path | None,
                      as_json: bool) -> None:
        """Index new transcript lines of Claude Code, Codex CLI and Gemini CLI (incremental; redacted
        before storage). With no folder option, every harness's default folder that exists; with
        any, only the folders given."""
        from ..index import index_all

        emit(index_all(app.home, projects_dir, codex_dir=codex_dir, gemini_dir=gemini_dir), as_json, _render_index)

    @cli.command("agents")
    @click.option("--json", "as_json", is_flag=True, help="Print the agents as JSON.")
    @pass_app
    def agents_command(app, as_json: bool) -> None:
        """List agents: conversations, messages, first/last activity, transcripts still on disk."""
        from ..agents import list_agents

        emit(list_agents(app.home), as_json, _render_agents)

    @cli.group("show")
    def show_group() -> None:
        """Show something stored in the index."""

    @show_group.command("conversation")
    @click.argument("conversation_id")
    @click.option("--agent", default=None, help="Agent id (default: search every agent).")
    @click.option("--json", "as_json", is_flag=True, help="Print the conversation as JSON.")
    @pass_app
    def show_conversation(app, conversation_id: str, agent: str | None, as_json: bool) -> None:
        """Rebuild a conversation from the index, in order (works after the transcript is deleted)."""
        from ..conversation import rebuild, render
        from ._agent import agent_id

        emit(rebuild(app.home, conversation_id, agent_id(app.home, agent) if agent else None), as_json, render)

    @cli.command("doctor")
    @click.option("--projects-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
    @click.option("--codex-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                  help="Codex sessions folder to check (default $CODEX_HOME/sessions or ~/.codex/sessions).")
    @click.option("--gemini-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
                  help="Gemini CLI tmp folder to check (default $GEMINI_CLI_HOME/.gemini/tmp or ~/.gemini/tmp).")
    @click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
    @pass_app
    def doctor_command(app, projects_dir: Path | None, codex_dir: Path | None, gemini_dir: Path | None,
                       as_json: bool) -> None:
        """Home, agents, db sizes, schema versions, each harness's transcript folder, and which
        optional parts are available."""
        from ..doctor import diagnose, render

        emit(diagnose(app.home, projects_dir, codex_dir=codex_dir, gemini_dir=gemini_dir), as_json, render)

    @cli.group("settings")
    def settings_group() -> None:
        """Read or change settings (<home>/settings.json, mode 0600)."""

    @settings_group.command("get")
    @click.argument("key", required=False)
    @click.option("--json", "as_json", is_flag=True, help="Print the value as JSON.")
    @pass_app
    def settings_get(app, key: str | None, as_json: bool) -> None:
        """Print one setting (dotted KEY, e.g. index.tool_result_cap), or all of them."""
        from .. import settings as st

        data = st.load_settings(app.home)
        if key:
            known, _ = st.default_for(key)
            value = st.get(data, key, None)
            if not known and value is None:
                raise ReverieError(f"Unknown setting {key!r}. See all keys with `reverie settings get`.")
            value = st.masked(key, value)
        else:
            value = st.masked("", data)
        if as_json or not isinstance(value, str):
            emit_json(value)
        else:
            click.echo(value)

    @settings_group.command("set")
    @click.argument("key")
    @click.argument("value")
    @pass_app
    def settings_set(app, key: str, value: str) -> None:
        """Set one setting. VALUE is read as JSON when it parses (numbers, true/false, lists, objects),
        else as a string: `reverie settings set agents.disabled '["scratch"]'`. VALUE `-` reads it
        from stdin (a hidden prompt on a terminal), which keeps secrets out of shell history:
        `reverie settings set anthropic.api_key -`."""
        from .. import settings as st

        if not st.default_for(key)[0]:
            raise ReverieError(f"Unknown setting {key!r}. See all keys with `reverie settings get`.")
        if value == "-":
            if sys.stdin.isatty():
                value = click.prompt(f"{key}", hide_input=True, err=True)
            else:
                value = sys.stdin.read()
            value = value.strip()
            if not value:
                raise ReverieError(f"No value for {key} on stdin: pipe it in, or type it at the prompt.")
        path, parsed = st.set_checked(app.home, key, value)
        shown = "(hidden)" if key in st.SECRET_KEYS else json.dumps(parsed, ensure_ascii=False)
        click.echo(f"{key} = {shown}   ({path})")
