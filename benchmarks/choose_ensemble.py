"""How many column orderings the estimator averages by default (``TabClustPFN(n_estimators=)``), chosen for cost on
development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_ensemble.py --out docs/results/choice-ensemble

The orderings are most of a fit's time (each is one pass of the encoder), and issue 28 asks that the estimator with
every default on be no slower than k-means with a silhouette sweep. Each table of the development sets of
``benchmarks/choose_checkpoint.py`` (``prior``, ``noisy``, ``one-informative``, ``coarse``, ``low-d``, ``dev``,
``shapes``) is clustered by ``TabClustPFN(random_state=0)`` with every other setting at its default, K inferred,
with 4 orderings (today's default, the baseline), 3, 2 and 1, in one process per worker with one torch thread (as
``jobs/evaluate.py`` runs a method). Per set, each count against 4 table by table: paired mean ARI difference +-
standard error, tables better / worse, mean |K^ - K|; and each count's median seconds per table over all sets.
The protocol's rule for a choice made for cost (docs/DESIGN.md): a cheaper count qualifies when it loses beyond one
standard error on no set, and the cheapest of those wins. Writes ``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

BASELINE = "4"
VARIANTS = ("4", "3", "2", "1")


def _estimator(variant: str, checkpoint: str):
    from model.estimator import TabClustPFN

    return TabClustPFN(checkpoint=checkpoint, random_state=0, n_estimators=int(variant))


def _work(args: tuple[str, str, int, int, int, int]) -> list[dict]:
    from benchmarks.choose_k_rule import fit_each

    return fit_each(_estimator, VARIANTS, *args, extra=lambda est: {"members": est.n_estimators_})


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import cost_choice

    cost_choice(_work, __doc__, argv, out="docs/results/choice-ensemble", variants=VARIANTS, baseline=BASELINE,
                setting="orderings", subset=lambda df: ("dev", df.set == "dev"),
                unit=lambda v: f"{v} ordering{'s' if v != '1' else ''}", title="Column orderings averaged per fit",
                column="orderings", what="count", script="choose_ensemble.py")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
