"""Claude Code's auto memory: find an agent's memory folder, read it into cards, export into it.

Claude Code (2.1.59+) keeps `<claude config dir>/projects/<project>/memory/`: `MEMORY.md` (an
index, loaded into every session: lines like `- [Title](file.md) — hook`) and one Markdown file per
memory (front matter `name`, `description`, `type`: user | feedback | project | reference, then the
body). `sync_agent` runs as a step of every consolidation (consolidate.pipeline):

* **Where.** The project folders are those of the transcripts the index saw for the agent (the
  `sources` table: `<project>/<session>.jsonl`, sub-agents `<project>/<session>/subagents/*.jsonl`)
  plus, for each of the agent's directories, the folder Claude Code names after its git root (the
  path with every non-alphanumeric character replaced by '-'); the memory folder is
  `<project>/memory`, unless settings `autoMemoryDirectory` names another (the agent directory's
  `.claude/settings.local.json`, then its `.claude/settings.json`, then the user's
  `<claude config dir>/settings.json`; `~` expanded, a relative path taken from the agent directory).
* **Switched off** by settings `autoMemoryEnabled: false` (same order) or the environment's
  `CLAUDE_CODE_DISABLE_AUTO_MEMORY=1`: nothing is read and the folder's cards are retired (state
  `disabled`; Claude Code loads nothing then, so reverie's own cards are recalled again).
* **What.** Each topic file is one entry; a bare line of MEMORY.md (one that links to no file of
  the folder nor to any other `.md` file) is one entry too. Our own `reverie.md` and its index line are never read back. Every
  text (name, description, statement, folder path) passes the redactor before it is stored.
* **Cards.** `graph.auto_memory.sync_folder` (updated when a file changes, retired when it is
  deleted), then `update_covers` (reverie's cards stating the same point).

`export_claude_memory` (`reverie export --claude-memory`) writes ONE reverie-owned topic file
(`reverie.md`) into the agent's memory folder and ONE index line into MEMORY.md, idempotently
(nothing changes when nothing changed) and never touching any other line or file. Nothing else in
reverie writes into a memory folder.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger(__name__)

ENV_DISABLE = "CLAUDE_CODE_DISABLE_AUTO_MEMORY"
INDEX = "MEMORY.md"
#: The one topic file reverie owns in a memory folder, and the link its index line carries.
OWN_FILE = "reverie.md"
OWN_LINK = f"]({OWN_FILE})"
#: Larger memory files are skipped (counted): auto memory is short notes.
MAX_FILE_BYTES = 256 * 1024
#: Words of a card statement drawn from a memory (cards are short; the file stays the evidence).
MAX_STATEMENT_WORDS = 60
#: Cards written into reverie.md by the export, strongest first.
EXPORT_CARDS = 40

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_SANITIZE = re.compile(r"[^A-Za-z0-9]")


def claude_config_dir() -> Path:
    """`$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def memory_settings(cwd: str | None, config_dir: Path | None = None) -> dict[str, Any]:
    """{"enabled": bool, "directory": str | None, "why": str}: the auto-memory switches that apply
    to sessions in `cwd` (see the module doc for the order)."""
    config_dir = config_dir or claude_config_dir()
    layers = []
    if cwd:
        layers += [Path(cwd) / ".claude" / "settings.local.json", Path(cwd) / ".claude" / "settings.json"]
    layers.append(config_dir / "settings.json")
    found = [(p, _json(p)) for p in layers]
    if os.environ.get(ENV_DISABLE, "").strip().lower() in ("1", "true", "yes", "on"):
        return {"enabled": False, "directory": None, "why": f"${ENV_DISABLE}"}
    enabled, why = True, "default"
    for path, data in found:
        if "autoMemoryEnabled" in data:
            enabled = data["autoMemoryEnabled"] is not False
            why = f"autoMemoryEnabled in {path}"
            break
    directory = None
    for path, data in found:
        value = data.get("autoMemoryDirectory")
        if isinstance(value, str) and value.strip():
            d = Path(os.path.expanduser(value.strip()))
            directory = str(d if d.is_absolute() or not cwd else Path(cwd) / d)
            break
    return {"enabled": enabled, "directory": directory, "why": why}


def _git_root(cwd: str) -> str | None:
    p = Path(cwd)
    for d in (p, *p.parents):
        if (d / ".git").exists():
            return str(d)
    return None


def _project_dirs(conn) -> list[Path]:
    """The Claude Code project folders of the transcripts the index saw (sources table)."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(sources)")}
    where = " WHERE harness = 'claude-code'" if "harness" in cols else ""
    out: list[Path] = []
    for path, kind in conn.execute(f"SELECT path, kind FROM sources{where} ORDER BY id"):
        p = Path(path)
        if p.suffix != ".jsonl" or p.name.startswith("rollout-"):
            continue
        project = p.parent.parent.parent if (kind == "subagent" or p.parent.name == "subagents") else p.parent
        if project not in out:
            out.append(project)
    return out


def agent_cwds(home: Path, agent_id: str, conn=None) -> list[str]:
    """The agent's directories: the registry's, else its conversations' first cwd."""
    from .agents import load_registry

    cwds = list(((load_registry(home).get("agents") or {}).get(agent_id) or {}).get("cwds") or [])
    if not cwds and conn is not None:
        cwds = [r[0] for r in conn.execute("SELECT DISTINCT cwd FROM conversations WHERE cwd IS NOT NULL ORDER BY cwd")]
    return [c for c in cwds if isinstance(c, str) and c]


def memory_folders(home: Path, agent_id: str, conn, *, config_dir: Path | None = None) -> list[dict[str, Any]]:
    """[{"folder", "cwd", "enabled", "why", "exists"}] for the agent, most likely first; folders
    named twice are listed once."""
    projects = _project_dirs(conn)
    cwds = agent_cwds(home, agent_id, conn)
    roots = {p.parent for p in projects} or {(config_dir or claude_config_dir()) / "projects"}
    for cwd in cwds:
        root = _git_root(cwd) or cwd
        for r in sorted(roots):
            cand = r / _SANITIZE.sub("-", root)
            if cand not in projects:
                projects.append(cand)
    cwd0 = cwds[0] if cwds else None
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for cwd in cwds or [None]:
        s = memory_settings(cwd, config_dir)
        folders = [Path(s["directory"])] if s["directory"] else [p / "memory" for p in projects]
        for f in folders:
            if str(f) in seen:
                continue
            seen.add(str(f))
            out.append({"folder": f, "cwd": cwd or cwd0, "enabled": s["enabled"], "why": s["why"],
                        "exists": f.is_dir()})
    out.sort(key=lambda d: not d["exists"])
    return out


# ---------------------------------------------------------------------------------------------
# Reading

def parse_memory(text: str) -> tuple[dict[str, str], str]:
    """(front matter {key: value}, body) of a memory file; no front matter gives ({}, text)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    meta: dict[str, str] = {}
    for i, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return meta, "\n".join(lines[i + 1:])
        key, sep, value = line.partition(":")
        if sep and key.strip():
            meta[key.strip().lower()] = value.strip().strip("'\"")
    return {}, text     # an unclosed front matter is body


def _plain(line: str) -> str:
    """A Markdown line as text: list/heading markers, emphasis and code marks dropped (an
    identifier's own underscores and asterisks stay)."""
    line = re.sub(r"^\s*(#+|[-*+]|\d+[.)])\s+", "", line)
    line = re.sub(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", r"\1", line)
    line = re.sub(r"(?<![\w*])\*(?=\S)([^*]+?)(?<=\S)\*(?![\w*])", r"\1", line)
    return re.sub(r"`([^`]*)`", r"\1", line).strip()


def statement_of(meta: dict[str, str], body: str) -> str:
    """The card text of a memory: its body's first paragraph (markup dropped), else its
    description, else its name; at most MAX_STATEMENT_WORDS words."""
    para: list[str] = []
    for line in body.splitlines():
        if not line.strip():
            if para:
                break
            continue
        if re.match(r"^\s*#+\s", line) and not para:
            continue     # a heading before the text
        text = _plain(line)
        if text:
            para.append(text)
    text = " ".join(para) or meta.get("description", "") or meta.get("name", "")
    words = text.split()
    return " ".join(words[:MAX_STATEMENT_WORDS]) + (" ..." if len(words) > MAX_STATEMENT_WORDS else "")


def _mtime(st: os.stat_result) -> str:
    from reverie.graph.model import utc_iso

    return utc_iso(_dt.datetime.fromtimestamp(st.st_mtime, _dt.timezone.utc))


def read_folder(folder: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The entries of one memory folder (raw, not yet redacted) and what was skipped, by reason."""
    entries: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}

    def skip(reason: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1

    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".md"))
    except OSError:
        return [], {"unreadable_folder": 1}
    files = set(names)
    for name in names:
        path = folder / name
        try:
            st = path.stat()
            if not path.is_file():
                continue
            if st.st_size > MAX_FILE_BYTES:
                skip("too_large")
                continue
            raw = path.read_bytes()
        except OSError:
            skip("unreadable")
            continue
        text = raw.decode("utf-8", "replace")
        if name == OWN_FILE:
            continue                    # ours (export): never read back
        if name == INDEX:
            for line in text.splitlines():
                links = _LINK.findall(line)
                if OWN_LINK in line or any(t.lower().endswith(".md") or Path(t).name in files for t in links):
                    continue            # an index line of a topic file (read from the file, if any), or ours
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                stmt = statement_of({}, line)
                if len(stmt.split()) < 3:
                    continue
                digest = hashlib.sha256(" ".join(stmt.lower().split()).encode()).hexdigest()
                entries.append({"entry": f"{INDEX}#{digest[:12]}", "statement": stmt, "sha256": digest,
                                "name": "", "description": "", "type": "", "mtime": _mtime(st)})
            continue
        meta, body = parse_memory(text)
        stmt = statement_of(meta, body)
        if not stmt.strip():
            skip("empty")
            continue
        entries.append({"entry": name, "statement": stmt, "sha256": hashlib.sha256(raw).hexdigest(),
                        "name": meta.get("name", ""), "description": meta.get("description", ""),
                        "type": meta.get("type", "").lower(), "mtime": _mtime(st)})
    return entries, skipped


def sync_agent(home: Path, agent_id: str, db, *, now: str, redactor: Callable[[], Any],
               config_dir: Path | None = None) -> dict[str, Any]:
    """Read the agent's memory folders into cards (see the module doc). `redactor()` returns the
    run's Redactor (called only when there is text to store). Returns {"folders": [...], counts...,
    "covered"}."""
    from reverie.graph import auto_memory as am
    from reverie.graph.db import connection

    conn = connection(db)
    total = {"added": 0, "updated": 0, "unchanged": 0, "retired": 0, "restored": 0, "forgotten": 0}
    report = []
    synced: set[str] = set()
    for info in memory_folders(home, agent_id, conn, config_dir=config_dir):
        folder = info["folder"]
        if not info["exists"] and not info["enabled"]:
            continue
        raw, skipped = read_folder(folder) if info["enabled"] and info["exists"] else ([], {})
        red = redactor() if (raw or info["exists"]) else None
        key = red.redact(str(folder)).text if red is not None else str(folder)
        if not raw and red is None and not _known_folder(conn, key):
            continue
        entries = []
        if raw:
            texts = [t for e in raw for t in (e["statement"], e["name"], e["description"], e["entry"])]
            clean = [r.text for r in red.redact_many(texts)]
            for i, e in enumerate(raw):
                s, n, d, ent = clean[4 * i: 4 * i + 4]
                entries.append(am.Entry(entry=ent, statement=s, sha256=e["sha256"], name=n, description=d,
                                        type=e["type"][:20], mtime=e["mtime"]))
        counts = am.sync_folder(conn, key, entries, now=now,
                                state_if_absent="deleted" if info["enabled"] else "disabled")
        synced.add(key)
        for k, v in counts.items():
            total[k] += v
        report.append({"folder": key, "enabled": info["enabled"], "why": info["why"], "entries": len(entries),
                       "skipped": skipped, **counts})
    # folders synced before and no longer found (settings changed): their cards retire
    for (key,) in conn.execute("SELECT DISTINCT folder FROM auto_memory WHERE state = 'present'").fetchall():
        if key not in synced:
            counts = am.sync_folder(conn, key, [], now=now)
            total["retired"] += counts["retired"]
    total["covered"] = am.update_covers(conn) if _known_any(conn) else 0
    return {"folders": report, **total}


def _known_folder(conn, key: str) -> bool:
    return conn.execute("SELECT 1 FROM auto_memory WHERE folder = ? LIMIT 1", (key,)).fetchone() is not None


def _known_any(conn) -> bool:
    return conn.execute("SELECT 1 FROM auto_memory LIMIT 1").fetchone() is not None


# ---------------------------------------------------------------------------------------------
# Export (`reverie export --claude-memory`)

class ExportRefused(Exception):
    """The memory folder cannot be written (switched off, unknown); the message names the fix."""


def _own_text(cards: list[dict[str, Any]], agent_id: str) -> str:
    lines = ["---", "name: reverie",
             f"description: Durable memories reverie consolidated from past sessions of {agent_id} "
             "(decisions, facts, preferences); written by `reverie export --claude-memory`",
             "type: project", "---", "",
             "What reverie learned from earlier sessions in this project. This file is rewritten by "
             "`reverie export --claude-memory`; edit memories with `reverie export --markdown` instead.", ""]
    for c in cards:
        lines.append(f"- {c['statement']} [#{c['id']}, {c['category']}]")
    return "\n".join(lines) + "\n"


INDEX_LINE = f"- [reverie]({OWN_FILE}) — what reverie learned from past sessions (`reverie export --claude-memory`)"


def _with_index_line(text: str) -> str:
    """MEMORY.md with exactly one reverie index line: an existing one is replaced in place, else one
    is appended; every other line is kept byte for byte."""
    lines = text.split("\n") if text else []
    at = [i for i, line in enumerate(lines) if OWN_LINK in line]
    if at:
        lines[at[0]] = INDEX_LINE
        for i in reversed(at[1:]):
            del lines[i]
        return "\n".join(lines)
    if lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines + [INDEX_LINE]) + "\n"


def export_claude_memory(home: Path, agent_id: str, db, *, scrub: Callable[[str], str],
                         config_dir: Path | None = None) -> dict[str, Any]:
    """Write reverie.md and its index line into the agent's memory folder (see the module doc).
    Returns {"folder", "file", "cards", "changed": [file names written]}. Raises ExportRefused."""
    from reverie.graph.db import connection

    conn = connection(db)
    folders = memory_folders(home, agent_id, conn, config_dir=config_dir)
    if not folders:
        raise ExportRefused(f"No Claude Code project folder is known for agent {agent_id!r}: run `reverie index` "
                            "after a Claude Code session in its directory.")
    info = folders[0]
    if not info["enabled"]:
        raise ExportRefused(f"Claude Code's auto memory is switched off for {info['cwd']} ({info['why']}): it would "
                            "not load the file. Switch it on, or use `reverie export --markdown DIR`.")
    hidden = {r[0] for r in conn.execute("SELECT card_id FROM auto_memory UNION SELECT card_id FROM auto_memory_covers")}
    from reverie.graph.store import active_cards

    cards = [c for c in active_cards(conn) if c["id"] not in hidden][:EXPORT_CARDS]
    cards = [{**c, "statement": scrub(c["statement"])} for c in cards]
    folder: Path = info["folder"]
    changed = []
    from reverie.graph.files import write_text_atomic

    folder.mkdir(parents=True, exist_ok=True)
    own = folder / OWN_FILE
    body = _own_text(cards, agent_id)
    if not own.is_file() or own.read_text(encoding="utf-8", errors="replace") != body:
        write_text_atomic(own, body, mode=0o644)
        changed.append(OWN_FILE)
    index = folder / INDEX
    before = index.read_text(encoding="utf-8") if index.is_file() else ""
    after = _with_index_line(before)
    if after != before:
        write_text_atomic(index, after, mode=(index.stat().st_mode & 0o777) if index.is_file() else 0o644)
        changed.append(INDEX)
    return {"folder": str(folder), "file": str(own), "cards": len(cards), "changed": changed}
