"""Matches of a run's networks through the client's programs, run as child processes (the server
never imports the client): against the random network (``python -m client match``), and over GTP
against the uniform random player or GNU Go (``python -m client twogtp``), with what each needs: a
network's file on local disk, GNU Go's command line, our engine's command line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings as django_settings
from django.core.files.storage import default_storage


def copy_network_file(network, folder: Path) -> Path:
    """The network's file on local disk (copied out of the storage into ``folder``)."""
    path = folder / f"{network.name}.safetensors"
    with default_storage.open(network.file.name, "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def play_random(network, settings, games: int, visits: int, log_path: Path) -> dict:
    """The network against the random network with the run's match settings (colours alternating)."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = copy_network_file(network, folder)
        settings_file = folder / "match.json"
        settings_file.write_text(json.dumps(settings.replace(visits=visits).to_dict()))
        out = folder / "games"
        command = [
            sys.executable,
            "-m",
            "client",
            "match",
            str(model),
            "random",
            "--games",
            str(games),
            "--settings",
            str(settings_file),
            "--out",
            str(out),
            "--no-compile",
            "--device",
            "cpu",
        ]
        _run(command, log_path)
        summary = json.loads(next(out.glob("*-summary.json")).read_text())
    wins = summary["wins"][0]
    return {
        "network": network.name,
        "opponent": "the random network",
        "games": summary["games"],
        "wins": wins,
        "win_rate": wins / max(1, summary["games"]),
        "wins_as_black": summary["wins_as_black"][0],
        "wins_as_white": wins - summary["wins_as_black"][0],
        "visits": visits,
        "draws": summary["draws_or_void"],
    }


def gnugo_path() -> str | None:
    return shutil.which("gnugo") or ("/usr/games/gnugo" if Path("/usr/games/gnugo").exists() else None)


def gnugo_command(level: int) -> str | None:
    """GNU Go's GTP command line at ``level`` under Chinese rules (None: not installed)."""
    path = gnugo_path()
    return None if path is None else f"{path} --mode gtp --level {level} --chinese-rules"


def gnugo_referee() -> str | None:
    """The referee of games against GNU Go (None: not installed): GNU Go at its default level,
    whose ``final_status_list dead`` decides which stones are taken off before counting. GNU Go
    passes once it judges the stones left dead, so counted as they stand its games would be lost
    to an opponent that leaves one stone on an empty board and passes."""
    path = gnugo_path()
    return None if path is None else f"{path} --mode gtp --chinese-rules"


def play_uniform(network, board: int, komi: float, games: int, visits: int, log_path: Path) -> dict:
    """The network (its search, over GTP) against the uniform random player (uniform among the legal
    moves that do not fill its own one-point eyes)."""
    return _play_gtp(network, board, komi, games, visits, None, "the uniform random player", log_path, openings=0)


def play_gnugo(
    network, board: int, komi: float, games: int, visits: int, level: int, log_path: Path, openings: int = 2
) -> dict:
    """The network against GNU Go. Both play the same move in the same position every time, so each
    pair of games (colours swapped) starts from its own ``openings`` random moves."""
    gnugo = gnugo_command(level)
    if gnugo is None:
        return {"skipped": "GNU Go is not installed (Debian package gnugo)"}
    return _play_gtp(
        network,
        board,
        komi,
        games,
        visits,
        gnugo,
        f"GNU Go level {level}",
        log_path,
        openings=openings,
        referee=gnugo_referee(),
    )


def _play_gtp(
    network,
    board: int,
    komi: float,
    games: int,
    visits: int,
    opponent: str | None,
    opponent_name: str,
    log_path: Path,
    openings: int,
    referee: str | None = None,
) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        model = copy_network_file(network, Path(tmp))
        summary = twogtp(
            (gtp_command(model, visits), network.name),
            (opponent, opponent_name),
            board,
            komi,
            games,
            openings,
            log_path,
            referee=referee,
        )
    wins = summary["wins"][0]
    return {
        "network": network.name,
        "opponent": opponent_name,
        "games": games,
        "wins": wins,
        "win_rate": wins / games,
        "wins_as_black": summary["wins_as_black"][0],
        "wins_as_white": wins - summary["wins_as_black"][0],
        "visits": visits,
        "draws": summary["draws"] + summary["no_result"],
        "openings": openings,
        "distinct_games": summary.get("distinct_games", games),
    }


def gtp_command(model: Path, visits: int, settings: Path | None = None) -> str:
    """The command line of our engine playing ``model``'s search (``settings``: a match settings
    file whose search it plays; default a match's)."""
    command = f"{sys.executable} -m client gtp --model {model} --visits {visits} --device cpu --seed 1"
    return command + (f" --settings {settings}" if settings else "")


def twogtp(
    first: tuple[str, str],
    second: tuple[str | None, str],
    board: int,
    komi: float,
    games: int,
    openings: int,
    log_path: Path,
    referee: str | None = None,
    seed: int = 1,
) -> dict:
    """A match between two GTP engines, each (command line, name), through ``python -m client
    twogtp`` (Chinese rules, colours alternating, the first black in the first game; a command None
    is the uniform random player; ``referee``: the GTP command line that judges the dead stones of
    games ended by two passes; ``seed``: its openings', the same seed the same openings): its
    summary (``wins``, ``wins_as_black``, ``draws``, ``no_result``, ``distinct_games``), the games
    and engine output appended to ``log_path``."""
    with tempfile.TemporaryDirectory() as tmp:
        summary_file = Path(tmp) / "summary.json"
        command = [
            sys.executable,
            "-m",
            "client",
            "twogtp",
            "--size",
            str(board),
            "--komi",
            f"{komi:g}",
            "--rules",
            "chinese",
            "--black",
            first[0],
            "--black-name",
            first[1],
            "--white-name",
            second[1],
            "--games",
            str(games),
            "--openings",
            str(openings),
            "--seed",
            str(seed),
            "--summary",
            str(summary_file),
        ]
        if second[0] is not None:
            command += ["--white", second[0]]
        if referee is not None:
            command += ["--referee", referee]
        _run(command, log_path)
        return json.loads(summary_file.read_text())


def _run(command: list[str], log_path: Path) -> None:
    with open(log_path, "ab") as log:
        log.write(f"\n--- {time.strftime('%H:%M:%S')} {' '.join(command)}\n".encode())
        log.flush()
        done = subprocess.run(command, cwd=django_settings.BASE_DIR, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed with status {done.returncode}; see {log_path}")
