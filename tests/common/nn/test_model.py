import dataclasses
import json
import math

import pytest
import torch

from common.encoding.features import NN_AREA, NN_LEN, POLICY_LEN
from common.nn.device import default_device, mps_available, resolve_device
from common.nn.interpret import PostProcessParams, interpret, no_result_possible
from common.nn.model import (
    KATAGO_V8_POLICY_CHANNELS,
    MISC_LEAD,
    MISC_ROOT_VARIANCE,
    MISC_SCORE_MEAN,
    MISC_SCORE_STDEV,
    MISC_VARIANCE_TIME,
    NAMED_SIZES,
    OPPONENT_POLICY_CHANNEL,
    POLICY_CHANNEL,
    SOFT_OPPONENT_POLICY_CHANNEL,
    SOFT_POLICY_CHANNEL,
    MaskedBatchNorm,
    MobileBlock,
    Model,
    ModelConfig,
    ModelConfigError,
    NestedBottleneckBlock,
    board_mask,
    count_parameters,
    global_pool,
    named_config,
    value_pool,
)
from common.nn.outputs import SCORE_BELIEF_LEN, ModelOutput
from tests.common.nn.nets import random_inputs, random_model

# (width, height) of the boards mixed in one batch
SIZES = [(9, 9), (13, 13), (19, 19), (7, 11)]
# One small network of each kind of trunk: the paper's residual blocks, nested bottleneck blocks,
# Cazenave's MobileNet blocks.
ARCHITECTURES = ["tiny", "tinynbt", "tinymobile"]


def crop(spatial: torch.Tensor, w: int, h: int) -> torch.Tensor:
    return spatial[:, :, :h, :w].contiguous()


def on_board_policy(policy: torch.Tensor, w: int, h: int, tensor_w: int, tensor_h: int) -> torch.Tensor:
    """[N, P, tensor_h*tensor_w+1] -> [N, P, h*w+1]: the on-board points then pass."""
    n, p, _ = policy.shape
    grid = policy[:, :, : tensor_h * tensor_w].reshape(n, p, tensor_h, tensor_w)
    return torch.cat([grid[:, :, :h, :w].reshape(n, p, h * w), policy[:, :, -1:]], dim=2)


def assert_same_board_outputs(a: ModelOutput, i: int, b: ModelOutput, j: int, w: int, h: int, atol: float) -> None:
    pa = on_board_policy(a.policy[i : i + 1], w, h, a.ownership.shape[2], a.ownership.shape[1])
    pb = on_board_policy(b.policy[j : j + 1], w, h, b.ownership.shape[2], b.ownership.shape[1])
    torch.testing.assert_close(pa, pb, atol=atol, rtol=0)
    torch.testing.assert_close(a.value[i], b.value[j], atol=atol, rtol=0)
    torch.testing.assert_close(a.misc[i], b.misc[j], atol=atol, rtol=0)
    torch.testing.assert_close(a.ownership[i, :h, :w], b.ownership[j, :h, :w], atol=atol, rtol=0)
    torch.testing.assert_close(a.score_belief[i], b.score_belief[j], atol=atol, rtol=0)
    torch.testing.assert_close(a.score_belief_gamma[i], b.score_belief_gamma[j], atol=atol, rtol=0)


# -- config ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMED_SIZES)
def test_named_sizes_build_with_plausible_parameter_counts(name):
    expected = {  # trunk 5x5 input conv + blocks of two 3x3 convs dominate
        "tiny": (10_000, 40_000),
        "b3c32": (60_000, 100_000),
        "b4c48": (170_000, 240_000),
        "b6c96": (0.9e6, 1.2e6),
        "b10c128": (2.6e6, 3.4e6),
        "b15c192": (9.0e6, 11.0e6),
        "b20c256": (21e6, 26e6),
        "tinynbt": (10_000, 40_000),
        "b4c48nbt": (110_000, 170_000),
        "b6c96nbt": (0.55e6, 0.7e6),  # each block: two 1x1 convs and four 3x3 convs at half width
        "b18c384nbt": (25e6, 28e6),
        "tinymobile": (10_000, 40_000),
        "b17c64mobile": (0.95e6, 1.05e6),  # Cazenave's "less than one million parameters" net
        "b24c96mobile": (2.6e6, 3.4e6),
    }[name]
    config = named_config(name)
    model = Model(config, initialize=False)
    n = count_parameters(model)
    assert expected[0] <= n <= expected[1], f"{name}: {n} parameters"
    assert len(model.blocks) == len(config.blocks)
    assert config.blocks.count("gpool") + config.blocks.count("nbt_gpool") + config.blocks.count("mobile") >= 1
    c = config.trunk_channels
    conv_params = 9 * (c * config.mid_channels * 2)
    assert n > conv_params * config.blocks.count("regular")
    b = config.bottleneck_channels
    assert n > (2 * c * b + 9 * b * b * 2 * config.nbt_inner_blocks) * config.blocks.count("nbt")


def test_b18c384nbt_has_katago_s_layout():
    c = named_config("b18c384nbt")
    assert c.blocks == ["nbt_gpool" if i in (2, 5, 8, 11, 14) else "nbt" for i in range(18)]
    assert (c.trunk_channels, c.bottleneck_channels, c.gpool_channels, c.nbt_inner_blocks) == (384, 192, 64, 2)
    assert (c.p1_channels, c.g1_channels, c.v1_channels, c.sbv2_channels, c.v2_size) == (48, 48, 96, 112, 128)


def test_nested_bottleneck_blocks_nest_residual_blocks_at_the_bottleneck_width():
    model = Model(dataclasses.replace(named_config("tinynbt"), norm="batch"))
    outer = model.blocks[1]
    assert isinstance(outer, NestedBottleneckBlock)
    b = model.config.bottleneck_channels
    assert (outer.conv_in.in_channels, outer.conv_in.out_channels, outer.conv_in.kernel_size) == (16, b, (1, 1))
    assert (outer.conv_out.in_channels, outer.conv_out.out_channels) == (b, 16)
    assert [type(block).__name__ for block in outer.inner] == ["GPoolBlock", "RegularBlock"]
    assert [type(block).__name__ for block in model.blocks[0].inner] == ["RegularBlock", "RegularBlock"]
    # With batch norms a fresh block adds nothing to the trunk: its way back up starts at zero, as do
    # the inner blocks' last convs.
    assert torch.all(outer.conv_out.weight == 0) and torch.all(outer.inner[0].conv2.weight == 0)


def test_mobile_blocks_are_inverted_residuals_with_squeeze_and_excitation():
    model = random_model(config=named_config("b17c64mobile"))
    block = model.blocks[0]
    assert isinstance(block, MobileBlock)
    assert (block.conv_expand.in_channels, block.conv_expand.out_channels) == (64, 384)
    assert block.conv_depthwise.groups == 384 and block.conv_depthwise.weight.shape == (384, 1, 3, 3)
    assert (block.conv_project.in_channels, block.conv_project.out_channels) == (384, 64)
    assert (block.se_squeeze.out_features, block.se_excite.out_features) == (4, 64)
    # It adds nothing off the board (its squeeze is a mean over the on-board cells), something on it.
    spatial, _ = random_inputs([(9, 9), (19, 19)])
    mask = spatial[:, 0:1]
    x = torch.randn(2, 64, NN_LEN, NN_LEN) * mask
    with torch.no_grad():
        out = block(x, mask, mask.sum(dim=(2, 3))) - x
    assert torch.all(out[0, :, 9:, :] == 0) and torch.all(out[0, :, :, 9:] == 0)
    assert out[1].abs().sum() > 0


def test_mobile_blocks_without_squeeze_and_excitation_add_the_projection_as_it_is():
    """se_ratio 0: MobileNetV2's block, no squeeze and excitation layers, and (fixed-variance norms)
    the projection at its plain He scale, with no gate to halve what it passes at first."""
    plain = dataclasses.replace(named_config("tinymobile"), se_ratio=0)
    assert plain.se_channels == 0 and ModelConfig.from_dict(plain.to_dict()) == plain
    model, gated = random_model(config=plain), random_model(config=named_config("tinymobile"))
    block, gated_block = model.blocks[0], gated.blocks[0]
    assert not any("se_" in name for name, _ in block.named_parameters())
    squeeze_excite = sum(p.numel() for name, p in gated_block.named_parameters() if name.startswith("se_"))
    assert squeeze_excite > 0
    assert count_parameters(gated) - count_parameters(model) == squeeze_excite * len(gated.blocks)
    spatial, glob = random_inputs([(9, 9), (7, 7)])
    mask = spatial[:, 0:1]
    ms = mask.sum(dim=(2, 3))
    x = torch.randn(2, plain.trunk_channels, NN_LEN, NN_LEN) * mask
    with torch.no_grad():
        h = block.conv_depthwise(block.norm2(block.conv_expand(block.norm1(x, mask, ms)), mask, ms))
        assert torch.allclose(block(x, mask, ms) - x, block.conv_project(block.norm3(h, mask, ms)), atol=1e-5)
        assert torch.isfinite(model(spatial, glob).value).all()
    # A fresh network: the gated projection starts at twice the plain one's scale.
    assert plain.norm == "fixscale"
    torch.manual_seed(0)
    fresh_plain = Model(plain).blocks[0].conv_project.weight.detach().std()
    torch.manual_seed(0)
    fresh_gated = Model(named_config("tinymobile")).blocks[0].conv_project.weight.detach().std()
    assert float(fresh_gated / fresh_plain) == pytest.approx(2.0, rel=0.2)


def test_networks_without_nested_blocks_keep_their_config_json():
    """Files of the paper's networks read as before in programs that predate nested bottlenecks."""
    assert not {"bottleneck_channels", "norm"} & set(named_config("b6c96").to_dict())
    assert named_config("b6c96nbt").to_dict()["bottleneck_channels"] == 48
    assert named_config("b6c96nbt").to_dict()["norm"] == "fixscale"


def test_b6c96_matches_the_g170_net_layout():
    c = named_config("b6c96")
    assert c.blocks == ["regular", "regular", "gpool", "regular", "gpool", "regular"]
    assert (c.trunk_channels, c.mid_channels, c.regular_channels, c.gpool_channels) == (96, 96, 64, 32)
    assert (c.p1_channels, c.g1_channels, c.v1_channels, c.sbv2_channels, c.v2_size) == (32, 32, 32, 48, 64)


def test_the_papers_sizes_carry_four_policy_channels_and_the_v8_misc_values_the_others_the_new_heads():
    assert (POLICY_CHANNEL, OPPONENT_POLICY_CHANNEL, SOFT_POLICY_CHANNEL, SOFT_OPPONENT_POLICY_CHANNEL) == (0, 1, 2, 3)
    assert (MISC_SCORE_MEAN, MISC_SCORE_STDEV, MISC_LEAD, MISC_VARIANCE_TIME) == (0, 1, 2, 3)
    assert (MISC_ROOT_VARIANCE.start, MISC_ROOT_VARIANCE.stop) == (4, 8)
    assert KATAGO_V8_POLICY_CHANNELS == 1
    for name in NAMED_SIZES:
        config = named_config(name)
        if name in ("tiny", "b3c32", "b4c48", "b6c96", "b10c128", "b15c192", "b20c256"):
            assert (config.policy_channels, config.misc_values, config.norm) == (4, 4, "batch"), name
        else:
            assert (config.policy_channels, config.misc_values, config.norm) == (5, 14, "fixscale"), name
            assert config.has_shortterm_heads and config.has_optimistic_policy


def test_every_policy_channel_has_its_own_board_and_pass_logits():
    model = random_model()
    spatial, global_inputs = random_inputs([(9, 9), (19, 19)])
    with torch.no_grad():
        out = model(spatial, global_inputs)
    assert model.policy_head.conv_p2.out_channels == 4 and model.policy_head.linear_pass.out_features == 4
    for a in range(4):
        for b in range(a + 1, 4):
            assert not torch.allclose(out.policy[:, a, :NN_AREA], out.policy[:, b, :NN_AREA]), (a, b)
            assert not torch.allclose(out.policy[:, a, NN_AREA], out.policy[:, b, NN_AREA]), (a, b)


def test_root_variance_outputs_come_with_eight_misc_values():
    config = named_config("tiny")
    config.misc_values = 8
    config.validate()
    with torch.no_grad():
        out = random_model(config=config)(*random_inputs([(9, 9)]))
    assert out.misc.shape == (1, 8)
    assert out.misc[:, MISC_ROOT_VARIANCE].shape == (1, 4)


def test_config_json_round_trip():
    for name in NAMED_SIZES:
        config = named_config(name)
        again = ModelConfig.from_dict(json.loads(json.dumps(config.to_dict())))
        assert again == config


@pytest.mark.parametrize(
    "change, message",
    [
        ({"blocks": ["regular", "dilated"]}, "blocks[1]"),
        ({"blocks": []}, "blocks is empty"),
        ({"trunk_channels": 0}, "trunk_channels"),
        ({"policy_channels": 6}, "policy_channels must be 1..5"),
        ({"policy_channels": 5}, "learns from the short-term heads; misc_values must be at least 14"),
        ({"norm": "layer"}, "norm is 'layer'"),
        ({"misc_values": 2}, "misc_values"),
        ({"global_inputs": 18}, "inputs"),
        ({"version": 9}, "version 9"),
        ({"bn_epsilon": -1.0}, "bn_epsilon"),
        ({"blocks": ["regular", "nbt"]}, "nbt blocks need bottleneck_channels"),
        ({"bottleneck_channels": 8}, "no block is nbt"),
        ({"blocks": ["nbt_gpool"], "bottleneck_channels": 8, "gpool_channels": 8}, "must be fewer"),
        ({"blocks": ["nbt"], "bottleneck_channels": 8, "nbt_inner_blocks": 0}, "nbt_inner_blocks"),
        ({"mobile_expansion": 4}, "mobile_expansion is set but no block is mobile"),
        ({"blocks": ["mobile"], "se_ratio": -1}, "se_ratio must be a non-negative integer"),
    ],
)
def test_bad_configs_are_refused_naming_the_field(change, message):
    data = named_config("tiny").to_dict() | change
    with pytest.raises(ModelConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        ModelConfig.from_dict(data)


def test_config_from_dict_rejects_unknown_and_missing_keys():
    data = named_config("tiny").to_dict()
    with pytest.raises(ModelConfigError, match="unknown keys"):
        ModelConfig.from_dict(data | {"colour": "red"})
    del data["v2_size"]
    with pytest.raises(ModelConfigError, match="missing keys"):
        ModelConfig.from_dict(data)
    with pytest.raises(ModelConfigError, match="unknown model size"):
        named_config("b99c999")


# -- forward --------------------------------------------------------------------------------


def test_output_shapes_follow_the_contract():
    model = random_model()
    spatial, global_inputs = random_inputs(SIZES)
    with torch.no_grad():
        out = model(spatial, global_inputs)
    n = len(SIZES)
    assert out.policy.shape == (n, 4, POLICY_LEN)
    assert out.value.shape == (n, 3)
    assert out.misc.shape == (n, 4)
    assert out.ownership.shape == (n, NN_LEN, NN_LEN)
    assert out.score_belief.shape == (n, SCORE_BELIEF_LEN)
    assert out.score_belief_gamma.shape == (n, 1)
    torch.testing.assert_close(out.score_belief.exp().sum(dim=1), torch.ones(n), atol=1e-5, rtol=0)
    # ownership is exactly zero off board
    mask = spatial[:, 0]
    assert torch.all(out.ownership[mask == 0] == 0)


def test_forward_rejects_wrong_input_shapes():
    model = random_model()
    spatial, global_inputs = random_inputs([(9, 9)])
    with pytest.raises(ValueError, match="spatial input"):
        model(spatial[:, :21], global_inputs)
    with pytest.raises(ValueError, match="global input"):
        model(spatial, global_inputs[:, :18])


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_mixed_board_sizes_in_one_batch_equal_each_board_alone(arch):
    model = random_model(config=named_config(arch))
    spatial, global_inputs = random_inputs(SIZES)
    with torch.no_grad():
        mixed = model(spatial, global_inputs)
        for i, (w, h) in enumerate(SIZES):
            # alone, still padded to 19x19
            alone = model(spatial[i : i + 1], global_inputs[i : i + 1])
            assert_same_board_outputs(mixed, i, alone, 0, w, h, atol=1e-5)
            # alone in a tensor of exactly its size: no off-board cells at all
            exact = model(crop(spatial[i : i + 1], w, h), global_inputs[i : i + 1])
            assert exact.policy.shape == (1, model.config.policy_channels, w * h + 1)
            assert_same_board_outputs(mixed, i, exact, 0, w, h, atol=1e-5)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_off_board_input_values_change_nothing(arch):
    model = random_model(seed=3, config=named_config(arch))
    spatial, global_inputs = random_inputs(SIZES, seed=4)
    garbage = spatial.clone()
    off = (spatial[:, 0:1] == 0).expand(-1, 21, -1, -1)
    noise = torch.randn(garbage[:, 1:].shape, generator=torch.Generator().manual_seed(5)) * 10
    garbage[:, 1:][off] = noise[off]
    assert not torch.equal(garbage, spatial)
    with torch.no_grad():
        a = model(spatial, global_inputs)
        b = model(garbage, global_inputs)
    for key, value in a.tensors().items():
        assert torch.equal(value, getattr(b, key)), key


def symmetrized(model: Model) -> Model:
    """The model with every conv kernel averaged over the 8 symmetries of the square: such a network
    is exactly equivariant, unless a layer treats points by their place on the board."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                w = m.weight
                images = [torch.rot90(v, k, dims=(2, 3)) for v in (w, w.flip(3)) for k in range(4)]
                w.copy_(torch.stack(images).mean(dim=0))
    return model


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_policy_and_ownership_are_equivariant_under_the_board_symmetries(arch):
    n = 9
    model = symmetrized(random_model(seed=2, config=named_config(arch)))
    spatial, global_inputs = random_inputs([(n, n)], seed=6)
    spatial = crop(spatial, n, n)

    def transform(x: torch.Tensor, k: int, flip: bool) -> torch.Tensor:
        return torch.rot90(x.flip(-1) if flip else x, k, dims=(-2, -1))

    with torch.no_grad():
        base = model(spatial, global_inputs)
        for k in range(4):
            for flip in (False, True):
                out = model(transform(spatial, k, flip), global_inputs)
                board = base.policy[:, :, : n * n].reshape(1, -1, n, n)
                expected = transform(board, k, flip).reshape(1, -1, n * n)
                torch.testing.assert_close(out.policy[:, :, : n * n], expected, atol=1e-4, rtol=1e-4)
                torch.testing.assert_close(out.policy[:, :, n * n], base.policy[:, :, n * n], atol=1e-4, rtol=1e-4)
                torch.testing.assert_close(out.ownership, transform(base.ownership, k, flip), atol=1e-4, rtol=1e-4)
                torch.testing.assert_close(out.value, base.value, atol=1e-4, rtol=1e-4)
    assert base.policy[:, 0, : n * n].std() > 0.01  # a policy with something to move around


def test_pooling_uses_sqrt_of_the_on_board_area():
    w, h = 7, 11
    mask = board_mask([(w, h)]).unsqueeze(1)
    x = torch.rand(1, 3, NN_LEN, NN_LEN) * mask
    x[0, 2] = (x[0, 2] - 2.0) * mask[0, 0]  # all negative on board: off-board zeros must not win the max
    mask_sum = mask.sum(dim=(2, 3))
    pooled = global_pool(x, mask, mask_sum)
    mean = x.sum(dim=(2, 3)) / (w * h)
    b = math.sqrt(w * h)
    torch.testing.assert_close(pooled[:, 0:3], mean)
    torch.testing.assert_close(pooled[:, 3:6], mean * (b - 14) / 10)
    expected_max = torch.stack([x[0, c, :h, :w].max() for c in range(3)]).unsqueeze(0)
    torch.testing.assert_close(pooled[:, 6:9], expected_max)
    assert pooled[0, 8] < 0  # off-board zeros did not win the max
    vp = value_pool(x, mask_sum)
    torch.testing.assert_close(vp[:, 6:9], mean * ((b - 14) ** 2 / 100 - 0.1))


def test_masked_batch_norm_training_uses_on_board_statistics_only():
    torch.manual_seed(0)
    bn = MaskedBatchNorm(4, eps=1e-3, momentum=0.1)
    with torch.no_grad():
        bn.weight.copy_(torch.tensor([1.0, 2.0, 0.5, 1.5]))
        bn.bias.copy_(torch.tensor([0.1, -0.2, 0.3, 0.0]))
    mask = board_mask([(9, 9), (5, 7)]).unsqueeze(1)
    x = torch.randn(2, 4, NN_LEN, NN_LEN) + 3.0
    x_garbage = x + (1 - mask) * 100.0  # off-board values must not matter
    mask_sum = mask.sum(dim=(2, 3))
    bn.train()
    y = bn(x_garbage, mask, mask_sum)
    on = mask.expand_as(x).bool()
    vals = x.permute(1, 0, 2, 3)[on.permute(1, 0, 2, 3)].view(4, -1)
    mean, var = vals.mean(dim=1), vals.var(dim=1, unbiased=False)
    expected = (
        torch.relu(
            (x - mean.view(1, -1, 1, 1)) / torch.sqrt(var.view(1, -1, 1, 1) + 1e-3) * bn.weight.view(1, -1, 1, 1)
            + bn.bias.view(1, -1, 1, 1)
        )
        * mask
    )
    torch.testing.assert_close(y, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(bn.running_mean, 0.1 * mean, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(bn.running_var, 0.9 + 0.1 * var, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_training_mode_forward_and_backward_run(arch):
    model = random_model(config=named_config(arch))
    model.train()
    spatial, global_inputs = random_inputs(SIZES)
    out = model(spatial, global_inputs)
    loss = torch.zeros(())
    for heads in (out, out.normalized) if out.normalized is not None else (out,):
        loss = loss + heads.policy[:, 0].logsumexp(dim=1).sum() + heads.value.sum() + heads.score_belief[:, 400].sum()
        loss = loss + heads.misc.sum() + (heads.ownership**2).sum() + (heads.score_belief_gamma**2).sum()
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    batch_norm = model.norm_trunk_bn if model.config.norm == "fixscale" else model.norm_trunk
    assert batch_norm.running_mean.abs().sum() > 0


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_fresh_model_is_finite_and_deterministic_per_seed(arch):
    torch.manual_seed(7)
    a = Model(named_config(arch)).eval()
    torch.manual_seed(7)
    b = Model(named_config(arch)).eval()
    spatial, global_inputs = random_inputs(SIZES)
    with torch.no_grad():
        oa, ob = a(spatial, global_inputs), b(spatial, global_inputs)
    for key, value in oa.tensors().items():
        assert torch.equal(value, getattr(ob, key))
        assert torch.isfinite(value).all()


# -- device ---------------------------------------------------------------------------------


def test_default_device_is_a_gpu_only_when_there_is_one():
    expected = "cuda" if torch.cuda.is_available() else "mps" if mps_available() else "cpu"
    assert default_device().type == expected
    assert resolve_device(None).type == expected
    assert resolve_device("cpu") == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            resolve_device("cuda")
    if not mps_available():
        with pytest.raises(RuntimeError, match="'mps' requested but this machine has no Apple GPU"):
            resolve_device("mps")


def test_a_mac_without_cuda_plays_on_its_apple_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert default_device() == torch.device("mps") and resolve_device("mps") == torch.device("mps")


# -- interpretation -------------------------------------------------------------------------


def fake_output(value, misc, policy=None, ownership=None) -> ModelOutput:
    n = len(value)
    return ModelOutput(
        policy=torch.zeros(n, 1, POLICY_LEN) if policy is None else policy,
        value=torch.tensor(value, dtype=torch.float32),
        misc=torch.tensor(misc, dtype=torch.float32),
        ownership=torch.zeros(n, NN_LEN, NN_LEN) if ownership is None else ownership,
        score_belief=torch.zeros(n, SCORE_BELIEF_LEN),
        score_belief_gamma=torch.zeros(n, 1),
    )


def test_interpret_value_scores_and_perspective():
    value = [[1.0, 0.0, -2.0], [1.0, 0.0, -2.0]]
    misc = [[0.25, 0.1, -0.2, 0.3], [0.25, 0.1, -0.2, 0.3]]
    own = torch.zeros(2, NN_LEN, NN_LEN)
    own[:, 0, 0] = 0.5
    legal = torch.ones(2, POLICY_LEN, dtype=torch.bool)
    ev = interpret(fake_output(value, misc, ownership=own), legal, white_to_move=[True, False])
    z = torch.exp(torch.tensor([1.0, 0.0, -2.0], dtype=torch.float64))
    p = z / z.sum()
    torch.testing.assert_close(ev.win, p[0].repeat(2))
    torch.testing.assert_close(ev.no_result, p[2].repeat(2))
    mean = 0.25 * 20 * (1 - p[2])
    stdev = math.log1p(math.exp(0.1)) * 20
    sq = (5.0**2 + stdev**2) * (1 - p[2])
    lead = -0.2 * 20 * (1 - p[2])
    torch.testing.assert_close(ev.score_mean, mean.repeat(2))
    torch.testing.assert_close(ev.score_mean_sq, torch.tensor([sq, sq], dtype=torch.float64))
    torch.testing.assert_close(ev.lead, lead.repeat(2))
    # white to move: white's numbers are the side to move's; black to move: flipped
    assert ev.white_win[0] == ev.win[0] and ev.white_win[1] == ev.loss[1]
    assert ev.white_loss[1] == ev.win[1]
    assert ev.white_lead[0] == ev.lead[0] and ev.white_lead[1] == -ev.lead[1]
    assert ev.white_score_selfplay[1] == -ev.score_mean[1]
    assert ev.white_score_selfplay_sq[1] == ev.score_mean_sq[1]
    assert ev.white_ownership[0, 0, 0] == pytest.approx(math.tanh(0.5))
    assert ev.white_ownership[1, 0, 0] == pytest.approx(-math.tanh(0.5))
    assert torch.all(ev.var_time_left == -1)  # model version 8 does not report it
    ev9 = interpret(fake_output(value, misc), legal, True, model_version=9)
    assert ev9.var_time_left[0].item() == pytest.approx(math.log1p(math.exp(0.3)) * 40)


def test_interpret_forces_no_result_to_zero_when_rules_cannot_produce_it():
    legal = torch.ones(2, POLICY_LEN, dtype=torch.bool)
    out = fake_output([[0.0, 0.0, 0.0]] * 2, [[1.0, 0, 1.0, 0]] * 2)
    ev = interpret(out, legal, True, no_result_allowed=[True, False])
    assert ev.no_result[0].item() == pytest.approx(1 / 3)
    assert ev.no_result[1].item() == 0.0
    assert ev.win[1].item() == pytest.approx(0.5)
    assert ev.score_mean[1].item() == pytest.approx(20.0)
    assert ev.score_mean[0].item() == pytest.approx(20.0 * 2 / 3)
    assert no_result_possible("SIMPLE", "AREA") and no_result_possible("POSITIONAL", "TERRITORY")
    assert not no_result_possible("POSITIONAL", "AREA") and not no_result_possible("situational", "area")


def test_interpret_policy_is_a_softmax_over_legal_moves_only():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(1, 1, POLICY_LEN, generator=gen)
    legal = torch.zeros(1, POLICY_LEN, dtype=torch.bool)
    legal[0, [0, 5, 40, NN_AREA]] = True
    ev = interpret(fake_output([[0, 0, 0]], [[0, 0, 0, 0]], policy=logits), legal, False)
    expected = torch.softmax(logits[0, 0, [0, 5, 40, NN_AREA]], dim=0)
    torch.testing.assert_close(ev.policy_full[0, [0, 5, 40, NN_AREA]], expected)
    assert ev.policy_full[0].sum().item() == pytest.approx(1.0)
    assert ev.policy[0, 1].item() == 0.0
    assert ev.policy_pass[0].item() == pytest.approx(expected[3].item())
    hot = interpret(fake_output([[0, 0, 0]], [[0, 0, 0, 0]], policy=logits), legal, False, policy_temperature=2.0)
    legal_logits = logits[0, 0, [0, 5, 40, NN_AREA]]
    torch.testing.assert_close(hot.policy_full[0, [0, 5, 40, NN_AREA]], torch.softmax(legal_logits / 2, 0))
    with pytest.raises(ValueError, match="no legal move"):
        interpret(fake_output([[0, 0, 0]], [[0, 0, 0, 0]]), torch.zeros(1, POLICY_LEN, dtype=torch.bool), True)
    with pytest.raises(ValueError, match="legal mask"):
        interpret(fake_output([[0, 0, 0]], [[0, 0, 0, 0]]), torch.ones(1, 361, dtype=torch.bool), True)


def test_interpret_reads_only_the_first_policy_channel():
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(1, 4, POLICY_LEN, generator=gen)
    others = logits.clone()
    others[:, 1:] = torch.randn(1, 3, POLICY_LEN, generator=gen) * 5
    legal = torch.ones(1, POLICY_LEN, dtype=torch.bool)
    a = interpret(fake_output([[0, 0, 0]], [[0, 0, 0, 0]], policy=logits), legal, True)
    b = interpret(fake_output([[0, 0, 0]], [[0, 0, 0, 0]], policy=others), legal, True)
    c = interpret(fake_output([[0, 0, 0]], [[0, 0, 0, 0]], policy=logits[:, :1]), legal, True)
    assert torch.equal(a.policy_full, b.policy_full) and torch.equal(a.policy_full, c.policy_full)
    torch.testing.assert_close(a.policy_full[0], torch.softmax(logits[0, 0], dim=0))


def test_interpret_zeroes_ownership_off_board():
    own = torch.ones(1, NN_LEN, NN_LEN)
    ev = interpret(
        fake_output([[0, 0, 0]], [[0, 0, 0, 0]], ownership=own),
        torch.ones(1, POLICY_LEN, dtype=torch.bool),
        False,
        on_board=board_mask([(9, 9)]),
    )
    assert ev.white_ownership[0, 8, 8].item() == pytest.approx(-math.tanh(1.0))
    assert ev.white_ownership[0, 9, 0].item() == 0.0
    assert PostProcessParams().score_mean_multiplier == 20.0
