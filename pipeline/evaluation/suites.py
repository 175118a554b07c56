"""Benchmark suites: the held-out synthetic datasets, the regime suites (held-out draws of the priors of
``priors.regimes``), the real-table folders (UCI, OpenML, dev), or any folder of Parquet files.

Every dataset comes out as an :class:`EvalDataset` with the same preprocessing for all methods (paper App. C.3):
numeric columns z-normalised (a constant column becomes all zeros instead of dividing by zero), categorical
columns kept as ``category`` (TabClustPFN embeds them; :meth:`EvalDataset.baseline_matrix` one-hot encodes them
for the scikit-learn baselines). Missing values, which the paper does not treat, are imputed before
normalisation: the column median for numeric columns, the most frequent level for categorical ones (wisc: 16
values, dermatology: 8); each dataset records what was imputed in ``notes``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

#: Prior seeds >= this are reserved for evaluation and never drawn in pretraining.
EVAL_SEED_BASE = 10**12
GMM_SEED_OFFSET = 0  # GMM dataset i: seed EVAL_SEED_BASE + i
ZEUS_SEED_OFFSET = 1_000  # ZEUS dataset i: the first seed EVAL_SEED_BASE + 1_000 + 1_000 i + j, j < 1_000,
ZEUS_SEED_TRIES = 1_000  # whose draw has the paper's numeric/categorical split
CALIBRATION_SEED_OFFSET = 1_000_000  # calibration dataset i: seed EVAL_SEED_BASE + 1_000_000 + i
AMORTIZED_SEED_OFFSET = 2_000_000  # amortized-regime task i: seed EVAL_SEED_BASE + 2_000_000 + i
CLUSTER_PFN_SEED_OFFSET = 3_000_000  # Cluster-PFN task i at D features: EVAL_SEED_BASE + 3_000_000 + 100_000 D + i
CLUSTER_PFN_SEED_STRIDE = 100_000
AMORTIZED_TASKS = 160  # paper Sec. 5 "Comparison with amortized clustering": 160 held-out sets
CLUSTER_PFN_TASKS = 320  # paper App. "Comparison with Cluster-PFN": 320 held-out sets per D
CLUSTER_PFN_DIMS = (2, 3, 4, 5)
MAX_ROWS = 1000
SUBSAMPLE_SEED = 0
TARGET_COLUMN = "target"

#: Paper Tab. 6 (App. C.1): (N, D, K) of the 25 held-out GMM datasets.
GMM_SIZES: tuple[tuple[int, int, int], ...] = (
    (511, 55, 8), (741, 33, 2), (827, 8, 7), (993, 47, 10), (740, 23, 6), (675, 39, 5), (718, 10, 7),
    (794, 44, 2), (724, 16, 2), (984, 55, 4), (588, 4, 2), (595, 20, 5), (850, 16, 5), (700, 31, 7),
    (869, 7, 3), (722, 8, 2), (693, 55, 4), (989, 19, 4), (892, 35, 2), (633, 5, 2), (825, 46, 7),
    (691, 17, 2), (853, 58, 7), (707, 43, 9), (753, 56, 6),
)
#: Paper Tab. 7 (App. C.1): (N, numerical D, categorical D, K) of the 24 held-out ZEUS datasets.
ZEUS_SIZES: tuple[tuple[int, int, int, int], ...] = (
    (649, 3, 4, 2), (910, 18, 14, 7), (948, 6, 43, 6), (905, 13, 17, 2), (863, 14, 1, 2), (898, 6, 0, 2),
    (589, 11, 9, 10), (568, 12, 9, 10), (523, 38, 10, 10), (785, 2, 27, 2), (658, 2, 17, 6), (628, 11, 41, 5),
    (862, 21, 3, 2), (632, 35, 17, 2), (906, 5, 57, 2), (688, 4, 25, 10), (757, 10, 17, 8), (705, 19, 31, 2),
    (590, 14, 3, 3), (535, 3, 4, 2), (635, 15, 22, 2), (546, 38, 6, 2), (757, 2, 3, 6), (633, 19, 3, 9),
)


@dataclass(frozen=True, eq=False)
class EvalDataset:
    """One benchmark dataset, preprocessed for every method.

    Attributes
    ----------
    name : str
        Unique within a run, e.g. ``gmm_00``, ``zeus_05``, ``iris``.
    suite : str
        ``synthetic``, ``real``, ``openml``, ``dev``, ``amortized``, ``cluster-pfn`` or ``data``.
    group : str
        ``gmm``, ``zeus``, the folder suite's name, ``amortized``, ``d2``..``d5`` (Cluster-PFN regime, by D)
        or ``data``.
    features : DataFrame (N, D)
        Z-normalised float columns and ``category`` columns.
    y : ndarray of int64 (N,)
        Ground-truth clusters 0..K-1.
    n_clusters : int
        K, the number of distinct values of ``y``.
    bayes_labels : ndarray (N,) or None
        Bayes-classifier labels under the true mixture (GMM datasets only): the oracle ceiling.
    notes : str
        Preprocessing applied (subsampling, imputed values, constant columns).
    """

    name: str
    suite: str
    group: str
    features: pd.DataFrame
    y: np.ndarray
    n_clusters: int
    bayes_labels: np.ndarray | None = None
    notes: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def categorical(self) -> list[int]:
        """Indices of the categorical columns of ``features``."""
        return [j for j, c in enumerate(self.features.columns)
                if isinstance(self.features[c].dtype, pd.CategoricalDtype)]

    def baseline_matrix(self) -> np.ndarray:
        """(N, P) float64 input of the scikit-learn baselines: numeric columns plus one-hot categoricals."""
        cats = [self.features.columns[j] for j in self.categorical]
        if not cats:
            return self.features.to_numpy(dtype=np.float64)
        return pd.get_dummies(self.features, columns=cats, dtype=np.float64).to_numpy(dtype=np.float64)


def benchmarks_dir(override: str | Path | None = None) -> Path:
    """The shared benchmark folder: ``override``, else ``<repo>/../shared/benchmarks``."""
    if override is not None:
        return Path(override)
    repo = Path(__file__).resolve().parents[2]
    return repo.parent / "shared" / "benchmarks"


def preprocess_table(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Impute, z-normalise numeric columns and keep categoricals as ``category``; return the frame and notes."""
    notes: list[str] = []
    out = {}
    for name in frame.columns:
        col = frame[name]
        n_missing = int(col.isna().sum())
        if isinstance(col.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(col.dtype):
            col = col.astype("category")
            if n_missing:
                mode = col.mode(dropna=True).iloc[0]
                col = col.fillna(mode)
                notes.append(f"{name}: {n_missing} missing imputed with the most frequent level")
            out[name] = col.cat.remove_unused_categories()
            continue
        values = col.to_numpy(dtype=np.float64, na_value=np.nan)
        if n_missing:
            values = np.where(np.isnan(values), np.nanmedian(values), values)
            notes.append(f"{name}: {n_missing} missing imputed with the median")
        std = values.std()
        if not std > 1e-12:
            notes.append(f"{name}: constant, set to 0")
            out[name] = np.zeros_like(values)
        else:
            out[name] = (values - values.mean()) / std
    return pd.DataFrame(out, index=frame.index), notes


def read_labelled_table(path: Path) -> tuple[pd.DataFrame, np.ndarray, list[str]]:
    """One Parquet file with a ``target`` column -> (its feature columns as stored, above ``MAX_ROWS`` rows a fixed
    subsample (seed ``SUBSAMPLE_SEED``), index reset; the labels as codes 0..K-1; notes on what was done)."""
    frame = pd.read_parquet(path)
    if TARGET_COLUMN not in frame.columns:
        raise ValueError(f"{path} has no {TARGET_COLUMN!r} column; every benchmark table needs the ground-truth "
                         f"labels in a column named {TARGET_COLUMN!r}")
    notes = []
    n = len(frame)
    if n > MAX_ROWS:
        idx = np.sort(np.random.default_rng(SUBSAMPLE_SEED).choice(n, MAX_ROWS, replace=False))
        frame = frame.iloc[idx]
        notes.append(f"subsampled {n} -> {MAX_ROWS} rows (seed {SUBSAMPLE_SEED})")
    y = pd.factorize(frame[TARGET_COLUMN], sort=True)[0].astype(np.int64)
    if (y < 0).any():
        raise ValueError(f"{path}: the {TARGET_COLUMN!r} column has missing labels")
    return frame.drop(columns=[TARGET_COLUMN]).reset_index(drop=True), y, notes


def load_parquet_dataset(path: Path, suite: str, group: str) -> EvalDataset:
    """Read one Parquet file with a ``target`` column, subsample N > 1000 rows (seed 0) and preprocess it."""
    raw, y, notes = read_labelled_table(path)
    features, prep_notes = preprocess_table(raw)
    return EvalDataset(name=path.stem, suite=suite, group=group, features=features, y=y,
                       n_clusters=int(len(np.unique(y))), notes="; ".join(notes + prep_notes))


def load_folder(folder: str | Path, suite: str, group: str, names: list[str] | None = None) -> list[EvalDataset]:
    """Every ``*.parquet`` file of ``folder`` (or only ``names``, each of which must exist), sorted by file name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"benchmark folder not found: {folder}; pass --benchmarks-dir or --data")
    paths = sorted(folder.glob("*.parquet"))
    if names is not None:
        missing = sorted(set(names) - {p.stem for p in paths})
        if missing:
            raise FileNotFoundError(f"no Parquet file for {missing} in {folder}; check the dataset names or pass "
                                    "--benchmarks-dir")
        paths = [p for p in paths if p.stem in set(names)]
    if not paths:
        raise FileNotFoundError(f"no Parquet files in {folder}")
    return [load_parquet_dataset(p, suite, group) for p in paths]


def real_suite(bench_dir: str | Path | None = None, names: list[str] | None = None) -> list[EvalDataset]:
    """The 22 UCI datasets of ``<benchmarks>/real`` (or only ``names``): a test suite."""
    return load_folder(benchmarks_dir(bench_dir) / "real", "real", "real", names)


def openml_suite(bench_dir: str | Path | None = None, names: list[str] | None = None) -> list[EvalDataset]:
    """The paper's 22 OpenML tables of ``<benchmarks>/openml`` (or only ``names``): a test suite."""
    return load_folder(benchmarks_dir(bench_dir) / "openml", "openml", "openml", names)


def dev_suite(bench_dir: str | Path | None = None, names: list[str] | None = None) -> list[EvalDataset]:
    """The 23 labelled R-package tables of ``<benchmarks>/dev`` (or only ``names``): the development suite, the
    real tables that defaults, rules and checkpoints are chosen on (never the test suites)."""
    return load_folder(benchmarks_dir(bench_dir) / "dev", "dev", "dev", names)


#: Suites read from ``<benchmarks>/<name>/`` and their role: "test" suites are reported, never chosen on.
FOLDER_SUITES = {"real": real_suite, "openml": openml_suite, "dev": dev_suite}
SUITE_ROLES = {"synthetic": "test", "real": "test", "openml": "test", "dev": "development", "amortized": "test",
               "cluster-pfn": "test"}


def prior_frame(X: np.ndarray, categorical) -> pd.DataFrame:
    """A prior draw's (N, D) array as a DataFrame: float columns, and its categorical code columns as ``category``."""
    cat = set(int(j) for j in categorical)
    return pd.DataFrame({f"x{j}": pd.Categorical(X[:, j].astype(np.int64)) if j in cat
                         else X[:, j].astype(np.float64) for j in range(X.shape[1])})


def _prior_dataset(name: str, group: str, seeds: range, kind: str, n: int, d_num: int, d_cat: int,
                   k: int) -> EvalDataset:
    """Draw one held-out prior dataset of fixed size and wrap it (categorical codes -> ``category``).

    The first seed of ``seeds`` whose draw has exactly ``d_num`` continuous columns is kept (ZEUS draws the
    split at random; GMM is all continuous, so its first seed always fits). This conditions the prior on the
    paper's split without changing anything else.
    """
    from priors import sample_dataset

    config = fixed_size_config(kind, n, d_num, d_cat, k)
    for seed in seeds:
        ds = sample_dataset(seed, kind=kind, config=config)
        if int(ds.meta["n_continuous"]) == d_num:
            break
    else:
        logger.warning("%s: no seed in %s gave %d continuous columns; keeping the last draw", name, seeds, d_num)
    X = np.asarray(ds.X)
    n_cat = len(ds.categorical)
    bayes = ds.meta.get("bayes_labels")
    notes = (f"prior {kind}, seed {seed}; N={n}, D={X.shape[1] - n_cat} numeric + {n_cat} categorical, K={k} "
             f"(paper: {d_num} + {d_cat})")
    return EvalDataset(name=name, suite="synthetic", group=group, features=prior_frame(X, ds.categorical),
                       y=np.asarray(ds.y, dtype=np.int64), n_clusters=int(ds.n_clusters),
                       bayes_labels=None if bayes is None else np.asarray(bayes), notes=notes,
                       meta={"seed": seed, "omega_target": ds.meta.get("omega_target")})


def fixed_size_config(kind: str, n: int, d_num: int, d_cat: int, k: int):
    """A ``PriorConfig`` drawing exactly N rows, D = d_num + d_cat features and K clusters.

    For ZEUS the prior draws the number of continuous columns in ``min_cont_features..D``; the minimum is set
    to ``d_num`` so that the seed search of :func:`synthetic_suite` soon meets a draw with exactly ``d_num``.
    """
    import dataclasses

    from priors import PriorConfig

    base = PriorConfig()
    d = d_num + d_cat
    cfg = dataclasses.replace(base, n_rows=(n, n), n_features=(d, d), n_clusters=(k, k),
                              min_cluster_size=min(base.min_cluster_size, n // k))
    if kind == "zeus":
        cfg = dataclasses.replace(cfg, zeus=dataclasses.replace(base.zeus, min_cont_features=d_num))
    return cfg


#: The development variants of a prior (docs/DESIGN.md, "Decision protocol"): see :func:`prior_variant`.
PRIOR_VARIANTS = ("prior", "noisy", "one-informative", "coarse", "skewed")


def prior_variant(base, which: str):
    """``base`` (a ``PriorConfig``) as it is (``"prior"``); with pure-noise columns in half of its tables and
    contaminated rows in 30 % (``"noisy"``); or with 50-90 % pure-noise columns beside as few as one informative
    column in every table (``"one-informative"``); or with some continuous columns of every table read as
    ordinal levels, rounded values or counts (``"coarse"``); or with half or more of the continuous columns of every
    table measured on a multiplicative scale (``"skewed"``; :mod:`priors.nuisance`)."""
    import dataclasses

    if which == "prior":
        return base
    if which == "noisy":
        return dataclasses.replace(base, nuisance=dataclasses.replace(base.nuisance, p_noise_features=0.5,
                                                                      p_contamination=0.3))
    if which == "one-informative":
        return dataclasses.replace(base, nuisance=dataclasses.replace(
            base.nuisance, p_noise_features=1.0, noise_fraction=(0.5, 0.9), min_informative=1))
    if which == "coarse":
        return dataclasses.replace(base, nuisance=dataclasses.replace(base.nuisance, p_discrete=1.0))
    if which == "skewed":
        return dataclasses.replace(base, nuisance=dataclasses.replace(base.nuisance, p_skewed=1.0))
    raise ValueError(f"unknown prior variant {which!r}: choose from {', '.join(PRIOR_VARIANTS)}")


def synthetic_suite(n_gmm: int | None = None, n_zeus: int | None = None) -> list[EvalDataset]:
    """The held-out synthetic benchmark: 25 GMM and 24 ZEUS datasets with the sizes of the paper's Tab. 6-7
    (N, numeric and categorical D, K) and reserved seeds (>= ``EVAL_SEED_BASE``).

    ``n_gmm``/``n_zeus`` keep only the first datasets of each family (quick runs).
    """
    out = []
    for i, (n, d, k) in enumerate(GMM_SIZES[:n_gmm]):
        seeds = range(EVAL_SEED_BASE + GMM_SEED_OFFSET + i, EVAL_SEED_BASE + GMM_SEED_OFFSET + i + 1)
        out.append(_prior_dataset(f"gmm_{i:02d}", "gmm", seeds, "gmm", n, d, 0, k))
    for i, (n, d_num, d_cat, k) in enumerate(ZEUS_SIZES[:n_zeus]):
        first = EVAL_SEED_BASE + ZEUS_SEED_OFFSET + ZEUS_SEED_TRIES * i
        out.append(_prior_dataset(f"zeus_{i:02d}", "zeus", range(first, first + ZEUS_SEED_TRIES), "zeus", n,
                                  d_num, d_cat, k))
    return out


def _regime_dataset(name: str, suite: str, group: str, seed: int, config) -> EvalDataset:
    """One held-out draw of a regime prior (``kind="gmm"``), with its Bayes-oracle labels."""
    from priors import sample_dataset

    ds = sample_dataset(seed, kind="gmm", config=config)
    X = np.asarray(ds.X)
    bayes = ds.meta.get("bayes_labels")
    notes = f"prior {suite} regime (gmm), seed {seed}; N={X.shape[0]}, D={X.shape[1]}, K={int(ds.n_clusters)}"
    return EvalDataset(name=name, suite=suite, group=group, features=prior_frame(X, ds.categorical),
                       y=np.asarray(ds.y, dtype=np.int64), n_clusters=int(ds.n_clusters),
                       bayes_labels=None if bayes is None else np.asarray(bayes), notes=notes,
                       meta={"seed": seed, "omega_target": ds.meta.get("omega_target")})


def amortized_seeds(n_tasks: int | None = None) -> list[int]:
    """The reserved seeds of the amortized-regime suite (the first ``n_tasks`` of :data:`AMORTIZED_TASKS`)."""
    n = AMORTIZED_TASKS if n_tasks is None else min(n_tasks, AMORTIZED_TASKS)
    return [EVAL_SEED_BASE + AMORTIZED_SEED_OFFSET + i for i in range(n)]


def cluster_pfn_seeds(n_features: int, n_tasks: int | None = None) -> list[int]:
    """The reserved seeds of the Cluster-PFN suite at ``n_features`` (the first ``n_tasks`` of 320)."""
    n = CLUSTER_PFN_TASKS if n_tasks is None else min(n_tasks, CLUSTER_PFN_TASKS)
    first = EVAL_SEED_BASE + CLUSTER_PFN_SEED_OFFSET + CLUSTER_PFN_SEED_STRIDE * n_features
    return [first + i for i in range(n)]


def amortized_suite(n_tasks: int | None = None) -> list[EvalDataset]:
    """The amortized-clustering regime (paper Sec. 5, Tab. 3): 160 held-out draws of
    :func:`priors.regimes.amortized_prior` (2-D full-covariance GMMs, N 100-500, K 2..10), group ``amortized``.

    ``n_tasks`` keeps only the first tasks (quick runs); a test suite, never chosen on.
    """
    from priors.regimes import amortized_prior

    config = amortized_prior()
    return [_regime_dataset(f"amortized_{i:03d}", "amortized", "amortized", seed, config)
            for i, seed in enumerate(amortized_seeds(n_tasks))]


def cluster_pfn_suite(n_tasks: int | None = None,
                      dims: tuple[int, ...] = CLUSTER_PFN_DIMS) -> list[EvalDataset]:
    """The Cluster-PFN regime (paper App. "Comparison with Cluster-PFN"): for each D in ``dims`` (2..5), 320
    held-out draws of :func:`priors.regimes.cluster_pfn_prior` (N = 500, K 2..10), group ``d{D}``.

    ``n_tasks`` keeps only the first tasks of each D (quick runs); a test suite, never chosen on.
    """
    from priors.regimes import cluster_pfn_prior

    out = []
    for d in dims:
        config = cluster_pfn_prior(d)
        out += [_regime_dataset(f"cpfn_d{d}_{i:03d}", "cluster-pfn", f"d{d}", seed, config)
                for i, seed in enumerate(cluster_pfn_seeds(d, n_tasks))]
    return out


#: Suites drawn from a regime prior (``priors.regimes``), by name; each takes ``n_tasks`` (per group).
REGIME_SUITES = {"amortized": amortized_suite, "cluster-pfn": cluster_pfn_suite}
