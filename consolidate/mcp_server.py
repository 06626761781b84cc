"""`reverie mcp`: an agent's memory as a stdio MCP server (the official `mcp` SDK, 2.x: MCPServer).

Tools (each calls the library functions its CLI command calls):

* `search(query, agent?, limit?)`: cards then raw history (`consolidate.search.search`, as `reverie search`);
  cards of Claude Code's auto memory, and reverie's cards that state the same point, carry a `source`
  / `covered_by` label (graph.auto_memory).
* `recall(prompt, agent?, session?)`: what the UserPromptSubmit hook would inject
  (`consolidate.hook.recall_for_agent`, as `reverie recall`); with a session it is recorded as shown.
  Adds `claude_auto_memory`: the auto-memory cards relevant to the prompt, which the hook leaves to
  Claude Code (it loads MEMORY.md itself).
* `graph(entity, agent?)`: what the agent knows about an entity (`graph.view.entity_report`, as `reverie graph`).
* `feedback(card_id, kind, note?, agent?)`: helpful / harmful (`graph.trust`, as `reverie feedback`).
* `forget(target, agent?)`: a card id or an entity (`graph.forget`, as `reverie forget`).

Invariants:
- Every tool's input and output schema is typed (annotated parameters, pydantic output models).
- Every string a tool returns, and every error text, passes `consolidate.scrubber.printable_scrubber`
  (tool results field by field; errors, including the SDK's argument-validation messages, in
  `_ScrubErrors`), so nothing unchecked reaches the client.
- A bad input (unknown agent, missing or mistyped argument, unknown card or entity) is answered
  with a tool error result (`isError: true`) naming the fix; nothing a client sends ends the server.
- The agent defaults to the client's roots (`roots/list`, when the client declares roots: the
  first root whose directory belongs to an agent), else the server's working directory
  (`consolidate.agents.agent_for_cwd`).
- Tool bodies run in one worker thread of the server, one call at a time (`_Tools.call`).
- Startup imports the SDK and pydantic only; our heavier modules (sqlite_utils, networkx, the
  redactor) load at the first call that needs them. Read-only tools open the agent db read-only.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path
from typing import Annotated, Any, Callable, Literal
from urllib.parse import unquote, urlparse

from mcp.server.mcpserver import Context, ListRoots, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ListRootsResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

log = logging.getLogger(__name__)

SERVER_NAME = "reverie"

AgentArg = Annotated[str | None, Field(
    default=None, max_length=200,
    description="Agent id (`reverie agents` lists them); default: the agent of the client's root directory, "
                "else of the server's working directory.")]


# ---------------------------------------------------------------------------------------------
# Output models (the tools' output schemas). Each names and types the fields the tool always
# returns; fields the library functions add beyond them pass through (`extra="allow"`), so a tool's
# output is always its CLI command's whole --json output.

class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")

class SearchCard(_Out):
    id: int
    statement: str
    category: str
    status: str
    superseded_by: int | None = None
    sessions: int
    date: str
    last_seen: str
    score: float
    source: Literal["reverie", "claude-auto-memory"] = "reverie"
    covered_by: int | None = Field(None, description="The auto-memory card that states the same point.")


class SearchHit(_Out):
    conversation: str
    message_id: int
    at: str
    role: str
    type: str
    tool: str | None = None
    snippet: str
    score: float


class SearchResult(_Out):
    agent: str
    query: str
    cards: list[SearchCard]
    history: list[SearchHit]


class RecallStanding(_Out):
    id: int
    statement: str
    category: str
    sessions: int
    confidence: float
    maturity: str


class RecallNote(RecallStanding):
    date: str
    score: float


class RecallRelation(_Out):
    subject: str
    verb: str
    object: str
    state: str
    weight: int
    last_said: str | None = None


class RecallEntity(_Out):
    name: str
    type: str
    relations: list[RecallRelation]


class RecallWarning(_Out):
    id: int
    statement: str
    kind: str


class RecallEpisode(_Out):
    id: int
    date: str
    summary: str


class MemoryNote(_Out):
    id: int
    statement: str
    category: str
    entry: str = Field(description="The file of Claude Code's auto memory it comes from.")


class RecallResult(_Out):
    agent: str
    text: str = Field(description="Exactly what the UserPromptSubmit hook would inject.")
    standing: list[RecallStanding]
    entities: list[RecallEntity]
    notes: list[RecallNote]
    warnings: list[RecallWarning]
    recent: list[RecallEpisode]
    claude_auto_memory: list[MemoryNote] = Field(
        description="Relevant entries of Claude Code's own auto memory (it loads them itself; never injected).")


class GraphRelation(RecallRelation):
    since: str | None = None
    cards: list[int]


class GraphCard(_Out):
    statement: str
    category: str
    sessions: int
    status: str
    last_seen: str | None = None


class GraphEntity(_Out):
    name: str
    type: str
    aliases: list[str]


class GraphResult(_Out):
    agent: str
    entity: GraphEntity
    relations: list[GraphRelation]
    cards: dict[str, GraphCard]
    dependents: list[str]


class FeedbackResult(_Out):
    agent: str
    id: int
    kind: Literal["helpful", "harmful"]
    feedback_id: int | None
    maturity_before: str
    maturity: str
    score: float
    helpful: float
    harmful: float
    helpful_count: int
    harmful_count: int
    events: int
    inverted_to: int | None = None


class ForgottenCard(_Out):
    kind: Literal["card"]
    id: int


class ForgottenEntity(_Out):
    kind: Literal["entity"]
    name: str
    type: str


class ForgetResult(_Out):
    agent: str
    forgotten: Annotated[ForgottenCard | ForgottenEntity, Field(discriminator="kind")]
    cards: int
    evidence: int
    statements: int
    entities: int
    reactivated: int = Field(0, description="Cards made active again because what replaced them was forgotten.")
    hashes: int = Field(0, description="Hashes remembered so the same transcripts do not teach it again.")
    episodes: int = Field(0, description="Session episodes that lost the forgotten text.")


# ---------------------------------------------------------------------------------------------
# Shared plumbing

def scrub_tree(value: Any, scrub: Callable[[str], str]) -> Any:
    """`value` with every string in it (dict keys excepted) passed through `scrub`."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: scrub_tree(v, scrub) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_tree(v, scrub) for v in value]
    return value


def _client_roots(ctx: Context, agent: str | None = None) -> ListRoots | None:
    """Ask the client for its roots only when no agent was given and it declares roots."""
    if agent:
        return None
    caps = ctx.client_capabilities
    if caps is None or caps.roots is None:
        return None
    return ListRoots()


RootsArg = Annotated[ListRootsResult | None, Resolve(_client_roots)]


def _root_dirs(roots: ListRootsResult | None) -> list[str]:
    out = []
    for root in (roots.roots if roots is not None else []):
        parsed = urlparse(str(root.uri))
        if parsed.scheme == "file" and parsed.path:
            out.append(unquote(parsed.path))
    return out


class _Tools:
    """The tool bodies for one home (plain methods, run in one worker thread by `call`)."""

    def __init__(self, home: Path) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.home = Path(home)
        self._scrub: Callable[[str], str] | None = None
        # Every tool body and every scrub runs in this ONE worker thread, one call at a time: the
        # remembered-secret check holds an SQLite connection that serves only the thread that
        # opened it, and the detectors (~1 s to load) are loaded once (SQLite serializes the work
        # anyway; the event loop stays free for the protocol).
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="reverie-mcp")

    async def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` in the worker thread (see __init__)."""
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(self._worker, fn, *args)

    # -- helpers ------------------------------------------------------------------------------
    def scrub(self, text: str) -> str:
        """The printable scrubber (call it in the worker thread only)."""
        if self._scrub is None:
            from .scrubber import printable_scrubber

            self._scrub = printable_scrubber(self.home)
        return self._scrub(text)

    def out(self, data: Any) -> Any:
        return scrub_tree(data, self.scrub)

    def agent(self, agent: str | None, roots: ListRootsResult | None) -> tuple[str, Path]:
        """(agent id, its db path); raises ToolError naming the fix."""
        from .agents import agent_for_cwd, valid_agent_id
        from .paths import agent_db_path

        if not agent:
            dirs = _root_dirs(roots) + [os.getcwd()]
            agent = next((a for a in (agent_for_cwd(self.home, d) for d in dirs) if a), None)
            if not agent:
                raise ToolError("No agent for the client's roots nor the server's directory: pass `agent` "
                                "(`reverie agents` lists them).")
        if not valid_agent_id(agent):
            raise ToolError(f"{agent!r} is not an agent id (lowercase letters, digits, '.', '_', '-'): "
                            "`reverie agents` lists them.")
        path = agent_db_path(self.home, agent)
        if not path.is_file():
            raise ToolError(f"Unknown agent {agent!r} (no memory yet): check the id with `reverie agents`; a new "
                            f"agent needs `reverie index`, then `reverie consolidate --now --agent {agent}`.")
        return agent, path

    # -- tools --------------------------------------------------------------------------------
    def search(self, query: str, agent: str | None, limit: int, roots: ListRootsResult | None) -> SearchResult:
        from reverie.graph.auto_memory import memory_labels
        from reverie.graph.db import connect_readonly

        from .hook import secret_scrubber
        from .search import search

        if not query.strip():
            raise ToolError("Nothing to search for: give `query` some words.")
        agent, db = self.agent(agent, roots)
        result = search(db, query, limit=limit, scrub=secret_scrubber(self.home) or self.scrub)
        conn = connect_readonly(db, 2.0)
        try:
            labels = memory_labels(conn, [c["id"] for c in result["cards"]])
        finally:
            conn.close()
        for c in result["cards"]:
            label = labels.get(c["id"], {})
            c["source"] = label.get("source", "reverie")
            c["covered_by"] = label.get("covered_by")
        return SearchResult.model_validate(self.out({"agent": agent, **result}))

    def recall(self, prompt: str, agent: str | None, session: str | None,
               roots: ListRootsResult | None) -> RecallResult:
        from reverie.graph.auto_memory import memory_labels
        from reverie.graph.recall import search_cards

        from .hook import ScrubberUnavailable, recall_for_agent

        if not prompt.strip():
            raise ToolError("Nothing to recall for: give `prompt` some words.")
        agent, db = self.agent(agent, roots)
        try:
            injection = recall_for_agent(self.home, agent, "prompt", prompt, session=session)
        except ScrubberUnavailable:
            raise ToolError("The remembered-secret check (redact.memory) is unavailable, so nothing is shown: "
                            "reinstall reverie and run `reverie doctor`.") from None
        if session:
            injection.record()
        res = injection.result
        from reverie.graph.db import connect_readonly

        conn = connect_readonly(db, 2.0)
        try:
            near = search_cards(conn, prompt, 20)
            labels = memory_labels(conn, [c["id"] for c in near])
        finally:
            conn.close()
        memories = [{"id": c["id"], "statement": c["statement"], "category": c["category"],
                     "entry": labels[c["id"]]["entry"]}
                    for c in near if c["status"] == "active" and labels.get(c["id"], {}).get("source")
                    == "claude-auto-memory"][:8]
        return RecallResult.model_validate(self.out({**res, "agent": agent, "claude_auto_memory": memories}))

    def graph(self, entity: str, agent: str | None, roots: ListRootsResult | None) -> GraphResult:
        from reverie.graph import view
        from reverie.graph.db import connect_readonly
        from reverie.graph.entities import find_entity, suggestions

        agent, db = self.agent(agent, roots)
        conn = connect_readonly(db, 2.0)
        try:
            ent = find_entity(conn, entity)
            if ent is None:
                close = suggestions(conn, entity)
                hint = f" Did you mean: {', '.join(close)}?" if close else " The `search` tool finds memories by text."
                raise ToolError(f"No entity named {entity!r} in agent {agent!r}.{hint}")
            report = view.entity_report(conn, ent["id"])
        finally:
            conn.close()
        return GraphResult.model_validate(self.out({"agent": agent, **report}))

    def feedback(self, card_id: int, kind: str, note: str | None, agent: str | None,
                 roots: ListRootsResult | None) -> FeedbackResult:
        from reverie.graph import trust

        from . import settings as st
        from .index import load_redactor
        from .store import open_db

        agent, path = self.agent(agent, roots)
        db = open_db(path)
        try:
            card = self._card(db, card_id, agent)
            if card["status"] not in ("active", "faded"):
                hint = f" (replaced by card {card['superseded_by']})" if card.get("superseded_by") else ""
                raise ToolError(f"Card {card_id} is {card['status']}{hint}: give feedback on the memory that "
                                "replaced it.")
            clean_note = load_redactor(self.home).redact(note).text if note else None
            half_life = st.half_life_days(st.load_settings(self.home))
            with trust.transaction(db):
                fid = trust.record_feedback(db, card_id, kind, source="user", note=clean_note)
                result = trust.evaluate_card(db, card_id, half_life_days=half_life, source="feedback")
        finally:
            db.close()
        return FeedbackResult.model_validate(self.out({**result, "agent": agent, "feedback_id": fid, "kind": kind}))

    def forget(self, target: str, agent: str | None, roots: ListRootsResult | None) -> ForgetResult:
        from datetime import datetime, timezone

        from reverie.graph import forget
        from reverie.graph.entities import find_entity
        from reverie.graph.model import utc_iso

        from .store import open_db

        agent, path = self.agent(agent, roots)
        now = utc_iso(datetime.now(timezone.utc))
        db = open_db(path)
        try:
            text = target.strip()
            if text.lstrip("#").isdigit():
                card_id = self._card(db, int(text.lstrip("#")), agent)["id"]
                counts = forget.forget_cards(db, [card_id], now=now)
                what: dict[str, Any] = {"kind": "card", "id": card_id}
            else:
                ent = find_entity(db, text) if text else None
                if ent is None:
                    raise ToolError(f"No entity named {target!r} in agent {agent!r}: pass a card id or an entity "
                                    "name (the `search` tool finds both).")
                counts = forget.forget_entity(db, ent["id"], now=now)
                what = {"kind": "entity", "name": ent["name"], "type": ent["type"]}
        finally:
            db.close()
        return ForgetResult.model_validate(self.out({
            "agent": agent, "forgotten": what,
            **counts}))

    @staticmethod
    def _card(db, card_id: int, agent: str) -> dict[str, Any]:
        from reverie.graph.trust import UnknownCard, card_row

        try:
            return card_row(db, card_id)
        except UnknownCard:
            raise ToolError(f"No card {card_id} in agent {agent!r}: find ids with the `search` tool.") from None


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A tool body whose database faults and unexpected errors become tool errors naming the fix
    (never a traceback text; the error text is scrubbed by `_ScrubErrors`)."""
    import functools

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except sqlite3.DatabaseError as exc:
            from .errors import is_busy

            if is_busy(exc):
                raise ToolError("The agent's database is busy (held by another reverie process): try again when "
                                "it finishes.") from None
            raise ToolError(f"The agent's database cannot be used ({type(exc).__name__}): run `reverie doctor`.") \
                from None
        except Exception as exc:  # noqa: BLE001 - one call's fault never ends the server
            from .errors import ReverieError

            if isinstance(exc, ReverieError):
                raise ToolError(str(exc)) from None
            log.warning("tool %s failed: %s", fn.__name__, type(exc).__name__)
            raise ToolError(f"{fn.__name__} failed ({type(exc).__name__}): run `reverie doctor`; the server "
                            "keeps running.") from None
    return run


class _ScrubErrors:
    """Server middleware: the text of every tool error (ours and the SDK's argument-validation
    messages, which quote what the client sent) passes the printable scrubber."""

    def __init__(self, tools: _Tools) -> None:
        self.tools = tools

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if getattr(ctx, "method", None) != "tools/call":
            return result
        if isinstance(result, CallToolResult) and result.is_error:
            def clean() -> CallToolResult:
                content = [TextContent(type="text", text=self.tools.scrub(c.text)) if isinstance(c, TextContent)
                           else c for c in result.content]
                return result.model_copy(update={"content": content})

            return await self.tools.call(clean)
        if isinstance(result, dict) and result.get("isError"):   # the runner's serialized form
            def clean_dict() -> dict:
                content = [{**c, "text": self.tools.scrub(c["text"])}
                           if isinstance(c, dict) and isinstance(c.get("text"), str) else c
                           for c in result.get("content") or []]
                return {**result, "content": content}

            return await self.tools.call(clean_dict)
        return result


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("reverie")
    except PackageNotFoundError:
        return ""


def build_server(home: Path) -> MCPServer:
    """The MCP server of one reverie home (see the module doc)."""
    tools = _Tools(home)
    server = MCPServer(SERVER_NAME, version=_version(), instructions=(
        "Long-term memory of this coding agent (reverie): search it, recall what is known before acting, "
        "look up an entity's relations, report a memory helpful or harmful, forget one."),
        log_level="WARNING", middleware=[_ScrubErrors(tools)])
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)

    @server.tool(name="search", annotations=read_only, description=(
        "Search the agent's memory: cards first (with source: reverie or claude-auto-memory), then raw "
        "history (redacted) with dates and conversations."))
    async def search(query: Annotated[str, Field(min_length=1, max_length=4000, description="Words to search for.")],
               agent: AgentArg = None,
               limit: Annotated[int, Field(ge=1, le=200, description="Results per section.")] = 10,
               roots: RootsArg = None) -> SearchResult:
        return await tools.call(_guarded(tools.search), query, agent, limit, roots)

    @server.tool(name="recall", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                                            idempotent_hint=False, open_world_hint=False),
                 description=("What the agent's memory holds for a prompt: standing decisions, the entities it "
                              "names and their relations, the nearest notes (exactly what the prompt hook "
                              "injects). With `session`, what that session already got is skipped and this is "
                              "recorded as shown."))
    async def recall(prompt: Annotated[str, Field(min_length=1, max_length=20000, description="The prompt to recall for.")],
               agent: AgentArg = None,
               session: Annotated[str | None, Field(None, max_length=200,
                                                    description="Act as this Claude Code session id.")] = None,
               roots: RootsArg = None) -> RecallResult:
        return await tools.call(_guarded(tools.recall), prompt, agent, session, roots)

    @server.tool(name="graph", annotations=read_only, description=(
        "What the agent knows about an entity: type, aliases, relations (current first, strongest first), "
        "the cards behind them and what depends on it."))
    async def graph(entity: Annotated[str, Field(min_length=1, max_length=500, description="The entity's name or alias.")],
              agent: AgentArg = None, roots: RootsArg = None) -> GraphResult:
        return await tools.call(_guarded(tools.graph), entity, agent, roots)

    @server.tool(name="feedback", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                                              idempotent_hint=False, open_world_hint=False),
                 description="Record that a memory (card id) was helpful or harmful; re-scores its maturity.")
    async def feedback(card_id: Annotated[int, Field(ge=1, description="The card id (from search or recall).")],
                 kind: Annotated[Literal["helpful", "harmful"], Field(description="helpful or harmful.")],
                 note: Annotated[str | None, Field(None, max_length=2000, description="Why (stored redacted).")] = None,
                 agent: AgentArg = None, roots: RootsArg = None) -> FeedbackResult:
        return await tools.call(_guarded(tools.feedback), card_id, kind, note, agent, roots)

    @server.tool(name="forget", annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                                            idempotent_hint=False, open_world_hint=False),
                 description=("Delete a card (by id) or an entity and everything about it; it is not learned "
                              "again from the same transcripts."))
    async def forget(target: Annotated[str, Field(min_length=1, max_length=500, description="A card id or an entity name.")],
               agent: AgentArg = None, roots: RootsArg = None) -> ForgetResult:
        return await tools.call(_guarded(tools.forget), target, agent, roots)

    return server


def run(home: str | os.PathLike | None = None) -> int:
    """Serve MCP over stdin/stdout until the client closes it. Returns the exit code."""
    from .paths import resolve_home

    build_server(resolve_home(home)).run("stdio")
    return 0
