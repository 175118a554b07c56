r"""Where a default fit's time goes, stage by stage, beside the KMeans + silhouette sweep measured in the same run.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_stages.py --out docs/results/bench-stages

Every table of the chosen suites (default: the development suite ``dev``; as ``jobs/evaluate.py`` loads them) is
clustered by ``TabClustPFN(random_state=0)`` with every default on, and by the evaluation's ``KMeans+`` (scikit-learn
k-means for K = 2..10, the partition of best silhouette, on the baselines' matrix), alternating, ``--repeats`` times
each; a table's figures come from its fastest repeat of each, after one warm-up fit that loads the network. Both run
in this one process at one thread (``OMP_NUM_THREADS=1``, as the evaluation's Ray tasks of one CPU each).

The fit is split by timers around the estimator's own stage functions (:func:`stage_timers`):

- ``preprocess``: column typing, imputation, z-scores, the Yeo-Johnson fits, the noise screening
  (``TablePreprocessor.fit_transform``);
- ``encoder``: the network's encoder over the context in every column ordering (``TabClustNet.encode_context``);
- ``decoder``: the rest of the network's pass: the partitions for K = 2..K_max and CIN's posterior;
- ``k_choice``: the K ranker's features and choice, or the posterior's rule (``select_k``, ``ranker_features``,
  ``KRanker.choose``) and the ensemble's matching (``combine_members``);
- ``refine``: the Lloyd steps of every candidate, the chosen candidate's Gaussian mixture, the final assignment
  (``refine_candidates``, ``mixture_refinement``, ``TabClustPFN._refined_proba``);
- ``bic_path``: on tables of <= 4 design columns, K by BIC from k-means++ starts, no network (``kmeans_starts``,
  ``model.low_dim.choose``);
- ``other``: the rest (input checks, bookkeeping).

Printed: per stage the median over tables of its time and of its share of the fit, the median fit time against the
sweep's, and the median per-table ratio fit / sweep, and the same ratio with the network's stages taken out (what
the fit would cost if the network were free). Writes ``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections import defaultdict
from typing import Iterator

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

SUITES = ("dev", "real", "openml", "synthetic")
STAGES = ("preprocess", "encoder", "decoder", "k_choice", "refine", "bic_path", "other")
NETWORK = ("encoder", "decoder")


@contextlib.contextmanager
def stage_timers() -> Iterator[dict[str, float]]:
    """Wrap the estimator's stage functions in timers while the block runs; yields the seconds per stage (all but
    ``other``), accumulated over every fit in the block. The wrapped functions are put back on exit."""
    import model.estimator as estimator
    import model.network as network
    from model.k_ranker import KRanker
    from model.preprocessing import TablePreprocessor

    seconds: dict[str, float] = defaultdict(float)
    # (owner, attribute, stage); the network's pass counts as "decoder" less the encoder's time inside it
    targets = [(TablePreprocessor, "fit_transform", "preprocess"), (network.ContextInference, "_infer", "decoder"),
               (network.TabClustNet, "encode_context", "encoder"), (estimator, "select_k", "k_choice"),
               (estimator, "ranker_features", "k_choice"), (KRanker, "choose", "k_choice"),
               (estimator, "combine_members", "k_choice"), (estimator, "refine_candidates", "refine"),
               (estimator, "mixture_refinement", "refine"), (estimator.TabClustPFN, "_refined_proba", "refine"),
               (estimator, "kmeans_starts", "bic_path"), (estimator, "choose_low_dim", "bic_path")]
    originals = [(owner, name, owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name))
                 for owner, name, _ in targets]

    def timed(fn, stage: str):
        def wrapper(*args, **kwargs):
            start, inner = time.perf_counter(), seconds["encoder"]
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - start
                seconds[stage] += spent - (seconds["encoder"] - inner if stage == "decoder" else 0.0)
        return wrapper

    try:
        for (owner, name, stage), (_, _, fn) in zip(targets, originals):
            setattr(owner, name, timed(fn, stage))
        yield seconds
    finally:
        for owner, name, fn in originals:
            setattr(owner, name, fn)


def profile_fit(est, frame) -> dict[str, float]:
    """One ``est.fit(frame)``: its total seconds (``total``) and each stage's (``STAGES``)."""
    with stage_timers() as seconds:
        start = time.perf_counter()
        est.fit(frame)
        total = time.perf_counter() - start
    out = {stage: seconds.get(stage, 0.0) for stage in STAGES if stage != "other"}
    out["other"] = max(total - sum(out.values()), 0.0)
    return {"total": total, **out}


def measure(suites: tuple[str, ...], repeats: int, checkpoint: str | None = None) -> pd.DataFrame:
    from benchmarks.suite_timing import suite_tables, sweep_seconds
    from model.estimator import TabClustPFN

    est = TabClustPFN(checkpoint=checkpoint, random_state=0)
    rows = []
    for suite, d in suite_tables(est, suites):
        X = d.baseline_matrix()
        fits, sweeps = [], []
        for _ in range(repeats):
            fits.append(profile_fit(est, d.features))
            sweeps.append(sweep_seconds(X))
        best = min(fits, key=lambda f: f["total"])
        rows.append({"suite": suite, "table": d.name, "rows": d.features.shape[0],
                     "columns": d.features.shape[1], "k": est.n_clusters_, **best, "kmeans_sweep": min(sweeps)})
    return pd.DataFrame(rows)


def report(df: pd.DataFrame, command: str, checkpoint: str | None = None) -> list[str]:
    from model.estimator import default_checkpoint_path
    from pipeline.evaluation.report import checkpoint_line, machine_lines

    lines = ["# Where a default fit's time goes, beside the KMeans + silhouette sweep (one thread, same run)", ""]
    for suite, g in df.groupby("suite", sort=False):
        share = g[list(STAGES)].div(g["total"], axis=0)
        lines += [f"## `{suite}` ({len(g)} tables; the BIC path, no network, on {int((g['bic_path'] > 0).sum())})",
                  "", "| stage | median s | median share of the fit [quartiles] |", "|---|---|---|"]
        for stage in STAGES:
            q1, q2, q3 = np.percentile(share[stage], [25, 50, 75])
            lines.append(f"| {stage} | {g[stage].median():.4f} | {q2:.2f} [{q1:.2f}, {q3:.2f}] |")
        ratio = g["total"] / g["kmeans_sweep"]
        free = (g["total"] - g[list(NETWORK)].sum(axis=1)) / g["kmeans_sweep"]
        r1, r2, r3 = np.percentile(ratio, [25, 50, 75])
        f1, f2, f3 = np.percentile(free, [25, 50, 75])
        lines += ["", f"Median fit {g['total'].median():.4f} s against the sweep's {g['kmeans_sweep'].median():.4f} s; "
                  f"per table fit / sweep {r2:.2f} [{r1:.2f}, {r3:.2f}] (median [quartiles]), "
                  f"{int((ratio <= 1).sum())} of {len(g)} tables at or below 1; without the network's stages "
                  f"{f2:.2f} [{f1:.2f}, {f3:.2f}], {int((free <= 1).sum())} of {len(g)} at or below 1.", ""]
    path = checkpoint if checkpoint is not None else str(default_checkpoint_path())
    return [*lines, f"Command: `{command}`", checkpoint_line(path), *machine_lines()]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", nargs="+", default=["dev"], choices=SUITES)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--checkpoint", default=None, help="model checkpoint (default: the shipped weights)")
    ap.add_argument("--out", default=None, help="write OUT.md and OUT.csv (default: print only)")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {args.repeats}")
    from benchmarks.choose_k_rule import write_results

    df = measure(tuple(args.suite), args.repeats, args.checkpoint)
    given = sys.argv[1:] if argv is None else list(argv)
    lines = report(df, "python benchmarks/bench_stages.py " + " ".join(given), args.checkpoint)
    write_results(args.out, df, lines)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
