"""What an uploaded game drew at random, held against what its task's settings can draw.

A client draws each game's board size, komi, rules, handicap and opening, and each move's search
(full or cheap, and its visits), from the task's settings. The record says what it drew: the SGF's
root comment (the settings it played with, how the game started) and each searched move's note
(:mod:`common.data.selfplay_sgf`). Every drawn value must be one the settings can produce (the
start's, by the checks :mod:`common.draws` keeps beside the draws the client makes), and the share
of full searches must be one the settings' probability gives but with odds below
:data:`FULL_SEARCH_ODDS`; so must the share of searched turns that branched off to side positions
(the record's variations) and of those that went on, and an early fork's start must be one the
settings make. Each failure is an :class:`~server.refusals.Refused` on the ``sgf`` field with code
``not_in_settings`` (or ``not_selfplay`` for a record without what self-play writes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from common import boundedjson
from common.data.gamecheck import SidePosition
from common.data.selfplay_sgf import (
    BRANCH_NOTE,
    RootInfo,
    SearchNote,
    SelfPlayRecordError,
    StartNote,
    read_root_comment,
    read_search_note,
)
from common.draws import asymmetry_problem, board_problem, handicap_problem, komi_problem
from common.go.geometry import BLACK, WHITE
from common.go.sgf import GameRecord
from common.resignation import resigning, winrate_of
from common.settings import MatchSettings, SelfPlaySettings
from server.refusals import Refused, invalid

FULL_SEARCH_ODDS = 1e-9  # a game whose share of full searches is less likely than this is refused


def _refuse(message: str) -> Refused:
    return invalid("sgf", message, "not_in_settings")


def _held(problem: str | None) -> None:
    """Refuse the record for a drawn value the settings do not draw (``common.draws``' checks)."""
    if problem is not None:
        raise _refuse(problem)


@dataclass(frozen=True)
class SideDraw:
    """A side position's search in the record: main-line node `node`'s variation `line`, its move
    `depth` (the move the search chose), with the search's note."""

    node: int
    line: int
    depth: int
    note: SearchNote
    color: int  # the player whose search it was


@dataclass(frozen=True)
class SelfPlayDraws:
    """What a self-play record drew: its root comment, each move's search note (None for the moves
    of the opening), its side positions' searches, its variations and how many of their searches
    went on."""

    info: RootInfo
    notes: list[SearchNote | None]
    colors: list[int]  # the player of each move
    sides: list[SideDraw]
    lines: int = 0
    continued: int = 0

    def side_positions(self, rec: GameRecord) -> list[SidePosition]:
        """The positions the side searches searched, replayed (the record's illegal moves raise
        IllegalMoveError)."""
        out = []
        for side in self.sides:
            move = rec.nodes[side.node].variations[side.line][side.depth].move
            assert move is not None  # read as a searched move
            out.append(
                SidePosition(rec.variation_game(side.node, side.line, upto=side.depth), move[1], side.note.visits)
            )
        return out

    def full_turns(self) -> dict[int, int]:
        """Turn (moves before it) -> visits, for every full search."""
        return {t: n.visits for t, n in enumerate(self.notes) if n is not None and n.full}

    def visits_for(self, settings: SelfPlaySettings, visits: int, color: int) -> int:
        """The visits a search of `color`'s with the settings' `visits` has in this game: the same, or
        with asymmetric playouts its side's share (more for the advantaged side, fewer for the other)."""
        playouts = self.info.start.playouts
        if playouts is None:
            return visits
        return settings.asymmetric_visits(visits, playouts.doublings, color == playouts.player)

    def base_visits(self, settings: SelfPlaySettings, visits: int, color: int) -> int:
        """The most visits a search could have been asked for before its side's share was taken
        (the inverse of :meth:`visits_for`, which rounds): `visits` without asymmetric playouts."""
        playouts = self.info.start.playouts
        if playouts is None:
            return visits
        f = 2.0**playouts.doublings
        share = 2.0 * (f if color == playouts.player else 1.0) / (f + 1.0)
        base = max(1, int(visits / share))  # then a step or two each way, past the rounding
        while self.visits_for(settings, base, color) > visits and base > 1:
            base -= 1
        while self.visits_for(settings, base + 1, color) <= visits:
            base += 1
        return base


def _notes(rec: GameRecord) -> tuple[list[SearchNote | None], list[int]]:
    notes: list[SearchNote | None] = []
    colors: list[int] = []
    for i, node in enumerate(rec.nodes):
        if i and node.setup:
            raise invalid(
                "sgf", f"node {i} places stones during the game; self-play places them only at the start", "bad_record"
            )
        if node.move is not None:
            note = read_search_note(node.comment)
            if note is not None and note.side:
                raise SelfPlayRecordError(f"move {len(notes) + 1} of the game has a side position's note")
            notes.append(note)
            colors.append(node.move[0])
    return notes, colors


def _sides(rec: GameRecord) -> tuple[list[SideDraw], int, int]:
    """The side positions' searches of the record's variations: each variation is a move off the line
    (commented ``branch``), the move its search chose (with the search's note), and again for a line
    that went on. Also the number of variations and of searches that went on."""
    sides: list[SideDraw] = []
    lines = continued = 0
    for i, node in enumerate(rec.nodes):
        for k, line in enumerate(node.variations):
            if node.move is None:
                raise SelfPlayRecordError(f"node {i} has variations but no move they stand in for")
            lines += 1
            color = node.move[0]
            for depth, v in enumerate(line):
                where = f"variation {k + 1} before node {i}, its move {depth + 1}"
                if v.move is None or v.setup or v.move[0] != color:
                    raise SelfPlayRecordError(f"{where}: not a move in turn")
                color = 3 - color
                if depth % 2 == 0:
                    if v.comment != BRANCH_NOTE:
                        raise SelfPlayRecordError(f"{where}: a move off the line is commented {BRANCH_NOTE!r}")
                    continued += depth > 0
                    continue
                note = read_search_note(v.comment)
                if note is None or not note.side:
                    raise SelfPlayRecordError(f"{where}: the move a side position's search chose needs its note")
                sides.append(SideDraw(i, k, depth, note, v.move[0]))
    return sides, lines, continued


def selfplay_draws(rec: GameRecord) -> SelfPlayDraws:
    """The record's account of its draws."""
    try:
        sides, lines, continued = _sides(rec)
        notes, colors = _notes(rec)
        return SelfPlayDraws(read_root_comment(rec.comment), notes, colors, sides, lines, continued)
    except SelfPlayRecordError as e:
        raise invalid("sgf", str(e), "bad_record") from None


def _played_with(settings: dict, expected: dict, what: str) -> None:
    if settings != expected:
        differ = sorted(k for k in set(settings) | set(expected) if settings.get(k) != expected.get(k))
        raise _refuse(f"was played with other {what} settings than the task's (they differ in {', '.join(differ)})")


def _binomial_odds(k: int, n: int, p: float) -> float:
    """A bound (Chernoff's) on the odds of k or more successes of n (k above n p), or of k or fewer
    (below): exp(-n KL(k/n || p))."""
    if n == 0:
        return 1.0
    a = k / n
    if a == p:
        return 1.0

    def term(x: float, q: float) -> float:
        if x == 0:
            return 0.0
        return math.inf if q == 0 else x * math.log(x / q)

    divergence = term(a, p) + term(1.0 - a, 1.0 - p)
    return math.exp(-n * divergence)


def check_selfplay(draws: SelfPlayDraws, rec: GameRecord, settings: SelfPlaySettings, result: str) -> None:
    """The self-play record's draws against the task's self-play settings."""
    info, start = draws.info, draws.info.start
    _played_with(info.settings, settings.to_dict(), "self-play")
    _held(board_problem(settings, rec.x_size, rec.y_size))
    expected_handicap = start.extra_black + 1 if start.extra_black else 0
    if rec.handicap != expected_handicap:
        raise _refuse(
            f"handicap {rec.handicap} disagrees with the {start.extra_black} extra black moves its start records"
        )
    _held(handicap_problem(settings, rec.x_size, rec.y_size, start.extra_black))
    _held(komi_problem(settings, start.komi_drawn))
    if start.komi_fair is not None and (start.fork is not None or start.komi_compensated):
        raise _refuse("its komi was both compensated and made fair for the empty board")
    if start.fork is not None:
        _check_fork(draws, settings)
    elif start.komi_compensated:
        if not (
            start.extra_black
            and settings.handicap_compensate_komi_prob > 0
            and settings.handicap_compensation_rounds > 0
        ):
            raise _refuse("its komi was compensated, which the task's settings do only for handicap games and forks")
    elif settings.komi_auto:
        _check_fair_komi(start, rec, settings)
    elif start.komi_fair is not None:
        raise _refuse("its komi was made fair for the empty board, which the task's settings do not do (komi_auto)")
    elif rec.komi != start.komi_drawn:
        raise _refuse(f"komi {rec.komi:g} is not the {start.komi_drawn:g} it drew (and it was not compensated)")
    moves = len(draws.notes)
    if moves > settings.max_moves:
        raise _refuse(f"it has {moves} moves, more than the task's move limit of {settings.max_moves}")
    if info.move_limit_reached != (result == "Void"):
        raise _refuse(
            f"it says the move limit was {'' if info.move_limit_reached else 'not '}reached, but its result "
            f"is {result!r}"
        )
    _check_playouts(draws, settings)
    _check_searches(draws, settings)
    _check_sides(draws, settings)


def _check_fair_komi(start: StartNote, rec: GameRecord, settings: SelfPlaySettings) -> None:
    """komi_auto: a fair komi for the empty board within the board's area, and the game's komi that
    plus the draw's offset from the mean."""
    if start.komi_fair is None:
        raise _refuse("its komi was not made fair for the empty board, which the task's settings do (komi_auto)")
    area = rec.x_size * rec.y_size
    if abs(start.komi_fair) > area or start.komi_fair * 2 != int(start.komi_fair * 2):
        raise _refuse(
            f"the fair komi {start.komi_fair:g} it found for the empty board is not a half point within the "
            f"board's area (±{area})"
        )
    expected = settings.auto_komi(start.komi_fair, start.komi_drawn)
    if rec.komi != expected:
        raise _refuse(
            f"komi {rec.komi:g} is not the fair {start.komi_fair:g} plus its draw's offset from the mean "
            f"({start.komi_drawn:g} - {settings.komi_mean:g}), {expected:g}"
        )


def _check_fork(draws: SelfPlayDraws, settings: SelfPlaySettings) -> None:
    start = draws.info.start
    fork = start.fork
    assert fork is not None
    if settings.early_fork_prob <= 0:
        raise _refuse("it starts from an early fork, which the task's settings do not make")
    if start.extra_black:
        raise _refuse("it starts from an early fork of a handicap game; forks are of even games")
    if fork.turn + 1 != start.opening_moves:
        raise _refuse(
            f"its fork kept {fork.turn} moves, so its opening is {fork.turn + 1} moves, not {start.opening_moves}"
        )
    if fork.choices > settings.fork_max_choices:
        raise _refuse(
            f"its fork's move was the best of {fork.choices} candidates; the task's settings take at most "
            f"{settings.fork_max_choices}"
        )
    if start.komi_compensated != (settings.handicap_compensation_rounds > 0):
        raise _refuse("a fork's komi is compensated exactly when the task's settings have compensation rounds")


def _check_playouts(draws: SelfPlayDraws, settings: SelfPlaySettings) -> None:
    """Asymmetric playouts: only where the settings give them, of an advantage they draw (in a
    handicap game, white's)."""
    start = draws.info.start
    _held(asymmetry_problem(settings, start.extra_black, start.playouts, forked=start.fork is not None))


def _upper_odds(k: int, n: int, p: float) -> float:
    """The odds of k or more of n at probability p (1 when k is not above n p)."""
    return _binomial_odds(k, n, p) if k > n * p else 1.0


def _check_sides(draws: SelfPlayDraws, settings: SelfPlaySettings) -> None:
    """Side positions: made only with the settings' probability (no more often than it gives but
    with odds below FULL_SEARCH_ODDS), each searched with the full visits."""
    if draws.lines == 0:
        return
    if settings.side_position_prob <= 0:
        raise _refuse("it has side positions, which the task's settings do not make")
    for side in draws.sides:
        visits = draws.visits_for(settings, settings.visits, side.color)
        if side.note.visits != visits:
            raise _refuse(
                f"a side position before move {side.node} was searched with {side.note.visits} visits, not the "
                f"task's {visits}"
            )
    searched = sum(note is not None for note in draws.notes)
    odds = _upper_odds(draws.lines, searched, settings.side_position_prob)
    if odds < FULL_SEARCH_ODDS:
        raise _refuse(
            f"{draws.lines} of its {searched} searched turns branched off to side positions; the task's "
            f"settings branch with probability {settings.side_position_prob:g} (odds below {odds:.1e})"
        )
    odds = _upper_odds(draws.continued, len(draws.sides), settings.side_position_continue_prob)
    if odds < FULL_SEARCH_ODDS:
        raise _refuse(
            f"{draws.continued} of its {len(draws.sides)} side positions went on; the task's settings go on "
            f"with probability {settings.side_position_continue_prob:g} (odds below {odds:.1e})"
        )


def _check_searches(draws: SelfPlayDraws, settings: SelfPlaySettings) -> None:
    opening = draws.info.start.opening_moves
    notes = draws.notes
    if opening > len(notes):
        raise _refuse(f"its start records {opening} opening moves, but it has {len(notes)} moves")
    for turn, note in enumerate(notes):
        if (note is None) != (turn < opening):
            raise _refuse(
                f"move {turn + 1} "
                + (
                    "has no search note, though it comes after the opening"
                    if note is None
                    else "has a search note, though it is a move of the opening"
                )
            )
    full = 0
    searches = [note for note in notes[opening:] if note is not None]  # every one: checked above
    for turn, note in enumerate(searches, start=opening):
        color = draws.colors[turn]
        if note.full:
            full += 1
            low, high = (draws.visits_for(settings, v, color) for v in settings.full_search_visits())
            if not low <= note.visits <= high:
                raise _refuse(
                    f"move {turn + 1}: a full search of {note.visits} visits; the task's settings search "
                    f"{low}" + (f" to {high}" if high != low else "") + " visits"
                )
        elif note.visits > draws.visits_for(settings, max(settings.visits, settings.cheap_visits), color):
            raise _refuse(
                f"move {turn + 1}: a cheap search of {note.visits} visits, more than the task's settings allow"
            )
    searched = len(notes) - opening
    odds = _binomial_odds(full, searched, settings.full_search_prob)
    if odds < FULL_SEARCH_ODDS:
        raise _refuse(
            f"{full} of its {searched} searches were full; the task's settings make a search full with "
            f"probability {settings.full_search_prob:g} (odds below {odds:.1e})"
        )


def full_weight(draws: SelfPlayDraws, settings: SelfPlaySettings) -> float:
    """The most training weight the record's full searches can carry (one each, less where soft
    resignation reduced the search)."""
    return sum(
        settings.full_search_weight(draws.base_visits(settings, v, draws.colors[t]))
        for t, v in draws.full_turns().items()
    )


def check_rating(rec: GameRecord, settings: MatchSettings, result: str) -> None:
    """A rating game's record against the task's match settings: played with them, on a size they
    draw, every move with its search's note, and a resignation the notes support."""
    try:
        data = boundedjson.loads(rec.comment) if rec.comment else None
    except ValueError as e:
        raise invalid("sgf", f"the root comment is not JSON: {e}", "bad_record") from None
    if not isinstance(data, dict) or set(data) != {"settings"} or not isinstance(data["settings"], dict):
        raise invalid(
            "sgf", "the root comment must be a JSON object holding the match settings it was played with", "bad_record"
        )
    _played_with(data["settings"], settings.to_dict(), "match")
    if rec.x_size != rec.y_size or rec.x_size not in settings.sizes_in_play():
        raise _refuse(
            f"a {rec.x_size}x{rec.y_size} board is not drawn by the task's settings (sizes "
            f"{list(settings.sizes_in_play())})"
        )
    _check_match_searches(rec, settings, result)


def _check_match_searches(rec: GameRecord, settings: MatchSettings, result: str) -> None:
    """Every move of a match is a full search that notes its win rate; a resignation (``B+R``: white
    resigned) stands only where the resigning side's win rate was below the threshold in each of the
    last ``resign_consecutive_turns`` notes, as the match rule resigns (:mod:`common.resignation`)."""
    try:
        if any(node.variations for node in rec.nodes):
            raise SelfPlayRecordError("a rating game is one line of moves; this record has variations")
        notes, colors = _notes(rec)
        for k, note in enumerate(notes, start=1):
            if note is None or not note.full:
                raise SelfPlayRecordError(
                    f"move {k} has {'no search note' if note is None else 'a cheap search'}: every move of a rating "
                    "game is a full search that notes its visits and win rate"
                )
    except SelfPlayRecordError as e:
        raise invalid("sgf", str(e), "bad_record") from None
    if result not in ("B+R", "W+R"):
        return
    loser = WHITE if result == "B+R" else BLACK
    winrates = [(color, note.winrate) for color, note in zip(colors, notes, strict=True) if note is not None]
    turns, threshold = settings.resign_consecutive_turns, settings.resign_threshold
    if resigning(winrates, threshold, turns) != loser:
        last = ", ".join(f"{winrate_of(loser, c, w):.3f}" for c, w in winrates[-turns:]) or "none"
        raise invalid(
            "sgf",
            f"{'white' if loser == WHITE else 'black'} resigned, but the record does not support it: a side resigns "
            f"when its win rate was below {threshold} in each of the last {turns} search notes; its last ones were "
            f"{last}",
            "wrong_result",
        )
