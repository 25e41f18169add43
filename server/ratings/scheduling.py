"""Which two networks a rating game is between: where it tells the most.

A candidate under gating gets every rating game until its gating settles (:func:`next_gating`).
Otherwise the first network is drawn among the run's newest accepted networks with probability
proportional to the variance of its rating (few games, wide error bars), and its opponent among
the others with probability proportional to p(1 - p), p the first's expected score against it: a
game between near equals is the most informative. Colours are balanced per pair: a task's first
network plays black in its even games, and the network that has played black less often against the
other comes first.
"""

from __future__ import annotations

import random

import numpy as np

from common.elo import expected_score
from server.distribution.models import Task
from server.games.models import RatingGame
from server.networks.models import Network
from server.ratings.promotion import next_gating

RECENT_NETWORKS = 200  # the accepted networks the informative pairs are drawn among
UNRATED_SE = 350.0  # the error bar assumed for a network not rated yet


def choose_pair(run, rng: random.Random | None = None) -> tuple[Network, Network] | None:
    """(first, second) for the next rating task, or None when there is no pair to play."""
    rng = rng or random.Random()
    gating = next_gating(run)
    if gating is not None:
        return balanced(gating.candidate, gating.opponent)
    networks = list(
        run.networks.filter(state=Network.State.ACCEPTED)
        .select_related("rating")
        .order_by("-created_at", "-id")[:RECENT_NETWORKS]
    )
    if len(networks) < 2:
        return None
    ratings = [getattr(n, "rating", None) for n in networks]
    se = np.array([r.elo_se if r is not None and r.elo_se is not None else UNRATED_SE for r in ratings])
    elo = np.array([r.elo if r is not None and r.elo is not None else np.nan for r in ratings])
    first = rng.choices(range(len(networks)), weights=(se**2 + 1.0).tolist())[0]
    p = expected_score(elo[first] - elo)
    weights = np.where(np.isnan(p), 0.25, p * (1.0 - p))
    weights[first] = 0.0
    second = rng.choices(range(len(networks)), weights=(weights + 1e-12).tolist())[0]
    if second == first:
        return None
    return balanced(networks[first], networks[second])


def balanced(x: Network, y: Network) -> tuple[Network, Network]:
    """The pair with first the network that has played black less often against the other (a task's
    first network plays black in its even games, so a task of an odd number of games tips it)."""
    x_black = RatingGame.objects.filter(black_network=x, white_network=y).count()
    y_black = RatingGame.objects.filter(black_network=y, white_network=x).count()
    if x_black != y_black:
        return (x, y) if x_black < y_black else (y, x)
    # Equal so far: alternate by the tasks handed out for the pair, whose games may be under way.
    xy = Task.objects.filter(network_a=x, network_b=y).count()
    yx = Task.objects.filter(network_a=y, network_b=x).count()
    return (x, y) if xy <= yx else (y, x)
