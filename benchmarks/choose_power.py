"""Whether the estimator Yeo-Johnson transforms its skewed numeric columns (``TabClustPFN(power_transform=True)``),
chosen on development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_power.py --variants yeo-johnson-all yeo-johnson-skewed \\
        --out docs/results/choice-power
    PYTHONPATH=. .venv/bin/python benchmarks/choose_power.py --variants yeo-johnson-unimodal \\
        --out docs/results/choice-power-modes
    PYTHONPATH=. .venv/bin/python benchmarks/choose_power.py --variants yeo-johnson --out docs/results/choice-power-wide
    PYTHONPATH=. .venv/bin/python benchmarks/choose_power.py --variants yeo-johnson --offset 1000 \\
        --set prior noisy one-informative coarse skewed low-d mid-d shapes --out docs/results/choice-power-fresh

Each table of the development sets (``benchmarks/choose_checkpoint.py``'s, with ``skewed``: the paper's prior with
half or more of the continuous columns of every table measured on a multiplicative scale, and ``mid-d``: 4-6
columns) is clustered by ``TabClustPFN(random_state=0)`` with every other setting at its default, K inferred:
``keep`` (``power_transform=False``, the baseline), ``yeo-johnson-all`` (every numeric column of at least 20
distinct values Yeo-Johnson transformed at its maximum-likelihood exponent, :mod:`model.power`),
``yeo-johnson-skewed`` (only those whose skewness exceeds 1 in magnitude, ``model.power.MIN_SKEWNESS``),
``yeo-johnson-unimodal`` (of those, only the columns of one mode, ``model.screening.multimodal``) and
``yeo-johnson`` (``power_transform=True``: that, in tables of more than 4 design columns only, where the estimator
does not take the BIC path, whose full-covariance mixtures model the clusters' shapes themselves); ``--variants``
picks some.

``yeo-johnson-all`` was proposed 2026-12-02 after a probe on 150 tables of the prior with and without skewed
columns and on the dev suite; ``-skewed`` after ``-all`` lost on the prior and low-d sets (first command),
``-unimodal`` after ``-skewed`` lost on low-d (second), ``yeo-johnson`` after ``-unimodal`` lost on low-d and shapes
(third), each loss on a few 2-3-column tables. So what this file chooses must hold on a fresh draw of the synthetic
sets (the last command: validation seeds from the 1000th on) before it may become a default. Per set, each
variant against ``keep`` table by table: paired mean ARI difference +- standard error, tables better / worse, mean
|K^ - K|. The protocol (docs/DESIGN.md): a variant qualifies when it gains beyond two standard errors on a set and
loses beyond one on none. Writes ``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

BASELINE = "keep"
VARIANTS = ("keep", "yeo-johnson-all", "yeo-johnson-skewed", "yeo-johnson-unimodal", "yeo-johnson")
#: each variant's (skewness a column must exceed, whether a column with two modes is left alone, the design width a
#: table must exceed)
GATES = {"yeo-johnson-all": (0.0, False, 0), "yeo-johnson-skewed": (1.0, False, 0),
         "yeo-johnson-unimodal": (1.0, True, 0), "yeo-johnson": (1.0, True, 4)}
SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "coarse": 200, "skewed": 200, "low-d": 200,
         "mid-d": 200, "dev": 23, "shapes": 54}


def estimator_for(variant: str, checkpoint: str):
    """``TabClustPFN(checkpoint=, random_state=0)`` with ``power_transform`` as ``variant`` says (``-all``: every
    numeric column of many values, not only the highly skewed ones)."""
    from model.estimator import TabClustPFN

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    if variant == BASELINE:
        return TabClustPFN(checkpoint=checkpoint, random_state=0, power_transform=False)
    skew, modes, width = GATES[variant]
    cls = type(f"TabClustPFN_{variant}", (TabClustPFN,),
               {"_power_min_skewness": skew, "_power_keep_modes": modes, "_power_min_width": width})
    return cls(checkpoint=checkpoint, random_state=0, power_transform=True)


def _work(variants: tuple[str, ...], args: tuple[str, str, int, int, int, int]) -> list[dict]:
    from benchmarks.choose_k_rule import fit_each

    return fit_each(estimator_for, variants, *args,
                    extra=lambda est: {"transformed": len(est.preprocessor_.power_transformed_)})


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import estimator_variant_rows, table, verdict, write_variant_report

    import argparse
    from functools import partial

    given = sys.argv[1:] if argv is None else list(argv)
    pick = argparse.ArgumentParser(add_help=False)
    pick.add_argument("--variants", nargs="+", default=list(VARIANTS[1:]), choices=VARIANTS[1:],
                      help="the variants to fit beside keep (default: all of them)")
    chosen_variants, _ = pick.parse_known_args(given)
    variants = (BASELINE, *[v for v in VARIANTS[1:] if v in chosen_variants.variants])
    args, df = estimator_variant_rows(partial(_work, variants), __doc__, "docs/results/choice-power", given,
                                      sizes=SIZES, parents=(pick,))
    lines, diffs = table(df, list(variants), BASELINE)
    chosen, verdicts = verdict(diffs, BASELINE)
    counts = "; ".join(f"`{v}`: " + ", ".join(
        f"{s} {int((part[f'{v}_transformed'] > 0).sum())} of {len(part)} (mean {part[f'{v}_transformed'].mean():.1f} "
        f"of {part['columns'].mean():.1f} columns)" for s, part in df.groupby("set", sort=False)) for v in variants[1:])
    times = ", ".join(f"`{v}` {df[v + '_s'].median():.3f}" for v in variants)
    write_variant_report(args, df, "Yeo-Johnson transforming skewed numeric columns before clustering ({sets}, K "
                         "inferred)", lines, [f"Tables with a column transformed: {counts}.",
                                              f"Median fit time (s): {times}."],
                         verdicts, chosen, BASELINE, "choose_power.py", given,
                         protocol="; the qualifying variant with the largest mean gain over the sets is chosen")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
