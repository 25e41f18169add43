"""Load benchmark of the server: gunicorn (4 workers) and PostgreSQL on this machine, N simulated
clients at once.

1. tasks: every client asks for tasks as fast as it can;
2. uploads: every client uploads real self-play games (SGF + npz played by the client code on 7x7,
   each upload a game of its own: its own game id, SGF and rows made for that id) for the tasks it
   was given;
3. mixed: every client asks for a task of a few games, uploads them, and asks again.

The three phases run in rounds (3 by default); the machine's speed drifts between rounds, so each
phase's figures are its best round's, and every round is printed. Printed: requests/s, p50/p99
latency and failures per phase, and the games lost over all rounds: every upload answered 2xx must
be in the database with its files in storage, every other one must have left nothing. The database
is a fresh one (``sente_bench``, dropped first) on the local PostgreSQL (``BENCH_DATABASE_URL`` to
use another); throttles are opened wide, shared through Redis when one answers on 127.0.0.1:6379.
Targets: 100 uploads/s and 500 task requests/s.

Before the server starts, it also measures in its own process what ingestion's checks of one game
cost (``check_ms_7x7``, ``check_ms_19x19``: the replay with every training row held against the game
and the draws against the settings; ``replay_ms_*``: the replay and result check alone, as they were
before the rows were held against the game), on the upload games and on 19x19 games of 250 moves.

Run from the project root: .venv/bin/python tests/bench/bench_server.py [--clients 16] [--seconds 8] [--rounds 3]
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import http.client
import io
import json
import multiprocessing
import os
import re
import statistics
import struct
import sys
import tempfile
import threading
import time
import uuid
import zipfile
import zlib
from collections import Counter
from pathlib import Path

import numpy as np

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
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "server.settings",
            "DATABASE_URL": database,
            "SENTE_DATA_DIR": str(data_dir),
            "STORAGE_URL": (data_dir / "files").as_uri(),
        }
    )
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


class RowsTemplate:
    """A game's rows as an npz whose globalTargetsNC is stored uncompressed, so that the rows can be
    given another game id's hash (channels GT_GAME_HASH) by patching bytes and the entry's CRC: a
    server that holds rows against their game id refuses a game id the rows were not made under,
    and recompressing the rows for every upload would load the client processes more than the
    server."""

    def __init__(self, npz: bytes) -> None:
        from common.data.schema import GT_GAME_HASH_FIRST, NUM_GLOBAL_TARGETS

        with np.load(io.BytesIO(npz)) as z:
            arrays = {name: z[name] for name in z.files}
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, array in arrays.items():
                info = zipfile.ZipInfo(name + ".npy")
                info.compress_type = zipfile.ZIP_STORED if name == "globalTargetsNC" else zipfile.ZIP_DEFLATED
                member = io.BytesIO()
                np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
                archive.writestr(info, member.getvalue())
        self.data = data = buffer.getvalue()
        # The member's CRC is in its local header (at 14) and in its central directory entry (at 16).
        central = struct.unpack_from("<I", data, data.rindex(b"PK\x05\x06") + 16)[0]
        while True:
            name_len, extra_len, comment_len = struct.unpack_from("<HHH", data, central + 28)
            if data[central + 46 : central + 46 + name_len] == b"globalTargetsNC.npy":
                break
            central += 46 + name_len + extra_len + comment_len
        self.central_crc = central + 16
        local = struct.unpack_from("<I", data, central + 42)[0]
        self.local_crc = local + 14
        name_len, extra_len = struct.unpack_from("<HH", data, local + 26)
        self.start = local + 30 + name_len + extra_len
        self.end = self.start + struct.unpack_from("<I", data, central + 20)[0]
        header = io.BytesIO(self.data[self.start : self.end])
        np.lib.format.read_magic(header)
        np.lib.format.read_array_header_1_0(header)
        rows = arrays["globalTargetsNC"].shape[0]
        self.offsets = [
            self.start + header.tell() + 4 * (r * NUM_GLOBAL_TARGETS + GT_GAME_HASH_FIRST) for r in range(rows)
        ]

    def for_game(self, game_id: str) -> bytes:
        from common.data.records import game_id_hash
        from common.data.rows import game_hash_chunks

        chunks = struct.pack("<6f", *game_hash_chunks(game_id_hash(game_id)))
        data = bytearray(self.data)
        for offset in self.offsets:
            data[offset : offset + 24] = chunks
        crc = struct.pack("<I", zlib.crc32(data[self.start : self.end]))
        data[self.local_crc : self.local_crc + 4] = crc
        data[self.central_crc : self.central_crc + 4] = crc
        return bytes(data)


def unique_game(game: helpers.PlayedGame, rows: RowsTemplate, game_id: str) -> tuple[bytes, bytes, str]:
    """The game's SGF, rows and metadata under a new game id (also written into the SGF's GN)."""
    sgf = re.sub(rb"GN\[[^\]]*\]", b"GN[" + game_id.encode() + b"]", game.sgf, count=1)
    return sgf, rows.for_game(game_id), json.dumps(dict(game.metadata, game_id=game_id))


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
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{name}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n".encode()
            + data
            + b"\r\n"
        )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def client_loop(
    phase: str,
    url: str,
    key: str,
    games: list[helpers.PlayedGame],
    templates: list[RowsTemplate],
    stop: float,
    rec: Recorder,
    index: int,
) -> None:
    client = Client(url, key)
    n = 0
    task = None
    left = 0

    def get_task(count: int) -> dict | None:
        body = json.dumps(
            {"client_version": "0.1.0", "client_instance_id": f"bench-{index}", "kinds": ["selfplay"], "games": count}
        ).encode()
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
        k = (index * 7919 + n) % len(games)
        game_id = f"{phase}-c{index}-{n}"
        n += 1
        sgf, npz, metadata = unique_game(games[k], templates[k], game_id)
        body, content_type = multipart({"task": task["id"], "metadata": metadata}, {"sgf": sgf, "npz": npz})
        t0 = time.perf_counter()
        status, _ = client.post("/api/v1/games/training/", body, content_type)
        rec.add("upload", time.perf_counter() - t0, status)
        with rec.lock:
            (rec.accepted if 200 <= status < 300 else rec.refused).append(game_id)
        left -= 1


def process_clients(phase: str, url: str, keys: list[tuple[int, str]], games, templates, stop_in: float) -> Recorder:
    """A process running one thread per client (clients are split over processes: one Python
    process alone would be held up by its own lock)."""
    rec = Recorder()
    stop = time.perf_counter() + stop_in
    threads = [
        threading.Thread(target=client_loop, args=(phase, url, key, games, templates, stop, rec, i)) for i, key in keys
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return rec


def run_phase(
    phase: str, url: str, keys: list[str], games, templates, seconds: float, processes: int
) -> tuple[dict, Recorder]:
    rec = Recorder()
    shares = [[(i, k) for i, k in enumerate(keys) if i % processes == p] for p in range(processes)]
    t0 = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("fork")) as pool:
        for part in pool.map(
            process_clients,
            [phase] * processes,
            [url] * processes,
            shares,
            [games] * processes,
            [templates] * processes,
            [seconds] * processes,
        ):
            rec.merge(part)
    elapsed = time.perf_counter() - t0
    figures = {}
    for kind in ("task", "upload"):
        lat = sorted(rec.latencies[kind])
        if not lat:
            continue
        ok = sum(c for s, c in rec.statuses[kind].items() if 200 <= s < 300)
        figures[kind] = {
            "per_s": round(ok / elapsed, 1),
            "requests": len(lat),
            "ok": ok,
            "failed": dict((str(s), c) for s, c in rec.statuses[kind].items() if not 200 <= s < 300),
            "p50_ms": round(1000 * statistics.median(lat), 1),
            "p99_ms": round(1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))], 1),
        }
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


def check_costs(games: list[helpers.PlayedGame], settings, rounds: int = 3) -> dict:
    """What ingestion's game checks cost per game, in this process: the replay with the declared
    result as before (replay_ms), and the whole of check_selfplay_game: the replay with every row
    held against the game and the draws against the settings (check_ms). Medians over the games of
    each game's best round."""
    from common.data.validate import load_rows
    from common.go.sgf import read_sgf
    from server.games.ingest import _check_result, check_selfplay_game

    records = [(read_sgf(g.sgf), load_rows(g.npz), g.metadata) for g in games]
    replay = [float("inf")] * len(records)
    check = [float("inf")] * len(records)
    for _ in range(rounds):
        for i, (rec, rows, meta) in enumerate(records):
            t0 = time.perf_counter()
            game = rec.to_game()
            _check_result(
                game, meta["result"], settings.end_when_all_pass_alive, settings.max_moves, False, meta["game_id"]
            )
            t1 = time.perf_counter()
            check_selfplay_game(rec, rec.rules, rows, meta["game_id"], meta["result"], settings)
            t2 = time.perf_counter()
            replay[i] = min(replay[i], t1 - t0)
            check[i] = min(check[i], t2 - t1)
    return {
        "games": len(records),
        "moves": round(statistics.mean(len(r[0].moves) for r in records), 1),
        "rows": round(statistics.mean(r[2]["rows"] for r in records), 1),
        "replay_ms": round(1000 * statistics.median(replay), 2),
        "check_ms": round(1000 * statistics.median(check), 2),
    }


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
    print(
        f"{len(games)} self-play games played for the uploads in {time.perf_counter() - t0:.0f} s "
        f"(SGF {sgf_bytes} bytes, npz {npz_bytes} bytes on average)"
    )
    templates = [RowsTemplate(g.npz) for g in games]
    check_costs(games[:4], helpers.SELFPLAY, rounds=1)  # compiled kernels loaded
    checks = {"7x7": check_costs(games, helpers.SELFPLAY)}
    big = dataclasses.replace(
        helpers.SELFPLAY, board_sizes=(19,), visits=8, cheap_visits=2, full_search_prob=0.25, max_moves=250
    )
    checks["19x19"] = check_costs(
        helpers.selfplay_games(data_dir / "games19", helpers.RANDOM_NET, count=8, seed=7, settings=big), big
    )
    for size, c in checks.items():
        print(
            f"checks of a {size} game ({c['moves']} moves, {c['rows']} rows on average, {c['games']} games): "
            f"{c['check_ms']} ms with the rows held against the game and the draws against the settings; the "
            f"replay and result alone {c['replay_ms']} ms (medians)"
        )
    cache = redis_url()
    env = {
        "SENTE_THROTTLE_USER": "1000000/min",
        "SENTE_THROTTLE_IP": "1000000/min",
        "SENTE_THROTTLE_TASKS": "1000000/min",
        "SENTE_THROTTLE_UPLOADS": "1000000/min",
        "SENTE_RUN_STATE_SECONDS": "2",
    }
    if cache:
        env["CACHE_URL"] = cache
    figures: dict = {
        "clients": args.clients,
        "gunicorn_workers": args.workers,
        "throttle_cache": cache or "local memory",
    }
    recorders = []
    rounds: dict[str, list[dict]] = {}
    with LiveServer(database, data_dir, workers=args.workers, env=env) as server:
        for round_ in range(1, args.rounds + 1):
            for phase in ("tasks", "uploads", "mixed"):
                result, rec = run_phase(phase, server.url, keys, games, templates, args.seconds, args.processes)
                recorders.append(rec)
                rounds.setdefault(phase, []).append(result)
                for kind, f in result.items():
                    failed = f", failed {f['failed']}" if f["failed"] else ""
                    print(
                        f"round {round_} {phase:8s} {kind:6s}: {f['per_s']:7.1f}/s, p50 {f['p50_ms']:6.1f} ms, "
                        f"p99 {f['p99_ms']:7.1f} ms, {f['ok']} ok of {f['requests']}{failed}"
                    )
    # The machine's speed drifts between rounds: each phase's figures are its best round's.
    main_kind = {"tasks": "task", "uploads": "upload", "mixed": "upload"}
    for phase, results in rounds.items():
        figures[phase] = max(results, key=lambda r: r[main_kind[phase]]["per_s"])
        figures[phase]["rounds_per_s"] = [r[main_kind[phase]]["per_s"] for r in results]
    missing, stored_refused = count_lost(recorders, data_dir / "files")
    lost = missing + stored_refused
    print(
        f"lost: {missing} accepted games missing or incomplete, {stored_refused} refused games stored "
        f"(of {sum(len(r.accepted) + len(r.refused) for r in recorders)} uploads)"
    )
    all_latencies = sorted(x for r in recorders for kind in ("task", "upload") for x in r.latencies[kind])
    figures.update(
        {
            "tasks_per_s": figures["tasks"]["task"]["per_s"],
            "uploads_per_s": figures["uploads"]["upload"]["per_s"],
            "p50_ms": round(1000 * statistics.median(all_latencies), 1),
            "p99_ms": round(1000 * all_latencies[int(0.99 * (len(all_latencies) - 1))], 1),
            "lost": lost,
            "check_ms_7x7": checks["7x7"]["check_ms"],
            "replay_ms_7x7": checks["7x7"]["replay_ms"],
            "check_ms_19x19": checks["19x19"]["check_ms"],
            "replay_ms_19x19": checks["19x19"]["replay_ms"],
        }
    )
    print(
        f"best rounds: {figures['tasks_per_s']} task requests/s, {figures['uploads_per_s']} uploads/s; "
        f"all requests p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} ms; lost {lost}"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
