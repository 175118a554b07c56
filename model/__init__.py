"""TabClustPFN's model: PIN (encoder + prototype decoder), CIN, losses, checkpoints and the sklearn estimator.

Plain PyTorch: this package never imports ray, mlflow or ``priors``.

Shape glossary (used in every docstring and shape comment):
    B  tasks (datasets) in a batch        N  rows            D  features
    K  clusters (K_max when padded)       E  embedding width H  attention heads
    d  row representation width (= col_dim * n_cls)
"""

from __future__ import annotations

from typing import Any

from model.config import ModelConfig
from model.network import InferenceOutput, TabClustNet, TrainOutput

__all__ = ["ModelConfig", "TabClustNet", "InferenceOutput", "TrainOutput", "TabClustPFN"]


def __getattr__(name: str) -> Any:
    # The estimator pulls in scikit-learn and pandas; load it on first use only.
    if name == "TabClustPFN":
        from model.estimator import TabClustPFN

        return TabClustPFN
    raise AttributeError(f"module 'model' has no attribute {name!r}")
