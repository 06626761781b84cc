"""Latency of `reverie mcp`'s tools over stdio, measured with the SDK's own client.

Builds a throwaway home (index fixtures/sample-projects, consolidate offline, the real CLI), starts
`python -m reverie.consolidate mcp` as a subprocess and times, from the client:

* startup: spawn -> protocol negotiated (`async with Client(...)`), over fresh processes;
* each tool: one `tools/call` round trip, the first call of a process apart (it loads the modules
  the tool needs) and the following ones as median / p95.

`forget` deletes what it is given, so its calls go through the home's cards one by one.

    python bench/mcp_bench.py [--calls 50] [--starts 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "fixtures" / "sample-projects"
AGENT = "billing-api"


def build_home(home: Path) -> None:
    env = {**os.environ, "REVERIE_HOME": str(home), "HF_HUB_OFFLINE": "1", "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "",
           "CLAUDE_CONFIG_DIR": str(home / "claude-config")}
    for args in (["index", "--projects-dir", str(SAMPLES), "--json"],
                 ["consolidate", "--now", "--all", "--writer", "offline", "--json"]):
        done = subprocess.run([sys.executable, "-m", "reverie.consolidate", *args], capture_output=True, env=env,
                              timeout=600)
        if done.returncode:
            sys.exit(done.stderr.decode())


def params(home: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "reverie.consolidate", "mcp"],
                                 env={"REVERIE_HOME": str(home), "HF_HUB_OFFLINE": "1",
                                      "CLAUDE_CONFIG_DIR": str(home / "claude-config"),
                                      "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": ""}, cwd=str(home))


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


async def time_startup(home: Path, starts: int) -> list[float]:
    out = []
    for _ in range(starts):
        t = time.perf_counter()
        async with Client(params(home)) as client:
            out.append(time.perf_counter() - t)
            await client.list_tools()
    return out


async def time_tools(home: Path, calls: int) -> dict[str, tuple[float, list[float]]]:
    conn = sqlite3.connect(home / "agents" / AGENT / "agent.db")
    cards = [r[0] for r in conn.execute("SELECT id FROM cards WHERE status = 'active' ORDER BY id")]
    entity = conn.execute("""SELECT e.name FROM entities e ORDER BY (SELECT count(*) FROM relations r
                             WHERE e.id IN (r.subject_id, r.object_id)) DESC, e.id LIMIT 1""").fetchone()[0]
    conn.close()
    plans = {
        "search": lambda i: {"query": ["pnpm lockfile", "nginx 502 timeout", "invoice pdf bucket"][i % 3],
                             "agent": AGENT},
        "recall": lambda i: {"prompt": ["deploy billing-api to the office mac mini", "why do large invoices 502?",
                                        "which package manager here?"][i % 3], "agent": AGENT},
        "graph": lambda i: {"entity": entity, "agent": AGENT},
        "feedback": lambda i: {"card_id": cards[i % len(cards)], "kind": "helpful", "agent": AGENT},
        "forget": lambda i: {"target": str(cards[i]), "agent": AGENT},
    }
    out = {}
    async with Client(params(home)) as client:
        for name, plan in plans.items():
            n = min(calls, len(cards)) if name == "forget" else calls + 1
            times = []
            for i in range(n):
                t = time.perf_counter()
                res = await client.call_tool(name, plan(i))
                times.append(time.perf_counter() - t)
                if res.is_error:
                    sys.exit(f"{name} failed: {res.content[0].text}")
                if "[withheld" in res.content[0].text:
                    print(f"note: {name} {plan(i)} withheld a text (redaction check failed)", file=sys.stderr)
            out[name] = (times[0], times[1:])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=50, help="calls per tool after the first (default 50)")
    ap.add_argument("--starts", type=int, default=5, help="server processes started for the startup time")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        build_home(home)
        starts = asyncio.run(time_startup(home, args.starts))
        tools = asyncio.run(time_tools(home, args.calls))
    print(f"reverie mcp over stdio (sample projects, agent {AGENT}); milliseconds")
    print(f"{'what':<10} {'n':>4} {'first':>8} {'median':>8} {'p95':>8}")
    print(f"{'startup':<10} {len(starts):>4} {starts[0] * 1000:>8.1f} {statistics.median(starts) * 1000:>8.1f} "
          f"{p95(starts) * 1000:>8.1f}")
    for name, (first, rest) in tools.items():
        print(f"{name:<10} {len(rest):>4} {first * 1000:>8.1f} {statistics.median(rest) * 1000:>8.1f} "
              f"{p95(rest) * 1000:>8.1f}")


if __name__ == "__main__":
    main()
