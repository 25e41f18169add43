"""The contributing client as the end-to-end tests run it: a ``sente contribute`` process with its
own settings file and data folder, the volunteer's account, and the server-side steps the tests
share (a network uploaded and accepted, rating games in every task)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from tests.server import helpers
from tests.server.live import ROOT

PASSWORD = "correct horse battery"
NETWORK = "test-net1"


class Contributor:
    """A ``client contribute`` process with its own settings file and data folder."""

    def __init__(
        self,
        home: Path,
        server_url: str | None = None,
        login: bool = False,
        *extra: str,
        program: Path | None = None,
        environ: dict[str, str] | None = None,
    ) -> None:
        """``program``: an installed ``sente`` command to run instead of this checkout's client;
        ``environ``: variables for it beside the test's own (whose SENTE_ ones it does not see)."""
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.config = home / "client.json"
        self.data = home / "data"
        self.out = home / "stdout.txt"
        self.err = home / "stderr.txt"
        args = [
            *([str(program)] if program else [sys.executable, "-m", "client"]),
            "contribute",
            "--config",
            str(self.config),
            "--data-dir",
            str(self.data),
            "--device",
            "cpu",
            "--parallel",
            "4",
            "--retry-seconds",
            "0.5",
            *extra,
        ]
        if server_url:
            args += ["--server", server_url]
        if login:
            args += ["--username", "alice", "--password-stdin"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SENTE_")}
        # At its default low priority, the client would wait for the other test process's cores. In
        # fp32 it computes what the tests expect on any processor, as in the tests' own process
        # (tests/conftest.py): on one with bf16 instructions its default would run bf16.
        env = env | {"SENTE_PRIORITY": "normal", "SENTE_PRECISION": "fp32"} | (environ or {})
        env["PYTHONPATH"] = str(ROOT)
        if program is not None:  # the installed package alone, as a volunteer has it
            del env["PYTHONPATH"]
        out, err = open(self.out, "ab"), open(self.err, "ab")  # noqa: SIM115 (the child keeps them)
        self.process = subprocess.Popen(
            args, cwd=home if program else ROOT, env=env, stdin=subprocess.PIPE, stdout=out, stderr=err
        )
        if login:
            self.say(PASSWORD)

    def say(self, line: str) -> None:
        self.process.stdin.write((line + "\n").encode())
        self.process.stdin.flush()

    def pending(self) -> int:
        return len(self.pending_names())

    def pending_names(self) -> set[str]:
        pending = self.data / "outbox" / "pending"
        return {p.name for p in pending.iterdir()} if pending.exists() else set()

    def kept_names(self) -> set[str]:
        """The finished games not delivered: pending, or held for the next canary check."""
        return self.pending_names() | {p.name for p in (self.data / "outbox" / "held").glob("*")}

    def wait(self, timeout: float = 120.0) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"the client did not end within {timeout} s:\n{self.output()}") from None

    def stop(self) -> int:
        """Ctrl-C once: the games in play finish and go out, then it ends."""
        self.process.send_signal(signal.SIGINT)
        return self.wait()

    def output(self) -> str:
        log = self.data / "contribute.log"
        return (
            f"--- stdout\n{self.out.read_text()[-3000:]}\n--- stderr\n{self.err.read_text()[-3000:]}\n"
            f"--- log\n{log.read_text()[-6000:] if log.exists() else ''}"
        )

    def workers(self) -> list[int]:
        """The worker processes' pids (multiprocessing's own helper process aside)."""
        found = subprocess.run(
            ["pgrep", "-P", str(self.process.pid), "-f", "multiprocessing.spawn"], capture_output=True, text=True
        ).stdout.split()
        return [
            int(pid)
            for pid in found
            if "resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
        ]

    def cpu_seconds(self) -> float:
        """The processor time the workers have used so far."""
        total = 0
        for pid in self.workers():
            with contextlib.suppress(FileNotFoundError):
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime and stime
        return total / os.sysconf("SC_CLK_TCK")

    def kill(self) -> None:
        if self.process.poll() is None:
            # The workers are its children: kill -9 the whole client, as a power cut would.
            children = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout
            self.process.kill()
            for pid in children.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            self.process.wait()


LOAD_STRETCH = 4.0  # at most this many times the timeout, on a machine with more work than cores


def until(condition, timeout: float, what: str, client: Contributor | None = None, step: float = 0.3):
    """Wait for condition() to hold (and return its value), failing after timeout seconds of a
    machine with a core for every runnable process: while the load average is above the cores, the
    clients and servers the test waits for get a share of a core, so time counts that much slower
    (up to LOAD_STRETCH times the timeout, so that a hung wait still fails)."""
    cores = os.cpu_count() or 1
    start = last = time.monotonic()
    waited = 0.0
    while waited < timeout and last - start < LOAD_STRETCH * timeout:
        value = condition()
        if value:
            return value
        if client is not None and client.process.poll() is not None:
            raise AssertionError(
                f"the client ended ({client.process.returncode}) while waiting for {what}:\n{client.output()}"
            )
        time.sleep(step)
        now = time.monotonic()
        waited += (now - last) / max(1.0, os.getloadavg()[0] / cores)
        last = now
    raise AssertionError(
        f"timed out waiting for {what} ({last - start:.0f} s, load {os.getloadavg()[0]:.1f} on {cores} cores)"
        + (f":\n{client.output()}" if client else "")
    )


def upload_network(server_url: str, tmp_path: Path, name: str, parent: str, accept: bool = True) -> bytes:
    from django.contrib.auth.models import Group

    from server.accounts.models import User

    if not User.objects.filter(username="gpu-box").exists():
        trainer = User.objects.create_user("gpu-box", "trainer@example.org", "another long password")
        trainer.groups.add(Group.objects.get(name="trainers"))
    token = requests.post(
        f"{server_url}/api/v1/auth/token/",
        timeout=30,
        json={"username": "gpu-box", "password": "another long password"},
    ).json()["token"]
    data = helpers.network_file(name)
    r = requests.post(
        f"{server_url}/api/v1/networks/",
        headers={"Authorization": f"Token {token}"},
        timeout=60,
        data={"name": name, "run": helpers.RUN, "parent": parent, "sha256": hashlib.sha256(data).hexdigest()},
        files={"file": (f"{name}.safetensors", data)},
    )
    assert r.status_code == 201, r.text
    if accept:  # as if it had passed its gating: the self-play network of new tasks
        from server.networks.models import Network
        from server.ratings.promotion import staff_decision

        staff_decision(Network.objects.get(name=name), "accept", note="accepted for the test")
    return data


def rating_often() -> None:
    """Rating games in every task that may be one, so that a short run plays some (a worker holds two
    rating tasks at most, and then asks for self-play only)."""
    from server.runs.models import Run

    document = helpers.SETTINGS.to_dict()
    document["gating"]["rating_game_prob"] = 1.0
    Run.objects.get(name=helpers.RUN).set_settings(document)
