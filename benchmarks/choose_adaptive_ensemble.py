"""Adaptive column orderings, a choice for cost on development data: 2 orderings where their partitions agree, 4
(today's default) where they do not.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_adaptive_ensemble.py --out docs/results/choice-adaptive-ensemble

Fixed counts below 4 lose beyond one standard error (``choice-ensemble.md``); this asks whether the tables on which
2 orderings would do can be told apart at fit time. Each table of the development sets of
``benchmarks/choose_checkpoint.py`` is clustered by ``TabClustPFN(random_state=0)`` with 2 and with 4 orderings
(the first 2 of the 4 are the same, :func:`model.ensemble.column_orderings`), K inferred, every other setting at
its default, one torch thread per process. The 2 orderings' agreement is the fraction of the context's rows that
their partitions at the K the 2-ordering fit chose (``k_chosen_``) put in the same cluster, the clusters matched
as :func:`model.ensemble.combine_members` matches them. Variant ``agree-T`` answers as the 2-ordering fit where that
agreement is at least T and as the 4-ordering fit elsewhere: what an estimator that runs 2 orderings and adds the
other 2 only on disagreement would answer. Its time lies between two bounds: the 2-ordering fit's or the
4-ordering fit's (lower: on disagreement such an estimator has already chosen K on 2 orderings, and must at least
run the other 2), and the 2-ordering fit's plus, on disagreement, the 4-ordering fit's (upper: the 4 orderings
from scratch). The protocol's rule for a cost choice (docs/DESIGN.md; per set each variant against ``4`` table by
table: paired mean ARI difference +- standard error, tables better / worse): a cheaper variant qualifies when it
loses beyond one standard error on no set, and the cheapest of those wins, on the lower bound; a variant it picks
ships only if its upper bound is cheaper too. Tables whose design takes the BIC path run no network and are the
same in every variant. Writes ``OUT.md`` and ``OUT.csv`` (one row per table).
"""

from __future__ import annotations

import functools
import os
import sys

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

BASELINE = "4"
THRESHOLDS = (0.9, 0.95, 0.98)
VARIANTS = (BASELINE, "2", *(f"agree-{t}" for t in THRESHOLDS))


def agreement(probs: np.ndarray, k: int) -> float:
    """Two members' soft partitions (2, K_max-1, N, K_max) -> the fraction of rows whose most probable clusters at
    K = ``k`` are the same once member 1's clusters are matched to member 0's (as
    :func:`model.ensemble.combine_members` matches them: :func:`model.ensemble.match_clusters`)."""
    from model.ensemble import match_clusters

    if len(probs) != 2:
        raise ValueError(f"agreement compares 2 members, got {len(probs)}")
    first, second = probs[0, k - 2, :, :k], probs[1, k - 2, :, :k]
    onto_first = np.empty(k, dtype=np.int64)
    onto_first[match_clusters(first, second)] = np.arange(k)  # member 1's column perm[j] is member 0's cluster j
    return float((first.argmax(1) == onto_first[second.argmax(1)]).mean())


@functools.lru_cache(maxsize=1)
def _network(checkpoint: str):
    from model.checkpoint import load_checkpoint

    return load_checkpoint(checkpoint)[0].eval()


def _estimator(variant: str, checkpoint: str):
    from model.estimator import TabClustPFN

    return TabClustPFN(checkpoint=checkpoint, random_state=0, n_estimators=int(variant))


def _two_orderings_agreement(est) -> dict:
    """A fitted estimator's orderings and, where it ran exactly 2, their :func:`agreement` at its K (1.0 where it ran
    no network, the BIC path, or one ordering: nothing to disagree on; NaN for more than 2)."""
    members = est.n_estimators_
    value = 1.0 if members < 2 else float("nan")
    if members == 2:
        context = _network(est.checkpoint).open_context(est._context_X, est._cat_mask, est._orders)
        value = agreement(context.probs, est.k_chosen_)
    return {"members": members, "agreement": value}


def _work(args: tuple[str, str, int, int, int, int]) -> list[dict]:
    from benchmarks.choose_k_rule import fit_each

    rows = fit_each(_estimator, ("2", BASELINE), *args, extra=_two_orderings_agreement)
    for row in rows:
        row["agreement"] = row.pop("2_agreement")
        row.pop(f"{BASELINE}_agreement")
        for t in THRESHOLDS:
            m = "2" if row["agreement"] >= t else BASELINE
            row.update({f"agree-{t}": row[m], f"agree-{t}_k": row[f"{m}_k"], f"agree-{t}_s": row[f"{m}_s"],
                        f"agree-{t}_s_upper": row["2_s"] + (row[f"{BASELINE}_s"] if m == BASELINE else 0.0)})
    return rows


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import cost_report, cost_verdict, estimator_variant_rows, table, write_results

    args, df = estimator_variant_rows(_work, __doc__, "docs/results/choice-adaptive-ensemble", argv)
    lines, diffs = table(df, list(VARIANTS), BASELINE)
    chosen, times, verdicts = cost_verdict(df, diffs, list(VARIANTS), BASELINE, "orderings",
                                           ("dev", df.set == "dev"), lambda v: f"`{v}`")
    base = df[f"{BASELINE}_s"].median()
    share = ", ".join(f"`agree-{t}` {(df['agreement'] >= t).mean():.2f}" for t in THRESHOLDS)
    bounds = ", ".join(f"`agree-{t}` {df[f'agree-{t}_s'].median() / base:.2f} to "
                       f"{df[f'agree-{t}_s_upper'].median() / base:.2f}" for t in THRESHOLDS)
    times = [*times, "", f"Share of tables answered by 2 orderings: {share}. The times of `agree-T` above are its "
             f"lower bound; from the lower to the upper bound (the module docstring), against `4`'s: {bounds}."]
    choice = f"Chosen: {f'`{chosen}`' if chosen else f'none (the baseline, {BASELINE} orderings, stays)'}."
    if chosen and chosen.startswith("agree-"):  # picked on its lower bound: the upper one decides whether it ships
        upper = df[f"{chosen}_s_upper"].median() / base
        choice = (f"On its lower bound the rule picks `{chosen}`; its upper bound is {upper:.2f} of the baseline's "
                  "time. " + (f"Chosen: `{chosen}`." if upper < 1 else
                              f"Chosen: none (the baseline, {BASELINE} orderings, stays)."))
    write_results(args.out, df, cost_report(args, argv, "Adaptive column orderings", "orderings", lines, times,
                                            verdicts, "variant", choice, "choose_adaptive_ensemble.py"))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
