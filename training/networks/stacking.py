"""Progressive stacking (Gong et al., 2019): a deeper network of the same width starts from a trained shallower one,
layer i from its layer i mod n, instead of from nothing (ELECTRA-small's 12 x 256 from a trained 6 x 256):

    python -m training.networks.pretrain --config small-cpu --init-from PAIR --init-stack --data ... --out ...

Every weight outside the encoder's layers (embeddings, heads) is taken as it is. A generator of another width than
the pair's (the shipped pair's corrector head sits on the discriminator's 256-wide body; small-cpu's generator is
64 wide) cannot be stacked: it starts new, and the provenance says so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch
from torch import nn

LAYER = re.compile(r"^(.*\.encoder\.layer\.)(\d+)(\..+)$")


def depth(state: Mapping[str, torch.Tensor]) -> int:
    """The number of encoder layers in a state dict."""
    return 1 + max((int(m.group(2)) for k in state if (m := LAYER.match(k))), default=-1)


def stack_layers(state: Mapping[str, torch.Tensor], layers: int) -> dict[str, torch.Tensor]:
    """``state`` with ``layers`` encoder layers: layer i a copy of its layer i mod n (n its depth)."""
    n = depth(state)
    if n == 0 or layers < n:
        raise ValueError(f"cannot stack {n} encoder layers into {layers}")
    out: dict[str, torch.Tensor] = {}
    for key, value in state.items():
        m = LAYER.match(key)
        if m is None:
            out[key] = value
            continue
        for j in range(int(m.group(2)), layers, n):
            out[f"{m.group(1)}{j}{m.group(3)}"] = value.clone()
    return out


def load_stacked(model: nn.Module, trained: nn.Module) -> str:
    """Load ``trained`` into ``model`` (the same width, as deep or deeper), stacked; what was done, in words.
    RuntimeError when the widths differ."""
    source = trained.state_dict()
    layers = depth(model.state_dict())
    model.load_state_dict(stack_layers(source, layers))
    return f"{depth(source)} -> {layers} layers (layer i from layer i mod {depth(source)})"
