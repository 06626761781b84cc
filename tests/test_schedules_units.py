"""OS scheduler units: plist (plistlib), systemd (systemd-analyze verify), crontab line (really run by
sh), install/uninstall through the CLI against fake crontab/systemctl/launchctl in a tmp HOME."""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes import FAKE_CRONTAB, FAKE_RECORDER
from click.testing import CliRunner

from reverie.consolidate.commands import build_cli
from reverie.schedules import units
from reverie.schedules.units import UnitSpec


@pytest.fixture
def spec(tmp_path) -> UnitSpec:
    home = tmp_path / "my home 100%"
    return UnitSpec(home=home, argv=(sys.executable, "-m", "reverie.consolidate", "--home", str(home), "schedule", "tick"),
                    hour=2, minute=0, log_dir=home / "logs", path_env="/usr/local/bin:/usr/bin:/bin")


def test_plist_parses_with_plistlib(spec):
    data = plistlib.loads(units.render_plist(spec).encode("utf-8"))
    out = str(spec.home / "logs" / "schedule-launchd.out")
    assert data == {
        "Label": f"org.reverie.schedule.{spec.suffix}",
        "ProgramArguments": [sys.executable, "-m", "reverie.consolidate", "--home", str(spec.home), "schedule", "tick"],
        "StartCalendarInterval": [{"Hour": 2, "Minute": 0}, {"Minute": 0}],
        "StandardOutPath": out,
        "StandardErrorPath": out,
        "EnvironmentVariables": {"PATH": "/usr/local/bin:/usr/bin:/bin"},
        "ProcessType": "Background",
        "LowPriorityIO": True,
        "Nice": 10,
        "RunAtLoad": False,
    }


def test_systemd_units_text(spec):
    service, timer = units.render_systemd(spec)
    home = str(spec.home).replace("%", "%%")
    assert service == (
        "[Unit]\n"
        f"Description=reverie: index and consolidate agent memory (home {home})\n\n"
        "[Service]\nType=oneshot\n"
        f'ExecStart={sys.executable} -m reverie.consolidate --home "{home}" schedule tick\n'
        'Environment=PATH=/usr/local/bin:/usr/bin:/bin\n'
        "Nice=10\nIOSchedulingClass=idle\nTimeoutStartSec=infinity\n"
    )
    assert timer == (
        "[Unit]\n"
        f"Description=reverie schedule: nightly consolidation at 02:00, hourly index and backfill (home {home})\n\n"
        "[Timer]\nOnCalendar=*-*-* 02:00:00\nOnCalendar=*-*-* *:00:00\nPersistent=true\n"
        f"Unit=reverie-schedule-{spec.suffix}.service\n\n"
        "[Install]\nWantedBy=timers.target\n"
    )


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_units_pass_systemd_analyze_verify(spec, tmp_path):
    service, timer = units.render_systemd(spec)
    folder = tmp_path / "units"
    folder.mkdir()
    (folder / f"{spec.name}.service").write_text(service)
    (folder / f"{spec.name}.timer").write_text(timer)
    files = [str(folder / f"{spec.name}.service"), str(folder / f"{spec.name}.timer")]
    out = subprocess.run(["systemd-analyze", "verify", "--user", *files], capture_output=True, text=True, timeout=60)
    if out.returncode != 0 and "manager" in out.stderr.lower():
        # No user manager in this environment (containers, CI): verify in system mode; the unit
        # syntax checked is the same.
        out = subprocess.run(["systemd-analyze", "verify", *files], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stderr) == (0, "")  # warnings (unknown keys, bad calendar) fail too


def test_crontab_line_runs_under_sh_with_quoting_intact(spec, tmp_path):
    out_file = tmp_path / "argv.json"
    probe = UnitSpec(
        home=spec.home, log_dir=tmp_path / "logs dir", path_env="/usr/bin:/bin",
        argv=(sys.executable, "-c", "import json,os,sys; open(sys.argv[1],'w').write(json.dumps([sys.argv[2:], os.getcwd()]))",
              str(out_file), "a b", "100%", "it's", "$HOME"),
    )
    line = units.render_cron_line(probe)
    fields = line.split(" ", 5)
    assert fields[:5] == ["0", "*", "*", "*", "*"] and line.endswith(f" # reverie:reverie-schedule-{probe.suffix}")
    command = fields[5].replace("\\%", "%")  # what cron hands to sh
    (tmp_path / "logs dir").mkdir()
    subprocess.run(["/bin/sh", "-c", command], check=True, timeout=60)
    assert json.loads(out_file.read_text()) == [["a b", "100%", "it's", "$HOME"], "/"]


# ---------------------------------------------------------------------------------------------
# install / uninstall through the CLI, against fakes





@pytest.fixture
def fake_os(tmp_path, monkeypatch):
    """A tmp HOME and a PATH holding only fake crontab/systemctl/launchctl that record their calls."""
    user_home = tmp_path / "user"
    user_home.mkdir()
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.log"
    store = tmp_path / "crontab.txt"

    def make(name: str, text: str) -> None:
        p = bin_dir / name
        p.write_text(text)
        p.chmod(0o755)

    make("crontab", FAKE_CRONTAB.format(python=sys.executable, store=str(store), calls=str(calls)))
    for name in ("systemctl", "launchctl"):
        make(name, FAKE_RECORDER.format(python=sys.executable, calls=str(calls), name=name))
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))

    class FakeOS:
        home = user_home
        crontab = store
        bin = bin_dir

        @staticmethod
        def calls() -> list[str]:
            return calls.read_text().splitlines() if calls.exists() else []

    return FakeOS


def cli(*args: str):
    result = CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)
    return result.exit_code, result.output


def _unit_name(reverie_home: Path) -> str:
    return UnitSpec(home=reverie_home, argv=()).name


def test_cron_install_keeps_other_lines_and_uninstall_removes_only_ours(fake_os, reverie_home):
    other = "15 3 * * * /usr/bin/backup # reverie:reverie-schedule-0000abcd"
    fake_os.crontab.write_text("MAILTO=me@example.com\n30 1 * * * /usr/bin/true\n" + other + "\n")
    name = _unit_name(reverie_home)

    assert cli("schedule", "install", "--system", "cron")[0] == 0
    assert cli("schedule", "install", "--system", "cron")[0] == 0  # re-install replaces, never duplicates
    lines = fake_os.crontab.read_text().splitlines()
    assert lines[:3] == ["MAILTO=me@example.com", "30 1 * * * /usr/bin/true", other]
    assert len(lines) == 4 and lines[3].startswith("0 * * * * cd / && PATH=")
    assert lines[3].endswith(f"--home {reverie_home} schedule tick >> {reverie_home}/logs/schedule-cron.out 2>&1 "
                             f"# reverie:{name}")
    code, out = cli("schedule", "status", "--json")
    assert code == 0 and json.loads(out)["installed"] == ["cron"]

    code, out = cli("schedule", "uninstall")
    assert (code, out) == (0, f"removed crontab line # reverie:{name}\n")
    assert fake_os.crontab.read_text().splitlines() == ["MAILTO=me@example.com", "30 1 * * * /usr/bin/true", other]
    assert cli("schedule", "uninstall") == (0, "nothing installed for this home\n")


def test_cron_print_is_exactly_the_crontab_line(fake_os, reverie_home):
    result = CliRunner().invoke(build_cli(), ["schedule", "install", "--system", "cron", "--print"],
                                catch_exceptions=False)
    assert result.exit_code == 0 and fake_os.calls() == [] and not fake_os.crontab.exists()
    assert result.stderr == "# the crontab line to add with `crontab -e`:\n"
    assert cli("schedule", "install", "--system", "cron")[0] == 0
    assert fake_os.crontab.read_text() == result.stdout   # one line, the one install adds


def test_cron_without_crontab_names_the_fix(fake_os):
    (fake_os.bin / "crontab").unlink()
    code, out = cli("schedule", "install", "--system", "cron")
    assert code == 1
    assert out == ("Error: `crontab` is not installed: install cron, or use `--system systemd`/`--system launchd`, "
                   "or run `reverie schedule run` under a process supervisor.\n")
    assert cli("schedule", "uninstall") == (0, "nothing installed for this home\n")  # all systems: cron just absent


def test_systemd_install_and_uninstall(fake_os, reverie_home):
    name = _unit_name(reverie_home)
    unit_dir = fake_os.home / ".config" / "systemd" / "user"
    code, out = cli("schedule", "install", "--system", "systemd")
    assert code == 0, out
    assert sorted(p.name for p in unit_dir.iterdir()) == [f"{name}.service", f"{name}.timer"]
    service, timer = units.render_systemd(units.UnitSpec(
        home=reverie_home, argv=(str(Path(sys.executable).parent / "reverie"), "--home", str(reverie_home),
                                 "schedule", "tick"),
        log_dir=reverie_home / "logs", path_env=str(fake_os.bin)))
    assert (unit_dir / f"{name}.service").read_text() == service
    assert (unit_dir / f"{name}.timer").read_text() == timer
    assert fake_os.calls() == ["systemctl --user daemon-reload", f"systemctl --user enable --now {name}.timer"]
    code, out = cli("schedule", "status", "--json")
    assert code == 0 and json.loads(out)["installed"] == ["systemd"]

    code, out = cli("schedule", "uninstall")
    assert (code, out) == (0, f"removed {unit_dir / (name + '.timer')}\nremoved {unit_dir / (name + '.service')}\n")
    assert list(unit_dir.iterdir()) == []
    assert fake_os.calls()[2:] == ["crontab -l",  # status looks for our crontab line
                                   "crontab -l",  # uninstall of all systems: cron has nothing of ours
                                   f"systemctl --user disable --now {name}.timer", "systemctl --user daemon-reload"]


def test_launchd_install_print_and_uninstall(fake_os, reverie_home):
    label = UnitSpec(home=reverie_home, argv=()).label
    agents_dir = fake_os.home / "Library" / "LaunchAgents"
    result = CliRunner().invoke(build_cli(), ["schedule", "install", "--system", "launchd", "--print"],
                                catch_exceptions=False)
    assert result.exit_code == 0
    # stdout is exactly the plist (`--print > file.plist` works), explanations on stderr
    printed = plistlib.loads(result.stdout.encode("utf-8"))
    assert printed["Label"] == label
    assert result.stderr.splitlines() == [f"# would write {agents_dir / (label + '.plist')}:", "# then run:",
                                          f"  launchctl bootout gui/{os.getuid()}/{label}",
                                          f"  launchctl bootstrap gui/{os.getuid()} {agents_dir / (label + '.plist')}"]
    assert not agents_dir.exists() and fake_os.calls() == []  # --print changes nothing

    assert cli("schedule", "install", "--system", "launchd")[0] == 0
    assert (agents_dir / f"{label}.plist").read_text() == result.stdout   # what --print showed is what is written
    plist = plistlib.loads((agents_dir / f"{label}.plist").read_bytes())
    assert (plist["Label"], plist["StartCalendarInterval"][0]) == (label, {"Hour": 2, "Minute": 0})
    uid = os.getuid()
    assert fake_os.calls() == [f"launchctl bootout gui/{uid}/{label}",
                               f"launchctl bootstrap gui/{uid} {agents_dir / (label + '.plist')}"]
    code, out = cli("schedule", "uninstall", "--system", "launchd")
    assert (code, out) == (0, f"removed {agents_dir / (label + '.plist')}\n")
    assert list(agents_dir.iterdir()) == []
    assert fake_os.calls()[-1] == f"launchctl bootout gui/{uid}/{label}"


def test_install_uses_the_configured_hour(fake_os, reverie_home):
    reverie_home.mkdir(parents=True, exist_ok=True)
    (reverie_home / "settings.json").write_text(json.dumps({"schedule": {"hour": 3, "minute": 30}}))
    code, out = cli("schedule", "install", "--system", "systemd", "--print", "--json")
    assert code == 0
    files = json.loads(out)["files"]
    timer = next(text for path, text in files.items() if path.endswith(".timer"))
    assert "OnCalendar=*-*-* 03:30:00\nOnCalendar=*-*-* *:30:00\n" in timer


def test_systemd_print_one_unit_at_a_time(fake_os, reverie_home):
    """systemd needs two files: `--print --unit service|timer` puts exactly one on stdout (what
    install writes), `--print` alone prints both and says so on stderr."""
    name = _unit_name(reverie_home)
    unit_dir = fake_os.home / ".config" / "systemd" / "user"
    out = {}
    for unit in ("service", "timer"):
        result = CliRunner().invoke(build_cli(), ["schedule", "install", "--system", "systemd", "--print", "--unit", unit],
                                    catch_exceptions=False)
        assert result.exit_code == 0
        assert result.stdout.startswith("[Unit]\n") and result.stdout.count("[Unit]") == 1
        assert result.stderr.splitlines()[0] == f"# would write {unit_dir / (name + '.' + unit)}:"
        out[unit] = result.stdout
    both = CliRunner().invoke(build_cli(), ["schedule", "install", "--system", "systemd", "--print"],
                              catch_exceptions=False)
    assert both.stdout == out["service"] + out["timer"]
    assert both.stderr.splitlines()[0] == "# several files: print one at a time with --unit service|timer"
    assert fake_os.calls() == [] and not unit_dir.exists()
    assert cli("schedule", "install", "--system", "systemd")[0] == 0
    assert [(unit_dir / (name + "." + u)).read_text() for u in ("service", "timer")] == [out["service"], out["timer"]]
    bad = CliRunner().invoke(build_cli(), ["schedule", "install", "--system", "launchd", "--print", "--unit", "timer"])
    assert bad.exit_code == 1 and "--unit is for systemd" in bad.stderr
