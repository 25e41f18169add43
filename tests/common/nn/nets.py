"""Networks and inputs for the network's tests: every weight and statistic random, boards of mixed
sizes."""

import math

import torch

from common.encoding.features import NN_LEN
from common.nn.model import Model, ModelConfig, board_mask, named_config


def random_model(seed: int = 0, config: ModelConfig | None = None) -> Model:
    """A model whose every weight and batch-norm statistic is random (nothing zero or identity)."""
    gen = torch.Generator().manual_seed(seed)
    model = Model(config or named_config("tiny"))
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if name.endswith("running_var"):
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
            elif name.endswith("running_mean") or name.endswith(".bias"):
                t.copy_(torch.randn(t.shape, generator=gen) * 0.2)
            elif "norm" in name and name.endswith(".weight"):
                t.copy_(torch.rand(t.shape, generator=gen) + 0.5)
            else:
                fan_in = t[0].numel() if t.dim() > 1 else t.numel()
                t.copy_(torch.randn(t.shape, generator=gen) / math.sqrt(fan_in))
    return model.eval()


def random_inputs(sizes: list[tuple[int, int]], seed: int = 1, length: int = NN_LEN) -> tuple[torch.Tensor, ...]:
    """Random binary features on board, zero off board, channel 0 the mask; random globals."""
    gen = torch.Generator().manual_seed(seed)
    n = len(sizes)
    mask = board_mask(sizes, length)
    spatial = (torch.rand(n, 22, length, length, generator=gen) < 0.3).float()
    spatial[:, 0] = 1.0
    spatial = spatial * mask.unsqueeze(1)
    global_inputs = torch.randn(n, 19, generator=gen) * 0.5
    return spatial, global_inputs
