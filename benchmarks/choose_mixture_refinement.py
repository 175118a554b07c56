r"""Whether the chosen partition is refined again by a Gaussian mixture (``TabClustPFN(refine="gmm")``), chosen on
development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_mixture_refinement.py --out docs/results/choice-mixture-refine

Each table of the development sets of ``benchmarks/choose_checkpoint.py`` (``prior``: 400 held-out tasks of the
paper's prior, ``noisy``: 200 with noise columns and contaminated rows, ``one-informative``: 200 with one informative
column among noise columns, ``low-d``: 200 with 2 or 3 columns, ``dev``: the 23 tables of
``../shared/benchmarks/dev``) is clustered once as
``TabClustPFN`` does by default (preprocessing, 4 column orderings, every candidate refined by two Lloyd steps, K by
the checkpoint's K ranker); then every variant turns that K's candidate into the answer:

- ``kmeans``: the candidate as it is (``refine="kmeans"``, the baseline);
- ``shared-10-steps``: :func:`model.refinement.diagonal_em`, 10 EM steps of K Gaussians sharing one diagonal
  covariance, variances >= 0.1: k-means in a metric that weighs each column by its within-cluster precision, so
  pure-noise columns count less;
- ``shared-floor-0.3``: the same with variances >= 0.3 (a column weighted at most 3.3x as k-means weighs it);
- ``shared-3-steps``: the same as the first with 3 EM steps;
- ``shared-equal-weights``: ``shared-floor-0.3`` with equal mixing proportions (k-means in the rescaled metric);
- ``own-diagonal``: 3 EM steps of a mixture in which each cluster has its own diagonal covariance (>= 0.1).

Each variant's mixing proportions are estimated except where named.

The ``low-d`` set was added (2026-11-29) after the first choice (``shared-floor-0.3``) lost to k-means on the
2-D tables of the test regimes (``regime-*.md``); ``shared-equal-weights`` with it.

Full covariances (:func:`model.refinement.full_em`, 3 EM steps, eigenvalues >= 0.1), judged against
``own-diagonal`` on all seven sets (``coarse``: 200 prior tables with coarsely measured columns, ``shapes``:
``benchmarks/shapes.py``'s tables) and confirmed on a fresh draw (``--offset``)::

    PYTHONPATH=. .venv/bin/python benchmarks/choose_mixture_refinement.py --set prior noisy one-informative \
        coarse low-d dev shapes --variants own-diagonal kmeans own-full own-full-p2 own-full-p4 own-full-p8 \
        own-full-rows-2 own-full-rows-10 --baseline own-diagonal --out docs/results/choice-full-covariance

- ``own-full``: every table; ``own-full-pW``: tables whose design has at most W columns, ``own-diagonal`` beyond;
- ``own-full-rows-R``: tables with at least R rows per covariance parameter per cluster, ``own-diagonal`` else.

The diagonal mixture's variance floor beyond 4 columns (``own-full-p4`` is today's ``refine="gmm"``)::

    PYTHONPATH=. .venv/bin/python benchmarks/choose_mixture_refinement.py --set prior noisy one-informative \
        coarse dev --variants own-full-p4 own-full-p4-floor-0.01 own-full-p4-floor-fine --baseline own-full-p4 \
        --out docs/results/choice-diagonal-floor

- ``own-full-p4-floor-0.01``: variances >= 0.01; ``own-full-p4-floor-fine``: >= 0.01 on columns of many values,
  0.1 on the others (:func:`column_floors`).

Higher floors (``--variants own-full-p4 own-full-p4-floor-0.2 own-full-p4-floor-0.3``, ``--set prior noisy
one-informative coarse dev``, ``--out docs/results/choice-diagonal-floor-high``): variances >= 0.2 / 0.3.

A second start beyond 4 columns, the likelier mixture kept::

    PYTHONPATH=. .venv/bin/python benchmarks/choose_mixture_refinement.py --set prior noisy one-informative \
        coarse dev --variants own-full-p4 own-full-p4-kmeans-start --baseline own-full-p4 \
        --out docs/results/choice-mixture-two-starts

- ``own-full-p4-kmeans-start``: the diagonal mixture (3 EM steps) from the ranker's candidate and from a k-means++
  partition at its K, the one of higher likelihood kept.

More EM steps of the diagonal mixture beyond 4 columns::

    PYTHONPATH=. .venv/bin/python benchmarks/choose_mixture_refinement.py --set prior noisy one-informative \
        coarse dev --variants own-full-p4 own-full-p4-10-steps own-full-p4-30-steps --baseline own-full-p4 \
        --out docs/results/choice-mixture-steps

- ``own-full-p4-10-steps`` / ``-30-steps``: 10 / 30 EM steps instead of 3, toward the likelihood's maximum.

They lost on noisy, one-informative and coarse, so fewer steps were measured next (``--variants own-full-p4
own-full-p4-1-step own-full-p4-2-steps``, ``--out docs/results/choice-mixture-fewer-steps``): 1 / 2 EM steps.
They gained there and lost on prior; then a step count per table (``--variants own-full-p4 own-full-p4-trust-0.8
own-full-p4-trust-0.9 own-full-p4-trust-0.95``, ``--out docs/results/choice-mixture-trust``):

- ``own-full-p4-trust-T``: up to 10 EM steps, the last whose partition keeps an ARI >= T with the ranker's
  candidate it started from (at least one step): a mixture trusted only near the network's answer.

The covariance model chosen per table by BIC, as mclust does (``--variants own-full-p4 own-full-p4-bic-shared``,
``--out docs/results/choice-mixture-bic-shared``):

- ``own-full-p4-bic-shared``: beyond 4 columns ``own-diagonal`` or ``shared-3-steps`` (3 EM steps each), the one of
  lower BIC (:func:`diagonal_bic`).

Fewer EM steps only where most columns look like noise to the candidate (``--variants own-full-p4
own-full-p4-noise-1-step own-full-p4-noise-2-steps``, ``--out docs/results/choice-mixture-noise-steps``; then,
shaped by that run, the stricter gate ``own-full-p4-noise-{1-step,2-steps}-2-3`` to ``choice-mixture-noise-steps-2-3``
and the one that qualified there, on a fresh draw: ``--set prior noisy one-informative coarse --offset 6000 --variants
own-full-p4 own-full-p4-noise-2-steps-2-3``, ``--out docs/results/choice-mixture-noise-steps-fresh``):

- ``own-full-p4-noise-S-step(s)[-2-3]``: S EM steps instead of 3 where more than half (2/3) of the columns have a
  between-cluster share of variance below 0.05 under the ranker's candidate (:func:`between_share`).

K is the same for all of them. Per set each variant against ``kmeans`` table by table: paired mean ARI difference
+- standard error, tables better / worse. The protocol (docs/DESIGN.md): a variant qualifies when it gains beyond two
standard errors on a set and loses beyond one on none; of those that qualify the one with the largest mean gain over
the sets (each weighted equally) is chosen. Writes ``OUT.md`` and ``OUT.csv`` (one row per table: each variant's ARI).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "low-d": 200, "dev": 23, "coarse": 200, "shapes": 54}
#: The sets and baseline of the first choice (``choice-mixture-refine.md``); ``--set``/``--baseline`` name others.
FIRST_SETS = ("prior", "noisy", "one-informative", "low-d", "dev")
BASELINE = "kmeans"
#: variant -> keyword arguments of model.refinement.diagonal_em (EM steps, variance floor, one covariance shared by
#: the clusters, mixing proportions estimated)
MIXTURES = {
    "shared-10-steps": dict(steps=10, floor=0.1, shared=True, mixing=True),
    "shared-floor-0.3": dict(steps=10, floor=0.3, shared=True, mixing=True),
    "shared-3-steps": dict(steps=3, floor=0.1, shared=True, mixing=True),
    "shared-equal-weights": dict(steps=10, floor=0.3, shared=True, mixing=False),
    "own-diagonal": dict(steps=3, floor=0.1, shared=False, mixing=True),
}
#: variant -> the largest design width P at which each cluster gets its own full covariance
#: (:func:`model.refinement.full_em`, 3 EM steps); wider tables keep ``own-diagonal``. None: every table.
FULL = {"own-full": None, "own-full-p2": 2, "own-full-p4": 4, "own-full-p8": 8}
#: variant -> full covariance where every cluster has at least this many rows per covariance parameter on average
#: (n / K >= ratio * P (P + 1) / 2), else ``own-diagonal``.
FULL_ROWS = {"own-full-rows-2": 2.0, "own-full-rows-10": 10.0}
#: variant -> ``own-full-p4`` (today's) with the diagonal mixture's variance floor beyond 4 columns (0.1 today): 0.01,
#: 0.2 or 0.3 in every column, or per column (``fine``: 0.01 on a column of more than ``model.low_dim.COARSE_LEVELS``
#: values, else 0.1)
DIAGONAL_FLOORS = {"own-full-p4-floor-0.01": 0.01, "own-full-p4-floor-fine": "fine", "own-full-p4-floor-0.2": 0.2,
                   "own-full-p4-floor-0.3": 0.3}
#: variant -> ``own-full-p4`` (today's) but beyond 4 columns the diagonal mixture also started from a k-means++
#: partition at the same K (:func:`model.low_dim.kmeans_start`), the likelier of the two kept
TWO_STARTS = ("own-full-p4-kmeans-start",)
#: variant -> ``own-full-p4`` (today's) with this many EM steps of the diagonal mixture beyond 4 columns (3 today)
DIAGONAL_STEPS = {"own-full-p4-1-step": 1, "own-full-p4-2-steps": 2, "own-full-p4-10-steps": 10,
                  "own-full-p4-30-steps": 30}
#: variant -> ``own-full-p4`` (today's) but beyond 4 columns up to ``TRUST_MAX_STEPS`` EM steps, stopping at the
#: last step whose partition keeps an ARI of at least this with the start (the ranker's candidate); at least one step
TRUST = {"own-full-p4-trust-0.8": 0.8, "own-full-p4-trust-0.9": 0.9, "own-full-p4-trust-0.95": 0.95}
TRUST_MAX_STEPS = 10
#: ``own-full-p4`` (today's) but beyond 4 columns the covariance model by BIC, as mclust chooses among its models:
#: ``own-diagonal`` (a diagonal covariance per cluster) or ``shared-3-steps`` (one diagonal shared by all clusters)
BIC_COVARIANCE = ("own-full-p4-bic-shared",)
#: variant -> (EM steps, fraction): ``own-full-p4`` (today's) but beyond 4 columns this many EM steps (not 3) where
#: most columns look like noise to the ranker's candidate: more than this fraction of them with a between-cluster
#: share of variance below ``NOISE_R2``
NOISE_STEPS = {"own-full-p4-noise-1-step": (1, 0.5), "own-full-p4-noise-2-steps": (2, 0.5),
               "own-full-p4-noise-1-step-2-3": (1, 2 / 3), "own-full-p4-noise-2-steps-2-3": (2, 2 / 3)}
NOISE_R2 = 0.05
FIRST_VARIANTS = ("kmeans", *MIXTURES)
#: the variants that change today's ``own-full-p4`` only beyond 4 columns (full covariances up to 4, as today)
BEYOND_FOUR = (*DIAGONAL_FLOORS, *TWO_STARTS, *DIAGONAL_STEPS, *TRUST, *BIC_COVARIANCE, *NOISE_STEPS)
VARIANTS = (*FIRST_VARIANTS, *FULL, *FULL_ROWS, *BEYOND_FOUR)


def between_share(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """(P,) each column's share of its variance between the clusters of ``labels`` (R^2 of the cluster means)."""
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    means = np.stack([np.bincount(inverse, weights=x) / counts for x in X.T], axis=1)  # (clusters, P)
    between = (counts[:, None] * (means - X.mean(0)) ** 2).sum(0)
    total = ((X - X.mean(0)) ** 2).sum(0)
    return np.where(total > 0, between / np.maximum(total, 1e-300), 0.0)


def diagonal_bic(X: np.ndarray, mixture, shared: bool) -> float:
    """BIC of a diagonal mixture (:class:`model.refinement.DiagonalMixture`) on ``X`` (n, P), up to a constant
    shared by every mixture on the same rows: -2 log-likelihood + parameters x log n, the parameters K P means,
    K - 1 proportions and K P variances (per cluster) or P (``shared``)."""
    n, p = X.shape
    k = len(mixture.log_weights)
    params = k * p + (k - 1) + (p if shared else k * p)
    return float(-2.0 * mixture.posterior(X)[1].sum() + params * np.log(n))


def column_floors(X: np.ndarray) -> np.ndarray:
    """Per column of ``X``: ``model.low_dim.FINE_FLOOR`` where it has more than ``COARSE_LEVELS`` distinct values,
    else ``model.refinement.VARIANCE_FLOOR``."""
    from model.low_dim import FINE_FLOOR, fine_columns
    from model.refinement import VARIANCE_FLOOR

    return np.where(fine_columns(X), FINE_FLOOR, VARIANCE_FLOOR)


def variant_labels(name: str, X: np.ndarray, candidate: np.ndarray, k: int) -> np.ndarray:
    from model.refinement import diagonal_em, full_em

    def own_diagonal(start: np.ndarray, **changes):  # ``own-diagonal``'s EM with some of its settings changed
        return diagonal_em(X, start, k, **{**MIXTURES["own-diagonal"], **changes})

    n, p = X.shape
    if name == "kmeans":
        return candidate
    if name in MIXTURES:
        return diagonal_em(X, candidate, k, **MIXTURES[name])[0]
    if name in BEYOND_FOUR and p <= FULL["own-full-p4"]:
        return full_em(X, candidate, k)[0]
    if name in DIAGONAL_FLOORS:
        floor = DIAGONAL_FLOORS[name]
        return own_diagonal(candidate, floor=column_floors(X) if floor == "fine" else floor)[0]
    if name in DIAGONAL_STEPS:
        return own_diagonal(candidate, steps=DIAGONAL_STEPS[name])[0]
    if name in TRUST:
        from sklearn.metrics import adjusted_rand_score

        kept = None
        for steps in range(1, TRUST_MAX_STEPS + 1):
            labels = own_diagonal(candidate, steps=steps)[0]
            if kept is not None and adjusted_rand_score(candidate, labels) < TRUST[name]:
                break
            kept = labels
        return kept
    if name in BIC_COVARIANCE:
        fits = [(diagonal_em(X, candidate, k, **MIXTURES[m]), MIXTURES[m]["shared"])
                for m in ("own-diagonal", "shared-3-steps")]
        return min(fits, key=lambda fit: diagonal_bic(X, fit[0][1], fit[1]))[0][0]
    if name in NOISE_STEPS:
        few_steps, fraction = NOISE_STEPS[name]
        noisy = np.mean(between_share(X, candidate) < NOISE_R2) > fraction
        return own_diagonal(candidate, **({"steps": few_steps} if noisy else {}))[0]
    if name in TWO_STARTS:
        from model.low_dim import kmeans_start

        fits = [own_diagonal(start) for start in (candidate, kmeans_start(X, k))]
        return max(fits, key=lambda fit: float(fit[1].posterior(X)[1].sum()))[0]
    if name in FULL or name in FULL_ROWS:
        full = (p <= FULL[name] if FULL.get(name) is not None else name in FULL or
                n / k >= FULL_ROWS[name] * p * (p + 1) / 2)
        return full_em(X, candidate, k)[0] if full else variant_labels("own-diagonal", X, candidate, k)
    raise ValueError(f"unknown variant {name!r}")


def ranked_tables(checkpoint: str, which: str, n: int, start: int, stop: int, offset: int):
    """Tables start..stop-1 of the first ``n`` of development set ``which`` (from validation seed ``offset``), each
    clustered as ``TabClustPFN`` does by default up to K -> (name, labels, its
    :class:`pipeline.k_ranker_fit.TableCandidates`, the checkpoint's K ranker's K) each, one worker thread."""
    import torch

    from benchmarks.choose_checkpoint import tables
    from model.checkpoint import load_checkpoint
    from pipeline.k_ranker_fit import table_candidates

    torch.set_num_threads(1)
    net = load_checkpoint(checkpoint)[0].eval()
    if net.k_ranker is None:
        raise SystemExit(f"error: {checkpoint} carries no K ranker: the variants start from the ranker's choice")
    for i, (name, frame, y) in enumerate(tables(which, n, offset)):
        if not start <= i < stop:
            continue
        with torch.no_grad():
            table = table_candidates(net, frame, len(y), stages=(net.cfg.k_ranker_candidates,))
            k, _ = net.k_ranker.choose(table.features[net.cfg.k_ranker_candidates])
        yield name, y, table, k


def _work(args: tuple[str, str, int, int, int, int, tuple[str, ...]]) -> list[dict]:
    *where, variants = args
    from sklearn.metrics import adjusted_rand_score

    rows = []
    for name, y, table, k in ranked_tables(*where):
        X, candidates = table.X, table.candidates
        row = {"set": where[1], "table": name, "K": int(len(np.unique(y))), "k": k}
        for v in variants:
            t0 = time.perf_counter()
            labels = variant_labels(v, X, candidates[k - 2], k)
            row[v + "_ms"] = 1e3 * (time.perf_counter() - t0)
            row[v] = float(adjusted_rand_score(y, labels))
        rows.append(row)
    return rows


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import rows_per_set, table, verdict, write_results
    from model.estimator import default_checkpoint_path
    from pipeline.evaluation.protocol import RULE
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(default_checkpoint_path()), help="a checkpoint with a K ranker")
    ap.add_argument("--set", nargs="+", default=list(FIRST_SETS), choices=list(SIZES),
                    help=f"default: {', '.join(FIRST_SETS)}")
    ap.add_argument("--variants", nargs="+", default=list(FIRST_VARIANTS), choices=list(VARIANTS),
                    help=f"default: {', '.join(FIRST_VARIANTS)}")
    ap.add_argument("--baseline", default=BASELINE, choices=list(VARIANTS), help="one of the variants")
    ap.add_argument("--offset", type=int, default=0,
                    help="the synthetic sets' tables from this validation seed on: a fresh draw to confirm a choice")
    ap.add_argument("--tasks", type=int, default=None, help="at most this many tables per set (default: all)")
    ap.add_argument("--workers", type=int, default=2, help="processes (1: in this one)")
    ap.add_argument("--out", default="docs/results/choice-mixture-refine")
    args = ap.parse_args(argv)
    if args.baseline not in args.variants:
        ap.error(f"--baseline {args.baseline} must be one of --variants")
    if args.offset and "dev" in args.set:
        ap.error("--offset draws fresh synthetic tables; the dev suite has none: leave dev out of --set")
    variants = list(args.variants)
    df = pd.DataFrame(rows_per_set(_work, args.checkpoint, args.set, SIZES, args.tasks, args.workers,
                                   extra=(args.offset, tuple(variants))))
    for v in variants:  # table() reports the mean |K^ - K|: K is the ranker's for every variant
        df[v + "_k"] = df["k"]
    lines, diffs = table(df, variants, args.baseline)
    chosen, verdicts = verdict(diffs, args.baseline)
    times = ", ".join(f"`{v}` {df[v + '_ms'].median():.1f}" for v in variants)
    given = sys.argv[1:] if argv is None else list(argv)
    out = ["# Refining the chosen partition by a Gaussian mixture (development sets, K by the K ranker)", "",
           *[line.replace("| rule |", "| variant |") for line in lines], "",
           f"Median time of the variant's step per table (ms): {times}.", "",
           f"Protocol: {RULE}; the qualifying variant with the largest mean gain over the sets is chosen.", "",
           *[v.replace("rule", "variant") for v in verdicts], "",
           f"Chosen: {'`' + chosen + '`' if chosen else f'none (the baseline `{args.baseline}` stays)'}.", "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_mixture_refinement.py " + " ".join(given) + "`",
           checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df.drop(columns=[v + "_k" for v in variants]), out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
