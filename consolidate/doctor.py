"""`reverie doctor`: what this installation has, what it lacks, and the command that fixes each gap.

Invariants: read-only except that it never creates anything (no home, no db); never prints a secret
(an API key is reported as set or not set, never shown); each check is independent and a failing
check never stops the others.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any

from reverie.graph.db import connect_readonly

from . import settings as _settings
from .agents import known_agent_ids, load_registry
from .paths import agent_db_path, default_projects_dir, settings_path


def _check(name: str, ok: bool, detail: str, fix: str | None = None, *, optional: bool = True) -> dict[str, Any]:
    return {"name": name, "ok": bool(ok), "optional": optional, "detail": detail, "fix": None if ok else fix}


def _schema_versions(db_path: Path) -> tuple[dict[str, list[str]], str | None]:
    """(applied migrations per set (consolidate.store.schema_versions), error): read-only; the error
    says why the db cannot be read (damaged, not a database), None when it can."""
    import sqlite_utils

    from .store import schema_versions

    try:
        conn = connect_readonly(db_path, 5.0, check_same_thread=True)
    except (sqlite3.Error, OSError) as exc:
        return {}, f"{type(exc).__name__}: {exc}"
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return schema_versions(sqlite_utils.Database(conn)), None
    except sqlite3.Error as exc:
        return {}, f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()


def _pending(versions: dict[str, list[str]]) -> list[str]:
    """Index migrations this code has that the db has not applied yet (applied on the next open)."""
    from . import store

    applied = set(versions.get(store.MIGRATIONS.name, []))
    return [f"{store.MIGRATIONS.name}:{m.name}" for m in store.MIGRATIONS._migrations if m.name not in applied]


def diagnose(home: Path, projects_dir: Path | None = None) -> dict[str, Any]:
    """Everything `reverie doctor` reports, as a dict (see `render`)."""
    from .index import db_bytes

    home = Path(home)
    user, bad = _settings.read_user(home)            # settings.json read once
    settings = _settings.with_defaults(user)
    registry_data = load_registry(home)               # agents.json read once
    registry = registry_data.get("agents", {})
    agents = []
    checks: list[dict[str, Any]] = []
    for agent_id in known_agent_ids(home, registry_data):
        db = agent_db_path(home, agent_id)
        versions, db_error = _schema_versions(db) if db.exists() else ({}, None)
        if db_error:
            checks.append(_check(f"agent {agent_id} database", False, f"{db} cannot be read ({db_error})",
                                 f"move {db} aside, then `reverie index` rebuilds it from the transcripts "
                                 "still on disk", optional=False))
        agents.append({
            "id": agent_id,
            "cwds": list((registry.get(agent_id) or {}).get("cwds", [])),
            "db": str(db),
            "db_exists": db.exists(),
            "db_bytes": db_bytes(db),
            "schema": versions,
            "pending_migrations": _pending(versions) if db.exists() and not db_error else [],
            "db_error": db_error,
        })

    sp = settings_path(home)
    if sp.exists():
        mode = sp.stat().st_mode & 0o777
        if bad:
            checks.append(_check("settings file", False, f"{sp} {bad}; every command runs on the defaults "
                                 "until it is fixed", f"fix or remove {sp}", optional=False))
        else:
            checks.append(_check("settings file", mode & 0o077 == 0, f"{sp} (mode {mode:o})",
                                 f"chmod 600 {sp}", optional=False))
            found = _settings.problems(user)
            checks.append(_check("settings values", not found, " ".join(found) if found else "every value is valid",
                                 "reverie settings set KEY VALUE   (each message names its key)", optional=False))
    else:
        checks.append(_check("settings file", True, f"{sp} not written yet (defaults apply)"))

    pdir = Path(projects_dir) if projects_dir else default_projects_dir()
    checks.append(_check("Claude Code transcripts", pdir.is_dir(), str(pdir),
                         "reverie index --projects-dir DIR   (or set CLAUDE_CONFIG_DIR)", optional=False))

    redact_ok = importlib.util.find_spec("reverie.redact.engine") is not None
    checks.append(_check("redaction engine", redact_ok, "redact.engine importable" if redact_ok else "redact.engine missing",
                         "pip install -e .   (from the reverie checkout)", optional=False))

    try:
        conn = sqlite3.connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        conn.close()
        fts = True
    except sqlite3.Error:
        fts = False
    checks.append(_check("SQLite FTS5", fts, f"sqlite {sqlite3.sqlite_version}",
                         "use a Python whose sqlite3 has FTS5 (python.org or distro builds do)", optional=False))

    key_env = bool(os.environ.get("ANTHROPIC_API_KEY"))
    key_set = bool(_settings.get(settings, "anthropic.api_key"))
    checks.append(_check(
        "Anthropic API key", key_env or key_set,
        "set in ANTHROPIC_API_KEY" if key_env else ("set in settings" if key_set else "not set (writer `anthropic` unavailable)"),
        "export ANTHROPIC_API_KEY=...   or   reverie settings set anthropic.api_key -   (reads it from stdin / a hidden prompt)"))

    claude_cmd = str(_settings.get(settings, "claude_cli.command", "claude") or "claude")
    claude_path = shutil.which(claude_cmd)
    checks.append(_check("claude CLI", claude_path is not None,
                         claude_path or f"`{claude_cmd}` not on PATH (writer `claude-cli` unavailable)",
                         "npm install -g @anthropic-ai/claude-code   (then `claude` once to log in)"))

    model = _settings.get(settings, "embedding_model")
    if not model:
        checks.append(_check("embedding model", False, "not configured (recall uses lexical matching only)",
                             "reverie settings set embedding_model /path/to/model2vec-model"))
    else:
        p = Path(str(model)).expanduser()
        if p.exists():
            checks.append(_check("embedding model", True, f"{p}"))
        else:
            checks.append(_check("embedding model", False, f"{model} does not exist on disk",
                                 "reverie settings set embedding_model /path/to/model2vec-model"))

    return {
        "home": str(home),
        "home_exists": home.exists(),
        "python": sys.version.split()[0],
        "projects_dir": str(pdir),
        "agents": agents,
        "checks": checks,
        "ok": all(c["ok"] for c in checks if not c["optional"]),
    }


def render(report: dict[str, Any]) -> str:
    lines = [f"home: {report['home']}" + ("" if report["home_exists"] else "  (not created yet)"),
             f"python: {report['python']}", f"transcripts: {report['projects_dir']}", ""]
    if report["agents"]:
        lines.append(f"agents ({len(report['agents'])}):")
        for a in report["agents"]:
            schema = ("DAMAGED: " + a["db_error"] if a.get("db_error")
                      else "; ".join(f"{k}: {', '.join(v)}" for k, v in a["schema"].items()) or "no db yet")
            lines.append(f"  {a['id']:<24} {a['db_bytes'] / 1e6:8.2f} MB   {schema}")
            if a["pending_migrations"]:
                lines.append(f"  {'':<24} pending: {', '.join(a['pending_migrations'])} (applied on next open)")
    else:
        lines.append("agents: none yet (run `reverie index`)")
    lines.append("")
    for c in report["checks"]:
        mark = "ok " if c["ok"] else ("-- " if c["optional"] else "!! ")
        lines.append(f"{mark} {c['name']:<24} {c['detail']}")
        if c["fix"]:
            lines.append(f"    fix: {c['fix']}")
    return "\n".join(lines)
