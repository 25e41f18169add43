"""Strength benchmark of the search methods: each method on against off, at equal visits.

For each method, a match of our batched match play between two copies of KataGo's g170 b6c96
network on 9x9 (komi 7, area scoring, the rating settings before LCB became their default: no
noise, tree reuse, move temperature 0.5 down to 0.2), one side searching with the method and the
other without, colours alternating, at 100 and at 400 visits per move. Printed per method and
visits: the on side's Elo gain with its 95% interval (normal approximation of the score), beside
what the seeds claim, and the method's cost in visits per second (the same searches timed both
ways, interleaved).

The methods and their settings (each a key of the run's search settings):
- ``lcb``: the move of best lower confidence bound (KataGo's match and GTP play: 5 standard
  errors, moves with at least 15% of the top visits). The seeds give no figure.
- ``dynamic_cpuct``: dynamic variance-scaled cPUCT (methods page: scale 0.85, prior 0.40 of
  weight 2). The page measures about +75 Elo for it together with uncertainty-weighted playouts,
  which need the short-term error heads g170 does not have.
- ``gpuct``: Cazenave's Generalized PUCT, exponent 0.737 with his c = 0.057 brought to our value
  scale by the ratio of our PUCT constant to his best one on average (1.1 / 0.15): c = 0.418. His
  Table 2 has it 5-25 points of score above PUCT at 256 to 1024 descents (+35 to +90 Elo).
- ``subtree_bias``: subtree value bias correction (methods page: lambda 0.35, alpha 0.8; the page
  measures +30 to +60 Elo).
- ``gumbel``: Gumbel search (Danihelka et al., ICLR 2022: sequential halving over 16 considered
  moves at the root, the improved policy's deterministic choice below it; without noise, as the
  other side), against PUCT. The paper has it stronger than PUCT at few simulations and as strong
  at many; its keys are also ``elo_gumbel_vs_puct_<visits>`` (``--methods gumbel --visits
  8,16,32,64,200``).

About 200 games per method and visits give an interval of +-50 Elo; that takes hours on a CPU, so
``--games`` sets the count (the interval is printed with every figure).

``--sweep`` measures instead Cazenave's claim that GPUCT's best constant stays the same as the
visits grow where PUCT's drifts upward (his Tables 1 and 2): at each visits level, PUCT (exponent
0.5) and GPUCT (0.737) with their constants times 0.5, 0.7, 1, 1.4 and 2 each play the default
search (PUCT, c = 1.1; PUCT times 1 is that search itself, 0 without a match, and GPUCT times 1
is the ``gpuct`` method's match, kept under its key); printed per rule and visits: each
constant's Elo and the best one. ``--multipliers`` plays those asked for; the others are shown where
the ``--results`` file holds their matches finished, so several processes can share a sweep and a
run asking for ``--multipliers 1`` prints the whole table the file holds. The JSON holds ``sweep``
(rule -> visits -> multiplier -> Elo) and ``best_multiplier`` (rule -> visits).

Run from the project root: .venv/bin/python tests/bench/bench_methods.py [--games 200]
[--visits 100,400] [--methods lcb,dynamic_cpuct,gpuct] [--parallel 16] [--threads 2] [--results FILE]
[--sweep [--rules puct,gpuct] [--multipliers 0.5,0.7,1,1.4,2]]
The last line is one JSON object: elo_<method> and elo_<method>_ci95 for each method (at the
highest visits run; per visits under "by_visits"; for gumbel also per visits as above), and
visits_per_s_<method> with its off side.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from client.contribute.worker import search_threads  # noqa: E402
from client.evaluator import Evaluator  # noqa: E402
from client.match.run import MatchSummary, run_match  # noqa: E402
from client.search.engine import BatchedSearch  # noqa: E402
from common.files import atomic_write  # noqa: E402
from common.go.game import Game  # noqa: E402
from common.settings import MatchSettings, RulesChoice, SearchSettings  # noqa: E402

MODEL = ROOT.parent / "shared" / "models" / "g170-b6c96-s175395328-d26788732.bin.gz"
OFF = MatchSettings().search.replace(lcb_for_selection=False)  # the play search before LCB
METHODS: dict[str, tuple[SearchSettings, str]] = {
    "subtree_bias": (
        OFF.replace(subtree_value_bias_factor=0.35, subtree_value_bias_exponent=0.8),
        "+30 to +60 (methods page)",
    ),
    "dynamic_cpuct": (
        OFF.replace(
            cpuct_utility_stdev_scale=0.85, cpuct_utility_stdev_prior=0.40, cpuct_utility_stdev_prior_weight=2.0
        ),
        "about +75 with uncertainty weighting (methods page)",
    ),
    "lcb": (OFF.replace(lcb_for_selection=True), "no figure in the seeds"),
    "gpuct": (OFF.replace(puct_exponent=0.737, cpuct=0.057 * 1.1 / 0.15), "+35 to +90 at 256-1024 descents (Cazenave)"),
    "gumbel": (OFF.replace(gumbel=True), "above PUCT at few visits, even at many (Danihelka et al.)"),
}


SIDES = ("on", "off")


def match_settings(visits: int) -> MatchSettings:
    return MatchSettings().replace(
        visits=visits,
        board_sizes=(9,),
        board_size_weights=(1.0,),
        komi=7.0,
        rules=RulesChoice(scoring=("AREA",), ko=("POSITIONAL",), suicide=(False,), tax=("NONE",), button=(False,)),
        max_moves=200,
    )


def elo_gain(
    evaluator, on: SearchSettings, visits: int, games: int, parallel: int, seed: int, played=None, on_game=None
) -> tuple[float, float]:
    """The on side's Elo gain and its 95% half-interval; ``played`` (a MatchSummary) continues a match
    that was stopped, and ``on_game()`` is called after each game is counted into it."""
    settings = match_settings(visits)
    summary = run_match(
        [evaluator, evaluator],
        SIDES,
        settings,
        games=games,
        parallel=parallel,
        out_dir=None,
        seed=seed,
        searches=(on, settings.search),
        played=played,
        on_game=None if on_game is None else lambda _name, _sgf: on_game(),
    )
    return summary.elo()


def visits_per_second(evaluator, searches: list[SearchSettings], visits: int, rounds: int = 3) -> list[float]:
    """Visits/s of each settings on the same 16 positions, interleaved, best of rounds."""
    games = []
    for k in range(16):
        game = Game(9, komi=7.0)
        rng = torch.Generator().manual_seed(k)
        while game.num_moves < 10 + k:
            legal = game.legal_moves()
            game.play(legal[int(torch.randint(len(legal), (1,), generator=rng))])
        games.append(game)
    best = [0.0] * len(searches)
    for _ in range(rounds):
        for j, search in enumerate(searches):
            engine = BatchedSearch(evaluator, len(games), visits, 1, seed=j)
            start = time.perf_counter()
            for i, game in enumerate(games):
                engine.start(i, game, visits, search, full=True)
            engine.run()
            best[j] = max(best[j], len(games) * visits / (time.perf_counter() - start))
    return best


MULTIPLIERS = (0.5, 0.7, 1.0, 1.4, 2.0)
RULES = {"puct": (0.5, OFF.cpuct), "gpuct": (0.737, METHODS["gpuct"][0].cpuct)}


class Results:
    """Each match's figure (Elo, 95% half-interval; None where a match gave no finite figure), kept
    in a file when one is given: a run with the same games and seed takes the matches it holds, and
    continues a match it stopped from the games it had finished (kept under "unfinished")."""

    def __init__(self, path: Path | None, games: int, seed: int) -> None:
        self.path, self.games, self.seed = path, games, seed
        self.done: dict[str, dict[str, float | None]] = {}
        self.unfinished: dict[str, dict] = {}
        if path is not None and path.exists():
            data = json.loads(path.read_text())
            if data.get("games") == games and data.get("seed") == seed:
                self.done = dict(data.get("by_visits", {}))
                self.unfinished = dict(data.get("unfinished", {}))

    def match(self, key: str, play) -> tuple[float, float]:
        """The figure of match `key`: the file's, or ``play(played, on_game)`` it (``played``: the
        summary of its games finished before, or a new one; ``on_game()``: after each game) and keep it."""
        figure = self.kept(key)
        if figure is not None:
            return figure
        stopped = self.unfinished.get(key)
        played = MatchSummary.from_dict(stopped) if stopped else MatchSummary(names=SIDES)
        if stopped:
            print(f"{key}: {played.games} of {self.games} games played before; playing the rest", flush=True)

        def on_game() -> None:
            self.unfinished[key] = played.to_dict()
            self.save()

        elo, half = play(played, on_game)
        finite = math.isfinite(elo) and math.isfinite(half)
        self.done[key] = {"elo": elo if finite else None, "ci95": half if finite else None}
        self.unfinished.pop(key, None)
        self.save()
        return elo, half

    def kept(self, key: str) -> tuple[float, float] | None:
        """The figure of match `key` if the file holds it finished (None otherwise), without playing."""
        if key not in self.done:
            return None
        elo, half = (self.done[key][k] for k in ("elo", "ci95"))
        return (math.nan if elo is None else elo), (math.nan if half is None else half)

    def save(self) -> None:
        if self.path is not None:
            data = {"games": self.games, "seed": self.seed, "by_visits": self.done}
            if self.unfinished:
                data["unfinished"] = self.unfinished
            atomic_write(self.path, (json.dumps(data, indent=1) + "\n").encode())  # as kept in docs/


def sweep(
    evaluator,
    visits_levels: list[int],
    games: int,
    parallel: int,
    seed: int,
    results: Results,
    rules: list[str] | None = None,
    multipliers: tuple[float, ...] = MULTIPLIERS,
) -> dict:
    """Each rule's constants against the default search at each visits level (see the docstring)."""
    table: dict[str, dict[str, dict[str, float | None]]] = {}
    best: dict[str, dict[str, float]] = {}
    # A point whose settings are a method's (GPUCT times 1) is that method's match: the same games.
    methods = {settings: name for name, (settings, _) in METHODS.items()}
    for rule, (exponent, c) in RULES.items():
        if rules is not None and rule not in rules:
            continue
        table[rule], best[rule] = {}, {}
        for visits in visits_levels:
            row: dict[str, float | None] = {}
            # The multipliers asked for are played; the others are shown where the file holds them
            # finished (another process's share of the sweep), so that the best is over all of them.
            for m in sorted({*multipliers, *MULTIPLIERS}):
                settings = OFF.replace(puct_exponent=exponent, cpuct=c * m)
                key = f"{methods.get(settings, f'sweep_{rule}_x{m:g}')}_{visits}"
                if settings == OFF:  # the default search itself: 0 by definition, not a match
                    figure: tuple[float, float] | None = (0.0, 0.0)
                elif m in multipliers:
                    figure = results.match(
                        key,
                        lambda played, on_game, s=settings, v=visits: elo_gain(
                            evaluator, s, v, games, parallel, seed, played, on_game
                        ),
                    )
                else:
                    figure = results.kept(key)
                if figure is None:
                    continue
                elo, half = figure
                row[f"{m:g}"] = round(elo, 1) if math.isfinite(elo) else None
                print(f"{rule:<6} c {c * m:.3f} (x{m:g}) {visits:>5} visits: {elo:+.0f} +- {half:.0f} Elo")
            table[rule][str(visits)] = row
            scored = {k: v for k, v in row.items() if v is not None}
            best[rule][str(visits)] = float(max(scored, key=lambda k: scored[k])) if scored else math.nan
            print(f"{rule:<6} {visits:>5} visits: best multiplier {best[rule][str(visits)]:g} of {', '.join(row)}")
    return {"games": games, "sweep": table, "best_multiplier": best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200, help="games per method and visits (200)")
    parser.add_argument("--visits", default="100,400", help="visits per move, comma separated (100,400)")
    parser.add_argument("--methods", default="lcb,dynamic_cpuct,gpuct,subtree_bias", help="methods to run")
    parser.add_argument("--parallel", type=int, default=16, help="games played at once (16)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--threads",
        type=int,
        default=2,
        help="threads of the network and of the search's passes (2); 1 lets two processes share a sweep on 2 cores",
    )
    parser.add_argument("--sweep", action="store_true", help="the constants of PUCT and GPUCT over the visits")
    parser.add_argument("--rules", default=",".join(RULES), help="--sweep: the rules to sweep (puct,gpuct)")
    parser.add_argument(
        "--multipliers",
        default=",".join(f"{m:g}" for m in MULTIPLIERS),
        help="--sweep: the multipliers of each rule's constant (0.5,0.7,1,1.4,2); a subset lets several "
        "processes or machines share a sweep, each with its own --results file",
    )
    parser.add_argument(
        "--results",
        type=Path,
        help="a JSON file kept up to date with each match's figure as it finishes, and with each game of the "
        "match under way; a run with the same games and seed takes the matches already there from it and "
        "plays on the one it stopped in (a long run can span sittings)",
    )
    args = parser.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for m in methods:
        if m not in METHODS:
            raise SystemExit(f"--methods: unknown method {m!r} (known: {', '.join(METHODS)})")
    visits_levels = sorted(int(v) for v in args.visits.split(","))
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    unknown = sorted(set(rules) - set(RULES))
    if unknown:
        raise SystemExit(f"--rules: unknown rules {unknown} (known: {', '.join(RULES)})")
    try:
        multipliers = tuple(float(m) for m in args.multipliers.split(",") if m.strip())
    except ValueError:
        raise SystemExit(f"--multipliers: expected numbers separated by commas, got {args.multipliers!r}") from None
    if not multipliers or any(not (math.isfinite(m) and m > 0) for m in multipliers):
        raise SystemExit(f"--multipliers: expected positive numbers, got {args.multipliers!r}")
    if args.threads < 1:
        raise SystemExit(f"--threads: expected a positive count, got {args.threads}")
    torch.set_num_threads(args.threads)
    # The search's passes get as many: a second thread of their own would wait for a core beside the
    # network's (docs/benchmarks.md: two one-thread processes on two cores).
    search_threads(args.threads)
    evaluator = Evaluator.from_file(MODEL, device="cpu", compile=True, cache_size=0)
    results = Results(args.results, args.games, args.seed)
    if args.sweep:
        table = sweep(evaluator, visits_levels, args.games, args.parallel, args.seed, results, rules, multipliers)
        print(json.dumps(table))
        return
    figures: dict[str, object] = {"games": args.games, "by_visits": {}}
    print(f"{'method':<15} {'visits':>6} {'games':>6} {'Elo gain':>9} {'95%':>6}  seeds' claim")
    for m in methods:
        on, claim = METHODS[m]
        figures[f"elo_{m}"] = figures[f"elo_{m}_ci95"] = None
        for visits in visits_levels:
            start = time.perf_counter()
            elo, half = results.match(
                f"{m}_{visits}",
                lambda played, on_game, s=on, v=visits: elo_gain(
                    evaluator, s, v, args.games, args.parallel, args.seed, played, on_game
                ),
            )
            elo += 0.0  # an even score is +0, not -0
            minutes = (time.perf_counter() - start) / 60
            print(f"{m:<15} {visits:>6} {args.games:>6} {elo:>+9.0f} {half:>6.0f}  {claim} ({minutes:.0f} min)")
            finite = math.isfinite(elo) and math.isfinite(half)
            figures["by_visits"][f"{m}_{visits}"] = results.done[f"{m}_{visits}"]  # type: ignore[index]
            figures[f"elo_{m}"] = round(elo, 1) if finite else None
            figures[f"elo_{m}_ci95"] = round(half, 1) if finite else None
            if m == "gumbel":  # against PUCT at each visits level, the keys its comparison is known by
                figures[f"elo_gumbel_vs_puct_{visits}"] = figures[f"elo_{m}"]
                figures[f"elo_gumbel_vs_puct_{visits}_ci95"] = figures[f"elo_{m}_ci95"]
        speed_on, speed_off = visits_per_second(evaluator, [on, OFF], visits_levels[0])
        figures[f"visits_per_s_{m}"] = round(speed_on, 1)
        figures[f"visits_per_s_{m}_off"] = round(speed_off, 1)
        print(f"{m:<15} visits/s on {speed_on:,.0f}, off {speed_off:,.0f}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
