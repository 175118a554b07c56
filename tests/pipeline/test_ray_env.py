"""init_ray: what it asks Ray for when it starts a local instance and when it joins a cluster."""

from __future__ import annotations

import pytest

from pipeline import ray_env


@pytest.fixture()
def calls(monkeypatch):
    seen = []
    monkeypatch.setattr(ray_env.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_env.ray, "init", lambda **kw: seen.append(kw))
    return seen


def test_a_local_ray_for_sweeps_gets_a_loopback_dashboard(calls):
    """Ray Train's placement-group cleaner asks the State API (served by the dashboard) whether a stopped trial's
    controller is dead; without it a stopped trial's CPUs stay reserved."""
    assert ray_env.init_ray("local", dashboard=True, num_cpus=4)
    (kw,) = calls
    assert kw["address"] == "local" and kw["num_cpus"] == 4
    assert kw["include_dashboard"] is True and kw["dashboard_host"] == "127.0.0.1"


def test_other_jobs_start_ray_without_a_dashboard_and_joining_never_asks_for_one(calls, monkeypatch):
    ray_env.init_ray("local")
    ray_env.init_ray("127.0.0.1:6379", dashboard=True)
    local, joined = calls
    assert local["include_dashboard"] is False and "dashboard_host" not in local
    assert joined["address"] == "127.0.0.1:6379" and joined["include_dashboard"] is False
    assert "dashboard_host" not in joined
