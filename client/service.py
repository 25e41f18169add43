"""``sente service``: the contributing client as a service of the volunteer's own account, started at
login (or boot) and started again after a failure that waiting can mend.

- Linux: a systemd user unit, ``~/.config/systemd/user/sente.service`` (``$XDG_CONFIG_HOME``), enabled
  and started with ``systemctl --user``. ``loginctl enable-linger`` keeps it running without a login.
- macOS: a launchd agent, ``~/Library/LaunchAgents/org.sente.client.plist``, loaded with ``launchctl``.
- Windows: a Task Scheduler task, ``Sente``, run at logon from its XML definition with ``schtasks``.

Each runs ``sente contribute`` with the options given to ``install`` (checked as ``contribute`` checks
them, paths made absolute), at a low priority (nice 10; below normal on Windows). It is not started
again after an exit that needs the volunteer: bad options (2), a refused token (3), a client too old
for the run (4), a network file that stays wrong (6) or a device that failed the canary check (7).
Log in before installing (``sente contribute --server URL --username NAME``): a service has no
terminal to ask for a password on.
"""

from __future__ import annotations

import argparse
import os
import plistlib
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from client.contribute.exits import EXIT_AUTH, EXIT_CANARY, EXIT_NETWORK, EXIT_UPGRADE, EXIT_USAGE

UNIT = "sente.service"
LABEL = "org.sente.client"
TASK = "Sente"
NICE = 10
# Exits that starting again cannot mend: the volunteer has to act (docs/contribute.md lists them).
FINAL_EXITS = (EXIT_USAGE, EXIT_AUTH, EXIT_UPGRADE, EXIT_NETWORK, EXIT_CANARY)
RESTART_SECONDS = 60
# The client finishes its games in play when asked to stop; past this the service manager ends it, and
# the games in play go on from their last save at the next start.
STOP_SECONDS = 60
# Options of ``contribute`` that a service cannot take: they ask for a password.
INTERACTIVE = ("--username", "--password-stdin")
# Options whose value is a path, made absolute: a service does not start in the folder they were given in.
PATH_OPTIONS = ("--config", "--data-dir", "--sgf-dir", "--watch-file")

Run = Callable[[Sequence[str]], subprocess.CompletedProcess]


class ServiceError(Exception):
    """A service that cannot be installed, removed or asked about, with the reason in plain words."""


def _run(argv: Sequence[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True)
    except FileNotFoundError:
        raise ServiceError(f"{argv[0]} is not installed: the service cannot be managed on this system") from None


def contribute_options(options: Sequence[str], cwd: Path) -> list[str]:
    """``options`` for ``sente contribute`` as a service runs them: checked by the contribute command's
    own parser (a bad one is a ServiceError naming it), the interactive ones refused, and path
    values made absolute against ``cwd``."""
    from client.contribute.options import add_arguments

    for option in options:
        name = option.split("=", 1)[0]
        if name in INTERACTIVE:
            raise ServiceError(
                f"{name}: a service has no terminal to ask for a password; log in first with "
                "`sente contribute --server URL --username NAME`, then install the service without it"
            )
    # No abbreviations: each option is written out as contribute names it (its path made absolute).
    parser = argparse.ArgumentParser(
        prog="sente service install", add_help=False, exit_on_error=False, allow_abbrev=False
    )
    add_arguments(parser)
    try:
        _, extra = parser.parse_known_args(list(options))
    except argparse.ArgumentError as e:
        raise ServiceError(f"the options for contribute: {e}") from None
    if extra:
        raise ServiceError(f"the options for contribute: {' '.join(extra)} is not an option of `sente contribute`")
    out: list[str] = []
    it = iter(options)
    for option in it:
        name, has_value, value = option.partition("=")
        if name in PATH_OPTIONS:
            if not has_value:
                value = next(it)
            out += [name, str((cwd / Path(value).expanduser()).absolute())]
        else:
            out.append(option)
    return out


def client_command(executable: str = sys.executable) -> list[str]:
    """How the service starts the client: the ``sente`` command beside this Python when it is there (an
    installed wheel), else this Python with ``-m client``."""
    folder = Path(executable).parent
    for name in ("sente", "sente.exe"):
        if (folder / name).is_file():
            return [str(folder / name)]
    return [executable, "-m", "client"]


@dataclass(frozen=True)
class Service:
    """The service of one system: where its definition goes and what it says."""

    system: str  # "linux", "darwin" or "win32"
    home: Path
    argv: list[str]  # the command line it runs
    env: dict[str, str]

    @property
    def path(self) -> Path:
        if self.system == "darwin":
            return self.home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
        if self.system == "win32":
            local = Path(self.env.get("LOCALAPPDATA") or self.home / "AppData" / "Local")
            return local / "sente" / f"{TASK}.xml"
        config = Path(self.env.get("XDG_CONFIG_HOME") or self.home / ".config")
        return config / "systemd" / "user" / UNIT

    def definition(self) -> bytes:
        if self.system == "darwin":
            return launchd_plist(self.argv, self.home / "Library" / "Logs" / "sente.log")
        if self.system == "win32":
            return task_xml(self.argv).encode("utf-16")
        return systemd_unit(self.argv).encode()


def systemd_unit(argv: Sequence[str]) -> str:
    """A systemd user unit that runs ``argv`` (the client) from login, at nice 10, restarted after a
    failure that waiting can mend."""
    return "\n".join(
        [
            "[Unit]",
            "Description=Sente volunteer client: self-play games for a Go training run",
            "Wants=network-online.target",
            "After=network-online.target",
            "",
            "[Service]",
            "Type=simple",
            f"ExecStart={' '.join(_systemd_quote(a) for a in argv)}",
            "Environment=PYTHONUNBUFFERED=1",
            f"Nice={NICE}",
            "Restart=on-failure",
            f"RestartSec={RESTART_SECONDS}",
            f"RestartPreventExitStatus={' '.join(str(s) for s in FINAL_EXITS)}",
            # The client alone is asked to stop (its workers wait for it); the rest are ended past the time.
            "KillMode=mixed",
            f"TimeoutStopSec={STOP_SECONDS}",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ]
    )


def _systemd_quote(word: str) -> str:
    """A word of ExecStart: quoted when it has spaces or quotes, and % doubled (systemd's specifiers)."""
    word = word.replace("%", "%%")
    if word and not any(c in word for c in " \t\"'\\$;"):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"').replace("$", "$$") + '"'


def launchd_plist(argv: Sequence[str], log: Path) -> bytes:
    """A launchd agent that runs ``argv`` from login, at nice 10, started again after an exit other
    than a final one (launchd cannot tell those apart: it starts again after any failure, a minute
    apart)."""
    return plistlib.dumps(
        {
            "Label": LABEL,
            "ProgramArguments": list(argv),
            "RunAtLoad": True,
            "KeepAlive": {"SuccessfulExit": False},
            "ThrottleInterval": RESTART_SECONDS,
            "Nice": NICE,
            "ExitTimeOut": STOP_SECONDS,
            "EnvironmentVariables": {"PYTHONUNBUFFERED": "1"},
            "StandardOutPath": str(log),
            "StandardErrorPath": str(log),
        }
    )


def task_xml(argv: Sequence[str]) -> str:
    """A Task Scheduler task that runs ``argv`` at logon, below normal priority, without a time limit,
    started again after a failure (three times, a minute apart)."""
    command, arguments = argv[0], subprocess.list2cmdline(list(argv[1:]))
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-16"?>',
            '<Task version="1.2" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">',
            "  <RegistrationInfo><Description>Sente volunteer client: self-play games for a Go training run"
            "</Description></RegistrationInfo>",
            "  <Triggers><LogonTrigger><Enabled>true</Enabled></LogonTrigger></Triggers>",
            '  <Principals><Principal id="Author"><LogonType>InteractiveToken</LogonType>'
            "<RunLevel>LeastPrivilege</RunLevel></Principal></Principals>",
            "  <Settings>",
            "    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>",
            "    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>",
            "    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>",
            "    <StartWhenAvailable>true</StartWhenAvailable>",
            "    <ExecutionTimeLimit>PT0S</ExecutionTimeLimit>",
            "    <Priority>7</Priority>",
            f"    <RestartOnFailure><Interval>PT{RESTART_SECONDS // 60}M</Interval><Count>3</Count></RestartOnFailure>",
            "  </Settings>",
            '  <Actions Context="Author">',
            f"    <Exec><Command>{escape(command)}</Command><Arguments>{escape(arguments)}</Arguments></Exec>",
            "  </Actions>",
            "</Task>",
            "",
        ]
    )


def service(options: Sequence[str] = (), system: str = sys.platform, home: Path | None = None, env=None) -> Service:
    """The service of this system that runs ``sente contribute`` with ``options``."""
    if system not in ("linux", "darwin", "win32"):
        raise ServiceError(f"no service manager known on {system}: run `sente contribute` from a terminal instead")
    env = dict(os.environ if env is None else env)
    argv = [*client_command(), "contribute", *contribute_options(options, Path.cwd())]
    return Service(system, home or Path.home(), argv, env)


def _check(done: subprocess.CompletedProcess, what: str) -> None:
    if done.returncode != 0:
        said = (done.stderr or done.stdout or "").strip()
        raise ServiceError(f"{what} failed (status {done.returncode}){': ' + said if said else ''}")


def install(svc: Service, start: bool = True, run: Run = _run) -> list[str]:
    """Write the service's definition and, with ``start``, register and start it; what was done."""
    svc.path.parent.mkdir(parents=True, exist_ok=True)
    svc.path.write_bytes(svc.definition())
    said = [f"wrote {svc.path}"]
    if not start:
        return said
    for argv, checked in _start_commands(svc):
        done = run(argv)
        if checked:
            _check(done, shlex.join(argv))
        said.append(f"ran {shlex.join(argv)}")
    if svc.system == "linux":
        said.append(
            "it starts at your login; to keep it running without a login: loginctl enable-linger "
            + (svc.env.get("USER") or "$USER")
        )
    return said


def _domain() -> str:
    """launchd's domain of the user's agents."""
    uid = getattr(os, "getuid", None)  # launchd is macOS's, where it exists; the module loads anywhere
    return f"gui/{uid()}" if uid is not None else "gui"


def _start_commands(svc: Service) -> list[tuple[list[str], bool]]:
    """The commands that register and (re)start the service, each with whether its failure is one: an
    earlier copy that was not loaded cannot be unloaded, and that is no failure."""
    if svc.system == "darwin":
        return [
            (["launchctl", "bootout", f"{_domain()}/{LABEL}"], False),
            (["launchctl", "bootstrap", _domain(), str(svc.path)], True),
        ]
    if svc.system == "win32":
        return [
            (["schtasks", "/Create", "/TN", TASK, "/XML", str(svc.path), "/F"], True),
            (["schtasks", "/Run", "/TN", TASK], True),
        ]
    # restart, not start: a copy already running takes the new definition.
    return [
        (["systemctl", "--user", "daemon-reload"], True),
        (["systemctl", "--user", "enable", UNIT], True),
        (["systemctl", "--user", "restart", UNIT], True),
    ]


def uninstall(svc: Service, run: Run = _run) -> list[str]:
    """Stop and unregister the service and delete its definition; what was done."""
    if svc.system == "darwin":
        commands = [["launchctl", "bootout", f"{_domain()}/{LABEL}"]]
    elif svc.system == "win32":
        commands = [["schtasks", "/End", "/TN", TASK], ["schtasks", "/Delete", "/TN", TASK, "/F"]]
    else:
        commands = [["systemctl", "--user", "disable", "--now", UNIT]]
    said = []
    if not svc.path.exists():
        said.append(f"no service definition at {svc.path}")
    for argv in commands:
        done = run(argv)
        said.append(f"ran {shlex.join(argv)} (status {done.returncode})")
    if svc.path.exists():
        svc.path.unlink()
        said.append(f"deleted {svc.path}")
    if svc.system == "linux":
        done = run(["systemctl", "--user", "daemon-reload"])
        said.append(f"ran systemctl --user daemon-reload (status {done.returncode})")
    return said


def status(svc: Service, run: Run = _run) -> tuple[int, str]:
    """The service manager's own account of the service, and its status (0: installed and known)."""
    if svc.system == "darwin":
        argv = ["launchctl", "print", f"{_domain()}/{LABEL}"]
    elif svc.system == "win32":
        argv = ["schtasks", "/Query", "/TN", TASK, "/V", "/FO", "LIST"]
    else:
        argv = ["systemctl", "--user", "status", "--no-pager", UNIT]
    installed = f"definition: {svc.path}" if svc.path.exists() else f"not installed (no {svc.path})"
    done = run(argv)
    return done.returncode, f"{installed}\n{(done.stdout or '') + (done.stderr or '')}".rstrip()
