"""Gumbel search's formulas (Danihelka, Guez, Schrittwieser and Silver, "Policy improvement by
planning with Gumbel", ICLR 2022), in the form the search's kernels take them: plain loops over a
node's edges, compiled, on arrays the caller owns.

At the root, the search considers ``m`` moves: those of highest g(a) + logit(a), with g(a) drawn from
Gumbel(0, 1) for every legal move (Gumbel-top-k: a sample of m moves without replacement from the
policy). Sequential halving shares the simulations out among them over ceil(log2 m) phases: in a
phase, each move still considered gets max(1, floor(n / (ceil(log2 m) * considered))) more visits;
then the better half by g + logit + sigma(q) stays, down to two moves, which share what is left. The
move played is the one of highest g + logit + sigma(q) among the most visited.
:func:`considered_visit` gives the visit count the k-th simulation goes to, so that a rule that takes,
among the moves with exactly that many visits, the one of highest score (:func:`root_choice`) carries
out the whole schedule without keeping any state of it.

Completed Q (the paper's appendix D): a visited child's mean utility; for an unvisited one the mixed
value v_mix = (v + N * sum_visited p(a) q(a) / sum_visited p(a)) / (1 + N), with v the network's value
of the node and N its children's visits. sigma(q) = (c_visit + max_b N(b)) * c_scale * q, after q is
rescaled to [0, 1] by the smallest and largest completed Q among the node's moves. The improved
policy, softmax(logit + sigma(completed Q)), is the policy target; below the root a descent takes
argmax_a pi'(a) - N(a) / (1 + N) (:func:`interior_choice`), whose visit counts follow pi' (section 5).

Utilities are the player to move's; a move of prior 0 (illegal, or pruned) is never considered.
"""

from __future__ import annotations

import math

from numba import njit

from common.go.playout import rand_unit

_RESCALE_EPSILON = 1e-8  # the least range of completed Q that is rescaled to [0, 1]


@njit(cache=True, _nrt=False)
def considered_visit(m, simulations, k):
    """The visit count of the moves the k-th simulation (from 0) chooses among, when sequential
    halving considers m moves for ``simulations`` simulations."""
    if m <= 1:
        return k
    phases = 0
    while (1 << phases) < m:  # ceil(log2 m)
        phases += 1
    considered = m
    start = 0  # the first simulation of the phase
    visits = 0  # what each considered move has when the phase starts
    while True:
        extra = max(1, simulations // (phases * considered))
        if k < start + extra * considered:
            return visits + (k - start) // considered
        start += extra * considered
        visits += extra
        considered = max(2, considered // 2)


@njit(cache=True, _nrt=False)
def gumbel_draw(rng):
    """A draw from Gumbel(0, 1), from the game's generator."""
    return -math.log(-math.log(max(rand_unit(rng), 1e-300)))


@njit(cache=True, _nrt=False)
def mixed_value(value, q, visits, prior, n):
    """v_mix of a node whose network value is ``value`` and whose first n moves have these mean
    utilities q (read only where visited), visits and priors."""
    total = 0.0
    prior_sum = 0.0
    weighted = 0.0
    for a in range(n):
        if visits[a] > 0:
            total += visits[a]
            prior_sum += prior[a]
            weighted += prior[a] * q[a]
    if total == 0.0:
        return value
    if prior_sum > 0.0:
        mean = weighted / prior_sum
    else:  # visited moves of prior 0 (a forced one): their plain mean
        mean = 0.0
        for a in range(n):
            if visits[a] > 0:
                mean += q[a] * visits[a]
        mean /= total
    return (value + total * mean) / (1.0 + total)


@njit(cache=True, _nrt=False)
def transformed_q(value, q, visits, prior, n, c_visit, c_scale, out):
    """sigma(completed Q) of the first n moves, into out: each visited move's q, the mixed value for
    the others, rescaled to [0, 1] over the moves of prior above 0 and scaled by
    (c_visit + max visits) * c_scale."""
    fill = mixed_value(value, q, visits, prior, n)
    low = math.inf
    high = -math.inf
    most = 0.0
    for a in range(n):
        out[a] = q[a] if visits[a] > 0 else fill
        if prior[a] > 0.0 or visits[a] > 0:
            low = min(low, out[a])
            high = max(high, out[a])
        most = max(most, visits[a])
    scale = (c_visit + most) * c_scale / max(high - low, _RESCALE_EPSILON)
    for a in range(n):
        out[a] = (out[a] - low) * scale if high >= low else 0.0


@njit(cache=True, _nrt=False)
def improved_policy(prior, sigma, n, out):
    """softmax(logit + sigma) over the first n moves, into out; a move of prior 0 gets 0 (all of
    them when every prior is 0)."""
    top = -math.inf
    for a in range(n):
        if prior[a] > 0.0:
            top = max(top, math.log(prior[a]) + sigma[a])
    total = 0.0
    for a in range(n):
        out[a] = math.exp(math.log(prior[a]) + sigma[a] - top) if prior[a] > 0.0 else 0.0
        total += out[a]
    for a in range(n):
        out[a] = out[a] / total if total > 0.0 else 0.0


@njit(cache=True, _nrt=False)
def interior_choice(policy, visits, n):
    """The move a descent takes below the root: argmax pi'(a) - N(a) / (1 + N), first among equals
    (-1 when no move has policy above 0)."""
    total = 0.0
    for a in range(n):
        total += visits[a]
    best = -1
    best_value = -math.inf
    for a in range(n):
        if policy[a] > 0.0:
            value = policy[a] - visits[a] / (1.0 + total)
            if value > best_value:
                best_value = value
                best = a
    return best


@njit(cache=True, _nrt=False)
def root_choice(gumbel, prior, sigma, visits, n, wanted):
    """Among the first n moves with exactly ``wanted`` visits (and prior above 0), the one of highest
    g + logit + sigma; -1 when there is none."""
    best = -1
    best_value = -math.inf
    for a in range(n):
        if prior[a] > 0.0 and visits[a] == wanted:
            value = gumbel[a] + math.log(prior[a]) + sigma[a]
            if value > best_value:
                best_value = value
                best = a
    return best
