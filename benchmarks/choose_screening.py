"""Whether the estimator drops pure-noise columns before clustering (``TabClustPFN(screen_noise=True)``), chosen on
development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_screening.py --out docs/results/choice-screening

Each table of the development sets of ``benchmarks/choose_mixture_refinement.py`` (``prior``: 400 held-out tasks of
the paper's prior, ``noisy``: 200 with noise columns and contaminated rows, ``one-informative``: 200 with one
informative column among noise columns, ``low-d``: 200 with 2 or 3 columns, ``dev``: the 23 tables of
``../shared/benchmarks/dev``) is clustered by ``TabClustPFN(random_state=0)`` with every other setting at its
default, K inferred:

- ``keep``: every column (``screen_noise=False``, the baseline);
- ``screen``: the continuous columns that show neither a second mode nor a dependence on the other columns, in a
  table where some column shows one, dropped (:func:`model.screening.noise_columns`); then each dropped column
  that differs between the clusters found without it (:func:`model.screening.associated_columns`, each column
  at level 0.05) put back and the table clustered again (``screen_noise=True``);
- ``screen-no-readmit``: the screening alone;
- ``screen-readmit-strict``: the screening, then the put-back test at level 0.01 over all the dropped columns
  (Bonferroni);
- ``screen-pairwise``: the screening with dependence tested pair by pair only (no joint test against the other
  columns' principal components), nothing put back;
- ``screen-modes``: ``screen`` only in a table where some continuous column has a second mode (the screening's
  ``trigger="modes"``), every column kept elsewhere: its answer is ``screen``'s or ``keep``'s.

Measured in this order (2026-11-29): ``screen-pairwise`` lost on ``prior`` (-0.016), by dropping columns in which
the prior's clusters differ a little; the joint test (``screen-no-readmit``) halved that; the strict put-back test
changed little, and the per-column level of ``screen`` came after it, on this evidence. Each step looked at the
same development sets. ``screen-modes`` came last (2026-11-29), after seeing that ``screen`` lost on the prior
where the clusters differ a little in every column; so whatever this file chooses is confirmed on a fresh draw of
the synthetic sets that no step has seen (``--offset 1000 --set prior noisy one-informative low-d``: validation
seeds from the 1000th on) before it may become a default. ``screen-modes`` qualified and was confirmed there
(docs/results/choice-screening-modes-fresh.md); it is the estimator's ``screen_noise="auto"``.

Where a variant drops nothing, its answer is ``keep``'s table for table (the estimator is deterministic given
``random_state``), so it is fitted only where it drops a column. Per set each variant against
``keep`` table by table: paired mean ARI difference +- standard error, tables better / worse, mean |K^ - K|, and
how many tables lost columns. The protocol (docs/DESIGN.md): a variant qualifies when it gains beyond two standard
errors on a set and loses beyond one on none. Writes ``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "low-d": 200, "dev": 23}
BASELINE = "keep"
VARIANTS = ("keep", "screen", "screen-no-readmit", "screen-readmit-strict", "screen-pairwise", "screen-modes")


def _fit_columns(checkpoint: str, frame, pre, noise: np.ndarray) -> np.ndarray:
    """Labels of the estimator (every column it is given kept) on ``frame`` without the columns ``noise`` flags
    among ``pre``'s fitted ones."""
    from model.estimator import TabClustPFN

    keep = [c.index for c, drop in zip(pre.columns_, noise) if not drop]
    return TabClustPFN(checkpoint=checkpoint, random_state=0, screen_noise=False).fit(frame.iloc[:, keep]).labels_


def _work(args: tuple[str, str, int, int, int, int, tuple[str, ...]]) -> list[dict]:
    checkpoint, which, n, start, stop, offset, variants = args
    import warnings

    import torch
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.choose_checkpoint import tables
    from model.estimator import TabClustPFN
    from model.preprocessing import TablePreprocessor
    from model.screening import associated_columns, noise_columns

    torch.set_num_threads(1)
    rows, answers = [], {}
    for i, (name, frame, y) in enumerate(tables(which, n, offset)):
        if not start <= i < stop:
            continue
        row = {"set": which, "table": name, "K": int(len(np.unique(y))), "columns": frame.shape[1]}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pre = TablePreprocessor(max_features=max(64, frame.shape[1])).fit(frame)  # the columns, never PCA's
            Z, cat = pre.transform(frame)
            dropped = {"screen-no-readmit": noise_columns(Z, cat),
                       "screen-pairwise": noise_columns(Z, cat, joint=False) if "screen-pairwise" in variants else
                       np.zeros(Z.shape[1], bool)}
            row["modes"] = bool(noise_columns(Z, cat, trigger="modes").any())  # screen-modes screens this table
            for v in variants:
                t0 = time.perf_counter()
                noise = dropped.get(v, dropped["screen-no-readmit"])
                row[v + "_dropped"] = int(noise.sum())
                if v == "screen-modes":  # screen's answer where the trigger fires, keep's elsewhere (screen first)
                    source = "screen" if row["modes"] else "keep"
                    row[v], row[v + "_k"], row[v + "_s"] = row[source], row[source + "_k"], row[source + "_s"]
                    row[v + "_dropped"] = row[source + "_dropped"] if row["modes"] else 0
                    continue
                if v != "keep" and not noise.any():  # the same table as keep's: the same answer
                    row[v], row[v + "_k"], row[v + "_s"] = row["keep"], row["keep_k"], row["keep_s"]
                    continue
                if v in ("keep", "screen"):
                    est = TabClustPFN(checkpoint=checkpoint, random_state=0, screen_noise=v == "screen").fit(frame)
                    if v == "screen":
                        row[v + "_dropped"] = len(est.preprocessor_.screened_)
                    labels = est.labels_
                elif v == "screen-readmit-strict":
                    back = associated_columns(Z[:, noise], answers["screen-no-readmit"], alpha=0.01, bonferroni=True)
                    noise = noise.copy()
                    noise[np.flatnonzero(noise)[back]] = False
                    row[v + "_dropped"] = int(noise.sum())
                    labels = (answers["screen-no-readmit"] if not back.any() else
                              _fit_columns(checkpoint, frame, pre, noise))
                else:
                    labels = _fit_columns(checkpoint, frame, pre, noise)
                answers[v] = labels
                row[v + "_s"] = time.perf_counter() - t0
                row[v] = float(adjusted_rand_score(y, labels))
                row[v + "_k"] = int(len(np.unique(labels)))
        rows.append(row)
    return rows


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import rows_per_set, table, verdict, write_variant_report
    from model.estimator import default_checkpoint_path

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()))
    ap.add_argument("--set", nargs="+", default=list(SIZES), choices=list(SIZES), help="default: all five")
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tables per set (default: all)")
    ap.add_argument("--workers", type=int, default=2, help="processes (1: in this one)")
    ap.add_argument("--offset", type=int, default=0,
                    help="the synthetic sets' tables from this validation seed on: a fresh draw to confirm a choice")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS),
                    help="default: all (keep and screen are always measured: the others read their answers)")
    ap.add_argument("--out", default="docs/results/choice-screening")
    args = ap.parse_args(argv)
    wanted = {BASELINE, "screen", *args.variants}
    if "screen-readmit-strict" in wanted:  # puts columns back into screen-no-readmit's answer
        wanted.add("screen-no-readmit")
    variants = [v for v in VARIANTS if v in wanted]
    if args.offset and "dev" in args.set:
        ap.error("--offset draws fresh synthetic tables; the dev suite has none: leave dev out of --set")
    df = pd.DataFrame(rows_per_set(_work, args.checkpoint, args.set, SIZES, args.tasks, args.workers,
                                   extra=(args.offset, tuple(variants))))
    lines, diffs = table(df, variants, BASELINE)
    chosen, verdicts = verdict(diffs, BASELINE)
    screened = "; ".join(
        f"`{v}`: " + ", ".join(f"{s} {int((g[v + '_dropped'] > 0).sum())} of {len(g)} (mean "
                               f"{g[v + '_dropped'].mean():.2f} of {g['columns'].mean():.1f} columns)"
                               for s, g in df.groupby("set", sort=False)) for v in variants[1:])
    fitted = df["screen_dropped"] > 0
    times = (f"median fit time where `screen` dropped columns (s): `keep` {df.loc[fitted, 'keep_s'].median():.3f}, "
             f"`screen` {df.loc[fitted, 'screen_s'].median():.3f}" if fitted.any() else "no table lost a column")
    given = sys.argv[1:] if argv is None else list(argv)
    notes = [f"Tables that lost columns to the screening: {screened}.", f"{times[0].upper() + times[1:]}."]
    write_variant_report(args, df, "Dropping pure-noise columns before clustering ({sets}, K inferred)", lines, notes,
                         verdicts, chosen, BASELINE, "choose_screening.py", given)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
