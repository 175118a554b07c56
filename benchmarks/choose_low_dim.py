r"""How tables of few columns get K and their partition, chosen on development data by the decision protocol.

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d dev \
        shapes --out docs/results/choice-low-dim

(the first choice, written with the six variants above the ``-w`` ones at commit 797db7b). Each table of the
development sets (``benchmarks/choose_checkpoint.py``'s ``prior``, ``noisy``, ``one-informative``, ``coarse``,
``low-d``, ``dev`` and ``shapes``, and ``mid-d`` below) is clustered as ``TabClustPFN`` does by default up to the
choice of K (preprocessing, 4 column orderings, every candidate refined by two Lloyd steps; the
K ranker's K). A table whose design (numeric columns and one-hot codes) has more than
``model.refinement.FULL_COVARIANCE_MAX_WIDTH`` columns keeps today's answer in every variant; on the others:

- ``default``: the ranker's K, three EM steps of the full-covariance mixture (the default before the BIC path; the
  baseline);
- ``converged``: the ranker's K, EM run to convergence (:func:`model.low_dim.converged_em`);
- ``bic-net``: K by BIC (:func:`model.low_dim.bic_choice`), each K's mixture run to convergence from the network's
  candidate at that K;
- ``bic-net-kmeans``: the same from the network's candidate and a k-means++ partition, the better likelihood kept;
- ``bic-net-kmeans-floor-0.01``: the same with covariance eigenvalues down to 0.01 (0.1 elsewhere);
- ``bic-kmeans``: from the k-means++ partition only (scikit-learn's GMM-BIC in this EM): what the network adds;
- ``bic-net-w2``, ``bic-net-w3``: ``bic-net`` on designs of at most 2 or 3 columns only, ``default`` on wider ones;
- ``bic-net-floor-0.01``: ``bic-net`` with eigenvalues down to 0.01; ``bic-net-floor-fine``,
  ``bic-net-kmeans-floor-fine`` and ``bic-kmeans-floor-fine``: down to 0.01 only where every design column has many
  values (:func:`model.low_dim.resolution_floor`; ``bic-kmeans-floor-fine`` is the shipped path, which runs no
  network; ``bic-net-floor-fine`` was until 2026-12-03); ``bic-kmeans3-floor-fine``: from three k-means++ partitions
  (seeds 0-2), the likeliest converged mixture kept; ``icl-kmeans-floor-fine``: the shipped path with K by ICL
  (BIC plus twice the posteriors' entropy, :func:`model.low_dim.bic_choice`) instead of BIC;
  ``aic3-kmeans-floor-fine``: with K by AIC3 (:data:`model.low_dim.PENALTIES`); ``aic3-fine-kmeans-floor-fine``:
  by AIC3 where every design column has many values (:func:`model.low_dim.fine_columns`), else by BIC;
- ``bic-fine-else-ranker``, ``bic-else-ranker-on-levels``, ``bic-else-ranker-on-4-7-levels``: the shipped path,
  but ``default`` (the ranker's K) on designs with a column of at most 20 values (one-hot codes included), of 3-20
  values (codes not), or of 4-7 values (rating scales);
- ``bic-net-floor-fine-w6``, ``bic-net-floor-fine-w8``: the shipped path on designs of up to 6 or 8 columns too,
  today's answer (the diagonal mixture at the ranker's K) on wider ones; ``-w6-fine``, ``-w8-fine``: beyond 4
  columns only where every design column has many values (no one-hot codes, no column of few levels).

The ``mid-d`` set (200 tables of the prior with 4-6 columns; added 2026-11-30, with the ``-w`` variants, after the
first choice, ``bic-net`` on up to 4 columns, lost at D = 4 in the test regime ``regime-cluster-pfn.md``) holds the
4-column tables the other sets lack:

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --out docs/results/choice-low-dim-width

The floor (``--variants`` / ``--baseline``; 0.1 capped tight clusters' likelihood, so BIC merged them):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --variants bic-net bic-net-floor-0.01 \
        bic-net-floor-fine bic-net-kmeans-floor-fine --baseline bic-net --out docs/results/choice-low-dim-floor
    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        shapes --offset 2000 --variants bic-net bic-net-floor-fine --baseline bic-net \
        --out docs/results/choice-low-dim-floor-fresh

Wider designs (the shipped path, ``bic-net-floor-fine``, as the baseline; ``-w6-fine`` was proposed after ``-w6``
lost on low-d tables, whose designs of 5-6 columns are one-hot codes, so it is confirmed on a fresh draw):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --variants bic-net-floor-fine \
        bic-net-floor-fine-w6 bic-net-floor-fine-w6-fine bic-net-floor-fine-w8-fine --baseline bic-net-floor-fine \
        --out docs/results/choice-low-dim-wide
    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        shapes --offset 3000 --variants bic-net-floor-fine bic-net-floor-fine-w6-fine --baseline bic-net-floor-fine \
        --out docs/results/choice-low-dim-wide-fresh

Designs with columns of few levels sent to the ranker's K instead (the ``coarse-low-d`` set, the coarse prior at 2-4
columns, asked for by name):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        dev shapes coarse-low-d --variants bic-net-floor-fine bic-fine-else-ranker bic-else-ranker-on-levels \
        --baseline bic-net-floor-fine --out docs/results/choice-low-dim-levels

Rating scales alone (``-4-7-levels``, proposed after the two above; confirmed on a fresh draw or not shipped):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        dev shapes coarse-low-d --variants bic-net-floor-fine bic-else-ranker-on-4-7-levels \
        --baseline bic-net-floor-fine --out docs/results/choice-low-dim-likert
    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        shapes coarse-low-d --offset 4000 --variants bic-net-floor-fine bic-else-ranker-on-4-7-levels \
        --baseline bic-net-floor-fine --out docs/results/choice-low-dim-likert-fresh

k-means++ starts in place of the network's (what skipping the network on these tables would give):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        dev shapes coarse-low-d --variants bic-net-floor-fine bic-kmeans-floor-fine --baseline bic-net-floor-fine \
        --out docs/results/choice-low-dim-kmeans-starts
    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        shapes coarse-low-d --offset 5000 --variants bic-net-floor-fine bic-kmeans-floor-fine \
        --baseline bic-net-floor-fine --out docs/results/choice-low-dim-kmeans-starts-fresh

Three k-means++ starts per K against the shipped one:

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        dev shapes coarse-low-d --variants bic-kmeans-floor-fine bic-kmeans3-floor-fine \
        --baseline bic-kmeans-floor-fine --out docs/results/choice-low-dim-kmeans3

K by AIC3 (3 per parameter) instead of BIC on the shipped path (proposed after a probe of these sets showed BIC
below the labelled K on most 2-3-column prior tables; confirmed on a fresh draw or not shipped):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        dev shapes coarse-low-d --variants bic-kmeans-floor-fine aic3-kmeans-floor-fine \
        --baseline bic-kmeans-floor-fine --out docs/results/choice-low-dim-aic3
    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        shapes coarse-low-d --offset 24000 --variants bic-kmeans-floor-fine aic3-kmeans-floor-fine \
        --baseline bic-kmeans-floor-fine --out docs/results/choice-low-dim-aic3-fresh

AIC3 on fine-grained designs only (proposed after AIC3 split the lattice of a 4-column table of 1-5 scores, issue
28's case in ``tests/model/test_dequantize.py``; confirmed on a fresh draw or not shipped; it was not):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        dev shapes coarse-low-d --variants bic-kmeans-floor-fine aic3-kmeans-floor-fine aic3-fine-kmeans-floor-fine \
        --baseline bic-kmeans-floor-fine --out docs/results/choice-low-dim-aic3-fine
    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        shapes coarse-low-d --offset 27000 --variants bic-kmeans-floor-fine aic3-kmeans-floor-fine \
        aic3-fine-kmeans-floor-fine --baseline bic-kmeans-floor-fine --out docs/results/choice-low-dim-aic3-fine-fresh

Components that tile one cluster merged (:func:`model.low_dim.merge_tiles`; proposed after a probe of shapes
tables, where BIC cut crescents and rings into 6-10 components; ``-tiles`` on any design, ``-tiles-fine`` only where
every design column has many values, proposed after ``-tiles`` lost on the first fresh draw's coarse tables, so
confirmed on a second):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        dev shapes coarse-low-d --variants bic-kmeans-floor-fine bic-kmeans-floor-fine-tiles \
        bic-kmeans-floor-fine-tiles-fine --baseline bic-kmeans-floor-fine --out docs/results/choice-low-dim-tiles
    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        shapes coarse-low-d --offset 31000 --variants bic-kmeans-floor-fine bic-kmeans-floor-fine-tiles \
        bic-kmeans-floor-fine-tiles-fine --baseline bic-kmeans-floor-fine \
        --out docs/results/choice-low-dim-tiles-fresh
    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        shapes coarse-low-d --offset 32000 --variants bic-kmeans-floor-fine bic-kmeans-floor-fine-tiles-fine \
        --baseline bic-kmeans-floor-fine --out docs/results/choice-low-dim-tiles-fresh2

The first two merged touching blobs of the ``many-blobs`` set (7-10 Gaussian blobs in 2-3 columns, added after them);
stricter thresholds (``-strict``: rows' valley ratio >= 0.95, fill >= 0.1; proposed after its first draw, so judged
on two fresh ones too; other sets: its merges are a subset of ``-tiles-fine``'s, which moved none there):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set low-d mid-d dev shapes coarse-low-d many-blobs \
        --variants bic-kmeans-floor-fine bic-kmeans-floor-fine-tiles-fine bic-kmeans-floor-fine-tiles-fine-strict \
        --baseline bic-kmeans-floor-fine --out docs/results/choice-low-dim-tiles-blobs
    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set low-d mid-d shapes coarse-low-d many-blobs \
        --offset 31000 --variants bic-kmeans-floor-fine bic-kmeans-floor-fine-tiles-fine \
        bic-kmeans-floor-fine-tiles-fine-strict --baseline bic-kmeans-floor-fine \
        --out docs/results/choice-low-dim-tiles-blobs-fresh

and the same at ``--offset 32000`` (``choice-low-dim-tiles-blobs-fresh2``).

Qualifying pairs come in chains on the shapes' tiles and alone between blobs (``benchmarks/tile_pairs.py``,
``docs/results/tile-pairs.md``, first draws); so the first thresholds again, merging only where at least 3 pairs
qualify (``-chain3``; proposed after the first draw, judged against ``-strict`` on it and two fresh ones), and, as a
check added after the choice, on the ``many-ellipses`` set (7-10 Gaussian clusters of random covariance):

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set prior noisy one-informative coarse low-d mid-d \
        dev shapes coarse-low-d many-blobs --variants bic-kmeans-floor-fine bic-kmeans-floor-fine-tiles-fine-strict \
        bic-kmeans-floor-fine-tiles-fine-chain3 --baseline bic-kmeans-floor-fine-tiles-fine-strict \
        --out docs/results/choice-low-dim-tiles-chain

then without ``dev`` at ``--offset 33000`` and ``34000`` (``-chain-fresh``, ``-chain-fresh2``), and ``--set
many-ellipses`` at ``--offset 0``, ``33000`` and ``34000`` (``-chain-ellipses``, ``-fresh``, ``-fresh2``). Looser
thresholds with the chain rule, four on the first draw, the best of them on two fresh ones:

    PYTHONPATH=. .venv/bin/python benchmarks/choose_low_dim.py --set low-d mid-d shapes coarse-low-d many-blobs \
        many-ellipses --variants bic-kmeans-floor-fine-tiles-fine-chain3 bic-kmeans-floor-fine-tiles-fine-chain3-r80 \
        bic-kmeans-floor-fine-tiles-fine-chain3-r75 bic-kmeans-floor-fine-tiles-fine-chain3-f03 \
        bic-kmeans-floor-fine-tiles-fine-chain3-r80-f03 --baseline bic-kmeans-floor-fine-tiles-fine-chain3 \
        --out docs/results/choice-low-dim-tiles-looser

then ``-chain3`` against ``-chain3-r80-f03`` on every set but ``dev`` at ``--offset 33000`` and ``34000``
(``-looser-fresh``, ``-looser-fresh2``).

Per set each variant against the baseline (``default`` unless ``--baseline``) table by table: paired mean ARI
difference +- standard error, tables better / worse, and the mean |K^ - K|. The protocol (docs/DESIGN.md): a
variant qualifies when it gains beyond two standard errors on a set and loses beyond one on none; of those that
qualify the one with the largest mean gain over the sets is chosen. ``--offset N`` draws the synthetic sets afresh
to confirm a choice. Writes ``OUT.md`` and ``OUT.csv`` (one row per table: each variant's ARI, K and milliseconds).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

BASELINE = "default"
#: variant -> (the starts: "net", "kmeans" (one k-means++ partition), "kmeans3" (three, seeds 0-2; EM keeps the
#: likeliest) or several; the eigenvalue floor, "fine": model.low_dim.resolution_floor)
BIC_VARIANTS = {
    "bic-net": (("net",), 0.1),
    "bic-net-kmeans": (("net", "kmeans"), 0.1),
    "bic-net-kmeans-floor-0.01": (("net", "kmeans"), 0.01),
    "bic-kmeans": (("kmeans",), 0.1),
    "bic-net-floor-0.01": (("net",), 0.01),
    "bic-net-floor-fine": (("net",), "fine"),
    "bic-net-kmeans-floor-fine": (("net", "kmeans"), "fine"),
    "bic-kmeans-floor-fine": (("kmeans",), "fine"),
    "bic-kmeans3-floor-fine": (("kmeans3",), "fine"),
    "icl-kmeans-floor-fine": (("kmeans",), "fine"),
    "aic3-kmeans-floor-fine": (("kmeans",), "fine"),
    "aic3-fine-kmeans-floor-fine": (("kmeans",), "fine"),
}
#: variant -> the widest design it takes the BIC path on (``bic-net`` with a narrower bound)
WIDTH_VARIANTS = {"bic-net-w2": 2, "bic-net-w3": 3}
#: variant -> (the widest design it takes the shipped BIC path (``bic-net-floor-fine``) on, beyond
#: ``FULL_COVARIANCE_MAX_WIDTH``; whether designs wider than that must have only fine-grained columns,
#: :func:`model.low_dim.fine_columns`); other designs keep today's answer (the diagonal mixture at the ranker's K)
WIDE_VARIANTS = {"bic-net-floor-fine-w6": (6, False), "bic-net-floor-fine-w8": (8, False),
                 "bic-net-floor-fine-w6-fine": (6, True), "bic-net-floor-fine-w8-fine": (8, True)}
#: variant -> the distinct values (lo, hi) of a column that sends a design of at most ``FULL_COVARIANCE_MAX_WIDTH``
#: columns to ``default`` (the ranker's K) instead of the shipped BIC path: any of <= COARSE_LEVELS (20) values
#: (one-hot codes too); 3..20 (ordinal levels, scores, counts; not 0/1 codes); 4..7 (rating scales: proposed
#: after the first two, where the gain of the first sat on such columns)
ROUTE_VARIANTS = {"bic-fine-else-ranker": (1, 20), "bic-else-ranker-on-levels": (3, 20),
                  "bic-else-ranker-on-4-7-levels": (4, 7)}
#: variant -> (where the path without merging (``bic-kmeans-floor-fine``) then merges components that tile one
#: cluster, :data:`model.low_dim.MERGES`: "any" design, or only a "fine" one; the thresholds of
#: :func:`model.tiles.tile_groups`: 0.85 / 0.05 first, 0.95 / 0.1 (``-strict``) after those merged touching blobs,
#: 0.85 / 0.05 again where at least 3 pairs qualify (``-chain3``) after those pairs were seen to come in chains on
#: shapes and alone between blobs; then looser ones with the chain rule, 0.80 / 0.03 (``-chain3-r80-f03``) shipped)
TILE_VARIANTS = {"bic-kmeans-floor-fine-tiles": ("any", {"min_ratio": 0.85, "min_fill": 0.05, "min_pairs": 1}),
                 "bic-kmeans-floor-fine-tiles-fine": ("fine", {"min_ratio": 0.85, "min_fill": 0.05, "min_pairs": 1}),
                 "bic-kmeans-floor-fine-tiles-fine-strict": ("fine", {"min_ratio": 0.95, "min_fill": 0.1,
                                                                       "min_pairs": 1}),
                 "bic-kmeans-floor-fine-tiles-fine-chain3": ("fine", {"min_ratio": 0.85, "min_fill": 0.05,
                                                                       "min_pairs": 3}),
                 **{f"bic-kmeans-floor-fine-tiles-fine-chain3{name}": ("fine", {"min_ratio": ratio, "min_fill": fill,
                                                                                 "min_pairs": 3})
                    for name, ratio, fill in (("-r80", 0.8, 0.05), ("-r75", 0.75, 0.05), ("-f03", 0.85, 0.03),
                                              ("-r80-f03", 0.8, 0.03))}}
#: the variants of the first choice (``--variants``' default); the later ones are asked for by name
VARIANTS = (BASELINE, "converged", *list(BIC_VARIANTS)[:4], *WIDTH_VARIANTS)
ALL_VARIANTS = (BASELINE, "converged", *BIC_VARIANTS, *WIDTH_VARIANTS, *WIDE_VARIANTS, *ROUTE_VARIANTS,
                *TILE_VARIANTS)
#: the development sets: the estimator-level choices' seven and ``mid-d``
SIZES = {"prior": 400, "noisy": 200, "one-informative": 200, "coarse": 200, "low-d": 200, "mid-d": 200, "dev": 23,
         "shapes": 54, "coarse-low-d": 200, "many-blobs": 100, "many-ellipses": 100}
#: ``--set``'s default: every set but ``coarse-low-d`` (added 2026-12-03), ``many-blobs`` and ``many-ellipses``
#: (2026-12-07), asked for by name
DEFAULT_SETS = [name for name in SIZES if name not in ("coarse-low-d", "many-blobs", "many-ellipses")]


def variant_answer(name: str, X: np.ndarray, candidates: np.ndarray, k_hi: int, k: int) -> tuple[np.ndarray, int]:
    """(labels, K) of variant ``name`` on the design rows ``X`` given the network's Lloyd-refined ``candidates``
    (K = 2..k_hi) and the ranker's ``k``."""
    from model.low_dim import bic_choice, converged_em, fine_columns, kmeans_start, merged_where, resolution_floor
    from model.refinement import full_em

    if name == BASELINE:
        return full_em(X, candidates[k - 2], k)[0], k
    if name == "converged":
        return converged_em(X, candidates[k - 2], k)[0], k
    if name in WIDTH_VARIANTS:
        return variant_answer("bic-net" if X.shape[1] <= WIDTH_VARIANTS[name] else BASELINE, X, candidates, k_hi, k)
    if name in ROUTE_VARIANTS:
        return variant_answer(BASELINE if routed_to_ranker(name, X) else "bic-net-floor-fine", X, candidates, k_hi, k)
    if name in TILE_VARIANTS:
        choice = bic_choice(X, {kk: [kmeans_start(X, kk)] for kk in range(2, k_hi + 1)}, floor=resolution_floor(X))
        merge, thresholds = TILE_VARIANTS[name]
        choice = merged_where(X, choice, merge, **thresholds)
        return choice.labels, choice.k
    if name in WIDE_VARIANTS:
        if not wide_takes(name, X):
            raise ValueError(f"{name} does not take a design of {X.shape[1]} columns like this one")
        return variant_answer("bic-net-floor-fine", X, candidates, k_hi, k)
    if name in BIC_VARIANTS:
        kinds, floor = BIC_VARIANTS[name]
        seeds = (0,) if "kmeans" in kinds else (0, 1, 2) if "kmeans3" in kinds else ()
        starts = {kk: ([candidates[kk - 2]] if "net" in kinds else []) + [kmeans_start(X, kk, s) for s in seeds]
                  for kk in range(2, k_hi + 1)}
        criterion = name.split("-", 1)[0]
        if name.startswith("aic3-fine-") and not fine_columns(X).all():  # AIC3 on fine-grained designs only
            criterion = "bic"
        choice = bic_choice(X, starts, floor=resolution_floor(X) if floor == "fine" else floor, criterion=criterion)
        return choice.labels, choice.k
    raise ValueError(f"unknown variant {name!r}")


def routed_to_ranker(name: str, X: np.ndarray) -> bool:
    """Whether the route variant ``name`` sends the design rows ``X`` (n, P) to the ranker's K."""
    from model.low_dim import column_levels

    lo, hi = ROUTE_VARIANTS[name]
    levels = column_levels(X)
    return bool(((levels >= lo) & (levels <= hi)).any())


def wide_takes(name: str, X: np.ndarray) -> bool:
    """Whether the wide variant ``name`` takes the BIC path on the design rows ``X`` (n, P)."""
    from model.low_dim import fine_columns
    from model.refinement import FULL_COVARIANCE_MAX_WIDTH

    widest, fine_only = WIDE_VARIANTS[name]
    p = X.shape[1]
    return p <= FULL_COVARIANCE_MAX_WIDTH or (p <= widest and (not fine_only or bool(fine_columns(X).all())))


def _work(args: tuple[str, str, int, int, int, int, tuple[str, ...]]) -> list[dict]:
    from sklearn.metrics import adjusted_rand_score

    from benchmarks.choose_mixture_refinement import ranked_tables
    from model.refinement import FULL_COVARIANCE_MAX_WIDTH, mixture_refinement

    *where, variants = args
    rows = []
    for name, y, table, k in ranked_tables(*where):
        X, width = table.X, table.X.shape[1]
        row = {"set": args[1], "table": name, "K": int(len(np.unique(y))), "width": width}
        few = width <= FULL_COVARIANCE_MAX_WIDTH  # else a variant keeps today's answer, unless a wide one takes it
        today = None if few else mixture_refinement(X, table.candidates[k - 2], k, table.mixtures[k - 2])[0]
        for v in variants:
            t0 = time.perf_counter()
            own = few or (v in WIDE_VARIANTS and wide_takes(v, X))
            labels, kv = variant_answer(v, X, table.candidates, table.k_hi, k) if own else (today, k)
            row[v + "_ms"] = 1e3 * (time.perf_counter() - t0)
            row[v], row[v + "_k"] = float(adjusted_rand_score(y, labels)), int(kv)
        rows.append(row)
    return rows


def main(argv=None) -> None:
    from benchmarks.choose_k_rule import estimator_variant_rows, table, verdict, write_results
    from model.refinement import FULL_COVARIANCE_MAX_WIDTH
    from pipeline.evaluation.protocol import RULE
    from pipeline.evaluation.report import PROVENANCE_PREFIXES, checkpoint_line, machine_lines

    own = argparse.ArgumentParser(add_help=False)
    own.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(ALL_VARIANTS),
                     help="default: those of the first choice")
    own.add_argument("--baseline", default=BASELINE, choices=list(ALL_VARIANTS), help="one of the variants")
    given = sys.argv[1:] if argv is None else list(argv)
    if (opts := own.parse_known_args(given)[0]).baseline not in opts.variants:
        own.error(f"--baseline {opts.baseline} must be one of --variants")
    args, df = estimator_variant_rows(_work, __doc__, "docs/results/choice-low-dim", argv, sizes=SIZES,
                                      parents=(own,), passed=lambda a: (tuple(a.variants),),
                                      default_sets=DEFAULT_SETS)
    variants, baseline = list(args.variants), args.baseline
    lines, diffs = table(df, variants, baseline)
    chosen, verdicts = verdict(diffs, baseline)
    widest = max([FULL_COVARIANCE_MAX_WIDTH, *(WIDE_VARIANTS[v][0] for v in variants if v in WIDE_VARIANTS)])
    few = df[df["width"] <= widest]
    counts = ", ".join(f"{s} {int((part['width'] <= widest).sum())} of {len(part)}"
                       for s, part in df.groupby("set", sort=False))
    times = ", ".join(f"`{v}` {few[v + '_ms'].median():.1f}" for v in variants) if len(few) else "none"
    out = ["# K and the partition of tables of few columns (development sets)", "",
           *[line.replace("| rule |", "| variant |") for line in lines], "",
           f"Tables of at most {widest} design columns (the variants differ only there): "
           f"{counts}.", "",
           f"Median time of the variant's step on those tables (ms): {times}.", "",
           f"Protocol: {RULE}; the qualifying variant with the largest mean gain over the sets is chosen.", "",
           *[v.replace("rule", "variant") for v in verdicts], "",
           f"Chosen: {'`' + chosen + '`' if chosen else f'none (the baseline `{baseline}` stays)'}.", "",
           PROVENANCE_PREFIXES["command"] + "`python benchmarks/choose_low_dim.py " + " ".join(given) + "`",
           checkpoint_line(args.checkpoint), *machine_lines()]
    write_results(args.out, df, out)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
