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


def _embedding_check(model: Any) -> dict[str, Any]:
    """Setting `embedding_model`: a hub model downloaded or not (and why its last fetch failed), a
    folder present or not. Read-only: doctor never downloads anything."""
    from reverie.graph import model_cache

    folder_fix = "reverie settings set embedding_model /path/to/model2vec-folder"
    if not model:
        return _check("embedding model", False, "setting embedding_model is null (recall uses lexical matching only)",
                      f"reverie settings set embedding_model {model_cache.DEFAULT_MODEL}")
    model = str(model)
    if model_cache.is_hub_name(model):
        folder = model_cache.cached_model(model)
        if folder is not None:
            return _check("embedding model", True, f"{model} (cached in {folder})")
        failed = model_cache.last_failure(model)
        where = model_cache.model_dir(model)
        fix = (f"let `reverie consolidate --now` reach the model hub (huggingface.co, or $HF_ENDPOINT) once; "
               f"or copy the model folder to {where}; or {folder_fix}")
        if failed:
            return _check("embedding model", False,
                          f"setting embedding_model = {model}: the last download failed ({failed.get('at')}: "
                          f"{failed.get('reason')}); recall uses lexical matching until it is fetched", fix)
        return _check("embedding model", False,
                      f"setting embedding_model = {model}: not downloaded yet (the next consolidation fetches it "
                      f"into {where}); recall uses lexical matching until then", fix)
    p = Path(model).expanduser()
    if p.exists():
        return _check("embedding model", True, f"{p}")
    return _check("embedding model", False, f"setting embedding_model = {model}: no such folder "
                  "(recall uses lexical matching)", folder_fix)


def _writer_checks(home: Path, settings: dict[str, Any], command: str, path: str | None) -> list[dict[str, Any]]:
    """The claude child's credential (the CLI's own cheap check, `claude auth status`, run with the
    child's settings and environment: which credential a call would use, never the credential),
    the writer a run would use and why, and the budgets every run has."""
    from .writers.claude_cli import auth_fix, auth_status, describe_credential
    from .writers.select import choose

    out = []
    pass_key = bool(_settings.get(settings, "claude_cli.pass_api_key", False))
    status = None
    if path is not None:
        status = auth_status(command, pass_api_key=pass_key, home=home, create_workdir=False,
                             timeout_s=min(30.0, float(_settings.get(settings, "claude_cli.timeout_s", 30) or 30)))
        detail = f"the claude child would use {describe_credential(status)}"
        if status["logged_in"] and status.get("method") != "claude.ai":
            detail += (" (claude_cli.pass_api_key is true: calls bill the API)" if pass_key
                       else " (not the Claude login)")
        checks_fix = auth_fix(pass_key) if not status["error"] else (
            "install Claude Code 2.1 or later (npm install -g @anthropic-ai/claude-code), then `claude auth login`")
        out.append(_check("claude login", status["logged_in"], detail, checks_fix))
    configured = str(settings.get("writer") or "auto")
    if configured == "auto":
        name, why = choose(settings, home=home, status=status)
        detail = f"auto -> {name}: {why}"
    else:
        detail = f"{configured} (settings `writer`)"
    out.append(_check("card writer", True, detail))
    c = settings.get("consolidate") or {}
    out.append(_check("consolidation budgets", True,
                      f"scheduled runs: at most {c.get('max_calls')} model calls and ${float(c.get('max_cost_usd', 0)):.2f} "
                      f"per night across all agents, each `consolidate --now` run the same "
                      f"(consolidate.max_calls, consolidate.max_cost_usd); {c.get('max_passages')} passages per run "
                      f"(consolidate.max_passages); `reverie schedule status` shows the cost per night"))
    return out


def _remembered_check(home: Path) -> dict[str, Any]:
    """How many secret values this home remembers (keyed hashes only), and how to forget a wrong one."""
    from .paths import secrets_dir

    db = secrets_dir(home) / "hashes.db"
    how = ("a value remembered by mistake is removed with `reverie redact --forget-secret < FILE` "
           "(FILE holds the value; it is never printed)")
    if not db.exists():
        return _check("remembered secrets", True, f"none yet; {how}")
    try:
        conn = connect_readonly(db)
        try:
            n = conn.execute("SELECT count(*) FROM secrets").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return _check("remembered secrets", False, f"{db} cannot be read ({type(exc).__name__})",
                      f"move {db} aside (remembered secrets start over; stored text stays redacted)")
    return _check("remembered secrets", True, f"{n} value{'s' if n != 1 else ''} remembered (keyed hashes, "
                  f"never the values) in {db}; {how}")


#: harness -> (what its folder is, how to point reverie elsewhere)
HARNESS_FOLDERS = {
    "claude-code": ("Claude Code projects", "--projects-dir DIR or CLAUDE_CONFIG_DIR"),
    "codex": ("Codex sessions", "--codex-dir DIR or CODEX_HOME"),
    "gemini": ("Gemini tmp", "--gemini-dir DIR or GEMINI_CLI_HOME"),
}


def harness_folders(projects_dir: Path | None = None, codex_dir: Path | None = None,
                    gemini_dir: Path | None = None) -> list[dict[str, Any]]:
    """Each harness's transcript folder (the one given, else its default): found or not, how many
    transcripts its reader discovers there, and the flag / variable that points elsewhere. Read-only;
    a folder that cannot be listed counts as not found."""
    from .index import readers

    given = {"claude-code": projects_dir, "codex": codex_dir, "gemini": gemini_dir}
    out = []
    for harness, mod in readers().items():
        root = Path(given.get(harness) or (default_projects_dir() if harness == "claude-code" else mod.default_root()))
        root = root.expanduser()
        found = root.is_dir()
        try:
            n = len(mod.discover(root)) if found else 0
        except OSError:
            found, n = False, 0
        name, setting = HARNESS_FOLDERS.get(harness, (harness, ""))
        out.append({"harness": harness, "name": name, "root": str(root), "found": found, "transcripts": n,
                    "setting": setting})
    return out


def diagnose(home: Path, projects_dir: Path | None = None, *, codex_dir: Path | None = None,
             gemini_dir: Path | None = None) -> dict[str, Any]:
    """Everything `reverie doctor` reports, as a dict (see `render`)."""
    from .index_read import db_bytes

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
    checks.append(_remembered_check(home))

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
                         "npm install -g @anthropic-ai/claude-code   (then `claude auth login`)"))
    checks += _writer_checks(home, settings, claude_cmd, claude_path)

    checks.append(_embedding_check(_settings.get(settings, "embedding_model")))

    return {
        "home": str(home),
        "home_exists": home.exists(),
        "python": sys.version.split()[0],
        "projects_dir": str(pdir),
        "harnesses": harness_folders(pdir, codex_dir, gemini_dir),
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
    lines += ["", "harness folders:"]
    for h in report.get("harnesses", []):
        state = f"{h['transcripts']} transcripts" if h["found"] else "not found"
        lines.append(f"  {h['name']:<22} {state:<16} {h['root']}   (elsewhere: {h['setting']})")
    lines.append("")
    for c in report["checks"]:
        mark = "ok " if c["ok"] else ("-- " if c["optional"] else "!! ")
        lines.append(f"{mark} {c['name']:<24} {c['detail']}")
        if c["fix"]:
            lines.append(f"    fix: {c['fix']}")
    return "\n".join(lines)
