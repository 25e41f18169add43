"""The audit of rating games: an account whose results differ from everyone else's on the same
pairings is flagged (docs/data-integrity.md, "Rating games").

Rating games are not rows a network can explain, but they are repeated: every pair of networks is
played by many accounts, and an honest account's score on a pair is a sample of the same coin as
the others'. For each account, each pair of networks it played in the audit's period that others
played at least ``MIN_OTHERS_GAMES`` times is compared with the others' score on that pair:

- its score for the newer network of the pair against the others' (smoothed: one virtual win and one
  virtual loss), with a variance that counts the others' sampling error too;
- the deviations summed over its pairs into one z (a forger who pushes candidates up, or an accepted
  network down, pushes the same way on every pair), and each pair's own z (one pushed pair).

Either beyond ``RATING_Z`` flags the account, once it has ``MIN_GAMES`` rating games in the period.
"The others" are the games that count, weighed as the ratings' fit weighs them (no account for more
than its share of the pair, ``server.ratings.tally``): one account's flood of one-sided games moves
the baseline no more than it moves the ratings, so it cannot make the honest accounts look like the
odd ones out. An account that plays every game of a pair has nobody to be compared with: the share
bounds what it can do there.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from server.audit.models import AuditScore
from server.games.models import RatingGame
from server.ratings.tally import account_weights, candidate_score, counted_rating_games

RATING_Z = 5.0  # as the rows' relative test: about one honest account in 3.5 million per test
MIN_GAMES = 32  # an account's rating games in the period before it is judged (two tasks of 16)
MIN_OTHERS_GAMES = 16  # the others' games on a pair before the pair is compared


@dataclass
class _Pair:
    games: int = 0
    points: float = 0.0  # of the newer network


def rating_figures(run, since, share: float) -> dict[int, dict]:
    """Per account with rating games of the run since ``since``: its games, and per pair it shares
    with others its games, its score and the others' (for the newer network), and the z's. The
    others' games are those that count, each account's weighed down to the pair's cap at ``share``."""
    games = RatingGame.objects.filter(run=run, created_at__gte=since, disabled=False)
    counting = set(counted_rating_games().filter(pk__in=games.values("pk")).values_list("user_id", flat=True))
    per: dict[tuple[int, int], dict[int, _Pair]] = defaultdict(lambda: defaultdict(_Pair))
    games_of: dict[int, int] = defaultdict(int)
    for user, black, white, winner in games.values_list("user_id", "black_network_id", "white_network_id", "winner"):
        pair = (min(black, white), max(black, white))  # the larger id: the newer network
        cell = per[pair][user]
        cell.games += 1
        cell.points += candidate_score(winner, black == pair[1])
        games_of[user] += 1
    weight_of = {  # the accounts' games that do not count weigh nothing
        pair: account_weights({u: c.games for u, c in by_user.items() if u in counting}, share)
        for pair, by_user in per.items()
    }
    figures: dict[int, dict] = {}
    for user, games_played in games_of.items():
        pairs, deviation, variance = [], 0.0, 0.0
        for pair, by_user in per.items():
            mine = by_user.get(user)
            if mine is None:
                continue
            weights = weight_of[pair]
            others_games = sum(weights.get(u, 0.0) * c.games for u, c in by_user.items() if u != user)
            if others_games < MIN_OTHERS_GAMES:
                continue
            others_points = sum(weights.get(u, 0.0) * c.points for u, c in by_user.items() if u != user)
            p = (others_points + 1.0) / (others_games + 2.0)
            var = mine.games * p * (1.0 - p) * (1.0 + mine.games / others_games)
            dev = mine.points - mine.games * p
            deviation += dev
            variance += var
            pairs.append(
                {
                    "pair": list(pair),
                    "games": mine.games,
                    "score": round(mine.points / mine.games, 4),
                    "others_games": round(others_games, 1),
                    "others_score": round(others_points / others_games, 4),
                    "z": round(dev / math.sqrt(var), 3),
                }
            )
        z = deviation / math.sqrt(variance) if variance > 0 else None
        figures[user] = {"games": games_played, "pairs": pairs, "z": None if z is None else round(z, 3)}
    return figures


def judge_rating(figures: dict) -> tuple[str, list[dict]]:
    """An account's verdict on its rating figures and the evidence for a flag."""
    if figures["games"] < MIN_GAMES or not figures["pairs"]:
        return AuditScore.Verdict.TOO_FEW, []
    evidence = []
    z = figures["z"]
    if z is not None and abs(z) > RATING_Z:
        evidence.append(
            {
                "statistic": "rating_z",
                "meaning": "its score for the newer network against the others', over all its pairs",
                "value": z,
                "threshold": RATING_Z,
                "kind": "relative",
                "games": figures["games"],
                "pairs": len(figures["pairs"]),
            }
        )
    for pair in figures["pairs"]:
        if abs(pair["z"]) > RATING_Z:
            evidence.append(
                {
                    "statistic": "pair_z",
                    "meaning": "its score for the newer network of one pair against the others'",
                    "value": pair["z"],
                    "threshold": RATING_Z,
                    "kind": "relative",
                    "games": pair["games"],
                    "pair": pair["pair"],
                }
            )
    return (AuditScore.Verdict.FLAGGED if evidence else AuditScore.Verdict.OK), evidence
