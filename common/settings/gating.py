"""How the server tests new networks and gives out rating games."""

from __future__ import annotations

from dataclasses import dataclass

from common.settings.framework import Settings, at, in_range, need, probability, setting

NO_GATING = "none"  # the gating rule that gates no network: each is accepted as it arrives
GATING_RULES = ("fixed", "sprt", NO_GATING)


@dataclass(frozen=True)
class GatingSettings(Settings):
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

    rating_game_prob: float = probability(0.1)
    rating_task_games: int = setting(16, 1, 100_000)  # the most games of one rating task, whatever a client asks for
    rule: str = "fixed"
    fixed_games: int = setting(200, 1, 100_000)
    fixed_wins: int = 100
    sprt_elo0: float = setting(0.0, -1000.0, 1000.0)
    sprt_elo1: float = setting(35.0, -1000.0, 1000.0)
    sprt_alpha: float = setting(0.05, 0.0, 0.5, lo_open=True)
    sprt_beta: float = setting(0.05, 0.0, 0.5, lo_open=True)
    sprt_max_games: int = setting(1600, 1, 100_000)  # about three times the games the test takes at its hypotheses
    virtual_draws: float = setting(4.0, 0.0, 1000.0)
    rollback_confidence: float = setting(0.95, 0.5, 1.0, lo_open=True)
    strongest_min_games: int = setting(25, 0, 1_000_000)  # as KataGo's server lists networks for its Elo chart
    # no account counts for more than this share of a gating's or a pair's games
    account_share: float = setting(0.25, 0.0, 1.0, lo_open=True)
    # the stored self-play games an account needs before rating tasks
    rating_min_selfplay_games: int = setting(0, 0, 100_000_000)
    rating_group: str = ""  # when set, only members of this group (of the server's accounts) get rating tasks

    def check(self, path: str) -> None:
        need(
            self.rule in GATING_RULES, at(path, "rule"), f"must be one of {', '.join(GATING_RULES)}, got {self.rule!r}"
        )
        in_range(at(path, "fixed_wins"), self.fixed_wins, 0, self.fixed_games)
        need(
            self.sprt_elo1 > self.sprt_elo0,
            at(path, "sprt_elo1"),
            f"must be greater than sprt_elo0 ({self.sprt_elo0}), got {self.sprt_elo1}",
        )
        need(
            len(self.rating_group) <= 150 and self.rating_group == self.rating_group.strip(),
            at(path, "rating_group"),
            f"must be a group's name (at most 150 characters, no spaces around it), got {self.rating_group!r}",
        )
