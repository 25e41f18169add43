"""The learning experiment's measurements and report, after the platform ran for its budget.

- the Elo of every generation (each network its gating accepted), from the run's rating games
  (refitted first), with the training samples and rows it had seen and when it was accepted;
- the newest generation against the random network (the run's starting point: the same search with
  a uniform policy and an even value), with the run's match settings, through ``python -m client
  match``;
- the newest generation (its search over GTP) against the uniform random player, and against GNU
  Go (level 1 by default) when it is installed, through ``python -m client twogtp``;
- the learning curve (``server.platform.curve``): at checkpoints of the run, the network it was
  playing then against GNU Go's levels at the match visits and more, with the win rates' 95%
  intervals; the games at the match visits rate GNU Go's levels on the run's Elo scale.

Client programs run as child processes: the server never imports the client.
"""

from __future__ import annotations

import itertools
import json
import os
import platform as system
from dataclasses import dataclass, field
from pathlib import Path

from common.elo import Z95
from common.files import atomic_write
from server.ratings.matches import gnugo_path, play_gnugo, play_random, play_uniform


@dataclass
class Generation:
    name: str
    elo: float | None
    elo_se: float | None
    games: int
    train_step: int
    rows_seen: int
    minutes: float | None  # since the run began, when it was accepted


@dataclass
class Report:
    run: str
    board: int
    architecture: str
    minutes: float  # how long the platform ran
    machine: str
    selfplay_games: int = 0
    rows: int = 0
    rating_games: int = 0
    candidates: int = 0
    generations: list[Generation] = field(default_factory=list)
    versus_random: dict | None = None
    versus_uniform: dict | None = None
    versus_gnugo: dict | None = None
    curve: list[dict] = field(default_factory=list)
    curve_note: str | None = None  # why the curve was not played
    reached_half: dict | None = None  # {level, visits, minutes (None: not reached)}
    anchors: list[dict] = field(default_factory=list)  # GNU Go's levels on the run's Elo scale
    # the machine's 1-minute load average while the platform ran and during the matches after it:
    # {"platform": {mean, min, max, samples}, "matches": {...}} (a phase without readings is None)
    load: dict = field(default_factory=dict)
    # how the self-play games ended, the random network's and the trained networks' apart:
    # {"move_limit": moves, "random": {games, at_limit, no_result, drawn}, "trained": {...}}
    endings: dict = field(default_factory=dict)
    # the run's settings that differ from the demo's for its board and network: {"training.x": value}
    settings_changed: dict = field(default_factory=dict)

    def rises(self) -> tuple[int, int]:
        """(how many generations are rated above the one before, how many have one before)."""
        elos = [g.elo for g in self.generations if g.elo is not None]
        return sum(b > a for a, b in itertools.pairwise(elos)), max(0, len(elos) - 1)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["generations"] = [g.__dict__ for g in self.generations]
        return d

    def markdown(self) -> str:
        lines = [
            f"# Learning experiment: run {self.run}",
            "",
            f"{self.board}x{self.board}, the {self.architecture} network, {self.minutes:.0f} minutes on "
            f"{self.machine}, from the random network.",
            "",
            *self.settings_markdown(),
            f"- self-play: {self.selfplay_games:,} games, {self.rows:,} training rows",
            f"- rating games: {self.rating_games:,}; candidates exported: {self.candidates}, accepted: "
            f"{len(self.generations) - 1}",
            *self.load_markdown(),
            *self.endings_markdown(),
            "",
            "| generation | accepted after (min) | training samples | rows seen | Elo | ± (95%) | rating games |",
            "|---|---|---|---|---|---|---|",
        ]
        for g in self.generations:
            elo = f"{g.elo:+.0f}" if g.elo is not None else "-"
            se = f"{Z95 * g.elo_se:.0f}" if g.elo_se else "-"  # the random network is the fixed 0
            when = f"{g.minutes:.1f}" if g.minutes is not None else "start"
            lines.append(f"| {g.name} | {when} | {g.train_step:,} | {g.rows_seen:,} | {elo} | {se} | {g.games} |")
        up, steps = self.rises()
        lines += ["", f"Each generation rated above the one before it: {up} of {steps}.", ""]
        for title, match in (
            ("the random network", self.versus_random),
            ("the uniform random player", self.versus_uniform),
            ("GNU Go", self.versus_gnugo),
        ):
            if match is None:
                continue
            if match.get("skipped"):
                lines.append(f"- against {title}: not played ({match['skipped']})")
                continue
            lost = match["games"] - match["wins"] - match["draws"]
            lines.append(
                f"- {match['network']} against {match['opponent']}: won {match['wins']} of "
                f"{match['games']} ({match['win_rate']:.0%}; as black {match['wins_as_black']}, as white "
                f"{match['wins_as_white']}), lost {lost}, {match['draws']} drawn or without result; "
                f"{match['visits']} visits per move"
                + (
                    f"; each pair of games from its own {match['openings']} random opening moves "
                    f"({match['distinct_games']} distinct games)"
                    if match.get("openings")
                    else ""
                )
            )
        lines += self.curve_markdown()
        return "\n".join(lines) + "\n"

    def load_markdown(self) -> list[str]:
        """The machine's load, one line (none when it was not read)."""
        parts = [
            f"{phase} {load['mean']:.1f} ({load['min']:.1f}-{load['max']:.1f}, {load['samples']} readings)"
            for phase, load in (
                ("while the platform ran", self.load.get("platform")),
                ("during the matches", self.load.get("matches")),
            )
            if load
        ]
        return [f"- the machine's load (1-minute average; mean, range): {'; '.join(parts)}"] if parts else []

    def settings_markdown(self) -> list[str]:
        """The settings the run changed from the demo's, one line and a blank (none when unchanged)."""
        if not self.settings_changed:
            return []
        changed = ", ".join(f"`{key}` {json.dumps(value)}" for key, value in sorted(self.settings_changed.items()))
        return [f"Settings changed from the demo's: {changed}.", ""]

    def endings_markdown(self) -> list[str]:
        """How the self-play games ended, one line (none when not counted)."""
        if not self.endings:
            return []
        parts = []
        for key, whose in (("random", "the random network's"), ("trained", "the trained networks'")):
            e = self.endings[key]
            if e["games"]:
                parts.append(
                    f"of {whose} {e['games']:,}, {_share(e['at_limit'], e['games'])} reached the limit, "
                    f"{_share(e['no_result'], e['games'])} ended without a result and "
                    f"{_share(e['drawn'], e['games'])} were drawn"
                )
        return [f"- self-play games and the move limit ({self.endings['move_limit']} moves): {'; '.join(parts)}"]

    def curve_markdown(self) -> list[str]:
        lines = ["", "## The learning curve against GNU Go", ""]
        if self.curve_note:
            return [*lines, f"Not played: {self.curve_note}."]
        lines += [
            "At each checkpoint, the network the run was playing then (accepted last before it) against GNU Go, "
            "from random openings; the win rate with its 95% interval (Wilson). A network that was the "
            "checkpoint's of several played once, with the most games any of them asked for.",
            "",
            "| minutes | network | opponent | visits | games | won | drawn | win rate (95%) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for row in self.curve:
            when = _minutes(row["minutes"]) + (" (end)" if row.get("end") else "")
            lines.append(
                f"| {when} | {row['network']} | {row['opponent']} | {row['visits']} | {row['games']} | "
                f"{row['wins']} | {row['draws']} | {row['win_rate']:.0%} ({row['low']:.0%}-{row['high']:.0%}) |"
            )
        if self.reached_half is not None:
            half = self.reached_half
            reached = "not reached" if half["minutes"] is None else f"{_minutes(half['minutes'])} minutes"
            lines += [
                "",
                f"First won half its games against GNU Go level {half['level']} at {half['visits']} visits: {reached}.",
            ]
        if self.anchors:
            lines += ["", "GNU Go's levels on the run's Elo scale (from the games at the match visits):", ""]
            lines += [
                f"- {a['name']}: "
                + ("not rated" if a["elo"] is None else f"{a['elo']:+.0f} ± {a['ci95']:.0f}")
                + f" ({a['games']} games)"
                for a in self.anchors
            ]
        return lines


def _minutes(minutes: float) -> str:
    """Minutes as the curve's table gives them: whole ones as such, others to a tenth."""
    return f"{minutes:.0f}" if abs(minutes - round(minutes)) < 0.05 else f"{minutes:.1f}"


def settings_changed(document: dict, board: int, architecture: str) -> dict:
    """The values of the settings ``document`` that differ from the demo's for ``board`` and
    ``architecture``, by dotted name (a key the demo's document lacks counts as changed)."""
    from server.platform.demo import demo_settings

    def flat(d: dict, prefix: str = "") -> dict:
        out = {}
        for key, value in d.items():
            if isinstance(value, dict):
                out.update(flat(value, f"{prefix}{key}."))
            else:
                out[f"{prefix}{key}"] = value
        return out

    ours, demo = flat(document), flat(json.loads(json.dumps(demo_settings(board, architecture).to_dict())))
    return {key: value for key, value in ours.items() if key not in demo or demo[key] != value}


def measure(
    run,
    out: Path,
    minutes: float,
    machine: str,
    random_games: int = 100,
    uniform_games: int = 20,
    gnugo_games: int = 20,
    gnugo_level: int = 1,
    visits: int | None = None,
    curve_every: float = 30.0,
    curve_levels: tuple[int, ...] = (1, 5),
    curve_factors: tuple[int, ...] = (1, 4),
    curve_games: int = 20,
    jobs: int = 1,
    progress=print,
) -> Report:
    """The report on ``run`` after the platform ran ``minutes``: its ratings refitted, its generations,
    the newest one's matches (game records and engine output in ``out/matches.log``), and the
    learning curve against GNU Go (``server.platform.curve``; its games in ``out/curve``): at every
    ``curve_every`` minutes and the end, at each of ``curve_levels``, at each of ``curve_factors``
    times the visits, ``curve_games`` games (the end ``gnugo_games``, or ``curve_games`` without
    them), ``jobs`` matches at once."""
    from django.db.models import Sum

    from server.games.models import RatingGame, TrainingGame
    from server.ratings.services import refit

    current = run.current_settings()
    if current is None:
        raise ValueError(f"run {run.name} has no settings yet")
    settings = current.settings
    board = settings.selfplay.board_sizes[0]
    progress("rating the generations")
    refit(run)
    games = TrainingGame.objects.filter(run=run)
    report = Report(
        run=run.name,
        board=board,
        architecture=settings.training.architecture,
        minutes=minutes,
        machine=machine,
        selfplay_games=games.count(),
        rows=games.aggregate(rows=Sum("rows"))["rows"] or 0,
        rating_games=RatingGame.objects.filter(run=run).count(),
        candidates=run.networks.filter(is_random=False).count(),
        generations=generations(run),
        endings=selfplay_endings(run, settings.selfplay.max_moves),
        settings_changed=settings_changed(current.document, board, settings.training.architecture),
    )
    newest = run.networks.filter(name=report.generations[-1].name, is_random=False).first()
    match = settings.rating
    visits = visits or match.visits
    log = out / "matches.log"
    out.mkdir(parents=True, exist_ok=True)
    if newest is None:
        report.versus_random = report.versus_uniform = report.versus_gnugo = {"skipped": "no generation was accepted"}
        report.curve_note = "no generation was accepted"
        return report
    if random_games:
        progress(f"{newest.name} against the random network ({random_games} games)")
        report.versus_random = play_random(newest, match, random_games, visits, log)
    if uniform_games:
        progress(f"{newest.name} against the uniform random player ({uniform_games} games)")
        report.versus_uniform = play_uniform(newest, board, match.komi, uniform_games, visits, log)
    if gnugo_games:
        progress(f"{newest.name} against GNU Go level {gnugo_level} ({gnugo_games} games)")
        report.versus_gnugo = play_gnugo(newest, board, match.komi, gnugo_games, visits, gnugo_level, log)
    _measure_curve(
        run,
        report,
        out / "curve",
        board,
        match.komi,
        visits,
        curve_every,
        curve_levels,
        curve_factors,
        curve_games,
        gnugo_games or curve_games,
        gnugo_level,
        jobs,
        progress,
    )
    return report


def _measure_curve(
    run,
    report: Report,
    folder: Path,
    board: int,
    komi: float,
    visits: int,
    every: float,
    levels: tuple[int, ...],
    factors: tuple[int, ...],
    games: int,
    end_games: int,
    gnugo_level: int,
    jobs: int,
    progress,
) -> None:
    """The learning curve into ``report``; its games at ``visits`` rate GNU Go's levels with the
    run's networks (refitted, the generations' Elo read again)."""
    from server.platform import curve
    from server.ratings.services import refit

    if not (games and levels and factors):
        report.curve_note = "no games asked for (--curve-games 0, or no levels or visit factors)"
        return
    if gnugo_path() is None:
        report.curve_note = "GNU Go is not installed (Debian package gnugo)"
        return
    points = curve.checkpoints(report.generations, every, report.minutes)
    settings = [curve.Setting(level, visits * factor) for factor in factors for level in levels]
    todo = curve.plan(points, settings, games, end_games)
    known: dict[tuple[str, curve.Setting], curve.Played] = {}
    if report.versus_gnugo and "skipped" not in report.versus_gnugo:
        played = report.versus_gnugo
        known[(played["network"], curve.Setting(gnugo_level, visits))] = curve.Played(
            played["games"], played["wins"], played["draws"]
        )
    progress(
        f"the learning curve: {len(points)} checkpoints, {len(todo)} matches against GNU Go "
        f"(levels {', '.join(map(str, levels))}; {', '.join(str(s.visits) for s in settings[:: len(levels)])} visits)"
    )
    results = curve.play(run, todo, known, board, komi, folder, jobs, progress)
    report.curve = curve.rows(points, settings, results)
    if 1 in levels and 1 in factors:
        report.reached_half = {"level": 1, "visits": visits, "minutes": curve.reached_half(report.curve, 1, visits)}
    if 1 in factors and curve.record_anchors(run, results, visits, board, komi):
        progress("rating GNU Go's levels with the generations")
        refit(run)
        report.generations = generations(run)
        report.anchors = [
            {
                "name": r.anchor.name,
                "level": r.anchor.level,
                "elo": r.elo,
                "ci95": None if r.elo_se is None else Z95 * r.elo_se,
                "games": r.games,
            }
            for r in run.anchor_ratings.select_related("anchor").order_by("anchor__level")
        ]


def _share(count: int, total: int) -> str:
    """``count`` and its share of ``total``, to two decimals: rare endings are the ones to see."""
    return f"{count:,} ({count / total:.2%})"


def selfplay_endings(run, move_limit: int) -> dict:
    """How the run's self-play games ended (``Report.endings``): those of the random network, whose
    games run long, apart from the trained networks'."""
    from django.db.models import Count, Q

    from server.games.models import TrainingGame, Winner

    endings: dict = {"move_limit": move_limit}
    for key, random in (("random", True), ("trained", False)):
        endings[key] = TrainingGame.objects.filter(run=run, network__is_random=random).aggregate(
            games=Count("id"),
            at_limit=Count("id", filter=Q(moves__gte=move_limit)),
            no_result=Count("id", filter=Q(winner=Winner.NONE)),
            drawn=Count("id", filter=Q(winner=Winner.DRAW)),
        )
    return endings


def generations(run) -> list[Generation]:
    """The random network and every network a gating accepted, in order, with their ratings."""
    from server.ratings.models import NetworkEvent

    start = run.created_at
    accepted = {
        e.network_id: e.created_at
        for e in NetworkEvent.objects.filter(network__run=run, kind=NetworkEvent.Kind.ACCEPTED)
    }
    result = []
    for network in run.networks.select_related("rating").order_by("created_at", "id"):
        if not (network.is_random or network.pk in accepted):
            continue
        rating = getattr(network, "rating", None)
        when = accepted.get(network.pk)
        result.append(
            Generation(
                name=network.name,
                elo=rating.elo if rating else (0.0 if network.is_random else None),
                elo_se=rating.elo_se if rating else None,
                games=rating.games if rating else 0,
                train_step=network.train_step,
                rows_seen=network.rows_seen,
                minutes=(when - start).total_seconds() / 60 if when else None,
            )
        )
    return result


def machine() -> str:
    """This machine, as a report names it."""
    return f"{os.cpu_count() or 1} CPU cores ({system.processor() or system.machine()})"


def write_report(report: Report, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write(folder / "report.json", json.dumps(report.to_dict(), indent=1).encode())
    path = atomic_write(folder / "report.md", report.markdown().encode())
    return path
