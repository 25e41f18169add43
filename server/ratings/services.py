"""Refitting a run's ratings from the database: its counted rating games are summed per pair, result
and account in one query (no account weighing more than its share of a pair's games,
``server.ratings.tally``), fitted (``server.ratings.fit``) with the run's prior and, as more
players, the anchors its networks played (``server.ratings.anchors``), and every network's Elo,
error and games stored in one statement (an anchor's in its own row); then the newest accepted
network is checked for a rollback."""

from __future__ import annotations

import logging
import time

import numpy as np
from django.db import transaction
from django.db.models import Count, Sum
from django.utils import timezone

from common.settings import GatingSettings
from server.games.models import Winner
from server.networks.models import Network
from server.ratings.fit import Ratings, fit_ratings
from server.ratings.models import AnchorMatch, AnchorRating, Rating, RatingFit
from server.ratings.promotion import check_rollback, gating_settings
from server.ratings.tally import account_weights, counted_rating_games

log = logging.getLogger(__name__)

BLACK_SCORE = {Winner.BLACK: 1.0, Winner.WHITE: 0.0, Winner.DRAW: 0.5, Winner.NONE: 0.5}
# Each anchor is tied by this many virtual draws, spread over the networks it played in proportion to
# their games (as KataGo ties a network without a parent): its rating stays finite when it lost or won
# every game, and the tie weighs little against the tens of games a match has.
ANCHOR_PRIOR_DRAWS = 0.5


def fit_run(
    run, gating: GatingSettings, without_user: int | None = None
) -> tuple[list[Network], Ratings, list[int], int]:
    """Fit the run's ratings with its gating settings (nothing stored): the networks (oldest first),
    the fit, the anchors' ids (rated after the networks) and the rating games counted;
    ``without_user``: as if that account had played none. FitError when the games leave a rating
    unbounded, which only a run without a prior (``virtual_draws`` 0) allows."""
    networks = list(run.networks.order_by("created_at", "id"))
    index = {n.pk: k for k, n in enumerate(networks)}
    anchor = next((k for k, n in enumerate(networks) if n.is_random), 0)
    # The prior ties each network to its parent; one without a parent (in this run) to the anchor, so
    # that a network that won or lost all its games still has a finite rating.
    parents = np.array([index.get(n.parent_id, anchor) for n in networks], dtype=np.int64)
    parents[anchor] = -1
    black, white, score, counts = _counted_games(run, index, gating.account_share, without_user)
    rating_games = round(sum(counts))
    anchors, ties = _anchor_games(run, index, black, white, score, counts)
    fit = fit_ratings(
        len(networks) + len(anchors),
        np.array(black, dtype=np.int64),
        np.array(white, dtype=np.int64),
        np.array(score),
        parents=np.concatenate([parents, np.full(len(anchors), -1, dtype=np.int64)]),
        virtual_draws=gating.virtual_draws,
        anchor=anchor,
        counts=np.array(counts, dtype=np.float64),
        ties=ties,
    )
    return networks, fit, anchors, rating_games


def refit(run) -> tuple[list[Network], Ratings]:
    """Fit the run's ratings and store them; returns the networks (oldest first) and the fit.
    Raises FitError (nothing stored) as :func:`fit_run` does."""
    t0 = time.perf_counter()
    gating = gating_settings(run)
    networks, fit, anchors, rating_games = fit_run(run, gating)
    index = {n.pk: k for k, n in enumerate(networks)}
    now = timezone.now()
    played = _games_against_anchors(run, index, len(networks))
    ratings = [
        Rating(
            network=n,
            elo=_finite(fit.elo[k]),
            elo_se=_finite(fit.se[k]),
            games=round(fit.games[k] - played[k]),
            updated_at=now,
        )
        for k, n in enumerate(networks)
    ]
    with transaction.atomic():
        Rating.objects.bulk_create(
            ratings,
            update_conflicts=True,
            unique_fields=["network"],
            update_fields=["elo", "elo_se", "games", "updated_at"],
        )
        for a, anchor_id in enumerate(anchors, start=len(networks)):
            AnchorRating.objects.update_or_create(
                run=run,
                anchor_id=anchor_id,
                defaults={
                    "elo": _finite(fit.elo[a]),
                    "elo_se": _finite(fit.se[a]),
                    "games": int(fit.games[a]),
                    "updated_at": now,
                },
            )
        RatingFit.objects.update_or_create(
            run=run,
            defaults={
                "fitted_at": now,
                "games": rating_games,
                "networks": len(networks),
                "iterations": fit.iterations,
                "seconds": time.perf_counter() - t0,
            },
        )
    log.info(
        "run %s: ratings of %d networks refitted from %d games in %.2f s",
        run.name,
        len(networks),
        rating_games,
        time.perf_counter() - t0,
    )
    # With no cap (a share of 1: trusted contributors) one account may decide, rollbacks included.
    trusted = gating.account_share >= 1.0
    check_rollback(run, networks, fit, None if trusted else lambda user: fit_run(run, gating, user)[1])
    return networks, fit


def _counted_games(
    run, index: dict[int, int], share: float, without_user: int | None = None
) -> tuple[list, list, list, list]:
    """The run's counted rating games summed per (black, white, result), for the fit: each account's
    games of a pair of networks weighted down to the pair's account cap (``server.ratings.tally``)."""
    games = counted_rating_games().filter(run=run)
    if without_user is not None:
        games = games.exclude(user_id=without_user)
    rows = (
        games.values_list("black_network_id", "white_network_id", "winner", "user_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_pair: dict[tuple[int, int], list[tuple[int, int, Winner, int, int]]] = {}
    for b, w, winner, user, n in rows:
        if b in index and w in index and b != w:
            by_pair.setdefault((min(b, w), max(b, w)), []).append((b, w, Winner(winner), user, n))
    summed: dict[tuple[int, int, Winner], float] = {}
    for cells in by_pair.values():
        of_account: dict[int, int] = {}
        for _, _, _, user, n in cells:
            of_account[user] = of_account.get(user, 0) + n
        weight_of = account_weights(of_account, share)
        for b, w, winner, user, n in cells:
            weight = weight_of[user]
            if weight > 0:
                key = (b, w, winner)
                summed[key] = summed.get(key, 0.0) + n * weight
    black, white, score, counts = [], [], [], []
    for (b, w, winner), n in sorted(summed.items()):
        black.append(index[b])
        white.append(index[w])
        score.append(BLACK_SCORE.get(winner, 0.5))
        counts.append(n)
    return black, white, score, counts


def _anchor_games(run, index: dict[int, int], first: list, second: list, score: list, counts: list):
    """Append the run's games against anchors (a network first) to the fit's lists; the anchors' ids
    in the order of their indices (after the networks'), and their ties (the prior)."""
    matches = (
        AnchorMatch.objects.filter(run=run)
        .values_list("network_id", "anchor_id")
        .annotate(wins=Sum("wins"), draws=Sum("draws"), games=Sum("games"))
        .order_by("anchor_id", "network_id")
    )
    anchors: list[int] = []
    position: dict[int, int] = {}
    tie_i, tie_j, tie_weight = [], [], []
    for network_id, anchor_id, wins, draws, games in matches:
        if network_id not in index or not games:
            continue
        if anchor_id not in position:
            position[anchor_id] = len(index) + len(anchors)
            anchors.append(anchor_id)
        a = position[anchor_id]
        for points, n in ((1.0, wins), (0.5, draws), (0.0, games - wins - draws)):
            if n > 0:
                first.append(index[network_id])
                second.append(a)
                score.append(points)
                counts.append(n)
        tie_i.append(a)
        tie_j.append(index[network_id])
        tie_weight.append(float(games))
    weights = np.array(tie_weight)
    draws = np.zeros_like(weights)
    for a in position.values():  # each anchor's draws spread over its networks by their games
        mine = np.array(tie_i) == a
        draws[mine] = ANCHOR_PRIOR_DRAWS * weights[mine] / weights[mine].sum()
    ties = (np.array(tie_i, dtype=np.int64), np.array(tie_j, dtype=np.int64), draws)
    return anchors, ties


def _games_against_anchors(run, index: dict[int, int], count: int) -> np.ndarray:
    played = np.zeros(count, dtype=np.int64)
    for network_id, games in (
        AnchorMatch.objects.filter(run=run).values_list("network_id").annotate(n=Sum("games")).order_by()
    ):
        if network_id in index:
            played[index[network_id]] += games
    return played


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None
