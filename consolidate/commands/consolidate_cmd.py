"""`reverie consolidate --now [--agent ID | --all] [--writer auto|offline|anthropic|claude-cli] [--json]`.

Without `--agent`, all enabled agents are consolidated (as with `--all`). A progress bar is shown on
a terminal (stderr); `--json` prints the per-agent summary (a list when several agents ran).

With several agents, one that cannot be consolidated (unreadable agent.db, unexpected fault) is
reported in its summary (`failed: true`, with the fix in its error) and the others still run; the
exit status is then 1 (after every summary is printed), so cron and scripts notice. A busy agent is
reported but is not a failure (exit 0). No API key / a refused key or login stop at once (exit 1);
with `--json` every such error is printed as `{"error": {"kind", "message"}}` (the message names
the fix). The summary's `writer` and `writer_reason` say which writer ran and why (`auto`:
consolidate.writers.select).

Each agent that ran is recorded in the scheduler state (`schedule_cmd.record_manual_runs`): its
backlog becomes what this run left, so `reverie schedule status` and the night's backfill see the
work done; the scheduler's own last run is left as it was. The command's output does not change.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from typing import Any

import click

from ..errors import ReverieError
from . import emit_json, pass_app
from .schedule_cmd import record_manual_runs


def _render(s: dict[str, Any]) -> str:
    rejected = ", ".join(f"{k} {v}" for k, v in sorted(s.get("cards_rejected", {}).items())) or "none"
    lines = [
        f"{s['agent']}: {s['cards_written']} cards written from {s['conversations']} conversations "
        f"({s['passages']} passages, {s['candidates']} candidates, {s['calls']} model calls, ${s['cost_usd']:.4f}); "
        f"rejected: {rejected}" + ("; backlog left for the next run" if s.get("backlog") else ""),
    ]
    for err in s.get("errors", [])[:10]:
        where = f" [{err['conversation'][:8]}]" if err.get("conversation") else ""
        lines.append(f"  error{where}: {err.get('kind')}: {err.get('message')}")
    return "\n".join(lines)


def _json_error(home, exc: ReverieError) -> None:
    """`--json`: the error as JSON on stdout, {"error": {"kind", "message"}} (the message names the
    fix, scrubbed like every printed message), the same message on stderr as without --json, then
    exit 1."""
    from ..scrubber import printable_scrubber

    message = printable_scrubber(home)(str(exc))
    emit_json({"error": {"kind": type(exc).__name__, "message": message}})
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


def _bar_callback(label: str):
    """A click progress bar on a terminal, else None."""
    if not sys.stderr.isatty():
        return None, None
    state: dict[str, Any] = {"bar": None, "done": 0}

    def cb(stage: str, done: int, total: int) -> None:
        bar = state["bar"]
        if bar is None or bar.length != total:
            if bar is not None:
                bar.render_finish()
            bar = click.progressbar(length=max(total, 1), label=label, file=sys.stderr)
            state["bar"], state["done"] = bar, 0
        bar.update(done - state["done"])
        state["done"] = done

    def finish() -> None:
        if state["bar"] is not None:
            state["bar"].render_finish()

    return cb, finish


def register(cli: click.Group) -> None:
    @cli.command("consolidate")
    @click.option("--now", "now_flag", is_flag=True, help="Run now, ignoring the schedule window and pause.")
    @click.option("--agent", "agent_id", default=None, help="Consolidate this agent only.")
    @click.option("--all", "all_agents", is_flag=True, help="Consolidate every enabled agent (the default).")
    @click.option("--writer", type=click.Choice(["auto", "offline", "anthropic", "claude-cli"]), default=None,
                  help="Card writer (default: settings `writer`, `auto`: claude-cli when `claude` is on PATH "
                       "and logged in, else anthropic when an API key is set, else offline).")
    @click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
    @pass_app
    def consolidate(app, now_flag: bool, agent_id: str | None, all_agents: bool, writer: str | None,
                    as_json: bool) -> None:
        """Turn new conversations into memory cards (newest first; resumes where it stopped)."""
        from ..pipeline import consolidate_agent, consolidate_all

        if not now_flag:
            raise ReverieError("Consolidation runs nightly; to run it now, pass --now "
                               "(`reverie consolidate --now [--agent ID]`).")
        if agent_id and all_agents:
            raise ReverieError("Choose one: --agent ID or --all.")
        cb, finish = (None, None) if as_json else _bar_callback("consolidating")
        started = datetime.now(timezone.utc)
        try:
            if agent_id:
                result: Any = consolidate_agent(app.home, agent_id, writer=writer, trigger="now", progress=cb)
                summaries = [result]
            else:
                summaries = consolidate_all(app.home, writer=writer, trigger="now", progress=cb)
                result = summaries
        except ReverieError as exc:
            if not as_json:
                raise
            _json_error(app.home, exc)
        finally:
            if finish:
                finish()
        # The scheduler's backlog follows the run (else `schedule status` shows work already done).
        record_manual_runs(app.home, summaries, started=started, finished=datetime.now(timezone.utc))
        failed = [s["agent"] for s in summaries if s.get("failed")]
        if as_json:
            emit_json(result)
            if failed:
                sys.exit(1)
            return
        if not summaries:
            click.echo("No agents yet: run `reverie index`.")
            return
        for s in summaries:
            click.echo(_render(s))
        if failed:
            raise ReverieError(f"{len(failed)} of {len(summaries)} agents could not be consolidated "
                               f"({', '.join(failed)}): see their errors above.")
