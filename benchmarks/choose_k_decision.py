"""How the calibrated K ranker's probabilities become K, chosen on development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_k_decision.py --out docs/results/choice-k-decision

The ranker scores each candidate K and its probabilities over K are calibrated (``k_probabilities_``,
``docs/results/k-calibration.md``). Taking the top K is the Bayes choice for a 0-1 loss on K, not for the ARI the
answer is judged by: where the probabilities are flat (real tables of rounded values and levels, where the
temperature is raised) the top K is nearly a coin toss among K = 2..10, and on the test suites the misses were
over-splits (K = 10 for a table of 2 or 3 groups). The alternative:

- ``top``: the ranker's most probable K (the estimator's default; the baseline);
- ``expected_ari``: the candidate of highest expected ARI against the candidate at K ~ the ranker's probabilities
  (minimum Bayes risk, :func:`model.selection.expected_ari` over the Lloyd-refined candidates): a confident ranker
  keeps its K, a flat one gives the candidate that agrees most with the others;
- ``smallest-A`` (A = 0.5, 0.8): the smallest K whose probability is at least A times the top K's (parsimony: of
  K nearly as probable as the top, the fewest clusters).

Each table of the development sets (``benchmarks/choose_low_dim.py``'s: ``prior``, ``noisy``, ``one-informative``,
``coarse``, ``low-d``, ``mid-d``, ``dev``, ``shapes``) is clustered by ``TabClustPFN(random_state=0)`` with every
setting at its default, K inferred, once per variant (``TabClustPFN._ranker_decision``; tables that take the BIC
path, at most 4 design columns, get the same answer from both). The ranker's temperature slope was fitted on the
dev tables, so the dev row is not wholly out of sample. Per set, each variant against ``top`` table by table:
paired mean ARI difference +- standard error, tables better / worse, mean |K^ - K|. The protocol
(docs/DESIGN.md): a variant qualifies when it gains beyond two standard errors on a set and loses beyond one on
none; ``--offset N`` draws the synthetic sets afresh to confirm a choice. Writes ``OUT.md`` and ``OUT.csv`` (one
row per table).
"""

from __future__ import annotations

import argparse
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

BASELINE = "top"
VARIANTS = ("top", "expected_ari", "smallest-0.5", "smallest-0.8")


def estimator_for(variant: str, checkpoint: str):
    """``TabClustPFN(checkpoint=, random_state=0)`` deciding K from the ranker's probabilities by ``variant``."""
    from model.estimator import TabClustPFN

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    cls = type(f"TabClustPFN_{variant}", (TabClustPFN,), {"_ranker_decision": variant})
    return cls(checkpoint=checkpoint, random_state=0)


def _work(args: tuple) -> list[dict]:
    """(checkpoint, set, n, start, stop, offset, variants) -> rows, as :func:`benchmarks.choose_k_rule.fit_each`."""
    from benchmarks.choose_k_rule import fit_each

    *common, variants = args
    return fit_each(estimator_for, variants, *common, extra=lambda est: {"rule": est.k_selection_})


def _with_baseline(variants: list[str]) -> list[str]:
    """``variants`` in :data:`VARIANTS`' order, the baseline first whether asked for or not."""
    return [v for v in VARIANTS if v == BASELINE or v in variants]


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import estimator_variant_rows, table, verdict, write_results
    from benchmarks.choose_low_dim import SIZES
    from pipeline.evaluation.protocol import RULE
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS,
                     help="the variants fitted, the baseline always among them (default: all)")
    args, df = estimator_variant_rows(_work, __doc__, "docs/results/choice-k-decision", argv, sizes=SIZES,
                                      parents=(own,), passed=lambda a: (_with_baseline(a.variants),))
    variants = _with_baseline(args.variants)
    lines, diffs = table(df, variants, BASELINE)
    chosen, verdicts = verdict(diffs, BASELINE)
    ranked = df[df[f"{BASELINE}_rule"] == "ranker"]
    counts = ", ".join(f"{s} {int((part[f'{BASELINE}_rule'] == 'ranker').sum())} of {len(part)}"
                       for s, part in df.groupby("set", sort=False))
    moved = ", ".join(f"`{v}` {int((ranked[f'{BASELINE}_k'] != ranked[f'{v}_k']).sum())}"
                      for v in variants if v != BASELINE)
    times = ", ".join(f"`{v}` {ranked[v + '_s'].median():.3f}" for v in variants) if len(ranked) else "none"
    given = sys.argv[1:] if argv is None else list(argv)
    sets = "a fresh draw of the synthetic development sets" if args.offset else "development sets"
    out = [f"# K from the ranker's probabilities: the top K or another decision ({sets})", "",
           *[line.replace("| rule |", "| variant |") for line in lines], "",
           f"Tables whose K the ranker chose (the variants differ only there): {counts}; of them, K moved by "
           f"{moved}.", "",
           f"Median fit time on those tables (s): {times}.", "",
           f"Protocol: {RULE}; the qualifying variant with the largest mean gain over the sets is chosen.", "",
           *[v.replace("rule", "variant") for v in verdicts], "",
           f"Chosen: {'`' + chosen + '`' if chosen else f'none (the baseline `{BASELINE}` stays)'}.", "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_k_decision.py " + " ".join(given) + "`",
           checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df, out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
