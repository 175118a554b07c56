"""Whether the estimator spreads few-level numeric columns over their cells (``TabClustPFN(dequantize=True)``),
chosen on development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_dequantize.py --out docs/results/choice-dequantize
    PYTHONPATH=. .venv/bin/python benchmarks/choose_dequantize.py --offset 1000 \\
        --set prior noisy one-informative coarse low-d --out docs/results/choice-dequantize-fresh

Each table of the development sets of ``benchmarks/choose_checkpoint.py`` (``prior``, ``noisy``,
``one-informative``, ``coarse``, ``low-d``, ``dev``, ``shapes``) is clustered by ``TabClustPFN(random_state=0)``
with every other setting at its default, K inferred: ``keep`` (``dequantize=False``, the baseline) and ``spread``
(``dequantize=True``: every numeric column of 2-20 distinct values spread uniformly over its levels' cells,
:mod:`model.dequantize`). Where no column has so few levels the two answers are the same table for table (the
spreading changes nothing), so ``spread`` is fitted only where it spreads a column.

``spread`` was proposed 2026-11-29 after a probe on these same sets (and after three K-ranker candidates lost on
them), so what this file chooses must hold on a fresh draw of the synthetic sets that no step has seen (the second
command: validation seeds from the 1000th on) before it may become a default. Per set, ``spread`` against ``keep``
table by table: paired mean ARI difference +- standard error, tables better / worse, mean |K^ - K|, and how many
tables had a column spread. The protocol (docs/DESIGN.md): a variant qualifies when it gains beyond two standard
errors on a set and loses beyond one on none. Writes ``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

BASELINE = "keep"
VARIANTS = ("keep", "spread")


def _work(args: tuple[str, str, int, int, int, int]) -> list[dict]:
    checkpoint, which, n, start, stop, offset = args
    import torch
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.choose_checkpoint import tables
    from model.dequantize import dequantize
    from model.estimator import TabClustPFN

    torch.set_num_threads(1)
    rows = []
    for i, (name, frame, y) in enumerate(tables(which, n, offset)):
        if not start <= i < stop:
            continue
        row = {"set": which, "table": name, "K": int(len(np.unique(y))), "columns": frame.shape[1]}
        spread = len(dequantize(frame)[1])
        for variant in VARIANTS:
            if variant == "spread" and not spread:  # nothing to spread: keep's answer
                row.update(spread=row["keep"], spread_k=row["keep_k"], spread_s=row["keep_s"])
                continue
            started = time.perf_counter()
            est = TabClustPFN(checkpoint=checkpoint, random_state=0, dequantize=variant == "spread").fit(frame)
            row.update({variant: adjusted_rand_score(y, est.labels_), f"{variant}_k": est.n_clusters_,
                        f"{variant}_s": time.perf_counter() - started})
        row["spread_columns"] = spread
        rows.append(row)
    return rows


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import estimator_variant_rows, table, verdict, write_variant_report

    args, df = estimator_variant_rows(_work, __doc__, "docs/results/choice-dequantize", argv)
    lines, diffs = table(df, list(VARIANTS), BASELINE)
    chosen, verdicts = verdict(diffs, BASELINE)
    spread = ", ".join(f"{s} {int((g['spread_columns'] > 0).sum())} of {len(g)} (mean {g['spread_columns'].mean():.2f}"
                       f" of {g['columns'].mean():.1f} columns)" for s, g in df.groupby("set", sort=False))
    fitted = df["spread_columns"] > 0
    times = (f"Median fit time where a column was spread (s): `keep` {df.loc[fitted, 'keep_s'].median():.3f}, "
             f"`spread` {df.loc[fitted, 'spread_s'].median():.3f}" if fitted.any() else "No column was spread")
    given = sys.argv[1:] if argv is None else list(argv)
    write_variant_report(args, df, "Spreading few-level columns over their cells before clustering ({sets}, K "
                         "inferred)", lines, [f"Tables with a column spread: {spread}.", f"{times}."],
                         verdicts, chosen, BASELINE, "choose_dequantize.py", given)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
