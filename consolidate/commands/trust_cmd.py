"""Trust commands: feedback, pin/unpin, Markdown export/import, maintenance.

Each command resolves the agent (`--agent`, else the agent of the current directory), opens its db,
calls one library function in `graph.trust` / `graph.markdown` / `graph.maintenance`, and prints a
line or, with --json, the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..errors import ReverieError
from . import AppContext, emit_json, pass_app
from ._agent import open_agent

_AGENT_HELP = "Agent id (default: the agent of the current directory; see `reverie agents`)."


def _half_life(app: AppContext) -> float:
    from .. import settings as st  # noqa: PLC0415

    value = st.get(st.load_settings(app.home), "feedback.half_life_days")
    st.check_value("feedback.half_life_days", value)   # InvalidSetting names the fix
    return float(value)


def _redactor(app: AppContext):
    from reverie.redact.engine import Redactor  # noqa: PLC0415

    from ..paths import secrets_dir  # noqa: PLC0415

    r = Redactor(secrets_dir(app.home))
    return lambda text: r.redact(text).text


def _card(db, card_id: int, agent: str) -> dict[str, Any]:
    from reverie.graph.trust import UnknownCard, card_row  # noqa: PLC0415

    try:
        return card_row(db, card_id)
    except UnknownCard:
        raise ReverieError(f"No card {card_id} in agent {agent!r}: find ids with `reverie search QUERY --agent {agent}`.") \
            from None


def _embed_new_cards(app: AppContext, db) -> int:
    """Vectors for the cards a person added, from the configured embedding model, so they are
    recalled like learned ones. Never replaces vectors of another model with a fallback's: a
    lexical fallback (model unavailable) or a db whose vectors are another model's is left as it
    is (the next consolidation re-embeds). Returns how many vectors were computed."""
    from reverie.graph.embed import load_embedder  # noqa: PLC0415
    from reverie.graph.store import connection, ensure_vectors, get_meta  # noqa: PLC0415

    from .. import settings as settings_mod  # noqa: PLC0415

    embedder = load_embedder(settings_mod.get(settings_mod.load_settings(app.home), "embedding_model"))
    stored = get_meta(connection(db), "embedder")
    if embedder.kind == "lexical" or stored not in (None, embedder.id):
        return 0
    return ensure_vectors(db, embedder)


def _export_claude_memory(app: AppContext, agent: str | None, as_json: bool) -> None:
    """`reverie export --claude-memory`: consolidate.auto_memory.export_claude_memory."""
    from ..auto_memory import ExportRefused, export_claude_memory  # noqa: PLC0415
    from ..scrubber import printable_scrubber  # noqa: PLC0415

    agent, db = open_agent(app.home, agent)
    try:
        result = export_claude_memory(app.home, agent, db, scrub=printable_scrubber(app.home))
    except ExportRefused as exc:
        raise ReverieError(str(exc)) from None
    except OSError as exc:
        raise ReverieError(f"Cannot write the Claude Code memory folder: {exc.strerror or exc}; check its "
                           "permissions (or settings autoMemoryDirectory).") from None
    result["agent"] = agent
    if as_json:
        emit_json(result)
    elif result["changed"]:
        click.echo(f"{agent}: {result['cards']} memories -> {result['file']} (wrote {', '.join(result['changed'])})")
    else:
        click.echo(f"{agent}: {result['file']} is up to date (nothing changed)")


def register(cli: click.Group) -> None:
    @cli.command("feedback")
    @click.argument("card_id", type=int)
    @click.argument("kind", type=click.Choice(["helpful", "harmful"]))
    @click.option("--note", default=None, help="Why (stored redacted).")
    @click.option("--agent", default=None, help=_AGENT_HELP)
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @pass_app
    def feedback_cmd(app: AppContext, card_id: int, kind: str, note: str | None, agent: str | None,
                     as_json: bool) -> None:
        """Record that a memory was helpful or harmful; re-scores its maturity."""
        from reverie.graph import trust  # noqa: PLC0415

        agent, db = open_agent(app.home, agent)
        card = _card(db, card_id, agent)
        if card["status"] not in ("active", "faded"):
            hint = f" (replaced by card {card['superseded_by']})" if card.get("superseded_by") else ""
            raise ReverieError(f"Card {card_id} is {card['status']}{hint}: give feedback on the memory that replaced "
                               f"it; see archive.md of `reverie export --markdown DIR --agent {agent}`.")
        clean_note = _redactor(app)(note) if note else None
        half_life = _half_life(app)
        with trust.transaction(db):
            fid = trust.record_feedback(db, card_id, kind, source="user", note=clean_note)
            result = trust.evaluate_card(db, card_id, half_life_days=half_life, source="feedback")
        result.update({"agent": agent, "feedback_id": fid, "kind": kind})
        if as_json:
            emit_json(result)
            return
        line = (f"card {card_id}: {kind} recorded; {result['helpful_count']} helpful / {result['harmful_count']} "
                f"harmful, score {result['score']:.2f}, maturity {result['maturity']}")
        if result["maturity"] != result["maturity_before"]:
            line += f" (was {result['maturity_before']})"
        click.echo(line)
        if result["inverted_to"]:
            click.echo(f"card {card_id} was inverted into anti-pattern card {result['inverted_to']} (AVOID: ...)")

    def _pin_command(name: str, pinned: bool, help_text: str) -> None:
        @cli.command(name, help=help_text)
        @click.argument("card_id", type=int)
        @click.option("--agent", default=None, help=_AGENT_HELP)
        @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
        @pass_app
        def _pin(app: AppContext, card_id: int, agent: str | None, as_json: bool) -> None:
            from reverie.graph import trust  # noqa: PLC0415

            agent, db = open_agent(app.home, agent)
            _card(db, card_id, agent)
            with trust.transaction(db):
                result = trust.set_pinned(db, card_id, pinned)
            result["agent"] = agent
            if as_json:
                emit_json(result)
            else:
                state = "pinned" if pinned else "unpinned"
                click.echo(f"card {card_id} {state}" + ("" if result["changed"] else " (already)"))

    _pin_command("pin", True, "Pin a memory: its maturity and confidence never move, maintenance keeps it.")
    _pin_command("unpin", False, "Unpin a memory.")

    @cli.command("export")
    @click.option("--markdown", "directory", default=None, type=click.Path(file_okay=False),
                  help="Directory for semantic.md, episodic.md and archive.md.")
    @click.option("--claude-memory", "claude_memory", is_flag=True,
                  help="Write reverie.md and one index line into the project's Claude Code auto memory folder.")
    @click.option("--agent", default=None, help=_AGENT_HELP)
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @pass_app
    def export_cmd(app: AppContext, directory: str | None, claude_memory: bool, agent: str | None,
                   as_json: bool) -> None:
        """Write the agent's memory as Markdown files a person can read, review and edit
        (--markdown DIR), or as one topic file of Claude Code's auto memory (--claude-memory)."""
        from reverie.graph.markdown import export_markdown  # noqa: PLC0415

        if bool(directory) == claude_memory:
            raise ReverieError("Pass exactly one of --markdown DIR or --claude-memory.")
        if claude_memory:
            _export_claude_memory(app, agent, as_json)
            return
        agent, db = open_agent(app.home, agent)
        try:
            result = export_markdown(db, Path(directory), agent=agent)
        except OSError as exc:
            raise ReverieError(f"Cannot write {directory}: {exc.strerror or exc}; choose a directory you can "
                               f"create and write (`reverie export --markdown DIR --agent {agent}`).") from None
        result["agent"] = agent
        if as_json:
            emit_json(result)
        else:
            click.echo(f"{agent}: {result['cards']} memories, {result['episodes']} episodes, "
                       f"{result['archived_cards'] + result['archived_episodes']} archived -> {result['directory']}")

    @cli.command("import")
    @click.option("--markdown", "directory", required=True, type=click.Path(file_okay=False, exists=True),
                  help="Directory written by `reverie export --markdown` and edited since.")
    @click.option("--agent", default=None, help=_AGENT_HELP)
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @pass_app
    def import_cmd(app: AppContext, directory: str, agent: str | None, as_json: bool) -> None:
        """Apply a person's edits of the Markdown files back to the agent's memory."""
        from reverie.graph.markdown import MarkdownError, import_markdown  # noqa: PLC0415

        agent, db = open_agent(app.home, agent)
        try:
            result = import_markdown(db, Path(directory), agent=agent, redact=_redactor(app))
        except MarkdownError as exc:
            raise ReverieError(str(exc)) from None
        result["agent"] = agent
        result["vectors"] = _embed_new_cards(app, db) if result["changed"] else 0
        if as_json:
            emit_json(result)
            return
        if not result["changed"]:
            click.echo(f"{agent}: no edits found, nothing changed")
        else:
            parts = [f"{result[k]} {k.replace('_', ' ')}" for k in (
                "edited", "retired", "added", "restored", "recategorized", "confidence_changed",
                "episodes_edited", "episodes_removed", "episodes_added") if result[k]]
            click.echo(f"{agent}: " + ", ".join(parts) + "; files re-exported")
        for key in ("duplicates", "uncategorized", "redacted"):
            if result[key]:
                click.echo(f"  {result[key]} {key} (see docs/trust.md)")
        for name, lines in result["unreadable"].items():
            click.echo(f"  {name}: unreadable lines {', '.join(map(str, lines))} (left out)")

    @cli.command("maintenance")
    @click.option("--apply", "do_apply", is_flag=True, help="Apply the proposed actions (default: only list).")
    @click.option("--agent", default=None, help=_AGENT_HELP)
    @click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
    @pass_app
    def maintenance_cmd(app: AppContext, do_apply: bool, agent: str | None, as_json: bool) -> None:
        """List memories below the trust thresholds with a proposed action; --apply applies them."""
        from reverie.graph import maintenance  # noqa: PLC0415

        agent, db = open_agent(app.home, agent)
        entries = maintenance.plan(db, half_life_days=_half_life(app))
        applied = maintenance.apply(db, entries) if do_apply and entries else None
        if as_json:
            emit_json({"agent": agent, "entries": entries, "applied": applied})
            return
        if not entries:
            click.echo(f"{agent}: nothing below the thresholds")
            return
        for e in entries:
            tag = ("c:" if e["target"] == "card" else "e:") + str(e["id"])
            click.echo(f"{e['action']:<8} {tag:<8} {e['text']}\n         {e['reason']}")
        if applied is None:
            click.echo(f"{len(entries)} proposals; run `reverie maintenance --apply --agent {agent}` to apply them")
        else:
            click.echo(f"applied: {applied['removed']} removed, {applied['archived']} archived, "
                       f"{applied['reinforced']} reinforced, {applied['skipped']} skipped")
