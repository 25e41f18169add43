"""Games between two networks: rating and gating games, and the search that plays for strength."""

from __future__ import annotations

from dataclasses import dataclass, field

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
from common.settings.selfplay import RulesChoice


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
class MatchSettings(Settings):
    """Games between two networks (Appendix D): fixed komi, no handicap, full search from the first
    move with tree reuse, a lower move temperature, and resignation when both sides agree."""

    search: SearchSettings = field(default_factory=play_search)
    visits: int = setting(600, 1, 1_000_000)
    komi: float = setting(7.5, -150.0, 150.0)
    board_sizes: tuple[int, ...] = tuple(range(9, 20))
    board_size_weights: tuple[float, ...] = field(default_factory=paper_size_weights)
    rules: RulesChoice = field(default_factory=RulesChoice)
    move_temperature_early: float = setting(0.5, 0.0, 10.0)
    move_temperature: float = setting(0.2, 0.0, 10.0)
    resign_threshold: float = probability(0.05)  # resign when the losing side's worst win rate stays below this
    resign_consecutive_turns: int = setting(5, 1, 1000)
    end_when_all_pass_alive: bool = True  # the result is then certain (a side that never resigns, the
    #                                        random network, would otherwise play on to the move limit)
    max_moves: int = setting(1600, 1, 100_000)

    def check(self, path: str) -> None:
        need(float(self.komi * 2).is_integer(), at(path, "komi"), f"must be a multiple of 0.5, got {self.komi}")
        check_sizes(path, self.board_sizes, self.board_size_weights)

    def move_temperature_at(self, turn: int, board_length: float) -> float:
        return decayed(self.move_temperature_early, self.move_temperature, turn, board_length)

    def sizes_in_play(self) -> tuple[int, ...]:
        return sizes_in_play(self.board_sizes, self.board_size_weights)

    def draws_board(self, x_size: int, y_size: int) -> bool:
        """Whether a match game can be drawn on an x_size by y_size board: square, of a size in play."""
        return x_size == y_size and x_size in self.sizes_in_play()
