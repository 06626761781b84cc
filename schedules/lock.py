"""Per-agent run lock: at most one consolidation of an agent at a time, whoever started it.

Usage::

    from reverie.schedules.lock import LOCK_NAME, AgentLock, Busy

    try:
        with AgentLock(agent_dir / LOCK_NAME, owner="consolidate --now"):
            ...  # consolidate the agent
    except Busy as busy:
        print(busy)  # names the holder (pid, host, since when) and what to do

Invariants:
- Non-blocking: `acquire()` either takes the lock at once or raises `Busy`; it never waits.
- Safe against a stale lock: on POSIX the lock is an `fcntl.flock` on `path`; the kernel drops it
  when the holding process dies (even by SIGKILL), so a killed run never blocks the next one. The
  lock file itself is never deleted (deleting a flock'ed file lets two processes lock two different
  inodes); while held it holds one JSON line `{"pid", "hostname", "started_at", "owner"}`, emptied
  on release, which `read_holder()` and `Busy` report.
- Without `fcntl` (Windows) the lock is the existence of `path`, created with O_EXCL and holding
  the same JSON; a file left by a dead process of this host is recognised by its pid and taken
  over; a holder on another host is never taken over (its liveness cannot be checked).
- Re-entrant per thread: a thread that holds the lock may take it again (a command that locks an
  agent and then calls a pipeline that locks it too does not trip over itself); another thread of
  the same process gets `Busy`, like another process. The OS lock is released when the outermost
  holder releases.
- Standard library only.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

#: The lock file's name in an agent's folder (`<home>/agents/<id>/lock`).
LOCK_NAME = "lock"

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - exercised on Windows only
    fcntl = None  # type: ignore[assignment]

#: "flock" where fcntl exists, else "excl". Tests switch it to exercise the fallback.
_BACKEND = "flock" if fcntl is not None else "excl"

#: An unreadable/empty O_EXCL lock file older than this is considered abandoned (a writer that
#: died between creating the file and writing its pid).
_EXCL_EMPTY_GRACE_S = 30.0


@dataclass(frozen=True)
class LockInfo:
    """What a lock file says about its holder. Any field may be None when unknown."""

    pid: int | None = None
    hostname: str | None = None
    started_at: str | None = None
    owner: str | None = None
    token: str | None = None

    def describe(self) -> str:
        parts = []
        parts.append(f"pid {self.pid}" if self.pid is not None else "an unknown process")
        if self.hostname:
            parts.append(f"on {self.hostname}")
        if self.started_at:
            parts.append(f"since {self.started_at}")
        text = " ".join(parts)
        if self.owner:
            text += f" ({self.owner})"
        return text

    def as_dict(self) -> dict:
        return {"pid": self.pid, "hostname": self.hostname, "started_at": self.started_at, "owner": self.owner}


class Busy(Exception):
    """The lock is held by another live process (or another thread of this one).

    `holder` is what the lock file says (pid, hostname, started_at, owner), None when unknown.
    """

    def __init__(self, path: Path, holder: LockInfo | None = None) -> None:
        self.path = Path(path)
        self.holder = holder
        who = holder.describe() if holder else "another process"
        hint = "wait for it to finish"
        if holder and holder.pid is not None:
            hint += f" or stop process {holder.pid}"
        if _BACKEND == "excl" and holder and holder.hostname and holder.hostname != _hostname():
            hint += f"; if nothing runs on {holder.hostname} any more, delete {self.path}"
        super().__init__(f"{self.path} is held by {who}: {hint}.")

    @property
    def pid(self) -> int | None:
        return self.holder.pid if self.holder else None

    @property
    def started_at(self) -> str | None:
        return self.holder.started_at if self.holder else None


@dataclass
class _Held:
    pid: int
    thread: int
    depth: int
    fd: int | None
    info: LockInfo


_REGISTRY: dict[str, _Held] = {}
_REGISTRY_GUARD = threading.Lock()


def _hostname() -> str:
    try:
        return socket.gethostname()
    except OSError:  # pragma: no cover
        return ""


def _now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _key(path: Path) -> str:
    return os.path.realpath(os.fspath(path))


def _parse_info(raw: bytes) -> LockInfo | None:
    try:
        data = json.loads(raw.decode("utf-8").strip() or "null")
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    pid = data.get("pid")
    return LockInfo(
        pid=pid if isinstance(pid, int) else None,
        hostname=data.get("hostname") if isinstance(data.get("hostname"), str) else None,
        started_at=data.get("started_at") if isinstance(data.get("started_at"), str) else None,
        owner=data.get("owner") if isinstance(data.get("owner"), str) else None,
        token=data.get("token") if isinstance(data.get("token"), str) else None,
    )


def _encode_info(info: LockInfo) -> bytes:
    data = {"pid": info.pid, "hostname": info.hostname, "started_at": info.started_at,
            "owner": info.owner, "token": info.token}
    return (json.dumps(data) + "\n").encode("utf-8")


def _read_path(path: Path) -> LockInfo | None:
    try:
        return _parse_info(Path(path).read_bytes())
    except OSError:
        return None


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (True when it cannot be told)."""
    if pid <= 0:
        return False
    if os.name == "nt":  # pragma: no cover - Windows only
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return ctypes.GetLastError() == 5  # access denied: it exists
        try:
            code = ctypes.c_ulong()
            if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
                return True
            return code.value == 259  # STILL_ACTIVE
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    return True


def read_holder(path: Path) -> LockInfo | None:
    """Who holds the lock at `path` now, as far as can be told without taking it; None if free.

    A lock file naming a dead process of this host (a stale lock) reads as free. Best effort: for
    display (`reverie schedule status`), never for deciding whether to run.
    """
    key = _key(Path(path))
    with _REGISTRY_GUARD:
        held = _REGISTRY.get(key)
        if held is not None and held.pid == os.getpid():
            return held.info
    info = _read_path(Path(path))
    if info is None or info.pid is None:
        return None
    if info.hostname in (None, "", _hostname()) and not pid_alive(info.pid):
        return None
    return info


class AgentLock:
    """Non-blocking, stale-safe, per-thread re-entrant lock on the file `path`.

    `owner` is a short label stored for status displays (e.g. "schedule nightly", "consolidate --now").
    """

    def __init__(self, path: Path, *, owner: str = "") -> None:
        self.path = Path(path)
        self.owner = owner
        self._acquired = 0

    # -- public API ---------------------------------------------------------------------------

    def acquire(self) -> "AgentLock":
        """Take the lock or raise `Busy`; returns self."""
        key = _key(self.path)
        me = threading.get_ident()
        with _REGISTRY_GUARD:
            held = _REGISTRY.get(key)
            if held is not None and held.pid != os.getpid():
                # Inherited through fork: the child does not own its parent's lock.
                _REGISTRY.pop(key, None)
                held = None
            if held is not None:
                if held.thread != me:
                    raise Busy(self.path, held.info)
                held.depth += 1
                self._acquired += 1
                return self
            info = LockInfo(pid=os.getpid(), hostname=_hostname(), started_at=_now_iso(),
                            owner=self.owner or None, token=uuid.uuid4().hex)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if _BACKEND == "flock":
                fd = self._acquire_flock(info)
            else:
                fd = None
                self._acquire_excl(info)
            _REGISTRY[key] = _Held(pid=os.getpid(), thread=me, depth=1, fd=fd, info=info)
            self._acquired += 1
        return self

    def release(self) -> None:
        """Release one level; the OS lock goes when the outermost level is released."""
        if self._acquired <= 0:
            raise RuntimeError(f"{self.path}: release() without acquire()")
        key = _key(self.path)
        with _REGISTRY_GUARD:
            self._acquired -= 1
            held = _REGISTRY.get(key)
            if held is None:
                return
            held.depth -= 1
            if held.depth > 0:
                return
            del _REGISTRY[key]
            if held.fd is not None:
                self._release_flock(held.fd)
            else:
                self._release_excl(held.info)

    @property
    def held(self) -> bool:
        return self._acquired > 0

    def __enter__(self) -> "AgentLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()

    # -- flock backend ------------------------------------------------------------------------

    def _acquire_flock(self, info: LockInfo) -> int:
        for _ in range(5):
            flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
            fd = os.open(self.path, flags, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = None
                try:
                    holder = _parse_info(os.pread(fd, 4096, 0))
                except OSError:
                    pass
                os.close(fd)
                raise Busy(self.path, holder) from None
            except BaseException:
                os.close(fd)
                raise
            # The file may have been deleted (by hand) and re-created between open and flock:
            # then we hold a lock on an orphaned inode; start over on the current file.
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, _encode_info(info), 0)
            except OSError:
                pass  # the lock is what matters; the note is for display only
            return fd
        raise OSError(f"{self.path}: lock file keeps disappearing; is something deleting it?")

    @staticmethod
    def _release_flock(fd: int) -> None:
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- O_EXCL backend (no fcntl) ------------------------------------------------------------

    def _acquire_excl(self, info: LockInfo) -> None:
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                current = _read_path(self.path)
                if not self._is_stale(current):
                    raise Busy(self.path, current) from None
                self._take_over_stale(current)
                continue
            try:
                os.write(fd, _encode_info(info))
            finally:
                os.close(fd)
            return
        raise Busy(self.path, _read_path(self.path))

    def _is_stale(self, current: LockInfo | None) -> bool:
        if current is None or current.pid is None:
            try:
                age = time.time() - os.stat(self.path).st_mtime
            except FileNotFoundError:
                return True
            return age > _EXCL_EMPTY_GRACE_S
        if current.hostname not in (None, "", _hostname()):
            return False
        return not pid_alive(current.pid)

    def _take_over_stale(self, stale: LockInfo | None) -> None:
        """Move the stale file aside atomically; put it back if it turned out to be live."""
        aside = self.path.with_name(f"{self.path.name}.stale-{uuid.uuid4().hex[:8]}")
        try:
            os.replace(self.path, aside)
        except FileNotFoundError:
            return
        moved = _read_path(aside)
        if stale is not None and moved is not None and moved.token != stale.token:
            # Someone took the lock between our read and our move: give it back.
            try:
                os.link(aside, self.path)
            except OSError:
                pass
        try:
            os.unlink(aside)
        except OSError:
            pass

    def _release_excl(self, info: LockInfo) -> None:
        current = _read_path(self.path)
        if current is not None and current.token == info.token:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
