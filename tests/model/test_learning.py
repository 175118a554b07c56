"""A real learning test: a tiny PIN trained for a few hundred steps separates three far-apart blobs."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import adjusted_rand_score

from model import ModelConfig, TabClustNet
from model.batching import collate, to_torch
from model.objective import ObjectiveConfig, compute_losses


class _Blobs:
    def __init__(self, rng: np.random.Generator, n: int = 60, k: int = 3):
        # vertices of a randomly rotated equilateral triangle of radius 6: every pair is far apart
        angles = rng.uniform(0, 2 * np.pi) + 2 * np.pi * np.arange(k) / k
        centers = 6 * np.stack([np.cos(angles), np.sin(angles)], axis=1)
        self.y = rng.integers(0, k, n)
        X = centers[self.y] + 0.5 * rng.normal(size=(n, 2))
        self.X = ((X - X.mean(0)) / X.std(0)).astype(np.float32)
        self.n_clusters, self.categorical = k, ()


def test_tiny_model_learns_to_separate_three_blobs():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    net = TabClustNet(ModelConfig.preset("tiny", col_dim=16, dec_blocks=2))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    objective = ObjectiveConfig(warmup_matching_steps=100)
    for step in range(300):
        batch = to_torch(collate([_Blobs(rng) for _ in range(8)]))
        loss = compute_losses(net, batch, objective, step)["loss"]
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
    net.eval()
    test = [_Blobs(np.random.default_rng(1000 + i)) for i in range(10)]
    t = to_torch(collate(test))
    with torch.no_grad():
        probs = net.infer(t["X"], t["row_mask"], t["col_mask"], t["cat_mask"]).probs[:, 1]  # K = 3
    aris = [adjusted_rand_score(task.y, probs[i].argmax(-1).numpy()) for i, task in enumerate(test)]
    assert np.median(aris) > 0.9, aris
