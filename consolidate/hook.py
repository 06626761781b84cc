"""Claude Code hook entry: `reverie [--home DIR] hook session-start|user-prompt-submit`.

Reads the hook JSON from stdin (session_id, cwd, prompt, source, hook_event_name), finds the agent of
`cwd` (the nearest registered directory at or above it, see `agents.resolve`), runs
`graph.recall.recall` (through `recall_for_agent`, the same call `reverie recall` makes) and prints
`{"hookSpecificOutput": {"hookEventName": ..., "additionalContext": "<text>"}}`; only after that write
succeeded are the memories marked as shown to the session and the injection appended to the
agent's recall log.

Invariants:
- Fails open: on any error, empty or invalid stdin, an unknown cwd, a switched-off agent, a missing
  database, a busy database, our own child process (`REVERIE_CHILD` set) or past its own deadline
  it prints nothing and returns 0. It never returns anything but 0 (exit 2 would block the prompt).
- Fails closed on secrets: what it prints has passed `redact.memory.SecretMemory.scrub`; when that
  check is unavailable it prints nothing.
- Imports only the standard library and light modules of ours (paths, settings, agents,
  graph.recall, graph.recall_embed, redact.memory).
- Output goes out in one write, after the deadline timer is disarmed; nothing is printed after it.
  The deadline is settings `recall.hook_deadline_s`, or $REVERIE_HOOK_DEADLINE_S (0: already past).
"""

from __future__ import annotations

import json
import os
import sys
import time

TYPE_CHECKING = False  # typing costs the hook path ~2.4 ms
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

from .paths import AGENT_DB, AGENTS_DIR, CACHE_DIR, ENV_CHILD_GUARD, RECALL_LOG, SECRETS_DIR, home_dir, in_home

EVENTS = {"session-start": ("SessionStart", "primer"), "user-prompt-submit": ("UserPromptSubmit", "prompt")}
#: Recall kind -> the Claude Code hook event its output answers.
_HOOK_NAMES = {kind: name for name, kind in EVENTS.values()}
#: Seconds a hook may take before it gives up silently (settings `recall.hook_deadline_s`); below the
#: timeouts `hook install` writes (SessionStart 10 s, UserPromptSubmit 5 s).
DEFAULT_DEADLINE_S = 2.0
#: Environment variable overriding the deadline (seconds, >= 0; tests use 0 for "already past").
ENV_HOOK_DEADLINE = "REVERIE_HOOK_DEADLINE_S"
#: Largest stdin read (a prompt with a pasted file can be long; recall reads its start only).
MAX_STDIN_BYTES = 4 * 1024 * 1024
#: The recall log is renamed to `<name>.1` (replacing an older one) when it passes this size.
RECALL_LOG_MAX_BYTES = 1_000_000
#: SessionStart sources after which the context no longer holds what we injected.
RESET_SOURCES = ("clear", "compact")


class _Deadline(Exception):
    pass


def _arm(seconds: float):
    """Raise `_Deadline` in the main thread after `seconds` (SIGALRM), or exit silently from a
    timer thread where there is no SIGALRM. Returns a function that disarms it."""
    try:
        try:
            import _signal as signal   # the C module: `signal` builds its enums at import (~0.35 ms)
        except ImportError:  # pragma: no cover  (not CPython)
            import signal

        def _fire(signum, frame):  # noqa: ARG001
            raise _Deadline()

        previous = signal.signal(signal.SIGALRM, _fire)
        signal.setitimer(signal.ITIMER_REAL, seconds)

        def disarm() -> None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

        return disarm
    except (ImportError, AttributeError, ValueError):
        import threading

        timer = threading.Timer(seconds, lambda: os._exit(0))
        timer.daemon = True
        timer.start()
        return timer.cancel


def append_recall_log(path: str | Path, entry: dict[str, Any], max_bytes: int = RECALL_LOG_MAX_BYTES) -> None:
    """Append one JSON line; first rotate `path` to `path.1` when it has reached `max_bytes`.
    Rotation and append happen under an advisory lock (where fcntl exists), so concurrent hooks
    neither interleave lines nor rotate twice."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    lock_fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            import fcntl

            fcntl.flock(lock_fd, fcntl.LOCK_EX)
        except ImportError:  # pragma: no cover  (Windows)
            pass
        try:
            if os.stat(path).st_size >= max_bytes:
                # shift .1 -> .2 first, so two rotations between consolidations lose nothing
                # (graph.lifecycle.read_recall_events follows numbered siblings by identity)
                older = path + ".1"
                if os.path.exists(older):
                    os.replace(older, path + ".2")
                os.replace(path, older)
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    finally:
        os.close(lock_fd)


def _now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class ScrubberUnavailable(Exception):
    """The remembered-secret check (redact.memory) cannot be loaded: nothing may be shown."""


class Injection:
    """What one recall would inject for an agent, not yet recorded as shown.

    `result` is `graph.recall.recall`'s result (without its pending session ids), `text` the
    injected text ('' when nothing is relevant), `output` the hook's JSON, `entry` the recall-log
    line. Invariant: the session state and the recall log change only in `record()`, which the
    caller runs after the text was delivered (the hook: after its stdout write succeeded), so a
    text that was never shown is never marked as shown.
    """

    __slots__ = ("agent", "db", "kind", "session", "result", "text", "output", "entry", "_pending", "_home")

    def __init__(self, home: str | Path, agent: str, db: str, kind: str, session: str | None,
                 result: dict[str, Any]) -> None:
        from reverie.graph.recall import recalled_ids

        self._home, self.agent, self.db, self.kind, self.session = home, agent, db, kind, session
        self._pending = result.pop("session_pending", None)
        harnesses = result.get("harnesses") or {}
        self.result = result
        self.text: str = result["text"]
        self.output = {"hookSpecificOutput": {"hookEventName": _HOOK_NAMES.get(kind, "UserPromptSubmit"),
                                              "additionalContext": self.text}}
        ids, entities = recalled_ids(result)
        self.entry = {"at": _now_iso(), "session": session, "kind": kind, "ids": ids, "entities": entities,
                      "episodes": [r["id"] for r in result.get("recent", [])],
                      "warnings": [w["id"] for w in result.get("warnings", [])]}
        # which harness (claude-code | codex | gemini) each logged card and episode came from
        of_cards, of_episodes = harnesses.get("cards", {}), harnesses.get("episodes", {})
        self.entry["harnesses"] = {
            "cards": {str(i): of_cards[str(i)] for i in ids if str(i) in of_cards},
            "episodes": {str(i): of_episodes[str(i)] for i in self.entry["episodes"] if str(i) in of_episodes}}

    def record(self, log: bool = True) -> None:
        """Mark the text as shown: the session skips these memories from now on (with a session)
        and, with `log`, one line goes to the agent's recall log. Nothing happens for an empty text."""
        if not self.text:
            return
        if self.session and self._pending is not None:
            from reverie.graph.recall_sessions import record_session

            record_session(self.db, self.session, self._pending)
            self._pending = None
        if log:
            append_recall_log(in_home(self._home, AGENTS_DIR, self.agent, RECALL_LOG), self.entry)


def recall_for_agent(home: str | Path, agent: str, kind: str, prompt: str = "", *, session: str | None = None,
                     reset_session: bool = False, settings: dict[str, Any] | None = None) -> Injection:
    """The one recall both the hook and `reverie recall` run: the agent's db (which must exist),
    budgets, embedding model and feedback half-life from settings, the remembered-secret check.
    Nothing is recorded as shown (see `Injection.record`); a reset session is forgotten at once
    (the context no longer holds what it got, whatever is shown now). Raises
    `ScrubberUnavailable` when the secret check cannot load, and on database errors."""
    from . import settings as settings_mod
    from reverie.graph.recall import Budgets, recall
    from reverie.graph.recall_sessions import record_session
    from reverie.graph.recall_embed import prompt_embedder

    settings = settings if settings is not None else settings_mod.load_settings(home)
    db = in_home(home, AGENTS_DIR, agent, AGENT_DB)
    scrub = secret_scrubber(home)
    if scrub is None:
        raise ScrubberUnavailable()
    if session and reset_session:
        record_session(db, session, None, reset_session=True)
    embedder = prompt_embedder(settings_mod.get(settings, "embedding_model"), in_home(home, CACHE_DIR))
    result = recall(db, prompt or "", session=session, kind=kind,
                    budgets=Budgets.from_settings(settings_mod.get(settings, "recall", {})),
                    embedder=embedder, scrub=scrub, agent=agent, record=False,
                    half_life_days=settings_mod.half_life_days(settings))
    return Injection(home, agent, db, kind, session, result)


def prepare_injection(event: str, data: dict[str, Any], home: str | Path, settings: dict[str, Any] | None = None,
                      ) -> Injection | None:
    """The injection for one hook call, not yet recorded, or None when nothing is to be injected
    (bad input, unknown cwd, switched-off agent, no database, nothing relevant, no secret check).
    Raises on other errors (the caller fails open)."""
    from . import agents
    from . import settings as settings_mod

    kind = EVENTS[event][1]
    if not isinstance(data, dict):
        return None
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        return None
    settings = settings if settings is not None else settings_mod.load_settings(home)
    agent = agents.resolve(cwd, settings, agents.load_registry(home))
    if not agent or agent in agents.disabled_agents(settings) or not agents.valid_agent_id(agent):
        return None
    if not os.path.isfile(in_home(home, AGENTS_DIR, agent, AGENT_DB)):
        return None
    prompt = data.get("prompt") if kind == "prompt" else ""
    if kind == "prompt" and (not isinstance(prompt, str) or not prompt.strip()):
        return None
    session = data.get("session_id") if isinstance(data.get("session_id"), str) else None
    try:
        injection = recall_for_agent(home, agent, kind, prompt or "", session=session, settings=settings,
                                     reset_session=kind == "primer" and data.get("source") in RESET_SOURCES)
    except ScrubberUnavailable:
        return None   # fail closed: nothing leaves without the remembered-secret check
    return injection if injection.text else None


def build_injection(event: str, data: dict[str, Any], home: str | Path, settings: dict[str, Any] | None = None,
                    ) -> tuple[dict[str, Any], str, dict[str, Any]] | None:
    """(hook output, agent id, recall-log entry) for a caller that shows the text right away (the
    demo): like `prepare_injection`, then recorded as shown and logged. None when nothing is to be
    injected. Raises on errors."""
    injection = prepare_injection(event, data, home, settings)
    if injection is None:
        return None
    injection.record()
    return injection.output, injection.agent, injection.entry


def secret_scrubber(home: str | Path):
    """`text -> text` with remembered secrets removed, or None when the check is unavailable."""
    try:
        from reverie.redact.memory import SecretMemory

        memory = SecretMemory(in_home(home, SECRETS_DIR), point_lookups=True)
    except Exception:  # noqa: BLE001
        return None

    def scrub(text: str) -> str:
        return memory.scrub(text)[0]

    return scrub


def hook_deadline(settings: dict[str, Any]) -> float:
    """Seconds the hook may take: $REVERIE_HOOK_DEADLINE_S when it is a number >= 0 (0: already
    past, so nothing is printed), else settings `recall.hook_deadline_s` when > 0, else
    DEFAULT_DEADLINE_S."""
    env = os.environ.get(ENV_HOOK_DEADLINE)
    if env:
        try:
            value = float(env)
        except ValueError:
            value = -1.0
        if value >= 0:
            return value
    from . import settings as settings_mod

    deadline = settings_mod.get(settings, "recall.hook_deadline_s", DEFAULT_DEADLINE_S)
    if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) or deadline <= 0:
        return DEFAULT_DEADLINE_S
    return float(deadline)


def run_hook(event: str, home: str | None) -> int:
    """Run one hook event; always returns 0 (see module invariants). What was printed is recorded
    as shown (session state, recall log) only after the write succeeded."""
    if os.environ.get(ENV_CHILD_GUARD) or event not in EVENTS:
        return 0
    started = time.monotonic()
    disarm = None
    try:
        home_path = home_dir(home)
        from . import settings as settings_mod

        settings = settings_mod.load_settings(home_path)
        deadline = hook_deadline(settings)
        if deadline > 0:
            disarm = _arm(deadline)
        raw = sys.stdin.buffer.read(MAX_STDIN_BYTES) if sys.stdin is not None else b""
        if not raw.strip():
            return 0
        data = json.loads(raw.decode("utf-8", "replace"))
        injection = prepare_injection(event, data, home_path, settings)
        if disarm is not None:
            disarm()
            disarm = None
        if injection is None or time.monotonic() - started >= deadline:
            return 0
        sys.stdout.write(json.dumps(injection.output, ensure_ascii=False))
        sys.stdout.flush()
    except BaseException:  # noqa: BLE001  (fail open, whatever happened; never exit 2)
        return 0
    finally:
        if disarm is not None:
            try:
                disarm()
            except BaseException:  # noqa: BLE001
                pass
    try:
        injection.record()
    except Exception:  # noqa: BLE001  (it was shown; a lost record only means it may be shown again)
        import logging

        logging.getLogger(__name__).debug("recording the injection failed", exc_info=True)
    return 0
