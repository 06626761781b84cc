"""The Claude Code plugin (plugin/) and its marketplace (.claude-plugin/marketplace.json): manifests,
the hooks without and with reverie, and the self-install (plugin/scripts/install.py) with a fake
`uv` or a fake pip on PATH: the hook returns while the install is still running, one install
however many sessions start, the outcome logged, later hooks use the install, failures fail open."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "plugin"
HOOKS = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
COMMANDS = {event: groups[0]["hooks"][0]["command"] for event, groups in HOOKS.items()}
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def _installer():
    spec = importlib.util.spec_from_file_location("plugin_install", PLUGIN / "scripts" / "install.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_marketplace_lists_the_plugin_and_the_manifests_agree():
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert (market["name"], market["owner"]["name"], [(p["name"], p["source"]) for p in market["plugins"]]) == (
        "reverie", "reverie maintainers", [("reverie", "./plugin")])
    assert (manifest["name"], manifest["version"]) == ("reverie", VERSION)   # pip installs reverie==<this> from PyPI
    assert HOOKS["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"
    assert COMMANDS == {
        "SessionStart": 'sh "${CLAUDE_PLUGIN_ROOT}/scripts/reverie.sh" hook session-start || true',
        "UserPromptSubmit": 'sh "${CLAUDE_PLUGIN_ROOT}/scripts/reverie.sh" hook user-prompt-submit || true'}
    assert [g["hooks"][0]["timeout"] for g in (HOOKS["SessionStart"][0], HOOKS["UserPromptSubmit"][0])] == [10, 5]
    skill = (PLUGIN / "skills" / "memory-search" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: memory-search\n") and "reverie search" in skill


class Sandbox:
    """A PATH without reverie (fake tools only), a plugin data folder, the real plugin root."""

    def __init__(self, tmp: Path, plugin_root: Path = PLUGIN) -> None:
        self.bin = tmp / "bin"
        self.bin.mkdir()
        (self.bin / "python3").symlink_to(sys.executable)
        self.data = tmp / "plugin-data"
        self.calls = tmp / "calls.jsonl"
        self.gate = tmp / "gate"
        self.fake_pip = tmp / "fake-pip"
        self.env = {"PATH": f"{self.bin}:/usr/bin:/bin", "HOME": str(tmp / "home"), "CLAUDE_PLUGIN_ROOT": str(plugin_root),
                    "CLAUDE_PLUGIN_DATA": str(self.data), "FAKE_CALLS": str(self.calls), "FAKE_GATE": str(self.gate)}

    def hook(self, event: str, stdin: bytes = b'{"cwd": "/x"}', **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(["/bin/sh", "-c", COMMANDS[event]], input=stdin, capture_output=True, timeout=60,
                              env={**self.env, **env})

    def fake_uv(self, *, fail: bool = False) -> None:
        """`uv venv ... DIR` makes DIR/bin/python; `uv pip install --python PY SRC` waits for the gate,
        then writes a `reverie` that echoes its arguments and stdin (or exits 1 when `fail`)."""
        script = self.bin / "uv"
        script.write_text(f"""#!{sys.executable}
import json, os, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_CALLS"], "a") as fh:
    fh.write(json.dumps(["uv"] + args) + "\\n")
if args[0] == "venv":
    os.makedirs(os.path.join(args[-1], "bin"))
    os.symlink({sys.executable!r}, os.path.join(args[-1], "bin", "python"))
elif args[:2] == ["pip", "install"]:
    while not os.path.exists(os.environ["FAKE_GATE"]):
        time.sleep(0.02)
    if {fail!r}:
        print("error: no matching distribution (fake)")
        sys.exit(1)
    exe = os.path.join(os.path.dirname(args[args.index("--python") + 1]), "reverie")
    with open(exe, "w") as fh:
        fh.write("#!/bin/sh\\n[ \\"$1\\" = --version ] && echo 'reverie {VERSION}' && exit 0\\necho \\"ran: $* $(cat)\\"\\n")
    os.chmod(exe, 0o755)
""")
        script.chmod(0o755)

    def use_fake_pip(self) -> None:
        """A `pip` package on PYTHONPATH (found before the new venv's own pip): `python -m pip install
        ... SRC` records SRC, waits for the gate, writes `<venv>/bin/reverie`."""
        pkg = self.fake_pip / "pip"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "__main__.py").write_text(f"""import json, os, sys, time
with open(os.environ["FAKE_CALLS"], "a") as fh:
    fh.write(json.dumps(["pip"] + sys.argv[1:] + [sys.prefix]) + "\\n")
while not os.path.exists(os.environ["FAKE_GATE"]):
    time.sleep(0.02)
exe = os.path.join(sys.prefix, "bin", "reverie")
with open(exe, "w") as fh:
    fh.write("#!/bin/sh\\n[ \\"$1\\" = --version ] && echo 'reverie {VERSION}' && exit 0\\necho \\"ran: $* $(cat)\\"\\n")
os.chmod(exe, 0o755)
""")
        self.env["PYTHONPATH"] = str(self.fake_pip)

    def calls_made(self) -> list[list[str]]:
        return [json.loads(x) for x in self.calls.read_text().splitlines()] if self.calls.exists() else []

    def wait_until_done(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while (self.data / "install.lock").exists() or not (self.data / "install.log").exists():
            assert time.monotonic() < deadline, (self.data / "install.log").read_text()
            time.sleep(0.05)

    def log_lines(self) -> list[str]:
        """The install log without its timestamps."""
        return [ln.split(" ", 1)[1] for ln in (self.data / "install.log").read_text().splitlines()]


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_without_reverie_or_plugin_data_the_hooks_exit_0_silently(event, tmp_path):
    box = Sandbox(tmp_path)
    del box.env["CLAUDE_PLUGIN_DATA"]
    out = box.hook(event)
    assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")
    assert not box.data.exists()


@pytest.mark.parametrize("event", ["SessionStart", "UserPromptSubmit"])
def test_reverie_on_path_is_used_and_nothing_is_installed(event, tmp_path):
    box = Sandbox(tmp_path)
    box.fake_uv()
    (box.bin / "reverie").write_text('#!/bin/sh\necho "path reverie: $* $(cat)"\n')
    (box.bin / "reverie").chmod(0o755)
    out = box.hook(event, b'{"prompt": "hi"}')
    arg = "session-start" if event == "SessionStart" else "user-prompt-submit"
    assert (out.returncode, out.stdout.decode(), out.stderr) == (0, f'path reverie: hook {arg} {{"prompt": "hi"}}\n', b"")
    assert box.calls_made() == [] and not box.data.exists()


def test_first_session_installs_with_uv_in_the_background_once_and_later_hooks_use_it(tmp_path):
    box = Sandbox(tmp_path)
    box.fake_uv()
    first = box.hook("SessionStart")
    # the hook returned while the install waits at the gate: it never waits for it
    assert (first.returncode, first.stdout, first.stderr) == (0, b"", b"")
    assert (box.data / "install.lock").exists() and not box.gate.exists()
    assert [box.hook("SessionStart").returncode for _ in range(3)] == [0, 0, 0]   # other sessions: no second install
    prompt = box.hook("UserPromptSubmit")
    assert (prompt.returncode, prompt.stdout) == (0, b"")                        # not installed yet: silent
    box.gate.touch()
    box.wait_until_done()
    venv = box.data / "venv"
    py = str(box.bin / "python3")   # the installer runs on the python3 of PATH, new enough here
    assert box.calls_made() == [["uv", "venv", "--quiet", "--python", py, str(venv)],
                                ["uv", "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(ROOT)]]
    assert box.log_lines()[:4] == [
        f"background install started (pid {box.log_lines()[0].split('pid ')[1].rstrip(')')})",
        f"installing reverie from {ROOT} (checkout; plugin at {PLUGIN}) with uv into {venv}",
        f"$ {box.bin / 'uv'} venv --quiet --python {py} {venv}",
        f"$ {box.bin / 'uv'} pip install --quiet --python {venv / 'bin' / 'python'} {ROOT}"]
    assert box.log_lines()[-1].startswith(f"installed reverie {VERSION} in ") and box.log_lines()[-1].endswith(
        f" s; the next session uses {venv / 'bin' / 'reverie'}")
    marker = json.loads((venv / ".reverie-installed").read_text())
    assert (marker["source"], marker["origin"], marker["version"]) == (str(ROOT), "checkout", f"reverie {VERSION}")
    later = box.hook("UserPromptSubmit", b'{"prompt": "deploy"}')
    assert (later.returncode, later.stdout.decode(), later.stderr) == (0, 'ran: hook user-prompt-submit {"prompt": "deploy"}\n', b"")
    assert box.hook("SessionStart").stdout.decode() == 'ran: hook session-start {"cwd": "/x"}\n'
    assert len(box.calls_made()) == 2                                            # never installed again


def test_without_uv_it_uses_python_venv_and_pip(tmp_path):
    box = Sandbox(tmp_path)
    box.use_fake_pip()
    box.gate.touch()
    assert box.hook("SessionStart").returncode == 0
    box.wait_until_done()
    venv = box.data / "venv"
    assert box.calls_made() == [["pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT), str(venv)]]
    assert box.log_lines()[2] == f"$ {box.bin / 'python3'} -m venv {venv}"
    assert (venv / "pyvenv.cfg").exists() and (venv / ".reverie-installed").exists()
    assert box.hook("UserPromptSubmit", b"{}").stdout.decode() == "ran: hook user-prompt-submit {}\n"


def test_a_failed_install_is_logged_leaves_nothing_used_and_is_not_retried_at_once(tmp_path):
    box = Sandbox(tmp_path)
    box.fake_uv(fail=True)
    box.gate.touch()
    assert box.hook("SessionStart").returncode == 0
    box.wait_until_done()
    assert not (box.data / "venv").exists()
    last = box.log_lines()[-1]
    assert last.startswith("install FAILED after ") and last.endswith(
        "s: RuntimeError: `uv pip install ...` exited 1; retried by a session starting after 10 minutes "
        "(or install it yourself: see the reverie README)")
    assert "\nerror: no matching distribution (fake)\n" in (box.data / "install.log").read_text()   # the tool's own output
    for event in ("SessionStart", "UserPromptSubmit"):
        out = box.hook(event)
        assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")
    assert len(box.calls_made()) == 2                 # the sessions right after do not try again
    failed = json.loads((box.data / "install-failed.json").read_text())
    failed["at"] -= 11 * 60
    (box.data / "install-failed.json").write_text(json.dumps(failed))
    box.hook("SessionStart")
    box.wait_until_done()
    assert len(box.calls_made()) == 4                 # ten minutes on, a session tries again


def test_a_stale_lock_of_a_killed_install_is_taken_over(tmp_path):
    box = Sandbox(tmp_path)
    box.fake_uv()
    box.gate.touch()
    box.data.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (box.data / "install.lock").write_text(json.dumps({"pid": int(dead.stdout), "started": time.time() - 120}))
    box.hook("SessionStart")
    box.wait_until_done()
    assert box.log_lines()[0] == "removing a stale install lock"
    assert (box.data / "venv" / ".reverie-installed").exists()


def test_a_young_lock_is_respected_whatever_its_pid(tmp_path):
    box = Sandbox(tmp_path)
    box.fake_uv()
    box.data.mkdir()
    (box.data / "install.lock").write_text(json.dumps({"pid": 999999999, "started": time.time()}))
    assert box.hook("SessionStart").returncode == 0
    assert box.calls_made() == [] and not (box.data / "install.log").exists()


def test_an_unusable_data_folder_fails_open(tmp_path):
    box = Sandbox(tmp_path)
    box.fake_uv()
    box.data.write_text("not a folder")
    for event in ("SessionStart", "UserPromptSubmit"):
        out = box.hook(event)
        assert (out.returncode, out.stdout, out.stderr) == (0, b"", b"")
    assert box.calls_made() == []


def test_source_is_the_marketplace_checkout_of_a_cached_plugin_copy_else_pypi(tmp_path, monkeypatch):
    inst = _installer()
    plugins = tmp_path / "claude" / "plugins"
    copy = plugins / "cache" / "reverie" / "reverie" / VERSION
    (copy / ".claude-plugin").mkdir(parents=True)
    (copy / ".claude-plugin" / "plugin.json").write_text((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    monkeypatch.delenv("REVERIE_PLUGIN_SOURCE", raising=False)
    assert inst.find_source(str(copy)) == (f"reverie=={VERSION}", "pypi")      # no known marketplace
    (plugins / "known_marketplaces.json").write_text(json.dumps(
        {"reverie": {"source": {"source": "directory", "path": str(ROOT)}, "installLocation": str(ROOT)}}))
    assert inst.find_source(str(copy)) == (str(ROOT), "marketplace")
    (plugins / "known_marketplaces.json").write_text(json.dumps({"reverie": {"installLocation": str(tmp_path)}}))
    assert inst.find_source(str(copy)) == (f"reverie=={VERSION}", "pypi")      # not a reverie checkout
    assert inst.find_source(str(PLUGIN)) == (str(ROOT), "checkout")            # --plugin-dir in a checkout
    monkeypatch.setenv("REVERIE_PLUGIN_SOURCE", "reverie==9.9")
    assert inst.find_source(str(copy)) == ("reverie==9.9", "env")


def test_a_token_in_the_source_url_reaches_no_file(tmp_path):
    """`$REVERIE_PLUGIN_SOURCE` may carry a token (`git+https://<token>@host/...`): the log masks it."""
    inst = _installer()
    token = "ghp_" + "Zk8Qp2Lm9Xv4Rt7Wn3" * 2
    source = f"git+https://{token}@github.com/acme/reverie"
    assert inst.masked(f"installing reverie from {source} (env)") == (
        "installing reverie from git+https://***@github.com/acme/reverie (env)")
    inst.log(str(tmp_path), f"$ pip install {source}")
    assert token not in (tmp_path / inst.LOG).read_text() and "https://***@github.com" in (tmp_path / inst.LOG).read_text()
    # a step's own output and a failure's reason (a timeout names the whole command) are masked too
    inst._step(str(tmp_path), [sys.executable, "-c", f"print('Collecting {source}')"])
    inst.record_failure(str(tmp_path), subprocess.TimeoutExpired(["pip", "install", source], 600))
    written = (tmp_path / inst.LOG).read_text() + (tmp_path / inst.FAILED).read_text()
    assert token not in written and "Collecting git+https://***@github.com/acme/reverie" in written
    assert "https://***@github.com/acme/reverie" in (tmp_path / inst.FAILED).read_text()


def test_a_step_that_hangs_leaves_what_it_said_in_the_log_masked(tmp_path, monkeypatch):
    inst = _installer()
    token = "ghp_" + "Zk8Qp2Lm9Xv4Rt7Wn3" * 2
    monkeypatch.setattr(inst, "STEP_TIMEOUT_S", 2)
    hang = f"import sys, time; print('Collecting git+https://{token}@github.com/acme/reverie', flush=True); time.sleep(30)"
    with pytest.raises(subprocess.TimeoutExpired):
        inst._step(str(tmp_path), [sys.executable, "-c", hang])
    logged = (tmp_path / inst.LOG).read_text()
    assert token not in logged and "Collecting git+https://***@github.com/acme/reverie" in logged


def test_checkout_detection_reads_the_project_name(tmp_path):
    inst = _installer()
    (tmp_path / "pyproject.toml").write_text('[tool.x]\nname = "reverie"\n[project]\nname = "other"\n')
    assert not inst.is_reverie_checkout(str(tmp_path))
    (tmp_path / "pyproject.toml").write_text('[project]\nversion = "1"\nname = "reverie"\n')
    assert inst.is_reverie_checkout(str(tmp_path)) and inst.is_reverie_checkout(str(ROOT))


def test_the_mcp_server_runs_through_the_same_script_as_the_hooks(tmp_path):
    """plugin/.mcp.json starts `reverie mcp` through scripts/reverie.sh, so a plugin-only install
    (no reverie on PATH) serves MCP from the plugin's own venv; without any install it says why."""
    server = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["reverie"]
    assert server == {"command": "sh", "args": ["${CLAUDE_PLUGIN_ROOT}/scripts/reverie.sh", "mcp"]}
    box = Sandbox(tmp_path)
    argv = [server["command"], *(a.replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN)) for a in server["args"])]
    none = subprocess.run(argv, input=b"", capture_output=True, timeout=60, env=box.env)
    assert (none.returncode, none.stdout) == (1, b"")
    assert none.stderr.decode().startswith("reverie is not installed yet: the plugin installs it at the next session start")
    venv_bin = box.data / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "reverie").write_text('#!/bin/sh\necho "venv reverie: $*"\n')
    (venv_bin / "reverie").chmod(0o755)
    (box.data / "venv" / ".reverie-installed").write_text("")
    ran = subprocess.run(argv, input=b"", capture_output=True, timeout=60, env=box.env)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, b"venv reverie: mcp\n", b"")
