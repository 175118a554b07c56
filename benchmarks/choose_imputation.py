"""How the estimator fills missing numeric cells (``TabClustPFN(impute=)``), chosen on development data by the
decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_imputation.py --offset 9000 \\
        --set prior noisy one-informative coarse skewed low-d shapes --out docs/results/choice-imputation-fresh
    PYTHONPATH=. .venv/bin/python benchmarks/choose_imputation.py --set dev --out docs/results/choice-imputation-dev

Every table of the development sets of ``benchmarks/choose_checkpoint.py`` gets missing cells
(:func:`missing_cells`: a rate r drawn uniformly from 0.05-0.3 per table, each column missing at r times a draw
from 0-2, at most 0.6, completely at random; categorical columns too) and is clustered by
``TabClustPFN(random_state=0)`` with every other setting at its default, K inferred: ``median`` (the baseline: a
missing numeric cell takes its column's median) and ``neighbors`` (the mean over the 5 nearest rows that hold the
cell, :mod:`model.preprocessing`). Without a missing numeric cell the two give the same answer (a test holds
them to it), so the sets are scored only with their cells removed.

``neighbors`` was proposed 2026-12-05 after a probe on 60 ``prior`` and 60 ``noisy`` tables drawn from validation
seed 5000 on, with cells missing completely at random; the first command's tables (seeds from 9000 on) and the
dev suite were seen by no step before it. Per set, ``neighbors`` against ``median`` table by table: paired mean
ARI difference +- standard error, tables better / worse, mean |K^ - K|. The protocol (docs/DESIGN.md): a variant
qualifies when it gains beyond two standard errors on a set and loses beyond one on none. Writes ``OUT.md`` and
``OUT.csv`` (one row per table, with its share of missing cells).
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

BASELINE = "median"
VARIANTS = ("median", "neighbors")
RATE = (0.05, 0.3)  # the table's missing rate is drawn from this range
COLUMN_SPREAD = 2.0  # each column's rate is the table's times a draw from 0..COLUMN_SPREAD
MAX_COLUMN_RATE = 0.6


def missing_cells(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``frame`` with cells removed completely at random: a rate r ~ U(RATE) for the table, each column at
    min(r * U(0, COLUMN_SPREAD), MAX_COLUMN_RATE); the same ``seed`` removes the same cells."""
    rng = np.random.default_rng([seed, 9173])
    rate = rng.uniform(*RATE)
    out = frame.copy()
    for name in out.columns:
        gone = rng.random(len(out)) < min(rate * rng.uniform(0.0, COLUMN_SPREAD), MAX_COLUMN_RATE)
        out[name] = out[name].mask(gone)
    return out


def _work(args: tuple[str, str, int, int, int, int]) -> list[dict]:
    checkpoint, which, n, start, stop, offset = args
    from benchmarks.choose_k_rule import fit_each
    from model.estimator import TabClustPFN

    def make(variant: str, path: str) -> TabClustPFN:
        return TabClustPFN(checkpoint=path, random_state=0, impute=variant)

    return fit_each(make, VARIANTS, checkpoint, which, n, start, stop, offset, alter=missing_cells)


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import estimator_variant_rows, table, verdict, write_results
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    args, df = estimator_variant_rows(_work, __doc__, "docs/results/choice-imputation", argv)
    lines, diffs = table(df, list(VARIANTS), BASELINE)
    chosen, verdicts = verdict(diffs, BASELINE)
    shares = ", ".join(f"{s} {g['missing_share'].mean():.3f}" for s, g in df.groupby("set", sort=False))
    times = ", ".join(f"`{v}` {df[v + '_s'].median():.3f}" for v in VARIANTS)
    given = sys.argv[1:] if argv is None else list(argv)
    sets = "a fresh draw of the synthetic development sets" if args.offset else "development sets"
    out = [f"# Filling missing numeric cells before clustering ({sets} with cells removed, K inferred)", "",
           *[line.replace("| rule |", "| variant |") for line in lines], "",
           f"Mean share of missing cells per table: {shares}.", "",
           f"Median fit time per table (s): {times}.", "",
           "Protocol: a variant qualifies when it gains beyond two standard errors on a set and loses beyond one on "
           "none.", "",
           *[v.replace("rule", "variant") for v in verdicts], "",
           f"Chosen: {'`' + chosen + '`' if chosen else f'none (the baseline `{BASELINE}` stays)'}.", "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_imputation.py " + " ".join(given) + "`",
           checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df, out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
