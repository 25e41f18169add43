"""Cazenave's comparison of trunks at our scale: the paper's residual net, the nested bottleneck net
and the MobileNet with squeeze and excitation, trained on the same rows, evaluated on held-out ones;
and the speed of the small named sizes for 9x9 runs on small machines.

The rows: self-play of KataGo's g170 b6c96 network on 9x9 (komi 7, area scoring), made once with a
fixed seed and kept out of the repository, in ``$XDG_CACHE_HOME/sente/bench_arch/`` (``~/.cache``
without it); the same options make the same rows again. One game in ten is held out.

The networks, in four groups (``--group``; by default the first three):
- ``params``: about equal weights (about a million: b6c96, a 10-block c96 nested bottleneck net,
  Cazenave's b17c64mobile, his "less than one million parameters" net);
- ``speed``: about equal evaluations per second on this CPU: b6c96, then the nested bottleneck and
  MobileNet depths whose measured evaluations per second (batch 64, 9x9, fp32) come closest to it;
- ``mobile``: the 9x9 ablation's MobileNet question, trained as its arms train (the one-machine
  run's training settings, the methods page's norms and heads): b3c32 (the full arm's), tinymobile
  (the MobileNet arm's), tinymobile without squeeze and excitation, tinymobile at a third and at
  three times the learning rate, and a MobileNet of b3c32's depth and width; with ``--rows``, on
  the arms' own rows; and each one's speed as the ablation measures the arms' (9x9, the client's
  batch of ``--client-batch`` games, one thread), in ``--rounds`` interleaved rounds;
- ``sizes``: the named sizes from tiny to b6c96 (tiny, b3c32, b4c48, b4c48nbt, b6c96) as they are,
  measured for speed only and without the data set: evaluations per second (batch 64, 9x9, fp32)
  and training samples per second (the trainer's real step at the demo run's settings, batch 128,
  on 9x9 rows of KataGo's self-play, the tests' golden file), in ``--rounds`` interleaved rounds of
  ``--seconds`` each (the machine's speed drifts), each figure its best round.

Each network trains on the same batches in the same order for ``--samples`` samples (the run's
training settings, batch 128), then is evaluated on the held-out rows: policy top-1 accuracy
(the move of the search's policy target), value loss (cross-entropy of win/loss/no result),
score loss (cross-entropy of the score distribution), and evaluations per second on this CPU (a
figure to take only from a quiet machine: other processes slow it many times over).

Cazenave's claims (his Tables 3-7, 19x19, KataGo's games, 200 epochs of a million states): for the
same number of parameters, MobileNets with squeeze and excitation are more accurate than residual
nets (policy accuracy about 57% against 53% at the speed of a 20-block residual net) and have a
lower value loss. Our scale is far smaller (9x9, thousands of rows, minutes of CPU), so the table
says what our trunks do here, not whether his figures hold at his. Every network has the paper's
norms and heads, so that only the trunks differ.

Run from the project root: .venv/bin/python tests/bench/bench_arch.py [--games 1000] [--visits 100]
[--samples 100000] [--group params,speed,sizes,mobile] [--rounds 3] [--seconds 3] [--rows FOLDER]
[--seeds 1] [--client-batch 16]
The last line is one JSON object. With ``params``, ``speed`` or ``mobile``: per network name, ``params``,
``policy_acc``, ``value_loss``, ``score_loss`` (with ``--seeds`` above 1, the mean of the seeds,
each seed's in ``seeds``) and ``evals_per_s``; and the data set's ``rows``, ``held_out_rows`` and
``samples``. With ``mobile``, besides: ``evals_per_s_client_<network>``, ``client_batch``,
``client_batch_rounds`` and ``client_batch_load`` (the load averages before and after). With
``sizes``: per size, ``evals_per_s_<size>``, ``train_samples_per_s_<size>`` and ``params_<size>``,
the ``sizes_rounds`` and ``sizes_seconds`` they were measured in, and the load averages (1 minute)
before and after them, ``sizes_load_start`` and ``sizes_load_end``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.evaluator import Evaluator  # noqa: E402
from client.selfplay.run import run_selfplay  # noqa: E402
from common.architecture import MIN_MISC_VALUES, OWN_POLICY_CHANNELS, ModelConfig, named_config  # noqa: E402
from common.data.loader import RowFile, ShuffledPass, decode_rows, make_batch  # noqa: E402
from common.nn.model import Model, count_parameters  # noqa: E402
from common.nn.speed import evals_per_second, training_samples_per_second  # noqa: E402
from common.nn.training import TrainBatch, Trainer, to_tensors  # noqa: E402
from common.settings import SelfPlaySettings, TrainingSettings  # noqa: E402
from server.platform.demo import demo_settings  # noqa: E402

MODEL = ROOT.parent / "shared" / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
GOLDEN_ROWS = ROOT.parent / "shared" / "golden" / "katago_selfplay_9x9.npz"
BATCH = 128
HOLD_OUT_ONE_IN = 10
GROUPS = ("params", "speed", "sizes", "mobile")
SIZES = ("tiny", "b3c32", "b4c48", "b4c48nbt", "b6c96")  # the small named sizes, smallest first


def data_dir(games: int, visits: int, seed: int) -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "sente" / "bench_arch" / f"g170-9x9-games{games}-visits{visits}-seed{seed}"


def make_rows(games: int, visits: int, seed: int) -> Path:
    """The self-play rows, made once (a finished set has a ``done`` file)."""
    out = data_dir(games, visits, seed)
    if (out / "done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*"):
        stale.unlink()
    settings = SelfPlaySettings(
        board_sizes=(9,),
        board_size_weights=(1.0,),
        visits=visits,
        cheap_visits=max(1, visits // 4),
        max_moves=2 * 81,
    )
    torch.set_num_threads(2)
    evaluator = Evaluator.from_file(MODEL, device="cpu", compile=True)
    print(f"making {games} self-play games of g170 at {visits} visits in {out} (once)", flush=True)
    start = time.perf_counter()
    run_selfplay(evaluator, settings, games=games, parallel=32, out_dir=out, seed=seed, progress=False)
    (out / "done").write_text(f"{time.perf_counter() - start:.0f} s\n")
    return out


def row_files(folder: Path) -> tuple[list[RowFile], list[RowFile]]:
    """(training files, held-out files) of the npz files under ``folder``: every tenth game is held out."""
    files = [RowFile(str(p), len(decode_rows(p.read_bytes(), p.name))) for p in sorted(folder.rglob("*.npz"))]
    held = [f for i, f in enumerate(files) if i % HOLD_OUT_ONE_IN == 0]
    train = [f for i, f in enumerate(files) if i % HOLD_OUT_ONE_IN != 0]
    return train, held


def read(name: str) -> bytes:
    return Path(name).read_bytes()


def batches(files: list[RowFile], seed: int, samples: int | None = None) -> list[TrainBatch]:
    """Batches of the files in a fixed shuffled order (passes repeat until ``samples``)."""
    out: list[TrainBatch] = []
    k = 0
    while True:
        shuffled = ShuffledPass(files, read, BATCH, seed=seed + k, drop_last=samples is not None, transform=to_tensors)
        before = len(out)
        for batch in shuffled.batches():
            out.append(batch)
            if samples is not None and len(out) * BATCH >= samples:
                return out
        if len(out) == before:
            rows = sum(f.rows for f in files)
            raise SystemExit(f"the data set has {rows} rows here, fewer than a batch ({BATCH}): play more --games")
        k += 1
        if samples is None:
            return out


# Only the trunks differ: every network has the paper's norms and heads (the named nested bottleneck
# and mobile sizes come with the methods page's, which would mix their gains into the comparison).
PAPERS_NORM_AND_HEADS = dict(norm="batch", policy_channels=OWN_POLICY_CHANNELS, misc_values=MIN_MISC_VALUES)


def nbt_config(blocks: int) -> ModelConfig:
    base = named_config("b6c96nbt")
    kinds = ["nbt_gpool" if i % 3 == 2 and i < blocks - 1 else "nbt" for i in range(blocks)]
    return replace(base, blocks=kinds, **PAPERS_NORM_AND_HEADS)


def mobile_config(blocks: int) -> ModelConfig:
    return replace(named_config("b17c64mobile"), blocks=["mobile"] * blocks, **PAPERS_NORM_AND_HEADS)


def evals_per_s(config: ModelConfig, seconds: float = 3.0) -> float:
    """Forward passes per second of a batch of 64 9x9 positions, fp32, this CPU, no gradients."""
    return evals_per_second(config, board=9, batch=64, seconds=seconds)


def networks(groups: list[str]) -> dict[str, ModelConfig]:
    chosen: dict[str, ModelConfig] = {"b6c96": named_config("b6c96")}
    if "params" in groups:
        chosen["b10c96nbt"] = nbt_config(10)
        chosen["b17c64mobile"] = mobile_config(17)
    if "speed" in groups:
        target = evals_per_s(chosen["b6c96"])
        print(f"b6c96: {target:.0f} evaluations/s; finding the depths of equal speed", flush=True)
        for family, make, depths in (("nbt", nbt_config, range(4, 17, 2)), ("mobile", mobile_config, range(6, 31, 3))):
            speeds = {d: evals_per_s(make(d), seconds=1.5) for d in depths}
            d = min(speeds, key=lambda k: abs(speeds[k] - target))
            name = f"b{d}c96nbt" if family == "nbt" else f"b{d}c64mobile"
            chosen.setdefault(name, make(d))
    return chosen


# The ablation's MobileNet question (docs/experiments): the 9x9 arms' trunks as the arms train them
# (the one-machine run's training settings, the methods page's norms and heads), and what the
# MobileNet arm did not try: its blocks without squeeze and excitation, other learning rates, and a
# MobileNet of b3c32's width and depth. Name: (config, learning rate factor).
def mobile_networks() -> dict[str, tuple[ModelConfig, float]]:
    tinymobile = named_config("tinymobile")
    return {
        "b3c32": (named_config("b3c32"), 1.0),
        "tinymobile": (tinymobile, 1.0),
        "tinymobile-no-se": (replace(tinymobile, se_ratio=0), 1.0),
        "tinymobile-lr/3": (tinymobile, 1.0 / 3.0),
        "tinymobile-lr*3": (tinymobile, 3.0),
        "b3c32mobile": (replace(tinymobile, blocks=["mobile"] * 3, trunk_channels=32), 1.0),
    }


def golden_batches(count: int, seed: int) -> list[TrainBatch]:
    """``count`` batches of the golden file's 9x9 rows, each its own draw of ``BATCH`` rows turned by
    random symmetries."""
    rows = decode_rows(GOLDEN_ROWS.read_bytes(), GOLDEN_ROWS.name)
    if len(rows) < BATCH:
        raise SystemExit(f"{GOLDEN_ROWS}: {len(rows)} rows, fewer than a batch ({BATCH})")
    rng = np.random.default_rng(seed)
    return [to_tensors(make_batch(rows.take(rng.choice(len(rows), BATCH, replace=False)), rng)) for _ in range(count)]


def size_speeds(rounds: int, seconds: float, seed: int) -> dict[str, object]:
    """The ``sizes`` group: each size's evaluations and training samples per second, the best of
    ``rounds`` rounds, every size measured once in each round (in turn forwards and backwards)."""
    batches = itertools.cycle(golden_batches(8, seed))
    trainers = {n: Trainer(n, demo_settings(9, n).training, device="cpu", seed=seed) for n in SIZES}
    load_start = os.getloadavg()[0]
    evals: dict[str, list[float]] = {n: [] for n in SIZES}
    train: dict[str, list[float]] = {n: [] for n in SIZES}
    for k in range(rounds):
        for name in SIZES if k % 2 == 0 else SIZES[::-1]:
            evals[name].append(evals_per_s(named_config(name), seconds))
            train[name].append(training_samples_per_second(trainers[name], batches, seconds))
        print(
            f"round {k + 1}: "
            + ", ".join(f"{n} {evals[n][-1]:.0f} evals/s {train[n][-1]:.0f} samples/s" for n in SIZES),
            flush=True,
        )
    load_end = os.getloadavg()[0]
    figures: dict[str, object] = {"sizes_rounds": rounds, "sizes_seconds": seconds}
    print(f"{'size':<10} {'params':>9} {'evals/s':>8} {'train samples/s':>16}   (best of {rounds} rounds)")
    for name in SIZES:
        params = count_parameters(trainers[name].model)
        figures[f"evals_per_s_{name}"] = round(max(evals[name]), 1)
        figures[f"train_samples_per_s_{name}"] = round(max(train[name]), 1)
        figures[f"params_{name}"] = params
        print(f"{name:<10} {params:>9,} {max(evals[name]):>8.0f} {max(train[name]):>16.1f}")
    print(f"load average (1 minute): {load_start:.2f} before, {load_end:.2f} after", flush=True)
    figures["sizes_load_start"] = round(load_start, 2)
    figures["sizes_load_end"] = round(load_end, 2)
    return figures


def client_batch_speeds(configs: dict[str, ModelConfig], args: argparse.Namespace) -> dict[str, object]:
    """The ``mobile`` group's speeds as the ablation measures its arms': 9x9, a batch of the client's
    games at once (``--client-batch``, the ablation's ``--parallel``), one thread, in ``--rounds``
    interleaved rounds (in turn forwards and backwards) of ``--seconds`` each, each the best of its
    rounds: measured one network after the other, the 9x9 reports found the MobileNet 0.69 and 1.05
    times as fast as b3c32, each beside other work."""
    names = list(configs)
    found: dict[str, list[float]] = {n: [] for n in names}
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    load_start = os.getloadavg()[0]
    try:
        for k in range(args.rounds):
            for name in names if k % 2 == 0 else names[::-1]:
                found[name].append(evals_per_second(configs[name], 9, args.client_batch, args.seconds))
            print(
                f"round {k + 1}, batch {args.client_batch}, one thread: "
                + ", ".join(f"{n} {found[n][-1]:.0f}" for n in names),
                flush=True,
            )
    finally:
        torch.set_num_threads(threads)
    load_end = os.getloadavg()[0]
    figures: dict[str, object] = {
        "client_batch": args.client_batch,
        "client_batch_rounds": args.rounds,
        "client_batch_load": [round(load_start, 2), round(load_end, 2)],
    }
    for name in names:
        figures[f"evals_per_s_client_{name}"] = round(max(found[name]), 1)
    base = max(found["b3c32"])
    print(
        f"{'network':<17} {'evals/s':>8} {'vs b3c32':>9}   "
        f"(batch {args.client_batch}, one thread, best of {args.rounds})"
    )
    for name in names:
        print(f"{name:<17} {max(found[name]):>8.0f} {max(found[name]) / base:>9.2f}")
    print(f"load average (1 minute): {load_start:.2f} before, {load_end:.2f} after", flush=True)
    return figures


def held_out_metrics(model: Model, held: list[TrainBatch]) -> dict[str, float]:
    model.eval()
    correct = policy_rows = 0.0
    value_sum = value_rows = score_sum = score_rows = 0.0
    with torch.inference_mode():
        for batch in held:
            t = batch.targets
            out = model(batch.spatial, batch.global_inputs)
            legal = t.policy_mask() > 0
            logits = out.policy[:, 0].masked_fill(~legal, float("-inf"))
            has_policy = t.policy_weight > 0
            hit = logits.argmax(dim=1) == t.policy.argmax(dim=1)
            correct += float((hit & has_policy).sum())
            policy_rows += float(has_policy.sum())
            ce = -(t.value * torch.log_softmax(out.value, dim=-1)).sum(dim=-1)
            value_sum += float((ce * t.value_weight).sum())
            value_rows += float(t.value_weight.sum())
            score_ce = -(t.score_distribution * torch.log_softmax(out.score_belief, dim=-1)).sum(dim=-1)
            score_sum += float((score_ce * t.ownership_weight).sum())
            score_rows += float(t.ownership_weight.sum())
    return {
        "policy_acc": correct / max(policy_rows, 1.0),
        "value_loss": value_sum / max(value_rows, 1e-9),
        "score_loss": score_sum / max(score_rows, 1e-9),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000, help="self-play games of the data set (1000)")
    parser.add_argument("--visits", type=int, default=100, help="visits of its full searches (100)")
    parser.add_argument("--samples", type=int, default=100_000, help="training samples per network (100000)")
    parser.add_argument(
        "--group", default="params,speed,sizes", help="params, speed, sizes, mobile, or several (see the docstring)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the speed figures (3)")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds of each figure in each round (3)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--seeds",
        type=int,
        default=1,
        help="trainings of each network, from seeds --seed on; the figures are their mean (1)",
    )
    parser.add_argument(
        "--client-batch", type=int, default=16, help="the mobile group's speed: games at once, as the client plays (16)"
    )
    parser.add_argument(
        "--rows", type=Path, help="train on the npz files under this folder (e.g. an ablation arm's) instead of g170's"
    )
    args = parser.parse_args()
    groups = [g.strip() for g in args.group.split(",") if g.strip()]
    if not groups or set(groups) - set(GROUPS):
        raise SystemExit(f"--group: expected some of {', '.join(GROUPS)}, got {args.group!r}")
    if args.samples < BATCH:
        raise SystemExit(f"--samples: at least one batch ({BATCH}), got {args.samples}")
    if args.seeds < 1:
        raise SystemExit(f"--seeds: at least 1, got {args.seeds}")
    if args.client_batch < 1:
        raise SystemExit(f"--client-batch: at least 1, got {args.client_batch}")
    if args.rounds < 1:
        raise SystemExit(f"--rounds: at least 1, got {args.rounds}")
    if not args.seconds > 0:
        raise SystemExit(f"--seconds: a positive number, got {args.seconds}")

    torch.set_num_threads(2)
    figures: dict[str, object] = {}
    if "sizes" in groups:
        figures.update(size_speeds(args.rounds, args.seconds, args.seed))
    trunks = [g for g in groups if g != "sizes"]
    if trunks:
        figures.update(compare_trunks(trunks, args))
    print(json.dumps(figures))


def compare_trunks(groups: list[str], args: argparse.Namespace) -> dict[str, object]:
    """The ``params``, ``speed`` and ``mobile`` groups: each network trained on the data set, then measured."""
    folder = args.rows or make_rows(args.games, args.visits, args.seed)
    train_files, held_files = row_files(folder)
    train = batches(train_files, args.seed, args.samples)
    held = batches(held_files, args.seed + 1000)
    rows = sum(f.rows for f in train_files)
    held_rows = sum(f.rows for f in held_files)
    print(f"{rows} training rows, {held_rows} held out; {len(train) * BATCH} samples per network", flush=True)

    torch.set_num_threads(2)
    papers = TrainingSettings(architecture="b6c96", batch_size=BATCH)
    runs = demo_settings(9).training.replace(batch_size=BATCH)  # the 9x9 arms' training
    trunks = [g for g in groups if g in ("params", "speed")]
    chosen = {name: (config, papers) for name, config in networks(trunks).items()} if trunks else {}
    if "mobile" in groups:
        for name, (config, factor) in mobile_networks().items():
            chosen[name] = (config, runs.replace(learning_rate=runs.learning_rate * factor))
    figures: dict[str, object] = {"rows": rows, "held_out_rows": held_rows, "samples": len(train) * BATCH}
    print(f"{'network':<17} {'params':>9} {'policy acc':>10} {'value loss':>10} {'score loss':>10} {'evals/s':>8}")
    for name, (config, settings) in chosen.items():
        # Each seed its own initial weights; the batches are the same, in the same order.
        runs_metrics, seconds = [], 0.0
        for seed in range(args.seed, args.seed + args.seeds):
            trainer = Trainer(name, settings, device="cpu", seed=seed, config=config)
            start = time.perf_counter()
            trainer.model.train()
            for batch in train:
                trainer.step(batch)
            seconds += time.perf_counter() - start
            runs_metrics.append(held_out_metrics(trainer.model, held))
        metrics = {k: float(np.mean([m[k] for m in runs_metrics])) for k in runs_metrics[0]}
        speed = evals_per_s(config)
        params = count_parameters(trainer.model)
        figure: dict[str, object] = {
            **{k: round(v, 4) for k, v in metrics.items()},
            "evals_per_s": round(speed, 1),
            "params": params,
        }
        if args.seeds > 1:
            figure["seeds"] = [{k: round(v, 4) for k, v in m.items()} for m in runs_metrics]
        figures[name] = figure
        spread = (
            "; seeds: " + ", ".join(f"{m['policy_acc']:.3f}/{m['value_loss']:.3f}" for m in runs_metrics)
            if args.seeds > 1
            else ""
        )
        print(
            f"{name:<17} {params:>9,} {metrics['policy_acc']:>10.3f} {metrics['value_loss']:>10.3f} "
            f"{metrics['score_loss']:>10.3f} {speed:>8.0f}   ({seconds:.0f} s of training{spread})",
            flush=True,
        )
    if "mobile" in groups:  # each trunk once: the learning rate variants share tinymobile's
        trunks_once: dict[str, str] = {}
        for name, (config, _) in mobile_networks().items():
            trunks_once.setdefault(repr(config), name)
        figures.update(client_batch_speeds({name: chosen[name][0] for name in trunks_once.values()}, args))
    print("Cazenave (19x19, 10,000 GPU hours): MobileNets+SE more accurate and lower value loss than residual nets")
    print(f"of the same weight or speed. Load average at the end: {os.getloadavg()[0]:.1f}.")
    return figures


if __name__ == "__main__":
    main()
