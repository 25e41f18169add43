"""Refitting a run's ratings from the database: its rating games are summed per pair and result in
one query, fitted (``server.ratings.fit``) with the run's prior, and every network's Elo, error and
games stored in one statement; then the newest accepted network is checked for a rollback."""

from __future__ import annotations

import logging
import time

import numpy as np
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from server.games.models import RatingGame, Winner
from server.networks.models import Network
from server.ratings.fit import Ratings, fit_ratings
from server.ratings.models import Rating, RatingFit
from server.ratings.promotion import check_rollback, gating_settings

log = logging.getLogger(__name__)

BLACK_SCORE = {Winner.BLACK: 1.0, Winner.WHITE: 0.0, Winner.DRAW: 0.5, Winner.NONE: 0.5}


def refit(run) -> tuple[list[Network], Ratings]:
    """Fit the run's ratings and store them; returns the networks (oldest first) and the fit.
    Raises FitError (nothing stored) when the games leave a rating unbounded, which only a run
    without a prior (``virtual_draws`` 0) allows."""
    t0 = time.perf_counter()
    networks = list(run.networks.order_by("created_at", "id"))
    index = {n.pk: k for k, n in enumerate(networks)}
    anchor = next((k for k, n in enumerate(networks) if n.is_random), 0)
    # The prior ties each network to its parent; one without a parent (in this run) to the anchor, so
    # that a network that won or lost all its games still has a finite rating.
    parents = np.array([index.get(n.parent_id, anchor) for n in networks], dtype=np.int64)
    parents[anchor] = -1
    rows = (
        RatingGame.objects.filter(run=run, disabled=False)
        .values_list("black_network_id", "white_network_id", "winner")
        .annotate(n=Count("id"))
        .order_by()
    )
    black, white, score, counts = [], [], [], []
    for b, w, winner, n in rows:
        if b in index and w in index and b != w:
            black.append(index[b])
            white.append(index[w])
            score.append(BLACK_SCORE.get(winner, 0.5))
            counts.append(n)
    prior = gating_settings(run).virtual_draws
    fit = fit_ratings(
        len(networks),
        np.array(black, dtype=np.int64),
        np.array(white, dtype=np.int64),
        np.array(score),
        parents=parents,
        virtual_draws=prior,
        anchor=anchor,
        counts=np.array(counts, dtype=np.float64),
    )
    now = timezone.now()
    ratings = [
        Rating(network=n, elo=_finite(fit.elo[k]), elo_se=_finite(fit.se[k]), games=int(fit.games[k]), updated_at=now)
        for k, n in enumerate(networks)
    ]
    with transaction.atomic():
        Rating.objects.bulk_create(
            ratings,
            update_conflicts=True,
            unique_fields=["network"],
            update_fields=["elo", "elo_se", "games", "updated_at"],
        )
        RatingFit.objects.update_or_create(
            run=run,
            defaults={
                "fitted_at": now,
                "games": int(sum(counts)),
                "networks": len(networks),
                "iterations": fit.iterations,
                "seconds": time.perf_counter() - t0,
            },
        )
    log.info(
        "run %s: ratings of %d networks refitted from %d games in %.2f s",
        run.name,
        len(networks),
        int(sum(counts)),
        time.perf_counter() - t0,
    )
    check_rollback(run, networks, fit)
    return networks, fit


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None
