"""Run the benchmark: every (method, dataset) pair as a Ray task with a timeout, then tables, plots and MLflow.

A task that raises, whose worker dies, or that runs past ``timeout_s`` is recorded as a failed run (status
``failed`` or ``timeout``, NaN scores, the reason in ``error``) and the run goes on. A task's deadline counts
from the moment it starts running, and at most ``num_workers`` tasks are in flight.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import warnings
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from model.ensemble import DEFAULT_N_ESTIMATORS
from model.refinement import DEFAULT_REFINE, REFINES
from model.selection import DEFAULT_ESTIMATOR_K_SELECTION, ESTIMATOR_K_SELECTIONS, resolve_k_selection
from pipeline.batch_cluster import check_checkpoint
from pipeline.evaluation import calibration as calib
from pipeline.evaluation import plots, report, suites
from pipeline.evaluation.methods import QUICK_METHODS, MethodSpec, run_method, select_methods
from pipeline.evaluation.metrics import clustering_scores

logger = logging.getLogger(__name__)

QUICK_REAL = ("haberman", "iris", "wine")  # small, one with a categorical column
#: Tables of each folder suite in quick mode: small ones, with a categorical column among them.
QUICK_FOLDER = {"real": QUICK_REAL, "openml": ("openml_42585_penguins", "openml_694_diggle_table_a2",
                                               "openml_53_heart-statlog"), "dev": ("cats", "crabs", "neurocog")}
SUITES = ("synthetic", *suites.FOLDER_SUITES, *suites.REGIME_SUITES)
QUICK_SYNTHETIC = (2, 2)  # GMM, ZEUS datasets
QUICK_REGIME_TASKS = 4  # tasks per group of a regime suite (amortized: 4; cluster-pfn: 4 per D)
QUICK_CALIBRATION = 16
_STARTED = "__task_started__"


@dataclass(frozen=True)
class EvalConfig:
    """Settings of one evaluation run (``jobs/evaluate.py`` flags map one to one)."""

    suites: tuple[str, ...] = ("synthetic", "real")
    data_dir: str | None = None
    benchmarks_dir: str | None = None
    methods: tuple[str, ...] | None = None
    checkpoint: str | None = None
    k_selection: str | None = None  # TabClustPFN's rule for K (None: the estimator's default)
    n_estimators: int | None = None  # TabClustPFN's column orderings (None: the estimator's default)
    refine: str | None = None  # TabClustPFN's test-time refinement (None: the estimator's default)
    allow_single_cluster: bool = False  # TabClustPFN may answer one cluster (the estimator's option; off)
    screen_noise: bool | str | None = None  # TabClustPFN's dropping of pure-noise columns (None: the default)
    dequantize: bool | None = None  # TabClustPFN's spreading of few-level columns (None: the default)
    power_transform: bool | None = None  # TabClustPFN's Yeo-Johnson transform of skewed columns (None: the default)
    output_dir: str = "outputs/evaluation"
    quick: bool = False
    calibration_size: int = 3200
    tasks_per_group: int | None = None  # regime suites: the first tasks of each group (None: all, or quick's)
    timeout_s: float = 600.0
    seed: int = 0
    num_workers: int | None = None
    tracking_uri: str | None = None
    experiment: str = "evaluation"
    progress: bool = True

    def __post_init__(self) -> None:
        if self.screen_noise is not None:
            from model.screening import screen_noise_setting

            object.__setattr__(self, "screen_noise", screen_noise_setting(self.screen_noise))
        unknown = set(self.suites) - set(SUITES)
        if unknown:
            raise ValueError(f"unknown suite(s) {sorted(unknown)}: use any of {', '.join(SUITES)} (and --data DIR)")
        if not self.suites and self.data_dir is None:
            raise ValueError("nothing to evaluate: choose a suite or pass a data folder")
        if not self.timeout_s > 0:  # NaN too
            raise ValueError(f"timeout_s must be > 0 (seconds per run, --timeout), got {self.timeout_s:g}")
        if self.calibration_size < 0:
            raise ValueError(f"calibration_size must be >= 0 (--calibration-size; 0 skips the calibration), "
                             f"got {self.calibration_size}")
        if self.tasks_per_group is not None and self.tasks_per_group < 1:
            raise ValueError(f"tasks_per_group must be >= 1 (--tasks-per-group; leave it unset for the whole "
                             f"regime suites), got {self.tasks_per_group}")
        if self.num_workers is not None and self.num_workers < 1:
            raise ValueError(f"num_workers must be >= 1 (--num-workers; leave it unset for one worker per core), "
                             f"got {self.num_workers}")
        if self.methods is not None and len(self.methods) == 0:
            raise ValueError("no method to run: methods is empty; name at least one (--methods) or pass None for all")
        select_methods(self.methods)  # unknown method names fail here, before any work
        if self.refine is not None and self.refine not in REFINES:
            raise ValueError(f"unknown refine {self.refine!r} (--refine): use one of {REFINES}")
        if self.k_selection is not None and self.k_selection not in ESTIMATOR_K_SELECTIONS:
            raise ValueError(f"unknown k_selection {self.k_selection!r}: use one of {ESTIMATOR_K_SELECTIONS}")
        if self.n_estimators is not None and self.n_estimators < 1:
            raise ValueError(f"n_estimators must be >= 1 (--n-estimators), or None for the estimator's default, "
                             f"got {self.n_estimators}")


@dataclass(frozen=True)
class TaskFailure:
    """Why a Ray task produced no result."""

    status: str  # "failed" | "timeout"
    error: str


def evaluate_pair(spec: MethodSpec, dataset: suites.EvalDataset, checkpoint: str | None, seed: int,
                  k_selection: str | None = None, n_estimators: int | None = None, refine: str | None = None,
                  allow_single_cluster: bool = False, screen_noise: bool | str | None = None,
                  dequantize: bool | None = None, power_transform: bool | None = None) -> dict:
    """One (method, dataset) run: scores, chosen K and time, or the error; never raises."""
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # convergence chatter of the baselines
            out = run_method(spec, dataset, checkpoint=checkpoint, seed=seed, k_selection=k_selection,
                             n_estimators=n_estimators, refine=refine, allow_single_cluster=allow_single_cluster,
                             screen_noise=screen_noise, dequantize=dequantize, power_transform=power_transform)
        return {"status": "ok", **clustering_scores(dataset.y, out["labels"]), "k_pred": out["k_pred"],
                "seconds": out["seconds"], "error": "",
                **calib.k_probability_scores(out.get("k_probabilities"), dataset.n_clusters)}
    except Exception as exc:  # a failed method is a result, not a crash
        return {"status": "failed", "ari": np.nan, "nmi": np.nan, "k_pred": np.nan,
                "seconds": time.perf_counter() - start, "error": f"{type(exc).__name__}: {exc}"[:300]}


def _started_then(fn: Callable, *args: Any):
    """Ray streaming task body: yield a marker as soon as the task runs, then ``fn(*args)``."""
    yield _STARTED
    yield fn(*args)


def run_with_timeouts(calls: list[tuple[Any, Callable, tuple]], *, timeout_s: float, num_workers: int,
                      desc: str = "tasks", progress: bool = True) -> dict[Any, Any]:
    """Run ``fn(*args)`` for each ``(key, fn, args)`` as a Ray task; return ``{key: result or TaskFailure}``.

    Each task is a streaming generator that first yields a start marker, so its deadline counts from the moment
    it starts running (not from submission, which may wait for a free CPU or a new worker process); a task
    past its deadline is cancelled (its worker killed). At most ``num_workers`` tasks are in flight.
    """
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1 (tasks in flight), got {num_workers}")
    import ray
    from tqdm.auto import tqdm

    remote = ray.remote(num_cpus=1, max_retries=0, num_returns="streaming")(_started_then)
    queue, pending, results = deque(calls), {}, {}  # pending: generator -> [key, deadline or None]
    with tqdm(total=len(calls), desc=desc, disable=not progress) as bar:

        def finish(gen, value) -> None:
            key, _ = pending.pop(gen)
            results[key] = value
            bar.update(1)

        while queue or pending:
            while queue and len(pending) < num_workers:
                key, fn, args = queue.popleft()
                pending[remote.remote(fn, *args)] = [key, None]
            deadlines = [d for _, d in pending.values() if d is not None]
            wait_s = min(5.0, max(0.05, min(deadlines) - time.monotonic())) if deadlines else 5.0
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=wait_s)
            for gen in ready:
                try:
                    value = ray.get(next(gen))
                except StopIteration:
                    finish(gen, TaskFailure("failed", "the task ended without a result"))
                    continue
                except ray.exceptions.RayError as exc:
                    finish(gen, TaskFailure("failed", f"worker error: {type(exc).__name__}: {exc}"[:300]))
                    continue
                if isinstance(value, str) and value == _STARTED and pending[gen][1] is None:
                    pending[gen][1] = time.monotonic() + timeout_s
                else:
                    finish(gen, value)
            now = time.monotonic()
            for gen, (key, deadline) in list(pending.items()):
                if deadline is not None and now > deadline:
                    ray.cancel(gen, force=True)
                    finish(gen, TaskFailure("timeout", f"no result within {timeout_s:g} s; cancelled"))
                    logger.warning("%s timed out after %g s", key, timeout_s)
    return results


def default_workers() -> int:
    """Tasks in flight unless ``num_workers`` says: one per CPU of the joined Ray, and on a Ray of one node no more
    than this machine's cores. A local Ray is given more logical CPUs than a small machine has cores
    (``pipeline.ray_env.MIN_LOCAL_CPUS``, for Train and Data), and a run timed while another shares its core
    reports about twice its time."""
    import ray

    cpus = max(1, int(ray.available_resources().get("CPU", 1)))
    if len([n for n in ray.nodes() if n.get("Alive")]) == 1:
        cpus = min(cpus, os.cpu_count() or 1)
    return cpus


def regime_tasks(cfg: EvalConfig) -> int | None:
    """Tasks per group of the regime suites: ``tasks_per_group``, capped at :data:`QUICK_REGIME_TASKS` in
    quick mode; None (every task) otherwise."""
    if cfg.quick:
        return min(cfg.tasks_per_group or QUICK_REGIME_TASKS, QUICK_REGIME_TASKS)
    return cfg.tasks_per_group


def load_datasets(cfg: EvalConfig) -> list[suites.EvalDataset]:
    """The datasets of the configured suites (reduced in quick mode)."""
    out: list[suites.EvalDataset] = []
    if "synthetic" in cfg.suites:
        out += suites.synthetic_suite(*(QUICK_SYNTHETIC if cfg.quick else (None, None)))
    for name, load in suites.FOLDER_SUITES.items():
        if name in cfg.suites:
            out += load(cfg.benchmarks_dir, list(QUICK_FOLDER[name]) if cfg.quick else None)
    n_tasks = regime_tasks(cfg)
    for name, draw in suites.REGIME_SUITES.items():
        if name in cfg.suites:
            out += draw(n_tasks)
    if cfg.data_dir is not None:
        out += suites.load_folder(cfg.data_dir, "data", "data")
    names = [d.name for d in out]
    if len(set(names)) != len(names):
        raise ValueError(f"dataset names collide across suites: {sorted({n for n in names if names.count(n) > 1})}")
    return out


def dataset_table(datasets: list[suites.EvalDataset]) -> pd.DataFrame:
    """One row per dataset: suite, size, K, Bayes-oracle ARI (GMM) and the preprocessing notes."""
    rows = []
    for d in datasets:
        bayes = clustering_scores(d.y, d.bayes_labels)["ari"] if d.bayes_labels is not None else np.nan
        rows.append({"suite": d.suite, "group": d.group, "dataset": d.name, "n_rows": len(d.y),
                     "n_features": d.features.shape[1], "n_categorical": len(d.categorical),
                     "k_true": d.n_clusters, "bayes_ari": bayes, "notes": d.notes})
    return pd.DataFrame(rows)


def run_pairs(cfg: EvalConfig, datasets: list[suites.EvalDataset], specs: list[MethodSpec],
              num_workers: int) -> pd.DataFrame:
    """Every (method, dataset) as a Ray task; the long results table (one row per pair)."""
    import ray

    refs = {d.name: ray.put(d) for d in datasets}
    calls = [((s.name, d.name), evaluate_pair,
              (s, refs[d.name], cfg.checkpoint, cfg.seed, cfg.k_selection, cfg.n_estimators, cfg.refine,
               cfg.allow_single_cluster, cfg.screen_noise, cfg.dequantize, cfg.power_transform))
             for d in datasets for s in specs]
    raw = run_with_timeouts(calls, timeout_s=cfg.timeout_s, num_workers=num_workers, desc="method x dataset",
                            progress=cfg.progress)
    info = dataset_table(datasets).set_index("dataset")
    rows = []
    for (method, name), res in raw.items():
        if isinstance(res, TaskFailure):
            res = {"status": res.status, "ari": np.nan, "nmi": np.nan, "k_pred": np.nan,
                   "seconds": cfg.timeout_s if res.status == "timeout" else np.nan, "error": res.error}
        spec = next(s for s in specs if s.name == method)
        rows.append({"suite": info.at[name, "suite"], "group": info.at[name, "group"], "dataset": name,
                     "method": method, "k_mode": spec.k_mode, **res, "k_true": info.at[name, "k_true"],
                     "bayes_ari": info.at[name, "bayes_ari"]})
    order = {s.name: i for i, s in enumerate(specs)}
    out = pd.DataFrame(rows).assign(_order=lambda f: f["method"].map(order))
    return out.sort_values(["suite", "dataset", "_order"]).drop(columns="_order").reset_index(drop=True)


def run_calibration(cfg: EvalConfig, n: int, num_workers: int) -> pd.DataFrame:
    """CIN coverage on ``n`` held-out GMM datasets, in chunks of seeds (one model load per chunk)."""
    seeds = calib.calibration_seeds(n)
    size = max(1, int(np.ceil(n / (4 * num_workers))))
    chunks = [seeds[i : i + size] for i in range(0, n, size)]
    calls = [(i, calib.posterior_chunk, (chunk, cfg.checkpoint, cfg.seed, cfg.n_estimators))
             for i, chunk in enumerate(chunks)]
    raw = run_with_timeouts(calls, timeout_s=cfg.timeout_s * size, num_workers=num_workers, desc="calibration",
                            progress=cfg.progress)
    got = [item for res in raw.values() if not isinstance(res, TaskFailure) for item in res]
    missing = n - len(got)
    if missing:
        logger.warning("calibration: %d of %d datasets failed", missing, n)
    table = calib.coverage_table([p for _, _, p in got], [k for _, k, _ in got])
    return table.assign(n_failed=missing)


def _metric_key(text: str) -> str:
    """MLflow-safe metric key: ``*`` -> ``_trueK``, ``+`` -> ``_silK``."""
    return text.replace("*", "_trueK").replace("+", "_silK")


def write_outputs(out_dir: Path, results: pd.DataFrame, datasets: pd.DataFrame,
                  analyses: list[report.SuiteAnalysis], calibration: pd.DataFrame | None,
                  header: list[str], provenance: list[str] | None = None) -> list[Path]:
    """CSV, Markdown and PNG outputs; returns the written files. ``provenance``: the lines naming the checkpoint's
    sha256, the machine and the date (:func:`report.provenance_lines`; default: machine and date)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    results.to_csv(out_dir / "results.csv", index=False)
    datasets.assign(difficulty=datasets["dataset"].map(
        pd.concat([a.difficulty for a in analyses]) if analyses else pd.Series(dtype=str))
    ).to_csv(out_dir / "datasets.csv", index=False)
    files = [out_dir / "results.csv", out_dir / "datasets.csv"]
    for a in analyses:
        for setting, sig in a.significance.items():
            sig["paired"].to_csv(out_dir / f"{a.suite}_{setting}_paired_tests.csv", index=False)
            files.append(out_dir / f"{a.suite}_{setting}_paired_tests.csv")
            files.append(plots.plot_cd_diagram(sig["average_ranks"], sig["cd"], sig["cd_groups"],
                                               out_dir / f"{a.suite}_{setting}_cd.png",
                                               f"{a.suite}: {report.SETTING_TITLES[setting]} (ARI ranks)"))
            if not sig["paired"].empty:
                for test, tag in (("t_p", "ttest"), ("wilcoxon_p", "wilcoxon")):
                    files.append(plots.plot_paired_differences(a.wide_ari[setting], sig["paired"],
                                                               report.REFERENCES[setting],
                                                               out_dir / f"{a.suite}_{setting}_{tag}.png", test))
        files.append(plots.plot_win_rate(a.win_rate, out_dir / f"{a.suite}_win_rate.png",
                                         f"{a.suite}: pairwise ARI win rate (%)"))
        files.append(plots.plot_time_vs_rank(a.median_seconds, a.median_rank_all,
                                             out_dir / f"{a.suite}_time_vs_rank.png", f"{a.suite}: time vs rank"))
    if calibration is not None:
        calibration.to_csv(out_dir / "calibration.csv", index=False)
        files += [out_dir / "calibration.csv", plots.plot_calibration(calibration, out_dir / "calibration.png")]
    failures = results.loc[results["status"] != "ok", ["suite", "dataset", "method", "status", "error"]]
    (out_dir / "results.md").write_text(report.render_markdown(analyses, header, calibration, failures,
                                                               provenance))
    files.append(out_dir / "results.md")
    return files


def command_line(cfg: EvalConfig) -> str:
    """The ``jobs/evaluate.py`` command that reproduces ``cfg`` (written at the top of ``results.md``)."""
    parts = ["python jobs/evaluate.py", *(f"--suite {x}" for x in cfg.suites)]
    defaults = EvalConfig()
    for flag, value, default in (("--data", cfg.data_dir, None), ("--benchmarks-dir", cfg.benchmarks_dir, None),
                                 ("--checkpoint", cfg.checkpoint, None), ("--k-selection", cfg.k_selection, None),
                                 ("--n-estimators", cfg.n_estimators, None), ("--refine", cfg.refine, None),
                                 ("--output", cfg.output_dir, defaults.output_dir),
                                 ("--calibration-size", cfg.calibration_size, defaults.calibration_size),
                                 ("--tasks-per-group", cfg.tasks_per_group, None),
                                 ("--timeout", cfg.timeout_s, defaults.timeout_s), ("--seed", cfg.seed, 0)):
        if value != default:
            parts.append(f"{flag} {value:g}" if isinstance(value, float) else f"{flag} {value}")
    if cfg.allow_single_cluster:
        parts.append("--allow-single-cluster")
    if cfg.screen_noise is not None:
        parts.append(f"--screen-noise {str(cfg.screen_noise).lower()}")
    if cfg.dequantize is not None:
        parts.append(f"--dequantize {str(cfg.dequantize).lower()}")
    if cfg.power_transform is not None:
        parts.append(f"--power-transform {str(cfg.power_transform).lower()}")
    if cfg.methods is not None:
        parts.append("--methods " + " ".join(f"'{m}'" for m in cfg.methods))
    if cfg.quick:
        parts.append("--quick")
    return " ".join(parts)


def _screen_noise(cfg: EvalConfig) -> str:
    """The estimator's ``screen_noise`` as the run used it."""
    from model.screening import DEFAULT_SCREEN_NOISE

    return str(DEFAULT_SCREEN_NOISE if cfg.screen_noise is None else cfg.screen_noise)


def _dequantize(cfg: EvalConfig) -> bool:
    """The estimator's ``dequantize`` as the run used it."""
    from model.dequantize import DEFAULT_DEQUANTIZE

    return DEFAULT_DEQUANTIZE if cfg.dequantize is None else cfg.dequantize


def _power_transform(cfg: EvalConfig) -> bool:
    """The estimator's ``power_transform`` as the run used it."""
    from model.power import DEFAULT_POWER_TRANSFORM

    return DEFAULT_POWER_TRANSFORM if cfg.power_transform is None else cfg.power_transform


def _k_rule(cfg: EvalConfig) -> str:
    """The estimator's K rule as the run used it, in backticks; ``auto`` also names what it resolved to."""
    rule = cfg.k_selection or DEFAULT_ESTIMATOR_K_SELECTION
    if rule != "auto":
        return f"`{rule}`"
    from model.checkpoint import CheckpointError, read_checkpoint
    from model.estimator import default_checkpoint_path

    try:
        ranker = bool(read_checkpoint(cfg.checkpoint or default_checkpoint_path())["model_config"].get("k_ranker"))
    except CheckpointError:  # the run reports the checkpoint's own error
        return "`auto`"
    refine = cfg.refine or DEFAULT_REFINE
    resolved = resolve_k_selection(rule, ranker, refine)
    # model.low_dim, model.latent_class
    few = ("; BIC on tables of <= 4 columns, tiles of one cluster merged, AIC3 of latent classes on tables of "
           "categories") if refine == "gmm" else ""
    return f"`auto` (the checkpoint's K ranker{few})" if resolved == "ranker" else f"`auto` ({resolved}{few})"


def _header(cfg: EvalConfig, n_datasets: int, n_methods: int, elapsed: float, workers: int) -> list[str]:
    return [f"Command: `{command_line(cfg)}`", "",
            f"Checkpoint: `{cfg.checkpoint or 'shipped'}`; seed {cfg.seed}; per-run timeout {cfg.timeout_s:g} s; "
            f"{n_datasets} datasets x {n_methods} methods in {elapsed:.0f} s, {workers} run(s) at a time"
            f"{' (quick mode)' if cfg.quick else ''}.",
            "",
            f"TabClustPFN: K by {_k_rule(cfg)}, "
            f"{cfg.n_estimators or DEFAULT_N_ESTIMATORS} column ordering(s) averaged (`n_estimators`), "
            f"refinement `{cfg.refine or DEFAULT_REFINE}`"
            + (", one-cluster answer allowed (`allow_single_cluster`)" if cfg.allow_single_cluster else "")
            + f", pure-noise columns dropped by `screen_noise={_screen_noise(cfg)}`, few-level columns spread by "
            f"`dequantize={_dequantize(cfg)}`, skewed columns Yeo-Johnson transformed by "
            f"`power_transform={_power_transform(cfg)}`.",
            "",
            "Preprocessing (all methods): numeric columns z-normalised (constant columns set to 0); missing "
            "values imputed before that (numeric: median, categorical: most frequent level), per dataset in "
            "`datasets.csv`; categorical columns one-hot encoded for the scikit-learn baselines only. "
            "Datasets with N > 1000 subsampled to 1000 rows (seed 0). Times exclude loading the model."]


def _log_mlflow(cfg: EvalConfig, results: pd.DataFrame, calibration: pd.DataFrame | None, files: list[Path],
                elapsed: float) -> None:
    """One MLflow run: the config, median ARI per suite and method, calibration coverage, every output file."""
    import mlflow

    from pipeline.tracking import setup_tracking

    setup_tracking(cfg.tracking_uri, experiment=cfg.experiment)
    with mlflow.start_run(run_name="evaluate-quick" if cfg.quick else "evaluate"):
        mlflow.log_params({k: str(v)[:500] for k, v in dataclasses.asdict(cfg).items()})
        metrics = {"wall_seconds": elapsed, "runs_failed": float((results["status"] != "ok").sum())}
        for (suite, method), grp in results.groupby(["suite", "method"]):
            if grp["ari"].notna().any():
                metrics[_metric_key(f"{suite}.{method}.median_ari")] = float(np.nanmedian(grp["ari"]))
        if calibration is not None:
            for row in calibration.itertuples():
                metrics[f"calibration.coverage_{row.alpha:g}"] = float(row.coverage)
        mlflow.log_metrics({k: v for k, v in metrics.items() if np.isfinite(v)})
        for f in files:
            mlflow.log_artifact(str(f))


def run_evaluation(cfg: EvalConfig) -> tuple[pd.DataFrame, Path]:
    """Run the whole benchmark described by ``cfg``; return the long results and the path of ``results.md``.

    Raises
    ------
    FileNotFoundError, ValueError
        Missing or unusable checkpoint, missing benchmark folder, a table without ``target``.
    """
    from pipeline.ray_env import init_ray

    specs = select_methods(cfg.methods if cfg.methods is not None else (QUICK_METHODS if cfg.quick else None))
    uses_model = any(s.family == "TabClustPFN" for s in specs)
    if uses_model:
        check_checkpoint(cfg.checkpoint)  # a bad checkpoint stops the run here, not in every task
    n_calib = min(cfg.calibration_size, QUICK_CALIBRATION) if cfg.quick else cfg.calibration_size
    datasets = load_datasets(cfg)
    init_ray()
    import ray

    workers = cfg.num_workers or default_workers()
    logger.info("%d datasets x %d methods on %d workers", len(datasets), len(specs), workers)
    start = time.perf_counter()
    results = run_pairs(cfg, datasets, specs, workers)
    order = [s.name for s in specs]
    analyses = [report.analyse_suite(results[results["suite"] == s], s, order) for s in results["suite"].unique()]
    calibration = run_calibration(cfg, n_calib, workers) if uses_model and n_calib > 0 else None
    elapsed = time.perf_counter() - start
    out_dir = Path(cfg.output_dir)
    files = write_outputs(out_dir, results, dataset_table(datasets), analyses, calibration,
                          _header(cfg, len(datasets), len(specs), elapsed, workers),
                          report.provenance_lines(cfg.checkpoint, uses_model=uses_model))
    _log_mlflow(cfg, results, calibration, files, elapsed)
    return results, out_dir / "results.md"
