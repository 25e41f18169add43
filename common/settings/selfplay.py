"""Self-play games: the rules drawn, playout cap randomization, game initialization, move choice,
soft resignation and the end of the game."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from common.go.rules import HANDICAP_BONUS_RULES, KO_RULES, SCORING_RULES, TAX_RULES, Rules, round_komi
from common.settings.framework import (
    Settings,
    at,
    check_sizes,
    decayed,
    need,
    paper_size_weights,
    probability,
    setting,
    sizes_in_play,
)
from common.settings.search import SearchSettings


@dataclass(frozen=True)
class RulesChoice(Settings):
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

    def check(self, path: str) -> None:
        for name, values, allowed in (
            ("ko", self.ko, KO_RULES),
            ("scoring", self.scoring, SCORING_RULES),
            ("tax", self.tax, TAX_RULES),
            ("white_handicap_bonus", self.white_handicap_bonus, HANDICAP_BONUS_RULES),
        ):
            need(len(values) > 0, at(path, name), "must not be empty")
            for i, v in enumerate(values):
                need(v in allowed, f"{at(path, name)}[{i}]", f"{v!r} is not one of {', '.join(allowed)}")
        for i, v in enumerate(self.ko):
            need(
                v != "SPIGHT",
                f"{at(path, 'ko')}[{i}]",
                "SPIGHT is not played by the rules engine; use SIMPLE, POSITIONAL or SITUATIONAL",
            )
        need(len(self.suicide) > 0, at(path, "suicide"), "must not be empty")
        need(len(self.button) > 0, at(path, "button"), "must not be empty")
        need(
            "AREA" in self.scoring or not any(self.button),
            at(path, "button"),
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


@dataclass(frozen=True)
class SelfPlaySettings(Settings):
    """Self-play games: playout cap randomization (section 6.1), game initialization (Appendix C),
    move choice, soft resignation (methods page) and the end of the game."""

    search: SearchSettings = field(default_factory=SearchSettings)
    visits: int = setting(600, 1, 1_000_000)  # N, full searches (recorded for training)
    cheap_visits: int = setting(100, 1, 1_000_000)  # n, cheap searches (a visit cap with tree reuse; not recorded)
    full_search_prob: float = probability(0.25)  # p
    board_sizes: tuple[int, ...] = tuple(range(9, 20))
    board_size_weights: tuple[float, ...] = field(default_factory=paper_size_weights)
    rectangle_prob: float = probability(0.1)  # a board of two sides drawn apart (KataGo's allowRectangleProb)
    komi_mean: float = setting(7.0, -150.0, 150.0)
    komi_stdev: float = setting(1.0, 0.0, 100.0)
    komi_big_stdev_prob: float = probability(0.05)
    komi_big_stdev: float = setting(10.0, 0.0, 100.0)
    komi_truncation: float = setting(3.0, 0.0, 10.0)  # stdevs
    rules: RulesChoice = field(default_factory=RulesChoice)
    handicap_prob: float = probability(0.05)
    handicap_compensate_komi_prob: float = probability(0.9)
    handicap_compensation_rounds: int = setting(3, 0, 20)  # network queries to move komi by the expected score
    # KataGo's komiAuto: every game whose komi is not compensated after its handicap (or fork) first
    # finds the network's fair komi for its empty board, from komi_mean by
    # handicap_compensation_rounds queries, and plays that plus its draw's offset from komi_mean.
    komi_auto: bool = False
    # KataGo's asymmetric playouts: with this probability a handicap game (white) or an even game
    # (either side, at random) gives one side 2^d times the other's visits, d uniform below
    # log2(max_asymmetric_ratio), the total of both kept; the network is told d as its playout
    # doubling advantage, so that it learns how a stronger player plays (and rows say so).
    handicap_asymmetric_playout_prob: float = probability(0.0)
    normal_asymmetric_playout_prob: float = probability(0.0)
    max_asymmetric_ratio: float = setting(8.0, 1.0, 64.0)
    opening_area_prop: float = setting(0.04, 0.0, 1.0)  # opening moves from the raw policy: Exp(mean prop * B^2)
    move_temperature_early: float = setting(0.8, 0.0, 10.0)
    move_temperature: float = setting(0.2, 0.0, 10.0)  # half-life from early to late: one board length in turns
    reduce_visits: bool = True  # soft resignation
    reduce_visits_threshold: float = setting(0.9, 0.5, 1.0)
    reduce_visits_lookback: int = setting(3, 1, 100)
    reduced_visits_min: int = setting(100, 1, 1_000_000)
    reduced_visits_weight: float = probability(0.1)
    end_when_all_pass_alive: bool = True
    max_moves: int = setting(1600, 1, 100_000)
    draw_equivalent_wins: float = probability(0.5)
    # Game branching (section 6.2.2). Side positions: at this share of the searched turns a move off
    # the game's line, drawn from the raw policy (70% at temperature 1, 25% at 2, else any legal
    # move), is searched fully for a row of its own, and side_position_continue_prob of those go one
    # move further (the search's reply, then another such move).
    side_position_prob: float = probability(0.025)
    side_position_continue_prob: float = probability(0.25)
    # Early forks: this share of the even games gives the next game its start: the game's first r
    # moves, r ~ Exp(mean early_fork_move_prop * B^2), then the best for the player to move of
    # fork_min_choices..fork_max_choices random legal moves by one network evaluation each, the komi
    # moved by handicap_compensation_rounds network queries to make it fair.
    early_fork_prob: float = probability(0.05)
    early_fork_move_prop: float = setting(0.025, 0.0, 1.0)
    fork_min_choices: int = setting(3, 1, 361)
    fork_max_choices: int = setting(10, 1, 361)

    def check(self, path: str) -> None:
        need(
            self.cheap_visits <= self.visits,
            at(path, "cheap_visits"),
            f"must not exceed visits ({self.visits}), got {self.cheap_visits}",
        )
        check_sizes(path, self.board_sizes, self.board_size_weights)
        need(
            not self.komi_auto or self.handicap_compensation_rounds > 0,
            at(path, "komi_auto"),
            "needs handicap_compensation_rounds above 0 (the network queries that find the fair komi)",
        )
        need(
            self.fork_min_choices <= self.fork_max_choices,
            at(path, "fork_max_choices"),
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
