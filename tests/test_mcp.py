"""`reverie mcp` over stdio with the SDK's own client (mcp.Client + StdioServerParameters).

The home is built once per module with the real CLI (index fixtures/sample-projects, consolidate
offline); every expected output is what the matching CLI command prints with --json on the same
home (plus the fields only the MCP tools add), so each assertion covers a whole output.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp import Client, StdioServerParameters
from mcp.types import ListRootsResult, Root

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "fixtures" / "sample-projects"
CWD = "/home/dev/acme/billing-api"   # the sample agent `billing-api`

AGENT_PROP = {"anyOf": [{"maxLength": 200, "type": "string"}, {"type": "null"}], "default": None,
              "description": "Agent id (`reverie agents` lists them); default: the agent of the client's root "
                             "directory, else of the server's working directory.", "title": "Agent"}

INPUT_SCHEMAS = {
    "search": {"type": "object", "title": "searchArguments", "required": ["query"], "properties": {
        "query": {"description": "Words to search for.", "maxLength": 4000, "minLength": 1, "title": "Query",
                  "type": "string"},
        "agent": AGENT_PROP,
        "limit": {"default": 10, "description": "Results per section.", "maximum": 200, "minimum": 1,
                  "title": "Limit", "type": "integer"}}},
    "recall": {"type": "object", "title": "recallArguments", "required": ["prompt"], "properties": {
        "prompt": {"description": "The prompt to recall for.", "maxLength": 20000, "minLength": 1,
                   "title": "Prompt", "type": "string"},
        "agent": AGENT_PROP,
        "session": {"anyOf": [{"maxLength": 200, "type": "string"}, {"type": "null"}], "default": None,
                    "description": "Act as this Claude Code session id.", "title": "Session"}}},
    "graph": {"type": "object", "title": "graphArguments", "required": ["entity"], "properties": {
        "entity": {"description": "The entity's name or alias.", "maxLength": 500, "minLength": 1,
                   "title": "Entity", "type": "string"},
        "agent": AGENT_PROP}},
    "feedback": {"type": "object", "title": "feedbackArguments", "required": ["card_id", "kind"], "properties": {
        "card_id": {"description": "The card id (from search or recall).", "minimum": 1, "title": "Card Id",
                    "type": "integer"},
        "kind": {"description": "helpful or harmful.", "enum": ["helpful", "harmful"], "title": "Kind",
                 "type": "string"},
        "note": {"anyOf": [{"maxLength": 2000, "type": "string"}, {"type": "null"}], "default": None,
                 "description": "Why (stored redacted).", "title": "Note"},
        "agent": AGENT_PROP}},
    "forget": {"type": "object", "title": "forgetArguments", "required": ["target"], "properties": {
        "target": {"description": "A card id or an entity name.", "maxLength": 500, "minLength": 1,
                   "title": "Target", "type": "string"},
        "agent": AGENT_PROP}},
}
READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}
WRITES = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
ANNOTATIONS = {"search": READ_ONLY, "recall": WRITES, "graph": READ_ONLY, "feedback": WRITES,
               "forget": {**WRITES, "destructiveHint": True}}


def _env(home: Path) -> dict[str, str]:
    return {"REVERIE_HOME": str(home), "HF_HUB_OFFLINE": "1", "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "",
            "CLAUDE_CONFIG_DIR": os.environ.get("CLAUDE_CONFIG_DIR", str(home / "claude-config")),
            "REVERIE_CACHE_DIR": os.environ.get("REVERIE_CACHE_DIR", str(home / "cache"))}


def cli(home: Path, *args: str) -> Any:
    """The real CLI's --json output."""
    done = subprocess.run([sys.executable, "-m", "reverie.consolidate", "--home", str(home), *args, "--json"],
                          capture_output=True, env={**os.environ, **_env(home)}, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("mcp") / "home"
    home.mkdir()
    cli(home, "index", "--projects-dir", str(SAMPLES))
    cli(home, "consolidate", "--now", "--all", "--writer", "offline")
    return home


def entities(home: Path) -> list[tuple[str, str]]:
    """(name, type) of billing-api's entities, those in most relations first."""
    import sqlite3

    conn = sqlite3.connect(home / "agents" / "billing-api" / "agent.db")
    try:
        return conn.execute(
            """SELECT e.name, e.type FROM entities e ORDER BY
                 (SELECT count(*) FROM relations r WHERE e.id IN (r.subject_id, r.object_id)) DESC, e.id""").fetchall()
    finally:
        conn.close()


@pytest.fixture
def home(template, tmp_path) -> Path:
    return Path(shutil.copytree(template, tmp_path / "home", symlinks=True))


def session(home: Path, calls, *, cwd: str | None = None, roots: list[str] | None = None) -> Any:
    """Start `python -m reverie.consolidate mcp`, connect the SDK client, run `calls(client)`."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "reverie.consolidate", "mcp"],
                                   env=_env(home), cwd=cwd or str(home))

    async def list_roots(_ctx):
        return ListRootsResult(roots=[Root(uri=f"file://{r}", name=Path(r).name) for r in roots or []])

    async def main():
        kwargs = {"list_roots_callback": list_roots} if roots is not None else {}
        async with Client(params, read_timeout_seconds=60, **kwargs) as client:
            return await calls(client)

    return asyncio.run(main())


def structured(result) -> dict:
    assert result.is_error is False, [c.text for c in result.content]
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def error_text(result) -> str:
    assert result.is_error is True
    assert result.structured_content is None
    return result.content[0].text


def test_initialize_and_list_tools(home):
    async def calls(client):
        tools = await client.list_tools()
        return client.server_info, client.protocol_version, [
            t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools.tools]

    info, protocol, tools = session(home, calls)
    from importlib.metadata import version

    from reverie.consolidate import mcp_server as ms

    assert (info.name, info.version) == ("reverie", version("reverie"))
    assert protocol == "2026-07-28"
    assert [t["name"] for t in tools] == ["search", "recall", "graph", "feedback", "forget"]
    outputs = {"search": ms.SearchResult, "recall": ms.RecallResult, "graph": ms.GraphResult,
               "feedback": ms.FeedbackResult, "forget": ms.ForgetResult}
    for t in tools:
        assert set(t) == {"name", "description", "inputSchema", "outputSchema", "annotations"}
        assert t["inputSchema"] == INPUT_SCHEMAS[t["name"]], t["name"]
        assert t["annotations"] == ANNOTATIONS[t["name"]], t["name"]
        assert t["outputSchema"] == outputs[t["name"]].model_json_schema(), t["name"]
    # the output schemas are typed all the way down
    recall_props = outputs["recall"].model_json_schema()["$defs"]["RecallNote"]["properties"]
    assert {k: v.get("type") for k, v in recall_props.items()} == {
        "id": "integer", "statement": "string", "category": "string", "sessions": "integer",
        "confidence": "number", "maturity": "string", "date": "string", "score": "number"}


def test_read_tools_match_the_cli(home):
    prompt = "deploy billing-api to the office mac mini"
    name, kind = entities(home)[0]

    async def calls(client):
        return [await client.call_tool("search", {"query": "pnpm lockfile", "agent": "billing-api", "limit": 3}),
                await client.call_tool("recall", {"prompt": prompt, "agent": "billing-api"}),
                await client.call_tool("graph", {"entity": name, "agent": "billing-api"})]

    found, recalled, graph = (structured(r) for r in session(home, calls))
    want = cli(home, "search", "pnpm", "lockfile", "--agent", "billing-api", "--limit", "3")
    assert found == {**want, "cards": [{**c, "source": "reverie", "covered_by": None} for c in want["cards"]]}
    assert {"pnpm", "lockfile"} <= set(found["cards"][0]["statement"].replace(",", " ").split())
    want = cli(home, "recall", "--agent", "billing-api", "--prompt", prompt)
    assert recalled == {**want, "claude_auto_memory": []}
    assert recalled["text"].startswith("[reverie memory]")
    want = cli(home, "graph", name, "--agent", "billing-api")
    assert graph == {"agent": "billing-api", **want}
    assert (graph["entity"]["name"], graph["entity"]["type"]) == (name, kind)
    assert all(name in (r["subject"], r["object"]) for r in graph["relations"])


def test_write_tools_match_the_cli(home, tmp_path):
    twin = Path(shutil.copytree(home, tmp_path / "twin", symlinks=True))
    card = cli(home, "search", "pnpm", "--agent", "billing-api")["cards"][0]["id"]
    other, other_type = entities(home)[-1]

    async def calls(client):
        return [await client.call_tool("feedback", {"card_id": card, "kind": "helpful", "note": "saved a rebuild",
                                                    "agent": "billing-api"}),
                await client.call_tool("forget", {"target": other, "agent": "billing-api"}),
                await client.call_tool("forget", {"target": f"#{card}", "agent": "billing-api"})]

    fed, forgot_entity, forgot_card = (structured(r) for r in session(home, calls))
    assert fed == cli(twin, "feedback", str(card), "helpful", "--note", "saved a rebuild", "--agent", "billing-api")
    assert (fed["feedback_id"], fed["helpful_count"], fed["harmful_count"]) == (1, 1, 0)
    assert forgot_entity == cli(twin, "forget", other, "--agent", "billing-api")
    assert forgot_entity["forgotten"] == {"kind": "entity", "name": other, "type": other_type}
    assert forgot_entity["entities"] >= 1
    assert forgot_card == cli(twin, "forget", str(card), "--agent", "billing-api")
    assert forgot_card["forgotten"] == {"kind": "card", "id": card}
    assert card not in [c["id"] for c in cli(home, "search", "pnpm", "--agent", "billing-api")["cards"]]


def test_agent_from_roots_then_cwd(home, tmp_path):
    project = tmp_path / "checkout"
    project.mkdir()
    settings = json.loads((home / "settings.json").read_text()) if (home / "settings.json").exists() else {}
    settings.setdefault("agents", {})["map"] = {str(project): "infra"}
    (home / "settings.json").write_text(json.dumps(settings))

    async def calls(client):
        return await client.call_tool("search", {"query": "pnpm"})

    by_roots = structured(session(home, calls, cwd=str(project), roots=[CWD]))
    assert by_roots["agent"] == "billing-api"            # the client's root wins over the cwd
    by_cwd = structured(session(home, calls, cwd=str(project)))
    assert by_cwd["agent"] == "infra"                     # no roots capability: the server's cwd
    by_unknown = session(home, calls, cwd=str(tmp_path), roots=["/nowhere/at/all"])
    assert error_text(by_unknown) == ("Error executing tool search: No agent for the client's roots nor the "
                                      "server's directory: pass `agent` (`reverie agents` lists them).")


def test_bad_inputs_are_tool_errors(home):
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"

    async def calls(client):
        out = {}
        out["unknown_agent"] = await client.call_tool("search", {"query": "pnpm", "agent": "nobody"})
        out["path_agent"] = await client.call_tool("graph", {"entity": "x", "agent": "../etc"})
        out["missing_arg"] = await client.call_tool("recall", {"agent": "billing-api"})
        out["bad_card"] = await client.call_tool("feedback", {"card_id": 999999, "kind": "harmful",
                                                              "agent": "billing-api"})
        out["bad_type"] = await client.call_tool("feedback", {"card_id": secret, "kind": "helpful",
                                                              "agent": "billing-api"})
        out["no_entity"] = await client.call_tool("graph", {"entity": "zzqx-nothing", "agent": "billing-api"})
        out["forget_card"] = await client.call_tool("forget", {"target": "424242", "agent": "billing-api"})
        out["unknown_tool"] = await client.call_tool("remember", {})
        out["still_up"] = await client.call_tool("search", {"query": "pnpm", "agent": "billing-api"})
        return out

    out = session(home, calls)
    assert error_text(out["unknown_agent"]) == (
        "Error executing tool search: Unknown agent 'nobody' (no memory yet): check the id with `reverie agents`; a "
        "new agent needs `reverie index`, then `reverie consolidate --now --agent nobody`.")
    assert error_text(out["path_agent"]) == (
        "Error executing tool graph: '../etc' is not an agent id (lowercase letters, digits, '.', '_', '-'): "
        "`reverie agents` lists them.")
    missing = error_text(out["missing_arg"])
    assert missing.startswith("Error executing tool recall: 1 validation error for recallArguments\nprompt\n  Field required")
    assert error_text(out["bad_card"]) == (
        "Error executing tool feedback: No card 999999 in agent 'billing-api': find ids with the `search` tool.")
    bad_type = error_text(out["bad_type"])
    assert "card_id" in bad_type and secret not in bad_type and "[REDACTED:" in bad_type
    assert error_text(out["no_entity"]) == (
        "Error executing tool graph: No entity named 'zzqx-nothing' in agent 'billing-api'. The `search` tool finds "
        "memories by text.")
    assert error_text(out["forget_card"]) == (
        "Error executing tool forget: No card 424242 in agent 'billing-api': find ids with the `search` tool.")
    assert error_text(out["unknown_tool"]) == "Unknown tool: remember"
    assert structured(out["still_up"])["agent"] == "billing-api"


def test_outputs_pass_the_printable_scrubber(home):
    """A secret typed into a query comes back redacted, never as typed."""
    secret = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"

    async def calls(client):
        return await client.call_tool("search", {"query": f"pnpm {secret}", "agent": "billing-api"})

    found = structured(session(home, calls))
    assert secret not in json.dumps(found)
    assert found["query"].startswith("pnpm ") and "[REDACTED:" in found["query"]


def test_startup_imports_no_heavy_module(home):
    """The server process imports the SDK, not our heavy dependencies, before its first call."""
    code = ("import sys; from reverie.consolidate import mcp_server as m; m.build_server(m.Path(sys.argv[1])); "
            "print(' '.join(sorted(k for k in sys.modules if k.split('.')[0] in "
            "('sqlite_utils', 'networkx', 'presidio_analyzer', 'numpy', 'anthropic', 'model2vec', 're2', "
            "'rapidfuzz', 'apscheduler'))))")
    done = subprocess.run([sys.executable, "-c", code, str(home)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **_env(home)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""


def test_concurrent_calls_in_worker_threads_are_all_checked(home):
    """Sync tools run in the SDK's worker threads: every thread gets a working secret check (a
    scrubber built in one thread and used in another would withhold its texts)."""
    async def calls(client):
        import anyio

        results: list = [None] * 9

        async def one(i: int) -> None:
            tool, args = [("search", {"query": "pnpm lockfile", "agent": "billing-api"}),
                          ("recall", {"prompt": "which package manager: pnpm or npm?", "agent": "billing-api"}),
                          ("graph", {"entity": name, "agent": "billing-api"})][i % 3]
            results[i] = await client.call_tool(tool, args)

        async with anyio.create_task_group() as tg:
            for i in range(9):
                tg.start_soon(one, i)
        return results

    name = entities(home)[0][0]
    results = [structured(r) for r in session(home, calls)]
    assert all("[withheld" not in json.dumps(r) for r in results)
    assert all(results[i] == results[i % 3] for i in range(9))
