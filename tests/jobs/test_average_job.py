"""jobs/average_checkpoints.py: a soup of two runs from one parent, with its lineage, and refusals."""

from __future__ import annotations

import torch

from model.checkpoint import load_checkpoint, save_checkpoint
from tests.job_scripts import load_job
from tests.model.conftest import make_tiny_net


def _job():
    return load_job("average_checkpoints")


def _meta(branch: list[dict]) -> dict:
    parent = [{"phase": 1, "run": "gpu", "tasks": 1000}, {"phase": 2, "run": "cpu", "tasks": 100}]
    lineage = parent + branch
    return {"step": 5, "tasks_seen": branch[-1]["tasks"], "lineage": lineage, "hardware": "cpu",
            "total_tasks_seen": sum(p["tasks"] for p in lineage), "train_config": {"seed": 1}}


def test_job_writes_the_average_and_exits_1_on_a_mismatch(tmp_path, capsys):
    job = _job()
    a, b = make_tiny_net(1), make_tiny_net(2)
    pa = save_checkpoint(tmp_path / "a.pt", a, _meta([{"phase": 3, "run": "a", "tasks": 30}]))
    pb = save_checkpoint(tmp_path / "b.pt", b, _meta([{"phase": 3, "run": "b", "tasks": 50}]))
    out = tmp_path / "soup" / "model.pt"
    assert job.main([str(pa), str(pb), "--out", str(out)]) == 0
    net, meta = load_checkpoint(out)
    key = next(iter(a.state_dict()))
    torch.testing.assert_close(net.state_dict()[key], (a.state_dict()[key] + b.state_dict()[key]) / 2)
    assert meta["lineage"][-1]["run"] == "average" and meta["total_tasks_seen"] == 1180
    other = save_checkpoint(tmp_path / "c.pt", make_tiny_net(1, n_cls=1), {})
    assert job.main([str(pa), str(other), "--out", str(tmp_path / "x.pt")]) == 1
    assert "model configs differ" in capsys.readouterr().err and not (tmp_path / "x.pt").exists()


def test_an_infinite_or_nan_weight_is_refused_instead_of_writing_a_nan_model(tmp_path, capsys):
    job = _job()
    pa = save_checkpoint(tmp_path / "a.pt", make_tiny_net(1), {})
    pb = save_checkpoint(tmp_path / "b.pt", make_tiny_net(2), {})
    for weights in (["inf", "1"], ["nan", "1"], ["0", "0"]):
        assert job.main([str(pa), str(pb), "--weights", *weights, "--out", str(tmp_path / "x.pt")]) == 1
        assert "finite non-negative" in capsys.readouterr().err and not (tmp_path / "x.pt").exists()
    assert job.main([str(pa), str(pb), "--weights", "1e308", "1e308", "--out", str(tmp_path / "y.pt")]) == 0
    net, _ = load_checkpoint(tmp_path / "y.pt")
    assert all(torch.isfinite(v).all() for v in net.state_dict().values() if v.is_floating_point())
