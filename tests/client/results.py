"""Search results made by hand, for the tests of what is derived from a finished search."""

from __future__ import annotations

import numpy as np

from client.search.engine import SearchResult


def root_result(visits, utility, priors=None, utility_sq=None) -> SearchResult:
    """A finished search's root with children of these visits and mean utilities (the root player's
    view), priors (uniform if not given) and mean squared utilities (if not given, as if every visit
    had the mean's utility); the other statistics zero."""
    n = len(visits)
    utility = np.array(utility, np.float64)
    z = np.zeros(n)
    priors = np.full(n, 1.0 / n) if priors is None else np.array(priors, np.float64)
    return SearchResult(
        pla=1,
        moves=np.arange(1, n + 1),
        visits=np.array(visits),
        weights=np.array(visits, np.float64),
        weights_sq=np.array(visits, np.float64),
        priors=priors,
        raw_priors=priors.copy(),
        utility=utility,
        winloss=utility.copy(),
        score=z,
        lead=z,
        score_sq=z,
        utility_sq=utility**2 if utility_sq is None else np.array(utility_sq, np.float64),
        root_visits=sum(visits) + 1,
        root_weight=float(sum(visits) + 1),
        root_utility=0.0,
        root_utility_sq=0.0,
        root_winloss=0.0,
        root_score=0.0,
        root_score_sq=0.0,
        root_lead=0.0,
        raw_winloss=0.0,
        raw_score=0.0,
        raw_score_stdev=0.0,
        raw_lead=0.0,
        nn_evals=0,
        cache_hits=0,
        terminal_visits=0,
        collisions=0,
    )
