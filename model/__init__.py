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

__all__ = ["ModelConfig", "TabClustNet", "InferenceOutput", "TrainOutput", "TabClustPFN", "KRangeWarning"]

#: Loaded on first use: the network pulls in torch (about a second) and the estimator scikit-learn and pandas, so
#: that torch-free modules such as ``model.selection`` and ``model.config`` import without them (``--help`` and
#: argument checks of the jobs stay instant).
_LAZY = {"TabClustNet": "model.network", "InferenceOutput": "model.network", "TrainOutput": "model.network",
         "TabClustPFN": "model.estimator", "KRangeWarning": "model.estimator"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'model' has no attribute {name!r}")
