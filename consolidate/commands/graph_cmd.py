"""`reverie graph ENTITY` and `reverie forget CARD_ID|ENTITY`: thin adapters over graph.view / graph.forget."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import ReverieError
from . import AppContext, emit_json, pass_app
from ._agent import open_agent


def _entity(db, name: str, agent: str) -> dict:
    from reverie.graph.entities import find_entity, suggestions  # noqa: PLC0415

    ent = find_entity(db, name)
    if ent is None:
        close = suggestions(db, name)
        hint = f" Did you mean: {', '.join(close)}?" if close else " `reverie search QUERY` finds memories by text."
        raise ReverieError(f"No entity named {name!r} in agent {agent!r}.{hint}")
    return ent


def register(cli: click.Group) -> None:
    @cli.command("graph")
    @click.argument("entity")
    @click.option("--agent", "agent", default=None, help="Agent id (default: the agent of the current directory).")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @click.option("--dot", "as_dot", is_flag=True, help="Print the neighbourhood as Graphviz dot.")
    @click.option("--html", "html_file", type=click.Path(dir_okay=False, writable=True), default=None,
                  help="Write a self-contained page drawing the neighbourhood to FILE.")
    @click.option("--depth", type=click.IntRange(1, 4), default=1, show_default=True,
                  help="Neighbourhood radius for --dot and --html.")
    @pass_app
    def graph_command(app: AppContext, entity: str, agent: str | None, as_json: bool, as_dot: bool,
                      html_file: str | None, depth: int) -> None:
        """What the agent knows about ENTITY: type, aliases, relations (current first), the cards behind them."""
        from reverie.graph import view  # noqa: PLC0415  (networkx)

        agent_id, db = open_agent(app.home, agent)
        try:
            ent = _entity(db, entity, agent_id)
            report = view.entity_report(db, ent["id"])
            if as_dot or html_file:
                sub = view.neighbourhood(view.build_graph(db), ent["id"], radius=depth)
            if html_file:
                try:
                    Path(html_file).write_text(view.to_html(report, sub, ent["id"]), encoding="utf-8")
                except OSError as exc:
                    raise ReverieError(f"Cannot write {html_file}: {exc.strerror or exc}; give --html a path in "
                                       "an existing directory you can write.") from None
            if as_json:
                emit_json({"entity": report["entity"], "relations": report["relations"],
                           "cards": report["cards"], "dependents": report["dependents"],
                           **({"html": str(html_file)} if html_file else {})})
            elif as_dot:
                click.echo(view.to_dot(sub, ent["id"]), nl=False)
            else:
                click.echo(view.format_text(report))
                if html_file:
                    click.echo(f"wrote {html_file}")
        finally:
            db.close()

    @cli.command("forget")
    @click.argument("target")
    @click.option("--agent", "agent", default=None, help="Agent id (default: the agent of the current directory).")
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @pass_app
    def forget_command(app: AppContext, target: str, agent: str | None, as_json: bool) -> None:
        """Delete a card (by id) or an entity and everything about it; it is not learned again."""
        from datetime import datetime, timezone  # noqa: PLC0415

        from reverie.graph import forget  # noqa: PLC0415
        from reverie.graph.model import utc_iso  # noqa: PLC0415
        from reverie.graph.trust import UnknownCard, card_row  # noqa: PLC0415

        agent_id, db = open_agent(app.home, agent)
        now = utc_iso(datetime.now(timezone.utc))
        try:
            card_id = None
            if target.lstrip("#").isdigit():
                try:
                    card_id = card_row(db, int(target.lstrip("#")))["id"]
                except UnknownCard:
                    pass
            if card_id is not None:
                counts = forget.forget_cards(db, [card_id], now=now)
                what = {"kind": "card", "id": card_id}
            else:
                ent = _entity(db, target, agent_id)
                counts = forget.forget_entity(db, ent["id"], now=now)
                what = {"kind": "entity", "name": ent["name"], "type": ent["type"]}
        finally:
            db.close()
        if as_json:
            emit_json({"agent": agent_id, "forgotten": what, **counts})
            return
        label = f"card #{what['id']}" if what["kind"] == "card" else f"entity {what['name']} ({what['type']})"
        click.echo(f"Forgot {label}: {counts['cards']} card(s), {counts['evidence']} evidence row(s), "
                   f"{counts['statements']} relation statement(s), {counts['entities']} entit(y/ies). "
                   "It will not be learned again from the same transcripts.")
