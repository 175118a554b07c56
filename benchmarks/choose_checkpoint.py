"""Which checkpoint to ship, chosen on development data by the decision protocol of docs/DESIGN.md.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_checkpoint.py outputs/gpu-continue/model.pt \
        --out docs/results/choice-checkpoint

Every candidate and the baseline (``--baseline``, default the shipped weights) cluster the same tables through
``TabClustPFN`` with its defaults (K inferred; each checkpoint's own K ranker where it carries one), on the
development sets only: ``prior`` (held-out tasks of the paper's prior, validation seeds, N 500-1000), ``noisy``
(the same prior with pure-noise columns in half the tasks and contaminated rows in 30 %; ``priors/nuisance.py``),
``one-informative`` (the same prior, every table with D >= 3 given 50-90 % pure-noise columns beside as few as
one informative column, ``NuisanceConfig.min_informative = 1``: a failure of the shipped weights), ``coarse``
(the same prior, some continuous columns of every table read as ordinal levels, rounded values or counts,
``NuisanceConfig.p_discrete = 1``; added 2026-11-29), ``skewed`` (the same prior, half or more of the
continuous columns of every table measured on a multiplicative scale, ``NuisanceConfig.p_skewed = 1``; added
2026-12-02), ``low-d`` (the same prior with 2 or 3 columns; added
2026-11-29), ``dev`` (the 23 tables of ``../shared/benchmarks/dev``) and ``shapes`` (the 54 generated tables of
arcs, rings and non-spherical blobs of ``benchmarks/shapes.py``; added 2026-11-29). The test suites are not
touched.

The rule (docs/DESIGN.md, "Decision protocol"): per set, each candidate against the baseline table by table as a
paired mean ARI difference +- its standard error; a candidate qualifies when it gains beyond two standard errors on
a set and loses beyond one on none; of those that qualify, the one with the largest mean gain over the sets (each
set weighted equally) is chosen. Writes ``OUT.csv`` (one row per table and checkpoint) and ``OUT.md`` (the paired
table, the verdict, command, checkpoints' sha256, machine, date).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

from model.checkpoint import read_checkpoint  # noqa: E402
from model.estimator import TabClustPFN, default_checkpoint_path  # noqa: E402
from pipeline.config import StreamConfig  # noqa: E402
from pipeline.evaluation.protocol import gains_and_losses  # noqa: E402
from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines  # noqa: E402
from pipeline.evaluation.suites import dev_suite, prior_frame, prior_variant  # noqa: E402
from tune.evaluate import fixed_synthetic_tasks  # noqa: E402

SETS = ("prior", "noisy", "one-informative", "coarse", "skewed", "low-d", "dev", "shapes")
#: Sets of the paper's prior at a few columns (their D range): ``low-d`` is one of SETS; ``mid-d`` (added
#: 2026-11-30, for the width of the BIC path, ``benchmarks/choose_low_dim.py``) only where a benchmark asks for it.
FEW_COLUMNS = {"low-d": (2, 3), "mid-d": (4, 6)}
#: ``coarse-low-d`` (added 2026-12-03, for the BIC path on columns of few levels, ``benchmarks/choose_low_dim.py``):
#: the ``coarse`` prior at 2-4 columns, the tables the BIC path serves; only where a benchmark asks for it.
COARSE_FEW_COLUMNS = {"coarse-low-d": (2, 4)}
#: ``cat-noise`` (added 2026-12-02, for the screening of categorical columns,
#: ``benchmarks/choose_categorical_screening.py``): the prior's tables with 1-3 categorical columns beside them that
#: are independent of everything (2-6 levels, Dirichlet(1) frequencies), as a code or a region often is in a real
#: table; only where a benchmark asks for it.
CATEGORICAL_NOISE = "cat-noise"
#: ``flag-noise`` (added 2026-12-06, for screening numeric 0/1 columns as categories,
#: ``benchmarks/choose_categorical_screening.py``): the prior's tables with 1-3 numeric columns of 0s and 1s beside
#: them that are independent of everything (P(1) uniform in 0.2-0.8), as a yes/no field stored as a number often is;
#: only where a benchmark asks for it.
FLAG_NOISE = "flag-noise"
#: ``dev-gaps`` (added 2026-12-05, for the filling of missing cells, ``benchmarks/choose_imputation.py``): the dev
#: suite's tables that have missing cells of their own, as read (no imputation, no z-scores; above 1,000 rows the
#: evaluation's subsample), so the estimator meets real gaps; only where a benchmark asks for it.
DEV_GAPS = "dev-gaps"
#: ``dev-derived`` (added 2026-12-07, for K rankers fitted with such tables, ``benchmarks/choose_k_rule.py``): tables
#: derived from the dev suite's real ones (``pipeline.k_ranker_fit.dev_derived_table``: 2..K of a table's classes,
#: sometimes some of its columns), the two folds in turn; tables of one source are alike, so their standard errors
#: are taken over the sources; only where a benchmark asks for it.
DEV_DERIVED = "dev-derived"
#: ``many-blobs`` (added 2026-12-07, for merging the BIC path's tiles, ``benchmarks/choose_low_dim.py``): 7-10
#: Gaussian blobs in 2-3 features (``benchmarks.shapes.many_blobs_frame``), where touching blobs must stay apart;
#: only where a benchmark asks for it.
MANY_BLOBS = "many-blobs"
#: ``many-ellipses`` (added 2026-12-07, after the tiles' chain rule was chosen, as a check of it): 7-10 Gaussian
#: clusters of random covariance in 2-3 features (``benchmarks.shapes.many_ellipses_frame``); only where a benchmark
#: asks for it.
MANY_ELLIPSES = "many-ellipses"
#: ``ratings`` (added 2026-12-08, for the BIC path on columns of few levels, ``benchmarks/choose_low_dim_spread.py``):
#: 2-4 columns of 1-5 or 1-7 ratings with 2-5 classes (``benchmarks.shapes.ratings_frame``); only where a benchmark
#: asks for it.
RATINGS = "ratings"
#: ``level-clusters`` (added 2026-12-08, after ``ratings``, as a check of the spread levels there): 2-4 columns of which
#: 1-2 integer codes of the clusters (``benchmarks.shapes.level_clusters_frame``); only where a benchmark asks for it.
LEVEL_CLUSTERS = "level-clusters"


def dev_gap_tables():
    """(name, frame, labels) of each dev table with a missing feature cell, read as a user would hand it over."""
    from pipeline.evaluation.suites import benchmarks_dir, read_labelled_table

    for path in sorted((benchmarks_dir() / "dev").glob("*.parquet")):
        features, y, _ = read_labelled_table(path)
        if features.isna().to_numpy().any():
            yield path.stem, features, y


def categorical_noise(frame: pd.DataFrame, index: int) -> pd.DataFrame:
    """``frame`` with 1-3 categorical noise columns (``noise_c0``, ...) appended, drawn from table ``index``'s own
    stream (``SeedSequence(index, spawn_key=(7,))``), so a table's noise is the same in every run."""
    rng = np.random.default_rng(np.random.SeedSequence(int(index), spawn_key=(7,)))
    out = frame.copy()
    for j in range(int(rng.integers(1, 4))):
        levels = int(rng.integers(2, 7))
        codes = rng.choice(levels, size=len(frame), p=rng.dirichlet(np.ones(levels)))
        out[f"noise_c{j}"] = pd.Categorical([f"level{c}" for c in codes])
    return out


def flag_noise(frame: pd.DataFrame, index: int) -> pd.DataFrame:
    """``frame`` with 1-3 numeric 0/1 noise columns (``flag_0``, ...) appended, drawn from table ``index``'s own
    stream (``SeedSequence(index, spawn_key=(8,))``), so a table's noise is the same in every run."""
    rng = np.random.default_rng(np.random.SeedSequence(int(index), spawn_key=(8,)))
    out = frame.copy()
    for j in range(int(rng.integers(1, 4))):
        out[f"flag_{j}"] = (rng.random(len(frame)) < rng.uniform(0.2, 0.8)).astype(np.int64)
    return out


#: ``level-noise`` (added 2026-12-07, for screening numeric columns of few values as categories,
#: ``benchmarks/choose_categorical_screening.py``): the prior's tables with 1-3 integer columns of 3-10 levels beside
#: them that are independent of everything (:func:`level_noise`), as a count or a rating often is in a real table;
#: ``level-noise-low-d``: the ``low-d`` tables (2-3 columns, the BIC path's) with 1-2 such columns. Only where a
#: benchmark asks for them.
LEVEL_NOISE = "level-noise"
LEVEL_NOISE_FEW_COLUMNS = {"level-noise-low-d": FEW_COLUMNS["low-d"]}


def level_noise(frame: pd.DataFrame, index: int, most: int = 3) -> pd.DataFrame:
    """``frame`` with 1 to ``most`` integer noise columns (``level_0``, ...) appended, drawn from table ``index``'s
    own stream (``SeedSequence(index, spawn_key=(11,))``), so a table's noise is the same in every run: each of 3-10
    levels counted from 0 or 1, frequencies ~ Dirichlet(2)."""
    rng = np.random.default_rng(np.random.SeedSequence(int(index), spawn_key=(11,)))
    out = frame.copy()
    for j in range(int(rng.integers(1, most + 1))):
        levels = int(rng.integers(3, 11))
        codes = rng.choice(levels, size=len(frame), p=rng.dirichlet(np.full(levels, 2.0)))
        out[f"level_{j}"] = codes.astype(np.int64) + int(rng.integers(0, 2))
    return out


#: ``cat-cross`` (added 2026-12-06, for setting aside kept categories that only split the clusters,
#: ``benchmarks/choose_categorical_screening.py``): the prior's tables with 1-2 factors beside them that cross the
#: clusters (:func:`crossing_factors`), as a sex beside species or a year beside regions; only where asked for.
CATEGORICAL_CROSS = "cat-cross"


def crossing_factors(frame: pd.DataFrame, y: np.ndarray, index: int) -> pd.DataFrame:
    """``frame`` with 1-2 factors appended (``cross_0``, ...), drawn from table ``index``'s own stream
    (``SeedSequence(index, spawn_key=(10,))``): each a category of 2-3 levels or, half the time, a numeric 0/1 flag,
    its levels independent of the clusters ``y`` (frequencies ~ Dirichlet(4)), and each shifting a random 25-75 % of
    the continuous columns by an offset per level ~ N(0, (e s)^2), e ~ U(0.25, 1) and s the column's pooled
    standard deviation within the clusters: the factor crosses every cluster and shows in the numbers too, so no
    independence test drops it."""
    rng = np.random.default_rng(np.random.SeedSequence(int(index), spawn_key=(10,)))
    out = frame.copy()
    y = np.asarray(y)
    numeric = [c for c in frame.columns if pd.api.types.is_float_dtype(frame[c])]
    for j in range(int(rng.integers(1, 3))):
        flag = bool(rng.random() < 0.5)
        levels = 2 if flag else int(rng.integers(2, 4))
        codes = rng.choice(levels, size=len(frame), p=rng.dirichlet(np.full(levels, 4.0)))
        shifted = rng.choice(numeric, size=max(1, int(round(len(numeric) * rng.uniform(0.25, 0.75)))), replace=False)
        effect = rng.uniform(0.25, 1.0)
        for name in shifted:
            values = out[name].to_numpy(np.float64)
            within = np.sqrt(np.mean([values[y == k].var() for k in np.unique(y)]))
            out[name] = values + (rng.normal(size=levels) * effect * within)[codes]
        out[f"cross_{j}"] = codes.astype(np.int64) if flag else pd.Categorical([f"level{c}" for c in codes])
    return out


#: the sets made of the prior's tables with noise columns added: set -> the function adding them
NOISE_COLUMNS = {CATEGORICAL_NOISE: categorical_noise, FLAG_NOISE: flag_noise, LEVEL_NOISE: level_noise,
                 **{name: lambda frame, index: level_noise(frame, index, most=2) for name in LEVEL_NOISE_FEW_COLUMNS}}
#: ``all-cat`` (added 2026-12-06, for the latent class path of tables of categories only,
#: ``benchmarks/choose_categorical_path.py``): tables whose every column is categorical, drawn as the prior draws its
#: categorical columns (:func:`latent_class_table`); only where a benchmark asks for it.
ALL_CATEGORICAL = "all-cat"
#: ``all-cat-flags`` (added 2026-12-06, for numeric 0/1 flags on that path): the ``all-cat`` tables with every
#: column of two levels stored as the numbers 0 and 1, as yes/no fields often are; only where a benchmark asks for it.
ALL_CATEGORICAL_FLAGS = "all-cat-flags"


def latent_class_table(index: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Table ``index`` of the ``all-cat`` set, from its own stream (``SeedSequence(index, spawn_key=(9,))``): K as
    the prior draws it (2 with probability 0.3, else 3..10), N 100..1,000 rows, each cluster at least 5, mixing
    proportions ~ Dirichlet(2); 4..16 categorical columns of 2..5 levels, each cluster's level probabilities ~
    Dirichlet(0.5) (the ZEUS prior's ``dirichlet_alpha``, ``cardinality_range`` and ``category_alpha``), the
    columns independent given the cluster: the latent class model. Levels are text (``"l0"``, ...)."""
    rng = np.random.default_rng(np.random.SeedSequence(int(index), spawn_key=(9,)))
    k = 2 if rng.random() < 0.3 else int(rng.integers(3, 11))
    n, d = int(rng.integers(100, 1001)), int(rng.integers(4, 17))
    y = np.concatenate([np.repeat(np.arange(k), 5), rng.choice(k, n - 5 * k, p=rng.dirichlet(np.full(k, 2.0)))])
    y = rng.permutation(y)
    columns = {}
    for j in range(d):
        levels = int(rng.integers(2, 6))
        cumulative = np.cumsum(rng.dirichlet(np.full(levels, 0.5), size=k), axis=1)[y]  # (n, levels)
        codes = np.minimum((rng.random(n)[:, None] > cumulative).sum(1), levels - 1)
        columns[f"c{j}"] = pd.Categorical([f"l{c}" for c in codes])
    return pd.DataFrame(columns), y


def tables(which: str, n_tasks: int, offset: int = 0):
    """(name, frame, labels) of one development set, the same for every checkpoint; ``offset``: a synthetic set's
    tables from that validation seed (``shapes``: that table) on (a fresh draw of the same set; the dev suite has
    none). ``low-d``: the paper's prior with 2 or 3 columns, the low-dimensional tables that a mixture's estimated
    proportions can mislead."""
    if which == "dev":
        if offset:
            raise ValueError("the dev suite has no fresh draw: offset must be 0 for it")
        for ds in dev_suite():
            yield ds.name, ds.features, np.asarray(ds.y)
        return
    if which in (MANY_BLOBS, MANY_ELLIPSES, RATINGS, LEVEL_CLUSTERS):
        from benchmarks.shapes import level_clusters_frame, many_blobs_frame, many_ellipses_frame, ratings_frame

        frame = {MANY_BLOBS: many_blobs_frame, MANY_ELLIPSES: many_ellipses_frame, RATINGS: ratings_frame,
                 LEVEL_CLUSTERS: level_clusters_frame}[which]
        for i in range(offset, offset + n_tasks):
            yield frame(i)
        return
    if which == DEV_DERIVED:
        from pipeline.k_ranker_fit import dev_derived_table

        for i in range(offset, offset + n_tasks):  # both folds in turn, so a fold's ranker reads the other's
            yield dev_derived_table(i // 2, i % 2)
        return
    if which == DEV_GAPS:
        if offset:
            raise ValueError("the dev suite has no fresh draw: offset must be 0 for it")
        yield from dev_gap_tables()
        return
    if which in (ALL_CATEGORICAL, ALL_CATEGORICAL_FLAGS):
        for i in range(offset, offset + n_tasks):
            frame, y = latent_class_table(i)
            if which == ALL_CATEGORICAL_FLAGS:  # two levels "l0" / "l1" -> 0 / 1
                frame = frame.apply(lambda c: c.cat.codes.astype(np.int64) if c.nunique() == 2 else c)
            yield f"{which}_{i}", frame, y
        return
    if which == "shapes":  # benchmarks/shapes.py's tables: each seed a block of every kind and size
        from benchmarks.shapes import shape_frames

        yield from shape_frames(n_tasks, offset)
        return
    if which not in SETS and which not in FEW_COLUMNS and which not in COARSE_FEW_COLUMNS \
            and which not in NOISE_COLUMNS and which != CATEGORICAL_CROSS:
        known = [*SETS, *FEW_COLUMNS, *COARSE_FEW_COLUMNS, *NOISE_COLUMNS, CATEGORICAL_CROSS, ALL_CATEGORICAL,
                 ALL_CATEGORICAL_FLAGS, DEV_GAPS, DEV_DERIVED, MANY_BLOBS, MANY_ELLIPSES, RATINGS,
                 LEVEL_CLUSTERS]
        raise ValueError(f"unknown set {which!r}: choose from {', '.join(dict.fromkeys(known))}")
    stream = StreamConfig()
    base = dataclasses.replace(stream.prior, n_rows=(500, 1000))
    if which in FEW_COLUMNS or which in LEVEL_NOISE_FEW_COLUMNS:
        prior = dataclasses.replace(base, n_features={**FEW_COLUMNS, **LEVEL_NOISE_FEW_COLUMNS}[which])
    elif which in COARSE_FEW_COLUMNS:
        prior = dataclasses.replace(prior_variant(base, "coarse"), n_features=COARSE_FEW_COLUMNS[which])
    else:
        prior = base if which in NOISE_COLUMNS or which == CATEGORICAL_CROSS else prior_variant(base, which)
    add_noise = NOISE_COLUMNS.get(which, lambda frame, index: frame)
    for i, task in enumerate(fixed_synthetic_tasks(dataclasses.replace(stream, prior=prior), n_tasks, offset=offset),
                             start=offset):
        frame, y = prior_frame(task.X, task.categorical), np.asarray(task.y)
        yield f"{which}_{i}", crossing_factors(frame, y, i) if which == CATEGORICAL_CROSS else add_noise(frame, i), y


def paired(baseline: pd.Series, candidate: pd.Series) -> dict[str, float]:
    """Candidate minus baseline on the same tables: mean, standard error, tables better and worse."""
    d = (candidate - baseline).to_numpy(float)
    se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
    return {"mean": float(d.mean()), "se": se, "better": int((d > 1e-9).sum()), "worse": int((d < -1e-9).sum())}


def verdict(diffs: dict[str, dict[str, dict[str, float]]]) -> tuple[str | None, dict[str, str]]:
    """The protocol's choice from ``diffs[candidate][set] = paired(...)``: (the chosen candidate or None, a
    reason per candidate)."""
    reasons, qualified = {}, {}
    for cand, per_set in diffs.items():
        gains, losses = gains_and_losses({s: (p["mean"], p["se"]) for s, p in per_set.items()})
        mean_gain = float(np.mean([p["mean"] for p in per_set.values()]))
        if losses:
            reasons[cand] = f"does not qualify: loses beyond one standard error on {', '.join(losses)}"
        elif not gains:
            reasons[cand] = "does not qualify: gains beyond two standard errors on no set"
        else:
            qualified[cand] = mean_gain
            reasons[cand] = (f"qualifies: gains beyond two standard errors on {', '.join(gains)}, loses beyond one "
                             f"on none; mean gain over the sets {mean_gain:+.4f}")
    chosen = max(qualified, key=qualified.get) if qualified else None
    return chosen, reasons


def score(checkpoints: list[str], sets: list[str], n_tasks: dict[str, int], offset: int = 0) -> pd.DataFrame:
    estimators = {c: TabClustPFN(checkpoint=c, random_state=0) for c in checkpoints}  # one network load each
    rows = []
    for which in sets:
        for name, frame, y in tables(which, n_tasks.get(which, 0), offset):
            for c, est in estimators.items():
                est.fit(frame)
                rows.append({"set": which, "table": name, "checkpoint": c, "N": len(y), "D": frame.shape[1],
                             "K": len(np.unique(y)), "ari": adjusted_rand_score(y, est.labels_),
                             "k_pred": int(est.n_clusters_)})
        print(f"{which}: {sum(r['set'] == which for r in rows) // len(checkpoints)} tables", flush=True)
    return pd.DataFrame(rows)


def report(df: pd.DataFrame, baseline: str, candidates: list[str]) -> tuple[list[str], str | None]:
    lines = ["| set | tables | checkpoint | median ARI | against the baseline (mean +- s.e.) | better / worse | "
             "mean abs K error |", "|---|---|---|---|---|---|---|"]
    diffs: dict[str, dict[str, dict[str, float]]] = {c: {} for c in candidates}
    for which, part in df.groupby("set", sort=False):
        wide = part.pivot(index="table", columns="checkpoint", values="ari")
        for c in [baseline, *candidates]:
            rows = part[part.checkpoint == c]
            kerr = (rows.k_pred - rows.K).abs().mean()
            if c == baseline:
                lines.append(f"| {which} | {len(rows)} | {label(c)} (baseline) | {rows.ari.median():.3f} | - | - | "
                             f"{kerr:.2f} |")
                continue
            p = diffs[c][which] = paired(wide[baseline], wide[c])
            lines.append(f"| {which} | {len(rows)} | {label(c)} | {rows.ari.median():.3f} | {p['mean']:+.4f} +- "
                         f"{p['se']:.4f} | {p['better']} / {p['worse']} | {kerr:.2f} |")
    chosen, reasons = verdict(diffs)
    lines += ["", *[f"- {label(c)}: {reasons[c]}." for c in candidates], "",
              f"Chosen: {label(chosen)}." if chosen else "Chosen: none; the baseline stays."]
    return lines, chosen


def ranker_notes(baseline: str, candidates: list[str]) -> list[str]:
    """A line per candidate without a K ranker when the baseline has one: the estimator's default then chooses its
    K by expected ARI, so the comparison mixes the network with the rule."""
    def has_ranker(path: str) -> bool:
        return bool(read_checkpoint(path)["model_config"].get("k_ranker"))

    if not has_ranker(baseline):
        return []
    return [f"{label(c)} carries no K ranker (its K by expected ARI) while the baseline's does: fit one with "
            f"`python jobs/fit_k_ranker.py --checkpoint {c} --out ...` for a like-for-like choice"
            for c in candidates if not has_ranker(c)]


def label(path: str) -> str:
    """A checkpoint's name in the tables: its path and the first 12 hex digits of its weights' sha256."""
    shown = os.path.relpath(path) if Path(path).resolve().is_relative_to(Path.cwd()) else path
    return f"`{shown}` ({read_checkpoint(path)['sha256'][:12]})"


def main(argv=None) -> str | None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("candidates", nargs="+", help="candidate checkpoints")
    ap.add_argument("--baseline", default=str(default_checkpoint_path()), help="default: the shipped weights")
    ap.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    ap.add_argument("--prior-tasks", type=int, default=400)
    ap.add_argument("--noisy-tasks", type=int, default=200)
    ap.add_argument("--one-informative-tasks", type=int, default=200)
    ap.add_argument("--coarse-tasks", type=int, default=200)
    ap.add_argument("--skewed-tasks", type=int, default=200)
    ap.add_argument("--low-d-tasks", type=int, default=200)
    ap.add_argument("--shapes-tasks", type=int, default=54)
    ap.add_argument("--offset", type=int, default=0,
                    help="the synthetic sets' tables from this validation seed on: a fresh draw to confirm a choice")
    ap.add_argument("--out", default="docs/results/choice-checkpoint")
    args = ap.parse_args(argv)
    if args.offset and "dev" in args.sets:
        ap.error("--offset draws fresh synthetic tables; the dev suite has none: leave dev out of --sets")
    for path in [args.baseline, *args.candidates]:
        if not Path(path).is_file():
            ap.error(f"no checkpoint at {path}: give the model.pt of a finished run")
    if args.baseline in args.candidates:
        ap.error("the baseline is also a candidate: compare it with other checkpoints")
    unranked = ranker_notes(args.baseline, args.candidates)
    for note in unranked:
        print(f"warning: {note}", file=sys.stderr)
    n_tasks = {"prior": args.prior_tasks, "noisy": args.noisy_tasks, "one-informative": args.one_informative_tasks,
               "coarse": args.coarse_tasks, "skewed": args.skewed_tasks, "low-d": args.low_d_tasks,
               "shapes": args.shapes_tasks}
    df = score([args.baseline, *args.candidates], args.sets, n_tasks, args.offset)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    df.to_csv(args.out + ".csv", index=False)
    table, chosen = report(df, args.baseline, args.candidates)
    given = sys.argv[1:] if argv is None else list(argv)
    sets = "a fresh draw of the synthetic development sets" if args.offset else "development data"
    lines = [f"# Checkpoint choice on {sets} (K inferred, the estimator's defaults)", "", *table, "",
             *[f"Note: {note}" for note in unranked], *([""] if unranked else []),
             PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_checkpoint.py " + " ".join(given) + "`",
             *[f"{label(c)}: {checkpoint_line(c)}" for c in [args.baseline, *args.candidates]], *machine_lines()]
    with open(args.out + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return chosen


if __name__ == "__main__":
    main()
