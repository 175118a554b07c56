"""Synthetic pretraining priors of TabClustPFN (numpy and scipy only; no Ray, MLflow or matplotlib).

A dataset is one seed: :func:`sample_dataset` draws N, D, K and the mechanism (GMM w.p. 0.4, ZEUS w.p. 0.6),
generates the data, z-normalises the continuous columns and permutes the features::

    from priors import PriorConfig, sample_dataset
    ds = sample_dataset(seed=0)                      # the paper's mix prior
    ds = sample_dataset(seed=0, kind="gmm")          # or "zeus"
    ds.X, ds.y, ds.n_clusters, ds.categorical, ds.meta

Modules: :mod:`priors.config` (every range and probability), :mod:`priors.overlap` (exact MixSim overlaps),
:mod:`priors.gmm` (MixSim-style mixtures with a target Omega_max), :mod:`priors.zeus` (ZEUS with a random
iResNet and categorical columns), :mod:`priors.sample` (the dataset level), :mod:`priors.nuisance` (noise
columns and contaminated rows, off by default), :mod:`priors.onemode` (tables with a single mode, K = 2, for
refitting CIN; not part of the paper's prior), :mod:`priors.plotting` (grids of 2-D datasets; imports matplotlib
only when called).

The numerical routines are single-threaded numpy; run them with a single-threaded BLAS
(``OMP_NUM_THREADS=1``, as Ray workers do) to avoid thread oversubscription.
"""

from __future__ import annotations

from priors.config import GMMConfig, NuisanceConfig, PriorConfig, ZeusConfig
from priors.overlap import pairwise_overlap
from priors.sample import PriorDataset, TaskSpec, sample_dataset, sample_task_spec, spec_for_seed

__all__ = [
    "GMMConfig",
    "NuisanceConfig",
    "PriorConfig",
    "PriorDataset",
    "TaskSpec",
    "ZeusConfig",
    "pairwise_overlap",
    "sample_dataset",
    "sample_task_spec",
    "spec_for_seed",
]
