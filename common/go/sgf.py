"""SGF (FF[4]) reading and writing for Go games.

``parse_collection`` turns SGF text into trees of property dictionaries, with errors that name the
line and column where the text breaks. ``read_sgf``/``read_sgf_collection`` interpret the main line
of each game (the first variation at every branch) as a ``GameRecord``: size (square or "W:H"),
komi, rules (KataGo's strings and the common names), handicap, setup stones, moves (passes as
``B[]`` or ``B[tt]``), result, players, date and comments. The other variations that branch off the
main line are kept on the main line's node they stand in for (``Node.variations``), each as its own
first line (self-play records its side positions as such lines). ``GameRecord.to_sgf`` writes FF[4].

Territory games need two things SGF has no property for, written as KataGo writes them:
- a pass for ko (a move in an encore phase at a ko-recapture-blocked point, which leaves the board
  as it is: ``Game.is_pass_for_ko``) is a pass ``B[]`` with ``TR[point]`` and a comment that begins
  ``Pass for ko``. Other programs see a pass, which leaves the board as it is too; read as a plain
  pass it would not lift the block, so the record keeps it as the move at that point.
- a game that begins in an encore phase (KataGo's cleanup training) says so in KataGo's root
  comment (``...,gtype=cleanuptraining,beganInEncorePhase=1``); this module writes and reads the
  root property ``ENCORE[1]`` for it, which other programs ignore, and reads KataGo's comment too.

sgfmill was considered for the parsing: it reports no position for syntax errors and does not
accept rectangular boards, both of which this module needs, so the (small) grammar is parsed here.
"""

from __future__ import annotations

import bisect
import codecs
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from common.go.game import Game, IllegalMoveError
from common.go.geometry import (
    BLACK,
    MAX_SIZE,
    PASS,
    SGF_LETTERS,
    WHITE,
    check_size,
    color_letter,
    loc_of,
    sgf_point,
    xy_of,
)
from common.go.rules import Rules, RulesError, default_komi


class SGFError(ValueError):
    """SGF text that cannot be read; the message names where."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        self.line = line
        self.column = column
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(f"SGF {where}{message}")


# --- syntax --------------------------------------------------------------------------------------
# Variations inside variations: real files (game reviews, problem collections) stay far below this;
# the parser keeps one small entry per level, so the bound only refuses hostile text.
MAX_VARIATION_DEPTH = 1000


@dataclass(eq=False)
class SGFNode:
    """A node and its children (the main line's next node first). Nodes compare by identity and
    print without their children: a game's main line is a chain as deep as the game is long, which
    a recursive comparison or print would follow to its end."""

    properties: dict[str, list[str]]
    children: list[SGFNode] = field(default_factory=list, repr=False)
    line: int = 0
    column: int = 0

    def get(self, key: str) -> str | None:
        values = self.properties.get(key)
        return values[0] if values else None


@dataclass
class _Open:
    """A game tree or variation the parser is inside: where it opened, its first and last node so far
    (a tree opens with a node, so both are there from the start)."""

    pos: int
    first: SGFNode
    last: SGFNode


_SPACE = re.compile(r"\s*")
_LETTERS = re.compile(r"[^\W\d_]*")  # what str.isalpha() accepts


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.n = len(text)
        self.newlines = [m.start() for m in re.finditer("\n", text)]

    def where(self, pos: int | None = None) -> tuple[int, int]:
        pos = self.pos if pos is None else pos
        before = bisect.bisect_left(self.newlines, pos)  # newlines before pos
        line_start = self.newlines[before - 1] + 1 if before else 0
        return before + 1, pos - line_start + 1

    def error(self, message: str, pos: int | None = None) -> SGFError:
        return SGFError(message, *self.where(pos))

    def skip_ws(self) -> None:
        self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]  # \s* always matches

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < self.n else ""

    def collection(self) -> list[SGFNode]:
        trees = []
        start = self.text.find("(")
        if start < 0:
            raise SGFError("no game found: the text has no '('")
        self.pos = start
        while True:
            self.skip_ws()
            if self.pos >= self.n:
                break
            if self.peek() != "(":
                # Anything after the last game tree is ignored, as other readers do.
                break
            trees.append(self.tree())
        return trees

    def tree(self) -> SGFNode:
        """The game tree opening at self.pos, read without recursion: ``levels`` holds the tree and
        the variations the text is inside, at most MAX_VARIATION_DEPTH."""
        levels: list[_Open] = []
        while True:
            self.skip_ws()
            c = self.peek()
            if c == "(":
                if len(levels) >= MAX_VARIATION_DEPTH:
                    raise self.error(f"variations are nested more than {MAX_VARIATION_DEPTH} deep")
                pos = self.pos
                self.pos += 1
                self.skip_ws()
                if self.peek() != ";":
                    raise self.error(f"expected ';' to start a node, found {self._found()}")
                node = self.node()
                levels.append(_Open(pos, node, node))
            elif c == ";":
                node = self.node()
                current = levels[-1]
                current.last.children.append(node)
                current.last = node
            elif c == ")":
                self.pos += 1
                done = levels.pop()
                if not levels:
                    return done.first
                levels[-1].last.children.append(done.first)
            elif c == "":
                raise self.error("unexpected end of the text: a game tree opened here is not closed", levels[-1].pos)
            else:
                raise self.error(f"expected ';', '(' or ')', found {self._found()}")

    def node(self) -> SGFNode:
        line, col = self.where()
        self.pos += 1  # ';'
        props: dict[str, list[str]] = {}
        while True:
            self.skip_ws()
            c = self.peek()
            if not c.isalpha():
                return SGFNode(props, line=line, column=col)
            ident_pos = self.pos
            self.pos = _LETTERS.match(self.text, self.pos).end()  # type: ignore[union-attr]  # always matches
            raw = self.text[ident_pos : self.pos]
            # FF[3] allowed lower-case letters inside identifiers (AddBlack = AB).
            ident = "".join(ch for ch in raw if ch.isupper())
            if not ident:
                raise self.error(f"property name {raw!r} has no upper-case letters", ident_pos)
            self.skip_ws()
            if self.peek() != "[":
                raise self.error(f"expected '[' after property {raw}, found {self._found()}")
            values = props.setdefault(ident, [])
            while self.peek() == "[":
                values.append(self.value())
                self.skip_ws()

    def value(self) -> str:
        open_pos = self.pos
        self.pos += 1
        # The common case: no escapes before the closing bracket.
        close = self.text.find("]", self.pos)
        if close >= 0 and self.text.find("\\", self.pos, close) < 0:
            value = self.text[self.pos : close]
            self.pos = close + 1
            return value
        out = []
        while True:
            if self.pos >= self.n:
                raise self.error("unexpected end of the text: a value opened here has no closing ']'", open_pos)
            c = self.text[self.pos]
            if c == "\\":
                if self.pos + 1 >= self.n:
                    raise self.error("unexpected end of the text after '\\'", self.pos)
                nxt = self.text[self.pos + 1]
                self.pos += 2
                if nxt == "\r" and self.peek() == "\n":
                    self.pos += 1
                    continue
                if nxt in "\r\n":
                    continue  # soft line break
                out.append(nxt)
                continue
            if c == "]":
                self.pos += 1
                return "".join(out)
            out.append(c)
            self.pos += 1

    def _found(self) -> str:
        c = self.peek()
        return "the end of the text" if c == "" else repr(c)


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    m = re.search(rb"CA\s*\[([^\]]*)\]", data)
    if m:
        try:
            return data.decode(codecs.lookup(m.group(1).decode("ascii", "replace").strip()).name)
        except (LookupError, UnicodeDecodeError):
            pass
    return data.decode("latin-1")


def parse_collection(data: str | bytes) -> list[SGFNode]:
    """The root node of every game tree in SGF text."""
    text = _decode(data) if isinstance(data, bytes) else data
    return _Parser(text).collection()


# --- Go records ----------------------------------------------------------------------------------
@dataclass
class Setup:
    black: list[int] = field(default_factory=list)
    white: list[int] = field(default_factory=list)
    empty: list[int] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.black or self.white or self.empty)


PASS_FOR_KO_NOTE = "Pass for ko"  # how KataGo's comment of a pass for ko begins
ENCORE_PROPERTY = "ENCORE"  # the encore phase a game begins in, when not the main phase
_KATAGO_ENCORE_START = re.compile(r"(?:^|,)beganInEncorePhase=(\d+)(?=[,\s]|$)")


@dataclass
class Node:
    """One node of the main line: setup stones, a move, the side to move and a comment.

    A pass for ko is the move at its point with ``pass_for_ko`` set (written as a pass with TR).
    ``variations``: lines of play branching off before this node, in its place (each a list of
    move nodes; a line's own branches are not kept)."""

    move: tuple[int, int] | None = None  # (colour, location or PASS)
    setup: Setup | None = None
    to_move: int | None = None
    comment: str | None = None
    pass_for_ko: bool = False
    variations: list[list[Node]] = field(default_factory=list)


@dataclass
class GameRecord:
    x_size: int = 19
    y_size: int = 19
    komi: float | None = None
    rules: Rules | None = None
    rules_text: str | None = None
    handicap: int = 0
    result: str | None = None
    black_player: str | None = None
    white_player: str | None = None
    date: str | None = None
    game_name: str | None = None
    encore_phase: int = 0  # the encore phase the game begins in (territory scoring; 0: the main phase)
    nodes: list[Node] = field(default_factory=lambda: [Node()])

    @property
    def moves(self) -> list[tuple[int, int]]:
        return [n.move for n in self.nodes if n.move is not None]

    @property
    def setup(self) -> Setup:
        return self.nodes[0].setup or Setup()

    @property
    def comment(self) -> str | None:
        return self.nodes[0].comment

    def first_to_move(self) -> int:
        root = self.nodes[0]
        if root.to_move is not None:
            return root.to_move
        for n in self.nodes:
            if n.move is not None:
                return n.move[0]
        s = self.setup
        return WHITE if (self.handicap >= 2 and s.black and not s.white) else BLACK

    def to_game(
        self,
        rules: Rules | None = None,
        komi: float | None = None,
        upto: int | None = None,
        visit: Callable[[Game, int], None] | None = None,
    ) -> Game:
        """Replay the main line; upto limits it to the first `upto` moves. ``visit(game, played)``, when
        given, sees the game before each move (``played`` moves made so far) and at the end."""
        rules = rules or self.rules or Rules()
        if komi is None:
            komi = self.komi if self.komi is not None else default_komi(rules)
        game = Game(self.x_size, self.y_size, rules, komi, capacity=max(256, 2 * len(self.nodes)))
        played = 0
        for i, node in enumerate(self.nodes):
            if node.setup:
                to_move = node.to_move if node.to_move is not None else (self.first_to_move() if i == 0 else None)
                game.setup(node.setup.black, node.setup.white, node.setup.empty, to_move=to_move)
            elif i == 0:
                game.set_to_move(self.first_to_move())
            if i == 0 and self.encore_phase:
                game.begin_in_encore(self.encore_phase)
            if node.move is None:
                continue
            if upto is not None and played >= upto:
                break
            color, loc = node.move
            if visit is not None:
                visit(game, played)
            if node.pass_for_ko and not game.is_pass_for_ko(loc, color):
                raise IllegalMoveError(
                    f"move {played + 1}: {color_letter(color)} is written as a pass for ko at "
                    f"{game.vertex(loc)}, but no ko-recapture block is there to pass for"
                )
            try:
                game.play(loc, color)
            except IllegalMoveError as e:
                raise IllegalMoveError(f"move {played + 1}: {e}") from None
            played += 1
        if visit is not None:
            visit(game, played)
        return game

    # --- writing ---------------------------------------------------------------------------------
    def to_sgf(self) -> str:
        size = str(self.x_size) if self.x_size == self.y_size else f"{self.x_size}:{self.y_size}"
        root = [("FF", ["4"]), ("GM", ["1"]), ("CA", ["UTF-8"]), ("AP", ["Sente"]), ("SZ", [size])]
        if self.komi is not None:
            root.append(("KM", [f"{self.komi:g}"]))
        if self.rules is not None:
            root.append(("RU", [_rules_value(self.rules_text, self.rules)]))
        elif self.rules_text:
            root.append(("RU", [self.rules_text]))
        if self.handicap:
            root.append(("HA", [str(self.handicap)]))
        if self.encore_phase:
            root.append((ENCORE_PROPERTY, [str(self.encore_phase)]))
        for key, value in (
            ("PB", self.black_player),
            ("PW", self.white_player),
            ("DT", self.date),
            ("GN", self.game_name),
            ("RE", self.result),
        ):
            if value:
                root.append((key, [value]))
        parts = ["(;" + _props(root + _node_props(self.nodes[0]))]
        # A node with variations opens a group holding the rest of the main line; the variations
        # follow when the group closes, after the main line's end (innermost first).
        branches: list[list[list[Node]]] = []
        for node in self.nodes[1:]:
            if node.variations:
                parts.append("(")
                branches.append(node.variations)
            parts.append(";" + _props(_node_props(node)))
        for variations in reversed(branches):
            parts.append(
                ")" + "".join("(" + "".join(";" + _props(_node_props(n)) for n in line) + ")" for line in variations)
            )
        return "\n".join(parts) + ")\n"

    def variation_game(self, node: int, line: int, upto: int | None = None, rules: Rules | None = None) -> Game:
        """The game along variation `line` of main-line node `node`: the main line's moves before that
        node, then the variation's (its first `upto` moves when given)."""
        before = sum(1 for n in self.nodes[:node] if n.move is not None)
        game = self.to_game(rules=rules, upto=before)
        for k, n in enumerate(self.nodes[node].variations[line][:upto]):
            if n.move is None:
                continue
            color, loc = n.move
            try:
                game.play(loc, color)
            except IllegalMoveError as e:
                raise IllegalMoveError(
                    f"variation {line + 1} before move {before + 1}, its move {k + 1}: {e}"
                ) from None
        return game

    @classmethod
    def from_game(cls, game: Game, **meta) -> GameRecord:
        """A record of a Game's history since its start (or its last setup)."""
        root = Node()
        if game.setup_black or game.setup_white:
            root.setup = Setup(list(game.setup_black), list(game.setup_white))
        rec = cls(
            x_size=game.x_size,
            y_size=game.y_size,
            komi=game.komi,
            rules=game.rules,
            handicap=game.handicap,
            encore_phase=game.start_encore_phase,
            nodes=[root],
            **meta,
        )
        if game.start_to_move != rec.first_to_move():
            root.to_move = game.start_to_move
        for_ko = set(game.pass_for_ko_turns())
        for turn, (color, loc) in enumerate(game.move_list):
            rec.nodes.append(Node(move=(color, loc), pass_for_ko=turn in for_ko))
        if rec.result is None and game.result is not None:
            rec.result = game.result.sgf()
        return rec


def _rules_value(text: str | None, rules: Rules) -> str:
    """RU for these rules: the text read from a file when it names them (written back as it was),
    else the rules' name."""
    if text:
        try:
            if Rules.from_text(text) == rules:
                return text
        except RulesError:
            pass
    return rules.name()


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("]", "\\]")


def _props(props: list[tuple[str, list[str]]]) -> str:
    return "".join(key + "".join(f"[{_escape(v)}]" for v in values) for key, values in props)


def _node_props(node: Node) -> list[tuple[str, list[str]]]:
    out = []
    if node.setup:
        for key, locs in (("AB", node.setup.black), ("AW", node.setup.white), ("AE", node.setup.empty)):
            if locs:
                out.append((key, [sgf_point(loc) for loc in locs]))
    if node.to_move is not None:
        out.append(("PL", [color_letter(node.to_move)]))
    comment = node.comment
    if node.move is not None:
        color, loc = node.move
        if node.pass_for_ko:
            # As KataGo writes it: a pass, the point marked, the comment saying why.
            out.append((color_letter(color), [""]))
            out.append(("TR", [sgf_point(loc)]))
            comment = PASS_FOR_KO_NOTE + (" " + comment if comment else "")
        else:
            out.append((color_letter(color), ["" if loc == PASS else sgf_point(loc)]))
    if comment:
        out.append(("C", [comment]))
    return out


# --- interpretation ------------------------------------------------------------------------------
def _main_line(root: SGFNode) -> list[SGFNode]:
    line = [root]
    while line[-1].children:
        line.append(line[-1].children[0])
    return line


def _parse_size(node: SGFNode) -> tuple[int, int]:
    sz = node.get("SZ")
    if sz is None:
        return 19, 19
    m = re.fullmatch(r"\s*(\d+)\s*(?::\s*(\d+)\s*)?", sz)
    if not m:
        raise SGFError(f"invalid board size SZ[{sz}]", node.line, node.column)
    x = int(m.group(1))
    y = int(m.group(2)) if m.group(2) else x
    try:
        check_size(x, y)
    except ValueError as e:
        raise SGFError(f"SZ[{sz}]: {e}", node.line, node.column) from None
    return x, y


def _point(value: str, x_size: int, y_size: int, node: SGFNode, key: str, allow_pass: bool) -> int:
    v = value.strip()
    if v == "" or (v == "tt" and x_size <= MAX_SIZE and y_size <= MAX_SIZE):
        if allow_pass:
            return PASS
        raise SGFError(f"{key}[{value}] is not a point", node.line, node.column)
    if len(v) != 2 or v[0] not in SGF_LETTERS or v[1] not in SGF_LETTERS:
        raise SGFError(f"{key}[{value}] is not a point", node.line, node.column)
    x, y = SGF_LETTERS.index(v[0]), SGF_LETTERS.index(v[1])
    if x >= x_size or y >= y_size:
        raise SGFError(f"{key}[{value}] is outside the {x_size}x{y_size} board", node.line, node.column)
    return loc_of(x, y)


def _point_list(values: list[str], x_size: int, y_size: int, node: SGFNode, key: str) -> list[int]:
    """The points of a setup property; more than the board has (the same points again and again,
    which a few bytes of rectangles can list millions of times) is an SGFError."""
    out: list[int] = []
    area = x_size * y_size
    for value in values:
        if ":" in value:  # compressed rectangle
            a, b = value.split(":", 1)
            x0, y0 = xy_of(_point(a, x_size, y_size, node, key, False))
            x1, y1 = xy_of(_point(b, x_size, y_size, node, key, False))
            if len(out) + (abs(x1 - x0) + 1) * (abs(y1 - y0) + 1) > area:
                raise SGFError(f"{key} lists more points than the {x_size}x{y_size} board has", node.line, node.column)
            for y in range(min(y0, y1), max(y0, y1) + 1):
                for x in range(min(x0, x1), max(x0, x1) + 1):
                    out.append(loc_of(x, y))
        else:
            if len(out) >= area:
                raise SGFError(f"{key} lists more points than the {x_size}x{y_size} board has", node.line, node.column)
            out.append(_point(value, x_size, y_size, node, key, False))
    return out


def _color_value(value: str, node: SGFNode) -> int:
    v = value.strip().upper()
    if v in ("B", "BLACK", "1"):
        return BLACK
    if v in ("W", "WHITE", "2"):
        return WHITE
    raise SGFError(f"PL[{value}] is not a colour", node.line, node.column)


def record_from_tree(root: SGFNode) -> GameRecord:
    gm = root.get("GM")
    if gm is not None and gm.strip() not in ("1", ""):
        raise SGFError(f"GM[{gm}] is not a game of Go", root.line, root.column)
    x_size, y_size = _parse_size(root)
    rec = GameRecord(x_size=x_size, y_size=y_size, nodes=[])
    km = root.get("KM")
    if km is not None and km.strip():
        try:
            rec.komi = float(km)
        except ValueError:
            raise SGFError(f"KM[{km}] is not a number", root.line, root.column) from None
        if not math.isfinite(rec.komi):
            raise SGFError(f"KM[{km}] is not a finite number", root.line, root.column)
        # Komi that is not a multiple of 0.5 is kept in the record; replaying refuses it.
    ru = root.get("RU")
    if ru is not None and ru.strip():
        rec.rules_text = ru
        try:
            rec.rules = Rules.from_text(ru)
        except RulesError:
            rec.rules = None  # a ruleset we do not know: the record keeps its text
    ha = root.get("HA")
    if ha is not None and ha.strip():
        try:
            rec.handicap = int(ha)
        except ValueError:
            raise SGFError(f"HA[{ha}] is not a number", root.line, root.column) from None
    rec.result = root.get("RE")
    rec.black_player = root.get("PB")
    rec.white_player = root.get("PW")
    rec.date = root.get("DT")
    rec.game_name = root.get("GN")
    rec.encore_phase = _encore_phase(root)
    line = _main_line(root)
    for i, sgf_node in enumerate(line):
        node = _read_node(sgf_node, x_size, y_size)
        if i > 0:
            for first in line[i - 1].children[1:]:
                node.variations.append([_read_node(n, x_size, y_size) for n in _main_line(first)])
        rec.nodes.append(node)
    return rec


def _read_node(sgf_node: SGFNode, x_size: int, y_size: int) -> Node:
    node = Node(comment=sgf_node.get("C"))
    props = sgf_node.properties
    if any(k in props for k in ("AB", "AW", "AE")):
        node.setup = Setup(*(_point_list(props.get(k, []), x_size, y_size, sgf_node, k) for k in ("AB", "AW", "AE")))
    if "PL" in props:
        node.to_move = _color_value(props["PL"][0], sgf_node)
    moves = [(c, key) for c, key in ((BLACK, "B"), (WHITE, "W")) if key in props]
    if len(moves) > 1:
        raise SGFError("a node has both a black and a white move", sgf_node.line, sgf_node.column)
    if moves:
        color, key = moves[0]
        node.move = (color, _point(props[key][0], x_size, y_size, sgf_node, key, True))
        if node.move[1] == PASS:
            _read_pass_for_ko(node, color, sgf_node, x_size, y_size)
    return node


def _read_pass_for_ko(node: Node, color: int, sgf_node: SGFNode, x_size: int, y_size: int) -> None:
    """A pass of color that KataGo marks as a pass for ko (TR on one point, the comment beginning
    with the note) becomes the move at that point; the note leaves the comment, which the writer
    puts back."""
    comment = node.comment or ""
    marks = sgf_node.properties.get("TR", [])
    if len(marks) != 1 or ":" in marks[0] or not comment.startswith(PASS_FOR_KO_NOTE):
        return
    rest = comment[len(PASS_FOR_KO_NOTE) :]
    if rest and not rest.startswith(" "):
        return
    node.move = (color, _point(marks[0], x_size, y_size, sgf_node, "TR", False))
    node.pass_for_ko = True
    node.comment = rest[1:] or None


def _encore_phase(root: SGFNode) -> int:
    """The encore phase the game begins in: ENCORE, or KataGo's root comment; 0 when neither says."""
    value = root.get(ENCORE_PROPERTY)
    where = f"{ENCORE_PROPERTY}[{value}]"
    if value is None:
        comment = root.get("C") or ""
        m = _KATAGO_ENCORE_START.search(comment.split(" ", 1)[0]) if comment.startswith("startTurnIdx=") else None
        if m is None:
            return 0
        value, where = m.group(1), f"the root comment's beganInEncorePhase={m.group(1)}"
    if value.strip() not in ("0", "1", "2"):
        raise SGFError(f"{where} is not an encore phase (0, 1 or 2)", root.line, root.column)
    return int(value)


def read_sgf(data: str | bytes) -> GameRecord:
    """The first game of SGF text."""
    trees = parse_collection(data)
    if not trees:
        raise SGFError("no game found")
    return record_from_tree(trees[0])


def read_sgf_collection(data: str | bytes) -> list[GameRecord]:
    return [record_from_tree(t) for t in parse_collection(data)]


def write_sgf(game: Game, **meta) -> str:
    """FF[4] text of a Game (meta: black_player, white_player, date, result, game_name)."""
    return GameRecord.from_game(game, **meta).to_sgf()
