"""Where the shipped model stands against the classical peers, family by family, on the development sets.

    PYTHONPATH=. .venv/bin/python benchmarks/peers_dev.py --out docs/results/peers-dev

The test suites say how the shipped model compares with KMeans+, GMM+ and GMM-BIC on tables no decision was made
on; they may not say where to work next. This says it on the development sets, where choosing is allowed: each
table of ``benchmarks/choose_checkpoint.py``'s sets (``prior``, ``noisy``, ``one-informative``, ``coarse``,
``skewed``, ``low-d``, ``mid-d``, ``cat-noise``, ``dev``, ``shapes``) is preprocessed as ``jobs/evaluate.py`` does
(imputed, numeric columns z-normalised, categorical ones one-hot for the peers:
:func:`pipeline.evaluation.suites.preprocess_table`) and clustered by ``TabClustPFN`` at its defaults and by each
peer, K inferred, every method by :func:`pipeline.evaluation.methods.run_method` on one torch thread.

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
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.choose_checkpoint import tables
    from pipeline.evaluation.methods import run_method, select_methods
    from pipeline.evaluation.suites import EvalDataset, preprocess_table

    checkpoint, which, n, start, stop, offset, methods = args
    torch.set_num_threads(1)
    specs = select_methods(list(methods))
    warm = EvalDataset("warm-up", "dev-sets", which, pd.DataFrame(np.random.default_rng(0).normal(size=(32, 2)),
                                                                 columns=["a", "b"]), np.r_[[0] * 16, [1] * 16], 2)
    run_method(select_methods([REFERENCE])[0], warm, checkpoint=checkpoint)  # the network loaded before any clock
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
            try:
                out = run_method(spec, ds, checkpoint=checkpoint)
                row.update({spec.name: adjusted_rand_score(y, out["labels"]), f"{spec.name}_k": out["k_pred"],
                            f"{spec.name}_s": out["seconds"]})
            except (ValueError, np.linalg.LinAlgError) as exc:  # a failed run counts as ARI 0, as the evaluation's
                row.update({spec.name: 0.0, f"{spec.name}_k": np.nan, f"{spec.name}_s": np.nan,
                            f"{spec.name}_error": str(exc)[:200]})
        rows.append(row)
    return rows


def report_lines(df: pd.DataFrame, peers: list[str]) -> list[str]:
    """The per-set table: median ARI of each method, and TabClustPFN against each peer."""
    from pipeline.evaluation.doc_tables import mean_interval, win_rate

    lines = ["| set | tables | peer | median ARI TabClustPFN / peer | TabClustPFN - peer, mean [95 % CI] | "
             "TabClustPFN wins | mean abs K error TabClustPFN / peer |", "|---|---|---|---|---|---|---|"]
    for which, part in df.groupby("set", sort=False):
        ours_k = (part[f"{REFERENCE}_k"] - part.K).abs().mean()
        for peer in peers:
            diff = (part[REFERENCE] - part[peer]).to_numpy(float)
            mean, low, high = mean_interval(diff)
            lines.append(f"| {which} | {len(part)} | {peer} | {part[REFERENCE].median():.3f} / "
                         f"{part[peer].median():.3f} | {mean:+.3f} [{low:+.3f}, {high:+.3f}] | {win_rate(diff):.2f} | "
                         f"{ours_k:.2f} / {(part[f'{peer}_k'] - part.K).abs().mean():.2f} |")
    return lines


def behind(df: pd.DataFrame, peers: list[str]) -> list[str]:
    """The (set, peer) pairs where TabClustPFN's mean difference has a 95 % interval wholly below 0."""
    from pipeline.evaluation.doc_tables import mean_interval

    out = []
    for which, part in df.groupby("set", sort=False):
        for peer in peers:
            mean, low, high = mean_interval((part[REFERENCE] - part[peer]).to_numpy(float))
            if high < 0:
                out.append(f"{which} ({peer}, {mean:+.3f})")
    return out


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import rows_per_set, write_results
    from model.estimator import default_checkpoint_path
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()))
    ap.add_argument("--set", nargs="+", default=list(SIZES), choices=list(SIZES), help="default: all of them")
    ap.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS), help="default: all of them")
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tables per set (default: all)")
    ap.add_argument("--workers", type=int, default=2, help="processes (1: in this one)")
    ap.add_argument("--offset", type=int, default=0, help="the synthetic sets' tables from this validation seed on")
    ap.add_argument("--out", default="docs/results/peers-dev")
    args = ap.parse_args(argv)
    if args.offset and "dev" in args.set:
        ap.error("--offset draws fresh synthetic tables; the dev suite has none: leave dev out of --set")
    methods = (REFERENCE, *args.peers)
    rows = rows_per_set(_work, args.checkpoint, args.set, SIZES, args.tasks, args.workers,
                        extra=(args.offset, methods))
    df = pd.DataFrame(rows)
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
