"""Whether the noise screening drops categorical columns independent of every other column too
(``TabClustPFN._screen_categorical``), chosen on development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py --out docs/results/choice-cat-screening
    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py --offset 1000 \\
        --set prior noisy one-informative coarse skewed low-d cat-noise shapes \\
        --out docs/results/choice-cat-screening-fresh

Each table of the development sets (``benchmarks/choose_checkpoint.py``'s, with ``cat-noise``: the prior's tables
with 1-3 categorical columns beside them that are independent of everything) is clustered by
``TabClustPFN(random_state=0)`` with every other setting at its default, K inferred:

- ``continuous`` (the baseline): ``screen_noise="auto"`` as it is, which tests only continuous columns;
- ``categorical``: a categorical column that depends on no other column is dropped as well, where the screening
  runs (:func:`model.screening.noise_columns` with ``categorical=True``), and put back when its levels and the
  clusters found without it are dependent (Pearson's chi-square, :func:`model.screening.associated_columns`);
- ``categorical-always``: as ``categorical``, and also in tables where the screening does not run because no
  continuous column has a second mode: there a categorical column independent of every other column is dropped
  wherever some column depends on another (the continuous columns are all kept);
- ``categorical-always-0.05`` / ``-0.2``: as ``categorical-always``, a categorical column's dependence tested at
  level 0.05 / 0.2 instead of 0.01 (``TabClustPFN._screen_categorical_alpha``), so that a category kept on weaker
  evidence: proposed after ``categorical-always`` lost 6 one-informative tables on the fresh draw, where a weakly
  informative category was dropped. Being shaped by that loss, a qualifying one must hold on a third draw
  (``--offset 7000``);
- ``categorical-always-split``: as ``categorical-always``, and a category that stays out after the put-back test
  comes back unless it only splits the clusters found without it (the table clustered again with it; it stays out
  where that partition is closer to the clusters found without it crossed with its levels than to its levels
  alone: ``TabClustPFN._split_check``). Proposed 2026-12-06 for the losses of ``categorical-always``, a category
  that carries the clusters alone (one-informative), which the put-back test cannot see against clusters found in
  noise columns; a qualifying one must hold on a fresh draw (``--offset 17000``).

Proposed 2026-12-02 after a probe: three blobs 4 SD apart in 3 columns with one 3-level categorical column of
noise beside them came out K = 9 (ARI 0.40; every blob split by the noise levels), K = 3 and ARI 1.0 with the
column dropped; ``categorical-always`` after a first 40 tables of ``cat-noise`` (mean ARI 0.574 against 0.712 on
the same tables without the noise columns) where ``categorical`` dropped a column in 2. Per set, each variant
against ``continuous`` table by table: paired mean ARI difference +- standard error,
tables better / worse, mean |K^ - K|. The protocol (docs/DESIGN.md): a variant qualifies when it gains beyond two
standard errors on a set and loses beyond one on none; it must hold on a fresh draw of the synthetic sets (the
second command) before it may become a default. Writes ``OUT.md`` and ``OUT.csv`` (one row per table).

Measured 2026-12-02: ``categorical-always`` qualified on the first draw (``cat-noise`` +0.105 +- 0.013) and lost
on one-informative on the fresh one (-0.0017 +- 0.0011, 1 better / 6 worse); ``categorical`` qualified only on the
fresh one. Neither is the default (``docs/results/choice-cat-screening*.md``). Measured 2026-12-06:
``categorical-always-split`` qualified on the first draw (cat-noise +0.062 +- 0.010) and lost on coarse on the
fresh one (-0.0004 +- 0.0003, 1 better / 4 worse; cat-noise +0.046 +- 0.011): not the default
(``choice-cat-screening-split*.md``).
"""

from __future__ import annotations

import argparse
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

BASELINE = "continuous"
VARIANTS = ("continuous", "categorical", "categorical-always", "categorical-always-0.05", "categorical-always-0.2",
            "categorical-always-split")
#: each variant's ``model.screening.noise_columns(categorical=, categorical_alpha=)`` and ``TabClustPFN._split_check``
SETTING = {"continuous": (False, None, False), "categorical": (True, None, False),
           "categorical-always": ("always", None, False), "categorical-always-0.05": ("always", 0.05, False),
           "categorical-always-0.2": ("always", 0.2, False), "categorical-always-split": ("always", None, True)}
SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "coarse": 200, "skewed": 200, "low-d": 200,
         "cat-noise": 200, "dev": 23, "shapes": 54}


def estimator_for(variant: str, checkpoint: str):
    """``TabClustPFN(checkpoint=, random_state=0)``, its screening of categorical columns as ``variant`` says."""
    from model.estimator import TabClustPFN

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    setting, alpha, split_check = SETTING[variant]
    cls = type(f"TabClustPFN_{variant}", (TabClustPFN,),
               {"_screen_categorical": setting, "_screen_categorical_alpha": alpha, "_split_check": split_check})
    return cls(checkpoint=checkpoint, random_state=0)


def _screened_categorical(est) -> dict:
    return {"dropped_categorical": int(est.preprocessor_.screened_categorical.sum())}


def _work(args: tuple) -> list[dict]:
    """(checkpoint, set, n, start, stop, offset, variants) -> rows, as :func:`benchmarks.choose_k_rule.fit_each`."""
    from benchmarks.choose_k_rule import fit_each

    *common, variants = args
    return fit_each(estimator_for, variants, *common, extra=_screened_categorical)


def _with_baseline(variants: list[str]) -> list[str]:
    """``variants`` in :data:`VARIANTS`' order, the baseline first whether asked for or not."""
    return [v for v in VARIANTS if v == BASELINE or v in variants]


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import estimator_variant_rows, table, verdict, write_results
    from pipeline.evaluation.protocol import RULE
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    given = sys.argv[1:] if argv is None else list(argv)
    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--variants", nargs="+", default=list(VARIANTS[:3]), choices=VARIANTS,
                     help="the variants fitted, the baseline always among them (default: the first three)")
    args, df = estimator_variant_rows(_work, __doc__, "docs/results/choice-cat-screening", given, sizes=SIZES,
                                      parents=(own,), passed=lambda a: (_with_baseline(a.variants),))
    variants = _with_baseline(args.variants)
    lines, diffs = table(df, variants, BASELINE)
    chosen, verdicts = verdict(diffs, BASELINE)
    dropped = "; ".join(f"`{v}`: " + ", ".join(
        f"{s} {int((part[f'{v}_dropped_categorical'] > 0).sum())} of {len(part)}"
        for s, part in df.groupby("set", sort=False)) for v in variants[1:])
    times = ", ".join(f"`{v}` {df[v + '_s'].median():.3f}" for v in variants)
    sets = "a fresh draw of the synthetic development sets" if args.offset else "development sets"
    out = [f"# Screening categorical noise columns before clustering ({sets}, K inferred)", "",
           *[line.replace("| rule |", "| variant |") for line in lines], "",
           f"Tables where a variant dropped a categorical column (after any put back): {dropped}.", "",
           f"Median fit time (s): {times}.", "",
           f"Protocol: {RULE}; the qualifying variant with the largest mean gain over the sets is chosen.", "",
           *[v.replace("rule", "variant") for v in verdicts], "",
           f"Chosen: {'`' + chosen + '`' if chosen else f'none (the baseline `{BASELINE}` stays)'}.", "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_categorical_screening.py " + " ".join(given)
           + "`", checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df, out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
