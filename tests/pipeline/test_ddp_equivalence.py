"""Two Ray Train workers (gloo, DDP) train the same model as one worker with the doubled per-worker batch."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from pipeline.config import train_preset
from pipeline.pretrain import build_trainer
from pipeline.train_loop import build_model, load_train_state


def _train(cfg, run_dir):
    result = build_trainer(cfg, run_dir, tracking_uri=None, run_id=None).fit()
    with result.checkpoint.as_directory() as directory:
        return load_train_state(directory)


@pytest.mark.slow
def test_two_workers_match_one_worker_with_double_batch(ray_local, tmp_path):
    base = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=3, global_batch=4, checkpoint_every=3,
                               val_tasks=0, max_failures=0)
    one = _train(dataclasses.replace(base, num_workers=1, micro_batch=4), tmp_path / "one")
    two = _train(dataclasses.replace(base, num_workers=2, micro_batch=2), tmp_path / "two")
    assert one["step"] == two["step"] == 3
    assert one["metadata"]["world_size"] == 1 and two["metadata"]["world_size"] == 2
    for name, p1 in one["model"].items():
        torch.testing.assert_close(two["model"][name], p1, rtol=1e-4, atol=1e-5, msg=name)
    start = build_model(base).state_dict()  # both runs start here (weights depend on the seed only) ...
    moved = sum(not torch.allclose(start[k], v) for k, v in one["model"].items())
    assert moved > len(start) // 2  # ... and trained away from it
