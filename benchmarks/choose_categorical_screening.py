"""Whether the noise screening drops categorical columns independent of every other column too
(``TabClustPFN._screen_categorical``, ``_split_check``, ``_screen_binary``), chosen on development data by the
decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py \
        --baseline categorical-always-split --variants categorical-always-split-binary \
        --set prior noisy one-informative coarse skewed low-d cat-noise flag-noise dev shapes \
        --out docs/results/choice-cat-screening-binary
    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py --offset 19000 \
        --baseline categorical-always-split --variants categorical-always-split-binary \
        --set prior noisy one-informative coarse skewed low-d cat-noise flag-noise shapes \
        --out docs/results/choice-cat-screening-binary-fresh

Each table of the development sets (``benchmarks/choose_checkpoint.py``'s, with ``cat-noise`` and ``flag-noise``:
the prior's tables with 1-3 categorical columns, or numeric 0/1 columns, beside them that are independent of
everything; ``cat-cross``) is clustered by ``TabClustPFN(random_state=0)`` with every other setting at its
default, K inferred:

- ``continuous``: ``screen_noise="auto"`` testing only continuous columns (the default before 2026-12-06);
- ``categorical``: a categorical column that depends on no other column is dropped as well, where the screening
  runs (:func:`model.screening.noise_columns` with ``categorical=True``), and put back when its levels and the
  clusters found without it are dependent (Pearson's chi-square, :func:`model.screening.associated_columns`);
- ``categorical-always``: as ``categorical``, and also in tables where no continuous column has a second mode,
  wherever some column depends on another (the continuous columns are all kept);
- ``categorical-always-0.05`` / ``-0.2``: as ``categorical-always``, a category's dependence tested at level
  0.05 / 0.2 instead of 0.01 (``TabClustPFN._screen_categorical_alpha``);
- ``categorical-always-split``: as ``categorical-always``, and a category that stays out after the put-back test
  comes back unless it only splits the clusters found without it (the table clustered again with it; it stays out
  where that partition is closer to the clusters found without it crossed with its levels than to its levels
  alone: ``TabClustPFN._split_check``);
- ``categorical-always-split-binary`` (the default 2026-12-06): as ``categorical-always-split``, and a
  numeric column of two values (a 0/1 flag, which has no second mode to show and so is never screened as a number)
  is screened as a category (``TabClustPFN._screen_binary``). Proposed 2026-12-06: three groups 4 SD apart beside a
  random 0/1 column came out K = 6 (``tests/model/test_screening.py``), where the same flag stored as ``bool`` or
  text was dropped.
- ``categorical-always-split-binary-kept``: as ``categorical-always-split-binary``, and the kept categorical
  columns and 0/1 flags of a table with other columns too set aside where they only split the clusters found
  without them (the same test, ``TabClustPFN._split_check_kept``): a sex beside species depends on the numbers,
  so no independence test drops it. Proposed 2026-12-06 after probes on prior tables from validation seed 30000
  and on the dev suite, judged on ``cat-cross`` (the prior's tables with 1-2 factors that cross the clusters and
  shift some numeric columns) and the sets above, then a fresh draw:

    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py \\
        --baseline categorical-always-split-binary --variants categorical-always-split-binary-kept \\
        --set prior noisy one-informative coarse skewed low-d cat-noise flag-noise cat-cross dev \\
        --out docs/results/choice-cat-screening-kept

  It lost on noisy prior tables (``docs/results/choice-cat-screening-kept.md``), so its fresh draw was not run.
- ``categorical-always-split-binary-crossing`` (the default 2026-12-07, before ``-levels-wide``): as ``-kept``, by the
  strict test (:func:`model.screening.only_splits` with ``strict=True``): the partition with the columns must also be
  closer to the clusters found without them crossed with the levels than to those clusters alone, and closer than to
  the levels alone by more than a tie. Proposed 2026-12-06 after the four noisy tables ``-kept`` lost on (weakly
  informative categories beside noise columns, whose levels read as a split of noise); judged on a fresh draw first,
  then on the first draw's tables and dev:

    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py --offset 28000 \\
        --baseline categorical-always-split-binary --variants categorical-always-split-binary-crossing \\
        --set prior noisy one-informative coarse skewed low-d cat-noise flag-noise cat-cross \\
        --out docs/results/choice-cat-screening-crossing-fresh
    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py \\
        --baseline categorical-always-split-binary --variants categorical-always-split-binary-crossing \\
        --set prior noisy one-informative coarse skewed low-d cat-noise flag-noise cat-cross dev \\
        --out docs/results/choice-cat-screening-crossing

- ``categorical-always-split-binary-crossing-levels`` / ``-levels19``: as ``-crossing``, and a numeric column of 3
  to 10 / 19 distinct values (a count, a rating: too few values for a second mode to show, so never screened as a
  number) is screened as a category by its levels (``TabClustPFN._screen_levels``). Proposed 2026-12-07: three
  groups in two columns beside a random integer column of 3 levels came out K = 9 on the BIC path
  (``tests/model/test_screening.py``). Judged with ``level-noise`` and ``level-noise-low-d`` (the prior's tables, and
  the ``low-d`` ones, with integer columns of 3-10 levels independent of everything) and ``coarse-low-d``, then the
  chosen bound on a fresh draw:

    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py \\
        --baseline categorical-always-split-binary-crossing \\
        --variants categorical-always-split-binary-crossing-levels categorical-always-split-binary-crossing-levels19 \\
        --set prior noisy one-informative coarse skewed low-d \\
        cat-noise flag-noise cat-cross level-noise level-noise-low-d coarse-low-d dev shapes \\
        --out docs/results/choice-cat-screening-levels
    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py --offset 35000 \\
        --baseline categorical-always-split-binary-crossing \\
        --variants categorical-always-split-binary-crossing-levels19 \\
        --set prior noisy one-informative coarse skewed low-d cat-noise flag-noise cat-cross level-noise \\
        level-noise-low-d coarse-low-d --out docs/results/choice-cat-screening-levels-fresh

  ``-levels19`` lost on that draw's ``coarse`` (-0.0099 +- 0.0059), so the other bound, ``-levels``, which had
  qualified on the first draw too, was put to a second fresh draw:

    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py --offset 36000 \\
        --baseline categorical-always-split-binary-crossing \\
        --variants categorical-always-split-binary-crossing-levels \\
        --set prior noisy one-informative coarse skewed low-d cat-noise flag-noise cat-cross level-noise \\
        level-noise-low-d coarse-low-d --out docs/results/choice-cat-screening-levels-fresh2

  It lost there on ``coarse-low-d`` (-0.0021 +- 0.0011), so neither bound ships.
- ``categorical-always-split-binary-crossing-levels-wide`` (the default since 2026-12-07): as ``-levels`` (bound 10),
  only in a design of more than 4 columns before screening (``TabClustPFN._screen_levels_min_width``), the network's
  tables: off the BIC path, whose only loss so far (``coarse-low-d``) it was. Proposed 2026-12-07 after the draws
  above, so judged on the first draw's tables and two draws none of them saw (offsets 37000 and 38000); ships only if
  it qualifies on all three (the fresh draws leave out ``low-d`` and ``coarse-low-d``, designs of <= 4 columns where
  it does nothing):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py \\
        --baseline categorical-always-split-binary-crossing \\
        --variants categorical-always-split-binary-crossing-levels-wide \\
        --set prior noisy one-informative coarse skewed low-d \\
        cat-noise flag-noise cat-cross level-noise level-noise-low-d coarse-low-d dev shapes \\
        --out docs/results/choice-cat-screening-levels-wide
    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_screening.py --offset 37000 \\
        --baseline categorical-always-split-binary-crossing \\
        --variants categorical-always-split-binary-crossing-levels-wide \\
        --set prior noisy one-informative coarse skewed cat-noise flag-noise cat-cross level-noise \\
        level-noise-low-d --out docs/results/choice-cat-screening-levels-wide-fresh

  and the same with ``--offset 38000 --out docs/results/choice-cat-screening-levels-wide-fresh2``.

Per set, each variant against the baseline table by table: paired mean ARI difference +- standard error, tables
better / worse, mean |K^ - K|, and the protocol's verdict (docs/DESIGN.md); a candidate must hold on a fresh draw
of the synthetic sets (the second command) before it may become a default. Writes ``OUT.md`` and ``OUT.csv`` (one
row per table). What each draw gave: ``docs/results/choice-cat-screening*.md`` and CHANGELOG.md.
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

#: what ``--baseline`` defaults to (the baseline of the first choices, whose commands name none); today's default
#: is ``categorical-always-split-binary-crossing-levels-wide``
BASELINE = "continuous"
VARIANTS = ("continuous", "categorical", "categorical-always", "categorical-always-0.05", "categorical-always-0.2",
            "categorical-always-split", "categorical-always-split-binary", "categorical-always-split-binary-kept",
            "categorical-always-split-binary-crossing", "categorical-always-split-binary-crossing-levels",
            "categorical-always-split-binary-crossing-levels19", "categorical-always-split-binary-crossing-levels-wide")
#: each variant's ``model.screening.noise_columns(categorical=, categorical_alpha=)``, ``TabClustPFN._split_check``,
#: ``TabClustPFN._screen_binary``, ``TabClustPFN._split_check_kept``, ``TabClustPFN._screen_levels`` and
#: ``TabClustPFN._screen_levels_min_width`` (left out: 0)
SETTING = {"continuous": (False, None, False, False, False, 0), "categorical": (True, None, False, False, False, 0),
           "categorical-always": ("always", None, False, False, False, 0),
           "categorical-always-0.05": ("always", 0.05, False, False, False, 0),
           "categorical-always-0.2": ("always", 0.2, False, False, False, 0),
           "categorical-always-split": ("always", None, True, False, False, 0),
           "categorical-always-split-binary": ("always", None, True, True, False, 0),
           "categorical-always-split-binary-kept": ("always", None, True, True, "together", 0),
           "categorical-always-split-binary-crossing": ("always", None, True, True, "crossing", 0),
           "categorical-always-split-binary-crossing-levels": ("always", None, True, True, "crossing", 10),
           "categorical-always-split-binary-crossing-levels19": ("always", None, True, True, "crossing", 19),
           "categorical-always-split-binary-crossing-levels-wide": ("always", None, True, True, "crossing", 10, 4)}
SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "coarse": 200, "skewed": 200, "low-d": 200,
         "cat-noise": 200, "flag-noise": 200, "cat-cross": 200, "level-noise": 200, "level-noise-low-d": 200,
         "coarse-low-d": 200, "dev": 23, "shapes": 54}


def estimator_for(variant: str, checkpoint: str):
    """``TabClustPFN(checkpoint=, random_state=0)``, its screening of categorical columns as ``variant`` says."""
    from model.estimator import TabClustPFN

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    setting, alpha, split_check, binary, kept, levels, *wider = SETTING[variant]
    cls = type(f"TabClustPFN_{variant}", (TabClustPFN,),
               {"_screen_categorical": setting, "_screen_categorical_alpha": alpha, "_split_check": split_check,
                "_screen_binary": binary, "_split_check_kept": kept, "_screen_levels": levels,
                "_screen_levels_min_width": wider[0] if wider else 0})
    return cls(checkpoint=checkpoint, random_state=0)


def _screened_categorical(est) -> dict:
    return {"dropped_categorical": int(est.preprocessor_.screened_categorical.sum())}


def _work(args: tuple) -> list[dict]:
    """(checkpoint, set, n, start, stop, offset, variants) -> rows, as :func:`benchmarks.choose_k_rule.fit_each`."""
    from benchmarks.choose_k_rule import fit_each

    *common, variants = args
    return fit_each(estimator_for, variants, *common, extra=_screened_categorical)


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import (estimator_variant_rows, table, variant_options, verdict, with_baseline,
                                          write_results)
    from pipeline.evaluation.protocol import RULE
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    given = sys.argv[1:] if argv is None else list(argv)
    own = variant_options(VARIANTS, list(VARIANTS[1:3]), BASELINE)
    args, df = estimator_variant_rows(_work, __doc__, "docs/results/choice-cat-screening", given, sizes=SIZES,
                                      parents=(own,), passed=lambda a: (with_baseline(VARIANTS, a.variants,
                                                                                      a.baseline),))
    variants = with_baseline(VARIANTS, args.variants, args.baseline)
    lines, diffs = table(df, variants, args.baseline)
    chosen, verdicts = verdict(diffs, args.baseline)
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
           f"Chosen: {'`' + chosen + '`' if chosen else f'none (the baseline `{args.baseline}` stays)'}.", "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_categorical_screening.py " + " ".join(given)
           + "`", checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df, out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
