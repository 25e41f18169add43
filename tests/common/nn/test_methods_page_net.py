"""The methods page's network: fixed variance initialisation with one batch norm, the short-term
heads and the optimistic policy, and their loss terms."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from common.architecture import (
    MISC_SHORTTERM_SCORE,
    MISC_SHORTTERM_SCORE_ERROR,
    MISC_SHORTTERM_VALUE,
    MISC_SHORTTERM_VALUE_ERROR,
    OPTIMISTIC_POLICY_CHANNEL,
)
from common.data.schema import GT_ONE_MINUS_TD_WEIGHT, GT_TD_SHORT
from common.nn.loss import LossWeights, compute_loss, loss_terms_per_row, targets_from_rows
from common.nn.model import MaskedBatchNorm, MobileBlock, Model, NestedBottleneckBlock, named_config
from tests.common.nn.nets import random_inputs
from tests.common.nn.test_loss import (
    SHORTTERM_TERMS,
    TERM_WEIGHT,
    make_output,
    make_targets,
    only,
    spatial_inputs,
)


def scale(norm: MaskedBatchNorm) -> torch.Tensor:
    """The factor a norm applies to its input (before its learnt weight)."""
    return 1.0 / torch.sqrt(norm.running_var + norm.eps)


def test_each_fixed_norm_scales_by_the_inverse_root_of_the_variance_it_reads():
    model = Model(named_config("b6c96nbt"))
    for i, block in enumerate(model.blocks):
        assert isinstance(block, NestedBottleneckBlock)
        torch.testing.assert_close(scale(block.norm_in), torch.full((96,), 1 / math.sqrt(1 + i)))
        for j, inner in enumerate(block.inner):
            torch.testing.assert_close(scale(inner.norm1), torch.full((48,), 1 / math.sqrt(1 + j)))
        torch.testing.assert_close(scale(block.norm_out), torch.full((48,), 1 / math.sqrt(3)))
    torch.testing.assert_close(scale(model.norm_trunk), torch.full((96,), 1 / math.sqrt(7)))
    gpool = model.blocks[2].inner[0]
    torch.testing.assert_close(scale(gpool.norm2), torch.full((32,), 1 / math.sqrt(2)))
    assert all(m.fixed for m in model.modules() if isinstance(m, MaskedBatchNorm) and m is not model.norm_trunk_bn)
    assert not model.norm_trunk_bn.fixed


@pytest.mark.parametrize("name", ["b6c96nbt", "b17c64mobile"])
def test_a_fresh_trunk_keeps_what_each_norm_passes_on_near_variance_1(name):
    """The point of the rule: however deep, each norm's output has about the same size at first; with
    every scale 1 instead, the trunk's sum of blocks grows without bound."""
    torch.manual_seed(0)
    spatial, global_inputs = random_inputs([(19, 19)] * 4)
    mask = spatial[:, 0:1]

    def second_moments(model: Model) -> list[float]:
        moments: list[float] = []
        first_norms = [b.norm_in if isinstance(b, NestedBottleneckBlock) else b.norm1 for b in model.blocks]
        hooks = [
            norm.register_forward_hook(
                lambda _m, _i, out: moments.append(float(out.square().sum() / (mask.sum() * out.shape[1])))
            )
            for norm in [*first_norms, model.norm_trunk]
        ]
        with torch.no_grad():
            model.eval()(spatial, global_inputs)
        for hook in hooks:
            hook.remove()
        return moments

    model = Model(named_config(name))
    fixed = second_moments(model)
    assert all(0.25 < m < 2.0 for m in fixed), fixed
    with torch.no_grad():  # every scale 1: what a fixed-variance norm without the rule would do
        for m in model.modules():
            if isinstance(m, MaskedBatchNorm) and m.fixed:
                m.running_var.fill_(1.0 - m.eps)
    unscaled = second_moments(model)
    assert unscaled[-1] > 3 * fixed[-1]


def test_fixed_norms_keep_their_scale_in_training_and_the_one_batch_norm_learns_the_statistics():
    model = Model(named_config("tinymobile")).train()
    before = {name: t.clone() for name, t in model.state_dict().items() if "running" in name}
    spatial, global_inputs = random_inputs([(9, 9), (19, 19)])
    out = model(spatial, global_inputs)
    after = model.state_dict()
    moved = {name for name in before if not torch.equal(before[name], after[name])}
    assert moved == {"norm_trunk_bn.running_mean", "norm_trunk_bn.running_var"}
    assert out.normalized is not None and out.normalized.policy.shape == out.policy.shape
    assert not torch.equal(out.normalized.policy, out.policy)  # two sets of heads, two trunks' views
    with torch.no_grad():
        assert model.eval()(spatial, global_inputs).normalized is None  # inference runs one set


def test_fixed_variance_nets_start_with_every_block_adding_to_the_trunk():
    model = Model(named_config("tinynbt"))
    assert all(block.conv_out.weight.abs().sum() > 0 for block in model.blocks)
    mobile = Model(named_config("tinymobile"))
    assert all(isinstance(b, MobileBlock) and b.conv_project.weight.abs().sum() > 0 for b in mobile.blocks)
    paper = Model(dataclasses.replace(named_config("tinynbt"), norm="batch"))
    assert all(block.conv_out.weight.abs().sum() == 0 for block in paper.blocks)


def test_the_loss_gives_the_heads_behind_the_batch_norm_80_percent():
    t = make_targets(2, size=9)
    t.value[:, 0] = 1.0
    t.value_weight.fill_(1.0)
    inference, normalized = make_output(2), make_output(2)
    normalized.value[:, 0] = 3.0  # it predicts the win far better
    weights = only("value")
    alone = {name: compute_loss(out, t, weights)[0].item() for name, out in (("i", inference), ("n", normalized))}
    inference.normalized = normalized
    total, _ = compute_loss(inference, t, weights)
    assert total.item() == pytest.approx(0.8 * alone["n"] + 0.2 * alone["i"], rel=1e-6)
    total, _ = compute_loss(inference, t, dataclasses.replace(weights, w_normalized=0.5))
    assert total.item() == pytest.approx(0.5 * alone["n"] + 0.5 * alone["i"], rel=1e-6)


# -- the short-term heads' terms --------------------------------------------------------------------


def shortterm_case(n: int = 1):
    """Targets with the short-term targets at full weight and an output with the heads (all zero)."""
    t = make_targets(n, size=9)
    t.td_weight.fill_(1.0)
    return t, make_output(n, policy_channels=5, misc_columns=14)


def test_shortterm_value_is_a_cross_entropy_weighted_12_and_by_the_td_weight():
    t, out = shortterm_case(2)
    t.shortterm_value[:] = torch.tensor([0.5, 0.25, 0.25])
    out.misc[:, MISC_SHORTTERM_VALUE] = torch.tensor([math.log(2.0), 0.0, 0.0])  # softmax 1/2, 1/4, 1/4
    t.td_weight[1] = 0.0
    _, terms = compute_loss(out, t, only("shortterm_value"))
    entropy = -(0.5 * math.log(0.5) + 0.5 * math.log(0.25))
    assert terms["shortterm_value"].item() == pytest.approx(1.2 * entropy / 2, rel=1e-5)


def test_shortterm_score_is_a_huber_loss_delta_12_of_20_times_misc_13():
    t, out = shortterm_case()
    t.shortterm_score[0] = 5.0
    out.misc[0, MISC_SHORTTERM_SCORE] = 0.5  # predicts 10 points
    _, terms = compute_loss(out, t, only("shortterm_score"))
    assert terms["shortterm_score"].item() == pytest.approx(0.0004 * 25 / 2, rel=1e-5)
    t.shortterm_score[0] = 40.0  # 30 points off: the linear part
    _, terms = compute_loss(out, t, only("shortterm_score"))
    assert terms["shortterm_score"].item() == pytest.approx(0.0004 * 12 * (30 - 6), rel=1e-5)


def test_the_error_heads_learn_the_squared_miss_without_moving_the_predictions():
    t, out = shortterm_case()
    t.shortterm_value[0] = torch.tensor([1.0, 0.0, 0.0])  # the side to move won the next turns: +1
    t.shortterm_score[0] = 6.0
    out.misc[0, MISC_SHORTTERM_SCORE] = 0.1  # predicts 2 points: misses by 4, squared 16
    out.misc[0, MISC_SHORTTERM_VALUE_ERROR] = -2.0
    out.misc[0, MISC_SHORTTERM_SCORE_ERROR] = -1.0
    out.misc.requires_grad_()
    total, terms = compute_loss(out, t, only("shortterm_value_error", "shortterm_score_error"))
    softplus = torch.nn.functional.softplus
    value_pred = 0.25 * float(softplus(torch.tensor(-2.0)))
    value_miss = (1.0 - 0.0) ** 2 + 1e-8  # the prediction's win minus loss is 1/3 - 1/3 = 0
    expected_value = 2.0 * 0.4 * (abs(value_pred - value_miss) - 0.2)
    assert terms["shortterm_value_error"].item() == pytest.approx(expected_value, rel=1e-5)
    score_pred = 30.0 * float(softplus(torch.tensor(-1.0)))
    expected_score = 0.00002 * (score_pred - (16 + 1e-4)) ** 2 / 2
    assert terms["shortterm_score_error"].item() == pytest.approx(expected_score, rel=1e-4)
    total.backward()
    grad = out.misc.grad[0]
    assert grad[MISC_SHORTTERM_VALUE_ERROR] != 0 and grad[MISC_SHORTTERM_SCORE_ERROR] != 0
    assert torch.all(grad[MISC_SHORTTERM_VALUE] == 0) and grad[MISC_SHORTTERM_SCORE] == 0


@pytest.mark.parametrize(
    "value_outcome, score_outcome, weight",
    [
        ([1.0, 0.0, 0.0], 0.0, 1.0),  # a win where the heads expected an even game, with a small error
        ([0.0, 1.0, 0.0], 0.0, 0.011),  # a loss: only the score's "as expected" share
        ([0.5, 0.5, 0.0], 30.0, 1.0),  # the score surprised instead
        ([0.5, 0.5, 0.0], 0.0, 0.022),  # as expected: a little weight, which keeps the head near the policy
    ],
)
def test_the_optimistic_policy_learns_the_policy_where_the_outcome_surprised(value_outcome, score_outcome, weight):
    t, out = shortterm_case()
    t.policy[0, 3] = 1.0
    t.policy_weight.fill_(1.0)
    t.ownership_weight.fill_(1.0)
    t.shortterm_value[0] = torch.tensor(value_outcome)
    t.shortterm_score[0] = score_outcome
    out.misc[0, MISC_SHORTTERM_VALUE_ERROR] = -3.0  # predicted errors: win-loss sd 0.11, score sd 1.2
    out.misc[0, MISC_SHORTTERM_SCORE_ERROR] = -3.0
    _, terms = compute_loss(out, t, only("optimistic_policy"))
    ce = math.log(82)  # a flat policy over the 81 points and pass
    assert terms["optimistic_policy"].item() == pytest.approx(0.2 * weight * ce, rel=0.05, abs=1e-6)
    t.ownership_weight.fill_(0.0)  # a side position or an unfinished game: never
    _, terms = compute_loss(out, t, only("optimistic_policy"))
    assert terms["optimistic_policy"].item() == 0.0


def test_the_optimistic_policy_trains_only_its_own_channel():
    t, out = shortterm_case()
    t.policy[0, 3] = 1.0
    t.policy_weight.fill_(1.0)
    t.ownership_weight.fill_(1.0)
    t.shortterm_value[0] = torch.tensor([1.0, 0.0, 0.0])
    out.policy.requires_grad_()
    out.misc.requires_grad_()
    total, _ = compute_loss(out, t, only("optimistic_policy"))
    total.backward()
    grad = out.policy.grad[0].abs().sum(dim=1)
    assert grad[OPTIMISTIC_POLICY_CHANNEL] > 0 and grad[:OPTIMISTIC_POLICY_CHANNEL].sum() == 0
    assert out.misc.grad.abs().sum() == 0  # the weighting moves neither the predictions nor the errors


def test_targets_read_the_short_horizon_and_the_td_weight(golden_rows):
    rows = {name: array[:16] for name, array in golden_rows.items()}
    t = targets_from_rows(rows)
    g = rows["globalTargetsNC"]
    np.testing.assert_allclose(t.shortterm_value.numpy(), g[:, GT_TD_SHORT : GT_TD_SHORT + 3])
    np.testing.assert_allclose(t.shortterm_score.numpy(), g[:, GT_TD_SHORT + 3])
    np.testing.assert_allclose(t.td_weight.numpy(), 1.0 - g[:, GT_ONE_MINUS_TD_WEIGHT])
    assert t.td_weight.sum() > 0 and t.shortterm_score.abs().sum() > 0


@pytest.mark.parametrize("name", ["tinynbt", "tinymobile"])
def test_a_fresh_methods_page_net_trains_every_term_on_katago_rows(golden_rows, name):
    rows = {key: array[:32] for key, array in golden_rows.items()}
    spatial, global_inputs = spatial_inputs(rows)
    t = targets_from_rows(rows, mask=spatial[:, 0].numpy())
    torch.manual_seed(0)
    model = Model(named_config(name)).train()
    out = model(spatial, global_inputs)
    per_row = loss_terms_per_row(out, t, LossWeights())
    assert set(per_row) == set(TERM_WEIGHT)
    for term in set(TERM_WEIGHT) - {"root_variance"}:
        assert per_row[term].sum().item() > 0, term
    assert set(SHORTTERM_TERMS) <= set(per_row)
    total, _ = compute_loss(out, t)
    total.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    for value_head in (model.value_head, model.value_head_bn):
        assert torch.all(value_head.linear_misc.weight.grad[8:14].abs().sum(dim=1) > 0)
    for policy_head in (model.policy_head, model.policy_head_bn):
        assert policy_head.conv_p2.weight.grad[OPTIMISTIC_POLICY_CHANNEL].abs().sum() > 0
