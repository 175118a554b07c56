"""What an ablation sweep is and where it lives: :class:`SweepConfig` (what it computes) and its JSON form,
:class:`SweepOptions` (where it writes, how it runs), :class:`SweepResult`, the sweep folder's names, and the
resource arithmetic that decides how many trials run at once.

Layout of a sweep ``<storage_path>/<name>/``: Tune's experiment state and ``trial_<id>/`` folders,
``sweep.json`` (the :class:`SweepConfig`, the MLflow parent run and tracking URI) and ``trials/<trial_id>/`` per
trial with its Ray Train run (``train/``), ``trial.json`` (child run id, config, attempts) and the final
``model.pt``; ``.slots/`` holds the lock files of :mod:`tune.slots` (how many trials train at once).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import pandas as pd

from pipeline.config import (TrainConfig, apply_overrides, config_from_dict, config_to_dict, train_preset,
                             with_regime)
from pipeline.prior_stream import READ_CPUS
from priors.regimes import REGIMES
from tune.spaces import STUDY_NAMES, Study, StudyName, study_space, with_seeds

EXPERIMENT = "tabclustpfn-ablations"
SWEEP_FILE = "sweep.json"
TRIAL_FILE = "trial.json"
#: Per-task scores of a trial's final network on the held-out synthetic tasks (beside its model.pt).
TASK_SCORES_FILE = "task_scores.json"
TRIALS_DIR = "trials"
SLOTS_DIR = ".slots"
#: What a Tune trial reserves itself. It waits for its slot (:mod:`tune.slots`) before its TorchTrainer reserves
#: anything; ``SweepConfig.trial_cpus`` counts its driving and scoring in the concurrency limit instead, so trials
#: that Tune starts beyond the limit (a resume restarts every failed trial at once) hold almost nothing.
TRIAL_ACTOR_CPUS = 0.01


@dataclass(frozen=True)
class SweepConfig:
    """What a sweep computes: the study, the base run, the per-trial budget and the evaluation.

    ``num_samples``: seeds per variant for grid studies, random configurations for ``hparams``.
    ``report_every``: steps between Train reports (checkpoint + in-loop validation, what ASHA sees);
    default a quarter of the budget. ``trial_cpus``: CPUs counted for each trial's own process (it drives its
    TorchTrainer, then scores) when deciding how many trials fit at once. ``real_datasets``: a subset of the real
    suite (default: all 22).

    ``regime``: the controlled regime the base stream's prior was set to (:func:`regime_base`), or None for the
    base preset's prior; it decides which mechanism the held-out scoring tasks are drawn with
    (:func:`scoring_kind`).

    ``scheduler="asha"`` lets Tune stop weak trials at a Train report. Ray Train (2.60) frees a stopped trial's
    worker placement group through its ``PlacementGroupCleaner``, which asks the State API (served by the
    dashboard: ``init_ray(dashboard=True)``) whether the trial's controller is dead, and cannot find its cluster on
    a host running several Ray instances at once ("Found multiple active Ray instances") unless ``RAY_ADDRESS`` is
    set in the cluster's environment (``RAY_ADDRESS=<ip:port> ray start --head --port <port>``); otherwise those
    CPUs stay reserved and later trials wait for them (seen: a trial starved for 25 minutes behind two stopped
    trials' reservations on a Ray started without the dashboard).
    """

    study: StudyName
    base: TrainConfig = field(default_factory=lambda: train_preset("small"))
    budget_steps: int = 500
    num_samples: int = 1
    scheduler: Literal["fifo", "asha"] = "fifo"
    eval_tasks: int = 64
    real: bool = False
    real_datasets: tuple[str, ...] | None = None
    benchmarks_dir: str | None = None
    report_every: int | None = None
    trial_cpus: float = 0.5
    regime: str | None = None

    def __post_init__(self) -> None:
        if self.regime is not None and self.regime not in REGIMES:
            raise ValueError(f"unknown regime {self.regime!r}: choose one of {', '.join(REGIMES)}")
        if self.study not in STUDY_NAMES:
            raise ValueError(f"unknown study {self.study!r}: choose one of {', '.join(STUDY_NAMES)}")
        for name in ("budget_steps", "num_samples", "eval_tasks"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.scheduler not in ("fifo", "asha"):
            raise ValueError(f"unknown scheduler {self.scheduler!r}: use 'fifo' or 'asha'")
        if self.scheduler == "asha" and self.study == "prior":
            raise ValueError("ASHA ranks trials by their in-loop validation, which the prior study draws from each "
                             "trial's own prior; run the prior study with the fifo scheduler")
        if self.report_every is not None and self.report_every < 1:
            raise ValueError(f"report_every must be >= 1, got {self.report_every}")
        if self.scheduler == "asha" and self.base.val_tasks == 0:
            raise ValueError("ASHA ranks trials by the in-loop validation ARI (val_ari) of each Train report, and the "
                             "base's val_tasks=0 turns it off; set val_tasks >= 1 (--set val_tasks=8) or use the fifo "
                             "scheduler")
        if self.scheduler == "asha" and (self.report_every or 1) > self.budget_steps:
            raise ValueError(f"ASHA's first rung is the first report: report_every={self.report_every} is past the "
                             f"budget of {self.budget_steps} steps; choose report_every <= budget_steps")
        if not self.trial_cpus > 0:
            raise ValueError(f"trial_cpus must be > 0, got {self.trial_cpus}")

    def study_spec(self) -> Study:
        """The study's search space for this base and budget (grid studies repeated over seeds)."""
        return with_seeds(study_space(self.study, self.base, self.budget_steps), self.base.seed, self.num_samples)


@dataclass(frozen=True)
class SweepOptions:
    """Where a sweep writes and how it runs (not part of what it computes)."""

    storage_path: str = "runs/sweeps"
    name: str | None = None
    resume: bool = False
    tracking_uri: str | None = None
    experiment: str = EXPERIMENT
    output: str | None = None
    max_concurrent_trials: int | None = None
    verbose: int = 1

    def __post_init__(self) -> None:
        if self.max_concurrent_trials is not None and self.max_concurrent_trials < 1:
            raise ValueError(f"max_concurrent_trials must be >= 1, got {self.max_concurrent_trials} (leave it out to "
                             "run as many trials as the cluster fits)")


@dataclass
class SweepResult:
    """Outcome of :func:`~tune.driver.run_sweep`: per-trial rows, the ablation table and the files written."""

    sweep_dir: Path
    parent_run_id: str
    trials: pd.DataFrame
    table: pd.DataFrame
    files: dict[str, Path]

    @property
    def n_failed(self) -> int:
        """Trials that errored (rerun by resuming); trials ASHA stopped early are not failures."""
        return int((self.trials["status"] == "failed").sum())


def sweep_to_dict(sweep: SweepConfig) -> dict[str, Any]:
    return config_to_dict(sweep)


def sweep_from_dict(data: Mapping[str, Any]) -> SweepConfig:
    """Inverse of :func:`sweep_to_dict` (unknown keys raise ``ValueError``)."""
    data = dict(data)
    names = data.pop("real_datasets", None)
    cfg = config_from_dict(SweepConfig, data)
    return dataclasses.replace(cfg, real_datasets=tuple(names) if names else None)


def check_real_datasets(names: Sequence[str] | None, benchmarks_dir: str | Path | None = None
                        ) -> tuple[str, ...]:
    """``names`` if each is a dataset of the real suite (a Parquet file of ``<benchmarks>/real``), so a sweep asked
    for a misspelt one is refused before it trains anything (its trials would fail at scoring); else ``ValueError``
    naming the unknown datasets and the suite's. ``None``: the whole suite, every name in it (``ValueError`` when
    the folder is missing). Only the folder is listed, no table is read."""
    from pipeline.evaluation.suites import benchmarks_dir as shared_benchmarks

    folder = shared_benchmarks(benchmarks_dir) / "real"
    if not folder.is_dir():
        raise ValueError(f"real suite not found: {folder} (the shared benchmark folder) is missing")
    known = sorted(path.stem for path in folder.glob("*.parquet"))
    if names is None and known:
        return tuple(known)
    if not names:
        raise ValueError(f"no real dataset named: choose from {', '.join(known)}")
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown real dataset(s) {', '.join(map(repr, unknown))}: the real suite ({folder}) has "
                         f"{', '.join(known)}")
    return tuple(names)


def regime_base(base: TrainConfig, regime: str, study: str) -> TrainConfig:
    """``base`` trained on regime ``regime``'s prior (:func:`pipeline.config.with_regime`). The prior study compares
    GMM, ZEUS and GMM+ZEUS at the regime's sizes, so there the mixture's share of GMM tasks is the paper prior's (the
    regime prior itself makes ``mix`` all GMM)."""
    cfg = with_regime(base, regime)
    if study == "prior":
        prior = dataclasses.replace(cfg.stream.prior, p_gmm=type(cfg.stream.prior)().p_gmm)
        cfg = dataclasses.replace(cfg, stream=dataclasses.replace(cfg.stream, prior=prior))
    return cfg


def scoring_kind(sweep: SweepConfig) -> str:
    """Mechanism of the sweep's held-out scoring tasks, the same for every trial of the study: both (``mix``) for the
    prior study and for sweeps on the base preset's prior, else the regime's own (the base stream's kind)."""
    if sweep.regime is None or sweep.study == "prior":
        return "mix"
    return sweep.base.stream.kind


def trial_config(sweep: SweepConfig, overrides: Mapping[str, Any]) -> TrainConfig:
    """The TrainConfig of one trial: the base schedule compressed into the budget, then the trial's overrides."""
    base = sweep.base
    scale = sweep.budget_steps / base.max_steps
    every = sweep.report_every or max(1, sweep.budget_steps // 4)
    cfg = dataclasses.replace(
        base, max_steps=sweep.budget_steps, checkpoint_every=every, val_every=every,
        optim=dataclasses.replace(base.optim, warmup_steps=round(base.optim.warmup_steps * scale)),
        objective=dataclasses.replace(base.objective,
                                      warmup_matching_steps=round(base.objective.warmup_matching_steps * scale)))
    return apply_overrides(cfg, dict(overrides))


def trial_footprint(cfg: TrainConfig, trial_cpus: float) -> dict[str, float]:
    """Logical resources one running trial holds: its driver, the Train workers, the prior actors, a read task."""
    cpus = trial_cpus + cfg.stream.num_actors * cfg.stream.actor_cpus + READ_CPUS
    cpus += 0 if cfg.use_gpu else cfg.num_workers
    return {"CPU": cpus, "GPU": float(cfg.num_workers) if cfg.use_gpu else 0.0}


def default_max_concurrent(cfg: TrainConfig, trial_cpus: float, cluster: Mapping[str, float]) -> int:
    """How many trials fit in ``cluster`` (``ray.cluster_resources()``) at once.

    Raises ``ValueError`` when not even one does: its Train workers and prior actors would take the last CPUs (or
    GPUs) and its read task wait for ever.
    """
    need = trial_footprint(cfg, trial_cpus)
    fits = int(min(cluster.get(k, 0.0) // v for k, v in need.items() if v > 0))
    if fits < 1:
        raise ValueError(
            f"one trial needs {need['CPU']:g} CPUs ({trial_cpus:g} for the trial, "
            f"{0 if cfg.use_gpu else cfg.num_workers} for Train workers, {cfg.stream.num_actors} prior actor(s) x "
            f"{cfg.stream.actor_cpus:g}, {READ_CPUS:g} for the read task) and {need['GPU']:g} GPUs, but the Ray "
            f"cluster has {cluster.get('CPU', 0.0):g} CPUs and {cluster.get('GPU', 0.0):g} GPUs; lower "
            "stream.num_actors or stream.actor_cpus (--set), num_workers, or trial_cpus")
    return fits


def max_concurrent_trials(sweep: SweepConfig, requested: int | None, cluster: Mapping[str, float]) -> int:
    """How many trials of ``sweep`` run at once: ``requested``, or as many as fit in ``cluster``
    (``ray.cluster_resources()``); ``ValueError`` when the trials asked for would not fit together."""
    probe = trial_config(sweep, {})
    fits = default_max_concurrent(probe, sweep.trial_cpus, cluster)
    if requested is not None and requested > fits:
        need = trial_footprint(probe, sweep.trial_cpus)
        raise ValueError(f"{requested} trials at once need {requested * need['CPU']:g} CPUs and "
                         f"{requested * need['GPU']:g} GPUs, but the Ray cluster has {cluster.get('CPU', 0.0):g} "
                         f"CPUs and {cluster.get('GPU', 0.0):g} GPUs: at most {fits} fit (their Train workers and "
                         "prior actors would take each other's CPUs and wait for ever)")
    return requested or fits
