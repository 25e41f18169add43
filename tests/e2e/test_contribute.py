"""``python -m client contribute`` as a volunteer runs it, against the real server under gunicorn on
the test database: it logs in, plays self-play and rating games of a tiny network and uploads them;
it waits out a stopped server and delivers everything once; a kill -9 loses no finished game; a
damaged network file on the server is refused, and so is a device that fails the canary check; a
revoked token ends it with a plain message."""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import signal
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests
from django.utils import timezone

from client.build import BUILD
from common.data.validate import validate_rows
from common.go.sgf import read_sgf
from tests.e2e.contributor import NETWORK, PASSWORD, Contributor, rating_often, until, upload_network
from tests.server import helpers
from tests.server.live import free_port

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, serialized_rollback=True)]


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


# The run's public download base: a static file server over the storage folder, as a CDN in front of
# a bucket would be (deploy/README.md), on a port chosen before the server starts.
CDN_PORT = free_port()


class _StaticFiles(ThreadingHTTPServer):
    """A static file server over ``folder`` that keeps the paths it was asked for, and whether a
    request carried credentials (a volunteer's token must never reach a third party)."""

    def __init__(self, folder: Path, port: int) -> None:
        self.asked: list[str] = []
        self.credentials: list[str] = []
        asked, credentials = self.asked, self.credentials

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(folder), **kwargs)

            def log_message(self, format, *args):
                asked.append(self.path)
                credentials.extend(h for h in ("Authorization", "Cookie") if h in self.headers)

        super().__init__(("127.0.0.1", port), Handler)
        threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True).start()


@pytest.mark.parametrize("server", [{"SENTE_FILES_PUBLIC_URL": f"http://127.0.0.1:{CDN_PORT}/"}], indirect=True)
def test_a_volunteer_logs_in_plays_and_uploads(server, volunteer, contributors, tmp_path):
    from server.games.models import RatingGame, TrainingGame

    upload_network(server.url, tmp_path, NETWORK, helpers.RANDOM_NET)
    rating_often()
    cdn = _StaticFiles(server.data_dir / "files", CDN_PORT)
    # Two workers (as with two GPUs), sharing the outbox and the network cache.
    client = Contributor(tmp_path / "alice", server.url, True, "--device", "cpu,cpu", "--parallel", "2")
    contributors.append(client)
    until(
        lambda: TrainingGame.objects.count() >= 3 and RatingGame.objects.count() >= 1,
        240,
        "self-play and rating games on the server",
        client,
    )
    # A worker that dies is started again; the games go on.
    workers = client.workers()
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGKILL)
    count = TrainingGame.objects.count()
    until(
        lambda: TrainingGame.objects.count() >= count + 2 and len(client.workers()) == 2,
        120,
        "games after a worker was restarted",
        client,
    )
    assert "ended unexpectedly" in (client.data / "contribute.log").read_text()
    client.say("pause")
    until(lambda: "paused" in (client.data / "contribute.log").read_text(), 30, "the pause", client)
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
    # The network came from the run's public download, by its content-addressed name, not the server.
    cdn.shutdown()
    cdn.server_close()
    from server.networks.models import Network

    assert cdn.asked == [f"/{Network.objects.get(name=NETWORK).file.name}"] and cdn.credentials == []
    assert not [r for r in server.requests() if r.path.endswith(f"/networks/{NETWORK}/file")]
    # Each worker's task requests named this machine and its device, for the account's figures.
    from server.distribution.machines import installation
    from server.distribution.models import Task

    said = set(Task.objects.values_list("client_instance_id", "machine_name", "device_model"))
    assert {(installation(i), n) for i, n, _ in said} == {(kept["instance_id"], platform.node()[:64])}
    assert {i for i, _, _ in said} == {f"{kept['instance_id']}-0", f"{kept['instance_id']}-1"}
    cores = max(1, (os.cpu_count() or 1) // 2)  # two workers share the CPU's cores
    assert all(d.endswith(f"CPU, {cores} cores") for _, _, d in said)


OUTAGE_SECONDS = 8.0


def test_a_stopped_server_and_a_killed_client_lose_no_game(server, volunteer, contributors, tmp_path):
    """The client keeps a reserve of tasks sized in time (two hours of play; here, with fast games, a
    task of 256 games within seconds): the server stopped for far longer than the few games a task
    request used to bring, it plays on to the end of the outage, and then delivers every game once.
    Killed with games not delivered, it delivers them at the next start; stopped, it gives up the
    games of its tasks it did not play, so the server's open tasks owe nothing more."""
    from server.distribution.models import Task
    from server.games.models import RatingGame, TrainingGame

    upload_network(server.url, tmp_path, NETWORK, helpers.RANDOM_NET)
    client = Contributor(tmp_path / "alice", server.url, True)
    contributors.append(client)
    until(lambda: TrainingGame.objects.count() >= 2, 240, "the first games on the server", client)
    until(
        lambda: Task.objects.filter(kind="selfplay", games__gt=4 * 4).exists(),
        120,
        "a reserve sized by the game rate",
        client,
    )

    # The server goes away for a while: the client plays on, to the end of the outage (its worker
    # still busy searching in the last seconds), and keeps its games.
    server.stop()
    start = len(client.kept_names())
    time.sleep(OUTAGE_SECONDS - 5)
    cpu = client.cpu_seconds()
    time.sleep(5)
    busy = client.cpu_seconds() - cpu
    kept = client.kept_names()
    assert busy > 0.5 and len(kept) > start, (busy, start, len(kept), client.output())
    log = client.data / "contribute.log"
    seen = len(log.read_text())
    server.start()
    until(lambda: not kept & client.kept_names(), 120, "the kept games delivered", client)
    # New tasks come again (the client asks after its pause, which grew while the server was away).
    until(lambda: ": selfplay, " in log.read_text()[seen:], 120, "a new task", client)

    # Down again, and the client is killed with games finished but not delivered.
    server.stop()
    until(lambda: len(client.kept_names()) >= 2, 120, "games kept while the server is down", client)
    client.kill()
    kept = len(client.kept_names())
    before = TrainingGame.objects.count() + RatingGame.objects.count()
    server.start()
    started = timezone.now()
    again = Contributor(tmp_path / "alice")  # the kept settings: no options needed
    contributors.append(again)
    until(
        lambda: TrainingGame.objects.count() + RatingGame.objects.count() >= before + kept,
        120,
        "the killed client's games delivered",
        again,
    )
    assert again.stop() == 0, again.output()
    assert not again.kept_names() and not list((again.data / "outbox" / "rejected").iterdir())
    # Its tasks owe the server no game: those it did not play were given up as it stopped.
    assert [
        (t.games, t.games_received) for t in Task.objects.filter(created_at__gte=started) if t.games != t.games_received
    ] == []
    _stored_games_are_valid(server.data_dir)
    # Each game the clients finished is on the server once: none lost, none twice.
    delivered = {
        line.split()[-2]
        for line in (again.data / "contribute.log").read_text().splitlines()
        if line.endswith(" delivered")
    }
    stored = [
        *TrainingGame.objects.values_list("client_game_id", flat=True),
        *RatingGame.objects.values_list("client_game_id", flat=True),
    ]
    assert delivered <= set(stored) and len(stored) == len(set(stored))


# One gunicorn worker: the throttle's counters are its own (without Redis each process counts alone).
@pytest.mark.parametrize("server", [{"SENTE_THROTTLE_TASKS": "1/hour", "SENTE_WORKERS": "1"}], indirect=True)
def test_the_task_throttle_is_waited_out_and_ctrl_c_twice_stops_at_once(server, volunteer, contributors, tmp_path):
    """The server allows one task request an hour: the second is refused with 429 and a Retry-After,
    and the client asks for no task before that time (the server's log shows it), playing on from
    the games it has in hand. Ctrl-C twice then stops it at once, keeping the finished games."""
    from server.games.models import TrainingGame

    def task_requests() -> list:
        return [r for r in server.requests() if r.method == "POST" and r.path.startswith("/api/v1/tasks/")]

    client = Contributor(tmp_path / "alice", server.url, True, "--parallel", "8")
    contributors.append(client)
    until(lambda: TrainingGame.objects.count() >= 1, 240, "a first game on the server", client)
    until(lambda: any(r.status == 429 for r in task_requests()), 120, "a task request refused", client)
    assert [r.status for r in task_requests()][:2] == [201, 429]
    refused = task_requests()[1]
    assert refused.retry_after is not None
    games = TrainingGame.objects.count()
    until(lambda: TrainingGame.objects.count() >= games + 4, 120, "games played on after the refusal", client)
    # Every task request after the refusal came once the wait was over (the log has whole seconds).
    assert all(r.at >= refused.at + refused.retry_after - 1 for r in task_requests()[2:]), task_requests()
    server.stop()  # what finishes from now on stays in the outbox
    until(lambda: client.pending() >= 1, 120, "a game kept while the server is down", client)
    client.process.send_signal(signal.SIGINT)
    time.sleep(0.5)
    client.process.send_signal(signal.SIGINT)
    assert client.wait(30) == 0, client.output()
    assert "stopping now" in client.err.read_text(), client.output()
    kept = client.pending()
    assert kept >= 1 and not list((client.data / "outbox" / "tmp").iterdir())
    assert f"{kept} waiting in" in client.out.read_text(), client.output()


def test_a_damaged_network_and_a_failed_canary_check_are_refused(server, volunteer, contributors, tmp_path):
    from server.games.models import RatingGame, TrainingGame
    from server.networks.models import Network

    upload_network(server.url, tmp_path, NETWORK, helpers.RANDOM_NET)
    stored = server.data_dir / "files" / Network.objects.get(name=NETWORK).file.name
    original = stored.read_bytes()
    data = bytearray(stored.read_bytes())
    data[len(data) // 2] ^= 0xFF
    stored.write_bytes(bytes(data))
    client = Contributor(tmp_path / "alice", server.url, True)
    contributors.append(client)
    assert client.wait(180) == 6, client.output()
    err = client.err.read_text()
    assert NETWORK in err and "sha256" in err, client.output()
    assert not (client.data / "networks" / f"{NETWORK}.safetensors").exists()

    # The file mended, the server's canary reference says other outputs than the client's device
    # computes (as a broken GPU would): the client plays and uploads nothing, and ends with status 7.
    stored.write_bytes(original)
    _store_canary_of_other_weights(server, NETWORK, original)
    again = Contributor(tmp_path / "alice")
    contributors.append(again)
    assert again.wait(180) == 7, again.output()
    err = again.err.read_text()
    assert f"network {NETWORK} on cpu in fp32 does not compute what it should" in err, again.output()
    assert "differs by" in err and "the server's fp32 reference" in err, err
    assert TrainingGame.objects.count() == RatingGame.objects.count() == again.pending() == 0


def _store_canary_of_other_weights(server, name: str, data: bytes) -> None:
    """Give the network a canary reference computed from its file (data) with some weights changed."""
    from common import canary
    from common.nn.canary import evaluate_canary
    from common.nn.model import Model
    from common.nn.modelfile import decode_model
    from server.files import content_name, sha256_of
    from server.networks.models import Network, NetworkCanary

    mf = decode_model(data)
    model = Model(mf.config, initialize=False)
    model.load_state_dict(mf.state_dict)
    model.conv_spatial.weight.data[:, 0] += 1.0
    npz = evaluate_canary(model.eval()).to_npz()
    sha256 = sha256_of(npz)
    file_name = content_name("canaries", sha256, ".npz")
    path = server.data_dir / "files" / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(npz)
    NetworkCanary.objects.create(
        network=Network.objects.get(name=name),
        version=canary.CANARY_VERSION,
        fingerprint=canary.fingerprint(),
        file=file_name,
        sha256=sha256,
        size_bytes=len(npz),
        seconds=0.0,
    )


def _each_worker_answers(server, url: str, headers: dict, mark: str) -> list:
    """Ask until every gunicorn worker has answered (each request on a new connection, several at once);
    the access log's lines of these requests."""
    from concurrent.futures import ThreadPoolExecutor

    workers = server.worker_pids()
    assert len(workers) >= 2, server.log()
    with ThreadPoolExecutor(4) as pool:
        for attempt in range(50):
            list(
                pool.map(
                    lambda k: requests.get(f"{url}?probe={mark}-{k}", headers=headers, timeout=30),
                    range(8 * attempt, 8 * attempt + 8),
                )
            )
            seen = [r for r in server.requests() if f"probe={mark}-" in r.path]
            if {r.pid for r in seen} >= workers:
                return seen
    raise AssertionError(f"not every worker answered: {workers}, {seen}")


def test_a_revoked_token_is_refused_at_once_and_the_advice_to_log_in_again_works(
    server, volunteer, contributors, tmp_path
):
    """A token revoked is refused by the next request on every gunicorn worker, and the client ends
    saying how to log in again; doing just that works (so does a start with the password on stdin).
    A run that stops taking this client's build ends it with the upgrade message (exit 4), and a run
    whose versions do not include this client's refuses it at start."""
    from server.accounts.models import ClientToken
    from server.distribution.models import Task
    from server.games.models import TrainingGame
    from server.runs.models import Run

    client = Contributor(tmp_path / "alice", server.url, True)
    contributors.append(client)
    until(lambda: TrainingGame.objects.count() >= 1, 240, "a first game on the server", client)
    me = f"{server.url}/api/v1/me/"
    headers = {"Authorization": f"Token {json.loads(client.config.read_text())['token']}"}
    assert {r.status for r in _each_worker_answers(server, me, headers, "before")} == {200}
    ClientToken.objects.get(user__username="alice").revoke()
    assert {r.status for r in _each_worker_answers(server, me, headers, "after")} == {401}
    assert client.wait(120) == 3, client.output()
    err = client.err.read_text()
    assert "revoked" in err and "--username alice" in err, client.output()
    advice = shlex.split(re.search(r"Log in again: (.*?) \(it asks for the password", err).group(1))
    assert advice[:4] == ["python", "-m", "client", "contribute"]
    # Doing just that (the password on stdin) logs in and plays; then the run stops taking this build.
    games = TrainingGame.objects.count()
    relogged = Contributor(tmp_path / "alice", None, False, *advice[4:], "--password-stdin")
    contributors.append(relogged)
    relogged.say(PASSWORD)
    until(lambda: TrainingGame.objects.count() > games, 240, "games after logging in again", relogged)
    assert "logged in to" in relogged.out.read_text()
    Run.objects.filter(name=helpers.RUN).update(client_builds=["0" * 16])
    assert relogged.wait(120) == 4, relogged.output()
    err = relogged.err.read_text()
    assert "0000000000000000" in err and "upgrade" in err, relogged.output()
    assert Task.objects.filter(user__username="alice").exclude(client_build=BUILD).count() == 0
    # Its token revoked too, a start with the password on stdin logs in again by itself; the run's
    # versions (now up to 0.0.9) do not include this client's, which is refused at start.
    ClientToken.objects.filter(user__username="alice").update(revoked_at=timezone.now())
    Run.objects.filter(name=helpers.RUN).update(
        client_builds=[], min_client_version="0.0.1", max_client_version="0.0.9"
    )
    late = Contributor(tmp_path / "alice", None, False, "--password-stdin")
    contributors.append(late)
    late.say(PASSWORD)
    assert late.wait(60) == 4, late.output()
    assert "logging in again" in late.out.read_text() and "logged in to" in late.out.read_text(), late.output()
    err = late.err.read_text()
    assert "newer than the server's run test takes" in err and "0.0.1 to 0.0.9" in err, late.output()
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
    config.write_text(
        json.dumps(
            {
                "server": f"http://127.0.0.1:{free_port()}",
                "username": "alice",
                "token": "0" * 40,
                "instance_id": "sente-test",
            }
        )
    )
    client = Contributor(tmp_path / "home")
    contributors.append(client)
    assert client.wait(60) == 5
    assert "cannot reach the server" in client.err.read_text(), client.output()
    # A device this machine does not have is refused before anything else.
    client = Contributor(tmp_path / "home", None, False, "--device", "cuda:7")
    contributors.append(client)
    assert client.wait(60) == 2
    assert "there is no cuda:7 on this machine" in client.err.read_text(), client.output()
