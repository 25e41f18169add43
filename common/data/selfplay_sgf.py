"""What a self-play game's SGF says beyond its moves, in a form both sides read.

- The root comment is a JSON object: ``settings``, the self-play settings the game was played with
  (:class:`common.settings.SelfPlaySettings` as a dict); ``start``, how the game began
  (:class:`StartNote`); ``move_limit_reached``.
- Every searched move's comment is its :class:`SearchNote`: ``full 600 visits, winrate 0.512, white
  score +1.5`` (a full search, recorded for training) or ``cheap 100 visits, ...`` (played for
  strength only). Moves of the handicap and the opening, drawn from the raw policy, have none. A
  pass for ko's comment begins with KataGo's ``Pass for ko`` before the note; :mod:`common.go.sgf`
  writes that part and takes it off when reading, so the note reads the same.
- Side positions (game branching) are variations off the main line: each begins with a move drawn
  off the game's line, commented ``branch``; the move the side position's search then chose follows,
  with its note ``side 600 visits, ...``; a continued line repeats the two.
- A game that starts from another's early fork says so in ``start.fork``: the game it forked from,
  the moves of that game it kept, and how many candidate moves the fork's move was the best of; its
  opening is those moves and the fork's move.
- A game of asymmetric playouts says so in ``start.playout_advantage``: the player with more visits
  and the playout doubling advantage the network was told (each search's note has the visits it had);
  a game whose komi the network made fair for its empty board gives that komi in ``start.komi_fair``.

The client writes them (``client.selfplay.game``); the server's upload checks read them to know which
moves were full searches, with how many visits, and how the game started, and hold them against the
task's settings and the training rows (``server.games.ingest``, :mod:`common.data.gamecheck`).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from common import boundedjson
from common.go.geometry import BLACK, WHITE

ROOT_KEYS = ("settings", "start", "move_limit_reached")


class SelfPlayRecordError(ValueError):
    """A self-play SGF whose comments do not say what a self-play client writes; the message says
    which part and why."""


@dataclass(frozen=True)
class ForkNote:
    """An early fork: the game forked from, its moves kept (the fork's move follows them) and the
    number of candidate moves the fork's move was chosen among."""

    of: str
    turn: int
    choices: int

    def to_dict(self) -> dict[str, Any]:
        return {"of": self.of, "turn": self.turn, "choices": self.choices}


@dataclass(frozen=True)
class PlayoutAdvantage:
    """Asymmetric playouts: ``player`` (BLACK or WHITE) searches 2^doublings times the other's visits."""

    player: int
    doublings: float

    def of(self, color: int) -> float:
        """The playout doubling advantage of `color`, as the network is told it (the other's: its opposite)."""
        return self.doublings if color == self.player else -self.doublings

    def to_dict(self) -> dict[str, Any]:
        return {"player": "B" if self.player == BLACK else "W", "doublings": self.doublings}


@dataclass(frozen=True)
class StartNote:
    """How a self-play game began: the komi drawn, the handicap's free black moves (a handicap of
    ``extra_black + 1`` stones), whether the komi was then moved to compensate white, the moves played
    before any search (from the raw policy, or a fork's), the first move that was searched (1-based:
    ``opening_moves + 1``), the fork it started from, if any, and with ``komi_auto`` the fair komi
    the network found for the empty board (the game's komi is that plus the draw's offset)."""

    komi_drawn: float
    extra_black: int
    komi_compensated: bool
    opening_moves: int
    fork: ForkNote | None = None
    komi_fair: float | None = None
    playouts: PlayoutAdvantage | None = None

    @property
    def pda_black(self) -> float:
        """Black's playout doubling advantage (white's is its opposite; 0 without asymmetric playouts)."""
        return 0.0 if self.playouts is None else self.playouts.of(BLACK)

    @property
    def first_recorded_move(self) -> int:
        return self.opening_moves + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "komi_drawn": self.komi_drawn,
            "extra_black": self.extra_black,
            "komi_compensated": self.komi_compensated,
            "opening_moves": self.opening_moves,
            "first_recorded_move": self.first_recorded_move,
            "fork": None if self.fork is None else self.fork.to_dict(),
        } | (
            ({} if self.komi_fair is None else {"komi_fair": self.komi_fair})
            | ({} if self.playouts is None else {"playout_advantage": self.playouts.to_dict()})
        )


@dataclass(frozen=True)
class RootInfo:
    settings: dict[str, Any]
    start: StartNote
    move_limit_reached: bool

    def to_comment(self) -> str:
        return json.dumps(
            {"settings": self.settings, "start": self.start.to_dict(), "move_limit_reached": self.move_limit_reached},
            sort_keys=True,
        )


def _need(ok: bool, problem: str) -> None:
    if not ok:
        raise SelfPlayRecordError(f"the root comment {problem}")


def _whole(value: Any, name: str) -> int:
    _need(type(value) is int and value >= 0, f"start.{name} {value!r} is not a whole number >= 0")
    return value


def read_root_comment(text: str | None) -> RootInfo:
    """The root comment of a self-play SGF (untrusted text: read within bounds);
    :class:`SelfPlayRecordError` naming what is wrong."""
    if not text:
        raise SelfPlayRecordError("the root comment is missing: a self-play game records its settings and start there")
    try:
        data = boundedjson.loads(text)
    except ValueError as e:
        raise SelfPlayRecordError(f"the root comment is not JSON: {e}") from None
    _need(isinstance(data, dict), f"must be a JSON object, not {type(data).__name__}")
    _need(
        set(data) == set(ROOT_KEYS),
        f"must have exactly the keys {', '.join(ROOT_KEYS)}, has {', '.join(sorted(map(str, data)))}",
    )
    _need(isinstance(data["settings"], dict), "settings must be an object")
    _need(type(data["move_limit_reached"]) is bool, "move_limit_reached must be true or false")
    start = data["start"]
    _need(isinstance(start, dict), "start must be an object")
    keys = ("komi_drawn", "extra_black", "komi_compensated", "opening_moves", "first_recorded_move")
    _need(
        set(start) - {"fork", "komi_fair", "playout_advantage"} == set(keys),
        f"start must have exactly the keys {', '.join(keys)} (and perhaps fork, komi_fair, playout_advantage)",
    )
    komi = _komi(start["komi_drawn"], "komi_drawn")
    fair = start.get("komi_fair")
    _need(type(start["komi_compensated"]) is bool, "start.komi_compensated must be true or false")
    opening = _whole(start["opening_moves"], "opening_moves")
    game_start = StartNote(
        float(komi),
        _whole(start["extra_black"], "extra_black"),
        start["komi_compensated"],
        opening,
        _fork(start.get("fork")),
        None if fair is None else _komi(fair, "komi_fair"),
        _playouts(start.get("playout_advantage")),
    )
    _need(
        start["first_recorded_move"] == game_start.first_recorded_move,
        f"start.first_recorded_move {start['first_recorded_move']!r} is not opening_moves + 1 "
        f"({game_start.first_recorded_move})",
    )
    return RootInfo(data["settings"], game_start, data["move_limit_reached"])


def _komi(value: Any, name: str) -> float:
    _need(type(value) in (int, float) and math.isfinite(value), f"start.{name} {value!r} is not a number")
    return float(value)


def _playouts(value: Any) -> PlayoutAdvantage | None:
    if value is None:
        return None
    _need(
        isinstance(value, dict) and set(value) == {"player", "doublings"} and value["player"] in ("B", "W"),
        "start.playout_advantage must be null or an object of player (B or W) and doublings",
    )
    doublings = value["doublings"]
    _need(
        type(doublings) in (int, float) and math.isfinite(doublings) and doublings > 0,
        f"start.playout_advantage.doublings {doublings!r} is not a number above 0",
    )
    return PlayoutAdvantage(BLACK if value["player"] == "B" else WHITE, float(doublings))


def _fork(value: Any) -> ForkNote | None:
    if value is None:
        return None
    _need(
        isinstance(value, dict) and set(value) == {"of", "turn", "choices"},
        "start.fork must be null or an object of of, turn, choices",
    )
    _need(isinstance(value["of"], str) and 0 < len(value["of"]) <= 200, "start.fork.of must be a game id")
    turn = _whole(value["turn"], "fork.turn")
    choices = _whole(value["choices"], "fork.choices")
    _need(choices >= 1, "start.fork.choices must be at least 1")
    return ForkNote(value["of"], turn, choices)


@dataclass(frozen=True)
class SearchNote:
    """What the search of one move was: full (recorded for training) or cheap, its root visits, the
    win rate of the player who moved and white's score; ``side`` for the full search of a side
    position (on a variation)."""

    full: bool
    visits: int
    winrate: float
    score: float
    side: bool = False

    def text(self) -> str:
        kind = "side" if self.side else "full" if self.full else "cheap"
        return f"{kind} {self.visits} visits, winrate {_winrate(self.winrate):.3f}, white score {self.score:+.1f}"


def _winrate(winrate: float) -> float:
    # Within 0 and 1: a search's 0.5 * (1 + winloss) may come out a hair below 0, which would be
    # written "-0.000", a note no reader takes.
    return min(1.0, max(0.0, winrate))


def read_note_winrate(note: SearchNote) -> float:
    """The win rate as ``note``'s text records it (three decimals), which a reader of the record sees."""
    return float(f"{_winrate(note.winrate):.3f}")


BRANCH_NOTE = "branch"  # the comment of a side position's move off the game's line

_NOTE = re.compile(r"(full|cheap|side) (\d{1,9}) visits, winrate (\d\.\d{3}), white score ([+-]\d{1,4}\.\d)")


def read_search_note(text: str | None) -> SearchNote | None:
    """A move's note, or None for a move without one; :class:`SelfPlayRecordError` for a comment that
    is not a note."""
    if text is None:
        return None
    m = _NOTE.fullmatch(text)
    if m is None:
        raise SelfPlayRecordError(
            f"move comment {text[:80]!r} is not a search note ('full N visits, winrate W, white score S')"
        )
    side = m.group(1) == "side"
    return SearchNote(side or m.group(1) == "full", int(m.group(2)), float(m.group(3)), float(m.group(4)), side)
