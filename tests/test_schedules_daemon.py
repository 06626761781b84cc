"""`reverie schedule run` as a real process: it starts, says it is ready, refuses a second daemon,
and stops cleanly on SIGTERM/SIGINT (exit 0, a clean-shutdown log line, lock released)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reverie.schedules.daemon import READY, STOPPED
from reverie.schedules.lock import read_holder

DEADLINE_S = 60  # generous: a loaded CI machine; never asserted as a speed


def _env(home: Path) -> dict:
    """A tmp HOME and an empty PATH: nothing the children do can reach the user's real crontab,
    LaunchAgents or systemd folder (`status` looks for installed units)."""
    return {**os.environ, "REVERIE_HOME": str(home), "HOME": str(home.parent / "user-home"), "PATH": ""}


def _start(home: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "reverie.consolidate", "--home", str(home), "schedule", "run"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(home),
    )


def _wait_for(log: Path, text: str, proc: subprocess.Popen) -> str:
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        content = log.read_text() if log.exists() else ""
        if text in content:
            return content
        if proc.poll() is not None:
            pytest.fail(f"daemon exited {proc.returncode} before {text!r}:\n{proc.stdout.read()}")
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"no {text!r} in {log} within {DEADLINE_S}s:\n{log.read_text() if log.exists() else ''}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_daemon_starts_and_stops_cleanly(tmp_path, sig):
    home = tmp_path / "home"
    log = home / "logs" / "schedule.log"
    proc = _start(home)
    try:
        _wait_for(log, READY, proc)
        holder = read_holder(home / "schedules" / "scheduler.lock")
        assert (holder.pid, holder.owner) == (proc.pid, "schedule run")

        second = subprocess.run(
            [sys.executable, "-m", "reverie.consolidate", "--home", str(home), "schedule", "run"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=DEADLINE_S, env=_env(home),
        )
        assert second.returncode == 1
        assert second.stderr.startswith("Error: A scheduler is already running for this home: ")
        assert f"held by pid {proc.pid} " in second.stderr

        status = subprocess.run(
            [sys.executable, "-m", "reverie.consolidate", "--home", str(home), "schedule", "status", "--json"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=DEADLINE_S, env=_env(home),
        )
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["installed"] == []
        assert json.loads(status.stdout)["scheduler"] == {"running": True, "pid": proc.pid, "owner": "schedule run",
                                                          "since": holder.started_at}
        proc.send_signal(sig)
        assert proc.wait(timeout=DEADLINE_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lines = log.read_text().splitlines()
    assert lines[-1].endswith(f"INFO reverie.schedules.daemon: {STOPPED} ({sig.name})")
    assert any(line.endswith(f"INFO reverie.schedules.daemon: received {sig.name}, stopping") for line in lines)
    assert not [line for line in lines if " ERROR " in line and "Traceback" in line]
    assert read_holder(home / "schedules" / "scheduler.lock") is None
    out = proc.stdout.read()
    assert f"{STOPPED} ({sig.name})" in out  # the same lines go to stderr for supervisors (journald, launchd)


def test_stopping_waits_for_the_running_consolidation(tmp_path, caplog):
    """In-process: the window pass starts a (blocked) consolidation; a stop request ends the
    scheduler but the daemon returns only after that run finished and was recorded."""
    import logging
    import threading
    from datetime import datetime, timezone

    from reverie.schedules.daemon import run_daemon
    from reverie.schedules.policy import config_from_settings
    from reverie.schedules.runner import AgentSpec, Jobs, RunOutcome, Runner
    from reverie.schedules.state import StateStore

    started, release = threading.Event(), threading.Event()

    def consolidate(agent, trigger):
        started.set()
        release.wait(DEADLINE_S)
        return RunOutcome(progress=True, backlog=False, result="1 card from 3 passages in 1 conversation")

    jobs = Jobs(list_agents=lambda: [AgentSpec("api", tmp_path / "agents" / "api")], index_all=lambda: "nothing new",
                consolidate=consolidate)
    runner = Runner(jobs, load_config=lambda: config_from_settings({"timezone": "UTC"}),
                    state=StateStore(tmp_path / "state.json"), scheduler_lock=tmp_path / "scheduler.lock",
                    now=lambda: datetime(2026, 6, 10, 2, 0, tzinfo=timezone.utc))  # inside the window
    caplog.set_level(logging.INFO)
    result: list[int] = []
    daemon = threading.Thread(target=lambda: result.append(run_daemon(runner, install_signals=False)))
    daemon.start()
    try:
        assert started.wait(DEADLINE_S), "the window pass never started the nightly run"
        runner.stop.set()
        end = time.monotonic() + DEADLINE_S
        while "waiting for the running job to finish" not in caplog.text and time.monotonic() < end:
            time.sleep(0.05)
        assert "waiting for the running job to finish" in caplog.text
        assert daemon.is_alive() and result == []  # still waiting for the run
    finally:
        release.set()
        daemon.join(DEADLINE_S)
    assert result == [0]
    st = runner.state.agent_states()["api"]
    assert (st.last_trigger, st.last_result, st.last_progress) == ("nightly", "1 card from 3 passages in 1 conversation",
                                                                   True)
    messages = [r.getMessage() for r in caplog.records
                if r.name == "reverie.schedules.daemon" and r.getMessage().startswith(("waiting", "scheduler stopped"))]
    assert messages == ["waiting for the running job to finish (signal again to exit at once)",
                             f"{STOPPED} (stop requested)"]
