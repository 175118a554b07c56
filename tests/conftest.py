"""Shared fixtures: one in-process Ray per test session, bound to 127.0.0.1, stopped at the end."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def ray_local():
    """A private local Ray (4 logical CPUs: a Train worker plus Ray Data actors need more than 2)."""
    import ray

    if ray.is_initialized():
        yield ray
        return
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
    ray.init(
        address="local",
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        _node_ip_address="127.0.0.1",
    )
    yield ray
    ray.shutdown()


@pytest.fixture()
def tracking_uri(tmp_path):
    """A throwaway MLflow store (SQLite file + artifact dir) for one test."""
    return f"sqlite:///{tmp_path / 'mlruns.db'}"


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory) -> str:
    """Path of a checkpoint holding a random ``tiny`` network (shared by the whole session: read-only)."""
    import torch

    from model import ModelConfig, TabClustNet
    from model.checkpoint import save_checkpoint

    with torch.random.fork_rng(devices=[]):  # the global RNG state is restored on exit
        torch.manual_seed(0)
        net = TabClustNet(ModelConfig.preset("tiny"))
    path = tmp_path_factory.mktemp("ckpt") / "tiny.pt"
    save_checkpoint(path, net, {"steps": 0, "note": "random weights for tests"})
    return str(path)
