"""A slow, independent reference of KataGo's Go rules, for tests only.

Written from KataGo's rules page ("KataGo's Supported Go Rules", version 2) with KataGo's
``cpp/game/boardhistory.cpp`` and ``board.cpp`` for the facts the page leaves open, and never from
``common.go``'s kernels, so that tests can hold the engine against it: every phase of territory
scoring (main, encore 1, encore 2), ko SIMPLE / POSITIONAL / SITUATIONAL, multi-stone suicide on or
off, tax NONE / SEKI / ALL, area and territory scoring, the button, the white handicap bonus.

Points are plain integers ``y * x_size + x`` (x from the left, y from the top); a position is a
list of colours, one per point. Everything is recomputed from scratch with flood fills: slow, and
simple enough to check by reading.

Where KataGo's code is more precise than its rules page, the reference follows the code:

- a "ko capture" (a ko-move, in the page's words) is a move that captures exactly one stone with a
  stone that is then alone with one liberty;
- a move by the blocked stone's opponent on a ko-recapture-blocked stone that is alone and in atari,
  or on an empty point whose only capturable neighbour is that stone (all its neighbours being the
  opponent's stones or the edge), is the unblock action ("pass for ko"): the board stays as it is;
- in the main phase under SIMPLE ko, and in both encore phases, a pass forgets the history kept for
  the no-result rule, and a player passing again from a state they passed from ends the phase;
- taking the button (the first pass of the main phase) does not count towards the two passes that
  end the phase, and forgets the superko history and the states passed from;
- territory is counted as KataGo counts it, "chilled": each stone played in the main phase or the
  first encore (setup stones included) gives the opponent a point, and the board is then counted
  like area scoring, with stones counted only in independent-life regions or on their colour at the
  start of the second encore.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

EMPTY, BLACK, WHITE = 0, 1, 2
Board = list[int]


def opponent(color: int) -> int:
    return 3 - color


class Geometry:
    """The points of an x_size by y_size board and their neighbours."""

    def __init__(self, x_size: int, y_size: int) -> None:
        self.x_size = x_size
        self.y_size = y_size
        self.points = range(x_size * y_size)
        self._neighbors = []
        for p in self.points:
            x, y = self.xy(p)
            near = [(x, y - 1), (x - 1, y), (x + 1, y), (x, y + 1)]
            self._neighbors.append([self.point(a, b) for a, b in near if 0 <= a < x_size and 0 <= b < y_size])

    def point(self, x: int, y: int) -> int:
        return y * self.x_size + x

    def xy(self, p: int) -> tuple[int, int]:
        return p % self.x_size, p // self.x_size

    def neighbors(self, p: int) -> list[int]:
        return self._neighbors[p]


# --- chains and moves ----------------------------------------------------------------------------
def flood(geo: Geometry, start: int, inside) -> set[int]:
    """The connected set of points around start for which inside(point) holds."""
    seen = {start}
    queue = [start]
    while queue:
        p = queue.pop()
        for q in geo.neighbors(p):
            if q not in seen and inside(q):
                seen.add(q)
                queue.append(q)
    return seen


def chain(geo: Geometry, board: Board, p: int) -> set[int]:
    color = board[p]
    return flood(geo, p, lambda q: board[q] == color)


def liberties(geo: Geometry, board: Board, stones: set[int]) -> set[int]:
    return {q for p in stones for q in geo.neighbors(p) if board[q] == EMPTY}


@dataclass
class Placement:
    """What putting a stone on an empty point does: the board after it, the opponent's stones it
    captured, the own stones it took off (suicide), and the simple-ko point it leaves."""

    board: Board
    captured: set[int]
    suicided: set[int]
    ko_point: int | None


def place(geo: Geometry, board: Board, p: int, color: int) -> Placement:
    """Colour p, then resolve captures of the opponent, then of the player."""
    after = list(board)
    after[p] = color
    captured: set[int] = set()
    for q in geo.neighbors(p):
        if after[q] == opponent(color) and q not in captured:
            group = chain(geo, after, q)
            if not liberties(geo, after, group):
                captured |= group
    for q in captured:
        after[q] = EMPTY
    own = chain(geo, after, p)
    suicided: set[int] = set()
    if not liberties(geo, after, own):
        suicided = own
        for q in own:
            after[q] = EMPTY
    ko_point = None
    if len(captured) == 1 and len(own) == 1 and len(liberties(geo, after, own)) == 1:
        ko_point = next(iter(captured))
    return Placement(after, captured, suicided, ko_point)


def pseudolegal(geo: Geometry, board: Board, p: int, color: int, suicide: bool) -> Placement | None:
    """The placement if it is a pseudolegal move: on an empty point, changing the board, and
    taking none of the player's own stones off unless multi-stone suicide is allowed."""
    if board[p] != EMPTY:
        return None
    placed = place(geo, board, p, color)
    if placed.board == board or (placed.suicided and not suicide):
        return None
    return placed


# --- pass-alive stones and territory (Benson) ----------------------------------------------------
def benson(
    geo: Geometry, board: Board, pla: int, suicide: bool, safe_big: bool, unsafe_big: bool, result: Board
) -> None:
    """Mark on result pla's pass-alive chains and pass-alive territory (and, when asked, the empty
    regions bordered only by pla: all of them if their chains are pass-alive, the others only where
    result is still empty), as KataGo's area calculation for one colour does."""
    opp = opponent(pla)
    # Regions: maximal connected sets of empty or opponent points that hold an empty point.
    regions: list[set[int]] = []
    seen: set[int] = set()
    for p in geo.points:
        if board[p] == EMPTY and p not in seen:
            region = flood(geo, p, lambda q: board[q] != pla)
            seen |= region
            regions.append(region)
    chains: list[set[int]] = []
    for p in geo.points:
        if board[p] == pla and not any(p in c for c in chains):
            chains.append(chain(geo, board, p))

    def adjacent(points: set[int], stones: set[int]) -> bool:
        return any(q in stones for p in points for q in geo.neighbors(p))

    # A region is vital to a chain when each of its empty points (each of its points, if suicide is
    # allowed, since the opponent's stones inside may then be taken off by the opponent's own move)
    # is a liberty of that chain.
    vital: list[list[int]] = []
    for region in regions:
        counted = region if suicide else {p for p in region if board[p] == EMPTY}
        vital.append([i for i, c in enumerate(chains) if all(adjacent({p}, c) for p in counted)])
    alive = set(range(len(chains)))
    tainted: set[int] = set()  # regions bordering a chain found not pass-alive
    changed = True
    while changed:
        changed = False
        for i in sorted(alive):
            healthy = sum(1 for r in range(len(regions)) if i in vital[r] and r not in tainted)
            if healthy < 2:
                alive.discard(i)
                changed = True
                tainted |= {r for r, region in enumerate(regions) if adjacent(region, chains[i])}
    for i in alive:
        for p in chains[i]:
            result[p] = pla
    if not chains:
        return
    plas = set().union(*chains)
    for r, region in enumerate(regions):
        internal = sum(1 for p in region if not adjacent({p}, plas))
        has_opp = any(board[p] == opp for p in region)
        if r not in tainted and (internal <= 1 or (safe_big and not has_opp)):
            for p in region:
                result[p] = pla
        elif unsafe_big and not has_opp:
            for p in region:
                if result[p] == EMPTY:
                    result[p] = pla


def area(geo: Geometry, board: Board, suicide: bool, stones: bool, safe_big: bool, unsafe_big: bool) -> Board:
    """KataGo's area map: pass-alive stones and territory of both colours (Black's marked first,
    White's over them), big territories when asked, and the remaining stones when asked."""
    result = [EMPTY] * len(board)
    benson(geo, board, BLACK, suicide, safe_big, unsafe_big, result)
    benson(geo, board, WHITE, suicide, safe_big, unsafe_big, result)
    if stones:
        for p in geo.points:
            if result[p] == EMPTY:
                result[p] = board[p]
    return result


def independent_life(
    geo: Geometry, board: Board, suicide: bool, keep_territories: bool, keep_stones: bool
) -> tuple[Board, int]:
    """Independent-life regions and their white-minus-black count.

    The basic area is every point owned by pass-aliveness or by bordering one colour only, and every
    other stone as itself. A connected set of points of one owner is in seki (not an
    independent-life region) if it touches a dame point (empty, owned by nobody) or holds a stone of
    its owner in atari. keep_territories adds the owned points that are not the owner's stones
    (territory and dead stones, seki or not); keep_stones adds the owner's stones, seki or not."""
    basic = area(geo, board, suicide, stones=True, safe_big=True, unsafe_big=True)
    result = [EMPTY] * len(board)
    count = 0
    done: set[int] = set()
    for p in geo.points:
        if basic[p] == EMPTY or p in done:
            continue
        owner = basic[p]
        region = flood(geo, p, lambda q, owner=owner: basic[q] == owner)
        done |= region
        touches_dame = any(board[q] == EMPTY and basic[q] == EMPTY for r in region for q in geo.neighbors(r))
        in_atari = False
        stones_seen: set[int] = set()
        for r in region:
            if board[r] == owner and r not in stones_seen:
                stones = chain(geo, board, r)
                stones_seen |= stones
                in_atari = in_atari or len(liberties(geo, board, stones)) == 1
        if touches_dame or in_atari:
            continue
        count += 1 if owner == WHITE else -1
        for r in region:
            result[r] = owner
    for p in geo.points:
        if basic[p] != EMPTY and basic[p] != board[p] and keep_territories:
            result[p] = basic[p]
        if basic[p] != EMPTY and basic[p] == board[p] and keep_stones:
            result[p] = basic[p]
    return result, count


def white_minus_black(owners: Board) -> int:
    return sum(1 if c == WHITE else -1 if c == BLACK else 0 for c in owners)


# --- the game ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RefRules:
    ko: str = "SIMPLE"  # SIMPLE, POSITIONAL or SITUATIONAL
    scoring: str = "TERRITORY"  # AREA or TERRITORY
    tax: str = "SEKI"  # NONE, SEKI or ALL
    suicide: bool = False  # multi-stone suicide allowed
    button: bool = False
    white_handicap_bonus: str = "0"  # "0", "N" or "N-1"


@dataclass(frozen=True)
class RefResult:
    no_result: bool
    score: float  # white minus black, 0 for no result
    winner: int  # BLACK, WHITE, or EMPTY for a draw or no result


class RefGame:
    """A game under KataGo's rules, replayed from first principles."""

    def __init__(
        self,
        x_size: int,
        y_size: int,
        rules: RefRules,
        komi: float,
        black: Iterable[int] = (),
        white: Iterable[int] = (),
        to_move: int = BLACK,
    ) -> None:
        self.geo = Geometry(x_size, y_size)
        self.rules = rules
        self.komi = komi
        black, white = list(black), list(white)
        self.board: Board = [EMPTY] * (x_size * y_size)
        for p in black:
            self.board[p] = BLACK
        for p in white:
            self.board[p] = WHITE
        for p in self.geo.points:
            if self.board[p] != EMPTY and not liberties(self.geo, self.board, chain(self.geo, self.board, p)):
                raise ValueError(f"setup leaves the chain at {self.geo.xy(p)} without liberties")
        self.to_move = to_move
        self.phase = 0
        self.ko_point: int | None = None  # main phase: the point a simple ko forbids
        self.blocked: set[int] = set()  # encore: ko-recapture-blocked stones
        self.ko_captures: set[tuple[tuple[int, ...], int, int]] = set()  # (board before, point, player)
        self.second_encore_start: Board | None = None
        self.passes = 0  # consecutive passes that count towards ending the phase
        self.passed_from: dict[int, set] = {BLACK: set(), WHITE: set()}
        self.button = rules.button
        self.white_bonus = 0.0  # chilling and the button
        if rules.scoring == "TERRITORY":
            self.white_bonus += self.board.count(BLACK) - self.board.count(WHITE)
        # Handicap stones: two or more black setup stones and no white ones.
        n = len(black) if (not white and len(black) >= 2) else 0
        self.handicap_bonus = {"0": 0, "N": n, "N-1": max(n - 1, 0)}[rules.white_handicap_bonus]
        self.history = [self.state()]
        self.over = False
        self.result: RefResult | None = None
        self.pass_for_ko_turns: list[int] = []
        self.turns = 0
        self.endings: list[str] = []  # how each phase ended: "passes", "repeated pass", "cycle"

    # --- states ---
    def state(self) -> tuple:
        """What the ko rules compare: the board, the side to move unless positional superko in the
        main phase, and the ko-recapture blocks."""
        who = self.to_move if (self.phase > 0 or self.rules.ko != "POSITIONAL") else 0
        return (tuple(self.board), who, frozenset(self.blocked))

    # --- legality ---
    def pass_for_ko_target(self, p: int, color: int) -> int | None:
        """The blocked stone a move at p would unblock, if it is a pass for ko."""
        if self.phase == 0:
            return None
        geo, board, opp = self.geo, self.board, opponent(color)
        if board[p] == opp:
            stones = chain(geo, board, p)
            if p in self.blocked and len(stones) == 1 and len(liberties(geo, board, stones)) == 1:
                return p
            return None
        if board[p] != EMPTY:
            return None
        if any(board[q] != opp for q in geo.neighbors(p)):
            return None
        in_atari = [q for q in geo.neighbors(p) if len(liberties(geo, board, chain(geo, board, q))) == 1]
        if len(in_atari) != 1 or len(chain(geo, board, in_atari[0])) != 1:
            return None
        return in_atari[0] if in_atari[0] in self.blocked else None

    def is_legal(self, p: int, color: int | None = None) -> bool:
        color = self.to_move if color is None else color
        if self.pass_for_ko_target(p, color) is not None:
            return True
        placed = pseudolegal(self.geo, self.board, p, color, self.rules.suicide)
        if placed is None:
            return False
        if self.phase > 0:
            return (tuple(self.board), p, color) not in self.ko_captures
        if p == self.ko_point:
            return False
        if self.rules.ko == "SIMPLE":
            return True
        who = opponent(color) if self.rules.ko == "SITUATIONAL" else 0
        return (tuple(placed.board), who, frozenset()) not in self.history

    def legal_moves(self, color: int | None = None) -> list[int]:
        return [p for p in self.geo.points if self.is_legal(p, color)]

    def is_pass_for_ko(self, p: int, color: int | None = None) -> bool:
        return self.pass_for_ko_target(p, self.to_move if color is None else color) is not None

    def passes_for_ko(self, color: int | None = None) -> list[int]:
        return [p for p in self.geo.points if self.is_pass_for_ko(p, color)]

    # --- moves ---
    def play(self, p: int | None, color: int | None = None) -> None:
        """Play p (None passes) for color; raises ValueError on an illegal move."""
        color = self.to_move if color is None else color
        if color != self.to_move:
            raise ValueError(f"it is {self.to_move}'s turn, not {color}'s")
        if p is not None and not self.is_legal(p, color):
            raise ValueError(f"illegal move at {self.geo.xy(p)} for {color}")
        self.over = False
        self.result = None
        phase_ends = False
        if p is None:
            before = self.state()
            self.ko_point = None
            if self.button and self.phase == 0:
                # Taking the button: worth half a point, not an ending pass, and a fresh history.
                self.button = False
                self.white_bonus += 0.5 if color == WHITE else -0.5
                self.passes = 0
                self.passed_from = {BLACK: set(), WHITE: set()}
                self.history = []
            else:
                spight = self.phase > 0 or self.rules.ko == "SIMPLE"
                if spight:
                    self.history = []
                self.passes += 1
                repeated = spight and before in self.passed_from[color]
                phase_ends = self.passes >= 2 or repeated
                if phase_ends:
                    self.endings.append("passes" if self.passes >= 2 else "repeated pass")
                self.passed_from[color].add(before)
        else:
            self.passes = 0
            target = self.pass_for_ko_target(p, color)
            if target is not None:
                self.blocked.discard(target)
                self.pass_for_ko_turns.append(self.turns)
            else:
                before = tuple(self.board)
                placed = place(self.geo, self.board, p, color)
                self.board = placed.board
                if self.phase == 0:
                    self.ko_point = placed.ko_point
                else:
                    if placed.ko_point is not None:
                        self.blocked.add(p)
                        self.ko_captures.add((before, p, color))
                    self.blocked = {q for q in self.blocked if self.board[q] != EMPTY}
                if self.rules.scoring == "TERRITORY" and self.phase <= 1:
                    self.white_bonus += 1 if color == BLACK else -1
        self.to_move = opponent(color)
        self.turns += 1
        self.history.append(self.state())
        if phase_ends:
            if self.rules.scoring == "AREA" or self.phase == 2:
                self._score()
            else:
                self.phase += 1
                if self.phase == 2:
                    self.second_encore_start = list(self.board)
                self.passes = 0
                self.passed_from = {BLACK: set(), WHITE: set()}
                self.blocked = set()
                self.ko_captures = set()
                self.ko_point = None
                self.history = [self.state()]
        # The same state three times since the last pass: an endless cycle, no result.
        cycles = p is not None and (self.phase > 0 or self.rules.ko == "SIMPLE")
        if cycles and self.history.count(self.history[-1]) >= 3:
            self.endings.append("cycle")
            self.over = True
            self.result = RefResult(no_result=True, score=0.0, winner=EMPTY)

    # --- counting ---
    def scoring_owners(self) -> tuple[Board, int]:
        """Who each point counts for if the game were scored now, and the white-minus-black count
        of independent-life regions (0 when no tax needs it)."""
        geo, board, tax, suicide = self.geo, self.board, self.rules.tax, self.rules.suicide
        if self.rules.scoring == "AREA":
            if tax == "NONE":
                return area(geo, board, suicide, stones=True, safe_big=True, unsafe_big=True), 0
            return independent_life(geo, board, suicide, keep_territories=False, keep_stones=True)
        owners, count = independent_life(geo, board, suicide, keep_territories=tax == "NONE", keep_stones=False)
        for p in geo.points:
            # A stone outside the independent-life regions counts if it stood there (in its colour)
            # when the second encore began, or if the game ended before that.
            stood = self.phase < 2 or (self.second_encore_start and self.second_encore_start[p] == board[p])
            if owners[p] == EMPTY and board[p] != EMPTY and stood:
                owners[p] = board[p]
        return owners, count

    def scoring(self) -> tuple[Board, float]:
        """Who each point counts for, and the white-minus-black score (komi and bonuses included),
        if the game were scored now."""
        owners, count = self.scoring_owners()
        tax = 2 * count if self.rules.tax == "ALL" else 0
        return owners, white_minus_black(owners) - tax + self._bonuses()

    def score_now(self) -> float:
        return self.scoring()[1]

    def _bonuses(self) -> float:
        button = 0.0
        if self.button:
            button = 0.5 if self.to_move == WHITE else -0.5
        return self.white_bonus + button + self.handicap_bonus + self.komi

    @staticmethod
    def _scored(score: float) -> RefResult:
        return RefResult(no_result=False, score=score, winner=WHITE if score > 0 else BLACK if score < 0 else EMPTY)

    def _score(self) -> None:
        self.over = True
        self.result = self._scored(self.score_now())

    def is_all_pass_alive(self) -> bool:
        owners = area(self.geo, self.board, self.rules.suicide, stones=False, safe_big=False, unsafe_big=False)
        return EMPTY not in owners

    def all_pass_alive_result(self) -> RefResult | None:
        """The result KataGo's self-play ends the game with when every point is pass-alive (None
        when some point is not): the pass-alive count with the bonuses, or, with the group tax,
        the normal count."""
        owners = area(self.geo, self.board, self.rules.suicide, stones=False, safe_big=False, unsafe_big=False)
        if EMPTY in owners:
            return None
        if self.rules.tax == "ALL":
            return self._scored(self.score_now())
        return self._scored(white_minus_black(owners) + self._bonuses())
