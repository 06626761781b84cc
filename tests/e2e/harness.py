"""Running the real Claude Code CLI against the fake Messages API (`fake_api.FakeAnthropic`).

Not a test module: `conftest.py` builds these objects for the tests (see its docstring).

- `install_claude_code(version, cache_root)`: npm-installs `@anthropic-ai/claude-code@<version>`
  into `<cache_root>/claude-code-<version>` (reused when its `claude --version` answers the
  version) and returns the `claude` executable. Raises `Unavailable` (npm missing, registry
  unreachable, the binary does not run) with a message that says what to do.
- `ClaudeEnv`: one sandbox: HOME, CLAUDE_CONFIG_DIR (= HOME/.claude), a project directory, a
  REVERIE_HOME, and the environment every child gets (ANTHROPIC_BASE_URL, HTTPS_PROXY and
  HTTP_PROXY at the fake, NO_PROXY for 127.0.0.1 only, a test ANTHROPIC_API_KEY, telemetry and
  nonessential traffic off, the venv's `reverie` and the pinned `claude` first on PATH).
  `claude(...)` runs `claude -p` with a timeout; `reverie(...)` runs our CLI; `transcripts()`,
  `lines()` read what Claude Code wrote.

Invariant: a child never sees the developer's real HOME, Claude config, credentials or proxies:
its environment is built from scratch (only PATH's system part, LANG and TERM are set besides the
sandbox's own values).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fake_api import FakeAnthropic

NPM_PACKAGE = "@anthropic-ai/claude-code"
#: The test API key the children send (the fake accepts anything; it must never be a real key).
TEST_API_KEY = "sk-ant-api03-e2e-test-key-not-real-0000000000000000000000000000"
INSTALL_TIMEOUT_S = 600


class Unavailable(Exception):
    """The real CLI cannot be provided here (the message says why and what to do)."""


def _claude_version(exe: Path) -> str | None:
    try:
        proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.split()[0] if proc.returncode == 0 and proc.stdout.strip() else None


def install_claude_code(version: str, cache_root: Path) -> Path:
    """The `claude` executable of `version`, installed with npm into `<cache_root>/claude-code-<version>`
    on first use (an atomic rename of a finished install, so a killed install is never reused)."""
    target = cache_root / f"claude-code-{version}"
    exe = target / "node_modules" / ".bin" / "claude"
    if exe.exists() and _claude_version(exe) == version:
        return exe
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not on PATH: the e2e suite installs the real Claude Code with npm. Install "
                          "Node.js and npm (Debian/Ubuntu: `apt-get install npm`; .ci/run does this when it can).")
    cache_root.mkdir(parents=True, exist_ok=True)
    tmp = cache_root / f".claude-code-{version}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    cmd = [npm, "install", "--prefix", str(tmp), "--no-audit", "--no-fund", "--loglevel", "error",
           f"{NPM_PACKAGE}@{version}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Unavailable(f"`npm install {NPM_PACKAGE}@{version}` took over {INSTALL_TIMEOUT_S}s: is the npm "
                          "registry reachable from here (`npm view @anthropic-ai/claude-code version`)?") from None
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
        raise Unavailable(f"`npm install {NPM_PACKAGE}@{version}` failed (exit {proc.returncode}); the npm "
                          f"registry may be unreachable or the version unpublished:\n{tail}")
    tmp_exe = tmp / "node_modules" / ".bin" / "claude"
    if _claude_version(tmp_exe) != version:
        # npm may have skipped the package's postinstall (which puts the native binary in place): run it.
        pkg = tmp / "node_modules" / "@anthropic-ai" / "claude-code"
        node = shutil.which("node")
        if node and (pkg / "install.cjs").exists():
            subprocess.run([node, "install.cjs"], cwd=pkg, capture_output=True, timeout=300, stdin=subprocess.DEVNULL)
    got = _claude_version(tmp_exe)
    if got != version:
        shutil.rmtree(tmp, ignore_errors=True)
        raise Unavailable(f"the installed {NPM_PACKAGE}@{version} does not run here (`claude --version` "
                          f"answered {got!r}): its native binary may not exist for this platform.")
    try:
        os.replace(tmp, target)
    except OSError:   # another process finished the same install first
        shutil.rmtree(tmp, ignore_errors=True)
    return exe


@dataclass
class Run:
    """One finished child process."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def json(self) -> Any:
        """stdout as JSON (the last line that parses, for stream output)."""
        out = self.stdout.strip()
        try:
            return json.loads(out)
        except ValueError:
            for line in reversed(out.splitlines()):
                try:
                    return json.loads(line)
                except ValueError:
                    continue
        raise AssertionError(f"no JSON on stdout of {self.argv[:3]}: {out[:500]!r} / stderr {self.stderr[:500]!r}")

    @property
    def session_id(self) -> str:
        return self.json["session_id"]


@dataclass
class ClaudeEnv:
    """One sandbox for the real CLI (see the module docstring). Paths are absolute."""

    root: Path
    claude_exe: Path
    fake: FakeAnthropic
    reverie_home: Path
    home: Path = field(init=False)
    config_dir: Path = field(init=False)
    project: Path = field(init=False)
    env: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.config_dir = self.home / ".claude"
        self.project = self.root / "work" / "shop"
        for d in (self.config_dir, self.project, self.reverie_home):
            d.mkdir(parents=True, exist_ok=True)
        venv_bin = Path(sys.executable).parent
        self.env = {
            "PATH": os.pathsep.join([str(venv_bin), str(self.claude_exe.parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.config_dir),
            "REVERIE_HOME": str(self.reverie_home),
            "ANTHROPIC_BASE_URL": self.fake.url,
            "ANTHROPIC_API_KEY": TEST_API_KEY,
            "HTTPS_PROXY": self.fake.url, "HTTP_PROXY": self.fake.url,
            "https_proxy": self.fake.url, "http_proxy": self.fake.url,
            "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS": "",
            "HF_HUB_OFFLINE": "1",
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "TMPDIR": str(self.root / "tmp"),
        }
        (self.root / "tmp").mkdir(exist_ok=True)

    # -- running
    def run(self, argv: list[str], *, cwd: Path | None = None, timeout: float = 90, stdin: str | None = None,
            env: dict[str, str] | None = None) -> Run:
        started = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=str(cwd or self.project), env={**self.env, **(env or {})},
                                  input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"{argv[:4]} did not finish in {timeout}s; stderr: {exc.stderr!r}") from None
        return Run(argv, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)

    def claude(self, prompt: str | None, *args: str, cwd: Path | None = None, timeout: float = 90,
               output: str = "json", check: bool = True, env: dict[str, str] | None = None) -> Run:
        """`claude -p [prompt] --output-format <output> <args>`; `check`: exit 0 and no error result."""
        argv = [str(self.claude_exe), "-p"] + ([prompt] if prompt is not None else []) + ["--output-format", output, *args]
        run = self.run(argv, cwd=cwd, timeout=timeout, env=env)
        if check:
            assert run.returncode == 0, f"claude exited {run.returncode}: {run.stdout[-2000:]} {run.stderr[-2000:]}"
            if output == "json":
                assert run.json.get("is_error") is False, run.json
        return run

    def reverie(self, *args: str, check: bool = True, timeout: float = 180, stdin: str | None = None,
                env: dict[str, str] | None = None) -> Run:
        exe = Path(sys.executable).with_name("reverie")
        run = self.run([str(exe), *args], timeout=timeout, stdin=stdin, env=env)
        if check:
            assert run.returncode == 0, f"reverie {' '.join(args)} exited {run.returncode}: {run.stdout[-3000:]} {run.stderr[-3000:]}"
        return run

    # -- reading what Claude Code wrote
    @property
    def projects_dir(self) -> Path:
        return self.config_dir / "projects"

    @property
    def settings_file(self) -> Path:
        return self.config_dir / "settings.json"

    def transcripts(self) -> list[Path]:
        return sorted(self.projects_dir.rglob("*.jsonl")) if self.projects_dir.exists() else []

    def lines(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """Every JSON line of every transcript (of one session's main file and its sub-agents)."""
        out: list[dict[str, Any]] = []
        for path in self.transcripts():
            if session_id and session_id not in str(path):
                continue
            for raw in path.read_text(encoding="utf-8").splitlines():
                if raw.strip():
                    out.append(json.loads(raw))
        return out

    def line_count(self) -> int:
        return sum(1 for p in self.transcripts() for raw in p.read_bytes().splitlines() if raw.strip())


# -- hooks as Claude Code recorded them

#: The first line of every text our recall injects (graph.recall.MARKER).
MEMORY_MARKER = "[reverie memory]"

HOOK_TIMER = """#!/bin/sh
# hook-timer LOG EVENT COMMAND...: run COMMAND (stdin passed through; its stdout and stderr
# replayed after it ends), then append {"event", "ns", "rc", "stdout_bytes", "stderr_bytes"} to LOG.
log="$1"; event="$2"; shift 2
out=$(mktemp); err=$(mktemp)
start=$(date +%s%N)
"$@" >"$out" 2>"$err"
rc=$?
end=$(date +%s%N)
cat "$out"; cat "$err" >&2
printf '{"event":"%s","ns":%s,"rc":%s,"stdout_bytes":%s,"stderr_bytes":%s}\\n' "$event" "$((end - start))" "$rc" \\
  "$(($(wc -c <"$out")))" "$(($(wc -c <"$err")))" >> "$log"
rm -f "$out" "$err"
exit $rc
"""


def time_hooks(cc: "ClaudeEnv", baseline: bool = False) -> Path:
    """Wrap every hook command in `cc.settings_file` with a timer (`HOOK_TIMER`); returns the log
    the timer appends one line to per hook run. With `baseline`, each event also runs a timed
    `python -c pass` (event "baseline:<event>"), the floor of any Python hook at that moment."""
    timer = cc.root / "hook-timer.sh"
    timer.write_text(HOOK_TIMER)
    timer.chmod(0o755)
    log = cc.root / "hook-times.jsonl"
    settings = json.loads(cc.settings_file.read_text())
    for event, groups in settings["hooks"].items():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = f"{timer} {log} {event} {hook['command']}"
        if baseline:
            groups.append({"hooks": [{"type": "command", "timeout": 10,
                                      "command": f"{timer} {log} baseline:{event} {sys.executable} -c pass"}]})
    cc.settings_file.write_text(json.dumps(settings, indent=2))
    return log


def attachments(lines: list[dict[str, Any]], kind: str | None = None) -> list[dict[str, Any]]:
    """The `attachment` payloads of transcript lines (of one attachment type)."""
    out = [ln["attachment"] for ln in lines if ln.get("type") == "attachment" and isinstance(ln.get("attachment"), dict)]
    return [a for a in out if kind is None or a.get("type") == kind]


def our_hook_runs(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """hook_success / hook_* attachments of our hooks (their command runs `reverie ... hook`)."""
    return [a for a in attachments(lines) if str(a.get("type", "")).startswith("hook")
            and " hook " in str(a.get("command", "")) and "reverie" in str(a.get("command", ""))]


def injected(lines: list[dict[str, Any]]) -> list[str]:
    """Every additionalContext Claude Code recorded (hook_additional_context), ours and others'."""
    out: list[str] = []
    for a in attachments(lines, "hook_additional_context"):
        content = a.get("content")
        out.extend(content if isinstance(content, list) else [content])
    return [c for c in out if isinstance(c, str)]


#: A memory line of our injected text: a card "- statement [#id ...]" or an episode "- [date] ...".
MEMORY_LINE = re.compile(r"(?m)^- (?:\[\d{4}-\d\d-\d\d\] .*|.*\[#\d+[^\]\n]*\])$")


def memory_lines(texts: list[str] | str) -> list[str]:
    """The memory lines of our injected texts (or of any text, e.g. a request body), in order."""
    texts = [texts] if isinstance(texts, str) else texts
    return [m for t in texts if MEMORY_MARKER in t for m in MEMORY_LINE.findall(t)]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


# -- a teaching session and its memory

#: A user turn the offline writer turns into standing memory (a decision and a rule).
TEACH = ("We decided to use pnpm instead of npm in this repo because installs are faster. "
         "Always run the unit tests with `pnpm test -- --runInBand` before pushing.")
ASK = "How should I run the unit tests with pnpm before pushing?"


def agent_id(cc: "ClaudeEnv") -> str:
    agents = cc.reverie("agents", "--json").json
    rows = agents if isinstance(agents, list) else agents.get("agents", [])
    ids = [a["id"] for a in rows]
    assert len(ids) == 1, agents
    return ids[0]


def seed_memory(cc: "ClaudeEnv", teach: str = TEACH) -> dict[str, Any]:
    """One session that teaches `teach`, indexed and consolidated offline; returns
    {"session", "index", "consolidate", "agent", "primer"} (primer: `reverie recall --primer --json`)."""
    session = cc.claude(teach).session_id
    index = cc.reverie("index", "--json").json
    consolidate = cc.reverie("consolidate", "--now", "--all", "--writer", "offline", "--json").json
    agent = agent_id(cc)
    primer = cc.reverie("recall", "--agent", agent, "--primer", "--json").json
    return {"session": session, "index": index, "consolidate": consolidate, "agent": agent, "primer": primer}


def home_files(home: Path) -> list[Path]:
    """Every regular file under a home (databases, WAL and shm files, logs, caches)."""
    return sorted(p for p in home.rglob("*") if p.is_file())
