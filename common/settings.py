"""Task settings: how to search, how to start and play self-play games, and how to play match games.

The server sends these with every task as JSON (``to_dict`` / ``from_dict``); the client's defaults
are the values of KataGo's paper (sections 5-6, Appendix C for self-play, Appendix D for match and
gating games) and of its methods page where the paper gives none. Every game records the settings
it was played with in its SGF.

A malformed settings object is refused as a whole with :class:`SettingsError`, whose message names
the key (as a dotted path) and what is wrong with it; unknown keys are errors too, so a typo never
silently falls back to a default.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import reprlib
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, get_args, get_origin, get_type_hints

from common.go.rules import HANDICAP_BONUS_RULES, KO_RULES, SCORING_RULES, TAX_RULES, Rules, round_komi
from common.nn.config import NAMED_SIZES

SETTINGS_VERSION = 1


class SettingsError(ValueError):
    """Settings that cannot be used; the message names the key (``path``, dotted) and the problem."""

    def __init__(self, path: str, problem: str, what: str = "settings") -> None:
        super().__init__(f"{what} {path}: {problem}")
        self.path = path
        self.problem = problem


# --- validation helpers ----------------------------------------------------------------------------
def _need(ok: bool, path: str, problem: str) -> None:
    if not ok:
        raise SettingsError(path, problem)


def _finite(value: float) -> bool:
    """A finite number that is a float or becomes one (float() of an integer beyond 2**1023 fails)."""
    return abs(value) < 2**1023 if isinstance(value, int) else math.isfinite(value)


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60


def _show(value: Any) -> str:
    """A value as messages quote it: shortened (a message must not echo a whole upload) and never
    failing (an integer of more than 4300 digits has no repr)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an integer of {value.bit_length()} bits"
    return _REPR.repr(value)


def _in_range(path: str, value: float, lo: float | None = None, hi: float | None = None, lo_open: bool = False) -> None:
    _need(_finite(value), path, f"must be a finite number, got {_show(value)}")
    if lo is not None:
        if lo_open:
            _need(value > lo, path, f"must be greater than {lo}, got {_show(value)}")
        else:
            _need(value >= lo, path, f"must be at least {lo}, got {_show(value)}")
    if hi is not None:
        _need(value <= hi, path, f"must be at most {hi}, got {_show(value)}")


def _prob(path: str, value: float) -> None:
    _in_range(path, value, 0.0, 1.0)


def _convert(value: Any, hint: Any, path: str) -> Any:
    """Check a JSON value against a field's type and convert it (lists to tuples, ints to floats)."""
    origin = get_origin(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _from_dict(hint, value, path)
    if origin is tuple:
        _need(isinstance(value, (list, tuple)), path, f"must be a list, got {type(value).__name__}")
        inner = get_args(hint)[0]
        return tuple(_convert(v, inner, f"{path}[{i}]") for i, v in enumerate(value))
    if hint is bool:
        _need(isinstance(value, bool), path, f"must be true or false, got {_show(value)}")
        return value
    if hint is int:
        _need(isinstance(value, int) and not isinstance(value, bool), path, f"must be an integer, got {_show(value)}")
        return value
    if hint is float:
        _need(
            isinstance(value, (int, float)) and not isinstance(value, bool),
            path,
            f"must be a number, got {_show(value)}",
        )
        _need(_finite(value), path, f"must be a finite number, got {_show(value)}")
        return float(value)
    if hint is str:
        _need(isinstance(value, str), path, f"must be a string, got {_show(value)}")
        return value
    raise TypeError(f"unsupported settings type {hint!r}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A settings class's field types, resolved once: resolving them compiles every annotation, and
    every upload reads its task's settings."""
    return get_type_hints(cls)


def _from_dict(cls: type, data: Any, path: str) -> Any:
    _need(isinstance(data, dict), path or "(top level)", f"must be an object, got {type(data).__name__}")
    hints = _hints(cls)
    names = {f.name for f in fields(cls)}
    for key in data:
        _need(key in names, f"{path}.{key}" if path else key, f"unknown key (known: {', '.join(sorted(names))})")
    for f in fields(cls):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            _need(f.name in data, f"{path}.{f.name}" if path else f.name, "is missing")
    kwargs = {}
    for f in fields(cls):
        if f.name in data:
            sub = f"{path}.{f.name}" if path else f.name
            kwargs[f.name] = _convert(data[f.name], hints[f.name], sub)
    obj = cls(**kwargs)
    obj.validate(path)
    return obj


def _to_json(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _to_json(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    return value


class _Settings:
    """JSON round trip and validation shared by the settings dataclasses."""

    # set by @dataclass on each subclass; declared here so that dataclasses.replace takes self
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def to_dict(self) -> dict[str, Any]:
        return _to_json(self)

    @classmethod
    def from_dict(cls, data: Any) -> Any:
        return _from_dict(cls, data, "")

    def replace(self, **changes: Any) -> Any:
        obj = dataclasses.replace(self, **changes)
        obj.validate("")
        return obj

    def validate(self, path: str = "") -> None:
        raise NotImplementedError


def _p(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _check_sizes(path: str, sizes: tuple[int, ...], weights: tuple[float, ...]) -> None:
    _need(len(sizes) > 0, _p(path, "board_sizes"), "must not be empty")
    _need(
        len(sizes) == len(weights),
        _p(path, "board_size_weights"),
        f"needs one weight per board size ({len(sizes)}), got {len(weights)}",
    )
    for i, s in enumerate(sizes):
        _in_range(f"{_p(path, 'board_sizes')}[{i}]", s, 2, 19)
    for i, w in enumerate(weights):
        _in_range(f"{_p(path, 'board_size_weights')}[{i}]", w, 0.0)
    _need(sum(weights) > 0, _p(path, "board_size_weights"), "must not all be zero")


def sizes_in_play(sizes: tuple[int, ...], weights: tuple[float, ...]) -> tuple[int, ...]:
    """The board sizes a game can be drawn on: those of positive weight."""
    return tuple(s for s, w in zip(sizes, weights) if w > 0)


def decayed(early: float, late: float, turn: int, half_life: float) -> float:
    """A value going from early to late with the given half-life in turns (temperatures)."""
    return late + (early - late) * 0.5 ** (turn / half_life)


# --- search ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchSettings(_Settings):
    """How one search runs (paper section 5; values from section 5.1-5.4 and the methods page).

    The root's policy temperature decays from ``root_policy_temperature_early`` to
    ``root_policy_temperature`` with a half-life of one board length in turns (the methods page's
    g170 values; the paper's earlier runs used a constant 1.03).
    """

    cpuct: float = 1.1
    fpu_reduction: float = 0.2  # first-play urgency reduction inside the tree
    root_fpu_reduction: float = 0.0  # at the root (self-play full searches; 0.2 in match games)
    root_noise: bool = True  # Dirichlet noise on full searches
    noise_weight: float = 0.25
    noise_total_concentration: float = 10.83  # 0.03 * 19^2, spread over the legal moves
    noise_shaped: bool = True  # half uniform, half on moves whose logits stand out (methods page)
    root_policy_temperature_early: float = 1.25
    root_policy_temperature: float = 1.1
    forced_playouts: bool = True  # forced playouts at the root and target pruning (section 5.3)
    forced_playout_coeff: float = 2.0  # k in n_forced = sqrt(k P(c) sum N)
    score_utility_factor: float = 0.5  # c_score (section 5.4: 0.5, annealed to 0.4 and 0.3)
    virtual_loss: float = 1.0  # utility each in-flight visit counts as losing
    # The exploration term's power of the parent's visits: 0.5 is PUCT's square root; Cazenave's
    # Generalized PUCT (GPUCT, his section 3.2) takes 0.737 (with c = 0.057 on his value scale), so
    # that the best constant stays the same as the visits grow.
    puct_exponent: float = 0.5
    # Dynamic variance-scaled cPUCT (methods page): each node's cPUCT times
    # 1 + scale * (stdev / prior - 1), stdev its visits' utility deviation with a prior of
    # cpuct_utility_stdev_prior weighing cpuct_utility_stdev_prior_weight visits; scale 0 keeps cPUCT
    # constant (KataGo's match and GTP play: scale 0.85, prior 0.40, weight 2).
    cpuct_utility_stdev_scale: float = 0.0
    cpuct_utility_stdev_prior: float = 0.40
    cpuct_utility_stdev_prior_weight: float = 2.0
    # Subtree value bias correction (methods page): a node's utility corrected by lambda = factor times
    # the average error of the network against the subtrees of the nodes sharing its local pattern,
    # each weighing its child visits to the power exponent (the page's lambda 0.35, alpha 0.8);
    # free_prop of a discarded node's share leaves its bucket at a move (KataGo's 0.8). 0: off.
    subtree_value_bias_factor: float = 0.0
    subtree_value_bias_exponent: float = 0.8
    subtree_value_bias_free_prop: float = 0.8
    # Uncertainty-weighted playouts (methods page): with a network that predicts its short-term
    # errors, each visit weighs coeff / (u^exponent + coeff / max_weight), u the evaluation's
    # utility uncertainty (KataGo's useUncertainty, uncertaintyCoeff 0.25, uncertaintyExponent 1,
    # uncertaintyMaxWeight 8); without such heads every visit weighs 1 as before.
    uncertainty_weighted: bool = False
    uncertainty_coeff: float = 0.25
    uncertainty_exponent: float = 1.0
    uncertainty_max_weight: float = 8.0
    # The optimistic policy (methods page): with a network that has the head, the priors come from
    # logits p + optimism * (p_optimistic - p), root_policy_optimism at the root and policy_optimism
    # below it (KataGo's policyOptimism and rootPolicyOptimism; its GTP play takes 1 and 0.2).
    policy_optimism: float = 0.0
    root_policy_optimism: float = 0.0
    symmetries: str = "random"  # network input symmetry per evaluation: "random" or "none"
    # The move to play (not the policy target) by lower confidence bound, as KataGo's match and GTP
    # play: among moves with at least lcb_min_visit_prop of the top visits, the best utility minus
    # lcb_stdevs standard errors (KataGo's useLcbForSelection, lcbStdevs, minVisitPropForLCB).
    lcb_for_selection: bool = False
    lcb_stdevs: float = 5.0
    lcb_min_visit_prop: float = 0.15

    def validate(self, path: str = "") -> None:
        _in_range(_p(path, "cpuct"), self.cpuct, 0.0, lo_open=True)
        _in_range(_p(path, "fpu_reduction"), self.fpu_reduction, 0.0, 2.0)
        _in_range(_p(path, "root_fpu_reduction"), self.root_fpu_reduction, 0.0, 2.0)
        _prob(_p(path, "noise_weight"), self.noise_weight)
        _in_range(_p(path, "noise_total_concentration"), self.noise_total_concentration, 0.0, lo_open=True)
        _in_range(
            _p(path, "root_policy_temperature_early"), self.root_policy_temperature_early, 0.0, 10.0, lo_open=True
        )
        _in_range(_p(path, "root_policy_temperature"), self.root_policy_temperature, 0.0, 10.0, lo_open=True)
        _in_range(_p(path, "forced_playout_coeff"), self.forced_playout_coeff, 0.0)
        _in_range(_p(path, "score_utility_factor"), self.score_utility_factor, 0.0, 10.0)
        _in_range(_p(path, "virtual_loss"), self.virtual_loss, 0.0, 10.0)
        _in_range(_p(path, "puct_exponent"), self.puct_exponent, 0.0, 1.0, lo_open=True)
        _in_range(_p(path, "cpuct_utility_stdev_scale"), self.cpuct_utility_stdev_scale, 0.0, 1.0)
        _in_range(_p(path, "cpuct_utility_stdev_prior"), self.cpuct_utility_stdev_prior, 0.0, 10.0, lo_open=True)
        _in_range(_p(path, "cpuct_utility_stdev_prior_weight"), self.cpuct_utility_stdev_prior_weight, 0.0, 1e6)
        _in_range(_p(path, "subtree_value_bias_factor"), self.subtree_value_bias_factor, 0.0, 1.0)
        _in_range(_p(path, "subtree_value_bias_exponent"), self.subtree_value_bias_exponent, 0.0, 2.0)
        _prob(_p(path, "subtree_value_bias_free_prop"), self.subtree_value_bias_free_prop)
        _in_range(_p(path, "uncertainty_coeff"), self.uncertainty_coeff, 0.0, 100.0, lo_open=True)
        _in_range(_p(path, "uncertainty_exponent"), self.uncertainty_exponent, 0.0, 2.0, lo_open=True)
        _in_range(_p(path, "uncertainty_max_weight"), self.uncertainty_max_weight, 1.0, 1000.0)
        _prob(_p(path, "policy_optimism"), self.policy_optimism)
        _prob(_p(path, "root_policy_optimism"), self.root_policy_optimism)
        _in_range(_p(path, "lcb_stdevs"), self.lcb_stdevs, 0.0, 100.0, lo_open=True)
        _prob(_p(path, "lcb_min_visit_prop"), self.lcb_min_visit_prop)
        _need(
            self.symmetries in ("random", "none"),
            _p(path, "symmetries"),
            f"must be 'random' or 'none', got {self.symmetries!r}",
        )

    def root_policy_temperature_at(self, turn: int, board_length: float) -> float:
        return decayed(self.root_policy_temperature_early, self.root_policy_temperature, turn, board_length)

    def for_cheap_search(self) -> SearchSettings:
        """Section 6.1: cheap searches play for strength: no noise, no forced playouts, and the
        tree's first-play urgency at the root too."""
        return _cheap_search_settings(self)


@functools.lru_cache(maxsize=64)
def _cheap_search_settings(settings: SearchSettings) -> SearchSettings:
    return dataclasses.replace(
        settings, root_noise=False, forced_playouts=False, root_fpu_reduction=settings.fpu_reduction
    )


# --- self-play games -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RulesChoice(_Settings):
    """Rules drawn per game, each uniformly from its list, as KataGo's self-play draws them (its
    selfplay1.cfg: ``koRules``, ``scoringRules``, ``taxRules``, ``multiStoneSuicideLegals``,
    ``hasButtons``); a value listed twice is drawn twice as often. The button is drawn only for
    area scoring: a territory game never has one (KataGo's GameInitializer does the same)."""

    ko: tuple[str, ...] = ("SIMPLE", "POSITIONAL", "SITUATIONAL")
    scoring: tuple[str, ...] = ("AREA", "TERRITORY")
    tax: tuple[str, ...] = ("NONE", "NONE", "SEKI", "SEKI", "ALL")
    suicide: tuple[bool, ...] = (False, True)
    button: tuple[bool, ...] = (False, False, True)
    white_handicap_bonus: tuple[str, ...] = ("0",)

    def validate(self, path: str = "") -> None:
        for name, values, allowed in (
            ("ko", self.ko, KO_RULES),
            ("scoring", self.scoring, SCORING_RULES),
            ("tax", self.tax, TAX_RULES),
            ("white_handicap_bonus", self.white_handicap_bonus, HANDICAP_BONUS_RULES),
        ):
            _need(len(values) > 0, _p(path, name), "must not be empty")
            for i, v in enumerate(values):
                _need(v in allowed, f"{_p(path, name)}[{i}]", f"{v!r} is not one of {', '.join(allowed)}")
        for i, v in enumerate(self.ko):
            _need(
                v != "SPIGHT",
                f"{_p(path, 'ko')}[{i}]",
                "SPIGHT is not played by the rules engine; use SIMPLE, POSITIONAL or SITUATIONAL",
            )
        _need(len(self.suicide) > 0, _p(path, "suicide"), "must not be empty")
        _need(len(self.button) > 0, _p(path, "button"), "must not be empty")
        _need(
            "AREA" in self.scoring or not any(self.button),
            _p(path, "button"),
            f"a button is drawn only for area scoring, and scoring {list(self.scoring)} has none: use [false]",
        )

    def draw(self, rng) -> Rules:
        def pick(values):
            return values[int(rng.integers(len(values)))]

        ko = pick(self.ko)
        scoring = pick(self.scoring)
        tax = pick(self.tax)
        suicide = bool(pick(self.suicide))
        button = bool(pick(self.button)) if scoring == "AREA" else False
        return Rules(
            ko=ko,
            scoring=scoring,
            tax=tax,
            suicide=suicide,
            has_button=button,
            white_handicap_bonus=pick(self.white_handicap_bonus),
        )

    def allows(self, rules: Rules) -> str | None:
        """Why these choices never draw ``rules`` (None: they can)."""
        for name, value, allowed in (
            ("ko", rules.ko, self.ko),
            ("scoring", rules.scoring, self.scoring),
            ("tax", rules.tax, self.tax),
            ("suicide", rules.suicide, self.suicide),
            ("white_handicap_bonus", rules.white_handicap_bonus, self.white_handicap_bonus),
        ):
            if value not in allowed:
                return f"{name} {value!r} is not among the task's {list(allowed)}"
        if rules.scoring != "AREA":
            if rules.has_button:
                return f"a button under {rules.scoring} scoring, which never has one"
        elif rules.has_button not in self.button:
            return f"button {rules.has_button!r} is not among the task's {list(self.button)}"
        if rules.friendly_pass_ok:
            return "friendlyPassOk, which self-play never draws"
        return None


def _paper_size_weights() -> tuple[float, ...]:
    # Appendix C: sizes 9..19 with weights 1..11, the weight of 19 multiplied by 3 (early in a run).
    weights = [float(w) for w in range(1, 12)]
    weights[-1] *= 3
    return tuple(weights)


@dataclass(frozen=True)
class SelfPlaySettings(_Settings):
    """Self-play games: playout cap randomization (section 6.1), game initialization (Appendix C),
    move choice, soft resignation (methods page) and the end of the game."""

    search: SearchSettings = field(default_factory=SearchSettings)
    visits: int = 600  # N, full searches (recorded for training)
    cheap_visits: int = 100  # n, cheap searches (a visit cap with tree reuse; not recorded)
    full_search_prob: float = 0.25  # p
    board_sizes: tuple[int, ...] = tuple(range(9, 20))
    board_size_weights: tuple[float, ...] = field(default_factory=_paper_size_weights)
    rectangle_prob: float = 0.1  # a board of two sides drawn apart (KataGo's allowRectangleProb)
    komi_mean: float = 7.0
    komi_stdev: float = 1.0
    komi_big_stdev_prob: float = 0.05
    komi_big_stdev: float = 10.0
    komi_truncation: float = 3.0  # stdevs
    rules: RulesChoice = field(default_factory=RulesChoice)
    handicap_prob: float = 0.05
    handicap_compensate_komi_prob: float = 0.9
    handicap_compensation_rounds: int = 3  # network queries to move komi by the expected score
    # KataGo's komiAuto: every game whose komi is not compensated after its handicap (or fork) first
    # finds the network's fair komi for its empty board, from komi_mean by
    # handicap_compensation_rounds queries, and plays that plus its draw's offset from komi_mean.
    komi_auto: bool = False
    # KataGo's asymmetric playouts: with this probability a handicap game (white) or an even game
    # (either side, at random) gives one side 2^d times the other's visits, d uniform below
    # log2(max_asymmetric_ratio), the total of both kept; the network is told d as its playout
    # doubling advantage, so that it learns how a stronger player plays (and rows say so).
    handicap_asymmetric_playout_prob: float = 0.0
    normal_asymmetric_playout_prob: float = 0.0
    max_asymmetric_ratio: float = 8.0
    opening_area_prop: float = 0.04  # opening moves from the raw policy: Exp(mean prop * B^2)
    move_temperature_early: float = 0.8
    move_temperature: float = 0.2  # half-life from early to late: one board length in turns
    reduce_visits: bool = True  # soft resignation
    reduce_visits_threshold: float = 0.9
    reduce_visits_lookback: int = 3
    reduced_visits_min: int = 100
    reduced_visits_weight: float = 0.1
    end_when_all_pass_alive: bool = True
    max_moves: int = 1600
    draw_equivalent_wins: float = 0.5
    # Game branching (section 6.2.2). Side positions: at this share of the searched turns a move off
    # the game's line, drawn from the raw policy (70% at temperature 1, 25% at 2, else any legal
    # move), is searched fully for a row of its own, and side_position_continue_prob of those go one
    # move further (the search's reply, then another such move).
    side_position_prob: float = 0.025
    side_position_continue_prob: float = 0.25
    # Early forks: this share of the even games gives the next game its start: the game's first r
    # moves, r ~ Exp(mean early_fork_move_prop * B^2), then the best for the player to move of
    # fork_min_choices..fork_max_choices random legal moves by one network evaluation each, the komi
    # moved by handicap_compensation_rounds network queries to make it fair.
    early_fork_prob: float = 0.05
    early_fork_move_prop: float = 0.025
    fork_min_choices: int = 3
    fork_max_choices: int = 10

    def validate(self, path: str = "") -> None:
        self.search.validate(_p(path, "search"))
        self.rules.validate(_p(path, "rules"))
        _in_range(_p(path, "visits"), self.visits, 1, 1_000_000)
        _in_range(_p(path, "cheap_visits"), self.cheap_visits, 1, 1_000_000)
        _need(
            self.cheap_visits <= self.visits,
            _p(path, "cheap_visits"),
            f"must not exceed visits ({self.visits}), got {self.cheap_visits}",
        )
        _prob(_p(path, "full_search_prob"), self.full_search_prob)
        _check_sizes(path, self.board_sizes, self.board_size_weights)
        _prob(_p(path, "rectangle_prob"), self.rectangle_prob)
        _in_range(_p(path, "komi_mean"), self.komi_mean, -150.0, 150.0)
        _in_range(_p(path, "komi_stdev"), self.komi_stdev, 0.0, 100.0)
        _prob(_p(path, "komi_big_stdev_prob"), self.komi_big_stdev_prob)
        _in_range(_p(path, "komi_big_stdev"), self.komi_big_stdev, 0.0, 100.0)
        _in_range(_p(path, "komi_truncation"), self.komi_truncation, 0.0, 10.0)
        _prob(_p(path, "handicap_prob"), self.handicap_prob)
        _prob(_p(path, "handicap_compensate_komi_prob"), self.handicap_compensate_komi_prob)
        _in_range(_p(path, "handicap_compensation_rounds"), self.handicap_compensation_rounds, 0, 20)
        _need(
            not self.komi_auto or self.handicap_compensation_rounds > 0,
            _p(path, "komi_auto"),
            "needs handicap_compensation_rounds above 0 (the network queries that find the fair komi)",
        )
        _prob(_p(path, "handicap_asymmetric_playout_prob"), self.handicap_asymmetric_playout_prob)
        _prob(_p(path, "normal_asymmetric_playout_prob"), self.normal_asymmetric_playout_prob)
        _in_range(_p(path, "max_asymmetric_ratio"), self.max_asymmetric_ratio, 1.0, 64.0)
        _in_range(_p(path, "opening_area_prop"), self.opening_area_prop, 0.0, 1.0)
        _in_range(_p(path, "move_temperature_early"), self.move_temperature_early, 0.0, 10.0)
        _in_range(_p(path, "move_temperature"), self.move_temperature, 0.0, 10.0)
        _in_range(_p(path, "reduce_visits_threshold"), self.reduce_visits_threshold, 0.5, 1.0)
        _in_range(_p(path, "reduce_visits_lookback"), self.reduce_visits_lookback, 1, 100)
        _in_range(_p(path, "reduced_visits_min"), self.reduced_visits_min, 1, 1_000_000)
        _prob(_p(path, "reduced_visits_weight"), self.reduced_visits_weight)
        _in_range(_p(path, "max_moves"), self.max_moves, 1, 100_000)
        _prob(_p(path, "draw_equivalent_wins"), self.draw_equivalent_wins)
        _prob(_p(path, "side_position_prob"), self.side_position_prob)
        _prob(_p(path, "side_position_continue_prob"), self.side_position_continue_prob)
        _prob(_p(path, "early_fork_prob"), self.early_fork_prob)
        _in_range(_p(path, "early_fork_move_prop"), self.early_fork_move_prop, 0.0, 1.0)
        _in_range(_p(path, "fork_min_choices"), self.fork_min_choices, 1, 361)
        _in_range(_p(path, "fork_max_choices"), self.fork_max_choices, 1, 361)
        _need(
            self.fork_min_choices <= self.fork_max_choices,
            _p(path, "fork_max_choices"),
            f"must not be below fork_min_choices ({self.fork_min_choices}), got {self.fork_max_choices}",
        )

    def move_temperature_at(self, turn: int, board_length: float) -> float:
        return decayed(self.move_temperature_early, self.move_temperature, turn, board_length)

    def komi_bounds(self) -> tuple[float, float]:
        """The least and greatest komi the game's draw can give (before any handicap compensation):
        the mean plus or minus the truncation times the larger standard deviation in play, rounded."""
        sd = max(self.komi_stdev, self.komi_big_stdev if self.komi_big_stdev_prob > 0 else 0.0)
        if self.komi_big_stdev_prob >= 1.0:
            sd = self.komi_big_stdev
        spread = self.komi_truncation * sd
        return round_komi(self.komi_mean - spread), round_komi(self.komi_mean + spread)

    def auto_komi(self, fair: float, drawn: float) -> float:
        """``komi_auto``'s komi of a game: the network's fair komi for the empty board plus the
        draw's offset from the mean (KataGo's komiAuto), rounded to a half point."""
        return round_komi(fair + drawn - self.komi_mean)

    def max_doublings(self) -> float:
        """The playout doubling advantages asymmetric playouts draw lie below this: log2 of the ratio."""
        return math.log2(self.max_asymmetric_ratio)

    @staticmethod
    def asymmetric_visits(visits: int, doublings: float, advantaged: bool) -> int:
        """A search's visits in a game of asymmetric playouts (KataGo's): with f = 2^doublings the
        advantaged side searches 2f/(f+1) times the visits, the other 2/(f+1) times (at least 2, one
        child's visit for a policy target; KataGo refuses fewer than 5)."""
        f = 2.0**doublings
        return max(min(visits, 2), round(visits * 2.0 * (f if advantaged else 1.0) / (f + 1.0)))

    def max_search_visits(self) -> int:
        """The most visits any search of a game can have (asymmetric playouts give one side more)."""
        most = max(self.visits, self.cheap_visits)
        if self.handicap_asymmetric_playout_prob > 0 or self.normal_asymmetric_playout_prob > 0:
            return self.asymmetric_visits(most, self.max_doublings(), True)
        return most

    def full_search_visits(self) -> tuple[int, int]:
        """The least and greatest visits of a full search: soft resignation lowers them toward
        ``reduced_visits_min`` (never above ``visits``)."""
        if not self.reduce_visits:
            return self.visits, self.visits
        return max(1, min(self.reduced_visits_min, self.visits)), self.visits

    def full_search_weight(self, visits: int) -> float:
        """The most a full search of ``visits`` visits weighs as training data: 1, or less when soft
        resignation reduced it (the weight falls with the visits, from 1 at ``visits`` to
        ``reduced_visits_weight`` at the least; common.data.weights.soft_resignation_weight)."""
        low, high = self.full_search_visits()
        if high <= low or visits >= high:
            return 1.0
        proportion = max(0.0, (high - visits - 0.5) / (high - low))  # visits were rounded to a whole number
        return 1.0 + min(proportion, 1.0) * (self.reduced_visits_weight - 1.0)

    def sizes_in_play(self) -> tuple[int, ...]:
        return sizes_in_play(self.board_sizes, self.board_size_weights)

    def draws_board(self, x_size: int, y_size: int) -> bool:
        """Whether a game can be drawn on an x_size by y_size board: each side a size in play, and
        two different sides only with a rectangle probability above zero."""
        sizes = self.sizes_in_play()
        return x_size in sizes and y_size in sizes and (x_size == y_size or self.rectangle_prob > 0)

    @staticmethod
    def max_handicap(size: int) -> int:
        """Appendix C: no handicap on 9 and 10, at most 1, 2, 3 extra black moves on 11-14, 15-18, 19
        (a rectangle by its shorter side)."""
        if size <= 10:
            return 0
        if size <= 14:
            return 1
        if size <= 18:
            return 2
        return 3


# --- match and gating games ------------------------------------------------------------------------
def play_search() -> SearchSettings:
    """The search that plays for strength: Appendix D's matches, GTP and analysis play. No noise,
    no forced playouts, first-play urgency 0.2 at the root too, the raw policy at the root
    (temperature 1), as KataGo's gatekeeper; and the move by lower confidence bound, as KataGo's
    match, GTP and analysis play (its gain on our search: docs/benchmarks.md)."""
    return SearchSettings(
        root_noise=False,
        forced_playouts=False,
        root_fpu_reduction=0.2,
        root_policy_temperature_early=1.0,
        root_policy_temperature=1.0,
        lcb_for_selection=True,
    )


@dataclass(frozen=True)
class MatchSettings(_Settings):
    """Games between two networks (Appendix D): fixed komi, no handicap, full search from the first
    move with tree reuse, a lower move temperature, and resignation when both sides agree."""

    search: SearchSettings = field(default_factory=play_search)
    visits: int = 600
    komi: float = 7.5
    board_sizes: tuple[int, ...] = tuple(range(9, 20))
    board_size_weights: tuple[float, ...] = field(default_factory=_paper_size_weights)
    rules: RulesChoice = field(default_factory=RulesChoice)
    move_temperature_early: float = 0.5
    move_temperature: float = 0.2
    resign_threshold: float = 0.05  # resign when the losing side's worst win rate stays below this
    resign_consecutive_turns: int = 5
    end_when_all_pass_alive: bool = True  # the result is then certain (a side that never resigns, the
    #                                        random network, would otherwise play on to the move limit)
    max_moves: int = 1600

    def validate(self, path: str = "") -> None:
        self.search.validate(_p(path, "search"))
        self.rules.validate(_p(path, "rules"))
        _in_range(_p(path, "visits"), self.visits, 1, 1_000_000)
        _in_range(_p(path, "komi"), self.komi, -150.0, 150.0)
        _need(float(self.komi * 2).is_integer(), _p(path, "komi"), f"must be a multiple of 0.5, got {self.komi}")
        _check_sizes(path, self.board_sizes, self.board_size_weights)
        _in_range(_p(path, "move_temperature_early"), self.move_temperature_early, 0.0, 10.0)
        _in_range(_p(path, "move_temperature"), self.move_temperature, 0.0, 10.0)
        _prob(_p(path, "resign_threshold"), self.resign_threshold)
        _in_range(_p(path, "resign_consecutive_turns"), self.resign_consecutive_turns, 1, 1000)
        _in_range(_p(path, "max_moves"), self.max_moves, 1, 100_000)

    def move_temperature_at(self, turn: int, board_length: float) -> float:
        return decayed(self.move_temperature_early, self.move_temperature, turn, board_length)

    def sizes_in_play(self) -> tuple[int, ...]:
        return sizes_in_play(self.board_sizes, self.board_size_weights)

    def draws_board(self, x_size: int, y_size: int) -> bool:
        """Whether a match game can be drawn on an x_size by y_size board: square, of a size in play."""
        return x_size == y_size and x_size in self.sizes_in_play()


# --- gating and the run's settings document ---------------------------------------------------------
NO_GATING = "none"  # the gating rule that gates no network: each is accepted as it arrives
GATING_RULES = ("fixed", "sprt", NO_GATING)


@dataclass(frozen=True)
class GatingSettings(_Settings):
    """How the server tests new networks (the server reads this part; clients ignore it).

    A share of tasks are rating games (``rating_game_prob``), each task of at most
    ``rating_task_games`` games, so that a match is spread over many clients. A candidate plays the accepted network
    until its rule settles: ``fixed`` is KataGo's gatekeeper (at least ``fixed_wins`` wins of
    ``fixed_games``), ``sprt`` a sequential probability ratio test as Leela Zero's (H0: ``sprt_elo0``,
    H1: ``sprt_elo1``, error rates ``sprt_alpha`` and ``sprt_beta``, at most ``sprt_max_games``);
    ``none`` gates no network: each is accepted as it arrives, and rating games only rate the
    accepted networks. Ratings tie each network to its parent with ``virtual_draws``
    (KataGo's prior); an accepted network found worse than its predecessor with
    ``rollback_confidence`` is rolled back, under every rule. The run's
    strongest network (``server.networks.selectors``) is picked among networks with at least
    ``strongest_min_games`` rating games.

    Rating games come from many hands: tasks go to accounts in good standing with at least
    ``rating_min_selfplay_games`` self-play games stored (and in the group ``rating_group`` when it
    names one), and no account counts for more than
    ``account_share`` of the games of a gating or of a pair of networks in the ratings (games beyond
    it are kept but not counted; 1 turns the cap off, for a run whose contributors are all trusted)."""

    rating_game_prob: float = 0.1
    rating_task_games: int = 16  # the most games of one rating task, whatever a client asks for
    rule: str = "fixed"
    fixed_games: int = 200
    fixed_wins: int = 100
    sprt_elo0: float = 0.0
    sprt_elo1: float = 35.0
    sprt_alpha: float = 0.05
    sprt_beta: float = 0.05
    sprt_max_games: int = 1600  # about three times the games the test takes at its hypotheses
    virtual_draws: float = 4.0
    rollback_confidence: float = 0.95
    strongest_min_games: int = 25  # as KataGo's server lists networks for its Elo chart
    account_share: float = 0.25  # no account counts for more than this share of a gating's or a pair's games
    rating_min_selfplay_games: int = 0  # the stored self-play games an account needs before rating tasks
    rating_group: str = ""  # when set, only members of this group (of the server's accounts) get rating tasks

    def validate(self, path: str = "") -> None:
        _prob(_p(path, "rating_game_prob"), self.rating_game_prob)
        _in_range(_p(path, "rating_task_games"), self.rating_task_games, 1, 100_000)
        _need(
            self.rule in GATING_RULES, _p(path, "rule"), f"must be one of {', '.join(GATING_RULES)}, got {self.rule!r}"
        )
        _in_range(_p(path, "fixed_games"), self.fixed_games, 1, 100_000)
        _in_range(_p(path, "fixed_wins"), self.fixed_wins, 0, self.fixed_games)
        _in_range(_p(path, "sprt_elo0"), self.sprt_elo0, -1000.0, 1000.0)
        _in_range(_p(path, "sprt_elo1"), self.sprt_elo1, -1000.0, 1000.0)
        _need(
            self.sprt_elo1 > self.sprt_elo0,
            _p(path, "sprt_elo1"),
            f"must be greater than sprt_elo0 ({self.sprt_elo0}), got {self.sprt_elo1}",
        )
        _in_range(_p(path, "sprt_alpha"), self.sprt_alpha, 0.0, 0.5, lo_open=True)
        _in_range(_p(path, "sprt_beta"), self.sprt_beta, 0.0, 0.5, lo_open=True)
        _in_range(_p(path, "sprt_max_games"), self.sprt_max_games, 1, 100_000)
        _in_range(_p(path, "virtual_draws"), self.virtual_draws, 0.0, 1000.0)
        _in_range(_p(path, "rollback_confidence"), self.rollback_confidence, 0.5, 1.0, lo_open=True)
        _in_range(_p(path, "strongest_min_games"), self.strongest_min_games, 0, 1_000_000)
        _in_range(_p(path, "account_share"), self.account_share, 0.0, 1.0, lo_open=True)
        _in_range(_p(path, "rating_min_selfplay_games"), self.rating_min_selfplay_games, 0, 100_000_000)
        _need(
            len(self.rating_group) <= 150 and self.rating_group == self.rating_group.strip(),
            _p(path, "rating_group"),
            f"must be a group's name (at most 150 characters, no spaces around it), got {self.rating_group!r}",
        )


# --- central training -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingSettings(_Settings):
    """How the run's networks are trained (the trainer reads this part; clients ignore it). Values
    from the paper's section 4.7 unless said otherwise.

    The window: the newest ``window_rows(N)`` rows of the ``N`` the run received (rows of the random
    network counted up to ``window_c``), ``c (1 + beta ((N/c)^alpha - 1) / alpha)``; training starts
    once ``window_c`` rows have arrived. The budget: ``samples_per_row`` training samples for each
    row received, every one, the random network's too (KataGo's ``-max-train-bucket-per-new-data``).
    Learning rate per sample ``learning_rate (lr_decay T + 1)^(-4/3)`` after ``T`` samples of a
    network's training, times ``early_lr_factor`` for its first ``early_lr_samples`` (KataGo's main
    run: a third for each network's first 5 million samples, against early instability; 0: none),
    SGD with ``momentum``, the L2 penalty ``l2 |theta|^2``, the gradient norm of
    a batch's mean loss clipped at ``grad_clip``. Every ``snapshot_every`` samples the weights enter
    an exponential moving average (``ema_decay``); every ``export_every`` samples that average becomes
    a candidate network.

    Progressive sizes (section 4.6): ``next_architecture`` (empty: none) is trained alongside on the
    same data with ``next_lr_decay`` and takes over once its loss on held-out rows is lower. One
    game in ``holdout_one_in`` (chosen by its rows' content; 0: none) is held out of training; the
    newest ``validation_rows`` of them measure the networks. ``shuffle_rows`` rows are shuffled together at a
    time (memory against mixing)."""

    architecture: str = "b6c96"
    next_architecture: str = ""
    window_c: int = 250_000
    window_alpha: float = 0.75
    window_beta: float = 0.4
    samples_per_row: float = 4.0
    batch_size: int = 256
    learning_rate: float = 6e-5
    lr_decay: float = 1e-7  # lambda: 1e-6 x {0.1, 0.075, 0.05} for b6c96, b10c128, b15c192
    next_lr_decay: float = 7.5e-8
    early_lr_samples: int = 0
    early_lr_factor: float = 1.0 / 3.0
    momentum: float = 0.9
    l2: float = 3e-5
    grad_clip: float = 10.0  # not in the paper: a cap on rare gradient spikes, far above a normal batch's norm
    snapshot_every: int = 250_000
    export_every: int = 1_000_000
    ema_decay: float = 0.75
    symmetries: bool = True  # a random one of the 8 board symmetries per row
    # The ownership and score targets (section 4.1); off, their loss terms weigh 0 (the paper's
    # NoAux ablation, without its removal of the opponent policy target).
    ownership_score_targets: bool = True
    holdout_one_in: int = 20  # KataGo's shuffle.py holds out 5% of its files
    validation_rows: int = 10_000
    shuffle_rows: int = 100_000

    def validate(self, path: str = "") -> None:
        for name in ("architecture", "next_architecture"):
            value = getattr(self, name)
            _need(
                value in NAMED_SIZES or (name == "next_architecture" and value == ""),
                _p(path, name),
                f"must be one of {', '.join(NAMED_SIZES)}, got {_show(value)}",
            )
        _need(
            self.next_architecture != self.architecture,
            _p(path, "next_architecture"),
            f"must differ from architecture ({self.architecture!r})",
        )
        _in_range(_p(path, "window_c"), self.window_c, 1, 10**12)
        _need(
            self.window_c >= self.batch_size,
            _p(path, "window_c"),
            f"must be at least batch_size ({self.batch_size}), got {self.window_c}",
        )
        _in_range(_p(path, "window_alpha"), self.window_alpha, 0.0, 1.0, lo_open=True)
        _in_range(_p(path, "window_beta"), self.window_beta, 0.0, 10.0, lo_open=True)
        _in_range(_p(path, "samples_per_row"), self.samples_per_row, 0.0, 1000.0, lo_open=True)
        _in_range(_p(path, "batch_size"), self.batch_size, 1, 65536)
        _in_range(_p(path, "learning_rate"), self.learning_rate, 0.0, 1.0, lo_open=True)
        _in_range(_p(path, "lr_decay"), self.lr_decay, 0.0, 1.0)
        _in_range(_p(path, "next_lr_decay"), self.next_lr_decay, 0.0, 1.0)
        _in_range(_p(path, "early_lr_samples"), self.early_lr_samples, 0, 10**15)
        _in_range(_p(path, "early_lr_factor"), self.early_lr_factor, 0.0, 1.0, lo_open=True)
        _in_range(_p(path, "momentum"), self.momentum, 0.0, 1.0)
        _need(self.momentum < 1.0, _p(path, "momentum"), f"must be less than 1, got {self.momentum}")
        _in_range(_p(path, "l2"), self.l2, 0.0, 1.0)
        _in_range(_p(path, "grad_clip"), self.grad_clip, 0.0, lo_open=True)
        _in_range(_p(path, "snapshot_every"), self.snapshot_every, 1, 10**15)
        _in_range(_p(path, "export_every"), self.export_every, 1, 10**15)
        _need(
            self.export_every >= self.snapshot_every,
            _p(path, "export_every"),
            f"must be at least snapshot_every ({self.snapshot_every}), got {self.export_every}",
        )
        _prob(_p(path, "ema_decay"), self.ema_decay)
        _need(self.ema_decay < 1.0, _p(path, "ema_decay"), f"must be less than 1, got {self.ema_decay}")
        _in_range(_p(path, "holdout_one_in"), self.holdout_one_in, 0, 10**6)
        _need(self.holdout_one_in != 1, _p(path, "holdout_one_in"), "1 would hold out every game; use 0 for none")
        _in_range(_p(path, "validation_rows"), self.validation_rows, 0, 10**8)
        _in_range(_p(path, "shuffle_rows"), self.shuffle_rows, 1, 10**9)

    def window_rows(self, total_rows: int) -> int:
        """Rows in the training window once the run received ``total_rows`` (random-network rows
        counted up to ``window_c``): the paper's formula, never more than the rows there are."""
        c, alpha = float(self.window_c), self.window_alpha
        grown = c * (1.0 + self.window_beta * ((max(total_rows, c) / c) ** alpha - 1.0) / alpha)
        return int(min(total_rows, grown))

    def lr_decay_for(self, architecture: str) -> float:
        return self.next_lr_decay if architecture == self.next_architecture else self.lr_decay

    def learning_rate_at(self, samples: int, architecture: str) -> float:
        """The per-sample learning rate after ``samples`` training samples of a network."""
        rate = self.learning_rate * (self.lr_decay_for(architecture) * samples + 1.0) ** (-4.0 / 3.0)
        return rate * self.early_lr_factor if samples < self.early_lr_samples else rate


@dataclass(frozen=True)
class RunSettings(_Settings):
    """The settings document of a run, as the server versions it and sends it with every task:
    ``selfplay`` for self-play tasks, ``rating`` for rating (match) games, ``gating`` and
    ``training`` for the server's and the trainer's own use. Every key has a default, so ``{}`` is
    the paper's settings."""

    selfplay: SelfPlaySettings = field(default_factory=SelfPlaySettings)
    rating: MatchSettings = field(default_factory=MatchSettings)
    gating: GatingSettings = field(default_factory=GatingSettings)
    training: TrainingSettings = field(default_factory=TrainingSettings)

    def validate(self, path: str = "") -> None:
        self.selfplay.validate(_p(path, "selfplay"))
        self.rating.validate(_p(path, "rating"))
        self.gating.validate(_p(path, "gating"))
        self.training.validate(_p(path, "training"))
