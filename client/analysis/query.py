"""The queries of KataGo's analysis engine protocol, read and checked.

:func:`parse_query` turns one query (a JSON object, docs/Analysis_Engine.md in KataGo's repository)
into one :class:`TurnRequest` per turn to analyze, with its warnings, or raises :class:`QueryError`
naming the field at fault, as KataGo answers ``{"id", "field", "error"}``. Fields are read as
KataGo reads them: ``moves`` and ``initialStones`` as ``[player, vertex]`` pairs (a GTP vertex or
``"(x,y)"`` from the top left), ``rules`` as a preset name or a rules object, ``analyzeTurns`` (by
default the last turn), ``overrideSettings`` as the settings of :class:`AnalysisConfig`, and so on.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from common.go.game import Game, IllegalMoveError
from common.go.geometry import BLACK, MAX_SIZE, PASS, WHITE, color_letter, loc_of, parse_gtp_vertex
from common.go.rules import Rules, RulesError, check_komi, default_komi
from common.settings import SearchSettings, play_search

COLORS = {"b": BLACK, "black": BLACK, "w": WHITE, "white": WHITE}  # a query's players, any case
PERSPECTIVES = {**COLORS, "sidetomove": None}


@dataclass(frozen=True)
class AnalysisConfig:
    """The engine's defaults, each one a KataGo setting a query may override (``overrideSettings``):
    maxVisits, maxTime (seconds; None: no limit), reportAnalysisWinratesAs (BLACK, WHITE or None for
    the side to move), analysisPVLen (moves after the first of a pv), rootPolicyTemperature and
    rootFpuReductionMax (None: the GTP search's), and the search methods KataGo's configs name
    (``search``: see SEARCH_KEYS)."""

    max_visits: int = 500
    max_time: float | None = None
    report_as: int | None = None
    pv_len: int = 15
    root_policy_temperature: float | None = None
    root_fpu_reduction: float | None = None
    search: tuple[tuple[str, Any], ...] = ()  # (SearchSettings field, value), applied in order

    def with_settings(self, settings: Mapping[str, object]) -> tuple[AnalysisConfig, list[str]]:
        """These settings (KataGo's names; values as JSON or config-file text) applied; also the keys
        this engine does not use. ValueError names the key of a bad value."""
        changes: dict[str, Any] = {}
        unused = []
        for key, value in settings.items():
            text = str(value).strip().strip('"')
            try:
                if key == "maxVisits":
                    changes["max_visits"] = _ranged(int(text), 1, 1 << 50)
                elif key == "maxTime":
                    t = float(text)
                    changes["max_time"] = _ranged(t, 0.0, 1e9) if t > 0 else None
                elif key == "reportAnalysisWinratesAs":
                    if text.lower() not in PERSPECTIVES:
                        raise ValueError("expected BLACK, WHITE or SIDETOMOVE")
                    changes["report_as"] = PERSPECTIVES[text.lower()]
                elif key == "analysisPVLen":
                    changes["pv_len"] = _ranged(int(text), 1, 1000)
                elif key == "rootPolicyTemperature":
                    changes["root_policy_temperature"] = _ranged(float(text), 0.01, 100.0)
                elif key == "rootFpuReductionMax":
                    changes["root_fpu_reduction"] = _ranged(float(text), 0.0, 2.0)
                elif key in SEARCH_KEYS:
                    name, parse = SEARCH_KEYS[key]
                    changes["search"] = (*changes.get("search", self.search), (name, parse(text)))
                else:
                    unused.append(key)
            except ValueError as e:
                raise ValueError(f"{key} = {text!r}: {e}") from None
        return dataclasses.replace(self, **changes), unused

    def search_settings(self) -> SearchSettings:
        settings = play_search()
        if self.root_policy_temperature is not None:
            settings = dataclasses.replace(
                settings,
                root_policy_temperature=self.root_policy_temperature,
                root_policy_temperature_early=self.root_policy_temperature,
            )
        if self.root_fpu_reduction is not None:
            settings = dataclasses.replace(settings, root_fpu_reduction=self.root_fpu_reduction)
        if self.search:
            settings = dataclasses.replace(settings, **dict(self.search))
        return settings


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1"):
        return True
    if text.lower() in ("false", "0"):
        return False
    raise ValueError("expected true or false")


# KataGo's names of the search methods' settings (its gtp and analysis example configs), with our
# SearchSettings field and the value's parser.
SEARCH_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "useLcbForSelection": ("lcb_for_selection", _bool),
    "lcbStdevs": ("lcb_stdevs", lambda t: _ranged(float(t), 0.01, 100.0)),
    "minVisitPropForLCB": ("lcb_min_visit_prop", lambda t: _ranged(float(t), 0.0, 1.0)),
    "cpuctUtilityStdevScale": ("cpuct_utility_stdev_scale", lambda t: _ranged(float(t), 0.0, 1.0)),
    "cpuctUtilityStdevPrior": ("cpuct_utility_stdev_prior", lambda t: _ranged(float(t), 0.01, 10.0)),
    "cpuctUtilityStdevPriorWeight": ("cpuct_utility_stdev_prior_weight", lambda t: _ranged(float(t), 0.0, 1e6)),
    "subtreeValueBiasFactor": ("subtree_value_bias_factor", lambda t: _ranged(float(t), 0.0, 1.0)),
    "subtreeValueBiasWeightExponent": ("subtree_value_bias_exponent", lambda t: _ranged(float(t), 0.0, 2.0)),
    "subtreeValueBiasFreeProp": ("subtree_value_bias_free_prop", lambda t: _ranged(float(t), 0.0, 1.0)),
    "useUncertainty": ("uncertainty_weighted", _bool),
    "uncertaintyCoeff": ("uncertainty_coeff", lambda t: _ranged(float(t), 1e-6, 100.0)),
    "uncertaintyExponent": ("uncertainty_exponent", lambda t: _ranged(float(t), 0.01, 2.0)),
    "uncertaintyMaxWeight": ("uncertainty_max_weight", lambda t: _ranged(float(t), 1.0, 1000.0)),
    "policyOptimism": ("policy_optimism", lambda t: _ranged(float(t), 0.0, 1.0)),
    "rootPolicyOptimism": ("root_policy_optimism", lambda t: _ranged(float(t), 0.0, 1.0)),
}


def _ranged(value, lo, hi):
    if not (lo <= value <= hi) or (isinstance(value, float) and not math.isfinite(value)):
        raise ValueError(f"must be from {lo:g} to {hi:g}")
    return value


class QueryError(Exception):
    """A query that cannot be analyzed, because of its field `field`."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(eq=False)
class TurnRequest:
    """One turn of one query to analyze: the position (game), the search's visits and settings, and
    what the answer includes. ``stop`` ends its search; ``terminated``: a terminate action asked for
    it."""

    id: str
    turn: int
    game: Game
    visits: int
    config: AnalysisConfig
    ownership: bool
    moves_ownership: bool
    policy: bool
    report_every: float | None
    first_report: float | None
    stop: threading.Event = field(default_factory=threading.Event)
    terminated: bool = False


def parse_query(
    qid: str, q: dict, config: AnalysisConfig, max_visits: int, history: int
) -> tuple[list[TurnRequest], list[tuple[str, str]], list[float]]:
    """A query's requests (one per turn to analyze, in turn order), its warnings (field, message)
    and each request's priority. config: the engine's defaults; max_visits: the most one search
    may have; history: the most moves a game may have. QueryError names a bad field."""
    warnings: list[tuple[str, str]] = []
    size_message = f"must be an integer from 2 to {MAX_SIZE}"
    x_size = _get_int(q, "boardXSize", 2, MAX_SIZE, size_message)
    y_size = _get_int(q, "boardYSize", 2, MAX_SIZE, size_message)
    stones = _get_moves(q, "initialStones", x_size, y_size, allow_pass=False) if "initialStones" in q else []
    if "moves" not in q:
        raise QueryError("moves", "required: an array of [player, location] pairs (empty for no moves)")
    moves = _get_moves(q, "moves", x_size, y_size, allow_pass=True)
    if len(moves) > history:
        raise QueryError("moves", f"{len(moves)} moves: at most {history} are supported")
    initial = _get_player(q, "initialPlayer") if "initialPlayer" in q else None

    if "analyzeTurns" in q:
        turns = q["analyzeTurns"]
        if not isinstance(turns, list) or not all(is_int(t) for t in turns):
            raise QueryError("analyzeTurns", "must be an array of integers: the turns to analyze")
        for t in turns:
            if not 0 <= t <= len(moves):
                raise QueryError("analyzeTurns", f"invalid turn number {t}: turns go from 0 to {len(moves)}")
    else:
        turns = [len(moves)]
    priority_of = {t: 0 for t in turns}
    if "priorities" in q:
        values = q["priorities"]
        if "analyzeTurns" not in q:
            raise QueryError("priorities", "can only be given with analyzeTurns")
        if not isinstance(values, list) or not all(is_int(v) for v in values) or len(values) != len(turns):
            raise QueryError("priorities", "must be an array of integers as long as analyzeTurns")
        if "priority" in q:
            raise QueryError("priority", "give either priority or priorities, not both")
        priority_of = dict(zip(turns, values))

    rules, komi = _parse_rules(q, warnings)

    if "overrideSettings" in q:
        settings = q["overrideSettings"]
        if not isinstance(settings, dict):
            raise QueryError("overrideSettings", "must be an object of KataGo settings")
        try:
            config, unused = config.with_settings(settings)
        except ValueError as e:
            raise QueryError("overrideSettings", f"could not set settings: {e}") from None
        if unused:
            warnings.append(
                ("overrideSettings", "settings this engine does not know or support, ignored: " + ",".join(unused))
            )
    if "maxVisits" in q:
        config = dataclasses.replace(
            config, max_visits=_get_int(q, "maxVisits", 1, 1 << 50, "must be an integer from 1 to 2^50")
        )
    if "analysisPVLen" in q:
        config = dataclasses.replace(
            config, pv_len=_get_int(q, "analysisPVLen", 1, 1000, "must be an integer from 1 to 1000")
        )
    if "rootFpuReductionMax" in q:
        config = dataclasses.replace(
            config,
            root_fpu_reduction=_get_float(q, "rootFpuReductionMax", 0.0, 2.0, "must be a number from 0.0 to 2.0"),
        )
    if "rootPolicyTemperature" in q:
        config = dataclasses.replace(
            config,
            root_policy_temperature=_get_float(
                q, "rootPolicyTemperature", 0.01, 100.0, "must be a number from 0.01 to 100.0"
            ),
        )
    visits = config.max_visits
    if visits > max_visits:
        warnings.append(
            (
                "maxVisits",
                f"{visits} visits asked; this engine searches at most {max_visits} (its --max-visits), so that many",
            )
        )
        visits = max_visits

    flags = {}
    for name in (
        "includeOwnership",
        "includeMovesOwnership",
        "includePolicy",
        "includePVVisits",
        "includeOwnershipStdev",
        "includeMovesOwnershipStdev",
    ):
        flags[name] = _get_bool(q, name) if name in q else False
    for name in ("includePVVisits", "includeOwnershipStdev", "includeMovesOwnershipStdev"):
        if flags[name]:
            warnings.append((name, "not supported by this engine; the field is left out of the answers"))
    report_every = first_report = None
    if "reportDuringSearchEvery" in q:
        report_every = _get_float(
            q, "reportDuringSearchEvery", 0.001, 1e6, "must be a number of seconds from 0.001 to 1000000"
        )
    if "firstReportDuringSearchAfter" in q:
        first_report = _get_float(
            q, "firstReportDuringSearchAfter", 0.001, 1e6, "must be a number of seconds from 0.001 to 1000000"
        )
    if "priority" in q:
        p = _get_int(q, "priority", -(2**62), 2**62, "must be an integer from -2^62 to 2^62")
        priority_of = {t: p for t in turns}
    for name in ("avoidMoves", "allowMoves"):
        if name in q:
            warnings.append((name, "not supported by this engine yet: the search considers every legal move"))

    game = _start_game(x_size, y_size, rules, komi, stones, moves, initial)
    wanted = set(turns)
    requests: list[TurnRequest] = []
    for t in range(len(moves) + 1):
        if t in wanted:
            requests.append(
                TurnRequest(
                    id=qid,
                    turn=t,
                    game=game.copy(),
                    visits=visits,
                    config=config,
                    ownership=flags["includeOwnership"],
                    moves_ownership=flags["includeMovesOwnership"],
                    policy=flags["includePolicy"],
                    report_every=report_every,
                    first_report=first_report,
                )
            )
        if t == len(moves):
            break
        color, loc = moves[t]
        try:
            game.play(loc, color)
        except IllegalMoveError as e:
            reason = str(e).split(": ", 1)[-1]
            raise QueryError(
                "moves", f"Illegal move {t}: {color_letter(color)} {game.vertex(loc)} ({reason})"
            ) from None
    return requests, warnings, [float(priority_of[r.turn]) for r in requests]


def _parse_rules(q: dict, warnings: list[tuple[str, str]]) -> tuple[Rules, float]:
    if "rules" not in q:
        raise QueryError(
            "rules", 'required: a rules name such as "chinese" or "tromp-taylor", or a JSON object of KataGo rules'
        )
    value = q["rules"]
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict):
        text = json.dumps(value)
    else:
        raise QueryError(
            "rules", 'must be a rules name such as "chinese" or "tromp-taylor", or a JSON object of KataGo rules'
        )
    try:
        rules, komi = Rules.parse(text)
    except (RulesError, OverflowError) as e:  # OverflowError: check_komi on a komi such as 1e308
        raise QueryError("rules", f"could not parse rules {text!r}: {e}") from None
    if "komi" in q:
        value = q["komi"]
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not -150 <= value <= 150:
            raise QueryError("komi", f"must be an integer or half-integer from -150 to 150, not {json.dumps(value)}")
        try:
            komi = check_komi(float(value))
        except RulesError as e:
            raise QueryError("komi", f"must be an integer or half-integer from -150 to 150: {e}") from None
    if "whiteHandicapBonus" in q:
        value = q["whiteHandicapBonus"]
        if value not in ("0", "N", "N-1"):
            raise QueryError("whiteHandicapBonus", 'must be "0", "N" or "N-1"')
        rules = dataclasses.replace(rules, white_handicap_bonus=value)
    if komi is None:
        komi = default_komi(rules)
    playable = rules
    if playable.ko == "SPIGHT":
        playable = dataclasses.replace(playable, ko="SITUATIONAL")
    if playable != rules:
        warnings.append(
            (
                "rules",
                f"rules {rules.to_json()} are not supported by this engine yet "
                f"({rules.unsupported_reason()}); analyzing under {playable.to_json()} instead, "
                f"komi {komi:g} unchanged",
            )
        )
    return playable, komi


def _start_game(
    x_size: int,
    y_size: int,
    rules: Rules,
    komi: float,
    stones: list[tuple[int, int]],
    moves: list[tuple[int, int]],
    initial: int | None,
) -> Game:
    game = Game(x_size, y_size, rules, komi)
    placed: dict[int, int] = {}
    for color, loc in stones:
        placed[loc] = color  # a point given twice holds its last stone
    black = [loc for loc, c in placed.items() if c == BLACK]
    white = [loc for loc, c in placed.items() if c == WHITE]
    if initial is None:
        initial = moves[0][0] if moves else (WHITE if black and not white else BLACK)
    if placed:
        try:
            game.setup(black, white, to_move=initial)
        except ValueError as e:
            raise QueryError("initialStones", str(e)) from None
    else:
        game.set_to_move(initial)
    return game


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _get_int(q: dict, name: str, lo: int, hi: int, message: str) -> int:
    if name not in q:
        raise QueryError(name, f"required: {message}")
    v = q[name]
    if not is_int(v) or not lo <= v <= hi:
        raise QueryError(name, f"{message}, not {json.dumps(v)}")
    return v


def _get_float(q: dict, name: str, lo: float, hi: float, message: str) -> float:
    v = q[name]
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or not lo <= v <= hi:
        raise QueryError(name, f"{message}, not {json.dumps(v)}")
    return float(v)


def _get_bool(q: dict, name: str) -> bool:
    v = q[name]
    if not isinstance(v, bool):
        raise QueryError(name, f"must be true or false, not {json.dumps(v)}")
    return v


def _get_player(q: dict, name: str) -> int:
    v = q[name]
    color = COLORS.get(v.lower()) if isinstance(v, str) else None
    if color is None:
        raise QueryError(name, f'must be "B" or "W", not {json.dumps(v)}')
    return color


def parse_location(text: str, x_size: int, y_size: int) -> int:
    """A location as KataGo reads them: a GTP vertex ("D4", "pass") or "(x,y)" from the top left."""
    t = text.strip()
    if t.startswith("(") and t.endswith(")"):
        parts = t[1:-1].split(",")
        if len(parts) == 2 and all(p.strip().isdigit() for p in parts):
            x, y = (int(p) for p in parts)
            if x < x_size and y < y_size:
                return loc_of(x, y)
        raise ValueError(f"invalid location {text!r}")
    return parse_gtp_vertex(t, x_size, y_size)


def _get_moves(q: dict, name: str, x_size: int, y_size: int, allow_pass: bool) -> list[tuple[int, int]]:
    shape = 'must be an array of pairs such as ["B", "D4"]'
    value = q[name]
    if not isinstance(value, list):
        raise QueryError(name, shape)
    out = []
    for i, item in enumerate(value):
        if not (isinstance(item, list) and len(item) == 2 and all(isinstance(s, str) for s in item)):
            raise QueryError(name, f"{shape}; entry {i} is {json.dumps(item)}")
        color = COLORS.get(item[0].lower())
        if color is None:
            raise QueryError(name, f"entry {i}: could not parse player {item[0]!r} (expected B or W)")
        try:
            loc = parse_location(item[1], x_size, y_size)
        except ValueError:
            raise QueryError(
                name, f"entry {i}: could not parse board location {item[1]!r} on a {x_size}x{y_size} board"
            ) from None
        if loc == PASS and not allow_pass:
            raise QueryError(name, f"entry {i}: a pass is not a stone")
        out.append((color, loc))
    return out
