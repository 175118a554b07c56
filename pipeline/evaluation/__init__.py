"""The paper's evaluation benchmark (Sec. 4, App. B-C) on Ray.

* :mod:`~pipeline.evaluation.suites`: held-out synthetic datasets, the UCI suite, any folder of Parquet files.
* :mod:`~pipeline.evaluation.methods`: TabClustPFN and the scikit-learn baselines (``*`` true K, ``+`` silhouette K).
* :mod:`~pipeline.evaluation.metrics`: ARI/NMI, ranks, median [IQR], difficulty split, win rates.
* :mod:`~pipeline.evaluation.stats`: paired t/Wilcoxon tests, Friedman, Nemenyi critical difference.
* :mod:`~pipeline.evaluation.calibration`: coverage of the CIN posterior over K.
* :mod:`~pipeline.evaluation.report` / :mod:`~pipeline.evaluation.plots`: Markdown tables and PNG figures.
* :mod:`~pipeline.evaluation.runner`: ``EvalConfig`` and ``run_evaluation``, the entry point of ``jobs/evaluate.py``.
"""

from __future__ import annotations

from pipeline.evaluation.runner import EvalConfig, run_evaluation

__all__ = ["EvalConfig", "run_evaluation"]
