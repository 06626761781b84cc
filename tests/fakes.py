"""Shared test doubles: a settable clock, fake `crontab`/recorder executables for the OS-unit
tests, and an agent db holding conversations as the indexer stores them."""

from __future__ import annotations

import contextlib
import threading
from datetime import datetime
from pathlib import Path
from typing import Iterator

#: A fake `crontab` (format with python=, store=, calls=): `-l` prints the stored table (or fails
#: like crontab with none), `-` stores stdin; every call is appended to `calls`.
FAKE_CRONTAB = """#!{python}
import pathlib, sys
store, calls = pathlib.Path({store!r}), pathlib.Path({calls!r})
with calls.open("a") as fh:
    fh.write("crontab " + " ".join(sys.argv[1:]) + "\\n")
if sys.argv[1:] == ["-l"]:
    if not store.exists():
        sys.stderr.write("no crontab for tester\\n")
        sys.exit(1)
    sys.stdout.write(store.read_text())
elif sys.argv[1:] == ["-"]:
    store.write_text(sys.stdin.read())
else:
    sys.exit(2)
"""

#: A fake executable (format with python=, calls=, name=) that only records its arguments.
FAKE_RECORDER = """#!{python}
import pathlib, sys
with pathlib.Path({calls!r}).open("a") as fh:
    fh.write({name!r} + " " + " ".join(sys.argv[1:]) + "\\n")
"""


class Clock:
    """A clock the test moves: `clock()` is the current instant, `clock.set(t)` moves it."""

    def __init__(self, t: datetime) -> None:
        self.t = t

    def __call__(self) -> datetime:
        return self.t

    def set(self, t: datetime) -> None:
        self.t = t


@contextlib.contextmanager
def held_by_another_thread(path: Path, *, owner: str) -> Iterator[None]:
    """`path`'s AgentLock held by another thread (another run, or a daemon) for the with-block."""
    from reverie.schedules.lock import AgentLock

    holding, release = threading.Event(), threading.Event()

    def hold():
        with AgentLock(path, owner=owner):
            holding.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    holding.wait(30)
    try:
        yield
    finally:
        release.set()
        t.join()


def make_agent(home: Path, agent: str, conversations: dict[str, list[tuple[str, str]]]) -> Path:
    """An agent db holding the given conversations ((role, text) turns) as the indexer stores them;
    conversation n is on day n of October 2026."""
    from reverie.consolidate.store import open_db

    path = home / "agents" / agent / "agent.db"
    db = open_db(path)
    for n, (conv, turns) in enumerate(conversations.items()):
        day = f"2026-10-{n + 1:02d}"
        db.conn.execute("INSERT INTO conversations(id, cwd, first_at, last_at) VALUES (?,?,?,?)",
                        (conv, "/w", f"{day}T09:00:00Z", f"{day}T10:00:00Z"))
        for i, (role, text) in enumerate(turns):
            mid = db.conn.execute(
                "INSERT INTO messages(conversation, uuid, role, kind, timestamp) VALUES (?,?,?,?,?)",
                (conv, f"{conv}-{i}", role, "message", f"{day}T09:{i:02d}:00Z")).lastrowid
            db.conn.execute("INSERT INTO blocks(message_id, idx, type, text) VALUES (?,?,?,?)", (mid, 0, "text", text))
    db.conn.commit()
    db.close()
    return path


#: A fake `claude` (format with python=, log=, mode=, cards=, login=, helper=) that behaves like the
#: real 2.1 binary where reverie depends on it, as measured against it: `auth status --json` prints
#: {"loggedIn", "authMethod", "apiKeySource"} (exit 1 when not logged in); the credential is
#: ANTHROPIC_API_KEY from the environment, else the `apiKeyHelper` of the user's settings (`helper`),
#: else the Claude login (`login`), where a `--settings` value of "" for `env.ANTHROPIC_API_KEY` or
#: `apiKeyHelper` switches that one off; a `-p` call without a credential prints the CLI's
#: "Not logged in" result and exits 1. Every call appends {argv, cwd, env (CLAUDE_*, MAX_*, ENABLE_*,
#: ANTHROPIC_*, REVERIE_* names: values of credentials masked), stdin, credential} to `log`.
FAKE_CLAUDE = r'''#!{python}
import json, os, sys
argv = sys.argv[1:]
cards = json.loads({cards!r})
settings = json.loads(argv[argv.index("--settings") + 1]) if "--settings" in argv else {{}}
key = os.environ.get("ANTHROPIC_API_KEY") or ""
if (settings.get("env") or {{}}).get("ANTHROPIC_API_KEY") == "":
    key = ""
helper = {helper!r} and settings.get("apiKeyHelper") != ""
if key:
    status = {{"loggedIn": True, "authMethod": "api_key", "apiProvider": "firstParty", "apiKeySource": "ANTHROPIC_API_KEY"}}
elif helper:
    status = {{"loggedIn": True, "authMethod": "api_key_helper", "apiProvider": "firstParty", "apiKeySource": "apiKeyHelper"}}
elif {login!r}:
    status = {{"loggedIn": True, "authMethod": "claude.ai", "apiProvider": "firstParty", "email": "dev@example.com",
              "orgId": None, "orgName": None, "subscriptionType": "max"}}
else:
    status = {{"loggedIn": False, "authMethod": "none", "apiProvider": "firstParty"}}
stdin = "" if "auth" in argv else sys.stdin.read()
names = ("CLAUDE_", "MAX_", "ANTHROPIC_", "REVERIE_", "ENABLE_")
env = {{k: ("(set)" if k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN") else v)
       for k, v in os.environ.items() if k.startswith(names) and k not in ("REVERIE_HOME", "REVERIE_CACHE_DIR", "CLAUDE_CONFIG_DIR", "REVERIE_WHEEL", "REVERIE_WHEEL_VENV")}}
with open({log!r}, "a") as fh:
    fh.write(json.dumps({{"argv": argv, "cwd": os.getcwd(), "env": env, "stdin": stdin,
                         "credential": status["authMethod"]}}) + "\n")
if "auth" in argv and "status" in argv:
    print(json.dumps(status, indent=2))
    sys.exit(0 if status["loggedIn"] else 1)
if not status["loggedIn"]:
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": True, "result": "Not logged in · Please run /login",
                      "total_cost_usd": 0, "usage": {{"input_tokens": 0, "output_tokens": 0}}}}))
    sys.exit(1)
mode = {mode!r}
if mode == "structured":
    out = {{"type": "result", "subtype": "success", "is_error": False, "result": "", "num_turns": 2,
           "structured_output": cards, "session_id": "s", "total_cost_usd": 0.0021,
           "usage": {{"input_tokens": 900, "output_tokens": 80}}}}
elif mode == "result_text":
    out = {{"type": "result", "subtype": "success", "is_error": False,
           "result": "```json\n" + json.dumps(cards) + "\n```", "total_cost_usd": 0.002, "usage": {{}}}}
elif mode == "schema_retries":
    out = {{"type": "result", "subtype": "error_max_structured_output_retries", "is_error": True, "result": ""}}
elif mode == "garbage":
    print("this is not json"); sys.exit(0)
elif mode == "overloaded":
    sys.stderr.write("API Error: 529 Overloaded\n"); sys.exit(1)
print(json.dumps(out))
'''

#: The cards FAKE_CLAUDE's "structured" mode answers with.
FAKE_CLAUDE_CARDS = {"cards": [{"statement": "Use pnpm, not npm, for every install in this repo.", "category": "preference",
                                "importance": 4, "entities": [{"name": "pnpm", "type": "tool"}, {"name": "npm", "type": "tool"}],
                                "relations": [], "evidence": ["P1"], "quote": "always use pnpm instead of npm"}]}


def install_fake_claude(bindir: Path, log: Path, *, mode: str = "structured", login: bool = True,
                        helper: bool = False) -> Path:
    """Write FAKE_CLAUDE as `bindir/claude` (executable); put `bindir` on PATH yourself."""
    import json
    import stat
    import sys

    bindir.mkdir(parents=True, exist_ok=True)
    exe = bindir / "claude"
    exe.write_text(FAKE_CLAUDE.format(python=sys.executable, log=str(log), mode=mode, login=login, helper=helper,
                                      cards=json.dumps(FAKE_CLAUDE_CARDS)))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return exe
