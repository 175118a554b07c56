"""Two Ray Train workers (gloo DDP, micro-batch B each) train the same model as one worker with micro-batch 2B.

The one-worker reference runs the same step function in one process (``run_local``: what a single Ray Train
worker does, since ``prepare_model`` does not wrap a world of one in DDP), on the same tasks: the tasks of a step
do not depend on how the global batch is split (tests/pipeline/test_prior_stream.py).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from pipeline.config import train_preset
from pipeline.pretrain import build_trainer
from pipeline.train_loop import run_local
from pipeline.train_state import build_model, load_train_state


@pytest.mark.slow
def test_two_workers_match_one_worker_with_double_batch(ray_local, tmp_path):
    base = dataclasses.replace(train_preset("tiny", smoke=True), max_steps=3, global_batch=4, checkpoint_every=3,
                               val_tasks=0, max_failures=0)
    two_cfg = dataclasses.replace(base, num_workers=2, micro_batch=2)
    result = build_trainer(two_cfg, tmp_path / "two", tracking_uri=None, run_id=None).fit()
    with result.checkpoint.as_directory() as directory:
        two = load_train_state(directory)
    one = run_local(dataclasses.replace(base, num_workers=1, micro_batch=4)).net.state_dict()
    assert two["step"] == 3 and two["metadata"]["world_size"] == 2
    for name, p1 in one.items():
        torch.testing.assert_close(two["model"][name], p1, rtol=1e-4, atol=1e-5, msg=name)
    start = build_model(base).state_dict()  # both runs start here (weights depend on the seed only) ...
    moved = sum(not torch.allclose(start[k], v) for k, v in one.items())
    assert moved > len(start) // 2  # ... and trained away from it
