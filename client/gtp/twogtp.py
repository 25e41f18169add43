"""A referee that plays two GTP engines against each other and records the game.

Each engine runs as a child process. The referee keeps its own Game under the chosen rules, checks
every move it is given, relays it to the other engine, and ends the game by the rules (two
passes; under territory rules, two passes in each of the main phase and KataGo's two encore phases,
a pass for ko relayed by its vertex), by resignation, by an illegal move (which loses) or at a move
limit (no result).

Engines that always answer the same position with the same move would play the same two games over
and over; ``--openings N`` starts each pair of games (the same opening, colours swapped) from N
random moves the referee plays for both sides (uniform among the legal moves that fill no own eye).

An engine that passes once it judges the remaining stones dead, as GNU Go does, loses under area
rules counted as they stand (Tromp-Taylor): the game ends with its opponent's dead stones on the
board, and a lone dead stone makes every empty point around it neutral. With ``--referee`` a third
engine judges such games, as gogui-twogtp's referee does: a game under area scoring that ended by
two passes is replayed to it, the stones its ``final_status_list dead`` names are taken off, and the
rest is counted by area under the game's rules and komi.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, cast

from common.files import atomic_write
from common.go import playout
from common.go.game import Game, GameResult, IllegalMoveError
from common.go.geometry import BLACK, EMPTY, PASS, WHITE, color_name, gtp_vertex, opponent, parse_gtp_vertex
from common.go.rules import Rules
from common.go.sgf import GameRecord

log = logging.getLogger(__name__)


class GtpProcessError(RuntimeError):
    """An engine that failed a command, crashed or broke the protocol."""


class GtpProcess:
    """A GTP engine in a child process."""

    def __init__(self, command: list[str] | str, name: str | None = None) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        self.name = name or self.argv[0]
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        except OSError as e:
            raise GtpProcessError(f"cannot start engine {self.argv!r}: {e.strerror}") from None
        # both are pipes (PIPE above), never None
        self._to_engine = cast(IO[str], self.proc.stdin)
        self._from_engine = cast(IO[str], self.proc.stdout)

    def send(self, command: str) -> str:
        """Send one command; the response text, or GtpProcessError on '?' or a broken pipe."""
        ok, text = self.try_send(command)
        if not ok:
            raise GtpProcessError(f"{self.name} refused {command!r}: {text}")
        return text

    def try_send(self, command: str) -> tuple[bool, str]:
        try:
            self._to_engine.write(command + "\n")
            self._to_engine.flush()
        except (BrokenPipeError, OSError):
            raise GtpProcessError(f"{self.name} is not running (sending {command!r})") from None
        lines: list[str] = []
        while True:
            line = self._from_engine.readline()
            if line == "":
                raise GtpProcessError(f"{self.name} closed its output (after {command!r})")
            line = line.rstrip("\r\n")
            if line == "" and lines:
                break
            if line == "" and not lines:
                continue
            lines.append(line)
        first = lines[0]
        if first[:1] not in "=?":
            raise GtpProcessError(f"{self.name} answered {command!r} with {first!r}, not '=' or '?'")
        text = "\n".join([first[1:].lstrip("0123456789").strip(), *lines[1:]]).strip()
        return first[0] == "=", text

    def known(self, command: str) -> bool:
        ok, text = self.try_send(f"known_command {command}")
        return ok and text == "true"

    def close(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(GtpProcessError):
                self.try_send("quit")
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> GtpProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class MatchResult:
    game: Game
    record: GameRecord
    reason: str
    result: GameResult | None = None  # the referee's, else the game's own

    def __post_init__(self) -> None:
        if self.result is None:
            self.result = self.game.result


def refereed(referee: GtpProcess, game: Game) -> GameResult:
    """The result of ``game`` (area scoring, over by two passes) once the stones ``referee`` judges
    dead are taken off, counted by area under the game's rules and komi."""
    if game.rules.scoring != "AREA":
        raise ValueError(f"a referee judges games under area scoring, not {game.rules.scoring.lower()} scoring")
    x_size, y_size = game.x_size, game.y_size
    referee.send(f"boardsize {x_size}" if x_size == y_size else f"rectangular_boardsize {x_size} {y_size}")
    referee.send("clear_board")
    referee.send(f"komi {game.komi:g}")
    for color, loc in game.move_list:
        referee.send(f"play {color_name(color)} {'pass' if loc == PASS else gtp_vertex(loc, x_size, y_size)}")
    answer = referee.send("final_status_list dead")
    try:
        dead = {parse_gtp_vertex(v, x_size, y_size) for v in answer.split()}
    except ValueError as e:
        raise GtpProcessError(f"{referee.name} answered final_status_list dead with {answer!r}: {e}") from None
    # The counted position, as setup stones: no handicap bonus (a match has no handicap stones, but
    # a setup of black stones alone would count as such).
    counted = Game(x_size, y_size, replace(game.rules, white_handicap_bonus="0"), game.komi)
    counted.setup(
        black=[loc for loc in game.stones(BLACK) if loc not in dead],
        white=[loc for loc in game.stones(WHITE) if loc not in dead],
    )
    score = counted.score()
    winner = WHITE if score > 0 else BLACK if score < 0 else EMPTY
    stones = f"{len(dead)} dead stone" + ("" if len(dead) == 1 else "s")
    reason = f"two passes; {stones} taken off by the referee"
    return GameResult(winner, score, no_result=False, resignation=False, reason=reason)


def random_opening(size: tuple[int, int], rules: Rules, komi: float, moves: int, seed: int) -> list[int]:
    """``moves`` random moves from the empty board, alternating from black (fewer if a side must pass)."""
    game = Game(size[0], size[1], rules, komi)
    rng = playout.new_rng(seed)
    opening = []
    for _ in range(moves):
        loc = int(playout.random_move(game.g, game.b, game.table, game.to_move, rng))
        if loc == PASS:
            break
        game.play(loc, game.to_move)
        opening.append(loc)
    return opening


def play_match(
    black: GtpProcess,
    white: GtpProcess,
    size: tuple[int, int] = (9, 9),
    rules: Rules | None = None,
    komi: float = 7.0,
    max_moves: int | None = None,
    opening: Sequence[int] = (),
    referee: GtpProcess | None = None,
) -> MatchResult:
    """Play one game between two engines, from the ``opening`` moves (played for both sides); a game
    under area scoring that ends by two passes is judged by ``referee`` when one is given."""
    rules = rules or Rules()
    x_size, y_size = size
    game = Game(x_size, y_size, rules, komi)
    engines = {BLACK: black, WHITE: white}
    for eng in engines.values():
        if x_size == y_size:
            eng.send(f"boardsize {x_size}")
        else:
            eng.send(f"rectangular_boardsize {x_size} {y_size}")
        eng.send("clear_board")
        eng.send(f"komi {komi:g}")
        if eng.known("kata-set-rules"):
            eng.send(f"kata-set-rules {rules.to_json()}")
    for loc in opening:
        color = game.to_move
        game.play(loc, color)
        for eng in engines.values():
            eng.send(f"play {color_name(color)} {gtp_vertex(loc, x_size, y_size)}")
    max_moves = max_moves or 4 * x_size * y_size
    reason = ""
    while not game.is_over:
        if game.num_moves >= max_moves:
            game.end_without_result()
            reason = f"move limit {max_moves}"
            break
        color = game.to_move
        mover, other = engines[color], engines[opponent(color)]
        answer = mover.send(f"genmove {color_name(color)}").strip()
        if answer.lower() == "resign":
            game.resign(color)
            reason = f"{color_name(color)} resigned"
            break
        try:
            loc = parse_gtp_vertex(answer, x_size, y_size)
            game.play(loc, color)
        except (ValueError, IllegalMoveError) as e:
            game.resign(color)
            reason = f"{mover.name} ({color_name(color)}) played an illegal move {answer!r}: {e}"
            break
        other.send(f"play {color_name(color)} {'pass' if loc == PASS else answer}")
    record = GameRecord.from_game(game, black_player=black.name, white_player=white.name)
    outcome = game.result  # the game is over here: by the rules, the move limit or a resignation
    if referee is not None and outcome is not None and outcome.reason == "two passes" and rules.scoring == "AREA":
        outcome = refereed(referee, game)
        record.result = outcome.sgf()
    return MatchResult(game, record, reason or (outcome.reason if outcome is not None else ""), outcome)


def main(args) -> int:
    """``python -m client twogtp``: games between two engines, colours alternating (the --black engine
    is black in the first game), their SGF on stdout (one collection), a line per game and, for
    several games, a summary on stderr (and as JSON in ``--summary``)."""
    rules = Rules.from_text(args.rules)
    random_engine = [sys.executable, "-m", "client", "gtp", "--player", "random", "--seed"]
    engines = []
    for command, name, seed in ((args.black, args.black_name, args.seed), (args.white, args.white_name, args.seed + 1)):
        if command:
            engines.append((shlex.split(command), name or shlex.split(command)[0]))
        else:
            engines.append(([*random_engine, str(seed)], name or "Sente random"))
    if engines[0][1] == engines[1][1]:
        engines = [(engines[0][0], engines[0][1] + " (1)"), (engines[1][0], engines[1][1] + " (2)")]
    names = [name for _, name in engines]
    wins, wins_as_black, draws, no_result = [0, 0], [0, 0], 0, 0
    seen: set[tuple] = set()
    openings = random.Random(args.seed)
    opening: list[int] = []
    if args.referee and rules.scoring != "AREA":
        raise GtpProcessError(f"--referee judges games under area scoring, not under {args.rules!r}")
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(GtpProcess(*engines[0]))
        second = stack.enter_context(GtpProcess(*engines[1]))
        referee = stack.enter_context(GtpProcess(args.referee, "referee")) if args.referee else None
        if referee is not None and not referee.known("final_status_list"):
            raise GtpProcessError(f"the referee {args.referee!r} does not know final_status_list")
        for k in range(args.games):
            black, white = (first, second) if k % 2 == 0 else (second, first)
            if k % 2 == 0 and args.openings:
                opening = random_opening(args.size, rules, args.komi, args.openings, openings.randrange(2**62))
            match = play_match(black, white, args.size, rules, args.komi, opening=opening, referee=referee)
            seen.add((k % 2, tuple(match.game.move_list)))
            sys.stdout.write(match.record.to_sgf())
            sys.stdout.flush()
            result = match.result
            if result is None or result.no_result:
                no_result += 1
            elif result.winner == EMPTY:
                draws += 1
            else:
                winner = (0 if k % 2 == 0 else 1) if result.winner == BLACK else (1 if k % 2 == 0 else 0)
                wins[winner] += 1
                wins_as_black[winner] += result.winner == BLACK
            print(
                f"game {k + 1}: {black.name} (black) - {white.name} (white): {match.record.result} after "
                f"{match.game.num_moves} moves ({match.reason})",
                file=sys.stderr,
            )
    if args.games > 1:
        print(
            f"{names[0]} {wins[0]}, {names[1]} {wins[1]}, drawn {draws}, no result {no_result} of {args.games} games",
            file=sys.stderr,
        )
    if args.summary:
        summary = {
            "games": args.games,
            "engines": names,
            "wins": wins,
            "wins_as_black": wins_as_black,
            "draws": draws,
            "no_result": no_result,
            "size": list(args.size),
            "komi": args.komi,
            "rules": args.rules,
            "openings": args.openings,
            "distinct_games": len(seen),
            "referee": args.referee,
        }
        atomic_write(Path(args.summary), json.dumps(summary, indent=1).encode())
    return 0
