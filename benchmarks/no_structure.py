"""What K each method answers on tables with no cluster structure: one cloud, a box, independent levels.

    PYTHONPATH=. .venv/bin/python benchmarks/no_structure.py --out docs/results/no-structure
    PYTHONPATH=. .venv/bin/python benchmarks/no_structure.py --checkpoint runs/g7/model.pt     # a candidate's answers

Development data, generated here (no suite is read): per kind, one table for every (N, D) of ``SIZES``, z-normalised
as the evaluation does for every method. The kinds:

* ``round``: one isotropic Gaussian (independent columns, equal spread);
* ``elongated``: one Gaussian with variances exp(-4 i / D), randomly rotated;
* ``heavy``: one isotropic Student-t cloud (3 degrees of freedom);
* ``skewed``: independent log-normal columns;
* ``box``: independent uniform columns;
* ``levels``: independent columns of integer levels 1..5, uniform;
* ``one-mode``: :func:`priors.onemode.sample_one_mode`, the development set of one-mode tables
  (``benchmarks/choose_structure.py``), at each size.

Every table holds one cluster, so there is no ARI to score: the report is the K each method answers. Methods:
``TabClustPFN()`` (the defaults), ``TabClustPFN(allow_single_cluster=True)`` (its one-cluster answer), and the
evaluation's ``KMeans+`` (silhouette over K = 2..10) and ``GMM-BIC``. Printed and written per kind: the median K, the
share of tables answered K >= 8 and K = 10 (the top of every method's range), and the share answered one cluster;
then, table by table, how often TabClustPFN answered more clusters than each other method and how often fewer (sign
test).
Writes ``OUT.md`` and ``OUT.csv`` (one row per table and method).
"""

from __future__ import annotations

import argparse
import sys
import warnings

import numpy as np
import pandas as pd

SIZES = tuple((n, d) for n in (200, 500, 1000) for d in (3, 6, 12, 24))
KINDS = ("round", "elongated", "heavy", "skewed", "box", "levels", "one-mode")
METHODS = ("TabClustPFN", "TabClustPFN (allow_single_cluster)", "KMeans+", "GMM-BIC")
#: Seeds the tables: the i-th of KINDS at the j-th of SIZES draws from [SEED, i, j], whatever --kinds runs.
SEED = 20261207


def table(kind: str, n: int, d: int, seed: tuple[int, ...]) -> np.ndarray:
    """One (n, d) table of ``kind`` (module docstring), columns z-normalised; deterministic in ``seed``."""
    rng = np.random.default_rng(list(seed))
    if kind == "round":
        X = rng.standard_normal((n, d))
    elif kind == "elongated":
        rotation, _ = np.linalg.qr(rng.standard_normal((d, d)))
        X = (rng.standard_normal((n, d)) * np.exp(-2.0 * np.arange(d) / d)) @ rotation.T
    elif kind == "heavy":
        X = rng.standard_normal((n, d)) * np.sqrt(3.0 / rng.chisquare(3.0, size=(n, 1)))
    elif kind == "skewed":
        X = rng.lognormal(size=(n, d))
    elif kind == "box":
        X = rng.uniform(size=(n, d))
    elif kind == "levels":
        X = rng.integers(1, 6, size=(n, d)).astype(float)
    elif kind == "one-mode":
        from priors.onemode import sample_one_mode

        X = sample_one_mode(int(np.random.SeedSequence(list(seed)).generate_state(1)[0]), n_rows=(n, n),
                            n_features=(d, d)).X
    else:
        raise ValueError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
    X = np.asarray(X, dtype=np.float64)
    sd = X.std(0)
    return (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)


def measure(kinds: tuple[str, ...] = KINDS, sizes: tuple[tuple[int, int], ...] = SIZES,
            checkpoint: str | None = None) -> pd.DataFrame:
    """One row per (table, method): kind, N, D, method, the K answered and what chose it (TabClustPFN's
    ``k_selection_``); TabClustPFN with ``checkpoint`` (None: the shipped one)."""
    from model.estimator import TabClustPFN
    from pipeline.evaluation.methods import bic_select, silhouette_select

    default = TabClustPFN(checkpoint=checkpoint, random_state=0)
    single = TabClustPFN(checkpoint=checkpoint, random_state=0, allow_single_cluster=True)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind in kinds:
            for j, (n, d) in enumerate(sizes):
                X = table(kind, n, d, (SEED, KINDS.index(kind), j))
                base = {"kind": kind, "N": n, "D": d}
                for name, est in (("TabClustPFN", default), ("TabClustPFN (allow_single_cluster)", single)):
                    est.fit(X)
                    rows.append({**base, "method": name, "k": int(est.n_clusters_), "rule": est.k_selection_})
                rows.append({**base, "method": "KMeans+", "k": silhouette_select("KMeans", X, 0)[1], "rule": ""})
                rows.append({**base, "method": "GMM-BIC", "k": bic_select(X, 0)[1], "rule": ""})
                print(kind, n, d, {r["method"]: r["k"] for r in rows[-4:]}, file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per kind and method, then per method over every kind (``kind`` "all"): tables, median K, and the shares
    answered K = 1, K >= 8 and K = 10."""
    both = pd.concat([frame, frame.assign(kind="all")], ignore_index=True)
    groups = both.groupby(["kind", "method"], sort=False)["k"]
    return pd.DataFrame({"tables": groups.size(), "median K": groups.median(),
                         "K = 1": groups.apply(lambda k: float((k == 1).mean())),
                         "K >= 8": groups.apply(lambda k: float((k >= 8).mean())),
                         "K = 10": groups.apply(lambda k: float((k == 10).mean()))}).reset_index()


def paired(frame: pd.DataFrame, reference: str = "TabClustPFN") -> pd.DataFrame:
    """Table by table, how often ``reference`` answered more clusters than each other method and how often fewer,
    with the two-sided sign test's p over the tables where they differ."""
    from scipy.stats import binomtest

    wide = frame.pivot_table(index=["kind", "N", "D"], columns="method", values="k")
    rows = []
    for peer in (m for m in wide.columns if m != reference):
        more, fewer = int((wide[reference] > wide[peer]).sum()), int((wide[reference] < wide[peer]).sum())
        p = binomtest(more, more + fewer).pvalue if more + fewer else 1.0
        rows.append({"against": peer, "tables": len(wide), f"{reference} more K": more, "fewer K": fewer,
                     "sign test p": p})
    return pd.DataFrame(rows)


def report(frame: pd.DataFrame, command: str, checkpoint: str | None = None) -> str:
    from pipeline.evaluation.report import markdown_table, provenance_lines

    table_md = markdown_table(summary(frame).round(2), digits=3)
    return "\n".join([
        "# K answered on tables with no cluster structure (development data, generated)", "",
        f"{frame[['kind', 'N', 'D']].drop_duplicates().shape[0]} tables, each one cluster: per kind one table at "
        f"every N in {sorted({n for n, _ in SIZES})} and D in {sorted({d for _, d in SIZES})}, z-normalised. "
        "Shares are of the kind's tables; K = 10 is the top of every method's range.", "",
        table_md, "",
        "Table by table (the same tables), the K TabClustPFN answered against each other method's:", "",
        markdown_table(paired(frame), digits=3), "",
        f"Command: `{command}`", *provenance_lines(checkpoint), ""])


def main(argv: list[str] | None = None) -> None:
    from benchmarks.choose_k_rule import write_results

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    p.add_argument("--checkpoint", help="TabClustPFN's checkpoint, e.g. a candidate to judge (default: the shipped)")
    p.add_argument("--out", help="write OUT.md and OUT.csv (default: print only)")
    args = p.parse_args(argv)
    frame = measure(tuple(args.kinds), checkpoint=args.checkpoint)
    command = " ".join(["python benchmarks/no_structure.py",
                        *([] if args.kinds == list(KINDS) else ["--kinds", *args.kinds]),
                        *([] if args.checkpoint is None else ["--checkpoint", args.checkpoint]),
                        *([] if args.out is None else ["--out", args.out])])
    write_results(args.out, frame, report(frame, command, args.checkpoint).splitlines())


if __name__ == "__main__":
    main()
