"""The distribution as users get it: the built wheel holds only `reverie/` and its dist-info, every
source module is in it, and every module imports from the installed wheel in a fresh venv, where
the `reverie` entry point answers `--version`, `--help` and `doctor`.

CI (.ci/run) builds the wheel and installs it with all its dependencies into a fresh venv before
the suite, and passes both on ($REVERIE_WHEEL, $REVERIE_WHEEL_VENV): this module then checks that
wheel and venv. Run alone, it builds the wheel itself (pip, build isolation: setuptools comes from
the package registry) and installs it without dependencies into a new venv that borrows the
dependencies of this interpreter's environment through a `.pth` line (the editable reverie of
this environment stays invisible there: a `.pth` line adds a path, it does not run that path's
`.pth` files), which keeps it to seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VERSION = PYPROJECT["project"]["version"]
PACKAGE_DIRS = PYPROJECT["tool"]["setuptools"]["package-dir"]     # {"reverie.graph": "graph", ...}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    given = os.environ.get("REVERIE_WHEEL")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0 and not os.environ.get("CI") and "Could not find a version" in done.stderr:
        pytest.skip(f"the build backend cannot be fetched from the package registry: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("reverie-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    given = os.environ.get("REVERIE_WHEEL_VENV")
    if given:
        return Path(given)
    venv = tmp_path_factory.mktemp("wheel-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index", "--quiet",
                    str(wheel)], check=True, timeout=300, capture_output=True)
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "borrowed-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def _wheel_modules(wheel: Path) -> list[str]:
    names = zipfile.ZipFile(wheel).namelist()
    return sorted(n[: -len(".py")].replace("/", ".").removesuffix(".__init__") for n in names if n.endswith(".py"))


def test_wheel_holds_only_reverie_and_every_source_module(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"reverie", f"reverie-{VERSION}.dist-info"}
    # every .py file of the mapped folders is in the wheel (a sub-package missing from `packages` fails here)
    expected = sorted(
        f"reverie/{pkg.removeprefix('reverie.').replace('.', '/')}/{p.relative_to(ROOT / folder).as_posix()}"
        for pkg, folder in PACKAGE_DIRS.items() if "." not in pkg.removeprefix("reverie.")
        for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)
    assert sorted(n for n in names if n.endswith(".py")) == expected
    dist = zipfile.ZipFile(wheel).read(f"reverie-{VERSION}.dist-info/entry_points.txt").decode()
    assert dist.split() == ["[console_scripts]", "reverie", "=", "reverie.consolidate.cli:main"]


def test_every_module_imports_from_the_installed_wheel(wheel, venv, tmp_path):
    modules = [m for m in _wheel_modules(wheel) if not m.endswith("__main__")]
    code = ("import importlib, json, sys\n"
            "out = {}\n"
            "for name in sys.argv[1:]:\n"
            "    out[name] = importlib.import_module(name).__file__\n"
            "print(json.dumps(out))\n")
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code, *modules], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    files = json.loads(done.stdout)
    assert sorted(files) == modules and len(modules) > 50
    outside = {m: f for m, f in files.items() if not Path(f).resolve().is_relative_to(venv.resolve())}
    assert outside == {}                      # nothing comes from the checkout


def test_entry_point_version_help_and_doctor(venv, tmp_path):
    exe = venv / "bin" / "reverie"
    env = {**os.environ, "REVERIE_HOME": str(tmp_path / "home"), "PYTHONPATH": ""}
    run = lambda *a: subprocess.run([str(exe), *a], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    version = run("--version")
    assert (version.returncode, version.stdout) == (0, f"reverie {VERSION}\n")
    helped = run("--help")
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: reverie [OPTIONS] COMMAND [ARGS]...")
    doctor = run("doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    checks = {c["name"]: c["ok"] for c in json.loads(doctor.stdout)["checks"]}
    assert (checks["redaction engine"], checks["SQLite FTS5"]) == (True, True)
    assert not (tmp_path / "home").exists()   # doctor creates nothing
    redacted = subprocess.run([str(exe), "redact"], input="export DB_PASSWORD=hunter2-Xq9!\n", capture_output=True,
                              text=True, timeout=300, cwd=tmp_path, env=env)
    assert (redacted.returncode, redacted.stdout) == (0, "export DB_PASSWORD=[REDACTED:password]\n")
