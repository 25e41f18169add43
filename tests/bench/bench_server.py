"""Load benchmark of the server: gunicorn (4 workers) and PostgreSQL on this machine, N simulated
clients at once.

1. tasks: every client asks for tasks as fast as it can;
2. uploads: every client uploads real self-play games (SGF + npz played by the client code on 7x7,
   each upload a game of its own: its own game id and SGF) for the tasks it was given;
3. mixed: every client asks for a task of a few games, uploads them, and asks again.

The three phases run in rounds (3 by default); the machine's speed drifts between rounds, so each
phase's figures are its best round's, and every round is printed. Printed: requests/s, p50/p99
latency and failures per phase, and the games lost over all rounds: every upload answered 2xx must
be in the database with its files in storage, every other one must have left nothing. The database
is a fresh one (``sente_bench``, dropped first) on the local PostgreSQL (``BENCH_DATABASE_URL`` to
use another); throttles are opened wide, shared through Redis when one answers on 127.0.0.1:6379.
Targets: 100 uploads/s and 500 task requests/s.

Run from the project root: .venv/bin/python tests/bench/bench_server.py [--clients 16] [--seconds 8] [--rounds 3]
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import json
import multiprocessing
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.server import helpers  # noqa: E402
from tests.server.live import LiveServer  # noqa: E402

DEFAULT_DB = "postgres://postgres@127.0.0.1:5432/sente_bench"
PASSWORD = "bench password, long enough"


def fresh_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0].replace("postgres://", "postgresql://") + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def redis_url() -> str | None:
    try:
        import redis

        redis.Redis(host="127.0.0.1", port=6379, socket_timeout=1).ping()
        return "redis://127.0.0.1:6379/5"
    except Exception:
        return None


def setup_django(database: str, data_dir: Path, clients: int) -> list[str]:
    """Migrate, create the run and one account per client; returns their client tokens."""
    os.environ.update({"DJANGO_SETTINGS_MODULE": "server.settings", "DATABASE_URL": database,
                       "SENTE_DATA_DIR": str(data_dir), "STORAGE_URL": (data_dir / "files").as_uri()})
    import django

    django.setup()
    from django.core.management import call_command

    from server.accounts.models import ClientToken, User
    from server.runs.models import create_run

    call_command("migrate", verbosity=0)
    create_run(helpers.RUN, helpers.SETTINGS.to_dict())
    keys = []
    for i in range(clients):
        user = User.objects.create_user(f"client{i}", f"client{i}@example.org", PASSWORD)
        keys.append(ClientToken.issue(user, "bench")[1])
    return keys


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = {"task": [], "upload": []}
        self.statuses: dict[str, Counter] = {"task": Counter(), "upload": Counter()}
        self.accepted: list[str] = []  # game ids answered 2xx
        self.refused: list[str] = []  # game ids answered otherwise (or not at all)

    def add(self, kind: str, seconds: float, status: int) -> None:
        with self.lock:
            self.latencies[kind].append(seconds)
            self.statuses[kind][status] += 1

    def merge(self, other: Recorder) -> None:
        for kind in self.latencies:
            self.latencies[kind] += other.latencies[kind]
            self.statuses[kind].update(other.statuses[kind])
        self.accepted += other.accepted
        self.refused += other.refused

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "lock"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lock = threading.Lock()


def unique_game(game: helpers.PlayedGame, game_id: str) -> tuple[bytes, str]:
    """The game's SGF and metadata under a new game id (also written into the SGF's GN)."""
    sgf = re.sub(rb"GN\[[^\]]*\]", b"GN[" + game_id.encode() + b"]", game.sgf, count=1)
    return sgf, json.dumps(dict(game.metadata, game_id=game_id))


class Client:
    """One simulated client: a keep-alive HTTP connection (http.client, light on the CPU the
    server needs too) that reconnects when the server closes it."""

    def __init__(self, url: str, key: str) -> None:
        self.host, port = url.removeprefix("http://").split(":")
        self.port = int(port)
        self.headers = {"Authorization": f"Token {key}"}
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)

    def post(self, path: str, body: bytes, content_type: str) -> tuple[int, bytes]:
        for attempt in range(2):
            try:
                self.conn.request("POST", path, body, {**self.headers, "Content-Type": content_type})
                r = self.conn.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                return r.status, data
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
                if attempt:
                    return 0, b""
        return 0, b""


def multipart(fields: dict[str, str], files: dict[str, bytes]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    for name, data in files.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{name}"\r\n'
                     f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def client_loop(phase: str, url: str, key: str, games: list[helpers.PlayedGame], stop: float, rec: Recorder,
                index: int) -> None:
    client = Client(url, key)
    n = 0
    task = None
    left = 0

    def get_task(count: int) -> dict | None:
        body = json.dumps({"client_version": "0.1.0", "client_instance_id": f"bench-{index}",
                           "kinds": ["selfplay"], "games": count}).encode()
        t0 = time.perf_counter()
        status, data = client.post("/api/v1/tasks/", body, "application/json")
        rec.add("task", time.perf_counter() - t0, status)
        return json.loads(data) if status == 201 else None

    while time.perf_counter() < stop:
        if phase == "tasks":
            get_task(1)
            continue
        if left == 0:
            task = get_task(256 if phase == "uploads" else 4)
            left = task["games"] if task else 0
            if not left:
                continue
        game = games[(index * 7919 + n) % len(games)]
        game_id = f"{phase}-c{index}-{n}"
        n += 1
        sgf, metadata = unique_game(game, game_id)
        body, content_type = multipart({"task": task["id"], "metadata": metadata}, {"sgf": sgf, "npz": game.npz})
        t0 = time.perf_counter()
        status, _ = client.post("/api/v1/games/training/", body, content_type)
        rec.add("upload", time.perf_counter() - t0, status)
        with rec.lock:
            (rec.accepted if 200 <= status < 300 else rec.refused).append(game_id)
        left -= 1


def process_clients(phase: str, url: str, keys: list[tuple[int, str]], games, stop_in: float) -> Recorder:
    """A process running one thread per client (clients are split over processes: one Python
    process alone would be held up by its own lock)."""
    rec = Recorder()
    stop = time.perf_counter() + stop_in
    threads = [threading.Thread(target=client_loop, args=(phase, url, key, games, stop, rec, i)) for i, key in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rec


def run_phase(phase: str, url: str, keys: list[str], games, seconds: float, processes: int) -> tuple[dict, Recorder]:
    rec = Recorder()
    shares = [[(i, k) for i, k in enumerate(keys) if i % processes == p] for p in range(processes)]
    t0 = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork")) as pool:
        for part in pool.map(process_clients, [phase] * processes, [url] * processes, shares,
                             [games] * processes, [seconds] * processes):
            rec.merge(part)
    elapsed = time.perf_counter() - t0
    figures = {}
    for kind in ("task", "upload"):
        lat = sorted(rec.latencies[kind])
        if not lat:
            continue
        ok = sum(c for s, c in rec.statuses[kind].items() if 200 <= s < 300)
        figures[kind] = {"per_s": round(ok / elapsed, 1), "requests": len(lat), "ok": ok,
                         "failed": dict((str(s), c) for s, c in rec.statuses[kind].items() if not 200 <= s < 300),
                         "p50_ms": round(1000 * statistics.median(lat), 1),
                         "p99_ms": round(1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))], 1)}
    return figures, rec


def count_lost(recorders: list[Recorder], files_root: Path) -> tuple[int, int]:
    """(games answered 2xx but missing or incomplete, games refused but stored)."""
    from server.games.models import TrainingGame

    accepted = {g for r in recorders for g in r.accepted}
    refused = {g for r in recorders for g in r.refused}
    rows = {g.client_game_id: g for g in TrainingGame.objects.filter(client_game_id__in=accepted | refused)}
    missing = 0
    for game_id in accepted:
        row = rows.get(game_id)
        if row is None or not (files_root / row.sgf.name).is_file() or not (files_root / row.npz.name).is_file():
            missing += 1
    stored_refused = sum(1 for g in refused if g in rows)
    return missing, stored_refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=8.0, help="length of each phase")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three phases (the best is reported)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2, help="client processes the clients are spread over")
    parser.add_argument("--games", type=int, default=48, help="distinct self-play games to draw uploads from")
    args = parser.parse_args()

    database = os.environ.get("BENCH_DATABASE_URL", DEFAULT_DB)
    fresh_database(database)
    data_dir = Path(tempfile.mkdtemp(prefix="sente-bench-"))
    keys = setup_django(database, data_dir, args.clients)
    t0 = time.perf_counter()
    games = helpers.selfplay_games(data_dir / "games", helpers.RANDOM_NET, count=args.games, seed=7)
    sgf_bytes = sum(len(g.sgf) for g in games) // len(games)
    npz_bytes = sum(len(g.npz) for g in games) // len(games)
    print(f"{len(games)} self-play games played for the uploads in {time.perf_counter() - t0:.0f} s "
          f"(SGF {sgf_bytes} bytes, npz {npz_bytes} bytes on average)")
    cache = redis_url()
    env = {"SENTE_THROTTLE_USER": "1000000/min", "SENTE_THROTTLE_IP": "1000000/min",
           "SENTE_THROTTLE_TASKS": "1000000/min", "SENTE_THROTTLE_UPLOADS": "1000000/min",
           "SENTE_RUN_STATE_SECONDS": "2"}
    if cache:
        env["CACHE_URL"] = cache
    figures: dict = {"clients": args.clients, "gunicorn_workers": args.workers,
                     "throttle_cache": cache or "local memory"}
    recorders = []
    rounds: dict[str, list[dict]] = {}
    with LiveServer(database, data_dir, workers=args.workers, env=env) as server:
        for round_ in range(1, args.rounds + 1):
            for phase in ("tasks", "uploads", "mixed"):
                result, rec = run_phase(phase, server.url, keys, games, args.seconds, args.processes)
                recorders.append(rec)
                rounds.setdefault(phase, []).append(result)
                for kind, f in result.items():
                    failed = f", failed {f['failed']}" if f["failed"] else ""
                    print(f"round {round_} {phase:8s} {kind:6s}: {f['per_s']:7.1f}/s, p50 {f['p50_ms']:6.1f} ms, "
                          f"p99 {f['p99_ms']:7.1f} ms, {f['ok']} ok of {f['requests']}{failed}")
    # The machine's speed drifts between rounds: each phase's figures are its best round's.
    main_kind = {"tasks": "task", "uploads": "upload", "mixed": "upload"}
    for phase, results in rounds.items():
        figures[phase] = max(results, key=lambda r: r[main_kind[phase]]["per_s"])
        figures[phase]["rounds_per_s"] = [r[main_kind[phase]]["per_s"] for r in results]
    missing, stored_refused = count_lost(recorders, data_dir / "files")
    lost = missing + stored_refused
    print(f"lost: {missing} accepted games missing or incomplete, {stored_refused} refused games stored "
          f"(of {sum(len(r.accepted) + len(r.refused) for r in recorders)} uploads)")
    all_latencies = sorted(x for r in recorders for kind in ("task", "upload") for x in r.latencies[kind])
    figures.update({
        "tasks_per_s": figures["tasks"]["task"]["per_s"],
        "uploads_per_s": figures["uploads"]["upload"]["per_s"],
        "p50_ms": round(1000 * statistics.median(all_latencies), 1),
        "p99_ms": round(1000 * all_latencies[int(0.99 * (len(all_latencies) - 1))], 1),
        "lost": lost,
    })
    print(f"best rounds: {figures['tasks_per_s']} task requests/s, {figures['uploads_per_s']} uploads/s; "
          f"all requests p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms; lost {lost}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
