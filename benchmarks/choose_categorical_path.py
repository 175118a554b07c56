"""Whether tables of categories only take K and their partition from latent class models
(``TabClustPFN._categorical_path``, :mod:`model.latent_class`), chosen on development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_path.py \
        --set all-cat dev --out docs/results/choice-categorical-path
    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_path.py --offset 20000 \
        --set all-cat --variants latent-network --out docs/results/choice-categorical-path-fresh

Each table of the development sets (``benchmarks/choose_checkpoint.py``'s; ``all-cat``: tables whose every column
is categorical, drawn as the prior draws its categorical columns, the latent class model; ``dev``) is clustered by
``TabClustPFN(random_state=0)`` with every other setting at its default, K inferred:

- ``network``: such tables take the network's path like any other (the default before 2026-12-06; the baseline);
- ``latent-kmeans``: every kept column categorical: per K a latent class model run by EM to convergence from a
  k-means++ partition of the one-hot codes, K by BIC (the network is not run);
- ``latent-network``: the same from the network's Lloyd-refined candidates;
- ``latent-both``: the same from both, the likelier model per K;
- ``latent-network-flags``: ``latent-network``, a numeric column of two values (a 0/1 flag) counted as a category
  (``TabClustPFN._categorical_flags``), judged against ``latent-network`` (``--baseline``) on ``all-cat-flags``,
  the ``all-cat`` tables with their two-level columns stored as 0 / 1;
- ``latent-network-flags-aic3``: ``latent-network-flags`` with K by AIC3 (3 per parameter) instead of BIC (log N
  per parameter), which under-split a small table of many classes (OpenML's LED digits, 500 rows, 10 classes: K =
  6), judged against ``latent-network-flags`` on ``all-cat`` and ``all-cat-flags``:

    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_path.py --baseline latent-network-flags \
        --variants latent-network-flags-aic3 --set all-cat all-cat-flags dev --out docs/results/choice-categorical-aic3
    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_path.py --offset 23000 \
        --baseline latent-network-flags --variants latent-network-flags-aic3 --set all-cat all-cat-flags \
        --out docs/results/choice-categorical-aic3-fresh

The flags (the ``all-cat`` tables' two-level columns as numbers; ``flag-noise``: prior tables with random 0/1 columns
beside them, which never take the path, as they have continuous columns):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_path.py --baseline latent-network \
        --variants latent-network-flags --set all-cat-flags all-cat dev \
        --out docs/results/choice-categorical-flags
    PYTHONPATH=. .venv/bin/python benchmarks/choose_categorical_path.py --offset 22000 --baseline latent-network \
        --variants latent-network-flags --set all-cat-flags --out docs/results/choice-categorical-flags-fresh

A table with a column the preprocessing keeps as a number never takes the path, so there every variant's answer is
the baseline's (the rows say how many tables took it): every table of the prior's sets (``prior``, ``coarse``,
``cat-noise``, ...; ``--set`` takes them) has at least one continuous column, and no dev table is all categorical.
Per set, each variant against the baseline table by table: paired mean ARI difference +- standard error, tables
better / worse, mean |K^ - K|, and the protocol's verdict (docs/DESIGN.md); a candidate must hold on a fresh draw of
the synthetic sets (the second command) before it may become a default. Writes ``OUT.md`` and ``OUT.csv`` (one row
per table).
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

#: what ``--baseline`` defaults to (the baseline of the first choice); today's default is ``latent-network``
BASELINE = "network"
#: each variant's ``TabClustPFN._categorical_path``, ``_categorical_flags`` and ``_latent_criterion``
SETTING = {"network": (None, False, "bic"), "latent-kmeans": ("kmeans", False, "bic"),
           "latent-network": ("network", False, "bic"), "latent-both": ("both", False, "bic"),
           "latent-network-flags": ("network", True, "bic"), "latent-network-flags-aic3": ("network", True, "aic3")}
VARIANTS = tuple(SETTING)
SIZES = {"all-cat": 200, "all-cat-flags": 200, "dev": 23, "cat-noise": 200, "flag-noise": 200, "prior": 400,
         "coarse": 200}


def estimator_for(variant: str, checkpoint: str):
    """``TabClustPFN(checkpoint=, random_state=0)``, its path for tables of categories only as ``variant`` says."""
    from model.estimator import TabClustPFN

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    path, flags, criterion = SETTING[variant]
    cls = type(f"TabClustPFN_{variant}", (TabClustPFN,), {"_categorical_path": path, "_categorical_flags": flags,
                                                          "_latent_criterion": criterion})
    return cls(checkpoint=checkpoint, random_state=0)


def _took_path(est) -> dict:
    return {"latent": int(est.k_selection_ == "latent-class")}


def _work(args: tuple) -> list[dict]:
    """(checkpoint, set, n, start, stop, offset, variants) -> rows, as :func:`benchmarks.choose_k_rule.fit_each`."""
    from benchmarks.choose_k_rule import fit_each

    *common, variants = args
    return fit_each(estimator_for, variants, *common, extra=_took_path)


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import (estimator_variant_rows, table, variant_options, verdict, with_baseline,
                                          write_variant_report)

    given = sys.argv[1:] if argv is None else list(argv)
    own = variant_options(VARIANTS, list(VARIANTS[1:4]), BASELINE)
    args, df = estimator_variant_rows(
        _work, __doc__, "docs/results/choice-categorical-path", given, sizes=SIZES, parents=(own,),
        passed=lambda a: (with_baseline(VARIANTS, a.variants, a.baseline),), default_sets=["all-cat", "dev"])
    variants = with_baseline(VARIANTS, args.variants, args.baseline)
    lines, diffs = table(df, variants, args.baseline)
    chosen, verdicts = verdict(diffs, args.baseline)
    took = "; ".join(f"`{v}`: " + ", ".join(f"{s} {int(part[f'{v}_latent'].sum())} of {len(part)}"
                                             for s, part in df.groupby("set", sort=False)) for v in variants[1:])
    times = ", ".join(f"`{v}` {df[v + '_s'].median():.3f}" for v in variants)
    times_cat = "; ".join(f"`{s}`: " + ", ".join(f"`{v}` {df.loc[df['set'] == s, v + '_s'].median():.3f}"
                                                 for v in variants)
                          for s in ("all-cat", "all-cat-flags") if (df["set"] == s).any())
    write_variant_report(
        args, df, "Tables of categories only: the network's path or latent class models ({sets}, K inferred)",
        lines, [f"Tables that took the latent class path: {took}.",
                f"Median fit time (s), all tables: {times}; {times_cat}."],
        verdicts, chosen, args.baseline, "choose_categorical_path.py", given,
        protocol="; the qualifying variant with the largest mean gain over the sets is chosen")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
