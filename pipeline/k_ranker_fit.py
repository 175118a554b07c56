"""Fitting a checkpoint's K ranker (:mod:`model.k_ranker`) to its frozen network, on prior tables.

1. **Records.** Prior tables with seeds ``TRAIN_SEED + i`` (which neither training, validation nor the
   development sets draw), N 100-1000: half of the paper's prior as it is, a quarter with pure-noise columns in
   half of them and contaminated rows in 30 % (:mod:`priors.nuisance`), a quarter with 50-90 % noise columns
   beside as few as one informative column; and, where ``extra_tables`` asks for them, tables of other families
   (:data:`EXTRA_FAMILIES`: ``shapes``, low-dimensional arcs, rings, sheared, stretched or unequal blobs of
   :mod:`priors.shapes`, which the network never trained on; ``coarse``, the prior's mix with some continuous
   columns measured as ordinal levels, rounded values or counts, :func:`priors.nuisance.discretise`;
   ``onemode``, one cloud labelled by k-means' split, :mod:`priors.onemode`; ``dev-derived``, 2..K of a dev
   table's labelled classes, ``dev-derived-0`` / ``-1`` from one fold's tables, :func:`dev_derived_table`), each
   counted ``extra_weight`` times. Each is clustered as ``TabClustPFN`` does by default (preprocessing,
   4 column orderings, every candidate refined by two k-means steps, then its diagonal mixture fitted) and its
   record keeps, per candidate K, the features of :mod:`model.k_features` and the ARI against the labels of what
   each refine returns at that K (:func:`table_record`). Records are computed in local
   worker processes (``workers``; 1: in this process), in chunks kept on disk under the weights' sha256, so a
   rerun (more tables, another seed) computes only what is missing.
2. **Fit.** :func:`model.k_ranker.fit_ranker` (on the features of ``feature_set`` and the ARI of the estimator's
   default refine) on all but the last ``val_tables`` prior records and the last tenth of each extra family's;
   those held out compare the ranker's choice with the expected-ARI rule's (paired mean ARI difference and its
   standard error), each family apart.
3. **Calibration.** The temperature that turns the ranker's scores into probabilities over K
   (:func:`model.k_ranker.fit_temperature`, ``ModelConfig.k_ranker_temperature``), fitted on the same held-out
   records to their labelled K; then how much it grows on tables with few distinct values
   (:func:`model.k_ranker.fit_temperature_slope`, ``ModelConfig.k_ranker_temperature_slope``), fitted on the real
   tables of the development suite (``../shared/benchmarks/dev``; 0 where it is absent), whose continuous columns
   are rounded where the prior's never are (:func:`dev_calibration`). :func:`calibrate_k_ranker` does this stage
   alone for a checkpoint (``jobs/calibrate_k_ranker.py``).
4. **Checkpoint.** The network with the ranker (``ModelConfig.k_ranker``), its lineage extended by one phase.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import platform
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from model.k_features import CANDIDATE_STAGES, FEATURE_SETS, features_key
from priors.onemode import ONE_MODE_VERSION
from priors.shapes import SHAPES_VERSION

#: The coarse tables' version (:func:`coarse_table`): raise it whenever a table changes, so old records are not read.
COARSE_VERSION = 1

logger = logging.getLogger(__name__)

#: First seed of the ranker's tables: below the validation seeds (2**62 + i), above every run's task seeds
#: (run_seed * 2**40 + ..., run seeds far below 2**20) and the development sets' one-mode seeds.
TRAIN_SEED = 2**61
#: Records per chunk file (and per worker call).
CHUNK = 250
#: What a record holds (its features and ARIs); records of another version are kept apart, never mixed.
RECORDS_VERSION = 5
_NETS: dict[str, Any] = {}


@dataclasses.dataclass(frozen=True)
class RankerFitConfig:
    checkpoint: str
    out: str
    records_dir: str = "runs/k-ranker-records"
    tables: int = 6000
    val_tables: int = 600
    epochs: int = 1500
    seed: int = 0
    workers: int = 2
    feature_set: int = 1  # the shipped ranker's (set 2 and the mixtures' candidates did not qualify on dev)
    candidates: str = "kmeans"
    #: whose ARI the ranker maximises: the partitions refine=TARGET returns at each K (None: the default refine's)
    target: str | None = None
    #: fit the temperature's growth on tables with few distinct values to the development suite (where present)
    dev_slope: bool = True
    #: (family, tables) of :data:`EXTRA_FAMILIES` added to the ``tables`` prior tables, each's last tenth held out
    extra_tables: tuple[tuple[str, int], ...] = ()
    #: how many times each extra family's fitted tables count in the fit (the loss is a mean over tables)
    extra_weight: int = 1

    def __post_init__(self) -> None:
        if self.tables < 2 or not 1 <= self.val_tables < self.tables:
            raise ValueError(f"need tables >= 2 and 1 <= val_tables < tables, got tables={self.tables}, "
                             f"val_tables={self.val_tables}")
        for family, n in self.extra_tables:
            if family not in EXTRA_FAMILIES:
                raise ValueError(f"unknown table family {family!r}: choose from {', '.join(EXTRA_FAMILIES)}")
            if n < 2:
                raise ValueError(f"{family} tables must number at least 2 (a tenth is held out), got {n}")
        if len({family for family, _ in self.extra_tables}) < len(self.extra_tables):
            raise ValueError(f"a family is given twice in extra_tables={self.extra_tables}")
        if self.epochs < 1 or self.workers < 1 or self.extra_weight < 1:
            raise ValueError(f"epochs, workers and extra_weight must be >= 1, got {self.epochs}, {self.workers} and "
                             f"{self.extra_weight}")
        if self.feature_set not in FEATURE_SETS:
            raise ValueError(f"unknown feature_set {self.feature_set}: choose one of {sorted(FEATURE_SETS)}")
        if self.candidates not in CANDIDATE_STAGES:
            raise ValueError(f"unknown candidates {self.candidates!r}: choose one of {CANDIDATE_STAGES}")
        if self.target not in (None, *CANDIDATE_STAGES):
            raise ValueError(f"unknown target {self.target!r}: choose one of {CANDIDATE_STAGES}")


def _mix_table(name: str, i: int, seed: int, coarse: bool = False):
    """The ranker's mix (half clean, a quarter noisy, a quarter one-informative by ``i``), drawn from ``seed``;
    ``coarse``: some continuous columns of it measured coarsely (``NuisanceConfig.p_discrete = 1``)."""
    from pipeline.config import StreamConfig
    from pipeline.evaluation.suites import prior_frame, prior_variant
    from priors.sample import sample_dataset

    variant = ("prior", "prior", "noisy", "one-informative")[i % 4]
    prior = prior_variant(dataclasses.replace(StreamConfig().prior, n_rows=(100, 1000)), variant)
    if coarse:
        prior = dataclasses.replace(prior, nuisance=dataclasses.replace(prior.nuisance, p_discrete=1.0))
    task = sample_dataset(seed, kind="mix", config=prior)
    return name, prior_frame(task.X, task.categorical), np.asarray(task.y)


def train_table(i: int):
    """The ``i``-th table of the ranker's set -> (name, DataFrame, labels)."""
    return _mix_table(f"ranker_{i}", i, TRAIN_SEED + i)


def shape_table(i: int):
    """The ``i``-th shape table of the ranker's set (:mod:`priors.shapes`) -> (name, DataFrame, labels)."""
    from pipeline.evaluation.suites import prior_frame
    from priors.shapes import sample_shapes

    task = sample_shapes(TRAIN_SEED + i)
    return f"ranker_shapes_{i}", prior_frame(task.X, task.categorical), np.asarray(task.y)


def coarse_table(i: int):
    """The ``i``-th coarse table of the ranker's set: the mix of :func:`train_table` on seeds of its own
    (``TRAIN_SEED + 2**50 + i``), some continuous columns of every table measured coarsely -> (name, DataFrame,
    labels)."""
    return _mix_table(f"ranker_coarse_{i}", i, TRAIN_SEED + 2**50 + i, coarse=True)


def onemode_table(i: int):
    """The ``i``-th one-mode table of the ranker's set (:mod:`priors.onemode`: one cloud, labelled by the cut of its
    first principal component k-means makes; N 100-1000, D 2-64) -> (name, DataFrame, labels)."""
    from pipeline.evaluation.suites import prior_frame
    from priors.onemode import sample_one_mode

    task = sample_one_mode(TRAIN_SEED + i, n_rows=(100, 1000), n_features=(2, 64))
    return f"ranker_onemode_{i}", prior_frame(task.X, task.categorical), np.asarray(task.y)


#: The development-derived tables' version (:func:`dev_derived_table`): raise it whenever a table changes.
DEV_DERIVED_VERSION = 1
#: Seed of the development-derived tables' draws, apart from every seed the other families use.
DEV_DERIVED_SEED = 20261207


@functools.lru_cache(maxsize=3)
def _dev_tables(fold: int | None) -> tuple:
    """The development suite's tables of ``fold`` (:func:`dev_folds`; None: all), loaded once per process."""
    from pipeline.evaluation.suites import dev_suite

    suite = dev_suite()
    folds = dev_folds([d.name for d in suite])
    return tuple(d for d in suite if fold is None or folds[d.name] == fold)


def dev_folds(names) -> dict[str, int]:
    """The two folds of the development suite's tables for cross-fitting: 0 and 1 alternately in name order."""
    return {name: i % 2 for i, name in enumerate(sorted(names))}


def dev_suite_folds() -> dict[str, int]:
    """The fold of each of the development suite's tables, as the ``dev-derived-0`` / ``-1`` families draw them."""
    return {d.name: fold for fold in (0, 1) for d in _dev_tables(fold)}


def dev_derived_table(i: int, fold: int | None = None):
    """The ``i``-th table derived from the development suite's real tables (those of ``fold``, None: all): one
    table drawn at random, a random 2..K of its labelled classes kept, and half the time a random subset of its
    columns (at least 2) -> (name ``dev_derived_<fold>_<i>_<source>``, DataFrame, labels 0..k-1). Real columns,
    real classes: what K looks like on real tables, which the prior's families do not show. A ranker fitted on
    one fold's tables is judged on the other fold's (``benchmarks/choose_k_rule.py --cross-fit``)."""
    tables = _dev_tables(fold)
    rng = np.random.default_rng([DEV_DERIVED_SEED, 2 if fold is None else fold, i])
    for _ in range(1000):
        ds = tables[int(rng.integers(len(tables)))]
        y = np.asarray(ds.y)
        classes = np.unique(y)
        if len(classes) < 2:
            continue
        kept = rng.choice(classes, size=int(rng.integers(2, len(classes) + 1)), replace=False)
        rows = np.flatnonzero(np.isin(y, kept))
        if len(rows) < 20:
            continue
        cols = ds.features.columns
        if len(cols) > 2 and rng.random() < 0.5:
            cols = cols[np.sort(rng.choice(len(cols), size=int(rng.integers(2, len(cols) + 1)), replace=False))]
        frame = ds.features.iloc[rows][cols].reset_index(drop=True)
        labels = np.searchsorted(np.sort(kept), y[rows])
        return f"dev_derived_{'all' if fold is None else fold}_{i}_{ds.name}", frame, labels
    raise ValueError("no development table has two labelled classes of >= 20 rows between them to derive from")


def dev_derived_origin(name: str) -> tuple[int | None, str]:
    """The fold (None: all) and the source table of a :func:`dev_derived_table`'s name."""
    _, _, fold, _, source = name.split("_", 4)
    return (None if fold == "all" else int(fold)), source


#: The ranker's table families: each one's tables and the prefix of its record chunks' file names.
FAMILIES = {"prior": (train_table, "tables"), "shapes": (shape_table, f"shapes-v{SHAPES_VERSION}"),
            "coarse": (coarse_table, f"coarse-v{COARSE_VERSION}"),
            "onemode": (onemode_table, f"onemode-v{ONE_MODE_VERSION}"),
            "dev-derived": (dev_derived_table, f"dev-derived-v{DEV_DERIVED_VERSION}"),
            **{f"dev-derived-{f}": (functools.partial(dev_derived_table, fold=f),
                                    f"dev-derived-{f}-v{DEV_DERIVED_VERSION}") for f in (0, 1)}}
#: The families a fit may add to the prior's tables (``RankerFitConfig.extra_tables``).
EXTRA_FAMILIES = ("shapes", "coarse", "onemode", "dev-derived", "dev-derived-0", "dev-derived-1")


@dataclasses.dataclass(frozen=True)
class TableCandidates:
    """One table clustered as ``TabClustPFN(screen_noise=False)`` does by default, up to the choice of K."""

    X: np.ndarray  # (N, P) the rows in the design space
    candidates: np.ndarray  # (K_max-1, N) the Lloyd-refined candidates
    k_hi: int  # candidates K = 2..k_hi are admissible
    mixtures: list  # (partition, mixture) of the diagonal mixture refine="gmm" fits from each, K = 2..k_hi
    features: dict  # per candidate stage (model.k_features.CANDIDATE_STAGES): (k_hi-1, len(FEATURES))


def table_design(cfg, frame) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One table preprocessed as ``TabClustPFN(screen_noise=False)`` does for a network of config ``cfg`` -> (its
    columns ``Z``, their categorical mask, the one-hot widths, the rows in the design space ``X``); no network runs."""
    from model.preprocessing import TablePreprocessor
    from model.refinement import design, one_hot_widths

    Z, cat = TablePreprocessor(max_features=cfg.max_features, max_categories=cfg.max_categories).fit_transform(frame)
    widths = one_hot_widths(Z, cat)
    return Z, cat, widths, design(Z, cat, widths)


def table_candidates(net, frame, n_rows: int, stages: tuple[str, ...] | None = None) -> TableCandidates:
    """One table clustered as ``TabClustPFN(screen_noise=False)`` does by default, up to the choice of K, with the
    ranker features of ``stages`` (default: every candidate stage)."""
    from model.ensemble import DEFAULT_N_ESTIMATORS, combine_members, infer_members
    from model.k_features import CANDIDATE_STAGES, ranker_features
    from model.refinement import one_hot_blocks, refine_candidates

    Z, cat, widths, X = table_design(net.cfg, frame)
    members = infer_members(net, Z, np.flatnonzero(cat), DEFAULT_N_ESTIMATORS)
    probs, post, _ = combine_members(*members)
    k_hi = min(net.cfg.k_max, n_rows - 1)
    candidates, _ = refine_candidates(X, probs, n_candidates=k_hi - 1)
    features, mixtures = {}, None
    for stage in CANDIDATE_STAGES if stages is None else stages:
        features[stage], mixtures = ranker_features(X, candidates, probs, post, members, k_hi, stage=stage,
                                                    blocks=one_hot_blocks(cat, widths), mixtures=mixtures)
    return TableCandidates(X, candidates, k_hi, mixtures, features)


def table_record(net, frame, y) -> dict[str, np.ndarray | int]:
    """One table clustered as ``TabClustPFN(screen_noise=False)`` does by default -> its record: ``features`` (K_max-1,
    len(FEATURES)) of the Lloyd-refined candidates and ``features_gmm`` of their diagonal mixtures; per candidate K
    the ARI of the partition each refine returns at that K, ``ari_kmeans`` (the Lloyd-refined candidate) and
    ``ari_gmm`` (its mixture, :func:`model.refinement.mixture_refinement`), and ``ari``, that of the estimator's
    default refine (what a ranker is fitted and judged on); ``k_true``; ``k_hi``. NaN beyond k_hi."""
    from sklearn.metrics import adjusted_rand_score

    from model.k_features import CANDIDATE_STAGES, FEATURES, features_key
    from model.refinement import DEFAULT_REFINE, mixture_refinement

    c_max = net.cfg.k_max - 1
    table = table_candidates(net, frame, len(y))
    k_hi = table.k_hi
    out: dict[str, np.ndarray | int] = {}
    for stage in CANDIDATE_STAGES:
        out[features_key(stage)] = np.full((c_max, len(FEATURES)), np.nan)
        out[features_key(stage)][: k_hi - 1] = table.features[stage]
    ari = {name: np.full(c_max, np.nan) for name in ("ari_kmeans", "ari_gmm")}
    ari["ari_kmeans"][: k_hi - 1] = [adjusted_rand_score(y, table.candidates[c]) for c in range(k_hi - 1)]
    ari["ari_gmm"][: k_hi - 1] = [adjusted_rand_score(y, mixture_refinement(table.X, table.candidates[c], c + 2,
                                                                             table.mixtures[c])[0])
                                  for c in range(k_hi - 1)]
    return {**out, "ari": ari[f"ari_{DEFAULT_REFINE}"], **ari, "k_true": int(len(np.unique(y))), "k_hi": k_hi}


def records_for(net, tables) -> dict[str, np.ndarray]:
    """Records of ``(name, frame, labels)`` tables -> arrays ``names`` and those of :func:`table_record`, stacked."""
    import torch

    names, rows = [], []
    with torch.no_grad():
        for name, frame, y in tables:
            names.append(name)
            rows.append(table_record(net, frame, y))
    return {"names": np.array(names), **{key: np.stack([np.asarray(r[key]) for r in rows]) for key in rows[0]}}


def _chunk(args: tuple[str, str, int, int, str]) -> str:
    """Worker: the records of tables start..stop-1 of ``family``, written atomically to ``path``."""
    checkpoint, family, start, stop, path = args
    import torch

    from model.checkpoint import load_checkpoint

    torch.set_num_threads(1)
    if checkpoint not in _NETS:
        _NETS[checkpoint] = load_checkpoint(checkpoint)[0].without_k_ranker().eval()
    table = FAMILIES[family][0]
    rec = records_for(_NETS[checkpoint], (table(i) for i in range(start, stop)))
    tmp = Path(path).with_name(f".{Path(path).name}.tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, **rec)
    os.replace(tmp, path)
    return path


def build_records(checkpoint: str, tables: int, records_dir: str, weights_sha: str, workers: int,
                  family: str = "prior") -> dict[str, np.ndarray]:
    """Records of tables 0..tables-1 of ``family`` (:data:`FAMILIES`) for the network of ``weights_sha``,
    computing only the chunks not on disk."""
    folder = Path(records_dir) / f"{weights_sha[:16]}-v{RECORDS_VERSION}"
    folder.mkdir(parents=True, exist_ok=True)
    chunks = [(s, min(s + CHUNK, tables)) for s in range(0, tables, CHUNK)]
    paths = [str(folder / f"{FAMILIES[family][1]}-{s:07d}-{e:07d}.npz") for s, e in chunks]
    todo = [(checkpoint, family, s, e, p) for (s, e), p in zip(chunks, paths) if not Path(p).exists()]
    if todo:
        logger.info("computing %d of %d record chunks (%d tables each) in %d processes", len(todo), len(chunks),
                    CHUNK, workers)
        if workers == 1:  # in this process
            for job in todo:
                logger.info("wrote %s", _chunk(job))
        else:
            with ProcessPoolExecutor(workers) as pool:
                for done in pool.map(_chunk, todo):
                    logger.info("wrote %s", done)
    parts = []
    for p in paths:
        with np.load(p) as d:
            parts.append({k: d[k] for k in d.files})
    return {k: np.concatenate([part[k] for part in parts]) for k in parts[0]}


def paired_choice(ranker, features: np.ndarray, ari: np.ndarray) -> dict[str, float]:
    """The ranker's pick against the expected-ARI rule's on the same tables: mean ARI of both, the paired mean
    difference and its standard error, tables better / worse."""
    from model.k_features import FEATURES
    from model.k_ranker import chosen_ari

    ours = chosen_ari(ranker, features, ari)
    exp = features[..., FEATURES.index("exp_ari")]
    base = ari[np.arange(len(ari)), np.nanargmax(np.where(np.isnan(exp), -np.inf, exp), axis=1)]
    d = ours - base
    return {"tables": int(len(d)), "ranker_ari": float(ours.mean()), "expected_ari_ari": float(base.mean()),
            "paired_mean": float(d.mean()), "paired_se": float(d.std(ddof=1) / np.sqrt(len(d))),
            "better": int((d > 1e-9).sum()), "worse": int((d < -1e-9).sum())}


def calibration(ranker, features: np.ndarray, ari: np.ndarray, k_true: np.ndarray) -> dict[str, Any]:
    """The temperature fitted on records (:func:`model.k_ranker.fit_temperature`) and the reliability of the
    probabilities it gives on those records (:func:`model.k_ranker.reliability`)."""
    from model.k_ranker import fit_temperature, k_probabilities, record_scores, reliability

    scores = record_scores(ranker, features, ari)
    temperature = fit_temperature(scores, k_true)
    return {"temperature": temperature, **reliability(k_probabilities(scores, temperature), k_true)}


def frame_distinct_fraction(cfg, frame) -> float:
    """:func:`model.k_ranker.distinct_fraction` of a table preprocessed as the estimator does for a network of
    config ``cfg`` (every row: as the records are)."""
    from model.k_ranker import distinct_fraction
    from model.preprocessing import TablePreprocessor

    return distinct_fraction(*TablePreprocessor(max_features=cfg.max_features,
                                                max_categories=cfg.max_categories).fit_transform(frame))


def dev_calibration(net, ranker, candidates: str, temperature: float, bench_dir: str | None = None
                    ) -> dict[str, Any] | None:
    """The slope of :func:`model.k_ranker.table_temperature` fitted on the development suite's tables (records of
    ``net``, clustered as the estimator does; ``ranker`` scores their ``candidates`` stage), ``temperature`` fixed,
    with the reliability of the probabilities there at slope 0 (``before``) and at the fitted slope (``after``);
    None without the suite."""
    import torch

    from model.k_ranker import fit_temperature_slope, k_probabilities, record_scores, reliability, table_temperature
    from pipeline.evaluation.suites import dev_suite

    try:
        suite = dev_suite(bench_dir)
    except FileNotFoundError as exc:
        logger.warning("no development suite (%s): the temperature is the same for every table", exc)
        return None
    plain = net.without_k_ranker().eval()
    rec = records_for(plain, ((d.name, d.features, np.asarray(d.y)) for d in suite))
    distinct = np.array([frame_distinct_fraction(net.cfg, d.features) for d in suite])
    with torch.no_grad():
        scores = record_scores(ranker, rec[features_key(candidates)], rec["ari"])
    slope = fit_temperature_slope(scores, rec["k_true"], distinct, temperature)

    def probs(s: float) -> np.ndarray:
        return np.stack([k_probabilities(row, table_temperature(temperature, s, d))
                         for row, d in zip(scores, distinct)])

    return {"slope": slope, "tables": len(suite), "distinct_median": float(np.median(distinct)),
            "before": reliability(probs(0.0), rec["k_true"]), "after": reliability(probs(slope), rec["k_true"])}


def _save_with_phase(out: str, net, metadata: dict, phase: dict, hardware: bool) -> None:
    """Write ``net`` to ``out`` with ``metadata``'s lineage extended by ``phase`` (numbered here; its tasks added
    to the total); ``hardware``: the phase's device becomes the file's hardware."""
    from model.checkpoint import save_checkpoint
    from model.lineage import inherited_lineage

    lineage, inherited_tasks = inherited_lineage(metadata)
    phase = {"phase": len(lineage) + 1, **phase}
    new_meta = {**{k: v for k, v in metadata.items() if k not in ("lineage", "total_tasks_seen", "mlflow_run_id")},
                "step": 0, "tasks_seen": phase["tasks"], **({"hardware": phase["device"]} if hardware else {}),
                "lineage": [*lineage, phase], "total_tasks_seen": inherited_tasks + phase["tasks"]}
    save_checkpoint(out, net, new_meta)


def calibrate_k_ranker(checkpoint: str, out: str, records_dir: str = "runs/k-ranker-records", tables: int = 6000,
                       val_tables: int = 600, workers: int = 2, bench_dir: str | None = None,
                       dev_slope: bool = True) -> dict[str, Any]:
    """Stage 3 alone: ``checkpoint``'s ranker gets the temperature fitted on the last ``val_tables`` of its
    ``tables`` records (the tables its fit held out, computed again only where not on disk) and its slope on the
    development suite (under ``bench_dir``, default ``../shared/benchmarks``; ``dev_slope=False``: slope 0); written
    to ``out`` with the same weights, its lineage extended by a phase of no tasks."""
    from model.checkpoint import load_checkpoint, weights_sha256
    from model.network import TabClustNet

    start = time.perf_counter()
    net, metadata = load_checkpoint(checkpoint)
    if net.k_ranker is None:
        raise ValueError(f"{checkpoint} carries no K ranker: fit one with jobs/fit_k_ranker.py (which also "
                         "calibrates it)")
    sha = weights_sha256(net.without_k_ranker().state_dict())
    rec = build_records(str(Path(checkpoint).resolve()), tables, records_dir, sha, workers)
    held = slice(tables - val_tables, tables)
    result = calibration(net.k_ranker, rec[features_key(net.cfg.k_ranker_candidates)][held], rec["ari"][held],
                         rec["k_true"][held])
    dev = (dev_calibration(net, net.k_ranker, net.cfg.k_ranker_candidates, result["temperature"], bench_dir)
           if dev_slope else None)
    out_net = TabClustNet(dataclasses.replace(net.cfg, k_ranker_temperature=result["temperature"],
                                              k_ranker_temperature_slope=dev["slope"] if dev else 0.0))
    out_net.load_state_dict(net.state_dict())
    phase = {"run": Path(out).stem, "steps": 0, "tasks": 0,
             "wall_s": round(time.perf_counter() - start, 1), "device": f"{platform.machine()} CPU",
             "what": f"K ranker's temperature fitted to the labelled K of the {val_tables} tables its fit held out "
                     f"(records {tables - val_tables}..{tables - 1}; pipeline.k_ranker_fit.calibrate_k_ranker)"
                     + (f", its growth on tables with few distinct values to the {dev['tables']} development "
                        "tables" if dev else ""),
             "k_ranker_calibration": result, **({"k_ranker_dev_calibration": dev} if dev else {})}
    _save_with_phase(out, out_net, metadata, phase, hardware=False)
    return {"checkpoint": checkpoint, "out": out, **result, "dev": dev}


def fit_k_ranker(cfg: RankerFitConfig) -> dict[str, Any]:
    """The three stages (module docstring) -> a summary; the checkpoint is written to ``cfg.out``."""
    from model.checkpoint import load_checkpoint, weights_sha256
    from model.k_ranker import fit_ranker
    from model.network import TabClustNet

    start = time.perf_counter()
    parent, metadata = load_checkpoint(cfg.checkpoint)
    net = parent.without_k_ranker()
    sha = weights_sha256(net.state_dict())
    rec = build_records(str(Path(cfg.checkpoint).resolve()), cfg.tables, cfg.records_dir, sha, cfg.workers)
    fit, held = slice(0, cfg.tables - cfg.val_tables), slice(cfg.tables - cfg.val_tables, cfg.tables)
    key, ari_key = features_key(cfg.candidates), "ari" if cfg.target is None else f"ari_{cfg.target}"
    features, ari = rec[key], rec[ari_key]
    fit_features, fit_ari = features[fit], ari[fit]
    extra, cuts = {}, {}
    for family, n in cfg.extra_tables:
        extra[family] = build_records(str(Path(cfg.checkpoint).resolve()), n, cfg.records_dir, sha, cfg.workers,
                                      family=family)
        cuts[family] = n - max(1, n // 10)
        fit_features = np.concatenate([fit_features, *[extra[family][key][: cuts[family]]] * cfg.extra_weight])
        fit_ari = np.concatenate([fit_ari, *[extra[family][ari_key][: cuts[family]]] * cfg.extra_weight])
    ranker = fit_ranker(fit_features, fit_ari, epochs=cfg.epochs, seed=cfg.seed, feature_set=cfg.feature_set)
    held_out = paired_choice(ranker, features[held], ari[held])
    extra_held_out = {family: paired_choice(ranker, rec_f[key][cuts[family]:], rec_f[ari_key][cuts[family]:])
                      for family, rec_f in extra.items()}
    calibrated = calibration(ranker, features[held], ari[held], rec["k_true"][held])
    dev = dev_calibration(net, ranker, cfg.candidates, calibrated["temperature"]) if cfg.dev_slope else None
    out_net = TabClustNet(dataclasses.replace(net.cfg, k_ranker=True, k_ranker_features=cfg.feature_set,
                                              k_ranker_candidates=cfg.candidates,
                                              k_ranker_temperature=calibrated["temperature"],
                                              k_ranker_temperature_slope=dev["slope"] if dev else 0.0))
    out_net.load_state_dict({**net.state_dict(), **{f"k_ranker.{k}": v for k, v in ranker.state_dict().items()}})
    wall = time.perf_counter() - start
    phase = {"run": Path(cfg.out).stem, "seed": cfg.seed, "steps": 0,
             "tasks": cfg.tables, "wall_s": round(wall, 1),
             "device": f"{platform.machine()} CPU, {cfg.workers} processes",
             "what": f"K ranker fitted to the frozen network (pipeline.k_ranker_fit): {cfg.tables - cfg.val_tables} "
                     f"prior tables (seeds {TRAIN_SEED} + i; clean, noisy, one informative column)"
                     + "".join(f" and {cuts[family]} {family} tables ({FAMILIES[family][1]})" for family in extra)
                     + (f" (each counted {cfg.extra_weight} times)" if extra and cfg.extra_weight > 1 else "")
                     + ", N 100-1000, "
                     f"feature set {cfg.feature_set} of the {cfg.candidates} candidates, the ARI of refine="
                     f"{cfg.target or 'default'}, {cfg.epochs} epochs, seed {cfg.seed}",
             "k_ranker": {"held_out": held_out,
                          **({"extra_held_out": extra_held_out} if extra_held_out else {}),
                          "weights_sha256": weights_sha256(ranker.state_dict()),
                          "calibration": calibrated, **({"dev_calibration": dev} if dev else {})}}
    _save_with_phase(cfg.out, out_net, metadata, phase, hardware=True)
    return {"checkpoint": cfg.checkpoint, "out": cfg.out, "tables": cfg.tables, "held_out": held_out,
            **({"extra_tables": dict(cfg.extra_tables), "extra_held_out": extra_held_out} if extra_held_out else {}),
            "calibration": calibrated, "dev": dev, "wall_s": round(wall, 1)}
