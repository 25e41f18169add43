"""How one search runs. Each field marked ``kernel`` reaches the search kernel under its own name:
client/search/tree.py builds its per-game record from them, and client/search/engine.py fills it
from these settings by name."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from common.settings.framework import Settings, at, decayed, need, probability, setting


@dataclass(frozen=True)
class SearchSettings(Settings):
    """How one search runs (paper section 5; values from section 5.1-5.4 and the methods page).

    The root's policy temperature decays from ``root_policy_temperature_early`` to
    ``root_policy_temperature`` with a half-life of one board length in turns (the methods page's
    g170 values; the paper's earlier runs used a constant 1.03).
    """

    cpuct: float = setting(1.1, 0.0, lo_open=True, kernel=True)
    fpu_reduction: float = setting(0.2, 0.0, 2.0, kernel=True)  # first-play urgency reduction inside the tree
    # at the root (self-play full searches; 0.2 in match games)
    root_fpu_reduction: float = setting(0.0, 0.0, 2.0, kernel=True)
    root_noise: bool = setting(True, kernel=True)  # Dirichlet noise on full searches
    noise_weight: float = probability(0.25, kernel=True)
    # 0.03 * 19^2, spread over the legal moves
    noise_total_concentration: float = setting(10.83, 0.0, lo_open=True, kernel=True)
    # half uniform, half on moves whose logits stand out (methods page)
    noise_shaped: bool = setting(True, kernel=True)
    root_policy_temperature_early: float = setting(1.25, 0.0, 10.0, lo_open=True)
    root_policy_temperature: float = setting(1.1, 0.0, 10.0, lo_open=True)
    # forced playouts at the root and target pruning (section 5.3)
    forced_playouts: bool = setting(True, kernel=True)
    forced_playout_coeff: float = setting(2.0, 0.0, kernel=True)  # k in n_forced = sqrt(k P(c) sum N)
    # c_score (section 5.4: 0.5, annealed to 0.4 and 0.3)
    score_utility_factor: float = setting(0.5, 0.0, 10.0, kernel=True)
    virtual_loss: float = setting(1.0, 0.0, 10.0, kernel=True)  # utility each in-flight visit counts as losing
    # The exploration term's power of the parent's visits: 0.5 is PUCT's square root; Cazenave's
    # Generalized PUCT (GPUCT, his section 3.2) takes 0.737 (with c = 0.057 on his value scale), so
    # that the best constant stays the same as the visits grow.
    puct_exponent: float = setting(0.5, 0.0, 1.0, lo_open=True, kernel=True)
    # Dynamic variance-scaled cPUCT (methods page): each node's cPUCT times
    # 1 + scale * (stdev / prior - 1), stdev its visits' utility deviation with a prior of
    # cpuct_utility_stdev_prior weighing cpuct_utility_stdev_prior_weight visits; scale 0 keeps cPUCT
    # constant (KataGo's match and GTP play: scale 0.85, prior 0.40, weight 2).
    cpuct_utility_stdev_scale: float = setting(0.0, 0.0, 1.0, kernel=True)
    cpuct_utility_stdev_prior: float = setting(0.40, 0.0, 10.0, lo_open=True, kernel=True)
    cpuct_utility_stdev_prior_weight: float = setting(2.0, 0.0, 1e6, kernel=True)
    # Subtree value bias correction (methods page): a node's utility corrected by lambda = factor times
    # the average error of the network against the subtrees of the nodes sharing its local pattern,
    # each weighing its child visits to the power exponent (the page's lambda 0.35, alpha 0.8);
    # free_prop of a discarded node's share leaves its bucket at a move (KataGo's 0.8). 0: off.
    subtree_value_bias_factor: float = setting(0.0, 0.0, 1.0, kernel=True)
    subtree_value_bias_exponent: float = setting(0.8, 0.0, 2.0, kernel=True)
    subtree_value_bias_free_prop: float = probability(0.8, kernel=True)
    # Uncertainty-weighted playouts (methods page): with a network that predicts its short-term
    # errors, each visit weighs coeff / (u^exponent + coeff / max_weight), u the evaluation's
    # utility uncertainty (KataGo's useUncertainty, uncertaintyCoeff 0.25, uncertaintyExponent 1,
    # uncertaintyMaxWeight 8); without such heads every visit weighs 1 as before.
    uncertainty_weighted: bool = setting(False, kernel=True)
    uncertainty_coeff: float = setting(0.25, 0.0, 100.0, lo_open=True, kernel=True)
    uncertainty_exponent: float = setting(1.0, 0.0, 2.0, lo_open=True, kernel=True)
    uncertainty_max_weight: float = setting(8.0, 1.0, 1000.0, kernel=True)
    # The optimistic policy (methods page): with a network that has the head, the priors come from
    # logits p + optimism * (p_optimistic - p), root_policy_optimism at the root and policy_optimism
    # below it (KataGo's policyOptimism and rootPolicyOptimism; its GTP play takes 1 and 0.2).
    policy_optimism: float = probability(0.0, kernel=True)
    root_policy_optimism: float = probability(0.0, kernel=True)
    # Gumbel search (Danihelka, Guez, Schrittwieser and Silver, ICLR 2022; client/search/gumbel.py): at
    # the root, sequential halving over the gumbel_considered moves of highest g + logit, g drawn from
    # Gumbel(0, 1) where root_noise is on (0 elsewhere), in place of the Dirichlet noise and the root's
    # policy temperature; below it, the deterministic choice whose visits follow the improved policy
    # softmax(logit + sigma(completed Q)), sigma = (c_visit + max visits) * c_scale * Q rescaled to
    # [0, 1]. The improved policy is the policy target (no forced playouts, no pruning), and the move
    # played the best of the most visited by g + logit + sigma. mctx's defaults: 16, 50 and 0.1.
    gumbel: bool = setting(False, kernel=True)
    gumbel_considered: int = setting(16, 1, 362, kernel=True)
    gumbel_c_visit: float = setting(50.0, 0.0, 1e6, kernel=True)
    gumbel_c_scale: float = setting(0.1, 0.0, 100.0, lo_open=True, kernel=True)
    symmetries: str = "random"  # network input symmetry per evaluation: "random" or "none"
    # The move to play (not the policy target) by lower confidence bound, as KataGo's match and GTP
    # play: among moves with at least lcb_min_visit_prop of the top visits, the best utility minus
    # lcb_stdevs standard errors (KataGo's useLcbForSelection, lcbStdevs, minVisitPropForLCB).
    lcb_for_selection: bool = False
    lcb_stdevs: float = setting(5.0, 0.0, 100.0, lo_open=True)
    lcb_min_visit_prop: float = probability(0.15)

    def check(self, path: str) -> None:
        need(
            self.symmetries in ("random", "none"),
            at(path, "symmetries"),
            f"must be 'random' or 'none', got {self.symmetries!r}",
        )

    def root_policy_temperature_at(self, turn: int, board_length: float) -> float:
        return decayed(self.root_policy_temperature_early, self.root_policy_temperature, turn, board_length)

    def for_cheap_search(self) -> SearchSettings:
        """Section 6.1: cheap searches play for strength: no noise, no forced playouts, and the
        tree's first-play urgency at the root too."""
        return _cheap_search_settings(self)


@functools.lru_cache(maxsize=64)
def _cheap_search_settings(settings: SearchSettings) -> SearchSettings:
    return dataclasses.replace(
        settings, root_noise=False, forced_playouts=False, root_fpu_reduction=settings.fpu_reduction
    )
