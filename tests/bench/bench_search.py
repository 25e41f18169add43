"""Benchmark of the batched search in self-play, on the CPU.

(a) Everything but the forward pass: self-play with the null evaluator (uniform policy, even value,
    no network; every leaf's inputs are still encoded into the batch buffer), 64 games in parallel
    in two groups of 32 (as with a network on a GPU, where one group's search overlaps the other's
    forward pass), the paper's settings (full searches of 600 visits with probability 0.25, cheap
    ones of 100), on 9x9 and on 19x19: microseconds per visit. Targets: 10 on 9x9, 25 on 19x19. On
    a GPU this overhead, not the network, decides the speed. Three rounds per size; the fastest is
    the figure (all three are printed).
(b) With KataGo's g170 b6c96 network (compiled) on 9x9, 64 games: visits/s of self-play against the
    evaluator's raw evaluations/s on batches of the same size (64 rows: with the network on the
    CPU, self-play keeps the games in one group), measured before and after the self-play run.
    Target: 90%. Cache hits and finished games make some visits without a network evaluation, so
    the ratio of network evaluations alone is printed too.
(c) Against KataGo itself, when the environment variable SENTE_KATAGO names a KataGo binary (built
    from its source; otherwise the figures are null): KataGo's self-play on the same network,
    board, visits (600 full, 100 cheap, 64 games) and threads, and ours, interleaved for --rounds
    rounds of --katago-seconds each side: the ratios (ours / KataGo's, median over the rounds) of
    training rows/s (rows of the games finished in the window: null when a side finished none;
    a window needs to outlast a game for it), and of network evaluations/s. Then the GTP search:
    KataGo's ``benchmark`` command (its visits/s at 2 threads, 800 visits, on ten positions of a
    9x9 game) against our ``gtp`` engine's genmove on ten positions of the same game (the search
    and the cache cleared before each, as KataGo's benchmark does), interleaved the same way.

Run from the project root: .venv/bin/python tests/bench/bench_search.py [--seconds 40]
[--rounds 3] [--katago-seconds 600]
The last line is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.evaluator import Evaluator  # noqa: E402
from client.search.engine import NullEvaluator  # noqa: E402
from client.selfplay.run import default_groups, run_selfplay  # noqa: E402
from common.encoding.features import Encoder, new_batch  # noqa: E402
from common.go.game import Game  # noqa: E402
from common.go.playout import new_rng, random_move  # noqa: E402
from common.go.rules import Rules  # noqa: E402
from common.settings import SelfPlaySettings  # noqa: E402

MODEL = ROOT.parent / "shared" / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
GAMES = 64
ROUNDS = 3
GTP_VISITS = 800
GTP_POSITIONS = 10
THREADS = 2

# KataGo's self-play as ours plays by default (SelfPlaySettings), on 9x9 only, 64 games at once, one
# search thread each, the network's batches up to 64 rows on THREADS threads.
KATAGO_SELFPLAY = {
    "logSearchInfo": "false",
    "logMoves": "false",
    "logGamesEvery": "1",
    "logToStdout": "true",
    "dataBoardLen": "19",
    "maxDataQueueSize": "2000",
    "maxRowsPerTrainFile": "10000",
    "firstFileRandMinProp": "0.15",
    "earlyForkGameProb": "0.05",
    "earlyForkGameExpectedMoveProp": "0.025",
    "forkGameProb": "0.0",
    "forkGameMinChoices": "3",
    "earlyForkGameMaxChoices": "10",
    "forkGameMaxChoices": "10",
    "sekiForkHackProb": "0.0",
    "initGamesWithPolicy": "true",
    "policyInitAreaProp": "0.04",
    "compensateAfterPolicyInitProb": "0.0",
    "sidePositionProb": "0.025",
    "cheapSearchProb": "0.75",
    "cheapSearchVisits": "100",
    "cheapSearchTargetWeight": "0.0",
    "reduceVisits": "true",
    "reduceVisitsThreshold": "0.9",
    "reduceVisitsThresholdLookback": "3",
    "reducedVisitsMin": "100",
    "reducedVisitsWeight": "0.1",
    "handicapAsymmetricPlayoutProb": "0.0",
    "normalAsymmetricPlayoutProb": "0.0",
    "maxAsymmetricRatio": "1.0",
    "minAsymmetricCompensateKomiProb": "0.0",
    "policySurpriseDataWeight": "0.5",
    "valueSurpriseDataWeight": "0.1",
    "estimateLeadProb": "0.0",
    "switchNetsMidGame": "false",
    "fancyKomiVarying": "false",
    "numGameThreads": str(GAMES),
    "maxMovesPerGame": "1600",
    "koRules": "SIMPLE,POSITIONAL,SITUATIONAL",
    "scoringRules": "AREA,TERRITORY",
    "taxRules": "NONE,NONE,SEKI,SEKI,ALL",
    "multiStoneSuicideLegals": "false,true",
    "hasButtons": "false,false,true",
    "bSizes": "9",
    "bSizeRelProbs": "1",
    "allowRectangleProb": "0.0",
    "komiMean": "7.0",
    "komiStdev": "1.0",
    "komiBigStdevProb": "0.05",
    "komiBigStdev": "10.0",
    "handicapProb": "0.0",
    "handicapCompensateKomiProb": "0.0",
    "forkCompensateKomiProb": "1.0",
    "sgfCompensateKomiProb": "0.0",
    "drawRandRadius": "0.0",
    "noResultStdev": "0.166666666",
    "maxVisits": "600",
    "numSearchThreads": "1",
    "nnMaxBatchSize": str(GAMES),
    "nnCacheSizePowerOfTwo": "15",
    "nnMutexPoolSizePowerOfTwo": "12",
    "numNNServerThreadsPerModel": "1",
    "numEigenThreadsPerModel": str(THREADS),
    "nnRandomize": "true",
    "chosenMoveTemperatureEarly": "0.8",
    "chosenMoveTemperatureHalflife": "9",
    "chosenMoveTemperature": "0.2",
    "chosenMoveSubtract": "0",
    "chosenMovePrune": "1",
    "rootNoiseEnabled": "true",
    "rootDirichletNoiseTotalConcentration": "10.83",
    "rootDirichletNoiseWeight": "0.25",
    "rootDesiredPerChildVisitsCoeff": "2",
    "rootNumSymmetriesToSample": "1",
    "useLcbForSelection": "false",
    "winLossUtilityFactor": "1.0",
    "staticScoreUtilityFactor": "0.0",
    "dynamicScoreUtilityFactor": "0.5",
    "dynamicScoreCenterZeroWeight": "0.0",
    "dynamicScoreCenterScale": "1.0",
    "noResultUtilityForWhite": "0.0",
    "drawEquivalentWinsForWhite": "0.5",
    "rootPolicyTemperatureEarly": "1.25",
    "rootPolicyTemperature": "1.1",
    "cpuctExploration": "1.1",
    "cpuctExplorationLog": "0.0",
    "fpuReductionMax": "0.2",
    "rootFpuReductionMax": "0.0",
    "numVirtualLossesPerThread": "1",
    "subtreeValueBiasFactor": "0.0",
}


def selfplay(evaluator, size: int, seconds: float, seed: int) -> dict:
    settings = SelfPlaySettings(board_sizes=(size,), board_size_weights=(1.0,))
    with tempfile.TemporaryDirectory() as out:
        s = run_selfplay(
            evaluator, settings, games=10**6, parallel=GAMES, out_dir=out, seed=seed, progress=False, time_limit=seconds
        )
    return {
        "seconds": s.seconds,
        "visits": s.search_visits,
        "rows": s.rows,
        "nn_evals": s.nn_evals,
        "steps": s.steps,
        "games_finished": s.games,
        "moves": s.moves,
    }


def encoded_batch(size: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n positions from random play, encoded and cropped to size x size as the search sends them."""
    rng = np.random.RandomState(size)
    kernel_rng = new_rng(size)
    games = []
    for _ in range(n):
        game = Game(size, rules=Rules(ko="POSITIONAL", suicide=False))
        for _ in range(rng.randint(size * size // 8, size * size // 2)):
            game.play(int(random_move(game.g, game.b, game.table, game.to_move, kernel_rng)))
        games.append(game)
    spatial, glob, _ = new_batch(n)
    Encoder().encode(games, spatial, glob)
    crop = spatial.reshape(n, 22, 19, 19)[:, :, :size, :size].reshape(n, 22, size * size)
    return np.ascontiguousarray(crop), glob


def raw_evals_per_s(evaluator: Evaluator, spatial: np.ndarray, glob: np.ndarray, size: int, seconds: float) -> float:
    evaluator.forward_raw(spatial, glob, size)  # compile / warm up
    calls = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or calls < 3:
        evaluator.forward_raw(spatial, glob, size)
        calls += 1
    return calls * spatial.shape[0] / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=40.0,
        help="seconds of each self-play measurement ((a): the three rounds together)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds against KataGo (3)")
    parser.add_argument(
        "--katago-seconds", type=float, default=600.0, help="seconds of each side's self-play per round (600)"
    )
    args = parser.parse_args()
    figures: dict = {"games_in_parallel": GAMES, "torch_threads": torch.get_num_threads()}

    # (a) the null evaluator; a short run first compiles everything. Each size runs three rounds of
    # a third of the time each and reports the fastest: the others differ from it by what the
    # machine's other tenants took (up to a fifth on a shared virtual machine), not by the search.
    selfplay(NullEvaluator(), 9, 5.0, seed=100)
    for size in (9, 19):
        rounds = [selfplay(NullEvaluator(), size, args.seconds / ROUNDS, seed=size + k) for k in range(ROUNDS)]
        per_visit = [r["seconds"] / r["visits"] * 1e6 for r in rounds]
        r = rounds[int(np.argmin(per_visit))]
        us = min(per_visit)
        figures[f"null_us_per_visit_{size}"] = round(us, 2)
        figures[f"null_us_per_visit_{size}_rounds"] = [round(x, 2) for x in per_visit]
        figures[f"null_visits_per_s_{size}"] = round(r["visits"] / r["seconds"])
        figures[f"null_cache_or_terminal_share_{size}"] = round(1 - r["nn_evals"] / r["visits"], 3)
        print(
            f"(a) null evaluator, {size}x{size}: {us:.2f} us per visit ({r['visits'] / r['seconds']:.0f} visits/s, "
            f"{r['nn_evals']} encoded leaves of {r['visits']} visits, {r['games_finished']} games finished); "
            f"rounds: {', '.join(f'{x:.2f}' for x in per_visit)}"
        )

    # (b) and (c): the network.
    evaluator = Evaluator.from_file(MODEL, device="cpu", compile=True, cache_size=0)
    batch = GAMES // default_groups(evaluator)
    figures["batch_rows"] = batch
    spatial, glob = encoded_batch(9, batch)
    before = raw_evals_per_s(evaluator, spatial, glob, 9, 10.0)
    selfplay(evaluator, 9, 10.0, seed=200)  # warm-up: compiles the shapes self-play meets
    r = selfplay(evaluator, 9, args.seconds, seed=9)
    after = raw_evals_per_s(evaluator, spatial, glob, 9, 10.0)
    raw = 0.5 * (before + after)
    visits_per_s = r["visits"] / r["seconds"]
    nn_per_s = r["nn_evals"] / r["seconds"]
    figures["visits_per_s_9"] = round(visits_per_s, 1)
    figures["selfplay_nn_evals_per_s_9"] = round(nn_per_s, 1)
    figures["evaluator_evals_per_s_9"] = round(raw, 1)
    figures["evaluator_evals_per_s_9_before_after"] = [round(before, 1), round(after, 1)]
    figures["efficiency_9"] = round(visits_per_s / raw, 3)
    figures["nn_efficiency_9"] = round(nn_per_s / raw, 3)
    print(
        f"(b) g170, 9x9, {GAMES} games: {visits_per_s:.0f} visits/s ({nn_per_s:.0f} network evaluations/s) "
        f"against {raw:.0f} raw evaluations/s at batch {batch} (before {before:.0f}, after {after:.0f}): "
        f"efficiency {visits_per_s / raw:.1%} (network evaluations alone {nn_per_s / raw:.1%})"
    )
    figures.update(against_katago(evaluator, args.rounds, args.katago_seconds))
    print(json.dumps(figures))


# --- (c) KataGo itself ------------------------------------------------------------------------------
def against_katago(evaluator, rounds: int, seconds: float) -> dict:
    binary = os.environ.get("SENTE_KATAGO")
    out: dict = {
        "katago": None,
        "vs_katago_rows_per_s_9": None,
        "vs_katago_nn_evals_per_s_9": None,
        "vs_katago_gtp_visits_per_s_9": None,
    }
    if not binary:
        print("(c) SENTE_KATAGO names no KataGo binary: no comparison")
        return out
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"SENTE_KATAGO={binary}: not an executable file")
    out["katago"] = binary
    sgf = _sample_game()
    rows, evals, gtp, rounds_out = [], [], [], []
    for k in range(rounds):
        ours = selfplay(evaluator, 9, seconds, seed=300 + k)
        theirs = katago_selfplay(binary, seconds)
        our_gtp = our_gtp_visits_per_s(sgf)
        their_gtp = katago_gtp_visits_per_s(binary, sgf)
        ours_rows = ours["rows"] / ours["seconds"]
        theirs_rows = theirs["rows"] / theirs["seconds"]
        if ours_rows > 0 and theirs_rows > 0:
            rows.append(ours_rows / theirs_rows)
        evals.append((ours["nn_evals"] / ours["seconds"]) / (theirs["nn_evals"] / theirs["seconds"]))
        gtp.append(our_gtp / their_gtp)
        rounds_out.append(
            {
                "ours": {
                    "rows_per_s": round(ours_rows, 2),
                    "nn_evals_per_s": round(ours["nn_evals"] / ours["seconds"], 1),
                    "gtp_visits_per_s": round(our_gtp, 1),
                },
                "katago": {
                    "rows_per_s": round(theirs_rows, 2),
                    "nn_evals_per_s": round(theirs["nn_evals"] / theirs["seconds"], 1),
                    "gtp_visits_per_s": round(their_gtp, 1),
                },
            }
        )
        print(f"(c) round {k + 1}: {json.dumps(rounds_out[-1])}")
    out["vs_katago_rows_per_s_9"] = round(statistics.median(rows), 3) if len(rows) == rounds else None
    out["vs_katago_nn_evals_per_s_9"] = round(statistics.median(evals), 3)
    out["vs_katago_gtp_visits_per_s_9"] = round(statistics.median(gtp), 3)
    out["katago_rounds"] = rounds_out
    print(
        f"(c) ours / KataGo's, median of {rounds} interleaved rounds: rows/s {out['vs_katago_rows_per_s_9']}, "
        f"network evaluations/s {out['vs_katago_nn_evals_per_s_9']}, GTP visits/s {out['vs_katago_gtp_visits_per_s_9']}"
    )
    return out


def _sample_game() -> Path:
    """A 9x9 game for the GTP measurement: the first of KataGo's own self-play games of the network
    in the golden files that starts from the empty board (its moves only), written to a file for
    KataGo's benchmark."""
    from common.go.sgf import read_sgf_collection

    games = (ROOT.parent / "shared" / "golden" / "katago_selfplay_9x9.sgfs").read_bytes().splitlines()
    records = (rec for line in games if line.strip() for rec in read_sgf_collection(line))
    record = next(rec for rec in records if not rec.setup and len(rec.moves) >= 40)  # from the empty board
    record.nodes = [record.nodes[0], *(n for n in record.nodes[1:] if n.move is not None)]
    for node in record.nodes:
        node.comment = None
        node.variations = []
    path = Path(tempfile.mkdtemp(prefix="bench-search-gtp-")) / "game.sgf"
    path.write_text(record.to_sgf())
    return path


def _positions(sgf: Path) -> list[list[tuple[int, int]]]:
    from common.go.sgf import read_sgf

    moves = read_sgf(sgf.read_bytes()).moves
    return [moves[: k * len(moves) // GTP_POSITIONS] for k in range(GTP_POSITIONS)]


def katago_selfplay(binary: str, seconds: float) -> dict:
    """KataGo's self-play for `seconds` from its first game's start, then stopped as by Ctrl-C: its
    network rows, and the training rows of the games it finished, from its log."""
    with tempfile.TemporaryDirectory(prefix="bench-katago-") as work:
        w = Path(work)
        (w / "models").mkdir()
        (w / "out").mkdir()
        os.symlink(MODEL, w / "models" / MODEL.name)
        cfg = w / "selfplay.cfg"
        cfg.write_text("".join(f"{k} = {v}\n" for k, v in KATAGO_SELFPLAY.items()))
        log = w / "log.txt"
        with log.open("w") as sink:
            proc = subprocess.Popen(
                [
                    binary,
                    "selfplay",
                    "-config",
                    str(cfg),
                    "-models-dir",
                    str(w / "models"),
                    "-output-dir",
                    str(w / "out"),
                ],
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
            try:
                while "starting game" not in log.read_text():
                    if proc.poll() is not None:
                        raise SystemExit(f"KataGo's self-play ended at once: {log.read_text()[-2000:]}")
                    time.sleep(0.2)
                start = time.perf_counter()
                time.sleep(seconds)
                proc.send_signal(signal.SIGINT)
                elapsed = time.perf_counter() - start
                proc.wait(timeout=600)
            finally:
                if proc.poll() is None:
                    proc.kill()
        text = log.read_text()

    def final(name: str) -> int:
        found = re.findall(rf"Final {name}: (\d+)", text)
        if not found:
            raise SystemExit(f"KataGo's self-play log has no 'Final {name}': {text[-2000:]}")
        return int(found[-1])

    return {"seconds": elapsed, "rows": final("data rows"), "nn_evals": final("NN rows")}


def katago_gtp_visits_per_s(binary: str, sgf: Path) -> float:
    """KataGo's benchmark command on the game's positions: its visits/s at THREADS threads."""
    with tempfile.TemporaryDirectory(prefix="bench-katago-gtp-") as work:
        cfg = Path(work) / "gtp.cfg"
        cfg.write_text(f"logDir = {work}\nnumSearchThreads = {THREADS}\nnumEigenThreadsPerModel = {THREADS}\n")
        result = subprocess.run(
            [
                binary,
                "benchmark",
                "-model",
                str(MODEL),
                "-config",
                str(cfg),
                "-v",
                str(GTP_VISITS),
                "-t",
                str(THREADS),
                "-n",
                str(GTP_POSITIONS),
                "-sgf",
                str(sgf),
            ],
            capture_output=True,
            text=True,
            timeout=3600,
        )
    found = re.findall(r"visits/s = ([\d.]+) nnEvals/s", result.stdout)
    if result.returncode != 0 or not found:
        raise SystemExit(f"KataGo's benchmark failed: {result.stdout[-2000:]}{result.stderr[-2000:]}")
    return float(found[-1])


def our_gtp_visits_per_s(sgf: Path) -> float:
    """Our GTP engine's genmove on the game's positions, each from a cleared board (tree and cache
    cleared): visits/s over the searches."""
    from common.go.geometry import color_letter, gtp_vertex

    proc = subprocess.Popen(
        [sys.executable, "-m", "client", "gtp", "--model", str(MODEL), "--visits", str(GTP_VISITS), "--device", "cpu"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )

    def ask(command: str) -> str:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(command + "\n")
        proc.stdin.flush()
        lines = []
        while True:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"our gtp engine ended on {command!r}")
            if line.strip() == "" and lines:
                break
            if line.strip():
                lines.append(line.strip())
        if not lines[0].startswith("="):
            raise SystemExit(f"our gtp engine refused {command!r}: {lines}")
        return lines[0]

    try:
        ask("boardsize 9")
        ask("komi 7")
        ask("genmove b")  # compiles and warms the network
        total = 0.0
        for moves in _positions(sgf):
            ask("clear_board")
            ask("clear_cache")
            for color, loc in moves:
                ask(f"play {color_letter(color)} {gtp_vertex(loc, 9, 9)}")
            to_move = "w" if moves and moves[-1][0] == 1 else "b"
            start = time.perf_counter()
            ask(f"genmove {to_move}")
            total += time.perf_counter() - start
        ask("quit")
    finally:
        proc.kill()
    return GTP_POSITIONS * GTP_VISITS / total


if __name__ == "__main__":
    main()
