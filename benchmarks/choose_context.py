"""How many rows the estimator clusters as its context by default (``TabClustPFN(n_context=)``), judged for cost on
development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_context.py --out docs/results/choice-context

Past ``n_context`` rows the estimator clusters a random context of that many rows and assigns the others against
it as non-context rows; the network's forward pass over the context is most of a fit's time on tables of more than
4 design columns, so a smaller context is the obvious saving. Each table of the development sets of
``benchmarks/choose_checkpoint.py`` (synthetic sets of N 500-1000, ``dev``, ``shapes``) is clustered by
``TabClustPFN(random_state=0)`` with every other setting at its default, K inferred, with a context of 1000 rows
(today's default, the baseline), 750 and 500, in one process per worker with one torch thread (as
``jobs/evaluate.py`` runs a method). Per set, each size against 1000 table by table: paired mean ARI difference +-
standard error, tables better / worse, mean |K^ - K|; and each size's median seconds per table. The protocol's rule
for a choice made for cost (docs/DESIGN.md): a cheaper setting qualifies when it loses beyond one standard error on
no set, and the cheapest of those wins. Writes ``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

BASELINE = "1000"
VARIANTS = ("1000", "750", "500")


def _estimator(variant: str, checkpoint: str):
    from model.estimator import TabClustPFN

    return TabClustPFN(checkpoint=checkpoint, random_state=0, n_context=int(variant))


def _work(args: tuple[str, str, int, int, int, int]) -> list[dict]:
    from benchmarks.choose_k_rule import fit_each

    return fit_each(_estimator, VARIANTS, *args, extra=lambda est: {"context": len(est.context_indices_)})


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import cost_choice

    # the second time column: the tables where a smaller context changes anything
    cost_choice(_work, __doc__, argv, out="docs/results/choice-context", variants=VARIANTS, baseline=BASELINE,
                setting="context rows", subset=lambda df: ("tables of > 500 rows", df["1000_context"] > 500),
                unit=lambda v: f"{v} rows", title="Context rows per fit", column="context", what="setting",
                script="choose_context.py")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
