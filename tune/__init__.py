"""Ablation sweeps of TabClustPFN's design choices with Ray Tune (paper Sec. 5 and its ablation appendix).

* :mod:`~tune.spaces`: the studies' search spaces as data (dotted ``TrainConfig`` keys -> domains).
* :mod:`~tune.config`: what a sweep computes (``SweepConfig``), how it runs (``SweepOptions``), how many trials fit.
* :mod:`~tune.driver`: ``run_sweep`` and the Tune function that drives one ``TorchTrainer`` per trial.
* :mod:`~tune.tracking`: the sweep's MLflow parent run and one child run per trial.
* :mod:`~tune.evaluate`: scoring a trial's network on the fixed held-out synthetic tasks and the real suite.
* :mod:`~tune.report`: the paper-style ablation table (Markdown and CSV).
"""

from __future__ import annotations

from tune.config import SweepConfig, SweepOptions, SweepResult
from tune.driver import run_sweep
from tune.spaces import STUDY_NAMES, Study, study_space

__all__ = ["STUDY_NAMES", "Study", "SweepConfig", "SweepOptions", "SweepResult", "run_sweep", "study_space"]
