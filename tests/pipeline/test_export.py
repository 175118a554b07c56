"""Exporting a run's training state to the model format that the estimator loads."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from model import TabClustPFN
from model.checkpoint import load_checkpoint
from pipeline.config import train_preset
from pipeline.export import export_run
from pipeline.train_loop import run_local


def test_export_writes_the_newest_state_with_its_provenance(tmp_path):
    cfg = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=4, checkpoint_every=2, val_tasks=0)
    result = run_local(cfg, run_dir=tmp_path / "run")
    out = export_run(tmp_path / "run", tmp_path / "model.pt", metadata={"note": "phase 1"})
    net, meta = load_checkpoint(out)
    assert meta["step"] == 4 and meta["source_run"] == "run" and meta["note"] == "phase 1"
    assert meta["tasks_seen"] == 4 * cfg.global_batch
    for key, value in result.net.state_dict().items():
        assert torch.equal(net.state_dict()[key], value), key
    X = np.random.default_rng(0).normal(size=(40, 3))
    assert TabClustPFN(checkpoint=str(out), random_state=0).fit(X).labels_.shape == (40,)


def test_export_refuses_a_run_without_checkpoints(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no training checkpoint"):
        export_run(tmp_path / "empty", tmp_path / "model.pt")
