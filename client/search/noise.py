"""Root exploration: the policy softmax temperature and shaped Dirichlet noise (paper section 5.2,
methods page "Shaped Dirichlet Noise" and "Root Policy Softmax Temperature").

Noise: P(c) = (1 - w) P_T(c) + w D(c), D ~ Dirichlet(alpha), the alphas summing to the total
concentration (10.83 = 0.03 * 19^2). Half of the total is spread uniformly over the legal moves; the
other half in proportion to max(0, log(min(P_T, 0.01) + 1e-20) - mean over legal moves of the same),
which concentrates it on the moves whose logits stand out from the mass of unlikely ones. Gamma
draws come from the game's own generator, so a seeded search is reproducible.
"""

from __future__ import annotations

import math

from numba import njit

from common.go.playout import rand_unit

_SHAPE_CAP = 0.01
_SHAPE_FLOOR = 1e-20


@njit(cache=True)
def rand_normal(rng):
    """A standard normal draw (Box-Muller)."""
    u = rand_unit(rng)
    v = rand_unit(rng)
    return math.sqrt(-2.0 * math.log(1.0 - u)) * math.cos(2.0 * math.pi * v)


@njit(cache=True)
def rand_gamma(rng, alpha):
    """A Gamma(alpha, 1) draw (Marsaglia and Tsang; alpha < 1 boosted by U^(1/alpha))."""
    if alpha <= 0.0:
        return 0.0
    boost = 1.0
    if alpha < 1.0:
        boost = (1.0 - rand_unit(rng)) ** (1.0 / alpha)
        alpha += 1.0
    d = alpha - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = rand_normal(rng)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = 1.0 - rand_unit(rng)
        if math.log(u) < 0.5 * x * x + d - d * v + d * math.log(v):
            return d * v * boost


@njit(cache=True)
def apply_temperature(probs, n, temperature):
    """probs[:n] <- probs^(1/T), renormalized (in place)."""
    if temperature == 1.0:
        return
    inv = 1.0 / temperature
    total = 0.0
    for k in range(n):
        if probs[k] > 0.0:
            probs[k] = probs[k] ** inv
            total += probs[k]
    if total > 0.0:
        for k in range(n):
            probs[k] /= total


@njit(cache=True)
def dirichlet_alphas(probs, n, total_concentration, shaped, out):
    """out[:n]: the Dirichlet parameters of n legal moves with root priors probs[:n]."""
    uniform = 1.0 / n
    if not shaped:
        for k in range(n):
            out[k] = total_concentration * uniform
        return
    mean = 0.0
    for k in range(n):
        out[k] = math.log(min(_SHAPE_CAP, probs[k]) + _SHAPE_FLOOR)
        mean += out[k]
    mean /= n
    prop = 0.0
    for k in range(n):
        out[k] = max(0.0, out[k] - mean)
        prop += out[k]
    for k in range(n):
        share = uniform if prop <= 0.0 else 0.5 * (out[k] / prop + uniform)
        out[k] = total_concentration * share


@njit(cache=True)
def add_noise(probs, n, weight, total_concentration, shaped, rng, scratch):
    """Mix Dirichlet noise into probs[:n] in place; scratch is float64[>= n]."""
    dirichlet_alphas(probs, n, total_concentration, shaped, scratch)
    total = 0.0
    for k in range(n):
        scratch[k] = rand_gamma(rng, scratch[k])
        total += scratch[k]
    if total <= 0.0:
        return
    for k in range(n):
        probs[k] = (1.0 - weight) * probs[k] + weight * scratch[k] / total
