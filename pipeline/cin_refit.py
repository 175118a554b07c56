"""Refit a checkpoint's CIN to its frozen PIN on fresh prior tables, the tables spread over Ray tasks.

    from pipeline.cin_refit import RefitConfig, refit_cin
    summary = refit_cin(RefitConfig(checkpoint="model/weights/tabclustpfn-small.pt", out_dir="runs/cin-refit"))

Why and what is kept per table: :mod:`model.cin_refit`. The stages:

1. **Records.** The seeds ``run_seed * 2**40 + i``, i < ``tasks``, of the paper's prior (the tables that a
   pretraining run with ``run_seed`` would draw first) are cut into chunks of ``chunk_size``; each chunk is one Ray
   task (1 CPU, one torch thread) that runs the frozen network forward, as ``TabClustPFN`` does, and returns its
   records. The driver writes each chunk to ``<out_dir>/records/chunk-NNNNN.npz`` as it arrives, so a rerun with
   the same settings computes only the chunks that are missing; ``records/manifest.json`` says which checkpoint
   and settings made them, and a rerun with others is refused rather than mixed in.
2. **Fit.** CIN, starting from the checkpoint's, is trained on the first ``tasks - val_tasks`` tables
   (:func:`model.cin_refit.fit_cin`); the epoch with the lowest cross-entropy on the last ``val_tasks`` is kept.
3. **Compare.** Both CINs on the held-out tables: cross-entropy and accuracy on K, and the ARI of the partition
   that the estimator's ``expected_ari`` rule then picks, task by task (mean difference +- its standard error).
4. **Save.** ``<out_dir>/model.pt``: the checkpoint with the new CIN (every other weight bitwise the same) and a
   lineage phase ``cin-refit``; ``summary.json``, ``history.jsonl``; one MLflow run with all of them.

The refit never touches the evaluation suites. Compare the result with its parent afterwards on held-out prior
tasks (``benchmarks/compare_checkpoints.py A B --suite prior --prior-tasks 400``) and on the full evaluation: on
the shipped weights the refit gained on the prior (+0.010 ARI) and lost on the real tables, where it chose larger
K (docs/DESIGN.md, "CIN refit").
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from model.checkpoint import load_checkpoint, save_checkpoint, weights_sha256
from model.cin_refit import CardinalityRecords, collect_records, fit_cin, member_posteriors, \
    select_from_records, summarize
from model.ensemble import DEFAULT_N_ESTIMATORS
from pipeline.config import seeds_used
from pipeline.prior_stream import RUN_SEED_STRIDE, validation_seeds
from priors import PriorConfig

logger = logging.getLogger(__name__)

RECORDS_DIR = "records"
MANIFEST_FILE = "manifest.json"
MODEL_FILE = "model.pt"
SUMMARY_FILE = "summary.json"
HISTORY_FILE = "history.jsonl"


@dataclasses.dataclass
class RefitConfig:
    """One CIN refit (module docstring).

    ``n_rows`` / ``n_features``: the prior's table sizes (default: the paper's, N 500-1000 and D 2-64, the sizes
    the estimator meets); ``num_workers``: chunks computed at once (default: the CPUs Ray offers, at most the
    machine's cores when Ray runs in-process).
    """

    checkpoint: str
    out_dir: str
    tasks: int = 10000
    val_tasks: int = 2000
    run_seed: int = 200
    n_estimators: int = DEFAULT_N_ESTIMATORS
    chunk_size: int = 250
    epochs: int = 150
    lr: float = 1e-3
    batch_size: int = 256
    weight_decay: float = 0.01
    n_rows: tuple[int, int] = (500, 1000)
    n_features: tuple[int, int] = (2, 64)
    num_workers: int | None = None
    tracking_uri: str | None = None
    experiment: str = "tabclustpfn-cin-refit"
    run_name: str | None = None

    def __post_init__(self) -> None:
        for name in ("tasks", "val_tasks", "n_estimators", "chunk_size", "epochs", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.val_tasks >= self.tasks:
            raise ValueError(f"val_tasks ({self.val_tasks}) must be smaller than tasks ({self.tasks}): the rest "
                             "is what CIN is fitted on")
        if self.tasks > RUN_SEED_STRIDE:
            raise ValueError(f"at most {RUN_SEED_STRIDE} tasks per run seed, got {self.tasks}")
        if not 0 <= self.run_seed < validation_seeds(1)[0] // RUN_SEED_STRIDE:
            raise ValueError(f"run_seed must be in [0, {validation_seeds(1)[0] // RUN_SEED_STRIDE}) so that its "
                             f"tables stay below the validation seeds, got {self.run_seed}")
        if not self.lr > 0 or self.weight_decay < 0:
            raise ValueError(f"lr must be > 0 and weight_decay >= 0, got {self.lr} and {self.weight_decay}")
        if self.num_workers is not None and self.num_workers < 1:
            raise ValueError(f"num_workers must be >= 1 (or None for the CPUs Ray offers), got {self.num_workers}")
        self.n_rows, self.n_features = tuple(self.n_rows), tuple(self.n_features)
        self.prior()  # the prior's own checks, now rather than inside a Ray task

    def prior(self) -> PriorConfig:
        return PriorConfig(n_rows=self.n_rows, n_features=self.n_features)

    def seeds(self, chunk: int) -> list[int]:
        lo = chunk * self.chunk_size
        return [self.run_seed * RUN_SEED_STRIDE + i for i in range(lo, min(lo + self.chunk_size, self.tasks))]

    @property
    def n_chunks(self) -> int:
        return -(-self.tasks // self.chunk_size)

    def manifest(self, sha: str) -> dict[str, Any]:
        """What the records depend on: a rerun must match it to reuse them."""
        return {"checkpoint_sha256": sha, "run_seed": self.run_seed, "n_estimators": self.n_estimators,
                "chunk_size": self.chunk_size, "n_rows": list(self.n_rows), "n_features": list(self.n_features)}


def _chunk_records(checkpoint: bytes, seeds: list[int], n_estimators: int, prior: PriorConfig) -> CardinalityRecords:
    """One chunk's records (runs inside a Ray task). ``checkpoint`` is the file's bytes, from the object store:
    a worker on another node may not see the driver's path. They are loaded as any checkpoint is (weights only,
    sha256 checked)."""
    import tempfile

    import torch

    from priors import sample_dataset

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "checkpoint.pt"
        path.write_bytes(checkpoint)
        net, _ = load_checkpoint(path)
    return collect_records(net, [sample_dataset(s, config=prior) for s in seeds], n_estimators)


def _check_manifest(records_dir: Path, manifest: dict[str, Any]) -> None:
    path = records_dir / MANIFEST_FILE
    if path.is_file():
        found = json.loads(path.read_text())
        if found != manifest:
            diff = {k: (found.get(k), v) for k, v in manifest.items() if found.get(k) != v}
            raise ValueError(f"{records_dir} holds records made with other settings ({{setting: (there, now)}}: "
                             f"{diff}); use another out_dir, or delete {records_dir} to start over")
    else:
        records_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(manifest, indent=1))


def _recorded_chunks(cfg: RefitConfig, files: list[Path]) -> dict[int, CardinalityRecords]:
    """The chunk files that hold their chunk's tables under ``cfg``. The manifest leaves ``tasks`` free (a rerun may
    ask for more tables), so the last chunk of an earlier run may hold fewer tables than this run's; such a chunk,
    and one that cannot be read, is computed again."""
    found = {}
    for c, f in enumerate(files):
        if not f.is_file():
            continue
        try:
            records = CardinalityRecords.load(f)
        except (OSError, EOFError, ValueError, zipfile.BadZipFile) as exc:  # e.g. a write cut short
            logger.warning("CIN refit: %s is unreadable (%s); computing chunk %d again", f, exc, c)
            continue
        if records.seeds.tolist() != cfg.seeds(c):
            logger.warning("CIN refit: %s holds %d tables, chunk %d of a run of %d tables has %d; computing it "
                           "again", f, len(records), c, cfg.tasks, len(cfg.seeds(c)))
            continue
        found[c] = records
    return found


def compute_records(cfg: RefitConfig, sha: str) -> CardinalityRecords:
    """Every chunk's records, computing the missing chunks as Ray tasks (stage 1)."""
    import ray

    from pipeline.ray_env import init_ray

    records_dir = Path(cfg.out_dir) / RECORDS_DIR
    _check_manifest(records_dir, cfg.manifest(sha))
    files = [records_dir / f"chunk-{c:05d}.npz" for c in range(cfg.n_chunks)]
    chunks = _recorded_chunks(cfg, files)
    missing = [c for c in range(cfg.n_chunks) if c not in chunks]
    logger.info("CIN refit: %d of %d chunks of %d tables already recorded", cfg.n_chunks - len(missing),
                cfg.n_chunks, cfg.chunk_size)
    if missing:
        started = init_ray()
        try:
            workers = cfg.num_workers or max(1, min(int(ray.available_resources().get("CPU", 1)),
                                                    os.cpu_count() or 1))
            task = ray.remote(num_cpus=1)(_chunk_records)
            checkpoint, prior = ray.put(Path(cfg.checkpoint).read_bytes()), cfg.prior()
            pending: dict[Any, int] = {}
            queue = list(missing)
            start = time.perf_counter()
            done = 0
            while queue or pending:
                while queue and len(pending) < workers:
                    c = queue.pop(0)
                    pending[task.remote(checkpoint, cfg.seeds(c), cfg.n_estimators, prior)] = c
                ready, _ = ray.wait(list(pending), num_returns=1)
                c = pending.pop(ready[0])
                chunks[c] = ray.get(ready[0])
                chunks[c].save(files[c])  # atomic: an interrupted run leaves no partial chunk
                done += 1
                logger.info("CIN refit: chunk %d recorded (%d/%d, %.0f s)", c, done, len(missing),
                            time.perf_counter() - start)
        finally:
            if started:
                ray.shutdown()
    return CardinalityRecords.concat([chunks[c] for c in range(cfg.n_chunks)])


def _paired(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    d = b - a
    return {"mean": float(d.mean()), "se": float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan"),
            "better": int((d > 1e-12).sum()), "worse": int((d < -1e-12).sum())}


def refit_cin(cfg: RefitConfig) -> dict[str, Any]:
    """Run the four stages (module docstring); return the summary also written to ``summary.json``."""
    start = time.perf_counter()
    net, metadata = load_checkpoint(cfg.checkpoint)
    if net.cfg.cin_head != "categorical":
        raise ValueError(f"{cfg.checkpoint} has an ordinal CIN head: the refit supports the categorical head only")
    if cfg.n_features[1] > net.cfg.max_features:
        raise ValueError(f"n_features up to {cfg.n_features[1]}, but {cfg.checkpoint} takes at most "
                         f"{net.cfg.max_features} columns; lower the prior's n_features")
    if cfg.prior().n_clusters[1] > net.cfg.k_max:
        raise ValueError(f"the prior draws up to K = {cfg.prior().n_clusters[1]} clusters, but {cfg.checkpoint} "
                         f"infers K = 2..{net.cfg.k_max} only (k_max): its CIN cannot be fitted to those tables")
    if cfg.run_seed in seeds_used(metadata):
        raise ValueError(f"run_seed {cfg.run_seed} trained {cfg.checkpoint} (its lineage records it): its "
                         f"tables are not fresh; pick another run_seed")
    out = Path(cfg.out_dir)
    records = compute_records(cfg, weights_sha256(net.state_dict()))
    n_fit = cfg.tasks - cfg.val_tasks
    train, held = records.subset(np.arange(n_fit)), records.subset(np.arange(n_fit, cfg.tasks))

    fit_start = time.perf_counter()
    cin, history = fit_cin(net.cin, train, epochs=cfg.epochs, lr=cfg.lr, batch_size=cfg.batch_size,
                           weight_decay=cfg.weight_decay, seed=cfg.run_seed, validation=held)
    fit_s = time.perf_counter() - fit_start
    before_post, after_post = member_posteriors(net.cin, held.fingerprints), member_posteriors(cin, held.fingerprints)
    before, after = summarize(held, before_post), summarize(held, after_post)
    paired = _paired(select_from_records(held, before_post)[0], select_from_records(held, after_post)[0])
    best = min(history, key=lambda row: row["val_cross_entropy"])["epoch"]

    net.cin.load_state_dict(cin.state_dict())
    lineage = list(metadata.get("lineage", []))
    wall = time.perf_counter() - start
    phase = {"phase": len(lineage) + 1, "run": cfg.run_name or out.name, "seed": cfg.run_seed, "steps": 0,
             "tasks": cfg.tasks, "wall_s": round(wall, 1),
             "device": f"{platform.machine()} CPU, {cfg.num_workers or 'all'} Ray workers",
             "what": f"CIN refit on the frozen PIN (pipeline.cin_refit): {n_fit} prior tables "
                     f"(N {cfg.n_rows[0]}-{cfg.n_rows[1]}, {cfg.n_estimators} orderings), best of {cfg.epochs} "
                     f"epochs on {cfg.val_tasks} held-out ({best}), lr {cfg.lr:g}",
             "cin_refit": {"before": before, "after": after, "paired_ari": paired}}
    # step, tasks_seen, hardware and mlflow_run_id describe the session that made a checkpoint: the parent's are
    # in its lineage phase and its MLflow run, not this one's (as for an average, pipeline.budget.averaged_metadata)
    new_meta = {**{k: v for k, v in metadata.items() if k not in ("lineage", "total_tasks_seen", "mlflow_run_id")},
                "step": 0, "tasks_seen": cfg.tasks, "hardware": phase["device"], "lineage": [*lineage, phase],
                "total_tasks_seen": int(metadata.get("total_tasks_seen", metadata.get("tasks_seen", 0))) + cfg.tasks}
    save_checkpoint(out / MODEL_FILE, net, new_meta)
    summary = {"checkpoint": str(cfg.checkpoint), "config": {k: (list(v) if isinstance(v, tuple) else v)
                                                            for k, v in dataclasses.asdict(cfg).items()},
               "best_epoch": best, "fit_s": round(fit_s, 1), "wall_s": round(time.perf_counter() - start, 1),
               "held_out_before": before, "held_out_after": after, "paired_ari": paired}
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=1))
    (out / HISTORY_FILE).write_text("".join(json.dumps(row) + "\n" for row in history))
    _log_mlflow(cfg, summary, history, out)
    return summary


def _log_mlflow(cfg: RefitConfig, summary: dict[str, Any], history: list[dict[str, float]], out: Path) -> None:
    import mlflow

    from pipeline.tracking import setup_tracking

    setup_tracking(cfg.tracking_uri, cfg.experiment)
    with mlflow.start_run(run_name=cfg.run_name or out.name):
        mlflow.log_params({k: str(v)[:500] for k, v in summary["config"].items()})
        for row in history:
            mlflow.log_metrics({k: v for k, v in row.items() if k != "epoch"}, step=int(row["epoch"]))
        for side in ("before", "after"):
            mlflow.log_metrics({f"held_out_{side}_{k}": v for k, v in summary[f"held_out_{side}"].items()})
        mlflow.log_metrics({f"paired_ari_{k}": v for k, v in summary["paired_ari"].items() if v == v})
        for name in (MODEL_FILE, SUMMARY_FILE, HISTORY_FILE):
            mlflow.log_artifact(str(out / name))
