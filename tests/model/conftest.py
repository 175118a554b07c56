"""Helpers for the model tests (the ``tiny_checkpoint`` fixture lives in tests/conftest.py)."""

from __future__ import annotations

import torch

from model.config import ModelConfig
from model.network import TabClustNet


def make_tiny_net(seed: int = 0, **overrides) -> TabClustNet:
    """A ``tiny``-preset network with weights drawn from an explicit generator seed."""
    cfg = ModelConfig.preset("tiny", **overrides)
    with torch.random.fork_rng(devices=[]):  # the global RNG state is restored on exit
        torch.manual_seed(seed)
        net = TabClustNet(cfg)
    return net.eval()
