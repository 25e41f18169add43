"""``manage.py ablation``: what each of the methods is worth, as the paper's section 7.2 measures it.

It runs the whole platform from the random network once per arm (``server/platform/arms``) and
repetition (``--seeds``), each for the same CPU time in its own data folder, then rates their
generations against fixed anchors in one Bradley-Terry fit and writes the report
(``ablation-DATE.md``, ``.json`` and ``.png``). Started again with the same data folder it goes on
where it stopped: finished repetitions and finished rating pairings are kept.

    .venv/bin/python manage.py ablation --data sente-ablation --cpu-minutes 60 --report-dir docs/experiments
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.files import atomic_write
from common.interrupt import on_signals
from server.platform import ablation_rating as rating
from server.platform.ablation import (
    BUDGETS,
    BUILT_IN_ARMS,
    REFERENCE_ARM,
    AblationError,
    ArmState,
    Repetition,
    built_in_arms,
    list_generations,
    load_arm,
    read_generations,
    repetitions,
    run_arm,
    warm_up,
)
from server.platform.ablation_report import (
    AblationReport,
    Anchor,
    ArmReport,
    Point,
    RepetitionReport,
    verdict,
    write,
)
from server.platform.experiment import machine

PLAY_SETTINGS = "rating.json"
# The counts a run takes, with their defaults; a report's command names those that differ.
COUNTS = {
    "port": (8010, "the arms' web server port"),
    "parallel": (16, "games each of the client's self-play workers plays at once"),
    "seeds": (1, "repetitions of each arm, each from the random network in its own folder (arms/NAME.seedK)"),
    "arms_at_once": (
        1,
        "arms (repetitions) run side by side, each on its own port from --port on; each still gets its CPU time",
    ),
    "points": (3, "generations rated per arm (per repetition), besides its final one"),
    "reference_games": (20, "games of each rated network against the reference"),
    "final_games": (
        0,
        "games between every two final networks of the repetitions, besides the reference's: they tie the "
        "repetitions to each other, not through the reference alone",
    ),
    "gnugo_games": (10, "games of each rated network per GNU Go level"),
    "uniform_games": (4, "games of each rated network against the uniform random player"),
}
DEFAULTS = {key: default for key, (default, _) in COUNTS.items()} | {
    "interval": 0.0,
    "visits": None,
    "gnugo_levels": "1,5",
    "budget": "platform",
}


def _levels(text: str) -> list[int]:
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CommandError(f"--gnugo-levels {text!r}: expected levels such as 1,5") from None
    if any(not 1 <= level <= 10 for level in levels):
        raise CommandError(f"--gnugo-levels {text!r}: GNU Go's levels are 1 to 10")
    return levels


class Command(BaseCommand):
    help = (
        "Run the platform from the random network once per arm and repetition (--seeds) for the same CPU time, "
        "each in its own folder under --data, rate their generations against the uniform random player, GNU Go "
        "and the full arm's final network in one Bradley-Terry fit, and write ablation-DATE.md, .json and .png "
        "to --report-dir. Started again, it goes on where it stopped."
    )

    def add_arguments(self, parser):
        parser.add_argument("--data", type=Path, required=True, help="the ablation's folder (arms, ratings)")
        parser.add_argument(
            "--cpu-minutes",
            type=float,
            required=True,
            help="each arm's CPU time (each repetition's), of the processes --budget names",
        )
        parser.add_argument(
            "--budget",
            choices=BUDGETS,
            default=DEFAULTS["budget"],
            help="what --cpu-minutes counts: the platform's processes together (platform, the default), or its "
            "self-play client's alone (selfplay: the paper's self-play compute, the trainer keeping up with the "
            "rows whatever its CPU)",
        )
        parser.add_argument(
            "--board", type=int, default=7, choices=range(5, 10), metavar="5..9", help="board size (default 7)"
        )
        others = [name for name in built_in_arms() if name not in BUILT_IN_ARMS]
        parser.add_argument(
            "--arms",
            default=",".join(BUILT_IN_ARMS),
            help="arms by name (server/platform/arms) or JSON file, comma-separated (default: "
            f"{', '.join(BUILT_IN_ARMS)}; also built in: {', '.join(others)})",
        )
        for key, (default, text) in COUNTS.items():
            parser.add_argument(
                f"--{key.replace('_', '-')}", type=int, default=default, help=f"{text} (default {default})"
            )
        parser.add_argument(
            "--interval",
            type=float,
            default=DEFAULTS["interval"],
            metavar="ELO",
            help="play further rounds of --reference-games games, with other openings, between the final networks "
            "of any arm whose 95%% interval against the full arm is wider than ± ELO and the full arm's, until it "
            f"is within it or {rating.NARROWING_ROUNDS} rounds were played (default 0: none)",
        )
        parser.add_argument("--visits", type=int, help="visits per move in the rating games (default: the arms')")
        parser.add_argument(
            "--gnugo-levels", default=DEFAULTS["gnugo_levels"], help="GNU Go's levels among the anchors (default 1,5)"
        )
        parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="rating matches at once")
        parser.add_argument("--report-dir", type=Path, help="where the report goes (default: --data)")
        parser.add_argument("--date", default=time.strftime("%Y-%m-%d"), help="the report's date (default today)")

    def handle(self, *args, **options):
        data: Path = options["data"].resolve()
        budget = options["cpu_minutes"]
        board = options["board"]
        if budget <= 0:
            raise CommandError(f"--cpu-minutes {budget}: must be positive")
        for key in ("points", "jobs", "parallel", "arms_at_once", "seeds"):
            if options[key] < 1:
                raise CommandError(f"--{key.replace('_', '-')} {options[key]}: must be at least 1")
        for key in ("reference_games", "final_games", "gnugo_games", "uniform_games"):
            if options[key] < 0:
                raise CommandError(f"--{key.replace('_', '-')} {options[key]}: must not be negative")
        if not options["interval"] >= 0:  # NaN too
            raise CommandError(f"--interval {options['interval']:g}: must be 0 Elo or more")
        if options["interval"] and not options["reference_games"]:
            raise CommandError("--interval needs --reference-games: its further rounds are of that many games")
        levels = _levels(options["gnugo_levels"])
        try:
            arms = [load_arm(spec.strip(), board) for spec in options["arms"].split(",") if spec.strip()]
        except AblationError as e:
            raise CommandError(str(e)) from None
        names = [a.name for a in arms]
        if not arms or len(set(names)) != len(names):
            raise CommandError(f"--arms {options['arms']}: name each arm once")
        runs = repetitions(arms, options["seeds"])
        taken = [r.name for r in runs]
        if len(set(taken)) != len(taken):
            clash = next(name for name in taken if taken.count(name) > 1)
            raise CommandError(
                f"--arms {options['arms']} with --seeds {options['seeds']}: {clash} is both an arm and a "
                "repetition of another; rename that arm's document"
            )
        self._check_folder(data, board, budget, options["budget"])

        stop = {"requests": 0}

        def on_signal(count: int) -> None:
            stop["requests"] = count
            with contextlib.suppress(OSError):
                self.stdout.write("stopping: the arm under way stops and keeps what it did (Ctrl-C again to hurry)")

        def stopping() -> bool:
            return stop["requests"] > 0

        def halt() -> None:  # an arm failed: the others stop too, keeping what they did
            stop["requests"] = max(stop["requests"], 1)

        say = self.stdout.write
        with on_signals(on_signal, (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)):
            try:
                states = self._run_arms(runs, data, budget * 60.0, options, say, stopping, halt)
                if stopping():
                    raise CommandError("stopped: run the same command again to go on")
                report = self._rate(arms, runs, states, data, board, budget, levels, options, say, stopping)
                if stopping():
                    raise CommandError("stopped: run the same command again to go on")
            except (AblationError, RuntimeError) as e:
                raise CommandError(str(e)) from None
        path = write(report, options["report_dir"] or data)
        say(report.markdown(path.with_suffix(".png").name))
        say(f"report written to {path}")

    def _check_folder(self, data: Path, board: int, budget: float, counted: str) -> None:
        """The ablation's folder keeps its board and budget: an arm run with others would not compare."""
        meta = data / "ablation.json"
        mine = {"board": board, "cpu_minutes": budget, "budget": counted}
        if meta.exists():
            try:
                theirs = json.loads(meta.read_text())
            except (OSError, ValueError) as e:
                raise CommandError(f"{meta}: {e}") from None
            theirs.setdefault("budget", "platform")  # a folder from before --budget
            if {k: theirs.get(k) for k in mine} != mine:
                raise CommandError(
                    f"{data} holds an ablation on {theirs.get('board')}x{theirs.get('board')} with "
                    f"{theirs.get('cpu_minutes')} CPU-minutes of {theirs.get('budget')} per arm: give the same "
                    "--board, --cpu-minutes and --budget, or another --data"
                )
        data.mkdir(parents=True, exist_ok=True)
        atomic_write(meta, json.dumps(mine).encode())

    def _run_arms(
        self, runs: list[Repetition], data: Path, budget: float, options, say, stopping, halt
    ) -> dict[str, ArmState]:
        """Run the repetitions that have CPU time left, ``--arms-at-once`` at a time (each on a port of
        its own); their states by name."""
        states = {run.name: ArmState.load(run.folder(data) / "state.json") for run in runs}
        counted = options["budget"]
        todo = [run for run in runs if not (states[run.name].finished or states[run.name].done(counted, budget))]
        if todo:
            say("compiling the server's and the search's kernels first, so that no arm pays for them")
            warm_up(todo[0].arm, data / "warm-up", data / "warm-up.log")
        ports: queue.Queue[int] = queue.Queue()
        for k in range(options["arms_at_once"]):
            ports.put(options["port"] + k)

        def one(run: Repetition) -> ArmState:
            if stopping():
                return states[run.name]
            port = ports.get()
            try:
                used = states[run.name].used(counted) / 60
                say(f"arm {run.name} ({run.arm.title}): {used:.1f} of {budget / 60:g} CPU-minutes of {counted} used")
                return run_arm(run, data, budget, port, options["parallel"], say, stopping, counted)
            except BaseException:
                halt()
                raise
            finally:
                ports.put(port)

        with ThreadPoolExecutor(max_workers=options["arms_at_once"]) as pool:
            for run, future in [(run, pool.submit(one, run)) for run in todo]:
                states[run.name] = future.result()
        # Finished repetitions list their generations again only when that listing is missing.
        for run in runs:
            folder = run.folder(data)
            if run not in todo and not (folder / "generations" / "generations.json").exists():
                list_generations(folder)
        return states

    def _rate(self, arms, runs, states, data: Path, board: int, budget: float, levels, options, say, stopping):
        import torch

        from common.architecture import named_config
        from common.nn.speed import evals_per_second

        visits = options["visits"] or arms[0].settings["rating"]["visits"]
        komi = arms[0].settings["rating"]["komi"]
        uniform = rating.Player(rating.UNIFORM, "the uniform random player", None)
        gnugos = [p for p in (rating.gnugo(level) for level in levels) if p is not None]
        if levels and not gnugos:
            say("GNU Go is not installed (Debian package gnugo): the anchors are the random player and the reference")
        listed, rated = {}, {}
        for run in runs:
            folder = run.folder(data)
            listed[run.name] = generations = read_generations(folder)
            state, counted = states[run.name], options["budget"]
            for g in generations["generations"]:
                g["cpu_seconds"] = state.cpu_at(g["accepted_at"], counted) if g["accepted_at"] else 0.0
                g["gating"] = "accepted"
            chosen = rating.pick_points(generations["generations"], options["points"], state.used(counted))
            final = generations["final"]
            if final is not None and final["gating"] != "accepted":
                chosen.append(dict(final, cpu_seconds=state.cpu_at(final["created_at"], counted)))
            play = folder / PLAY_SETTINGS
            atomic_write(play, json.dumps(run.arm.settings["rating"]).encode())
            rated[run.name] = [
                (g, rating.network_player(run.name, g["name"], folder / "generations" / g["file"], visits, play))
                for g in chosen
            ]
        first_full = next((run.name for run in runs if run.arm.name == REFERENCE_ARM and run.seed == 1), None)
        reference = rated[first_full][-1][1] if first_full and rated[first_full] else None
        if reference is None:
            say(f"no reference: the {REFERENCE_ARM} arm is not among the arms, or exported no network")
        pairings = []
        for run in runs:
            for _, player in rated[run.name]:
                if options["uniform_games"]:
                    pairings.append(rating.Pairing(player, uniform, options["uniform_games"]))
                if options["gnugo_games"]:
                    pairings += [rating.Pairing(player, g, options["gnugo_games"]) for g in gnugos]
                if reference is not None and player != reference and options["reference_games"]:
                    pairings.append(rating.Pairing(player, reference, options["reference_games"]))
        pairings += rating.round_robin(
            [rated[run.name][-1][1] for run in runs if rated[run.name]], reference, options["final_games"]
        )

        def finals(arm) -> list[rating.Player]:
            """The final networks of the arm's repetitions that exported one."""
            return [rated[run.name][-1][1] for run in runs if run.arm is arm and rated[run.name]]

        def keys_of(players: list[rating.Player]) -> list[str]:
            return [p.key for p in players]

        full = next((arm for arm in arms if arm.name == REFERENCE_ARM), None)
        games = rating.Games(data / "rating" / "games.json")
        logs = data / "rating" / "logs"
        rating.play(pairings, games, board, komi, visits, logs, options["jobs"], say, stopping)
        if stopping():
            return None
        keys = [uniform.key] + [g.key for g in gnugos] + [p.key for run in runs for _, p in rated[run.name]]
        fit = rating.fit(keys, games.of(pairings), reference.key if reference else None)
        if options["interval"] and reference is not None and full is not None:
            wide = {arm.name: finals(arm) for arm in arms if arm is not full}
            played: list[rating.Pairing] = []
            reference_key = reference.key

            def play_round(more: list[rating.Pairing], round_: int) -> rating.Fit | None:
                say(f"rating: round {round_} for the arms wider than ± {options['interval']:g} against the full arm")
                rating.play(more, games, board, komi, visits, logs, options["jobs"], say, stopping, f"round {round_}")
                played.extend(more)
                return None if stopping() else rating.fit(keys, games.of(pairings + played), reference_key)

            narrowed_fit, more = rating.narrow(
                fit, wide, finals(full), options["interval"], options["reference_games"], play_round
            )
            if narrowed_fit is None:
                return None
            fit, pairings = narrowed_fit, pairings + more
        results = games.of(pairings)

        say("measuring each arm's network speed")
        speeds: dict[str, float] = {}
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for _ in range(3):  # interleaved rounds; the fastest of each architecture's
                for architecture in dict.fromkeys(a.architecture for a in arms):
                    figure = evals_per_second(named_config(architecture), board, options["parallel"], seconds=2.0)
                    speeds[architecture] = max(speeds.get(architecture, 0.0), figure)
        finally:
            torch.set_num_threads(threads)

        reports = []
        for arm in arms:
            report = ArmReport(
                name=arm.name,
                title=arm.title,
                description=arm.description,
                claim=arm.claim,
                expect=arm.expect,
                architecture=arm.architecture,
                evals_per_s=speeds.get(arm.architecture),
            )
            for run in (run for run in runs if run.arm is arm):
                report.repetitions.append(self._repetition(run, states[run.name], listed[run.name], rated, fit))
            mine = keys_of(finals(arm))
            if mine:
                report.mean_elo, report.mean_elo_ci95 = fit.difference(mine, [])
            if reference is not None and full is not None and mine:
                report.vs_reference, report.vs_reference_ci95 = fit.difference(mine, keys_of(finals(full)))
            report.verdict = verdict(report, reference is not None and arm is full)
            reports.append(report)
        anchors = [
            Anchor(p.key, p.label, fit.elo[p.key], fit.ci95[p.key], fit.games[p.key]) for p in [uniform, *gnugos]
        ]
        return AblationReport(
            date=options["date"],
            board=board,
            cpu_minutes=budget,
            seeds=options["seeds"],
            machine=machine(),
            command=reproduce(options),
            visits=visits,
            reference=reference.key if reference else None,
            anchors=anchors,
            arms=reports,
            pairings=len(results),
            games=sum(r.games for r in results),
            fit_iterations=fit.iterations,
            budget=options["budget"],
            interval=options["interval"],
            narrowing_games=sum(p.games for p in pairings if p.round > 1),
        )

    @staticmethod
    def _repetition(run: Repetition, state: ArmState, generations: dict, rated, fit) -> RepetitionReport:
        """What one repetition did, its rated generations, and its final network against the reference."""
        points = [
            Point(
                network=g["name"],
                cpu_minutes=g["cpu_seconds"] / 60,
                selfplay_games=g["selfplay_games"],
                rows=g["rows"],
                train_step=g["train_step"],
                gating=g["gating"],
                elo=fit.elo[p.key],
                ci95=fit.ci95[p.key],
                games=fit.games[p.key],
            )
            for g, p in rated[run.name]
        ]
        report = RepetitionReport(
            seed=run.seed,
            name=run.name,
            cpu_minutes=state.cpu_seconds / 60,
            selfplay_minutes=state.selfplay_seconds / 60,
            wall_minutes=state.wall_seconds / 60,
            mean_load=state.mean_load(),
            sittings=state.sittings,
            selfplay_games=generations["selfplay_games"],
            rows=generations["rows"],
            rating_games=generations["rating_games"],
            candidates=generations["candidates"],
            accepted=len([g for g in generations["generations"] if not g["random"]]),
            training_samples=generations["training_samples"],
            points=points,
        )
        if points and fit.against:
            report.vs_reference, report.vs_reference_ci95 = fit.against[rated[run.name][-1][1].key]
        return report


def reproduce(options) -> str:
    """The command that runs this ablation again, from the project's root."""
    words = [".venv/bin/python", "manage.py", "ablation", "--data", str(options["data"])]
    words += ["--cpu-minutes", f"{options['cpu_minutes']:g}", "--board", str(options["board"])]
    words += ["--arms", options["arms"]] if options["arms"] != ",".join(BUILT_IN_ARMS) else []
    for key, default in DEFAULTS.items():
        if options[key] != default:
            value = options[key]
            words += [f"--{key.replace('_', '-')}", f"{value:g}" if isinstance(value, float) else str(value)]
    if options["report_dir"] is not None:
        words += ["--report-dir", str(options["report_dir"])]
    return shlex.join(words)
