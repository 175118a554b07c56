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


def test_joining_a_running_cluster_unasked_names_it_and_how_to_run_privately(monkeypatch, caplog):
    """A job started by hand beside a running cluster (e.g. one a killed run left behind) joins it, and says so:
    that cluster going away takes the job with it."""
    class Context:
        address_info = {"gcs_address": "127.0.0.1:6380"}

    seen = []
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray_env.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_env.ray, "init", lambda **kw: seen.append(kw) or Context())
    monkeypatch.setattr(ray_env.ray, "cluster_resources", lambda: {"CPU": 6.0})
    with caplog.at_level("WARNING", logger="pipeline.ray_env"):
        assert ray_env.init_ray()
    assert [kw["address"] for kw in seen] == ["auto"]
    (record,) = caplog.records
    assert "127.0.0.1:6380" in record.getMessage() and "6 CPUs" in record.getMessage()
    assert "RAY_ADDRESS=local" in record.getMessage()


def test_ray_address_local_starts_a_private_ray_with_enough_logical_cpus(calls, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "local")
    assert ray_env.init_ray()
    (kw,) = calls
    assert kw["address"] == "local" and kw["num_cpus"] >= ray_env.MIN_LOCAL_CPUS


def test_no_cluster_to_join_starts_a_local_ray(calls, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)

    def init(**kw):
        calls.append(kw)
        if kw["address"] == "auto":
            raise ConnectionError("no running cluster")

    monkeypatch.setattr(ray_env.ray, "init", init)
    assert ray_env.init_ray()
    assert [kw["address"] for kw in calls] == ["auto", "local"]
