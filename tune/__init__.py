"""Ablation sweeps of TabClustPFN's design choices with Ray Tune (paper Sec. 5 and its ablation appendix).

* :mod:`~tune.spaces`: the studies' search spaces as data (dotted ``TrainConfig`` keys -> domains).
* :mod:`~tune.driver`: ``run_sweep`` and the Tune function that drives one ``TorchTrainer`` per trial.
* :mod:`~tune.evaluate`: scoring a trial's network on the fixed held-out synthetic tasks and the real suite.
* :mod:`~tune.report`: the paper-style ablation table (Markdown and CSV).
"""

from __future__ import annotations

from tune.driver import SweepConfig, SweepOptions, SweepResult, run_sweep
from tune.spaces import STUDY_NAMES, Study, study_space

__all__ = ["STUDY_NAMES", "Study", "SweepConfig", "SweepOptions", "SweepResult", "run_sweep", "study_space"]
