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
