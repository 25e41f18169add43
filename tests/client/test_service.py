"""``sente service``: the client as a service of the volunteer's account. The systemd unit it writes is
checked by systemd's own ``systemd-analyze verify``; the launchd agent and the Task Scheduler task by
reading them back as their systems' formats. Registering and starting go through the service
manager's commands, which a container without a user session cannot run: those are given a runner
that records them (and fails where a test says so)."""

from __future__ import annotations

import plistlib
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from client import service
from client.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


class Recorder:
    """A service manager's commands, recorded; those starting with ``fail`` end with status 1."""

    def __init__(self, fail: tuple[str, ...] = ()) -> None:
        self.ran: list[list[str]] = []
        self.fail = fail

    def __call__(self, argv):
        self.ran.append(list(argv))
        failed = any(" ".join(argv).startswith(f) for f in self.fail)
        return subprocess.CompletedProcess(argv, 1 if failed else 0, "", "Unit not found." if failed else "")


def make(system: str, tmp_path: Path, *options: str) -> service.Service:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "LOCALAPPDATA": str(tmp_path / "local"), "USER": "vol"}
    return service.service(list(options), system=system, home=tmp_path / "home", env=env)


def test_the_systemd_unit_passes_systemds_own_check_and_runs_the_client_with_the_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    svc = make("linux", tmp_path, "--server", "https://go.example.org", "--data-dir", "my data", "--gpu-share=0.5")
    said = service.install(svc, start=False)
    assert svc.path == tmp_path / "config" / "systemd" / "user" / "sente.service"
    assert said == [f"wrote {svc.path}"]
    unit = svc.path.read_text()
    # The paths are absolute (a service starts elsewhere), quoted where they have spaces.
    command = service.client_command()
    assert f"ExecStart={command[0]} " in unit
    assert f'contribute --server https://go.example.org --data-dir "{tmp_path / "my data"}" --gpu-share=0.5' in unit
    assert "Nice=10" in unit and "Restart=on-failure" in unit and "RestartPreventExitStatus=2 3 4 6 7" in unit
    assert "WantedBy=default.target" in unit
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian package systemd)")
    checked = subprocess.run([analyze, "verify", str(svc.path)], capture_output=True, text=True)
    # It warns of a setting it cannot parse and still exits 0: a clean unit says nothing.
    assert checked.returncode == 0 and checked.stderr == "" and checked.stdout == "", checked.stderr
    broken = tmp_path / "broken.service"
    broken.write_text(unit.replace("Nice=10", "Nice=ten"))
    assert "Failed to parse" in subprocess.run([analyze, "verify", str(broken)], capture_output=True, text=True).stderr


def test_installing_registers_and_restarts_it_and_a_failure_says_which_command(tmp_path):
    svc = make("linux", tmp_path, "--server", "https://go.example.org")
    run = Recorder()
    said = service.install(svc, run=run)
    assert run.ran == [
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "sente.service"],
        ["systemctl", "--user", "restart", "sente.service"],
    ]
    assert said[-1] == "it starts at your login; to keep it running without a login: loginctl enable-linger vol"
    with pytest.raises(service.ServiceError, match=r"systemctl --user enable sente.service failed \(status 1\)"):
        service.install(svc, run=Recorder(fail=("systemctl --user enable",)))
    # Removed: stopped, unregistered and deleted; removed again, it says there was nothing.
    run = Recorder()
    said = service.uninstall(svc, run=run)
    assert run.ran[0] == ["systemctl", "--user", "disable", "--now", "sente.service"] and not svc.path.exists()
    assert f"deleted {svc.path}" in said
    assert f"no service definition at {svc.path}" in service.uninstall(svc, run=Recorder())
    status, text = service.status(svc, run=Recorder(fail=("systemctl",)))
    assert status == 1 and text.startswith(f"not installed (no {svc.path})") and "Unit not found." in text


def test_the_launchd_agent_and_the_task_run_the_same_command_at_login_at_low_priority(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mac = make("darwin", tmp_path, "--server", "https://go.example.org", "--sgf-dir", "games")
    service.install(mac, start=False)
    agent = plistlib.loads(mac.path.read_bytes())
    assert mac.path == tmp_path / "home" / "Library" / "LaunchAgents" / "org.sente.client.plist"
    assert agent["ProgramArguments"] == mac.argv and mac.argv[-1] == str(tmp_path / "games")
    assert agent["RunAtLoad"] and agent["KeepAlive"] == {"SuccessfulExit": False} and agent["Nice"] == 10
    run = Recorder(fail=("launchctl bootout",))  # not loaded before: no failure
    service.install(mac, run=run)
    assert [argv[:2] for argv in run.ran] == [["launchctl", "bootout"], ["launchctl", "bootstrap"]]

    win = make("win32", tmp_path, "--server", "https://go.example.org", "--hours", "22-7")
    service.install(win, start=False)
    assert win.path == tmp_path / "local" / "sente" / "Sente.xml"
    assert win.path.read_bytes()[:2] in (b"\xff\xfe", b"\xfe\xff")  # UTF-16, as its declaration says
    ns = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}
    task = ET.fromstring(win.path.read_bytes())
    assert task.findtext("t:Settings/t:Priority", namespaces=ns) == "7"  # below normal
    assert task.find("t:Triggers/t:LogonTrigger", ns) is not None
    assert task.findtext("t:Actions/t:Exec/t:Command", namespaces=ns) == win.argv[0]
    assert task.findtext("t:Actions/t:Exec/t:Arguments", namespaces=ns) == subprocess.list2cmdline(win.argv[1:])
    run = Recorder()
    service.install(win, run=run)
    assert run.ran[0] == ["schtasks", "/Create", "/TN", "Sente", "/XML", str(win.path), "/F"]


@pytest.mark.parametrize(
    "options, said",
    [
        (["--username", "me"], "--username: a service has no terminal to ask for a password; log in first"),
        (["--password-stdin"], "--password-stdin: a service has no terminal"),
        (["--colour", "blue"], "--colour blue is not an option of `sente contribute`"),
        (["--server"], "argument --server: expected one argument"),
        (["--data", "d"], "--data d is not an option"),  # an abbreviation: its path would stay relative
    ],
)
def test_options_a_service_cannot_run_are_refused_before_anything_is_written(tmp_path, options, said):
    with pytest.raises(service.ServiceError, match=said.replace("(", r"\(")):
        make("linux", tmp_path, *options)
    assert not (tmp_path / "config").exists()
    with pytest.raises(service.ServiceError, match="no service manager known on plan9"):
        make("plan9", tmp_path)


def test_the_command_answers_and_prints_the_definition_it_would_write(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(sys, "platform", "linux")
    assert main(["service", "install", "--print", "--server", "https://go.example.org"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("[Unit]") and "contribute --server https://go.example.org" in out
    assert not (tmp_path / "config").exists()
    assert main(["service", "install", "--no-start", "--colour", "blue"]) == 2
    assert "error: the options for contribute: --colour blue is not an option" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["service", "status", "--colour"])  # only install takes contribute's options
    helped = subprocess.run(
        [sys.executable, "-m", "client", "service", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert helped.returncode == 0 and "install" in helped.stdout and "uninstall" in helped.stdout
