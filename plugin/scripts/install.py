"""Install reverie into the plugin's data folder, in the background, once.

`python3 install.py start` (what scripts/reverie.sh runs at SessionStart when no reverie exists)
decides in a few milliseconds and returns: when nothing is installed, no other install is running
(lock `install.lock`) and no install failed in the last `RETRY_AFTER_S`, it starts `install.py run`
detached (its own session, no terminal, stdio away from the hook's pipes) and exits 0. `run`
creates `${CLAUDE_PLUGIN_DATA}/venv` with `uv` when it is on PATH, else `python3 -m venv` + pip,
installs reverie into it, checks `venv/bin/reverie --version`, and only then writes
`venv/.reverie-installed` (the marker scripts/reverie.sh looks for). Every step and the outcome go
to `${CLAUDE_PLUGIN_DATA}/install.log`.

Where from (`find_source`): `$REVERIE_PLUGIN_SOURCE` when set (a path or a pip requirement);
else the reverie checkout this plugin came from: the folder above the plugin when it is one (the
plugin run from a checkout with `--plugin-dir`), else the install location of the marketplace it was
installed from (`<plugins>/known_marketplaces.json`; Claude Code copies a plugin into
`<plugins>/cache/<marketplace>/<plugin>/<version>/`, and this repository's marketplace is the
whole repository); else the package `reverie==<plugin version>` from PyPI.

Invariants: standard library only, any Python 3; `start` never raises, never prints and never
waits for the install; at most one install runs per data folder; a failed install leaves no
marker (so nothing half-installed is ever used) and says why in the log.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time

LOCK = "install.lock"
LOG = "install.log"
FAILED = "install-failed.json"
MARKER = ".reverie-installed"
#: A lock older than this is taken to belong to a killed install.
LOCK_STALE_S = 30 * 60
#: A lock younger than this is always respected (whatever its pid).
LOCK_YOUNG_S = 60
#: After a failed install, sessions starting within this many seconds do not try again.
RETRY_AFTER_S = 10 * 60
#: The most one install command may take.
STEP_TIMEOUT_S = 20 * 60
MIN_PYTHON = (3, 11)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


_USERINFO = re.compile(r"(//)[^/@\s]+@")


def masked(text: str) -> str:
    """`text` with the userinfo of every URL in it masked: `$REVERIE_PLUGIN_SOURCE` may be a pip
    requirement such as `git+https://<token>@host/repo`, which must reach no file."""
    return _USERINFO.sub(r"\1***@", text)


def _append(data: str, text: str) -> None:
    """`text` at the end of the install log, masked (the log must never hold a source's token)."""
    try:
        with open(os.path.join(data, LOG), "a", encoding="utf-8") as fh:
            fh.write(masked(text))
    except OSError:
        pass


def log(data: str, message: str) -> None:
    _append(data, f"{_now()} {message}\n")


def venv_exe(data: str, name: str) -> str:
    return os.path.join(data, "venv", "bin", name)


def installed(data: str) -> bool:
    return os.path.isfile(os.path.join(data, "venv", MARKER)) and os.access(venv_exe(data, "reverie"), os.X_OK)


# -- where from ---------------------------------------------------------------------------------

def is_reverie_checkout(folder: str) -> bool:
    try:
        with open(os.path.join(folder, "pyproject.toml"), encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return False
    return re.search(r'(?m)^\[project\]\s*$(?:(?!^\[)[\s\S])*?^name\s*=\s*"reverie"\s*$', text) is not None


def plugin_version(plugin_root: str) -> str | None:
    try:
        with open(os.path.join(plugin_root, ".claude-plugin", "plugin.json"), encoding="utf-8") as fh:
            version = json.load(fh).get("version")
        return version if isinstance(version, str) and re.match(r"^[0-9][0-9A-Za-z.+-]*$", version) else None
    except (OSError, ValueError, AttributeError):
        return None


def marketplace_location(plugin_root: str) -> str | None:
    """The install location of the marketplace a cached plugin copy came from, or None."""
    root = os.path.realpath(plugin_root)
    version_dir, plugin_dir = root, os.path.dirname(root)
    market_dir = os.path.dirname(plugin_dir)
    cache_dir = os.path.dirname(market_dir)
    if os.path.basename(cache_dir) != "cache" or not version_dir:
        return None
    known = os.path.join(os.path.dirname(cache_dir), "known_marketplaces.json")
    try:
        with open(known, encoding="utf-8") as fh:
            entry = json.load(fh).get(os.path.basename(market_dir)) or {}
    except (OSError, ValueError, AttributeError):
        return None
    location = entry.get("installLocation") if isinstance(entry, dict) else None
    return location if isinstance(location, str) and location else None


def find_source(plugin_root: str) -> tuple[str, str]:
    """(what pip installs, where it comes from: "env" | "checkout" | "marketplace" | "pypi")."""
    override = os.environ.get("REVERIE_PLUGIN_SOURCE")
    if override:
        return override, "env"
    parent = os.path.dirname(os.path.realpath(plugin_root))
    if is_reverie_checkout(parent):
        return parent, "checkout"
    location = marketplace_location(plugin_root)
    if location and is_reverie_checkout(location):
        return location, "marketplace"
    version = plugin_version(plugin_root)
    return (f"reverie=={version}" if version else "reverie"), "pypi"


def find_python() -> str | None:
    """An interpreter new enough for reverie: this one, else python3.N on PATH."""
    if sys.version_info[:2] >= MIN_PYTHON:
        return sys.executable
    for minor in range(20, MIN_PYTHON[1] - 1, -1):
        exe = shutil.which(f"python3.{minor}")
        if exe:
            return exe
    return None


# -- start (the hook) ---------------------------------------------------------------------------

def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _lock_is_stale(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            held = json.load(fh)
        pid, started = int(held["pid"]), float(held["started"])
    except (OSError, ValueError, KeyError, TypeError):
        try:   # unreadable: stale once it is old (a writer may be between create and write)
            return time.time() - os.stat(path).st_mtime > 5
        except OSError:
            return True
    age = time.time() - started
    if age < LOCK_YOUNG_S:   # being handed from `start` to `run`: its pid may have just exited
        return False
    return age > LOCK_STALE_S or not _pid_alive(pid)


def _take_lock(data: str) -> bool:
    path = os.path.join(data, LOCK)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except FileExistsError:
            if not _lock_is_stale(path):
                return False
            log(data, "removing a stale install lock")
            try:
                os.unlink(path)
            except OSError:
                return False
            continue
        with os.fdopen(fd, "w") as fh:
            json.dump({"pid": os.getpid(), "started": time.time()}, fh)
        return True
    return False


def _write_lock(data: str, pid: int) -> None:
    tmp = os.path.join(data, f"{LOCK}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"pid": pid, "started": time.time()}, fh)
    os.replace(tmp, os.path.join(data, LOCK))


def _recently_failed(data: str) -> bool:
    try:
        with open(os.path.join(data, FAILED), encoding="utf-8") as fh:
            return time.time() - float(json.load(fh)["at"]) < RETRY_AFTER_S
    except (OSError, ValueError, KeyError, TypeError):
        return False


def start(data: str, plugin_root: str) -> int:
    if installed(data) or _recently_failed(data):
        return 0
    os.makedirs(data, exist_ok=True)
    if not _take_lock(data):
        return 0
    try:
        # the child logs what it does itself, masked (`log`): its raw output could hold the token
        child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "run"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 close_fds=True, start_new_session=True, cwd=data,
                                 env={**os.environ, "CLAUDE_PLUGIN_DATA": data, "CLAUDE_PLUGIN_ROOT": plugin_root})
        log(data, f"background install started (pid {child.pid})")
    except Exception as exc:  # noqa: BLE001  (fail open: the next session tries again)
        log(data, f"could not start the background install: {type(exc).__name__}: {exc}")
        try:
            os.unlink(os.path.join(data, LOCK))
        except OSError:
            pass
    return 0


# -- run (detached) -----------------------------------------------------------------------------

def record_failure(data: str, exc: BaseException) -> None:
    """The marker that holds retries back for `RETRY_AFTER_S`, with the reason masked (a timed-out
    step's message holds its whole command line, the source URL included)."""
    try:
        with open(os.path.join(data, FAILED), "w", encoding="utf-8") as fh:
            json.dump({"at": time.time(), "reason": masked(f"{type(exc).__name__}: {exc}")}, fh)
    except OSError:
        pass


def _step(data: str, argv: list[str]) -> None:
    """Run one install step; its output goes to the log masked, like every line written there."""
    log(data, "$ " + " ".join(argv))
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=STEP_TIMEOUT_S, cwd=data, text=True, errors="replace")
    except subprocess.TimeoutExpired as exc:   # what the hung step said before it was stopped
        out = exc.output
        _append(data, out.decode("utf-8", "replace") if isinstance(out, bytes) else out or "")
        raise
    _append(data, done.stdout or "")
    if done.returncode != 0:
        raise RuntimeError(f"`{os.path.basename(argv[0])} {' '.join(argv[1:3])} ...` exited {done.returncode}")


def run(data: str, plugin_root: str) -> int:
    started = time.monotonic()
    venv = os.path.join(data, "venv")
    try:
        _write_lock(data, os.getpid())   # held by this process until it ends (a failure to write it is logged)
        source, origin = find_source(plugin_root)
        uv = shutil.which("uv")
        python = find_python()
        log(data, f"installing reverie from {source} ({origin}; plugin at {plugin_root}) with "
                  f"{'uv' if uv else 'venv + pip'} into {venv}")
        shutil.rmtree(venv, ignore_errors=True)   # never on top of a half-finished install
        if uv:
            _step(data, [uv, "venv", "--quiet", "--python", python or ">=3.11", venv])
            _step(data, [uv, "pip", "install", "--quiet", "--python", venv_exe(data, "python"), source])
        else:
            if python is None:
                raise RuntimeError("reverie needs Python 3.11 or newer and none was found (python3.11+ on PATH), "
                                   "and uv is not installed")
            _step(data, [python, "-m", "venv", venv])
            _step(data, [venv_exe(data, "python"), "-m", "pip", "install", "--quiet",
                         "--disable-pip-version-check", source])
        check = subprocess.run([venv_exe(data, "reverie"), "--version"], capture_output=True, text=True,
                               timeout=120, stdin=subprocess.DEVNULL)
        if check.returncode != 0:
            raise RuntimeError(f"`reverie --version` exited {check.returncode}: {check.stderr.strip()[-500:]}")
        with open(os.path.join(venv, MARKER), "w", encoding="utf-8") as fh:
            json.dump({"at": _now(), "source": masked(source), "origin": origin, "version": check.stdout.strip()}, fh)
        try:
            os.unlink(os.path.join(data, FAILED))
        except OSError:
            pass
        log(data, f"installed {check.stdout.strip()} in {time.monotonic() - started:.1f} s; "
                  f"the next session uses {venv_exe(data, 'reverie')}")
        return 0
    except Exception as exc:  # noqa: BLE001  (every failure is logged; the hooks stay silent)
        shutil.rmtree(venv, ignore_errors=True)
        log(data, f"install FAILED after {time.monotonic() - started:.1f} s: {type(exc).__name__}: {exc}; "
                  f"retried by a session starting after {RETRY_AFTER_S // 60} minutes "
                  f"(or install it yourself: see the reverie README)")
        record_failure(data, exc)
        return 1
    finally:
        try:
            os.unlink(os.path.join(data, LOCK))
        except OSError:
            pass


def main(argv: list[str]) -> int:
    data = os.environ.get("CLAUDE_PLUGIN_DATA") or ""
    plugin_root = os.environ.get("CLAUDE_PLUGIN_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not data or not argv:
        return 0
    if argv[0] == "start":
        try:
            return start(data, plugin_root)
        except Exception:  # noqa: BLE001  (the hook fails open)
            return 0
    if argv[0] == "run":
        return run(data, plugin_root)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
