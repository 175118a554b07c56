"""Where the shipped model stands against the classical peers, family by family, on the development sets.

    PYTHONPATH=. .venv/bin/python benchmarks/peers_dev.py --out docs/results/peers-dev

The test suites say how the shipped model compares with KMeans+, GMM+ and GMM-BIC on tables no decision was made
on; they may not say where to work next. This says it on the development sets, where choosing is allowed: each
table of ``benchmarks/choose_checkpoint.py``'s sets (``prior``, ``noisy``, ``one-informative``, ``coarse``,
``skewed``, ``low-d``, ``mid-d``, ``cat-noise``, ``dev``, ``shapes``) is preprocessed as ``jobs/evaluate.py`` does
(imputed, numeric columns z-normalised, categorical ones one-hot for the peers:
:func:`pipeline.evaluation.suites.preprocess_table`) and clustered by ``TabClustPFN`` at its defaults and by each
peer, K inferred, every method by :func:`pipeline.evaluation.runner.evaluate_pair` on one torch thread.

Per set and peer: median ARI, the paired mean difference TabClustPFN - peer with its 95 % t-interval, the share of
tables TabClustPFN wins (a tie counts half) and each method's mean |K^ - K|. A family where a peer wins is where the
next candidate should come from; the candidate is then chosen by the decision protocol (docs/DESIGN.md), not by
this table. Writes ``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import argparse
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np
import pandas as pd

REFERENCE = "TabClustPFN"
PEERS = ("KMeans+", "GMM+", "GMM-BIC")
SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "coarse": 200, "skewed": 200, "low-d": 200,
         "mid-d": 200, "cat-noise": 200, "dev": 23, "shapes": 54}


def _work(args: tuple) -> list[dict]:
    """(checkpoint, set, n, start, stop, offset, methods) -> a row per table: per method its ARI, K and seconds."""
    import torch

    from benchmarks.choose_checkpoint import tables
    from pipeline.evaluation.methods import select_methods
    from pipeline.evaluation.runner import evaluate_pair
    from pipeline.evaluation.suites import EvalDataset, preprocess_table

    checkpoint, which, n, start, stop, offset, methods = args
    torch.set_num_threads(1)
    specs = select_methods(list(methods))  # run_method loads TabClustPFN's network before its clock starts
    rows = []
    for i, (name, frame, y) in enumerate(tables(which, n, offset)):
        if not start <= i < stop:
            continue
        features, _ = preprocess_table(frame)
        y = np.asarray(y)
        ds = EvalDataset(name, "dev-sets", which, features, y, int(len(np.unique(y))))
        row = {"set": which, "table": name, "K": ds.n_clusters, "rows": features.shape[0],
               "columns": features.shape[1]}
        for spec in specs:
            out = evaluate_pair(spec, ds, checkpoint, seed=0)
            if out["status"] == "ok":
                row.update({spec.name: out["ari"], f"{spec.name}_k": out["k_pred"], f"{spec.name}_s": out["seconds"]})
            else:  # a failed run counts as ARI 0, as in the evaluation's ranks
                row.update({spec.name: 0.0, f"{spec.name}_k": np.nan, f"{spec.name}_s": np.nan,
                            f"{spec.name}_error": out["error"][:200]})
        rows.append(row)
    return rows


def _comparisons(df: pd.DataFrame, peers: list[str]):
    """(set, its rows, peer, (mean, low, high) of TabClustPFN - peer, the differences) per set and peer."""
    from pipeline.evaluation.doc_tables import mean_interval

    for which, part in df.groupby("set", sort=False):
        for peer in peers:
            diff = (part[REFERENCE] - part[peer]).to_numpy(float)
            yield which, part, peer, mean_interval(diff), diff


def report_lines(df: pd.DataFrame, peers: list[str]) -> list[str]:
    """The per-set table: median ARI of each method, and TabClustPFN against each peer."""
    from pipeline.evaluation.doc_tables import win_rate

    error = lambda part, method: (part[f"{method}_k"] - part.K).abs().mean()  # noqa: E731
    lines = ["| set | tables | peer | median ARI TabClustPFN / peer | TabClustPFN - peer, mean [95 % CI] | "
             "TabClustPFN wins | mean abs K error TabClustPFN / peer |", "|---|---|---|---|---|---|---|"]
    for which, part, peer, (mean, low, high), diff in _comparisons(df, peers):
        lines.append(f"| {which} | {len(part)} | {peer} | {part[REFERENCE].median():.3f} / "
                     f"{part[peer].median():.3f} | {mean:+.3f} [{low:+.3f}, {high:+.3f}] | {win_rate(diff):.2f} | "
                     f"{error(part, REFERENCE):.2f} / {error(part, peer):.2f} |")
    return lines


def behind(df: pd.DataFrame, peers: list[str]) -> list[str]:
    """The (set, peer) pairs where TabClustPFN's mean difference has a 95 % interval wholly below 0."""
    return [f"{which} ({peer}, {mean:+.3f})"
            for which, _, peer, (mean, _, high), _ in _comparisons(df, peers) if high < 0]


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import estimator_variant_rows, write_results
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS), help="default: all of them")
    args, df = estimator_variant_rows(_work, __doc__, "docs/results/peers-dev", argv, sizes=SIZES, parents=(own,),
                                      passed=lambda a: ((REFERENCE, *a.peers),))
    methods = (REFERENCE, *args.peers)
    failed = {m: int(df[f"{m}_error"].notna().sum()) for m in methods if f"{m}_error" in df}
    times = ", ".join(f"{m} {df[f'{m}_s'].median():.3f}" for m in methods)
    given = sys.argv[1:] if argv is None else list(argv)
    where = behind(df, list(args.peers))
    lines = ["# TabClustPFN against the classical peers on the development sets (K inferred, defaults)", "",
             *report_lines(df, list(args.peers)), "",
             f"Median seconds per table (one torch thread, {args.workers} process(es) at once): {times}.", "",
             f"Failed runs (counted as ARI 0): {', '.join(f'{m} {n}' for m, n in failed.items()) or 'none'}.", "",
             "Behind a peer (95 % interval of the mean difference wholly below 0): "
             f"{'; '.join(where) or 'nowhere'}.", "",
             PROVENANCE_PREFIXES["command"] + "`python benchmarks/peers_dev.py " + " ".join(given) + "`",
             checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df, lines)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
