"""Fences for numeric values (``TabClustPFN._clip_fences``: a value beyond Q1 - c IQR or Q3 + c IQR of its column is
read as the fence), chosen on development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_fences.py --offset 14000 \\
        --set prior noisy one-informative coarse skewed low-d shapes --out docs/results/choice-fences-fresh
    PYTHONPATH=. .venv/bin/python benchmarks/choose_fences.py --values gross --offset 14000 \\
        --set prior noisy one-informative coarse skewed low-d shapes --out docs/results/choice-fences-gross-fresh
    PYTHONPATH=. .venv/bin/python benchmarks/choose_fences.py --set dev --out docs/results/choice-fences-dev
    PYTHONPATH=. .venv/bin/python benchmarks/choose_fences.py --variants fences-3-rare fences-5-rare fences-10-rare \
        --offset 15000 --set prior noisy one-informative coarse skewed low-d shapes \
        --out docs/results/choice-fences-rare-fresh
    (the same with ``--values gross``, ``choice-fences-rare-gross-fresh``; and ``--set dev``, ``choice-fences-rare-dev``
    and ``choice-fences-rare-gross-dev``)

Every table of the development sets of ``benchmarks/choose_checkpoint.py`` is clustered by
``TabClustPFN(random_state=0)`` with every other setting at its default, K inferred, without fences (``none``, the
default until 2026-12-06) and with fences at c = 3, 5 and 10 (``fences-C``), as read (``--values clean``) or with
gross values written into a few numeric cells (``--values gross``, :func:`gross_values`: entry errors and sentinel
codes such as 999999, which leave each row in its cluster). Fences were proposed 2026-12-06 after a probe of three
tables of three Gaussian blobs in 4 columns (3 % of the cells at -999: ARI 0.00 without fences, 0.83-0.84 with c =
3, 5 or 10; five cells of 999999 in one column: 0.99 without, 0.71-0.99 with); the tables from validation seed 14000
on and the dev suite were seen by no step before. Each c lost somewhere on the tables as read (c = 3 on prior and
low-d, c = 5 on low-d, c = 10 on dev, where diabetes_reaven's far group is a cluster), so ``fences-C-rare`` fence a
column only where at most ``RARE`` of its values (at least one) lie beyond: a few gross values, not a far group;
judged on the tables from seed 15000 on (and dev again). ``fences-10-rare`` qualified and is the estimator's default
since 2026-12-06. Per set, each variant against the baseline table by table: paired mean ARI difference +- standard
error, tables better / worse, mean |K^ - K|. The protocol (docs/DESIGN.md): a variant qualifies when it gains beyond
two standard errors on a set and loses beyond one on none, read over the clean and the gross sets together. Writes
``OUT.md`` and ``OUT.csv``.
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
from functools import partial  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

BASELINE = "none"
VARIANTS = ("none", "fences-3", "fences-5", "fences-10", "fences-3-rare", "fences-5-rare", "fences-10-rare")
RARE = 0.01  # "-rare": fenced only where at most this share of a column's values (at least one) lies beyond
ROW_SHARE = (0.005, 0.03)  # the share of rows given a gross value, drawn per table
MAGNITUDE = (20.0, 1000.0)  # a gross value's distance from the column's median, in IQRs (log-uniform)


def gross_values(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``frame`` with a share s ~ U(ROW_SHARE) of its rows each given one gross value, in a numeric column drawn
    at random: half the tables as entry errors (each the column's median plus or minus a log-uniform draw from
    MAGNITUDE times its IQR), half as one sentinel code per column (every such cell of the column the same value,
    median + 1000 IQR, or minus on a coin). The same ``seed`` alters the same cells; categorical and boolean
    columns, and numeric ones of IQR 0, are left as they are."""
    rng = np.random.default_rng([seed, 9175])
    out = frame.copy()
    numeric = [c for c in out.columns if pd.api.types.is_numeric_dtype(out[c])
               and not pd.api.types.is_bool_dtype(out[c])]
    stats = {}
    for c in numeric:
        values = out[c].to_numpy(np.float64)
        q1, med, q3 = np.nanquantile(values, [0.25, 0.5, 0.75])
        if q3 > q1:
            stats[c] = (med, q3 - q1)
    if not stats:
        return out
    names = list(stats)
    rows = np.flatnonzero(rng.random(len(out)) < rng.uniform(*ROW_SHARE))
    sentinel = rng.random() < 0.5
    side = {c: rng.choice([-1.0, 1.0]) for c in names}
    columns = {c: out[c].to_numpy(np.float64).copy() for c in names}
    for r in rows:
        c = names[rng.integers(len(names))]
        med, iqr = stats[c]
        if sentinel:
            columns[c][r] = med + side[c] * 1000.0 * iqr
        else:
            columns[c][r] = med + rng.choice([-1.0, 1.0]) * np.exp(rng.uniform(*np.log(MAGNITUDE))) * iqr
    for c in names:
        out[c] = columns[c]
    return out


def as_read(frame: pd.DataFrame, seed: int) -> pd.DataFrame:
    return frame


VALUES = {"clean": as_read, "gross": gross_values}


def estimator_for(variant: str, checkpoint: str | None):
    """``TabClustPFN(random_state=0)`` with the fences ``variant`` names."""
    from model.estimator import TabClustPFN

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: choose from {', '.join(VARIANTS)}")
    est = TabClustPFN(checkpoint=checkpoint, random_state=0)
    est._clip_fences = None if variant == "none" else float(variant.split("-")[1])
    est._fence_max_share = RARE if variant.endswith("-rare") else None
    return est


def _work(variants: tuple[str, ...], values: str, args: tuple[str, str, int, int, int, int]) -> list[dict]:
    from benchmarks.choose_k_rule import fit_each

    return fit_each(estimator_for, variants, *args, alter=VALUES[values])


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import estimator_variant_rows, table, verdict, write_variant_report

    given = sys.argv[1:] if argv is None else list(argv)
    pick = argparse.ArgumentParser(add_help=False)
    pick.add_argument("--variants", nargs="+", default=list(VARIANTS[1:4]), choices=VARIANTS[1:],
                      help="fitted beside the baseline `none` (default: fences-3, fences-5, fences-10)")
    pick.add_argument("--values", default="clean", choices=list(VALUES),
                      help="the tables as read, or with gross values written in (default: %(default)s)")
    chosen_args, _ = pick.parse_known_args(given)
    variants = (BASELINE, *[v for v in VARIANTS if v in chosen_args.variants])
    args, df = estimator_variant_rows(partial(_work, variants, chosen_args.values), __doc__,
                                      "docs/results/choice-fences", given, parents=(pick,))
    lines, diffs = table(df, list(variants), BASELINE)
    chosen, verdicts = verdict(diffs, BASELINE)
    times = ", ".join(f"`{v}` {df[v + '_s'].median():.3f}" for v in variants)
    how = "" if chosen_args.values == "clean" else " with gross values written in"
    write_variant_report(args, df, "Fences for numeric values ({sets}" + how + ", K inferred)", lines,
                         [f"Median fit time per table (s): {times}."], verdicts, chosen, BASELINE,
                         "choose_fences.py", given,
                         protocol="; read with the other value setting's report (clean and gross sets together)")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
