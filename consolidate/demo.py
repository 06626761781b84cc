"""`./run demo` (python -m consolidate.demo): the main job on the bundled sample transcripts.

A sequence of named steps sharing one `Demo` state; each step prints a titled section. To add a step,
write `def step_x(demo: Demo) -> None` and append it to `STEPS`. A step that needs a part not built
yet says so and the demo goes on.

Invariants: the demo only writes inside its home (default `./demo-home`, emptied at the start; a
folder that was not made by the demo is never emptied); everything printed comes from the index,
which holds redacted text only.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "fixtures" / "sample-projects"
MARKER = ".reverie-demo"


@dataclass
class Demo:
    home: Path
    projects_dir: Path
    out: Callable[[str], None] = print
    state: dict[str, Any] = field(default_factory=dict)

    def section(self, title: str) -> None:
        self.out("")
        self.out(f"== {title} " + "=" * max(0, 72 - len(title)))


def _load_samples_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("reverie_make_samples", REPO / "fixtures" / "make_samples.py")
    if spec is None or spec.loader is None:
        return None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def step_samples(demo: Demo) -> None:
    demo.section("1. Sample transcripts (Claude Code layout, written by fixtures/make_samples.py)")
    files = sorted(demo.projects_dir.rglob("*.jsonl"))
    total = sum(f.stat().st_size for f in files)
    for f in files:
        demo.out(f"  {f.relative_to(demo.projects_dir)}  ({f.stat().st_size:,} bytes)")
    demo.out(f"  {len(files)} files, {total:,} bytes")


def step_index(demo: Demo) -> None:
    from .commands.index_cmd import _render_index
    from .index import index_all

    demo.section("2. Index: redact every text, store messages per agent (reverie index)")
    summary = index_all(demo.home, demo.projects_dir)
    demo.state["index"] = summary
    demo.out(_render_index(summary))
    again = index_all(demo.home, demo.projects_dir)
    demo.out(f"Second run (incremental): {again['files_changed']} files changed, "
             f"{again['messages_added']} messages added.")


def step_agents(demo: Demo) -> None:
    from .agents import list_agents
    from .commands.index_cmd import _render_agents

    demo.section("3. Agents: one per working directory (reverie agents)")
    rows = list_agents(demo.home)
    demo.state["agents"] = rows
    demo.out(_render_agents(rows))


def step_conversation(demo: Demo) -> None:
    from .conversation import rebuild, render
    from .index_read import list_conversations
    from .paths import agent_db_path

    demo.section("4. A conversation rebuilt from the index (reverie show conversation ID)")
    agents = demo.state.get("agents") or []
    if not agents:
        demo.out("(no agents)")
        return
    # The earliest session of the agent with the most conversations: the one with the env dump.
    agent = max(agents, key=lambda a: (a["conversations"], a["id"]))["id"]
    convs = list_conversations(agent_db_path(demo.home, agent))
    if not convs:
        demo.out("(no conversations)")
        return
    first = convs[0]
    conv = rebuild(demo.home, first["id"], agent)
    text = render(conv, max_block_chars=400).splitlines()
    keep = text[:60]
    demo.out("\n".join(keep))
    if len(text) > len(keep):
        demo.out(f"... ({len(text) - len(keep)} more lines: reverie --home {demo.home} show conversation {conv['id']})")
    demo.state["conversation"] = conv


def step_secrets(demo: Demo) -> None:
    demo.section("10. Secrets: the planted fake AWS key never reached the disk (db, WAL, logs, recall log)")
    mod = _load_samples_module()
    planted = getattr(mod, "PLANTED_SECRETS", ()) if mod else ()
    hits = 0
    scanned = 0
    for path in demo.home.rglob("*"):
        if path.is_file() and demo.projects_dir not in path.parents:
            data = path.read_bytes()
            scanned += len(data)
            hits += sum(data.count(s.encode()) for s in planted)
    demo.out(f"Scanned {scanned:,} bytes under {demo.home}: {hits} occurrences of the {len(planted)} planted values.")
    conv = demo.state.get("conversation")
    if conv:
        for m in conv["messages"]:
            for b in m["blocks"]:
                if "AWS_SECRET_ACCESS_KEY" in (b["text"] or "") and b["type"] == "tool_result":
                    demo.out("As stored:")
                    for ln in b["text"].splitlines():
                        if ln.startswith("AWS_"):
                            demo.out(f"  {ln}")


def _busiest_agent(demo: Demo) -> dict | None:
    agents = demo.state.get("agents") or []
    return max(agents, key=lambda a: (a["conversations"], a["id"])) if agents else None


def step_consolidate(demo: Demo) -> None:
    from .pipeline import consolidate_agent

    demo.section("5. Consolidate offline: passages -> cards -> graph (reverie consolidate --now --all)")
    for agent in demo.state.get("agents") or []:
        s = consolidate_agent(demo.home, agent["id"], writer="offline", trigger="now")
        rejected = sum((s.get("cards_rejected") or {}).values())
        demo.out(f"  {agent['id']}: {s['conversations']} conversations, {s['passages']} passages, "
                 f"{s['candidates']} candidates -> {s['cards_written']} cards written, {rejected} rejected, "
                 f"${s['cost_usd']:.2f}")
    again = [consolidate_agent(demo.home, a["id"], writer="offline", trigger="now")["cards_written"]
             for a in demo.state.get("agents") or []]
    demo.out(f"Second run over unchanged transcripts: {sum(again)} cards written.")


def step_cards(demo: Demo) -> None:
    from reverie.graph.store import active_cards

    from .paths import agent_db_path
    from .store import open_db

    demo.section("6. Memory cards (reverie export --markdown DIR shows them as Markdown)")
    for agent in demo.state.get("agents") or []:
        db = open_db(agent_db_path(demo.home, agent["id"]))
        try:
            cards = active_cards(db.conn)
        finally:
            db.conn.close()
        demo.out(f"  {agent['id']} ({len(cards)} memories; a point seen again reinforces its card)")
        for c in cards:
            demo.out(f"    #{c['id']} [{c['category']}, confidence {c['confidence']:.2f}, "
                     f"{c['sessions']} session{'s' if c['sessions'] != 1 else ''}] {c['statement']}")


def step_graph(demo: Demo) -> None:
    from reverie.graph import view
    from reverie.graph.entities import find_entity

    from .paths import agent_db_path
    from .store import open_db

    agent = _busiest_agent(demo)
    if not agent:
        return
    name = "auth-service"
    demo.section(f"7. The graph around {name} (reverie graph {name} --agent {agent['id']})")
    db = open_db(agent_db_path(demo.home, agent["id"]))
    try:
        entity = find_entity(db, name)
        if entity is None:
            demo.out(f"  ({name} is not an entity of {agent['id']})")
            return
        demo.out(view.format_text(view.entity_report(db, entity["id"])))
    finally:
        db.conn.close()


SAMPLE_PROMPT = "Deploy the PDF export worker for billing-api and run the new job-table migration."


def step_recall(demo: Demo) -> None:
    from .hook import build_injection

    agent = _busiest_agent(demo)
    if not agent:
        return
    session = "demo-session"
    for title, event, payload in (
        ("8. What the SessionStart hook injects (reverie hook session-start)", "session-start",
         {"session_id": session, "cwd": agent["cwd"], "hook_event_name": "SessionStart", "source": "startup"}),
        (f"9. What the UserPromptSubmit hook injects for: {SAMPLE_PROMPT!r}", "user-prompt-submit",
         {"session_id": session, "cwd": agent["cwd"], "hook_event_name": "UserPromptSubmit", "prompt": SAMPLE_PROMPT}),
    ):
        demo.section(title)
        built = build_injection(event, payload, demo.home)
        if built is None:
            demo.out("  (nothing to inject)")
            continue
        output, _agent, _entry = built
        demo.out(output["hookSpecificOutput"]["additionalContext"])


STEPS: list[Callable[[Demo], None]] = [
    step_samples, step_index, step_agents, step_conversation, step_consolidate, step_cards, step_graph,
    step_recall, step_secrets,
]


def prepare_home(home: Path) -> None:
    """Empty the demo home, refusing a folder the demo did not create."""
    if home.exists() and any(home.iterdir()):
        if not (home / MARKER).exists():
            raise SystemExit(f"{home} exists and was not created by the demo; pass --home NEW_DIR.")
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    (home / MARKER).write_text("created by `python -m consolidate.demo`; emptied on every run\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m consolidate.demo", description=__doc__.split("\n")[0])
    parser.add_argument("--home", default="demo-home", help="demo home (default ./demo-home, emptied first)")
    parser.add_argument("--projects-dir", default=None, help="transcripts to use (default: the bundled samples)")
    args = parser.parse_args(argv)
    home = Path(args.home).resolve()
    prepare_home(home)
    if args.projects_dir:
        projects = Path(args.projects_dir).resolve()
    elif SAMPLES.is_dir():
        projects = SAMPLES
    else:
        mod = _load_samples_module()
        projects = home / "sample-projects"
        mod.write(projects)
    demo = Demo(home=home, projects_dir=projects)
    print(f"reverie demo: home {home}")
    for step in STEPS:
        step(demo)
    print("")
    print(f"Done. Explore with: reverie --home {home} agents | search QUERY | graph ENTITY | recall --agent ID --prompt TEXT | doctor")
    return 0


if __name__ == "__main__":
    sys.exit(main())
