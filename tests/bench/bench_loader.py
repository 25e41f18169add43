"""Benchmark of reading a training window: each game's own file against the games packed into shards,
from local disk and from an S3 server on this machine, and the bytes two ``torchrun`` processes read.

The window is ``--games`` 9x9 self-play games (default 100,000) stored as the server stores them: a
run in a SQLite database, each game's rows an npz file in storage under its content's name. The rows
are real self-play rows of the random network (the null evaluator, few visits: their content does not
change the cost), ``--distinct`` games made afresh and repeated, each copy made a file of its own by a
zip comment naming it. The server's packer packs them into shards (``server.games.shards``, the
default caps) and the trainer's window (``server.training.window``, every game of the run but the
held-out ones) names each game's file and its place in its shard.

The same files are then copied to an S3 server on this machine: moto's standalone server (its S3
protocol over HTTP on a free port). No S3 server that stores real objects installs from the package
registries this machine reaches: PyPI has no MinIO, SeaweedFS or Versity gateway (its ``rustfs`` is
a client), Debian has none, and no container registry is reached. moto answers from memory on the
same two cores as the reader, so its figures are of the protocol's cost per request, not of a
network's round trip.

Each figure is the rows per second the trainer's loader (``common.data.loader.ShuffledPass``, as the
training worker makes it: 16 readers, blocks of ``shuffle_rows`` rows, symmetries, batches of 256
turned into tensors) yields over its first ``--blocks`` blocks, in a process of its own so that its
peak memory is its own, through the server's own reads (``server.files.read_file`` and
``read_range``). Rounds interleave the four (disk or S3, per game or shards; the machine's speed
drifts); each figure is its best round. Last, two processes under ``torchrun`` read one whole pass of
the window from the shards on disk, each its own share, and the bytes they read are added up against
the window's bytes in its shards (each game's tar header and padded file: what any reader of the
shards must read).

Run from the project root: .venv/bin/python tests/bench/bench_loader.py [--games 100000] [--rounds 3]
The last line is one JSON object with ``shard_speedup_s3``, ``shard_speedup_disk``,
``ddp2_read_ratio`` and ``peak_rss_mb`` among the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BATCH = 256  # the paper's batch
BUCKET = "sente-bench"
S3_KEYS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}


# --- the window -------------------------------------------------------------------------------------------
def django_env(data: Path, storage_url: str) -> dict[str, str]:
    return {
        "DJANGO_SETTINGS_MODULE": "server.settings",
        "SENTE_DATA_DIR": str(data),
        "DATABASE_URL": f"sqlite:///{data / 'sente.sqlite3'}",
        "STORAGE_URL": storage_url,
        "SENTE_TASKS": "immediate",
        **S3_KEYS,
    }


def setup_django(env: dict[str, str]) -> None:
    os.environ.update(env)
    import django

    django.setup()


def distinct_games(out: Path, games: int) -> list[tuple[bytes, int]]:
    """``games`` 9x9 self-play games of the random network: each npz file's bytes and rows."""
    from client.search.engine import NullEvaluator
    from client.selfplay.run import run_selfplay
    from common.data.loader import decode_rows
    from common.settings import SelfPlaySettings

    settings = SelfPlaySettings(board_sizes=(9,), board_size_weights=(1.0,), visits=32, cheap_visits=8)
    run_selfplay(NullEvaluator(), settings, games=games, parallel=64, out_dir=out, seed=1, progress=False)
    return [(p.read_bytes(), len(decode_rows(p.read_bytes(), p.name))) for p in sorted(out.glob("*.npz"))]


def named(data: bytes, k: int) -> bytes:
    """The npz file with a zip comment naming copy ``k``: other bytes, the same arrays."""
    end = data.rfind(b"PK\x05\x06")
    if end != len(data) - 22:
        raise ValueError("the npz file already has a zip comment")
    comment = f"copy {k}".encode()
    return data[:-2] + struct.pack("<H", len(comment)) + comment


def build_window(data: Path, games: int, distinct: int) -> dict:
    """The run's games stored and packed; the window's files both ways, and its bytes."""
    from django.core.management import call_command
    from django.utils import timezone

    from common.settings import RunSettings
    from server.accounts.models import User
    from server.distribution.models import Task
    from server.files import content_name, sha256_of
    from server.games import shards
    from server.games.models import TrainingGame
    from server.runs.models import create_run
    from server.training.window import training_window

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    made = distinct_games(data / "distinct", distinct)
    print(f"{len(made)} distinct games made in {time.perf_counter() - started:.0f} s", flush=True)
    run = create_run("bench", RunSettings().to_dict())
    user = User.objects.create_user("bench", "bench@example.org", "a long enough password")
    network = run.networks.get(is_random=True)
    day = timezone.now().replace(hour=0, minute=0, second=0, microsecond=0) - timezone.timedelta(days=1)
    task = Task.objects.create(
        kind=Task.Kind.SELFPLAY,
        run=run,
        user=user,
        network=network,
        settings_version=run.current_settings(),
        games=games,
        client_version="0.1.0",
        client_instance_id="bench",
        expires_at=day,
    )
    files = data / "files"
    started = time.perf_counter()
    rows = []
    for k in range(games):
        body, count = made[k % len(made)]
        body = named(body, k)
        sha256 = sha256_of(body)
        name = content_name("games", sha256, ".npz")
        (files / name).parent.mkdir(parents=True, exist_ok=True)
        (files / name).write_bytes(body)
        rows.append(
            TrainingGame(
                client_game_id=f"bench-{k}",
                task=task,
                user=user,
                run=run,
                settings_version=task.settings_version,
                board_x_size=9,
                board_y_size=9,
                komi=7.0,
                rules={},
                result="B+R",
                winner="B",
                moves=count * 4,
                network=network,
                rows=count,
                sgf=name,  # (never read here)
                sgf_sha256=sha256,
                npz=name,
                npz_sha256=sha256,
                created_at=day + timezone.timedelta(milliseconds=k),
            )
        )
    TrainingGame.objects.bulk_create(rows, batch_size=5000)
    print(f"{games} games stored in {time.perf_counter() - started:.0f} s", flush=True)
    started = time.perf_counter()
    packed = shards.pack_due(run, force=True)
    print(f"packed into {len(packed)} shards in {time.perf_counter() - started:.0f} s", flush=True)
    settings = run.current_settings().settings.training.replace(window_c=10**12)  # the window: every game
    window = training_window(run, settings).files
    block = tarfile.BLOCKSIZE
    return {
        "shards": [f.__dict__ for f in window],
        "per_game": [{"name": f.name, "rows": f.rows} for f in window],
        "stored": [str(p.relative_to(files)) for p in files.rglob("*") if p.is_file()],
        "window_games": len(window),
        "window_rows": sum(f.rows for f in window),
        "window_npz_bytes": sum(f.length for f in window),
        "window_shard_bytes": sum(block + -(-f.length // block) * block for f in window),
        "shards_made": len(packed),
        "rows_per_game": round(sum(count for _, count in made) / len(made), 1),
        "npz_bytes_per_game": round(sum(len(body) for body, _ in made) / len(made)),
    }


# --- the S3 server ----------------------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_s3(log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, endpoint
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise RuntimeError(f"moto's S3 server did not start: see {log}")


def upload(endpoint: str, files: Path, names: list[str]) -> None:
    import boto3
    from botocore.config import Config

    client = boto3.client("s3", endpoint_url=endpoint, config=Config(max_pool_connections=32), **_boto_keys())
    client.create_bucket(Bucket=BUCKET)
    started = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda name: client.upload_file(str(files / name), BUCKET, name), names))
    print(f"{len(names)} files copied to S3 in {time.perf_counter() - started:.0f} s", flush=True)


def _boto_keys() -> dict[str, str]:
    return {
        "aws_access_key_id": S3_KEYS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": S3_KEYS["AWS_SECRET_ACCESS_KEY"],
        "region_name": S3_KEYS["AWS_DEFAULT_REGION"],
    }


# --- the readers, each in a process of its own ---------------------------------------------------------------
def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def row_files(path: Path, way: str) -> list:
    from common.data.loader import RowFile

    return [RowFile(**f) for f in json.loads(path.read_text())[way]]


def read_blocks(window: Path, way: str, blocks: int, seed: int) -> dict:
    """Rows per second of the trainer's loader over the pass's first ``blocks`` blocks."""
    from common.nn.training import to_tensors
    from common.settings import TrainingSettings
    from server.files import read_file, read_range

    files = row_files(window, way)
    started = time.perf_counter()
    passes = loader_pass(files, read_file, read_range, seed, TrainingSettings().shuffle_rows, to_tensors)
    wanted = int(passes.block_starts[min(blocks, len(passes.blocks))]) // BATCH
    rows = 0
    for k, batch in enumerate(passes.batches()):
        rows += batch.size
        if k + 1 >= wanted:
            break
    seconds = time.perf_counter() - started
    return {"rows": rows, "seconds": seconds, "rows_per_s": rows / seconds, "peak_rss_mb": peak_rss_mb()}


def loader_pass(files, open_file, open_range, seed, block_rows, transform, rank=0, world=1):
    from common.data.loader import ShuffledPass

    return ShuffledPass(
        files,
        open_file,
        BATCH,
        seed,
        block_rows=block_rows,
        drop_last=True,
        transform=transform,
        open_range=open_range,
        rank=rank,
        world=world,
    )


def read_share(window: Path, out: Path, seed: int) -> None:
    """One ``torchrun`` process's share of a whole pass over the window's shards: the bytes it read."""
    from common.settings import TrainingSettings
    from server.files import read_file, read_range

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    counted = [0]

    def open_range(name: str, offset: int, length: int) -> bytes:
        data = read_range(name, offset, length)
        counted[0] += len(data)
        return data

    def open_file(name: str) -> bytes:
        data = read_file(name)
        counted[0] += len(data)
        return data

    files = row_files(window, "shards")
    started = time.perf_counter()
    passes = loader_pass(files, open_file, open_range, seed, TrainingSettings().shuffle_rows, None, rank, world)
    rows = sum(batch.size for batch in passes.batches())
    (out / f"rank{rank}.json").write_text(
        json.dumps(
            {
                "rank": rank,
                "bytes": counted[0],
                "loader_bytes": passes.read_bytes,
                "rows": rows,
                "seconds": time.perf_counter() - started,
                "peak_rss_mb": peak_rss_mb(),
            }
        )
    )


def child(args: argparse.Namespace) -> None:
    setup_django(json.loads(args.env))
    if args.child == "read":
        print(json.dumps(read_blocks(Path(args.window), args.way, args.blocks, args.seed)))
    else:
        read_share(Path(args.window), Path(args.out), args.seed)


def run_reader(env: dict, window: Path, way: str, blocks: int, seed: int) -> dict:
    command = [sys.executable, __file__, "--child", "read", "--env", json.dumps(env), "--window", str(window)]
    command += ["--way", way, "--blocks", str(blocks), "--seed", str(seed)]
    done = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_shares(env: dict, window: Path, out: Path, seed: int) -> list[dict]:
    torchrun = Path(sys.executable).parent / "torchrun"
    command = [str(torchrun), "--standalone", "--nproc-per-node", "2", __file__, "--child", "share"]
    command += ["--env", json.dumps(env), "--window", str(window), "--out", str(out), "--seed", str(seed)]
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=100_000, help="games in the window (before the held-out ones)")
    parser.add_argument("--distinct", type=int, default=300, help="distinct self-play games made and repeated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--blocks", type=int, default=2, help="shuffle blocks each figure reads")
    parser.add_argument("--child", choices=("read", "share"), help=argparse.SUPPRESS)
    parser.add_argument("--env", help=argparse.SUPPRESS)
    parser.add_argument("--window", help=argparse.SUPPRESS)
    parser.add_argument("--way", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    tmp = Path(tempfile.mkdtemp(prefix="sente-bench-loader-"))
    server = None
    try:
        data = tmp / "data"
        data.mkdir()
        disk = django_env(data, (data / "files").as_uri())
        setup_django(disk)
        window = build_window(data, args.games, args.distinct)
        window_path = tmp / "window.json"
        window_path.write_text(json.dumps(window))
        server, endpoint = start_s3(tmp / "moto.log")
        upload(endpoint, data / "files", window["stored"])
        s3 = {**disk, "STORAGE_URL": f"s3://{BUCKET}?endpoint_url={endpoint}"}

        figures: dict[tuple[str, str], list[dict]] = {}
        arms = [(s, w) for s in ("disk", "s3") for w in ("per_game", "shards")]
        for r in range(args.rounds):
            for storage, way in arms if r % 2 == 0 else arms[::-1]:
                env = disk if storage == "disk" else s3
                result = run_reader(env, window_path, way, args.blocks, seed=r)
                figures.setdefault((storage, way), []).append(result)
                print(
                    f"round {r + 1}: {storage}, {way}: {result['rows_per_s']:,.0f} rows/s "
                    f"({result['rows']:,} rows in {result['seconds']:.1f} s), peak {result['peak_rss_mb']:,.0f} MB",
                    flush=True,
                )
        shares = run_shares(disk, window_path, tmp, seed=7)
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    def best(storage: str, way: str) -> float:
        return max(f["rows_per_s"] for f in figures[(storage, way)])

    read = sum(s["bytes"] for s in shares)
    result = {
        "games": args.games,
        "window_games": window["window_games"],
        "window_rows": window["window_rows"],
        "rows_per_game": window["rows_per_game"],
        "npz_bytes_per_game": window["npz_bytes_per_game"],
        "shards": window["shards_made"],
        "blocks_read": args.blocks,
        "rounds": args.rounds,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        **{
            f"{storage}_{way}_rows_per_s_rounds": [round(f["rows_per_s"]) for f in figures[(storage, way)]]
            for storage, way in figures
        },
        "disk_per_game_rows_per_s": round(best("disk", "per_game")),
        "disk_shards_rows_per_s": round(best("disk", "shards")),
        "s3_per_game_rows_per_s": round(best("s3", "per_game")),
        "s3_shards_rows_per_s": round(best("s3", "shards")),
        "shard_speedup_disk": round(best("disk", "shards") / best("disk", "per_game"), 2),
        "shard_speedup_s3": round(best("s3", "shards") / best("s3", "per_game"), 2),
        "peak_rss_mb": round(max(f["peak_rss_mb"] for (_, way), fs in figures.items() if way == "shards" for f in fs)),
        "per_game_peak_rss_mb": round(
            max(f["peak_rss_mb"] for (_, way), fs in figures.items() if way == "per_game" for f in fs)
        ),
        "ddp2_bytes_read": [s["bytes"] for s in shares],
        "ddp2_rows": [s["rows"] for s in shares],
        "ddp2_peak_rss_mb": [round(s["peak_rss_mb"]) for s in shares],
        "window_shard_bytes": window["window_shard_bytes"],
        "window_npz_bytes": window["window_npz_bytes"],
        "ddp2_read_ratio": round(read / window["window_shard_bytes"], 4),
        "ddp2_read_ratio_npz": round(read / window["window_npz_bytes"], 4),
    }
    print(
        f"{result['window_games']:,} games ({result['window_rows']:,} rows) in {result['shards']} shards: from S3 "
        f"{result['s3_shards_rows_per_s']:,} rows/s from shards against {result['s3_per_game_rows_per_s']:,} a game at "
        f"a time ({result['shard_speedup_s3']}x), from disk {result['disk_shards_rows_per_s']:,} against "
        f"{result['disk_per_game_rows_per_s']:,} ({result['shard_speedup_disk']}x); two torchrun processes read "
        f"{result['ddp2_read_ratio']} times the window's bytes"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
