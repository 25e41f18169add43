"""Gating rules: does a candidate network beat the accepted one? From the candidate's wins, draws
(games without result included) and losses against it, a rule says accept, reject, or play on.

* ``fixed``: KataGo's gatekeeper. At least ``fixed_wins`` points (a draw is half) out of
  ``fixed_games`` games. The verdict comes as soon as the remaining games cannot change it.
* ``sprt``: Leela Zero's sequential probability ratio test on the score, a draw counting half a win
  and half a loss. H0: the candidate is ``sprt_elo0`` Elo stronger; H1: it is ``sprt_elo1`` stronger.
  It accepts when the log-likelihood ratio reaches ln((1 - beta) / alpha) and rejects when it falls
  to ln(beta / (1 - alpha)). A candidate still undecided after ``sprt_max_games`` is rejected: it was
  not shown to be better.
* ``none``: no gating. Every candidate is accepted as it arrives, whatever its games
  (``server.ratings.promotion`` accepts it when it is stored); rating games only rate the accepted
  networks, and the rollback after each refit is what catches a regression.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from common.elo import expected_score
from common.settings import NO_GATING, GatingSettings

ACCEPT, REJECT, CONTINUE = "accept", "reject", "continue"


@dataclass(frozen=True)
class Verdict:
    """A rule's answer, with the numbers behind it (kept on the network as its gating record)."""

    decision: str  # ACCEPT, REJECT or CONTINUE
    rule: str
    games: int
    wins: int
    draws: int
    losses: int
    reason: str
    llr: float | None = None  # sprt: the log-likelihood ratio and its bounds
    lower: float | None = None
    upper: float | None = None

    @property
    def score(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.5

    def to_dict(self) -> dict:
        return asdict(self) | {"score": self.score}


def decide(settings: GatingSettings, wins: int, draws: int, losses: int) -> Verdict:
    if min(wins, draws, losses) < 0:
        raise ValueError(f"wins, draws and losses must not be negative, got {wins}, {draws}, {losses}")
    if settings.rule == NO_GATING:
        return no_gating(wins, draws, losses)
    if settings.rule == "fixed":
        return fixed_rule(wins, draws, losses, settings.fixed_games, settings.fixed_wins)
    return sprt(
        wins,
        draws,
        losses,
        settings.sprt_elo0,
        settings.sprt_elo1,
        settings.sprt_alpha,
        settings.sprt_beta,
        settings.sprt_max_games,
    )


def no_gating(wins: int, draws: int, losses: int) -> Verdict:
    """The rule ``none``: accepted at once; games it played in a gating begun under another rule stay
    on its record."""
    games = wins + draws + losses
    played = f", its gating closed after {games} games" if games else ""
    return Verdict(
        ACCEPT,
        rule=NO_GATING,
        games=games,
        wins=wins,
        draws=draws,
        losses=losses,
        reason=f"the run gates no network (gating rule none): accepted at once{played}",
    )


def fixed_rule(wins: int, draws: int, losses: int, games_needed: int, wins_needed: int) -> Verdict:
    games = wins + draws + losses
    points = wins + 0.5 * draws
    remaining = max(0, games_needed - games)
    common: dict[str, Any] = dict(rule="fixed", games=games, wins=wins, draws=draws, losses=losses)
    if points >= wins_needed:
        return Verdict(
            ACCEPT,
            reason=f"{points:g} points of {games} games reach the {wins_needed} needed of {games_needed}",
            **common,
        )
    if points + remaining < wins_needed:
        return Verdict(
            REJECT,
            reason=f"{points:g} points of {games} games: the {remaining} left cannot reach the "
            f"{wins_needed} needed of {games_needed}",
            **common,
        )
    return Verdict(
        CONTINUE, reason=f"{points:g} points of {games} games; {wins_needed} needed of {games_needed}", **common
    )


def sprt(
    wins: int, draws: int, losses: int, elo0: float, elo1: float, alpha: float, beta: float, max_games: int
) -> Verdict:
    games = wins + draws + losses
    p0, p1 = expected_score(elo0), expected_score(elo1)
    won = wins + 0.5 * draws
    lost = losses + 0.5 * draws
    llr = won * math.log(p1 / p0) + lost * math.log((1.0 - p1) / (1.0 - p0))
    lower = math.log(beta / (1.0 - alpha))
    upper = math.log((1.0 - beta) / alpha)
    common: dict[str, Any] = dict(
        rule="sprt", games=games, wins=wins, draws=draws, losses=losses, llr=llr, lower=lower, upper=upper
    )
    hypotheses = f"H0 {elo0:+g} Elo, H1 {elo1:+g} Elo"
    if llr >= upper:
        return Verdict(ACCEPT, reason=f"LLR {llr:.2f} reached {upper:.2f} after {games} games ({hypotheses})", **common)
    if llr <= lower:
        return Verdict(REJECT, reason=f"LLR {llr:.2f} fell to {lower:.2f} after {games} games ({hypotheses})", **common)
    if games >= max_games:
        return Verdict(
            REJECT,
            reason=f"undecided after the cap of {max_games} games (LLR {llr:.2f} between "
            f"{lower:.2f} and {upper:.2f}): not shown to be better",
            **common,
        )
    return Verdict(CONTINUE, reason=f"LLR {llr:.2f} between {lower:.2f} and {upper:.2f} after {games} games", **common)


def expected_sprt_games(true_elo: float, elo0: float, elo1: float, alpha: float, beta: float) -> float:
    """Wald's approximation of the games an SPRT takes when the candidate is true_elo stronger
    (no draws, no cap)."""
    p, p0, p1 = expected_score(true_elo), expected_score(elo0), expected_score(elo1)
    a, b = math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)
    win, loss = math.log(p1 / p0), math.log((1.0 - p1) / (1.0 - p0))
    drift = p * win + (1.0 - p) * loss
    if abs(drift) < 1e-12:
        return -a * b / (p * win**2 + (1.0 - p) * loss**2)
    # The probability of accepting, from Wald's identity: E[exp(h * LLR step)] = 1.
    h = _wald_h(p, win, loss)
    accept = (1.0 - math.exp(h * a)) / (math.exp(h * b) - math.exp(h * a))
    return (accept * b + (1.0 - accept) * a) / drift


def _wald_h(p: float, win: float, loss: float) -> float:
    """The nonzero h with p * exp(h * win) + (1 - p) * exp(h * loss) = 1 (bisection)."""

    def f(h: float) -> float:
        return p * math.exp(h * win) + (1.0 - p) * math.exp(h * loss) - 1.0

    drift = p * win + (1.0 - p) * loss
    lo, hi = (-200.0, -1e-9) if drift > 0 else (1e-9, 200.0)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if (f(mid) > 0) == (f(lo) > 0):
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)
