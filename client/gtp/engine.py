"""The GTP engine: the Go Text Protocol front door for GUIs, referees and other engines.

Implements GTP version 2's standard commands, GNU Go's is_legal, all_legal, list_stones and
captures, and KataGo's rules commands, with the output formats those programs use. A command that
cannot be carried out answers ``? reason``; no input makes the engine fail.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import numpy as np

from client.gtp.players import Player
from client.gtp.search_player import SearchPlayer, analysis_line, best_move
from common import __version__
from common.go.game import Game, IllegalMoveError
from common.go.geometry import (
    BLACK,
    PASS,
    WHITE,
    parse_color,
    parse_gtp_vertex,
    xy_of,
)
from common.go.handicap import fixed_handicap_locs, max_fixed_handicap
from common.go.rules import Rules, RulesError, check_komi, default_komi
from common.go.sgf import SGFError, read_sgf, write_sgf
from common.go.status import final_status
from common.go.text import board_text

log = logging.getLogger(__name__)


_STATUSES = ("alive", "dead", "seki", "black_territory", "white_territory", "dame")


class GtpError(Exception):
    """A command that cannot be carried out; the message becomes the '?' response."""


class _Streamed(Exception):
    """A command that wrote its own response to the output stream."""


class GtpEngine:
    def __init__(
        self, player: Player, name: str = "Sente", rules: Rules | None = None, komi: float | None = None, evaluator=None
    ) -> None:
        self.player = player
        # the analysis commands need a player that searches
        self.searcher = player if isinstance(player, SearchPlayer) else None
        self.evaluator = evaluator  # a client.evaluator.Evaluator, for kata-raw-nn
        self.name = name
        self.rules = rules or Rules()
        self.komi = default_komi(self.rules) if komi is None else komi
        self.x_size = 19
        self.y_size = 19
        self.game = self._new_game()
        self.quit = False
        self.commands: dict[str, Callable[[list[str]], str]] = {
            "protocol_version": lambda a: "2",
            "name": lambda a: self.name,
            "version": lambda a: __version__,
            "known_command": self.cmd_known_command,
            "list_commands": lambda a: "\n".join(self.commands),
            "quit": self.cmd_quit,
            "boardsize": self.cmd_boardsize,
            "rectangular_boardsize": self.cmd_rectangular_boardsize,
            "clear_board": self.cmd_clear_board,
            "komi": self.cmd_komi,
            "get_komi": lambda a: f"{self.game.komi:g}",
            "play": self.cmd_play,
            "genmove": self.cmd_genmove,
            "undo": self.cmd_undo,
            "showboard": self.cmd_showboard,
            "final_score": self.cmd_final_score,
            "final_status_list": self.cmd_final_status_list,
            "fixed_handicap": self.cmd_fixed_handicap,
            "place_free_handicap": self.cmd_place_free_handicap,
            "set_free_handicap": self.cmd_set_free_handicap,
            "loadsgf": self.cmd_loadsgf,
            "printsgf": self.cmd_printsgf,
            "is_legal": self.cmd_is_legal,
            "all_legal": self.cmd_all_legal,
            "list_stones": self.cmd_list_stones,
            "captures": self.cmd_captures,
            "kata-get-rules": self.cmd_kata_get_rules,
            "kata-set-rules": self.cmd_kata_set_rules,
            "kata-set-rule": self.cmd_kata_set_rule,
            "kata-raw-nn": self.cmd_kata_raw_nn,
        }
        if self.searcher is not None:
            self.commands["kata-analyze"] = self.cmd_kata_analyze
            self.commands["kata-genmove_analyze"] = self.cmd_kata_genmove_analyze
            self.commands["clear_cache"] = self.cmd_clear_cache
        self.out: TextIO | None = None
        self._analysis: tuple[threading.Thread, threading.Event] | None = None
        self._ident = ""

    # --- protocol --------------------------------------------------------------------------------
    def handle(self, line: str) -> str | None:
        """The full response to one input line ('=...\\n\\n' or '?...\\n\\n'); None for blank lines."""
        text = "".join(ch for ch in line if ch == "\t" or ch >= " " or ch == "\n")
        text = text.split("#", 1)[0].replace("\t", " ").strip()
        if not text:
            return None
        parts = text.split()
        ident = ""
        if parts[0].isdigit():
            ident = parts.pop(0)
            if not parts:
                return f"?{ident} missing command\n\n"
        command, args = parts[0], parts[1:]
        self._ident = ident
        handler = self.commands.get(command)
        if handler is None:
            return f"?{ident} unknown command\n\n"
        try:
            response = handler(args)
        except GtpError as e:
            return f"?{ident} {e}\n\n"
        except _Streamed:
            return ""
        except Exception as e:  # the engine answers every command, whatever goes wrong
            log.exception("command %r failed", text)
            return f"?{ident} internal error: {e}\n\n"
        return f"={ident} {response}".rstrip(" ") + "\n\n" if response else f"={ident}\n\n"

    def run(self, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> None:
        """Answer commands from stdin until it ends or quit. The analysis commands stream their
        output: kata-analyze runs until the next command arrives (its response ends with a blank
        line then), kata-genmove_analyze until its move is chosen."""
        self.out = stdout
        try:
            for line in stdin:
                self._stop_analysis()
                response = self.handle(line)
                if response is None:
                    continue
                stdout.write(response)
                stdout.flush()
                if self.quit:
                    break
        finally:
            self._stop_analysis()
            self.out = None

    # --- helpers ---------------------------------------------------------------------------------
    def _new_game(self) -> Game:
        return Game(self.x_size, self.y_size, self.rules, self.komi)

    def _vertex(self, loc: int) -> str:
        return self.game.vertex(loc)

    def _vertices(self, locs) -> str:
        return " ".join(self._vertex(loc) for loc in locs)

    def _parse_vertex(self, text: str) -> int:
        try:
            return parse_gtp_vertex(text, self.x_size, self.y_size)
        except ValueError as e:
            raise GtpError(str(e)) from None

    @staticmethod
    def _parse_color(text: str) -> int:
        try:
            return parse_color(text)
        except ValueError as e:
            raise GtpError(str(e)) from None

    @staticmethod
    def _args(args: list[str], count: int, usage: str) -> list[str]:
        if len(args) != count:
            raise GtpError(f"expected {usage}")
        return args

    @staticmethod
    def _int(text: str, what: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise GtpError(f"{what} {text!r} is not an integer") from None

    # --- administrative --------------------------------------------------------------------------
    def cmd_known_command(self, args: list[str]) -> str:
        (name,) = self._args(args, 1, "a command name")
        return "true" if name in self.commands else "false"

    def cmd_quit(self, args: list[str]) -> str:
        self.quit = True
        return ""

    # --- setup -----------------------------------------------------------------------------------
    def _resize(self, x_size: int, y_size: int) -> str:
        try:
            game = Game(x_size, y_size, self.rules, self.komi)
        except ValueError as e:
            raise GtpError(f"unacceptable size: {e}") from None
        self.x_size, self.y_size, self.game = x_size, y_size, game
        return ""

    def cmd_boardsize(self, args: list[str]) -> str:
        (n,) = self._args(args, 1, "a board size")
        size = self._int(n, "board size")
        return self._resize(size, size)

    def cmd_rectangular_boardsize(self, args: list[str]) -> str:
        x, y = self._args(args, 2, "a width and a height")
        return self._resize(self._int(x, "board width"), self._int(y, "board height"))

    def cmd_clear_board(self, args: list[str]) -> str:
        self.game = self._new_game()
        return ""

    def cmd_komi(self, args: list[str]) -> str:
        (k,) = self._args(args, 1, "a komi value")
        try:
            komi = check_komi(float(k))
        except ValueError as e:
            raise GtpError(f"invalid komi {k!r}: {e}") from None
        self.komi = komi
        self.game.komi = komi
        return ""

    # --- play ------------------------------------------------------------------------------------
    def cmd_play(self, args: list[str]) -> str:
        c, v = self._args(args, 2, "a colour and a vertex")
        color = self._parse_color(c)
        loc = self._parse_vertex(v)
        try:
            self.game.play(loc, color)
        except IllegalMoveError as e:
            raise GtpError(f"illegal move: {str(e).split(': ', 1)[-1]}") from None
        return ""

    def cmd_genmove(self, args: list[str]) -> str:
        (c,) = self._args(args, 1, "a colour")
        color = self._parse_color(c)
        loc = self.player.choose_move(self.game, color)
        self.game.play(loc, color)
        return self._vertex(loc)

    def cmd_undo(self, args: list[str]) -> str:
        if not self.game.can_undo:
            raise GtpError("cannot undo")
        self.game.undo()
        return ""

    def cmd_is_legal(self, args: list[str]) -> str:
        c, v = self._args(args, 2, "a colour and a vertex")
        color = self._parse_color(c)
        loc = self._parse_vertex(v)
        return "1" if self.game.is_legal(loc, color) else "0"

    def cmd_all_legal(self, args: list[str]) -> str:
        (c,) = self._args(args, 1, "a colour")
        return self._vertices(self.game.legal_moves(self._parse_color(c)))

    def cmd_list_stones(self, args: list[str]) -> str:
        (c,) = self._args(args, 1, "a colour")
        return self._vertices(self.game.stones(self._parse_color(c)))

    def cmd_captures(self, args: list[str]) -> str:
        (c,) = self._args(args, 1, "a colour")
        return str(self.game.captures(self._parse_color(c)))

    # --- handicap --------------------------------------------------------------------------------
    def _check_handicap_board(self) -> None:
        if self.game.num_moves or self.game.stones(BLACK) or self.game.stones(WHITE):
            raise GtpError("board not empty")

    def cmd_fixed_handicap(self, args: list[str]) -> str:
        (n,) = self._args(args, 1, "a number of stones")
        count = self._int(n, "handicap")
        self._check_handicap_board()
        try:
            locs = self.game.place_fixed_handicap(count)
        except ValueError as e:
            raise GtpError(f"invalid handicap: {e}") from None
        return self._vertices(locs)

    def cmd_place_free_handicap(self, args: list[str]) -> str:
        (n,) = self._args(args, 1, "a number of stones")
        count = self._int(n, "handicap")
        self._check_handicap_board()
        points = self.x_size * self.y_size
        if count < 2 or count >= points:
            raise GtpError(f"invalid handicap {count}: expected 2 to {points - 1} stones")
        locs: list[int] = []
        if self.x_size == self.y_size:
            fixed = min(count, max_fixed_handicap(self.x_size))
            if fixed >= 2:
                locs = fixed_handicap_locs(fixed, self.x_size, self.y_size)
        locs += self.player.choose_handicap(self.game, count - len(locs), exclude=set(locs))
        self.game.place_free_handicap(locs)
        return self._vertices(locs)

    def cmd_set_free_handicap(self, args: list[str]) -> str:
        if len(args) < 2:
            raise GtpError("expected at least 2 vertices")
        self._check_handicap_board()
        locs = [self._parse_vertex(v) for v in args]
        if PASS in locs:
            raise GtpError("a handicap stone cannot be a pass")
        try:
            self.game.place_free_handicap(locs)
        except ValueError as e:
            raise GtpError(f"bad vertex list: {e}") from None
        return ""

    # --- scoring ---------------------------------------------------------------------------------
    def cmd_final_score(self, args: list[str]) -> str:
        """The finished game's result by its rules; before the end, the position counted as it stands
        (territory scoring: territory and captures, with the points of the encore so far)."""
        result = self.game.result
        scored = result is not None and not result.no_result and not result.resignation
        score = result.score if result is not None and scored else self.game.score()
        if score > 0:
            return f"W+{score:g}"
        if score < 0:
            return f"B+{-score:g}"
        return "0"

    def cmd_final_status_list(self, args: list[str]) -> str:
        (status,) = self._args(args, 1, "a status (alive, dead, seki, black_territory, white_territory, dame)")
        if status not in _STATUSES:
            raise GtpError(f"invalid status {status!r}")
        return self._vertices(getattr(final_status(self.game), status))

    # --- SGF -------------------------------------------------------------------------------------
    def cmd_loadsgf(self, args: list[str]) -> str:
        if not 1 <= len(args) <= 2:
            raise GtpError("expected a file name and an optional move number")
        path = Path(args[0])
        upto = None
        if len(args) == 2:
            upto = self._int(args[1], "move number") - 1
            if upto < 0:
                raise GtpError("move number must be at least 1")
        try:
            record = read_sgf(path.read_bytes())
        except OSError as e:
            raise GtpError(f"cannot read {path}: {e.strerror}") from None
        except SGFError as e:
            raise GtpError(f"cannot load {path}: {e}") from None
        rules = record.rules
        if rules is None or rules.unsupported_reason():
            if record.rules_text:
                log.warning(
                    "loadsgf: the game's rules %r are not playable here; keeping %s",
                    record.rules_text,
                    self.rules.name(),
                )
            rules = self.rules
        try:
            game = record.to_game(rules=rules, upto=upto)
        except (IllegalMoveError, ValueError) as e:
            raise GtpError(f"cannot load {path}: {e}") from None
        self.rules = rules
        self.komi = game.komi
        self.x_size, self.y_size, self.game = game.x_size, game.y_size, game
        return ""

    def cmd_printsgf(self, args: list[str]) -> str:
        text = write_sgf(self.game)
        if args:
            path = Path(args[0])
            try:
                path.write_text(text)
            except OSError as e:
                raise GtpError(f"cannot write {path}: {e.strerror}") from None
            return ""
        return text.rstrip("\n")

    # --- rules -----------------------------------------------------------------------------------
    def cmd_kata_get_rules(self, args: list[str]) -> str:
        self._args(args, 0, "no arguments")
        return self.rules.to_json()

    def _set_rules(self, rules: Rules, komi: float | None = None) -> str:
        reason = rules.unsupported_reason()
        if reason:
            raise GtpError(reason)
        try:
            self.game.set_rules(rules)
        except IllegalMoveError as e:
            raise GtpError(f"the game so far is not legal under these rules: {e}") from None
        self.rules = rules
        if komi is not None:
            self.komi = komi
            self.game.komi = komi
        return ""

    def cmd_kata_set_rules(self, args: list[str]) -> str:
        text = " ".join(args)
        try:
            rules, komi = Rules.parse(text)
        except RulesError as e:
            raise GtpError(f"Unknown rules '{text}', {e}") from None
        json_komi = komi if text.lstrip().startswith("{") else None
        return self._set_rules(rules, json_komi)

    def cmd_kata_set_rule(self, args: list[str]) -> str:
        key, value = self._args(args, 2, "a rule name and a value")
        try:
            rules = self.rules.with_rule(key, value)
        except RulesError as e:
            raise GtpError(str(e)) from None
        return self._set_rules(rules)

    # --- network ---------------------------------------------------------------------------------
    def cmd_kata_raw_nn(self, args: list[str]) -> str:
        """The network's raw outputs for the position, in KataGo's format (white's perspective)."""
        (sym,) = self._args(args, 1, "a symmetry (0 to 7, or all)")
        if self.evaluator is None:
            raise GtpError("no network loaded (start the engine with --model FILE)")
        if sym == "all":
            symmetries = list(range(8))
        else:
            s = self._int(sym, "symmetry")
            if not 0 <= s < 8:
                raise GtpError(f"symmetry {s} is not in 0..7")
            symmetries = [s]
        game = self.game
        evals = self.evaluator.evaluate([game] * len(symmetries), symmetries=symmetries, perspective="white")
        blocks = []
        for s, ev in zip(symmetries, evals):
            lines = [f"symmetry {s}"]
            lines += [
                f"whiteWin {ev.win:.6f}",
                f"whiteLoss {ev.loss:.6f}",
                f"noResult {ev.no_result:.6f}",
                f"whiteLead {ev.lead:.3f}",
                f"whiteScoreSelfplay {ev.score_mean:.3f}",
                f"whiteScoreSelfplaySq {ev.score_mean_sq:.3f}",
                "varTimeLeft -1.000",
                f"shorttermWinlossError {ev.shortterm_winloss_error:.3f}",
                f"shorttermScoreError {ev.shortterm_score_error:.3f}",
                "policy",
            ]
            board = ev.policy_board(self.x_size, self.y_size)
            legal = np.zeros(board.shape, dtype=bool)
            for loc in game.legal_moves():
                x, y = xy_of(loc)
                legal[y, x] = True
            for y in range(self.y_size):
                lines.append("".join(f"{board[y, x]:8.6f} " if legal[y, x] else "    NAN " for x in range(self.x_size)))
            lines.append(f"policyPass {ev.policy_pass:8.6f} ")
            lines.append("whiteOwnership")
            for y in range(self.y_size):
                lines.append("".join(f"{ev.ownership[y, x]:9.7f} " for x in range(self.x_size)))
            blocks.append("\n".join(lines))
        return "\n".join(blocks).rstrip()

    # --- analysis (KataGo's kata-analyze and kata-genmove_analyze) --------------------------------
    _IGNORED_ANALYSIS_KEYS = frozenset(
        {
            "minmoves",
            "ownershipStdev",
            "pvVisits",
            "pvEdgeVisits",
            "movesOwnership",
            "movesOwnershipStdev",
            "rootInfo",
            "includePolicy",
            "avoid",
            "allow",
        }
    )

    def _analysis_args(self, args: list[str]) -> tuple[int, float, int, bool]:
        """[color] [interval] then key value pairs: interval (centiseconds), maxmoves, ownership."""
        color = self.game.to_move
        interval = 1.0
        max_moves = 0
        ownership = False
        rest = list(args)
        if rest and rest[0].lower() in ("b", "w", "black", "white"):
            color = self._parse_color(rest.pop(0))
        if rest and rest[0].isdigit():
            interval = int(rest.pop(0)) / 100
        while rest:
            key = rest.pop(0)
            if not rest:
                raise GtpError(f"analysis key {key!r} has no value")
            value = rest.pop(0)
            if key == "interval":
                interval = self._int(value, "interval") / 100
            elif key == "maxmoves":
                max_moves = self._int(value, "maxmoves")
            elif key == "ownership":
                if value not in ("true", "false"):
                    raise GtpError(f"ownership {value!r}: expected true or false")
                ownership = value == "true"
            elif key in self._IGNORED_ANALYSIS_KEYS:
                log.info("kata-analyze: key %s is not supported and was ignored", key)
                if key in ("avoid", "allow"):  # avoid/allow take a colour, vertices and a depth
                    rest = rest[2:]
            else:
                raise GtpError(f"unknown analysis key {key!r}")
        return color, max(interval, 0.01), max_moves, ownership

    def _search_player(self) -> SearchPlayer:
        """The player of the analysis commands, which are there only when the player searches."""
        if self.searcher is None:
            raise RuntimeError("analysis needs a player that searches")
        return self.searcher

    def _report(self, position: Game, max_moves: int, ownership: bool):
        searcher = self._search_player()
        own = None
        if ownership and self.evaluator is not None:
            own = self.evaluator.evaluate([position])[0].ownership

        def report(result) -> None:
            if self.out is None or result.moves.size == 0 or result.visits.sum() == 0:
                return
            self.out.write(
                analysis_line(result, position, searcher.principal_variation, searcher.settings, max_moves, own) + "\n"
            )
            self.out.flush()

        return report

    def cmd_clear_cache(self, args: list[str]) -> str:
        """KataGo's clear_cache: forget the network's evaluations and the search tree."""
        self._search_player().clear_cache()
        return ""

    def cmd_kata_analyze(self, args: list[str]) -> str:
        searcher = self._search_player()
        color, interval, max_moves, ownership = self._analysis_args(args)
        position = searcher.position_for(self.game, color)
        if self.out is None or position.is_over:
            return ""  # nothing to analyze (or no stream to write to): an empty response
        report = self._report(position, max_moves, ownership)
        stop = threading.Event()

        def analyze() -> None:
            try:
                result = searcher.run_search(position, searcher.max_analysis_visits, report, interval, stop)
                report(result)
            except Exception:  # an analysis that fails ends quietly; the next command still works
                log.exception("analysis failed")

        self.out.write(f"={self._ident}\n")
        self.out.flush()
        thread = threading.Thread(target=analyze, name="analysis", daemon=True)
        self._analysis = (thread, stop)
        thread.start()
        raise _Streamed

    def _stop_analysis(self) -> None:
        if self._analysis is None:
            return
        thread, stop = self._analysis
        stop.set()
        thread.join()
        self._analysis = None
        if self.out is not None:
            self.out.write("\n")
            self.out.flush()

    def cmd_kata_genmove_analyze(self, args: list[str]) -> str:
        searcher = self._search_player()
        color, interval, max_moves, ownership = self._analysis_args(args)
        position = searcher.position_for(self.game, color)
        if position.is_over:
            move = PASS
        else:
            report = self._report(position, max_moves, ownership) if self.out is not None else None
            if self.out is not None:
                self.out.write(f"={self._ident}\n")
                self.out.flush()
            result = searcher.run_search(position, searcher.visits, report, interval)
            move = best_move(result, searcher.settings)
        self.game.play(move, color)
        if self.out is None:
            return f"play {self._vertex(move)}"
        self.out.write(f"play {self._vertex(move)}\n\n")
        self.out.flush()
        raise _Streamed

    # --- display ---------------------------------------------------------------------------------
    def cmd_showboard(self, args: list[str]) -> str:
        return board_text(self.game)
