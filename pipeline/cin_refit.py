"""Refit a checkpoint's CIN to its frozen PIN on fresh prior tables, the tables spread over Ray tasks.

    from pipeline.cin_refit import RefitConfig, refit_cin
    summary = refit_cin(RefitConfig(checkpoint="model/weights/tabclustpfn-small.pt", out_dir="runs/cin-refit"))

Why and what is kept per table: :mod:`model.cin_refit`. The stages:

1. **Records.** The seeds ``run_seed * 2**40 + i``, i < ``tasks``, of the paper's prior (the tables that a
   pretraining run with ``run_seed`` would draw first) are cut into chunks of ``chunk_size``; each chunk is one Ray
   task (1 CPU, one torch thread) that runs the frozen network forward, as ``TabClustPFN`` does, and returns its
   records. The driver writes each chunk to ``<out_dir>/records/chunk-NNNNN.npz`` as it arrives, so a rerun with
   the same settings computes only the chunks that are missing; ``records/manifest.json`` says which checkpoint
   and settings made them, and a rerun with others is refused rather than mixed in. With ``one_mode_tasks``,
   tables with a single mode (:mod:`priors.onemode`, K = 2: no cluster structure, which the paper's prior never
   draws) are recorded the same way into ``one-mode-NNNNN.npz`` and join the fit and the held-out tables.
2. **Fit.** CIN, starting from the checkpoint's, is trained on the first ``tasks - val_tasks`` tables (and the
   first ``one_mode_tasks - one_mode_val_tasks`` one-mode ones; :func:`model.cin_refit.fit_cin`); the epoch with
   the lowest cross-entropy on the held-out rest of both is kept.
3. **Compare.** Both CINs on the held-out tables of the prior, and apart on the one-mode ones: cross-entropy and
   accuracy on K, and the ARI of the partition that the estimator's ``expected_ari`` rule then picks, task by
   task (mean difference +- its standard error).
4. **Save.** ``<out_dir>/model.pt``: the checkpoint with the new CIN (every other weight bitwise the same) and a
   lineage phase ``cin-refit``; ``summary.json``, ``history.jsonl``; one MLflow run with all of them.

The refit never touches the evaluation suites. Compare the result with its parent afterwards on held-out prior
tasks (``benchmarks/compare_checkpoints.py A B --suite prior --prior-tasks 400``, also with ``--prior-rows 100
300``) and on the full evaluation. On the paper's prior alone at N 500-1000 (``cin-refit-s200c``,
2026-11-27) the refit gained on the prior (+0.010 ARI) and lost on the real tables, where it chose larger K;
with N 100-1000 and one-mode tables (the defaults, ``cin-refit-n100``) it gained on both, and the shipped CIN
follows that recipe (docs/DESIGN.md, "CIN refit").
"""

from __future__ import annotations

import ast
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
from model.lineage import inherited_lineage
from pipeline.config import seeds_used
from pipeline.prior_stream import RUN_SEED_STRIDE, validation_seeds
from priors import PriorConfig
from priors.config import NuisanceConfig
from priors.onemode import ONE_MODE_VERSION

logger = logging.getLogger(__name__)

RECORDS_DIR = "records"
MANIFEST_FILE = "manifest.json"
MODEL_FILE = "model.pt"
SUMMARY_FILE = "summary.json"
HISTORY_FILE = "history.jsonl"
#: The two kinds of tables a refit records: the paper's prior, and one-mode tables (:mod:`priors.onemode`).
PRIOR, ONE_MODE = "prior", "one-mode"
CHUNK_PREFIX = {PRIOR: "chunk", ONE_MODE: "one-mode"}
#: Holds :data:`priors.onemode.ONE_MODE_VERSION`: one-mode records of another version are not reused.
ONE_MODE_MANIFEST_FILE = "one-mode-manifest.json"


def _check_kind(kind: str) -> None:
    if kind not in CHUNK_PREFIX:
        raise ValueError(f"unknown kind of table {kind!r}: use {PRIOR!r} or {ONE_MODE!r}")


@dataclasses.dataclass
class RefitConfig:
    """One CIN refit (module docstring).

    ``n_rows`` / ``n_features``: the tables' sizes (default N 100-1000, D 2-64: the contexts the estimator meets,
    from tables of 100 rows up to its ``n_context`` of 1,000; fitted on N 500-1000 only, CIN chose K = 10 for
    zoo, 101 rows, K = 8 for wine, 178, and K = 7 for haberman, 306, against 7, 6 and 2 when fitted on N
    100-1000); ``num_workers``: chunks computed at once (default: the CPUs Ray offers, at most the machine's cores
    when Ray runs in-process).

    ``one_mode_tasks``: tables with a single mode (:mod:`priors.onemode`, K = 2) added to the ``tasks`` tables of
    the paper's prior, of the same sizes, with seeds ``run_seed * 2**40 + i``, i < ``one_mode_tasks`` (their own
    random stream, so no table repeats one of the prior's); the last ``one_mode_val_tasks`` of them are held out
    with the prior's last ``val_tasks``. Their records go to ``one-mode-NNNNN.npz`` beside the prior's chunks.
    The defaults (2,500 of them, 500 held out: a fifth of all tables) made the shipped CIN (docs/DESIGN.md, "CIN
    refit"); ``one_mode_tasks=0, one_mode_val_tasks=0`` refits on the paper's prior alone (with ``n_rows=(500,
    1000)`` as ``cin-refit-s200c`` did).
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
    n_rows: tuple[int, int] = (100, 1000)
    n_features: tuple[int, int] = (2, 64)
    one_mode_tasks: int = 2500
    one_mode_val_tasks: int = 500
    #: the prior tables' noise columns, contaminated rows and coarse columns (``priors.config.NuisanceConfig``;
    #: the default, none of them, is the paper's prior)
    nuisance: NuisanceConfig = dataclasses.field(default_factory=NuisanceConfig)
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
        for name in ("one_mode_tasks", "one_mode_val_tasks"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
        if self.one_mode_tasks and not self.one_mode_val_tasks < self.one_mode_tasks:
            raise ValueError(f"one_mode_val_tasks ({self.one_mode_val_tasks}) must be smaller than one_mode_tasks "
                             f"({self.one_mode_tasks}): the rest is what CIN is fitted on")
        if self.one_mode_val_tasks and not self.one_mode_tasks:
            raise ValueError("one_mode_val_tasks needs one_mode_tasks > 0 (set both to 0 to refit on the prior "
                             "alone)")
        if self.one_mode_tasks > RUN_SEED_STRIDE:
            raise ValueError(f"at most {RUN_SEED_STRIDE} one-mode tasks per run seed, got {self.one_mode_tasks}")
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
        return PriorConfig(n_rows=self.n_rows, n_features=self.n_features, nuisance=self.nuisance)

    def nuisance_changes(self) -> dict[str, Any]:
        """The nuisance settings that differ from the paper's prior (empty: its tables)."""
        base = dataclasses.asdict(NuisanceConfig())
        return {k: v for k, v in dataclasses.asdict(self.nuisance).items() if v != base[k]}

    def seeds(self, chunk: int, kind: str = PRIOR) -> list[int]:
        """The seeds of chunk ``chunk`` of the ``kind`` tables (``PRIOR`` or ``ONE_MODE``)."""
        lo = chunk * self.chunk_size
        return [self.run_seed * RUN_SEED_STRIDE + i for i in range(lo, min(lo + self.chunk_size, self.n_tables(kind)))]

    def n_tables(self, kind: str = PRIOR) -> int:
        """How many ``kind`` tables (``PRIOR`` or ``ONE_MODE``) the refit records."""
        _check_kind(kind)
        return self.tasks if kind == PRIOR else self.one_mode_tasks

    @property
    def n_chunks(self) -> int:
        return -(-self.tasks // self.chunk_size)

    @property
    def n_one_mode_chunks(self) -> int:
        return -(-self.one_mode_tasks // self.chunk_size)

    def manifest(self, sha: str) -> dict[str, Any]:
        """What the records depend on: a rerun must match it to reuse them."""
        out = {"checkpoint_sha256": sha, "run_seed": self.run_seed, "n_estimators": self.n_estimators,
               "chunk_size": self.chunk_size, "n_rows": list(self.n_rows), "n_features": list(self.n_features)}
        if self.nuisance_changes():  # the paper's prior keeps the manifests of before
            out["nuisance"] = {k: list(v) if isinstance(v, tuple) else v for k, v in self.nuisance_changes().items()}
        return out


def nuisance_config(pairs: list[str]) -> NuisanceConfig:
    """``KEY=VALUE`` pairs (``jobs/refit_cin.py --nuisance``) -> the prior's NuisanceConfig (values as Python
    literals; a list is a range)."""
    fields = {f.name for f in dataclasses.fields(NuisanceConfig)}
    values = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or key not in fields:
            raise ValueError(f"--nuisance takes KEY=VALUE with KEY one of {sorted(fields)}, got {pair!r}")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise ValueError(f"--nuisance {key}: {text!r} is not a number or a list of two") from None
        values[key] = tuple(value) if isinstance(value, list) else value
    return NuisanceConfig(**values)


def _chunk_records(checkpoint: bytes, seeds: list[int], n_estimators: int, prior: PriorConfig,
                   kind: str = PRIOR) -> CardinalityRecords:
    """One chunk's records (runs inside a Ray task): tables of the paper's prior (``PRIOR``) or one-mode tables
    of the same sizes (``ONE_MODE``). ``checkpoint`` is the file's bytes, from the object store: a worker on
    another node may not see the driver's path. They are loaded as any checkpoint is (weights only, sha256
    checked)."""
    import tempfile

    import torch

    from priors import sample_dataset
    from priors.onemode import sample_one_mode

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "checkpoint.pt"
        path.write_bytes(checkpoint)
        net, _ = load_checkpoint(path)
    _check_kind(kind)
    if kind == ONE_MODE:
        tables = [sample_one_mode(s, n_rows=prior.n_rows, n_features=prior.n_features) for s in seeds]
    else:
        tables = [sample_dataset(s, config=prior) for s in seeds]
    return collect_records(net, tables, n_estimators)


def _check_manifest(records_dir: Path, manifest: dict[str, Any], name: str = MANIFEST_FILE) -> None:
    path = records_dir / name
    if path.is_file():
        found = json.loads(path.read_text())
        if found != manifest:
            diff = {k: (found.get(k), v) for k, v in manifest.items() if found.get(k) != v}
            raise ValueError(f"{records_dir} holds records made with other settings ({{setting: (there, now)}}: "
                             f"{diff}); use another out_dir, or delete {records_dir} to start over")
    else:
        records_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(manifest, indent=1))


def _recorded_chunks(cfg: RefitConfig, files: list[Path], kind: str = PRIOR) -> dict[int, CardinalityRecords]:
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
        if records.seeds.tolist() != cfg.seeds(c, kind):
            logger.warning("CIN refit: %s holds %d tables, chunk %d of a run of %d tables has %d; computing it "
                           "again", f, len(records), c, cfg.n_tables(kind), len(cfg.seeds(c, kind)))
            continue
        found[c] = records
    return found


def compute_records(cfg: RefitConfig, sha: str) -> tuple[CardinalityRecords, CardinalityRecords | None]:
    """Every chunk's records, the prior's and the one-mode tables' (None without ``one_mode_tasks``), computing
    the missing chunks as Ray tasks (stage 1)."""
    import ray

    from pipeline.ray_env import init_ray

    records_dir = Path(cfg.out_dir) / RECORDS_DIR
    _check_manifest(records_dir, cfg.manifest(sha))
    if cfg.one_mode_tasks:  # the prior's records stay usable whatever becomes of the one-mode tables
        _check_manifest(records_dir, {"one_mode_version": ONE_MODE_VERSION}, ONE_MODE_MANIFEST_FILE)
    counts = {PRIOR: cfg.n_chunks, ONE_MODE: cfg.n_one_mode_chunks}
    files = {kind: [records_dir / f"{CHUNK_PREFIX[kind]}-{c:05d}.npz" for c in range(n)]
             for kind, n in counts.items()}
    chunks = {kind: _recorded_chunks(cfg, files[kind], kind) for kind in counts}
    missing = [(kind, c) for kind, n in counts.items() for c in range(n) if c not in chunks[kind]]
    logger.info("CIN refit: %d of %d chunks of %d tables already recorded", sum(counts.values()) - len(missing),
                sum(counts.values()), cfg.chunk_size)
    if missing:
        started = init_ray()
        try:
            workers = cfg.num_workers or max(1, min(int(ray.available_resources().get("CPU", 1)),
                                                    os.cpu_count() or 1))
            task = ray.remote(num_cpus=1)(_chunk_records)
            checkpoint, prior = ray.put(Path(cfg.checkpoint).read_bytes()), cfg.prior()
            pending: dict[Any, tuple[str, int]] = {}
            queue = list(missing)
            start = time.perf_counter()
            done = 0
            while queue or pending:
                while queue and len(pending) < workers:
                    kind, c = queue.pop(0)
                    pending[task.remote(checkpoint, cfg.seeds(c, kind), cfg.n_estimators, prior, kind)] = (kind, c)
                ready, _ = ray.wait(list(pending), num_returns=1)
                kind, c = pending.pop(ready[0])
                chunks[kind][c] = ray.get(ready[0])
                chunks[kind][c].save(files[kind][c])  # atomic: an interrupted run leaves no partial chunk
                done += 1
                logger.info("CIN refit: %s chunk %d recorded (%d/%d, %.0f s)", kind, c, done, len(missing),
                            time.perf_counter() - start)
        finally:
            if started:
                ray.shutdown()
    prior_records = CardinalityRecords.concat([chunks[PRIOR][c] for c in range(cfg.n_chunks)])
    if not cfg.one_mode_tasks:
        return prior_records, None
    return prior_records, CardinalityRecords.concat([chunks[ONE_MODE][c] for c in range(cfg.n_one_mode_chunks)])


def _paired(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    d = b - a
    return {"mean": float(d.mean()), "se": float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan"),
            "better": int((d > 1e-12).sum()), "worse": int((d < -1e-12).sum())}


def _compare_cins(held: CardinalityRecords, old, new) -> tuple[dict, dict, dict[str, float]]:
    """Both CINs on held-out records: their summaries, and the ARI of the ``expected_ari`` choice table by table."""
    before_post, after_post = member_posteriors(old, held.fingerprints), member_posteriors(new, held.fingerprints)
    return (summarize(held, before_post), summarize(held, after_post),
            _paired(select_from_records(held, before_post)[0], select_from_records(held, after_post)[0]))


def refit_cin(cfg: RefitConfig) -> dict[str, Any]:
    """Run the four stages (module docstring); return the summary also written to ``summary.json``."""
    start = time.perf_counter()
    net, metadata = load_checkpoint(cfg.checkpoint)
    net = net.without_k_ranker()  # the new posterior changes what a K ranker reads: fit one to the result
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
    records, one_mode = compute_records(cfg, weights_sha256(net.state_dict()))
    n_fit = cfg.tasks - cfg.val_tasks
    train, held = records.subset(np.arange(n_fit)), records.subset(np.arange(n_fit, cfg.tasks))
    fit_on, select_on = train, held
    if one_mode is not None:
        n_one_fit = cfg.one_mode_tasks - cfg.one_mode_val_tasks
        one_train = one_mode.subset(np.arange(n_one_fit))
        one_held = one_mode.subset(np.arange(n_one_fit, cfg.one_mode_tasks))
        fit_on = CardinalityRecords.concat([train, one_train])
        select_on = CardinalityRecords.concat([held, one_held]) if len(one_held) else held

    fit_start = time.perf_counter()
    cin, history = fit_cin(net.cin, fit_on, epochs=cfg.epochs, lr=cfg.lr, batch_size=cfg.batch_size,
                           weight_decay=cfg.weight_decay, seed=cfg.run_seed, validation=select_on)
    fit_s = time.perf_counter() - fit_start
    before, after, paired = _compare_cins(held, net.cin, cin)
    best = min(history, key=lambda row: row["val_cross_entropy"])["epoch"]
    one_mode_summary = None
    if one_mode is not None:
        one_mode_summary = {"tables": cfg.one_mode_tasks, "held_out": len(one_held)}
        if len(one_held):
            one_before, one_after, one_paired = _compare_cins(one_held, net.cin, cin)
            one_mode_summary |= {"held_out_before": one_before, "held_out_after": one_after,
                                 "paired_ari": one_paired}

    net.cin.load_state_dict(cin.state_dict())
    lineage, inherited_tasks = inherited_lineage(metadata)
    wall = time.perf_counter() - start
    tables = cfg.tasks + cfg.one_mode_tasks
    changes = cfg.nuisance_changes()
    nuisance_what = "" if not changes else " with nuisance " + ", ".join(f"{k}={v}" for k, v in changes.items())
    one_mode_what = "" if one_mode is None else (
        f" and {cfg.one_mode_tasks - cfg.one_mode_val_tasks} one-mode tables of priors.onemode (K = 2)")
    phase = {"phase": len(lineage) + 1, "run": cfg.run_name or out.name, "seed": cfg.run_seed, "steps": 0,
             "tasks": tables, "wall_s": round(wall, 1),
             "device": f"{platform.machine()} CPU, {cfg.num_workers or 'all'} Ray workers",
             "what": f"CIN refit on the frozen PIN (pipeline.cin_refit): {n_fit} prior tables{nuisance_what}"
                     f"{one_mode_what} "
                     f"(N {cfg.n_rows[0]}-{cfg.n_rows[1]}, {cfg.n_estimators} orderings), best of {cfg.epochs} "
                     f"epochs on {len(select_on)} held-out ({best}), lr {cfg.lr:g}",
             "cin_refit": {"before": before, "after": after, "paired_ari": paired,
                           **({"one_mode": one_mode_summary} if one_mode_summary else {})}}
    # step, tasks_seen, hardware and mlflow_run_id describe the session that made a checkpoint: the parent's are
    # in its lineage phase and its MLflow run, not this one's (as for an average, model.lineage.averaged_metadata)
    new_meta = {**{k: v for k, v in metadata.items() if k not in ("lineage", "total_tasks_seen", "mlflow_run_id")},
                "step": 0, "tasks_seen": tables, "hardware": phase["device"], "lineage": [*lineage, phase],
                "total_tasks_seen": inherited_tasks + tables}
    save_checkpoint(out / MODEL_FILE, net, new_meta)
    summary = {"checkpoint": str(cfg.checkpoint), "config": {k: (list(v) if isinstance(v, tuple) else v)
                                                            for k, v in dataclasses.asdict(cfg).items()},
               "best_epoch": best, "fit_s": round(fit_s, 1), "wall_s": round(time.perf_counter() - start, 1),
               "held_out_before": before, "held_out_after": after, "paired_ari": paired,
               **({"one_mode": one_mode_summary} if one_mode_summary else {})}
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
        if "held_out_after" in summary.get("one_mode", {}):
            one = summary["one_mode"]
            for side in ("before", "after"):
                mlflow.log_metrics({f"one_mode_held_out_{side}_{k}": v for k, v in one[f"held_out_{side}"].items()})
            mlflow.log_metrics({f"one_mode_paired_ari_{k}": v for k, v in one["paired_ari"].items() if v == v})
        for name in (MODEL_FILE, SUMMARY_FILE, HISTORY_FILE):
            mlflow.log_artifact(str(out / name))
