"""Fixtures for the model tests: a tiny randomly initialised TabClustNet saved as a checkpoint file."""

from __future__ import annotations

import pytest
import torch

from model.checkpoint import save_checkpoint
from model.config import ModelConfig
from model.network import TabClustNet


def make_tiny_net(seed: int = 0, **overrides) -> TabClustNet:
    """A ``tiny``-preset network with weights drawn from an explicit generator seed."""
    cfg = ModelConfig.preset("tiny", **overrides)
    with torch.random.fork_rng(devices=[]):  # the global RNG state is restored on exit
        torch.manual_seed(seed)
        net = TabClustNet(cfg)
    return net.eval()


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> str:
    """Path of a checkpoint holding a random ``tiny`` network (shared by the whole session: read-only)."""
    path = tmp_path_factory.mktemp("ckpt") / "tiny.pt"
    save_checkpoint(path, make_tiny_net(0), {"steps": 0, "note": "random weights for tests"})
    return str(path)
