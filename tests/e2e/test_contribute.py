"""``python -m client contribute`` as a volunteer runs it, against the real server under gunicorn on
the test database: it logs in, plays self-play and rating games of a tiny network and uploads them;
it waits out a stopped server and delivers everything once; a kill -9 loses no finished game; a
damaged network file on the server is refused; a revoked token ends it with a plain message."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from common.data.validate import validate_rows
from common.go.sgf import read_sgf
from tests.server import helpers
from tests.server.live import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

PASSWORD = "correct horse battery"
NETWORK = "test-net1"


class Contributor:
    """A ``client contribute`` process with its own settings file and data folder."""

    def __init__(self, home: Path, server_url: str | None = None, login: bool = False, *extra: str) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.config = home / "client.json"
        self.data = home / "data"
        self.out = home / "stdout.txt"
        self.err = home / "stderr.txt"
        args = [sys.executable, "-m", "client", "contribute", "--config", str(self.config), "--data-dir",
                str(self.data), "--device", "cpu", "--parallel", "4", "--retry-seconds", "0.5", *extra]
        if server_url:
            args += ["--server", server_url]
        if login:
            args += ["--username", "alice", "--password-stdin"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("SENTE_")}
        env["PYTHONPATH"] = str(ROOT)
        self.process = subprocess.Popen(args, cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                        stdout=open(self.out, "ab"), stderr=open(self.err, "ab"))  # noqa: SIM115
        if login:
            self.say(PASSWORD)

    def say(self, line: str) -> None:
        self.process.stdin.write((line + "\n").encode())
        self.process.stdin.flush()

    def pending(self) -> int:
        pending = self.data / "outbox" / "pending"
        return len(list(pending.iterdir())) if pending.exists() else 0

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
        return (f"--- stdout\n{self.out.read_text()[-3000:]}\n--- stderr\n{self.err.read_text()[-3000:]}\n"
                f"--- log\n{log.read_text()[-6000:] if log.exists() else ''}")

    def workers(self) -> list[int]:
        """The worker processes' pids (multiprocessing's own helper process aside)."""
        found = subprocess.run(["pgrep", "-P", str(self.process.pid), "-f", "multiprocessing.spawn"],
                               capture_output=True, text=True).stdout.split()
        return [int(pid) for pid in found
                if "resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")]

    def kill(self) -> None:
        if self.process.poll() is None:
            # The workers are its children: kill -9 the whole client, as a power cut would.
            children = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout
            self.process.kill()
            for pid in children.split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def volunteer():
    from server.accounts.models import User

    User.objects.create_user("alice", "alice@example.org", PASSWORD)
    return "alice"


@pytest.fixture
def contributors():
    started: list[Contributor] = []
    yield started
    for c in started:
        c.kill()


def _until(condition, timeout: float, what: str, client: Contributor | None = None, step: float = 0.3):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if client is not None and client.process.poll() is not None:
            raise AssertionError(f"the client ended ({client.process.returncode}) while waiting for {what}:\n"
                                 f"{client.output()}")
        time.sleep(step)
    raise AssertionError(f"timed out waiting for {what}" + (f":\n{client.output()}" if client else ""))


def _upload_network(server_url: str, tmp_path: Path, name: str, parent: str, accept: bool = True) -> bytes:
    from django.contrib.auth.models import Group

    from server.accounts.models import User

    if not User.objects.filter(username="gpu-box").exists():
        trainer = User.objects.create_user("gpu-box", "trainer@example.org", "another long password")
        trainer.groups.add(Group.objects.get(name="trainers"))
    token = requests.post(f"{server_url}/api/v1/auth/token/", timeout=30,
                          json={"username": "gpu-box", "password": "another long password"}).json()["token"]
    data = helpers.network_file(name)
    r = requests.post(f"{server_url}/api/v1/networks/", headers={"Authorization": f"Token {token}"}, timeout=60,
                      data={"name": name, "run": helpers.RUN, "parent": parent,
                            "sha256": hashlib.sha256(data).hexdigest()},
                      files={"file": (f"{name}.safetensors", data)})
    assert r.status_code == 201, r.text
    if accept:  # as if it had passed its gating: the self-play network of new tasks
        from server.networks.models import Network
        from server.ratings.promotion import staff_decision

        staff_decision(Network.objects.get(name=name), "accept", note="accepted for the test")
    return data


def _rating_often() -> None:
    """Rating games in half the tasks, so that a short run plays some."""
    from server.runs.models import Run

    document = helpers.SETTINGS.to_dict()
    document["gating"]["rating_game_prob"] = 0.5
    Run.objects.get(name=helpers.RUN).set_settings(document)


def _stored_games_are_valid(settings_dir: Path) -> tuple[int, int]:
    """Every stored game's files parse (SGF) and validate (training rows); (training, rating) counts."""
    from server.games.models import RatingGame, TrainingGame

    files = settings_dir / "files"
    training = list(TrainingGame.objects.all())
    for game in training:
        rec = read_sgf((files / game.sgf.name).read_bytes())
        assert (rec.x_size, rec.black_player) == (7, game.network.name)
        report = validate_rows(files / game.npz.name)
        assert report.ok, report
    rating = list(RatingGame.objects.all())
    for game in rating:
        rec = read_sgf((files / game.sgf.name).read_bytes())
        assert {rec.black_player, rec.white_player} == {NETWORK, helpers.RANDOM_NET}
    ids = [g.client_game_id for g in training + rating]
    assert len(ids) == len(set(ids))
    return len(training), len(rating)


def test_a_volunteer_logs_in_plays_and_uploads(server, volunteer, contributors, tmp_path):
    from server.games.models import RatingGame, TrainingGame

    _upload_network(server.url, tmp_path, NETWORK, helpers.RANDOM_NET)
    _rating_often()
    # Two workers (as with two GPUs), sharing the outbox and the network cache.
    client = Contributor(tmp_path / "alice", server.url, True, "--device", "cpu,cpu", "--parallel", "2")
    contributors.append(client)
    _until(lambda: TrainingGame.objects.count() >= 3 and RatingGame.objects.count() >= 1, 240,
           "self-play and rating games on the server", client)
    # A worker that dies is started again; the games go on.
    workers = client.workers()
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    count = TrainingGame.objects.count()
    _until(lambda: TrainingGame.objects.count() >= count + 2 and len(client.workers()) == 2, 120,
           "games after a worker was restarted", client)
    assert "ended unexpectedly" in (client.data / "contribute.log").read_text()
    client.say("pause")
    _until(lambda: "paused" in (client.data / "contribute.log").read_text(), 30, "the pause", client)
    client.say("resume")
    assert client.stop() == 0, client.output()
    out = client.out.read_text()
    assert "logged in to" in out and "played " in out, client.output()
    # Everything finished went out; the server holds it, valid and once.
    assert client.pending() == 0, client.output()
    training, rating = _stored_games_are_valid(server.data_dir)
    assert training >= 3 and rating >= 1
    assert set(TrainingGame.objects.values_list("network__name", flat=True)) == {NETWORK}
    # The token is kept, private to its owner; the password is not.
    assert (client.config.stat().st_mode & 0o777) == 0o600
    kept = json.loads(client.config.read_text())
    assert kept["token"] and kept["username"] == "alice" and PASSWORD not in client.config.read_text()
    assert (client.data / "networks" / f"{NETWORK}.safetensors").exists()


def test_a_stopped_server_and_a_killed_client_lose_no_game(server, volunteer, contributors, tmp_path):
    from server.games.models import RatingGame, TrainingGame

    _upload_network(server.url, tmp_path, NETWORK, helpers.RANDOM_NET)
    client = Contributor(tmp_path / "alice", server.url, True)
    contributors.append(client)
    _until(lambda: TrainingGame.objects.count() >= 2, 240, "the first games on the server", client)

    # The server goes away for a while: the client plays on and keeps its games.
    server.stop()
    _until(lambda: client.pending() >= 2, 120, "games kept while the server is down", client)
    log = client.data / "contribute.log"
    seen = len(log.read_text())
    server.start()
    _until(lambda: client.pending() == 0, 120, "the kept games delivered", client)
    # New tasks come again (the client asks after its pause, which grew while the server was away).
    _until(lambda: ": selfplay, " in log.read_text()[seen:], 120, "a new task", client)

    # Down again, and the client is killed with games finished but not delivered.
    server.stop()
    _until(lambda: client.pending() >= 2, 120, "games kept while the server is down", client)
    client.kill()
    kept = client.pending()
    before = TrainingGame.objects.count()
    server.start()
    again = Contributor(tmp_path / "alice")  # the kept settings: no options needed
    contributors.append(again)
    _until(lambda: TrainingGame.objects.count() >= before + kept, 120, "the killed client's games delivered", again)
    assert again.stop() == 0, again.output()
    assert again.pending() == 0
    _stored_games_are_valid(server.data_dir)
    # Each game the clients finished is on the server once: none lost, none twice.
    delivered = {line.split()[-2] for line in (again.data / "contribute.log").read_text().splitlines()
                 if line.endswith(" delivered")}
    stored = [*TrainingGame.objects.values_list("client_game_id", flat=True),
              *RatingGame.objects.values_list("client_game_id", flat=True)]
    assert delivered <= set(stored) and len(stored) == len(set(stored))


def test_ctrl_c_twice_stops_at_once_and_keeps_the_finished_games(server, volunteer, contributors, tmp_path):
    from server.games.models import TrainingGame

    client = Contributor(tmp_path / "alice", server.url, True, "--parallel", "8")
    contributors.append(client)
    _until(lambda: TrainingGame.objects.count() >= 1, 240, "a first game on the server", client)
    server.stop()  # what finishes from now on stays in the outbox
    _until(lambda: client.pending() >= 1, 120, "a game kept while the server is down", client)
    client.process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    client.process.send_signal(signal.SIGINT)
    assert client.wait(30) == 0, client.output()
    assert "stopping now" in client.err.read_text(), client.output()
    kept = client.pending()
    assert kept >= 1 and not list((client.data / "outbox" / "tmp").iterdir())
    assert f"{kept} waiting in" in client.out.read_text(), client.output()


def test_a_damaged_network_on_the_server_is_refused(server, volunteer, contributors, tmp_path):
    from server.networks.models import Network

    _upload_network(server.url, tmp_path, NETWORK, helpers.RANDOM_NET)
    stored = server.data_dir / "files" / Network.objects.get(name=NETWORK).file.name
    data = bytearray(stored.read_bytes())
    data[len(data) // 2] ^= 0xFF
    stored.write_bytes(bytes(data))
    client = Contributor(tmp_path / "alice", server.url, True)
    contributors.append(client)
    assert client.wait(180) == 6, client.output()
    err = client.err.read_text()
    assert NETWORK in err and "sha256" in err, client.output()
    assert not (client.data / "networks" / f"{NETWORK}.safetensors").exists()


def test_a_revoked_token_ends_the_client_with_a_plain_message(server, volunteer, contributors, tmp_path):
    from server.accounts.models import ClientToken
    from server.games.models import TrainingGame

    client = Contributor(tmp_path / "alice", server.url, True)
    contributors.append(client)
    _until(lambda: TrainingGame.objects.count() >= 1, 240, "a first game on the server", client)
    ClientToken.objects.get(user__username="alice").revoke()
    assert client.wait(120) == 3, client.output()
    assert "token" in client.err.read_text(), client.output()
    # Started again, it says so at once.
    again = Contributor(tmp_path / "alice")
    contributors.append(again)
    assert again.wait(60) == 3
    err = again.err.read_text()
    assert "revoked" in err and "--username alice" in err, again.output()
    # Logging in again with a wrong password is refused in plain words too.
    wrong = Contributor(tmp_path / "wrong", server.url, False, "--username", "alice", "--password-stdin")
    contributors.append(wrong)
    wrong.say("not the password")
    assert wrong.wait(60) == 3
    assert "did not accept user 'alice' with this password" in wrong.err.read_text(), wrong.output()


def test_an_unreachable_server_at_start_is_reported(tmp_path, contributors):
    from tests.server.live import free_port

    config = tmp_path / "home" / "client.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"server": f"http://127.0.0.1:{free_port()}", "username": "alice",
                                  "token": "0" * 40, "instance_id": "sente-test"}))
    client = Contributor(tmp_path / "home")
    contributors.append(client)
    assert client.wait(60) == 5
    assert "cannot reach the server" in client.err.read_text(), client.output()
    # A device this machine does not have is refused before anything else.
    client = Contributor(tmp_path / "home", None, False, "--device", "cuda:7")
    contributors.append(client)
    assert client.wait(60) == 2
    assert "there is no cuda:7 on this machine" in client.err.read_text(), client.output()
