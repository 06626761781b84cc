"""Audit 9: speed and cost claims, checked without timing.

What is checked, deterministically (imports and SQL seen by a real hook process, never a clock):
- both hook events (`reverie hook session-start|user-prompt-submit`, the real `consolidate.cli.main`
  entry in a fresh interpreter) on a consolidated home import none of the heavy modules, nor
  `pathlib`/`typing`, in every awkward case: a prompt naming many entities, a remembered secret that
  the scrub has to remove from the output, the embedder setting pointing at a model2vec model, session
  state that needs pruning, a db with migrations pending (which the hook must not apply), a broken
  settings.json;
- the hook opens one agent's db (read-only) and the home's secret memory, never another agent's db;
- the claims of the closing notes about the hook (`hashlib` never loaded; the hook only reads);
- `reverie recall`, `reverie search` and `reverie doctor` load neither the anthropic SDK nor presidio
  for ordinary input, even with `writer: anthropic` and a model configured.

Three began as proofs of a defect: every hook loaded all remembered hashes (now point lookups),
wrote to the secret store (now a read-only open with a short lock wait), and loaded hashlib (now the
builtin blake2b). Figures (latency, throughput) come from bench/, never asserted here.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "fixtures" / "sample-projects"
MODEL = ROOT.parent / "shared" / "models" / "minilm-l6-m2v-256"
CWD = "/home/dev/acme/billing-api"   # the sample agent `billing-api` (fixtures/sample-projects)

#: Never on the hook path (the architecture page, the hook's docstring, the closing notes).
FORBIDDEN = ("presidio_analyzer", "presidio_anonymizer", "anthropic", "numpy", "networkx", "model2vec",
             "click", "pydantic", "sqlite_utils", "re2", "pathlib", "typing", "spacy", "torch",
             "safetensors", "tokenizers", "httpx", "tldextract", "rapidfuzz", "apscheduler")

#: A fresh interpreter running the real console entry (`consolidate.cli.main`, which ends with
#: `os._exit`) for one hook event, with every sqlite3 connection's statements traced to stderr and
#: the rows each `execute` returned to the hook counted (a Connection subclass as factory).
#: The wrapper itself imports only `sys`, `os` and `sqlite3`, which the hook imports anyway.
HOOK_WRAPPER = r'''
import os, sqlite3, sys
_write, _real = os.write, sqlite3.connect
class _Rows:
    def __init__(self, cur, db):
        self._cur, self._db = cur, db
    def _count(self, n):
        if n:
            _write(2, ("@@ROWS " + self._db + "\t" + str(n) + "\n").encode())
    def __iter__(self):
        n = 0
        for row in self._cur:
            n += 1
            yield row
        self._count(n)
    def fetchone(self):
        row = self._cur.fetchone()
        self._count(int(row is not None))
        return row
    def fetchall(self):
        rows = self._cur.fetchall()
        self._count(len(rows))
        return rows
    def __getattr__(self, name):
        return getattr(self._cur, name)
class _Conn(sqlite3.Connection):
    def execute(self, *a):
        return _Rows(super().execute(*a), self._reverie_db)
def _connect(database, *a, **kw):
    kw.setdefault("factory", _Conn)
    conn = _real(database, *a, **kw)
    conn._reverie_db = str(database)
    _write(2, ("@@DB " + str(database) + "\n").encode())
    conn.set_trace_callback(lambda s, _d=str(database): _write(2, ("@@SQL " + _d + "\t" + " ".join(s.split()) + "\n").encode()))
    return conn
sqlite3.connect = _connect
sys.argv = ["reverie", "hook", sys.argv[1]]
from reverie.consolidate.cli import main
main()
'''


@functools.cache
def startup_modules() -> frozenset[str]:
    """What a bare `python -c pass` of this interpreter imports (site, .pth files)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, timeout=60)
    return frozenset(line.rsplit("|", 1)[1].strip() for line in proc.stderr.decode().splitlines()
                     if line.startswith("import time:") and line.count("|") == 2)


class HookRun:
    """One hook process: its exit code, the additionalContext it printed (or None), the modules it
    imported (`-X importtime`), the databases it opened, the SQL it ran on each and the rows it read."""

    def __init__(self, home: Path, event: str, payload: dict) -> None:
        proc = subprocess.run([sys.executable, "-X", "importtime", "-c", HOOK_WRAPPER, event],
                              input=json.dumps(payload).encode(), capture_output=True, timeout=60,
                              env={**os.environ, "REVERIE_HOME": str(home)})
        self.returncode = proc.returncode
        self.context = (json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
                        if proc.stdout.strip() else None)
        self.modules: set[str] = set()
        self.dbs: list[str] = []
        self.sql: dict[str, list[str]] = {}
        self.rows: dict[str, int] = {}
        for line in proc.stderr.decode("utf-8", "replace").splitlines():
            if line.startswith("import time:") and line.count("|") == 2:
                self.modules.add(line.rsplit("|", 1)[1].strip())
            elif line.startswith("@@DB "):
                self.dbs.append(line[5:])
            elif line.startswith("@@SQL "):
                db, stmt = line[6:].split("\t", 1)
                self.sql.setdefault(db, []).append(stmt)
            elif line.startswith("@@ROWS "):
                db, n = line[7:].split("\t", 1)
                self.rows[db] = self.rows.get(db, 0) + int(n)

    def forbidden(self) -> list[str]:
        """Heavy modules the hook imported beyond what the interpreter's own startup imports (an
        editable install's path finder, loaded from a .pth file, brings pathlib into every process;
        an installed wheel does not)."""
        return sorted(m for m in self.modules - startup_modules() if m.split(".")[0] in FORBIDDEN)


def primer(session: str) -> dict:
    return {"session_id": session, "cwd": CWD, "source": "startup", "hook_event_name": "SessionStart"}


def prompt(session: str, text: str) -> dict:
    return {"session_id": session, "cwd": CWD, "prompt": text, "hook_event_name": "UserPromptSubmit"}


def _build_home(home: Path, settings: dict | None = None) -> Path:
    """Index the sample projects into `home` and consolidate both agents offline (the real CLI, as a
    user does it), optionally with settings written first."""
    home.mkdir(parents=True)
    if settings:
        (home / "settings.json").write_text(json.dumps(settings))
    env = {**os.environ, "REVERIE_HOME": str(home), "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": ""}
    reverie = [sys.executable, "-m", "reverie.consolidate"]
    for args in (["index", "--projects-dir", str(SAMPLES), "--json"],
                 ["consolidate", "--now", "--all", "--writer", "offline", "--json"]):
        done = subprocess.run([*reverie, *args], capture_output=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr.decode()
    return home


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A consolidated home (two agents: billing-api and infra), built once for the module."""
    return _build_home(tmp_path_factory.mktemp("perf") / "home")


@pytest.fixture
def home(template, tmp_path) -> Path:
    """A private copy of the consolidated home."""
    return Path(shutil.copytree(template, tmp_path / "home", symlinks=True))


def _hashes_db(home: Path) -> str:
    """How the hook opens the remembered-secret db: read-only, by URI (redact.memory point lookups)."""
    return f"file:{home / 'secrets' / 'hashes.db'}?mode=ro"


def _agent_db(home: Path, agent: str = "billing-api") -> Path:
    return home / "agents" / agent / "agent.db"


def _assert_light_and_one_agent(run: HookRun, home: Path, extra_dbs: tuple[str, ...] = ()) -> None:
    """The hook printed something (so the checks mean something), imported nothing heavy, loaded
    our light modules only, and opened exactly: billing-api's db read-only, the home's secret memory
    and `extra_dbs`."""
    assert run.returncode == 0
    assert run.context, "the hook printed nothing: the import check would mean nothing"
    assert run.forbidden() == []
    assert "reverie.graph.recall" in run.modules and "reverie.redact.memory" in run.modules
    assert not {"reverie.consolidate.index", "reverie.consolidate.pipeline", "reverie.redact.engine", "reverie.graph.merge",
                "reverie.consolidate.commands"} & run.modules
    expected = [f"file:{_agent_db(home)}?mode=ro", _hashes_db(home), *extra_dbs]
    assert sorted(run.dbs) == sorted(expected)


# ------------------------------------------------------------------------------------------------
# The hook path in each awkward case


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_hook_on_a_consolidated_home_is_light_and_opens_one_agent_db(home, event):
    payload = primer("plain") if event == "session-start" else prompt(
        "plain", "why does nginx return 502 when billing-api renders a large invoice PDF?")
    run = HookRun(home, event, payload)
    _assert_light_and_one_agent(run, home)
    # the other agent's db is never touched
    assert not [d for d in run.dbs if "/agents/infra/" in d]


#: Our modules on the hook path: docs/architecture.md's list (paths, settings, agents, hook,
#: graph.recall with its parts (nearest, recall_query, recall_sessions) and graph.text/trust/db, graph.recall_embed, redact.memory), the entry module and
#: package inits, plus two the page does not list: graph.files (its contracts section calls the
#: atomic write hook-safe) and, at session start only, graph.episodes (the closing note says so).
DOCUMENTED_HOOK_MODULES = {"reverie", "reverie.consolidate", "reverie.consolidate.cli", "reverie.consolidate.paths", "reverie.consolidate.settings",
                           "reverie.consolidate.agents", "reverie.consolidate.hook", "reverie.graph", "reverie.graph.recall", "reverie.graph.nearest", "reverie.graph.recall_query", "reverie.graph.recall_sessions", "reverie.graph.text",
                           "reverie.graph.trust", "reverie.graph.db", "reverie.graph.recall_embed", "reverie.graph.model_cache", "reverie.graph.files", "reverie.redact", "reverie.redact.memory"}


@pytest.mark.parametrize("event, extra", [("session-start", {"reverie.graph.episodes"}), ("user-prompt-submit", set())])
def test_hook_loads_exactly_the_documented_modules_of_ours(home, event, extra):
    """A guard against a module creeping onto the hook path: the exact set of first-party modules."""
    payload = primer("mods") if event == "session-start" else prompt("mods", "deploy billing-api to prod-k8s")
    run = HookRun(home, event, payload)
    assert run.context
    ours = {m for m in run.modules if m.split(".")[0] == "reverie"}
    assert ours == DOCUMENTED_HOOK_MODULES | extra


def test_prompt_naming_many_entities_stays_light(home):
    text = ("auth-service, mini-lola, prod-k8s, nginx, proxy_read_timeout, billing-api, pnpm, npm, S3 and "
            "acme-invoices: how do auth-service and billing-api depend on each other on prod-k8s, and "
            "does nginx still front billing-api on mini-lola?")
    run = HookRun(home, "user-prompt-submit", prompt("many", text))
    _assert_light_and_one_agent(run, home)
    assert ("auth-service (service):\n"
            "  - auth-service runs on prod-k8s (1 session; last 2026-03-12)\n"
            "  - billing-api depends on auth-service (1 session; last 2026-03-02)\n"
            "  - auth-service runs on mini-lola (no longer; 2 sessions; last 2026-03-12)\n") in run.context


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_remembered_secret_is_scrubbed_on_the_light_path(home, event):
    """A value learned after the card was written (no rescan yet) leaves the hook only as
    `[REDACTED:remembered]`, and the scrub that removes it loads nothing heavy (nor OpenSSL)."""
    value = "Xk9fQ2mLp7RtVw3z"
    with sqlite3.connect(_agent_db(home)) as conn:
        (card,) = conn.execute("SELECT id FROM cards WHERE statement LIKE 'This repo uses pnpm%'").fetchone()
        conn.execute("UPDATE cards SET statement = statement || ? WHERE id = ?", (f" CI tenant: {value}.", card))
    conn.close()
    learn = subprocess.run([sys.executable, "-c", "import sys; from reverie.redact.memory import SecretMemory; "
                            "print(SecretMemory(sys.argv[1]).remember([sys.argv[2]]))",
                            str(home / "secrets"), value], capture_output=True, text=True, check=True)
    assert learn.stdout.strip() == "1"
    payload = primer("sec") if event == "session-start" else prompt("sec", "which lockfile does this repo use, pnpm or npm?")
    run = HookRun(home, event, payload)
    _assert_light_and_one_agent(run, home)
    assert value not in run.context
    assert "CI tenant: [REDACTED:remembered]." in run.context
    assert "hmac" not in run.modules   # (hashlib on prompts: see the test below)


@pytest.fixture(scope="module")
def model_template(tmp_path_factory) -> Path:
    if not (MODEL / "model.safetensors").exists():
        pytest.skip("../shared/models/minilm-l6-m2v-256 not present")
    return _build_home(tmp_path_factory.mktemp("perf-model") / "home", {"embedding_model": str(MODEL)})


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_embedder_setting_on_a_model_stays_light(model_template, tmp_path, event):
    """With `embedding_model` pointing at a model2vec folder (cards embedded by that model), the
    hook embeds the prompt with the stdlib reader: no model2vec/numpy/safetensors/tokenizers, also
    on the first call that builds the vocabulary cache. The cache db is the only extra db."""
    home = Path(shutil.copytree(model_template, tmp_path / "home", symlinks=True))
    shutil.rmtree(home / "cache", ignore_errors=True)
    payload = primer("m") if event == "session-start" else prompt("m", "why does nginx give up on large invoices?")
    run = HookRun(home, event, payload)
    (cache,) = sorted((home / "cache").glob("m2v-*.db"))
    built = [d for d in run.dbs if d.endswith(".tmp")]
    assert len(built) == 1 and built[0].startswith(str(cache) + ".")
    _assert_light_and_one_agent(run, home, extra_dbs=(*built, f"file:{cache}?mode=ro"))
    again = HookRun(home, event, payload | {"session_id": "m2"})
    _assert_light_and_one_agent(again, home, extra_dbs=(f"file:{cache}?mode=ro",))


def test_session_state_prune_stays_light(home):
    """600 stale session files and a prune marker older than PRUNE_EVERY_S: the new session's
    hook prunes them (down to its own file) on the light path."""
    state = home / "agents" / "billing-api" / "recall-sessions"
    state.mkdir(parents=True, exist_ok=True)
    old = time.time() - 20 * 86400
    for i in range(600):
        p = state / f"old-{i}.json"
        p.write_text('{"cards": [1], "entities": []}')
        os.utime(p, (old, old))
    marker = state / ".pruned"
    marker.touch()
    os.utime(marker, (time.time() - 3600,) * 2)
    run = HookRun(home, "session-start", primer("fresh"))
    _assert_light_and_one_agent(run, home)
    assert sorted(p.name for p in state.iterdir()) == [".pruned", "fresh.json"]


def test_db_with_pending_migrations_is_not_migrated_by_the_hook(home):
    """An agent db two graph migrations behind (m002 and m004 not applied): both hooks still inject,
    stay light, and leave the schema exactly as it was (the db is opened read-only)."""
    db = _agent_db(home)
    with sqlite3.connect(db) as conn:
        conn.execute("DROP INDEX evidence_position")
        conn.execute("DROP INDEX cards_recall_standing")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name IN ('m002_recall_indexes', 'm004_evidence_position')")
    conn.close()

    def schema():
        with sqlite3.connect(db) as c:
            return (c.execute("SELECT migration_set, name FROM _sqlite_migrations ORDER BY id").fetchall(),
                    c.execute("SELECT name FROM sqlite_master WHERE type = 'index' ORDER BY name").fetchall())

    before = schema()
    for event, payload in (("session-start", primer("mig")),
                           ("user-prompt-submit", prompt("mig", "deploy billing-api to prod-k8s"))):
        run = HookRun(home, event, payload)
        _assert_light_and_one_agent(run, home)
        assert not [s for s in run.sql[f"file:{db}?mode=ro"] if s.split()[0].upper() in ("CREATE", "DROP", "ALTER", "INSERT")]
    assert schema() == before
    assert ("reverie.graph", "m004_evidence_position") not in before[0]


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit"])
def test_broken_settings_json_stays_light(home, event):
    (home / "settings.json").write_text('{"recall": {"max_chars": 4000,')
    payload = primer("bs") if event == "session-start" else prompt("bs", "deploy billing-api to prod-k8s")
    run = HookRun(home, event, payload)
    _assert_light_and_one_agent(run, home)
    assert (home / "settings.json").read_text() == '{"recall": {"max_chars": 4000,'


# ------------------------------------------------------------------------------------------------
# Claims of the closing notes about the hook


def test_prompt_hook_with_default_settings_never_loads_hashlib(home):
    """Stop 10's note: 'Not imported at all: hashlib/hmac (the remembered-secret HMAC runs on the
    builtin SHA-256 with precomputed pads)'; tests/test_redact_memory.py checks it for the scrub
    alone. The whole prompt hook, default settings (no embedding model: the lexical embedder)."""
    run = HookRun(home, "user-prompt-submit", prompt("h", "why does nginx return 502 for billing-api?"))
    assert run.context
    assert sorted(m for m in run.modules if m in ("hashlib", "_hashlib", "hmac")) == []


def test_hook_runs_no_write_statement_on_the_secret_memory(home):
    """The hook needs the remembered hashes, not a write. Of the statements `SecretMemory.conn`
    runs at every open, the `INSERT OR IGNORE` takes the db's write lock even when it inserts
    nothing (checked: with another connection in BEGIN IMMEDIATE it fails 'database is locked' at a
    0.1 s timeout, while the PRAGMAs, `CREATE TABLE IF NOT EXISTS` and the SELECTs go through). So
    a hook started while another process writes hashes.db waits out the 5 s busy timeout (measured:
    5.0 s with REVERIE_HOOK_DEADLINE_S=0.5, nothing printed; SIGALRM cannot interrupt the SQLite
    wait), where a WAL reader would not have waited at all."""
    run = HookRun(home, "session-start", primer("ro"))
    assert run.context
    statements = run.sql[_hashes_db(home)]
    assert any(s.startswith("SELECT 1 FROM secrets") for s in statements)   # read, by point lookups
    writes = [s for s in statements if s.split()[0].upper() in ("INSERT", "UPDATE", "DELETE", "REPLACE")]
    assert writes == []


def test_hook_reads_of_the_secret_memory_do_not_grow_with_remembered_secrets(home):
    """Issue 3: 'Lookup stays fast with 100k remembered secrets'; redact/memory.py: 'Lookup cost does
    not grow with the number of remembered secrets'. A hook process is a fresh process, so the load
    is paid at every prompt: the rows it reads from hashes.db must stay bounded by the prompt's
    candidates (a keyed lookup per candidate), not by the store. Measured (scratch harness, 30 hook
    processes per home, sample agent, twice): p50 27.8 / 27.1 ms with no secrets, 62.8 / 61.0 ms
    with 98,590; cProfile: 30 of 49 ms in-process in that set comprehension."""
    import random
    import string

    rng = random.Random(5)
    values = ["".join(rng.choice(string.ascii_letters + string.digits) for _ in range(rng.randint(16, 40)))
              for _ in range(3000)]
    code = ("import json, sys; from reverie.redact.memory import SecretMemory; m = SecretMemory(sys.argv[1]); "
            "m.remember(json.loads(sys.stdin.read())); print(m.count())")
    learn = subprocess.run([sys.executable, "-c", code, str(home / "secrets")], input=json.dumps(values),
                           capture_output=True, text=True, check=True)
    remembered = int(learn.stdout)
    assert remembered > 2900   # a few random values fail the credential shape check
    run = HookRun(home, "user-prompt-submit", prompt("many-secrets", "why does nginx return 502 for billing-api?"))
    assert run.context
    read = run.rows.get(_hashes_db(home), 0)
    assert read < 100, f"{read} rows read from hashes.db holding {remembered} secrets"


# ------------------------------------------------------------------------------------------------
# recall / search / doctor commands


def _imports_of(home: Path, *args: str) -> tuple[int, str, set[str]]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "reverie.consolidate", *args],
                          capture_output=True, timeout=120, cwd=str(home),
                          env={**os.environ, "REVERIE_HOME": str(home), "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": ""})
    mods = {line.rsplit("|", 1)[1].strip() for line in proc.stderr.decode("utf-8", "replace").splitlines()
            if line.startswith("import time:") and line.count("|") == 2}
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), mods


#: What recall and search (stdlib recall; history search) never need; doctor reads migrations
#: through sqlite_utils, which itself imports numpy, so it is checked for the SDK and presidio only.
SDK_AND_PRESIDIO = ("anthropic", "presidio_analyzer", "presidio_anonymizer", "spacy", "httpx", "tldextract")
LIGHT_READ = SDK_AND_PRESIDIO + ("model2vec", "numpy", "networkx", "sqlite_utils", "pydantic")


@pytest.mark.parametrize("args, heavy_names", [
    (("recall", "--agent", "billing-api", "--prompt", "why does nginx return 502 for billing-api?", "--json"), LIGHT_READ),
    (("recall", "--agent", "billing-api", "--prompt", "deploy billing-api"), LIGHT_READ),
    (("search", "nginx", "--agent", "billing-api", "--json"), LIGHT_READ),
    (("doctor", "--json"), SDK_AND_PRESIDIO),
])
def test_read_commands_load_neither_the_anthropic_sdk_nor_presidio(home, args, heavy_names):
    """With `writer: anthropic`, an API key and a model in the settings (the configuration most
    tempting to load the SDK early), ordinary recall/search/doctor calls need neither."""
    settings = {"writer": "anthropic", "anthropic": {"api_key": "sk-ant-api03-" + "a1B2" * 20 + "-AA"}}
    if MODEL.is_dir():
        settings["embedding_model"] = str(MODEL)
    (home / "settings.json").write_text(json.dumps(settings))
    code, out, mods = _imports_of(home, *args)
    assert code == 0, out
    assert out.strip()
    assert sorted(m for m in mods if m.split(".")[0] in heavy_names) == []
    assert "billing-api" in out
