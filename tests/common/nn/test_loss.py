"""The training loss: each term on hand-computed cases, masking, row weights, gradients, KataGo's rows."""

import dataclasses
import math

import numpy as np
import pytest
import torch

from common.encoding.features import NN_AREA, NN_LEN, POLICY_LEN
from common.nn.loss import (
    PAPER_ROOT_VARIANCE_WEIGHT,
    LossWeights,
    Targets,
    compute_loss,
    loss_terms_per_row,
    score_bucket_values,
    soft_policy_target,
    targets_from_rows,
)
from common.nn.model import MISC_LEAD, MISC_ROOT_VARIANCE, MISC_VARIANCE_TIME, Model, named_config
from common.nn.outputs import SCORE_BELIEF_LEN, ModelOutput

PASS = NN_AREA
LN2, LN3, LN6 = math.log(2), math.log(3), math.log(6)

# Which LossWeights field scales each term, so a test can switch all the others off.
TERM_WEIGHT = {
    "policy": "w_policy",
    "opponent_policy": "w_opp",
    "soft_policy": "w_soft_policy",
    "soft_opponent_policy": "w_soft_opponent_policy",
    "value": "c_value",
    "ownership": "ownership_scale",
    "score_pdf": "w_spdf",
    "score_cdf": "w_scdf",
    "lead": "w_lead",
    "variance_time": "w_variance_time",
    "root_variance": "w_rv",
    "score_mean_reg": "w_sbreg",
    "score_stdev_reg": "w_sbreg",
    "score_scale": "w_scale",
    "shortterm_value": "w_stv",
    "shortterm_score": "w_sts",
    "shortterm_value_error": "w_stve",
    "shortterm_score_error": "w_stse",
    "optimistic_policy": "w_optimistic",
}


SHORTTERM_TERMS = (
    "shortterm_value",
    "shortterm_score",
    "shortterm_value_error",
    "shortterm_score_error",
    "optimistic_policy",
)


def only(*terms: str, **changes: float) -> LossWeights:
    """Default weights for the named terms, zero for every other term (w_rv is 0 by default)."""
    keep = {TERM_WEIGHT[t] for t in terms}
    zeros = {field: 0.0 for field in set(TERM_WEIGHT.values()) - keep}
    return dataclasses.replace(LossWeights(), **zeros, **changes)


def board_mask(n: int, size: int) -> torch.Tensor:
    """A size x size board in the top-left corner of the 19x19 grid, for each of n rows."""
    mask = torch.zeros(n, NN_LEN, NN_LEN)
    mask[:, :size, :size] = 1.0
    return mask


def point(y: int, x: int) -> int:
    return y * NN_LEN + x


def make_targets(n: int, size: int = 19) -> Targets:
    """Row weight 1, every other weight 0, all targets zero."""
    z = torch.zeros
    return Targets(
        mask=board_mask(n, size),
        policy=z(n, POLICY_LEN),
        policy_weight=z(n),
        opponent_policy=z(n, POLICY_LEN),
        opponent_policy_weight=z(n),
        value=z(n, 3),
        value_weight=z(n),
        score_distribution=z(n, SCORE_BELIEF_LEN),
        final_score=z(n),
        ownership=z(n, NN_LEN, NN_LEN),
        ownership_weight=z(n),
        lead=z(n),
        lead_weight=z(n),
        variance_time=z(n),
        row_weight=torch.ones(n),
        root_variance=z(n, 4),
        root_variance_weight=z(n, 4),
        shortterm_value=z(n, 3),
        shortterm_score=z(n),
        td_weight=z(n),
    )


def make_output(n: int, policy_channels: int = 4, misc_columns: int = 8) -> ModelOutput:
    z = torch.zeros
    return ModelOutput(
        policy=z(n, policy_channels, POLICY_LEN),
        value=z(n, 3),
        misc=z(n, misc_columns),
        ownership=z(n, NN_LEN, NN_LEN),
        score_belief=torch.log_softmax(z(n, SCORE_BELIEF_LEN), dim=-1),
        score_belief_gamma=z(n, 1),
    )


def belief(probabilities: dict[int, float]) -> torch.Tensor:
    """Log-probabilities with the given mass on the given buckets and (numerically) none elsewhere."""
    logp = torch.full((SCORE_BELIEF_LEN,), -1e4)
    for bucket, p in probabilities.items():
        logp[bucket] = math.log(p)
    return logp


def check_alone(out: ModelOutput, targets: Targets, term: str, expected: float, **changes: float) -> None:
    total, terms = compute_loss(out, targets, only(term, **changes))
    assert terms[term].item() == pytest.approx(expected, rel=1e-5, abs=1e-7)
    assert total.item() == pytest.approx(expected, rel=1e-5, abs=1e-7)


# A 2x2 board: legal moves are the points 0, 1, 19, 20 and pass. Off-board logits are set huge so
# that any leak through the mask would change the result.
SMALL_POINTS = [point(0, 0), point(0, 1), point(1, 0), point(1, 1)]


def small_board_logits(n: int = 1) -> torch.Tensor:
    logits = torch.full((n, POLICY_LEN), 50.0)
    for p in [*SMALL_POINTS, PASS]:
        logits[:, p] = 0.0
    logits[:, point(0, 0)] = LN2
    return logits


# exp(logits) over the legal moves: 2, 1, 1, 1, 1 (pass) -> softmax 1/3 at (0,0), 1/6 at each other move.


def test_policy_term_cross_entropy_over_on_board_moves_and_pass():
    out, t = make_output(1), make_targets(1, size=2)
    out.policy[:, 0] = small_board_logits()
    t.policy[0, point(0, 0)] = 0.5
    t.policy[0, PASS] = 0.5
    t.policy_weight[:] = 1.0
    # -(0.5 ln(1/3) + 0.5 ln(1/6)) = 0.5 ln 3 + 0.5 ln 6
    check_alone(out, t, "policy", 0.5 * LN3 + 0.5 * LN6)


def test_opponent_policy_term_has_weight_015_and_its_own_row_weight():
    out, t = make_output(1), make_targets(1, size=2)
    out.policy[:, 1] = small_board_logits()
    t.opponent_policy[0, PASS] = 1.0
    t.opponent_policy_weight[:] = 1.0
    # 0.15 * -ln(1/6)
    check_alone(out, t, "opponent_policy", 0.15 * LN6)
    t.opponent_policy_weight[:] = 0.0
    check_alone(out, t, "opponent_policy", 0.0)


def test_opponent_and_soft_terms_are_zero_without_their_policy_channels():
    out, t = make_output(1, policy_channels=1), make_targets(1, size=2)
    t.policy[0, PASS] = t.opponent_policy[0, PASS] = 1.0
    t.policy_weight[:] = t.opponent_policy_weight[:] = 1.0
    _, terms = compute_loss(out, t)
    assert terms["policy"].item() == pytest.approx(math.log(5))  # uniform over 5 legal moves
    for name in ("opponent_policy", "soft_policy", "soft_opponent_policy"):
        assert terms[name].item() == 0.0


def test_soft_policy_target_is_the_fourth_root_renormalised():
    legal = torch.zeros(1, POLICY_LEN)
    legal[0, [*SMALL_POINTS, PASS]] = 1.0
    policy = torch.zeros(1, POLICY_LEN)
    policy[0, point(0, 0)] = 16 / 17
    policy[0, PASS] = 1 / 17
    # (16/17)^(1/4) : (1/17)^(1/4) = 2 : 1
    soft = soft_policy_target(policy, legal, temperature=4.0, floor=0.0)
    assert soft[0, point(0, 0)].item() == pytest.approx(2 / 3)
    assert soft[0, PASS].item() == pytest.approx(1 / 3)
    assert soft.sum().item() == pytest.approx(1.0)

    # KataGo's floor: every legal entry gets 1e-7 before the power, so an unvisited legal move
    # gets (1e-7)^(1/4) ≈ 0.0178 of weight; off-board points get none.
    one_hot = torch.zeros(1, POLICY_LEN)
    one_hot[0, point(0, 0)] = 1.0
    soft = soft_policy_target(one_hot, legal, temperature=4.0, floor=1e-7)
    top, rest = (1 + 1e-7) ** 0.25, 1e-7**0.25
    assert soft[0, point(0, 0)].item() == pytest.approx(top / (top + 4 * rest))
    assert soft[0, PASS].item() == pytest.approx(rest / (top + 4 * rest))
    assert soft[0, point(5, 5)].item() == 0.0


def test_soft_policy_terms_weight_8_and_8_times_015():
    out, t = make_output(1), make_targets(1, size=2)
    out.policy[:, 2] = small_board_logits()
    out.policy[:, 3] = small_board_logits()
    for target in (t.policy, t.opponent_policy):
        target[0, point(0, 0)] = 16 / 17
        target[0, PASS] = 1 / 17
    t.policy_weight[:] = t.opponent_policy_weight[:] = 1.0
    # soft target 2/3 at (0,0), 1/3 at pass: -(2/3 ln(1/3) + 1/3 ln(1/6))
    ce = 2 / 3 * LN3 + 1 / 3 * LN6
    check_alone(out, t, "soft_policy", 8.0 * ce, soft_policy_floor=0.0)
    check_alone(out, t, "soft_opponent_policy", 8.0 * 0.15 * ce, soft_policy_floor=0.0)


def test_value_term_cross_entropy_times_15_and_row_weights():
    out, t = make_output(2), make_targets(2)
    out.value[0] = torch.tensor([LN2, 0.0, 0.0])  # softmax 2/4, 1/4, 1/4
    t.value[0] = torch.tensor([1.0, 0.0, 0.0])  # -ln(1/2) = ln 2
    t.value[1] = torch.tensor([0.0, 0.5, 0.5])  # uniform prediction: ln 3
    t.value_weight[:] = 1.0
    t.row_weight[:] = torch.tensor([1.0, 0.5])
    # (1.5 ln 2 * 1 + 1.5 ln 3 * 0.5) / N, N = 2
    check_alone(out, t, "value", (1.5 * LN2 + 0.5 * 1.5 * LN3) / 2)


def test_ownership_term_on_a_3x3_board_ignores_off_board_points():
    out, t = make_output(1), make_targets(1, size=3)
    x = math.atanh(0.6)  # (1 + tanh x) / 2 = 0.8
    out.ownership[0, 0, :3] = x
    t.ownership[0, 0, :3] = torch.tensor([1.0, -1.0, 0.0])
    t.ownership[0, 1:3, :3] = 1.0  # prediction 0 there: -ln(1/2) = ln 2 each, 6 points
    out.ownership[0, 10, 10] = 30.0  # off the board: would cost ~60 if it counted
    t.ownership[0, 10, 10] = -1.0
    t.ownership_weight[:] = 1.0
    # -ln 0.8 - ln 0.2 - (0.5 ln 0.8 + 0.5 ln 0.2) + 6 ln 2, times w_o = 1.5 / 9
    total = -1.5 * math.log(0.8) - 1.5 * math.log(0.2) + 6 * LN2
    check_alone(out, t, "ownership", 1.5 / 9 * total)


def test_ownership_weight_of_a_9x9_row_in_the_19x19_tensor_is_15_over_81():
    out, t = make_output(1), make_targets(1, size=9)
    out.ownership[0, 4, 4] = math.atanh(0.6)
    t.ownership[0, 4, 4] = 1.0
    t.ownership_weight[:] = 1.0
    # 80 points at ln 2, one at -ln 0.8, times 1.5 / 81
    check_alone(out, t, "ownership", 1.5 / 81 * (80 * LN2 - math.log(0.8)))


def test_score_pdf_term():
    out, t = make_output(1), make_targets(1)
    out.score_belief[0] = belief({420: 0.5, 421: 0.25, 423: 0.25})  # scores -0.5, 0.5, 2.5
    t.score_distribution[0, 420] = t.score_distribution[0, 421] = 0.5
    t.ownership_weight[:] = 1.0
    # -(0.5 ln 0.5 + 0.5 ln 0.25) = 1.5 ln 2, times 0.02
    check_alone(out, t, "score_pdf", 0.02 * 1.5 * LN2)
    t.ownership_weight[:] = 0.0
    check_alone(out, t, "score_pdf", 0.0)


def test_score_cdf_term():
    out, t = make_output(1), make_targets(1)
    out.score_belief[0] = belief({420: 0.5, 421: 0.25, 423: 0.25})
    t.score_distribution[0, 421] = 1.0
    t.ownership_weight[:] = 1.0
    # cumulative target 0 below 421, 1 from 421; predicted 0.5 at 420, 0.75 at 421 and 422, 1 from 423.
    # (0 - 0.5)² + 2 * (1 - 0.75)² = 0.25 + 0.125 = 0.375, times 0.02
    check_alone(out, t, "score_cdf", 0.02 * 0.375)


def test_score_buckets_run_from_minus_4205_to_4205():
    scores = score_bucket_values()
    assert scores.shape == (842,)
    assert scores[0].item() == -420.5 and scores[421].item() == 0.5 and scores[-1].item() == 420.5


def test_score_mean_self_prediction_huber_delta_10():
    out, t = make_output(2), make_targets(2)
    out.score_belief[:] = belief({421: 0.5, 422: 0.5})  # scores 0.5 and 1.5: mean 1
    out.misc[0, 0] = 0.5  # predicted mean 20 * 0.5 = 10: error 9 < 10, Huber 0.5 * 81 = 40.5
    out.misc[1, 0] = 3.0  # predicted 60: error 59 > 10, Huber 10 * 59 - 0.5 * 100 = 540
    # misc[:, 1] = 0 also gives a stdev error; check the mean term's own entry
    _, terms = compute_loss(out, t, only("score_mean_reg"))
    assert terms["score_mean_reg"].item() == pytest.approx(0.004 * (40.5 + 540) / 2, rel=1e-5)


def test_score_stdev_self_prediction_huber_delta_10():
    out, t = make_output(2), make_targets(2)
    out.score_belief[:] = belief({421: 0.5, 422: 0.5})
    out.misc[:, 0] = 0.05  # predicted mean 1: no mean error
    belief_stdev = math.sqrt(0.25 + 0.001)  # variance 0.25 plus the 0.001 that keeps sqrt smooth
    out.misc[0, 1] = math.log(math.e - 1)  # softplus = 1: predicted stdev 20
    out.misc[1, 1] = math.log(math.exp(0.025) - 1)  # softplus = 0.025: predicted stdev 0.5
    far = 10 * (20 - belief_stdev) - 50  # error > 10: linear part
    near = 0.5 * (0.5 - belief_stdev) ** 2
    total, terms = compute_loss(out, t, only("score_stdev_reg"))
    assert terms["score_stdev_reg"].item() == pytest.approx(0.004 * (far + near) / 2, rel=1e-5)
    assert terms["score_mean_reg"].item() == pytest.approx(0.0, abs=1e-9)
    assert total.item() == pytest.approx(terms["score_stdev_reg"].item(), rel=1e-6)


def test_lead_term_huber_delta_8_weight_0006_and_the_lead_weight():
    out, t = make_output(3), make_targets(3)
    out.misc[:, MISC_LEAD] = torch.tensor([0.25, -1.0, 3.0])  # predicted lead 20 x: 5, -20, 60
    t.lead[:] = torch.tensor([2.0, 0.5, -50.0])
    t.lead_weight[:] = torch.tensor([1.0, 0.5, 0.0])  # row 2: no lead target (KataGo's weight 0)
    t.ownership_weight[:] = 1.0  # not the lead's weight: changes nothing
    # row 0: error 5 - 2 = 3 <= 8: 0.5 * 3² = 4.5
    # row 1: error |-20 - 0.5| = 20.5 > 8: 8 * (20.5 - 8/2) = 132, times lead weight 0.5 = 66
    # row 2: error 110 but weight 0
    # 0.006 * (4.5 + 66 + 0) / N, N = 3
    check_alone(out, t, "lead", 0.006 * (4.5 + 66.0) / 3)
    check_alone(out, t, "lead", 0.0, w_lead=0.0)


def test_variance_time_term_huber_delta_50_weight_00003_and_the_ownership_weight():
    out, t = make_output(3), make_targets(3)
    # softplus(ln(e^s - 1)) = s; predicted time 40 s
    out.misc[0, MISC_VARIANCE_TIME] = math.log(math.exp(0.25) - 1)  # 40 * 0.25 = 10
    out.misc[1, MISC_VARIANCE_TIME] = math.log(math.exp(2.0) - 1)  # 40 * 2 = 80
    out.misc[2, MISC_VARIANCE_TIME] = 5.0
    t.variance_time[:] = torch.tensor([4.0, 9.0, 0.0])  # KataGo adds 1e-5 to each target
    t.ownership_weight[:] = torch.tensor([1.0, 0.5, 0.0])
    t.lead_weight[:] = 1.0  # not the variance time's weight: changes nothing
    near = 0.5 * (10 - (4 + 1e-5)) ** 2  # error 5.99999 <= 50: 17.99994
    far = 50 * ((80 - (9 + 1e-5)) - 50 / 2)  # error 70.99999 > 50: 2299.9995
    # 0.0003 * (17.99994 * 1 + 2299.9995 * 0.5 + 0) / 3 = 0.0003 * 1167.99969 / 3 ≈ 0.1168
    check_alone(out, t, "variance_time", 0.0003 * (near + 0.5 * far) / 3)


def test_root_variance_term_with_per_target_weights():
    out, t = make_output(1), make_targets(1)  # misc 0 -> softplus 0 = ln 2 for all four
    t.root_variance[0] = torch.tensor([0.0, LN2, 1.0, 5.0])
    t.root_variance_weight[0] = torch.tensor([1.0, 1.0, 1.0, 0.0])
    # 0.2 * ((ln 2)² + 0 + (1 - ln 2)²), the fourth weighted out
    expected = 0.2 * (LN2**2 + (1 - LN2) ** 2)
    check_alone(out, t, "root_variance", expected, w_rv=PAPER_ROOT_VARIANCE_WEIGHT)
    check_alone(out, t, "root_variance", 0.0)  # the default weight is 0


def test_root_variance_reads_misc_4_to_7_not_the_lead_or_variance_time():
    out, t = make_output(1), make_targets(1)
    out.misc[0, MISC_LEAD] = out.misc[0, MISC_VARIANCE_TIME] = 7.0  # would cost ~(7 - 0)² if read
    out.misc[0, MISC_ROOT_VARIANCE] = torch.tensor([math.log(math.e - 1)] * 4)  # softplus = 1
    t.root_variance[0] = 1.0
    t.root_variance_weight[0] = 1.0
    check_alone(out, t, "root_variance", 0.0, w_rv=PAPER_ROOT_VARIANCE_WEIGHT)


def test_terms_needing_missing_misc_columns_are_zero():
    t = make_targets(1)
    t.root_variance_weight[:] = 1.0
    t.root_variance[:] = 3.0
    t.lead_weight[:] = t.ownership_weight[:] = 1.0
    t.lead[:] = t.variance_time[:] = 3.0
    weights = LossWeights(w_rv=PAPER_ROOT_VARIANCE_WEIGHT)
    misc_terms = ("root_variance", "variance_time", "lead", "score_stdev_reg", "score_mean_reg")
    # KataGo's version 8 layout (4 columns) has everything but the root variances, which need 8
    for columns in (8, 4, 3, 2, 1, 0):
        out = make_output(1, misc_columns=columns)
        out.misc.fill_(2.0)
        _, terms = compute_loss(out, t, weights)
        absent = {
            "root_variance": columns < 8,
            "variance_time": columns < 4,
            "lead": columns < 3,
            "score_stdev_reg": columns < 2,
            "score_mean_reg": columns < 1,
        }
        for name in misc_terms:
            assert (terms[name].item() == 0.0) == absent[name], (columns, name)


def test_score_scale_penalty():
    out, t = make_output(2), make_targets(2)
    out.score_belief_gamma[:, 0] = torch.tensor([2.0, -1.0])
    t.row_weight[:] = torch.tensor([1.0, 0.5])
    # 0.0005 * (2² * 1 + 1² * 0.5) / 2
    check_alone(out, t, "score_scale", 0.0005 * (4 + 0.5) / 2)


def test_default_weights_are_the_papers_and_katagos():
    w = LossWeights()
    assert (w.c_value, w.w_opp, w.ownership_scale, w.w_spdf, w.w_scdf) == (1.5, 0.15, 1.5, 0.02, 0.02)
    assert (w.w_sbreg, w.sbreg_huber_delta, w.w_scale) == (0.004, 10.0, 0.0005)
    assert (w.w_soft_policy, w.soft_policy_temperature) == (8.0, 4.0)
    assert (w.w_lead, w.lead_huber_delta, w.w_variance_time, w.variance_time_huber_delta) == (0.006, 8.0, 0.0003, 50.0)
    assert w.w_rv == 0.0 and PAPER_ROOT_VARIANCE_WEIGHT == 0.2


def random_output(n: int, seed: int = 0, scale: float = 1.0) -> ModelOutput:
    g = torch.Generator().manual_seed(seed)

    def r(*shape: int) -> torch.Tensor:
        return (scale * torch.randn(*shape, generator=g)).requires_grad_()

    return ModelOutput(
        policy=r(n, 5, POLICY_LEN),
        value=r(n, 3),
        misc=r(n, 14),
        ownership=r(n, NN_LEN, NN_LEN),
        score_belief=r(n, SCORE_BELIEF_LEN),
        score_belief_gamma=r(n, 1),
    )


def full_targets(n: int, size: int, seed: int = 1) -> Targets:
    g = torch.Generator().manual_seed(seed)
    t = make_targets(n, size)
    legal = t.policy_mask()
    for target in (t.policy, t.opponent_policy):
        target.copy_(torch.rand(n, POLICY_LEN, generator=g) * legal)
        target /= target.sum(dim=1, keepdim=True)
    t.value.copy_(torch.softmax(torch.randn(n, 3, generator=g), dim=1))
    t.ownership.copy_(torch.randint(-1, 2, (n, NN_LEN, NN_LEN), generator=g).float() * t.mask)
    t.score_distribution[:, 400:440] = 1 / 40
    t.root_variance.copy_(torch.rand(n, 4, generator=g))
    t.lead.copy_(torch.randn(n, generator=g) * 10)
    t.variance_time.copy_(torch.rand(n, generator=g) * 10)
    for w in (t.policy_weight, t.opponent_policy_weight, t.value_weight, t.ownership_weight, t.lead_weight):
        w.fill_(1.0)
    t.root_variance_weight.fill_(1.0)
    t.shortterm_value.copy_(torch.softmax(torch.randn(n, 3, generator=g), dim=1))
    t.shortterm_score.copy_(torch.randn(n, generator=g) * 10)
    t.td_weight.fill_(1.0)
    return t


def test_zero_weight_rows_contribute_nothing():
    t = full_targets(2, size=9)
    out = random_output(2)
    with torch.no_grad():  # row 1: extreme outputs and a target with no mass, all with row weight 0
        for field in dataclasses.fields(out):
            if field.name != "normalized":
                getattr(out, field.name)[1] = 1e4
    t.policy[1] = 0.0
    t.row_weight[1] = 0.0
    total, _ = compute_loss(out, t)

    first = Targets(**{f.name: getattr(t, f.name)[:1] for f in dataclasses.fields(t)})
    out_first = ModelOutput(
        **{f.name: getattr(out, f.name)[:1] for f in dataclasses.fields(out) if f.name != "normalized"}
    )
    alone, _ = compute_loss(out_first, first)
    assert torch.isfinite(total)
    assert total.item() == pytest.approx(alone.item() / 2, rel=1e-6)  # N = 2 in the denominator


def test_per_row_terms_sum_to_the_batch_loss():
    t, out = full_targets(3, size=13), random_output(3)
    weights = LossWeights(w_rv=PAPER_ROOT_VARIANCE_WEIGHT)
    per_row = loss_terms_per_row(out, t, weights)
    total, terms = compute_loss(out, t, weights)
    assert set(per_row) == set(terms) == set(TERM_WEIGHT)
    for name, rows in per_row.items():
        assert rows.shape == (3,)
        assert rows.sum().item() / 3 == pytest.approx(terms[name].item(), rel=1e-5, abs=1e-9)
    assert total.item() == pytest.approx(sum(v.item() for v in terms.values()), rel=1e-5)


def test_gradients_flow_and_skip_off_board_points():
    t = full_targets(2, size=9)
    out = random_output(2, scale=3.0)
    total, _ = compute_loss(out, t, LossWeights(w_rv=PAPER_ROOT_VARIANCE_WEIGHT))
    total.backward()
    for field in dataclasses.fields(out):
        if field.name == "normalized":
            continue
        grad = getattr(out, field.name).grad
        assert grad is not None and torch.isfinite(grad).all(), field.name
        assert grad.abs().sum() > 0, field.name
    for channel in range(5):
        assert out.policy.grad[:, channel].abs().sum() > 0, channel
    for column in range(14):
        assert out.misc.grad[:, column].abs().sum() > 0, column
    off_board = (t.mask == 0).reshape(2, -1)
    assert out.policy.grad[:, :, :NN_AREA][off_board.unsqueeze(1).expand(-1, 5, -1)].abs().max() == 0
    assert out.ownership.grad[t.mask == 0].abs().max() == 0


def test_the_score_belief_may_be_given_as_logits():
    t, out = full_targets(2, size=19), random_output(2)
    with torch.no_grad():
        as_log_probs = dataclasses.replace(out, score_belief=torch.log_softmax(out.score_belief, dim=-1))
    a, _ = compute_loss(out, t)
    b, _ = compute_loss(as_log_probs, t)
    assert a.item() == pytest.approx(b.item(), rel=1e-6)


def test_shape_errors_name_the_input():
    t = make_targets(2)
    out = make_output(2)
    with pytest.raises(ValueError, match="output policy"):
        compute_loss(dataclasses.replace(out, policy=torch.zeros(2, 2, 361)), t)
    with pytest.raises(ValueError, match="output score_belief"):
        compute_loss(dataclasses.replace(out, score_belief=torch.zeros(2, 100)), t)
    with pytest.raises(ValueError, match=r"targets\.value"):
        compute_loss(out, dataclasses.replace(t, value=torch.zeros(2, 2)))


# --- KataGo's own rows ---


def test_targets_from_katago_rows(golden_rows):
    t = targets_from_rows(golden_rows)
    n = golden_rows["globalTargetsNC"].shape[0]
    assert t.num_rows == n
    for field in dataclasses.fields(t):
        assert torch.isfinite(getattr(t, field.name)).all(), field.name
    # The 9x9 mask from input channel 0, unpacked the slow way for comparison.
    mask = np.unpackbits(golden_rows["binaryInputNCHWPacked"], axis=2)[:, :, :361].reshape(n, 22, 19, 19)[:, 0]
    assert np.array_equal(t.mask.numpy(), mask.astype(np.float32))
    assert (t.mask.sum(dim=(1, 2)) == 81).all()

    for target, weight in ((t.policy, t.policy_weight), (t.opponent_policy, t.opponent_policy_weight)):
        used = weight > 0
        assert used.any()
        assert torch.allclose(target[used].sum(dim=1), torch.ones(int(used.sum())))
        assert (target[:, :NN_AREA] * (1 - t.mask.reshape(n, -1))).abs().max() == 0
    assert torch.allclose(t.score_distribution.sum(dim=1), torch.ones(n))
    # KataGo splits the final score s over the buckets of round(s) -/+ 0.5 so that their mean is s
    # (to 1/100 from the integer percentages): this pins bucket i to the score i - 420.5.
    scored = t.ownership_weight > 0
    mean = (t.score_distribution * score_bucket_values()).sum(dim=1)
    assert scored.any()
    assert torch.allclose(mean[scored], t.final_score[scored], atol=0.006)
    assert set(t.ownership.unique().tolist()) <= {-1.0, 0.0, 1.0}
    assert (t.root_variance_weight == 0).all()
    # lead: channel 21 with weight 29; variance time: channel 22 (weighted by the ownership weight 27)
    g = torch.from_numpy(golden_rows["globalTargetsNC"])
    assert torch.equal(t.lead, g[:, 21]) and torch.equal(t.lead_weight, g[:, 29])
    assert torch.equal(t.variance_time, g[:, 22])
    assert 0 < int((t.lead_weight > 0).sum()) < n  # KataGo writes a lead for some rows only
    assert (t.variance_time >= 0).all() and (t.variance_time > 0).any()


def test_loss_on_katago_rows_with_a_flat_network(golden_rows):
    t = targets_from_rows(golden_rows)
    out = make_output(t.num_rows)
    per_row = loss_terms_per_row(out, t)
    # Ownership: every on-board point costs ln 2 under a zero prediction; 81 of them times 1.5 / 81.
    expected = 1.5 * LN2 * t.ownership_weight * t.row_weight
    assert torch.allclose(per_row["ownership"], expected, rtol=1e-5)
    total, terms = compute_loss(out, t)
    assert torch.isfinite(total)
    assert terms["root_variance"].item() == 0.0


def spatial_inputs(rows: dict[str, np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows' network inputs: the 22 bit-packed planes unpacked to [N, 22, 19, 19], and the globals."""
    n = rows["binaryInputNCHWPacked"].shape[0]
    planes = np.unpackbits(rows["binaryInputNCHWPacked"], axis=2)[:, :, :NN_AREA]
    spatial = torch.from_numpy(planes.reshape(n, 22, NN_LEN, NN_LEN).astype(np.float32))
    return spatial, torch.from_numpy(rows["globalInputNC"].astype(np.float32))


def test_a_fresh_b6c96_trains_every_term_on_katago_rows(golden_rows):
    # The first 32 rows (kept small for speed) include a row with a lead target (24) and rows without
    # ownership or score targets (22, 23).
    rows = {name: array[:32] for name, array in golden_rows.items()}
    assert rows["globalTargetsNC"][:, 29].any() and not rows["globalTargetsNC"][:, 27].all()
    spatial, global_inputs = spatial_inputs(rows)
    t = targets_from_rows(rows, mask=spatial[:, 0].numpy())  # the mask is input channel 0
    torch.manual_seed(0)
    model = Model(named_config("b6c96"))  # training mode, as in training
    assert model.config.policy_channels == 4
    out = model(spatial, global_inputs)
    assert out.policy.shape == (t.num_rows, 4, POLICY_LEN) and out.misc.shape == (t.num_rows, 4)
    weights = LossWeights(w_rv=PAPER_ROOT_VARIANCE_WEIGHT)
    total, terms = compute_loss(out, t, weights)
    assert set(terms) == set(TERM_WEIGHT)
    for name, value in terms.items():
        assert torch.isfinite(value), name
    # Every term has targets in these rows except the root variances (none in current data, and a
    # 4-value misc head has no root-variance outputs); the paper's b6c96 has no short-term heads.
    absent = {"root_variance", *SHORTTERM_TERMS}
    for name in set(TERM_WEIGHT) - absent:
        assert terms[name].item() > 0, name
    for name in absent:
        assert terms[name].item() == 0.0, name
    assert torch.isfinite(total)
    total.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    assert model.policy_head.conv_p2.weight.grad[2:].abs().sum() > 0  # the soft-policy channels learn
    assert model.value_head.linear_misc.weight.grad[2:4].abs().sum() > 0  # lead and variance time learn


def test_rows_errors_name_the_array(golden_rows):
    rows = dict(golden_rows)
    del rows["scoreDistrN"]
    with pytest.raises(ValueError, match="scoreDistrN"):
        targets_from_rows(rows)
    rows = dict(golden_rows, scoreDistrN=golden_rows["scoreDistrN"][:, :100])
    with pytest.raises(ValueError, match="scoreDistrN has shape"):
        targets_from_rows(rows)
    rows = {k: v for k, v in golden_rows.items() if k != "binaryInputNCHWPacked"}
    with pytest.raises(ValueError, match="binaryInputNCHWPacked"):
        targets_from_rows(rows)
    with pytest.raises(ValueError, match="mask has shape"):
        targets_from_rows(rows, mask=np.ones((3, 19, 19)))


def test_a_row_whose_policy_target_sums_to_zero_gets_zero_weight(golden_rows):
    rows = {k: v[:3].copy() for k, v in golden_rows.items()}
    rows["policyTargetsNCMove"][1, 0] = 0
    mask = np.zeros((3, 19, 19), np.float32)
    mask[:, :9, :9] = 1
    t = targets_from_rows(rows, mask=mask)
    assert t.policy_weight.tolist() == [1.0, 0.0, 1.0]
    assert (t.policy[1] == 0).all()
