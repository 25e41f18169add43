"""Which rating games count, and how many of one account's.

A rating game counts when it is not disabled and its uploader's account is active and not in
quarantine (:func:`counted_rating_games`). Of those, no account counts for more than the run's
``account_share`` of a gating's or of a pair's games: the cap is the largest number ``c`` of games
such that ``c <= share * sum over accounts of min(games of the account, c)`` (:func:`account_cap`),
the water level at which the largest account holds at most its share of what is counted. An account
with fewer games counts them all; a larger one counts ``c`` of them (a gating its first ``c``, the
ratings' fit each of its games with the weight ``c / games``). With the default share of a quarter,
games of fewer than four accounts count for nothing: no account, and no three, decide alone.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q, QuerySet

from server.audit.selectors import quarantined_users
from server.games.models import RatingGame, Winner


def counted_rating_games() -> QuerySet[RatingGame]:
    """Rating games that count: not disabled, of an active account not in quarantine."""
    return RatingGame.objects.filter(~quarantined_users(), disabled=False, user__is_active=True)


def pair_games(first_id: int, second_id: int) -> QuerySet[RatingGame]:
    """Every rating game between the two networks, either colour, counted or not."""
    return RatingGame.objects.filter(
        Q(black_network_id=first_id, white_network_id=second_id)
        | Q(black_network_id=second_id, white_network_id=first_id)
    )


def account_cap(games_of: Mapping[int, int] | Iterable[int], share: float) -> int:
    """The most games one account counts, given each account's games (a mapping or the counts)."""
    counts = sorted(games_of.values() if isinstance(games_of, Mapping) else games_of)
    if not counts:
        return 0
    if share >= 1.0:
        return counts[-1]

    def fits(c: int) -> bool:  # (a hair of slack: 0.35 * 180 is 62.99999999999999 in floats)
        return c <= share * sum(min(n, c) for n in counts) + 1e-9

    # share * sum(min(n, c)) - c is concave in c and 0 at c = 0: the c that fit are 0..cap.
    lo, hi = 0, counts[-1]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def account_weights(games_of: Mapping[int, int], share: float) -> dict[int, float]:
    """Each account's weight on its games: 1, or the cap over its games for an account beyond it
    (the ratings' fit weighs a pair's games so)."""
    cap = account_cap(games_of, share)
    return {account: min(1.0, cap / games) for account, games in games_of.items()}


@dataclass(frozen=True)
class Tally:
    """A gating's games from the candidate's side: counted ``wins``, ``draws`` (games without result
    included) and ``losses``; ``played`` every game of the pair since the gating began, ``excluded``
    those that do not count (disabled, or of an account turned off or in quarantine), ``capped``
    those beyond an account's share; ``accounts`` the accounts whose games count, ``cap`` the most
    games one of them counts, at the ``share``."""

    wins: int
    draws: int
    losses: int
    played: int
    excluded: int
    capped: int
    accounts: int
    cap: int
    share: float

    @property
    def accounts_needed(self) -> int:
        """The fewest accounts whose games count at all at this share (1 / share, rounded up)."""
        return math.ceil(1.0 / self.share - 1e-9)

    @property
    def counted(self) -> int:
        return self.wins + self.draws + self.losses

    def to_dict(self) -> dict[str, int | float]:
        return {
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "played": self.played,
            "excluded": self.excluded,
            "capped": self.capped,
            "accounts": self.accounts,
            "cap": self.cap,
            "share": self.share,
            "accounts_needed": self.accounts_needed,
        }


def gating_tally(candidate_id: int, opponent_id: int, since: datetime, until: datetime | None, share: float) -> Tally:
    """The tally of the candidate's games against the opponent stored from ``since`` (to ``until``,
    when given): each account's first games up to the cap, in the order they were stored."""
    games = pair_games(candidate_id, opponent_id).filter(created_at__gte=since)
    if until is not None:
        games = games.filter(created_at__lte=until)
    played = games.count()
    rows = (
        counted_rating_games()
        .filter(pk__in=games.values("pk"))
        .order_by("created_at", "id")
        .values_list("user_id", "black_network_id", "winner")
    )
    by_account: dict[int, list[float]] = {}
    for user_id, black_id, winner in rows:
        by_account.setdefault(user_id, []).append(candidate_score(winner, black_id == candidate_id))
    cap = account_cap({u: len(s) for u, s in by_account.items()}, share)
    wins = draws = losses = 0
    counted_accounts = 0
    kept = 0
    for scores in by_account.values():
        counted = scores[:cap]
        counted_accounts += bool(counted)
        kept += len(scores)
        wins += sum(1 for s in counted if s == 1.0)
        losses += sum(1 for s in counted if s == 0.0)
        draws += sum(1 for s in counted if s == 0.5)
    return Tally(
        wins=wins,
        draws=draws,
        losses=losses,
        played=played,
        excluded=played - kept,
        capped=kept - wins - draws - losses,
        accounts=counted_accounts,
        cap=cap,
        share=share,
    )


def candidate_score(winner: str, candidate_black: bool) -> float:
    """The candidate's points of a game: 1 for a win, 0 for a loss, half for a draw or no result."""
    if winner in (Winner.BLACK, Winner.WHITE):
        return 1.0 if (winner == Winner.BLACK) == candidate_black else 0.0
    return 0.5


def most_against(network_id: int, other_id: int) -> int | None:
    """The account whose counted games of the pair weigh most against ``network_id``: the largest
    shortfall of its points from what the pair's overall score gives its games (None: no games)."""
    games = counted_rating_games().filter(pk__in=pair_games(network_id, other_id).values("pk"))
    points: dict[int, list[float]] = {}
    for user_id, black_id, winner in games.values_list("user_id", "black_network_id", "winner").order_by():
        points.setdefault(user_id, []).append(candidate_score(winner, black_id == network_id))
    total = sum(len(p) for p in points.values())
    if not total:
        return None
    mean = sum(sum(p) for p in points.values()) / total
    return min(points, key=lambda user: (sum(points[user]) - mean * len(points[user]), user))
