"""OS scheduler files for users who prefer cron, launchd or systemd to the daemon.

Each of them starts `reverie --home <home> schedule tick` (one pass of "what should run now":
index when due, the nightly runs, backfill within the window; it exits at once when paused, outside
the window with nothing to index, or when another scheduler is running):

- cron: one crontab line, every hour at the configured minute (so 02:00 with the defaults), marked
  with a trailing `# reverie:<name>` comment; install and uninstall touch only that line.
- launchd: `~/Library/LaunchAgents/<label>.plist`, StartCalendarInterval at 02:00 and every hour
  (launchd runs a job missed during sleep once on wake).
- systemd: `~/.config/systemd/user/<name>.service` (oneshot, nice) and `<name>.timer`
  (OnCalendar 02:00 and hourly, Persistent=true so a laptop that slept through 2 AM catches up).

Hourly rather than once a night because the tick also keeps the index hourly, lets agents with
other hours run at theirs, and resumes backfill. `<name>`/`<label>` carry a short hash of the home
so two homes never overwrite each other's units. Target folders and the command runner are
parameters, so tests never touch the real user's crontab, LaunchAgents or systemd folder.
Standard library only.
"""

from __future__ import annotations

import hashlib
import os
import plistlib
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

SYSTEMS = ("cron", "launchd", "systemd")


class UnitError(Exception):
    """Install/uninstall cannot proceed; the message says what to do."""


@dataclass(frozen=True)
class UnitSpec:
    """What to schedule: the tick command (absolute argv), the nightly time, where output goes."""

    home: Path
    argv: tuple[str, ...]
    hour: int = 2
    minute: int = 0
    log_dir: Path = Path("/tmp")
    path_env: str | None = None

    @property
    def suffix(self) -> str:
        return hashlib.sha256(str(self.home).encode("utf-8")).hexdigest()[:8]

    @property
    def name(self) -> str:
        """systemd unit base name and cron marker."""
        return f"reverie-schedule-{self.suffix}"

    @property
    def label(self) -> str:
        """launchd label."""
        return f"org.reverie.schedule.{self.suffix}"

    @property
    def cron_marker(self) -> str:
        return f"# reverie:{self.name}"


@dataclass(frozen=True)
class Targets:
    """Where the OS looks for user schedules."""

    launch_agents_dir: Path
    systemd_user_dir: Path
    uid: int

    @classmethod
    def default(cls) -> "Targets":
        home = Path.home()
        xdg = os.environ.get("XDG_CONFIG_HOME")
        config = Path(xdg) if xdg else home / ".config"
        return cls(
            launch_agents_dir=home / "Library" / "LaunchAgents",
            systemd_user_dir=config / "systemd" / "user",
            uid=os.getuid() if hasattr(os, "getuid") else 0,
        )

    def plist_path(self, spec: UnitSpec) -> Path:
        return self.launch_agents_dir / f"{spec.label}.plist"

    def systemd_paths(self, spec: UnitSpec) -> tuple[Path, Path]:
        return (self.systemd_user_dir / f"{spec.name}.service", self.systemd_user_dir / f"{spec.name}.timer")


@dataclass(frozen=True)
class CmdResult:
    returncode: int
    stdout: str
    stderr: str


Runner = Callable[[list[str], str | None], CmdResult]


def run_command(argv: list[str], stdin: str | None = None) -> CmdResult:
    """Run a command (resolved on $PATH); a missing program is returncode 127."""
    exe = shutil.which(argv[0])
    if exe is None:
        return CmdResult(127, "", f"{argv[0]}: command not found")
    try:
        out = subprocess.run([exe, *argv[1:]], input=stdin, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CmdResult(126, "", str(exc))
    return CmdResult(out.returncode, out.stdout, out.stderr)


def default_system(platform: str | None = None) -> str:
    """launchd on macOS; systemd where a systemd user session can exist; else cron."""
    platform = platform or sys.platform
    if platform == "darwin":
        return "launchd"
    if platform.startswith("linux") and Path("/run/systemd/system").is_dir() and shutil.which("systemctl"):
        return "systemd"
    return "cron"


# ---------------------------------------------------------------------------------------------
# rendering


def _cron_escape(text: str) -> str:
    return text.replace("%", r"\%")  # an unescaped % ends the command in crontab(5)


def render_cron_line(spec: UnitSpec) -> str:
    """`M * * * * cd / && PATH=... <tick> >> <log> 2>&1 # reverie:<name>`."""
    log_file = spec.log_dir / "schedule-cron.out"
    cmd = " ".join(shlex.quote(a) for a in spec.argv)
    env = f"PATH={shlex.quote(spec.path_env)} " if spec.path_env else ""
    body = f"cd / && {env}{cmd} >> {shlex.quote(str(log_file))} 2>&1"
    return f"{spec.minute} * * * * {_cron_escape(body)} {spec.cron_marker}"


def plist_data(spec: UnitSpec) -> dict:
    out = str(spec.log_dir / "schedule-launchd.out")
    data = {
        "Label": spec.label,
        "ProgramArguments": list(spec.argv),
        "StartCalendarInterval": [{"Hour": spec.hour, "Minute": spec.minute}, {"Minute": spec.minute}],
        "StandardOutPath": out,
        "StandardErrorPath": out,
        "ProcessType": "Background",
        "LowPriorityIO": True,
        "Nice": 10,
        "RunAtLoad": False,
    }
    if spec.path_env:
        data["EnvironmentVariables"] = {"PATH": spec.path_env}
    return data


def render_plist(spec: UnitSpec) -> str:
    return plistlib.dumps(plist_data(spec), fmt=plistlib.FMT_XML, sort_keys=True).decode("utf-8")


def _systemd_quote(arg: str) -> str:
    """Quote one ExecStart argument (systemd.syntax): specifiers and variables escaped."""
    arg = arg.replace("%", "%%").replace("$", "$$")
    if arg and not any(c in arg for c in " \t\"'\\;"):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_systemd(spec: UnitSpec) -> tuple[str, str]:
    """(service, timer) unit files."""
    exec_start = " ".join(_systemd_quote(a) for a in spec.argv)
    env = ""
    if spec.path_env:
        env = "Environment=" + _systemd_quote("PATH=" + spec.path_env) + "\n"
    home = str(spec.home).replace("%", "%%")
    service = (
        "[Unit]\n"
        f"Description=reverie: index and consolidate agent memory (home {home})\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"ExecStart={exec_start}\n"
        f"{env}"
        "Nice=10\n"
        "IOSchedulingClass=idle\n"
        "TimeoutStartSec=infinity\n"
    )
    timer = (
        "[Unit]\n"
        f"Description=reverie schedule: nightly consolidation at {spec.hour:02d}:{spec.minute:02d}, "
        f"hourly index and backfill (home {home})\n"
        "\n"
        "[Timer]\n"
        f"OnCalendar=*-*-* {spec.hour:02d}:{spec.minute:02d}:00\n"
        f"OnCalendar=*-*-* *:{spec.minute:02d}:00\n"
        "Persistent=true\n"
        f"Unit={spec.name}.service\n"
        "\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )
    return service, timer


# ---------------------------------------------------------------------------------------------
# install / uninstall


@dataclass
class Report:
    """What install/uninstall did (or, with dry_run, would do)."""

    system: str
    files: dict[str, str] = field(default_factory=dict)  # path -> content written / to write
    removed: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)  # commands run (or to run)
    crontab_line: str | None = None
    notes: list[str] = field(default_factory=list)
    dry_run: bool = False

    def as_dict(self) -> dict:
        return {"system": self.system, "files": self.files, "removed": self.removed, "commands": self.commands,
                "crontab_line": self.crontab_line, "notes": self.notes, "dry_run": self.dry_run}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _read_crontab(run: Runner) -> str:
    res = run(["crontab", "-l"], None)
    if res.returncode == 127:
        raise UnitError("`crontab` is not installed: install cron, or use `--system systemd`/`--system launchd`, "
                        "or run `reverie schedule run` under a process supervisor.")
    if res.returncode != 0:
        if "no crontab" in (res.stderr or "").lower():
            return ""
        raise UnitError(f"`crontab -l` failed: {res.stderr.strip() or res.returncode}")
    return res.stdout


def _without_marker(text: str, marker: str) -> tuple[list[str], int]:
    kept, dropped = [], 0
    for line in text.splitlines():
        if line.rstrip().endswith(marker):
            dropped += 1
        else:
            kept.append(line)
    return kept, dropped


def _write_crontab(run: Runner, lines: list[str]) -> None:
    text = "\n".join(lines) + "\n" if lines else ""
    res = run(["crontab", "-"], text)
    if res.returncode != 0:
        raise UnitError(f"`crontab -` failed: {res.stderr.strip() or res.returncode}")


def _activate(run: Runner, report: Report, commands: Iterable[list[str]], *, must: bool) -> None:
    for argv in commands:
        report.commands.append(shlex.join(argv))
        if report.dry_run:
            continue
        res = run(argv, None)
        if res.returncode != 0 and must:
            report.notes.append(f"`{shlex.join(argv)}` failed ({(res.stderr or '').strip() or res.returncode}); "
                                "run it by hand once a user session is available")


def install(system: str, spec: UnitSpec, targets: Targets, *, run: Runner = run_command,
            dry_run: bool = False) -> Report:
    """Write (or with dry_run only describe) this system's files and activate them.

    Re-installing replaces our previous files/line for the same home. Activation failures (no user
    session, no launchctl) are reported in `notes` with the command to run by hand; files stay.
    """
    if system not in SYSTEMS:
        raise UnitError(f"unknown system {system!r}: choose one of {', '.join(SYSTEMS)}")
    report = Report(system=system, dry_run=dry_run)
    if system == "cron":
        line = render_cron_line(spec)
        report.crontab_line = line
        report.commands = ["crontab -l", "crontab -"]
        if dry_run:
            return report
        spec.log_dir.mkdir(parents=True, exist_ok=True)
        kept, _ = _without_marker(_read_crontab(run), spec.cron_marker)
        _write_crontab(run, kept + [line])
        return report
    if system == "launchd":
        path = targets.plist_path(spec)
        report.files[str(path)] = render_plist(spec)
        if not dry_run:
            spec.log_dir.mkdir(parents=True, exist_ok=True)
            _write(path, report.files[str(path)])
        domain = f"gui/{targets.uid}"
        _activate(run, report, [["launchctl", "bootout", f"{domain}/{spec.label}"]], must=False)
        _activate(run, report, [["launchctl", "bootstrap", domain, str(path)]], must=True)
        return report
    service_path, timer_path = targets.systemd_paths(spec)
    service, timer = render_systemd(spec)
    report.files[str(service_path)] = service
    report.files[str(timer_path)] = timer
    if not dry_run:
        spec.log_dir.mkdir(parents=True, exist_ok=True)
        _write(service_path, service)
        _write(timer_path, timer)
    _activate(run, report, [["systemctl", "--user", "daemon-reload"],
                            ["systemctl", "--user", "enable", "--now", f"{spec.name}.timer"]], must=True)
    return report


def uninstall(systems: Iterable[str], spec: UnitSpec, targets: Targets, *, run: Runner = run_command,
              explicit: bool = False) -> list[Report]:
    """Remove what `install` wrote for this home, for each system in `systems` (only ours).

    `explicit`: the user named the system, so a missing `crontab` is an error rather than "nothing
    installed there".
    """
    reports = []
    for system in systems:
        report = Report(system=system)
        if system == "cron":
            try:
                current = _read_crontab(run)
            except UnitError:
                if explicit:
                    raise
                continue  # no cron here: nothing of ours can be in it
            kept, dropped = _without_marker(current, spec.cron_marker)
            if dropped:
                _write_crontab(run, kept)
                report.removed.append(f"crontab line {spec.cron_marker}")
                report.commands = ["crontab -l", "crontab -"]
        elif system == "launchd":
            path = targets.plist_path(spec)
            if path.exists():
                _activate(run, report, [["launchctl", "bootout", f"gui/{targets.uid}/{spec.label}"]], must=False)
                path.unlink()
                report.removed.append(str(path))
        elif system == "systemd":
            service_path, timer_path = targets.systemd_paths(spec)
            if service_path.exists() or timer_path.exists():
                _activate(run, report, [["systemctl", "--user", "disable", "--now", f"{spec.name}.timer"]], must=False)
                for p in (timer_path, service_path):
                    if p.exists():
                        p.unlink()
                        report.removed.append(str(p))
                _activate(run, report, [["systemctl", "--user", "daemon-reload"]], must=False)
        else:
            raise UnitError(f"unknown system {system!r}: choose one of {', '.join(SYSTEMS)}")
        reports.append(report)
    return reports


def installed(spec: UnitSpec, targets: Targets, *, run: Runner = run_command) -> list[str]:
    """Which systems have our files/line for this home (cron only checked when crontab exists)."""
    found = []
    res = run(["crontab", "-l"], None)
    if res.returncode == 0 and _without_marker(res.stdout, spec.cron_marker)[1]:
        found.append("cron")
    if targets.plist_path(spec).exists():
        found.append("launchd")
    if any(p.exists() for p in targets.systemd_paths(spec)):
        found.append("systemd")
    return found
