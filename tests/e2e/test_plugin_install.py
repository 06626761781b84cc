"""The plugin installs itself inside the real Claude Code: `claude plugin validate` passes for the
repository's marketplace and the plugin; the repository is added as a marketplace and the plugin
installed from it; a session with no `reverie` on PATH starts the background install (pip from
the marketplace checkout, dependencies from the package registry) without waiting for it; the next
session's hooks inject memory through that install.

The pip cache is kept under the e2e cache dir ($REVERIE_E2E_CACHE/pip), so only the first run
downloads the dependencies.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from harness import ASK, MEMORY_MARKER, injected, memory_lines, seed_memory

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_S = 900


def _cache_root() -> Path:   # as conftest.py's: the e2e cache dir
    return Path(os.environ.get("REVERIE_E2E_CACHE") or Path.home() / ".cache" / "reverie-e2e")


def _claude(cc, *args: str, env: dict | None = None):
    run = cc.run([str(cc.claude_exe), *args], env=env, timeout=120)
    assert run.returncode == 0, f"claude {' '.join(args)}: {run.stdout[-2000:]} {run.stderr[-2000:]}"
    return run


def test_plugin_validates_installs_from_the_repo_marketplace_and_installs_reverie(cc, record_measure):
    for target in (ROOT, ROOT / "plugin"):
        validated = _claude(cc, "plugin", "validate", str(target))
        assert "Validation passed" in validated.stdout + validated.stderr, validated.stdout
    seeded = seed_memory(cc)          # memory for this project, built with the suite's own reverie

    _claude(cc, "plugin", "marketplace", "add", str(ROOT))
    _claude(cc, "plugin", "install", "reverie@reverie")
    installed = json.loads((cc.config_dir / "plugins" / "installed_plugins.json").read_text())
    (entry,) = installed["plugins"]["reverie@reverie"]
    copy = Path(entry["installPath"])
    assert (copy / "scripts" / "install.py").exists() and not (copy.parent / "pyproject.toml").exists()

    # A machine without reverie: PATH has claude and the system only.
    path = os.pathsep.join([str(cc.claude_exe.parent), "/usr/local/bin", "/usr/bin", "/bin"])
    assert shutil.which("reverie", path=path) is None and shutil.which("python3", path=path)
    # The package registry is the one host besides the fake that may be reached (pip and uv honour
    # NO_PROXY; Claude Code's other traffic still meets the refusing fake proxy).
    registry = "pypi.org,files.pythonhosted.org"
    env = {"PATH": path, "PIP_CACHE_DIR": str(_cache_root() / "pip"), "UV_CACHE_DIR": str(_cache_root() / "uv"),
           "NO_PROXY": f"127.0.0.1,{registry}", "no_proxy": f"127.0.0.1,{registry}"}
    first = cc.claude("hello", env=env)
    logs = list((cc.config_dir / "plugins").rglob("install.log"))
    assert len(logs) == 1, logs
    data = logs[0].parent
    marker = data / "venv" / ".reverie-installed"
    assert not marker.exists()        # the session ended while the install was still running
    assert "background install started (pid " in logs[0].read_text()

    started = time.monotonic()
    while not marker.exists():
        text = logs[0].read_text()
        assert "install FAILED" not in text, text[-4000:]
        assert time.monotonic() - started < INSTALL_TIMEOUT_S, text[-4000:]
        time.sleep(1)
    waited = time.monotonic() - started
    while (data / "install.lock").exists():
        time.sleep(0.1)
    done = json.loads(marker.read_text())
    # From this checkout: Claude Code runs a directory marketplace's plugin from its source folder
    # (CLAUDE_PLUGIN_ROOT = <repo>/plugin: "checkout"); a git marketplace's from a cached copy, found
    # through known_marketplaces.json ("marketplace"; tests/test_plugin.py covers that lookup).
    assert done["source"] == str(ROOT) and done["origin"] in ("checkout", "marketplace"), done
    assert done["version"].startswith("reverie ")
    record_measure("plugin self-install", first_session_s=round(first.seconds, 2),
                   install_after_session_s=round(waited, 1), origin=done["origin"],
                   installer="uv" if shutil.which("uv", path=path) else "venv + pip")

    # The next session: its hooks run the plugin's install (reverie is still not on PATH).
    cc.fake.reset()
    run = cc.claude(ASK, env=env)
    contexts = [c for c in injected(cc.lines(run.session_id)) if MEMORY_MARKER in c]
    assert contexts, "no memory injected by the plugin's hooks"
    # what the seeded primer holds is what the plugin's SessionStart hook injected
    taught = memory_lines(seeded["primer"]["text"])
    assert taught and set(taught) <= set(memory_lines(contexts)), (taught, contexts)
    assert any(MEMORY_MARKER in r.messages_text() for r in cc.fake.messages())
    assert "install FAILED" not in logs[0].read_text()
