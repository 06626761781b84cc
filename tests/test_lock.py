"""schedules.lock.AgentLock: really two processes, a stale lock left by SIGKILL, both backends."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from reverie.schedules import lock as lockmod
from reverie.schedules.lock import AgentLock, Busy, LockInfo, read_holder

ROOT = Path(__file__).resolve().parent.parent

HELPER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, sys.argv[4])
    from reverie.schedules import lock as lockmod
    lockmod._BACKEND = sys.argv[2]
    path, mode = sys.argv[1], sys.argv[3]
    try:
        lk = lockmod.AgentLock(path, owner="helper " + mode).acquire()
    except lockmod.Busy as busy:
        print("BUSY", busy.pid, busy.started_at is not None, flush=True)
        sys.exit(3)
    if mode == "try":
        lk.release()
        print("OK", flush=True)
        sys.exit(0)
    print("LOCKED", flush=True)
    sys.stdin.read()          # hold until the parent closes our stdin (or kills us)
    lk.release()
    print("RELEASED", flush=True)
    """
)

BACKENDS = ["flock", "excl"] if lockmod.fcntl is not None else ["excl"]


@pytest.fixture
def helper(tmp_path):
    script = tmp_path / "lock_helper.py"
    script.write_text(HELPER)
    return script


@pytest.fixture
def backend(request, monkeypatch):
    monkeypatch.setattr(lockmod, "_BACKEND", request.param)
    return request.param


def _hold(helper: Path, path: Path, backend: str) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, str(helper), str(path), backend, "hold", str(ROOT)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline().strip()
    assert line == "LOCKED", line
    return proc


def _try(helper: Path, path: Path, backend: str) -> tuple[int, str]:
    out = subprocess.run(
        [sys.executable, str(helper), str(path), backend, "try", str(ROOT)],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    return out.returncode, out.stdout.strip()


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_second_process_is_refused_until_the_first_releases(tmp_path, helper, backend):
    path = tmp_path / "agents" / "a1" / "lock"
    holder = _hold(helper, path, backend)
    try:
        assert _try(helper, path, backend) == (3, f"BUSY {holder.pid} True")
        # This process is refused too, and told who holds it.
        with pytest.raises(Busy) as exc:
            AgentLock(path).acquire()
        assert exc.value.pid == holder.pid
        assert exc.value.holder.owner == "helper hold"
        assert exc.value.holder.hostname == socket.gethostname()
        assert f"pid {holder.pid}" in str(exc.value) and str(path) in str(exc.value)
        assert read_holder(path).pid == holder.pid
    finally:
        holder.stdin.close()
        assert holder.stdout.readline().strip() == "RELEASED"
        assert holder.wait(timeout=30) == 0
    assert read_holder(path) is None
    assert _try(helper, path, backend) == (0, "OK")


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_stale_lock_of_a_killed_process_is_recovered(tmp_path, helper, backend):
    path = tmp_path / "agents" / "a1" / "lock"
    holder = _hold(helper, path, backend)
    os.kill(holder.pid, signal.SIGKILL)
    assert holder.wait(timeout=30) == -signal.SIGKILL
    # The dead holder's note is still on disk, but nobody holds the lock.
    assert json.loads(path.read_text())["pid"] == holder.pid
    assert read_holder(path) is None
    assert _try(helper, path, backend) == (0, "OK")
    with AgentLock(path, owner="test") as lk:
        assert lk.held
        note = json.loads(path.read_text())
        assert {k: note[k] for k in ("pid", "hostname", "owner")} == {
            "pid": os.getpid(), "hostname": socket.gethostname(), "owner": "test"}
        assert _try(helper, path, backend) == (3, f"BUSY {os.getpid()} True")
    assert _try(helper, path, backend) == (0, "OK")


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_reentrant_in_one_thread_busy_for_another_thread(tmp_path, backend):
    path = tmp_path / "lock"
    outer = AgentLock(path, owner="outer")
    with outer:
        with AgentLock(path, owner="inner"):  # e.g. the pipeline under `consolidate --now`
            pass
        assert read_holder(path).owner == "outer"  # inner release did not drop the lock
        seen: list = []

        def other():
            try:
                AgentLock(path).acquire()
                seen.append("acquired")
            except Busy as busy:
                seen.append(busy.pid)

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert seen == [os.getpid()]
    assert read_holder(path) is None
    with AgentLock(path):  # free again
        pass


def test_flock_release_empties_the_note_and_keeps_the_file(tmp_path):
    if lockmod.fcntl is None:
        pytest.skip("flock backend needs fcntl")
    path = tmp_path / "lock"
    with AgentLock(path):
        assert path.stat().st_mode & 0o777 == 0o600
    assert path.exists() and path.read_text() == ""


def test_excl_foreign_host_is_never_taken_over(tmp_path, monkeypatch):
    monkeypatch.setattr(lockmod, "_BACKEND", "excl")
    path = tmp_path / "lock"
    path.write_text(json.dumps({"pid": 1, "hostname": "elsewhere.example", "started_at": "2026-01-01T02:00:00Z",
                                "owner": "schedule nightly", "token": "t"}))
    with pytest.raises(Busy) as exc:
        AgentLock(path).acquire()
    assert exc.value.holder == LockInfo(pid=1, hostname="elsewhere.example", started_at="2026-01-01T02:00:00Z",
                                        owner="schedule nightly", token="t")
    assert str(exc.value) == (
        f"{path} is held by pid 1 on elsewhere.example since 2026-01-01T02:00:00Z (schedule nightly): "
        f"wait for it to finish or stop process 1; if nothing runs on elsewhere.example any more, delete {path}."
    )


def test_release_without_acquire_is_an_error(tmp_path):
    with pytest.raises(RuntimeError):
        AgentLock(tmp_path / "lock").release()
