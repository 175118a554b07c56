"""What a table's candidate partitions look like in its own space: per-K features for a learned choice of K.

CIN reads only the network's soft partitions (their Gram fingerprints), never the rows: two crisp partitions of
three round blobs, into 3 and into 4, can look alike to it. These features describe each candidate partition
(K = 2..K_max, after the test-time refinement) against the rows it partitions, in the design space the refinement
uses (z-normalised numeric columns, categorical codes one-hot), together with what the network said of it:

* ``log_post``: log of CIN's posterior p(K | X) (ensemble average);
* ``exp_ari``: the candidate's expected ARI under the posterior (:func:`model.selection.select_k`);
* ``silhouette``: the mean silhouette of the candidate on at most ``SILHOUETTE_ROWS`` rows;
* ``log_within``: log of the within-cluster sum of squares over the total (0 for one cluster);
* ``drop``: how much ``log_within`` fell from K - 1 to K (from one cluster for K = 2);
* ``log_ch``: log of the Calinski-Harabasz ratio;
* ``smallest``: the smallest cluster's share of the rows, times K (1: equal sizes);
* ``moved``: the share of rows the refinement moved away from the network's argmax;
* ``crisp``: the network's mean largest membership probability at K;
* ``mix_ll``: the mean log-likelihood per row and table column of the partition that a diagonal mixture fits from
  the candidate (:func:`model.refinement.diagonal_em`, ``refine="gmm"``'s beyond 4 design columns), under a
  mixture of its clusters
  (:func:`partition_log_likelihood`: per cluster a Gaussian with a diagonal covariance on the numeric columns and
  a categorical distribution on each categorical column; a Gaussian on one-hot codes would reward any split along
  a category);
* ``mix_bic``: the same less the BIC's penalty (half the parameters times log N, over N and the columns): a
  candidate that splits pure-noise columns gains little likelihood for its parameters, one that separates a single
  informative column among them gains much;
* ``agree``: how stable the network's partition at K is across the column orderings of the ensemble, the mean ARI
  between every two members' partitions (their argmax) at K (1 with fewer than two members): a K the table holds
  comes out alike in every ordering, a split it does not hold falls differently in each (stability-based choice of
  K, as Ben-Hur et al. 2002 and Lange et al. 2004 resample for it).

A ranker reads one of the ``FEATURE_SETS`` (its checkpoint says which): set 1 is the first nine features, set 2
those and the two mixture features, set 3 the first nine and ``agree``; and it describes the candidates of one
``CANDIDATE_STAGES``: the Lloyd-refined partitions (``"kmeans"``) or the diagonal mixtures ``refine="gmm"`` fits
from them (``"gmm"``: what the default returns at each K).

Plain numpy: :mod:`model.k_ranker` scores them, :mod:`model.estimator` computes them per fit.
"""

from __future__ import annotations

import numpy as np

from model.refinement import REFINED_CANDIDATES, VARIANCE_FLOOR, DiagonalMixture, diagonal_em, numeric_columns

#: Rows the silhouette is computed on (a fixed subsample of larger tables): O(rows^2) distances.
SILHOUETTE_ROWS = 400
FEATURES = ("log_post", "exp_ari", "silhouette", "log_within", "drop", "log_ch", "smallest", "moved", "crisp",
            "mix_ll", "mix_bic", "agree")
#: The features a ranker of each feature set reads (``ModelConfig.k_ranker_features``).
FEATURE_SETS: dict[int, tuple[str, ...]] = {1: FEATURES[:9], 2: FEATURES[:11], 3: (*FEATURES[:9], "agree")}
#: Which partitions a ranker's features describe (``ModelConfig.k_ranker_candidates``): those the refine of that
#: name returns at each K.
CANDIDATE_STAGES: tuple[str, ...] = REFINED_CANDIDATES


def features_key(stage: str) -> str:
    """The key of a stage's features in the ranker's records (``pipeline.k_ranker_fit.table_record``)."""
    return "features" if stage == "kmeans" else f"features_{stage}"


def silhouettes(distances: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean silhouette of each partition in ``labels`` (C, n) over a precomputed (n, n) distance matrix; as
    ``sklearn.metrics.silhouette_score`` (a row alone in its cluster scores 0), and 0 for a single cluster."""
    n = distances.shape[0]
    rows = np.arange(n)
    codes, offsets = [], [0]
    for lab in labels:
        lab = np.unique(lab, return_inverse=True)[1]
        codes.append(lab + offsets[-1])
        offsets.append(offsets[-1] + int(lab.max()) + 1)
    onehot = np.zeros((n, offsets[-1]))
    for code in codes:
        onehot[rows, code] = 1.0
    sums_all = distances @ onehot  # (n, total clusters): each row's total distance to every cluster, in one product
    counts_all = onehot.sum(0)
    out = np.zeros(labels.shape[0])
    for c, code in enumerate(codes):
        lo, hi = offsets[c], offsets[c + 1]
        if hi - lo < 2:
            continue
        lab, sums, counts = code - lo, sums_all[:, lo:hi], counts_all[lo:hi]
        own = counts[lab]
        a = sums[rows, lab] / np.maximum(own - 1, 1)
        other = sums / counts[None]
        other[rows, lab] = np.inf
        b = other.min(1)
        out[c] = np.where(own > 1, (b - a) / np.maximum(np.maximum(a, b), 1e-300), 0.0).mean()
    return out


def within_ratios(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Within-cluster sum of squares over the total, per partition in ``labels`` (C, N)."""
    total = max(float(((X - X.mean(0)) ** 2).sum()), 1e-300)
    out = np.ones(labels.shape[0])
    sq = (X**2).sum(1)
    for c, lab in enumerate(labels):
        _, lab = np.unique(lab, return_inverse=True)
        counts = np.bincount(lab)
        onehot = np.zeros((len(counts), X.shape[0]))
        onehot[lab, np.arange(X.shape[0])] = 1.0
        sums = onehot @ X  # (k, P): each cluster's sum of rows
        within = sq.sum() - float(((sums**2).sum(1) / counts).sum())
        out[c] = max(within, 0.0) / total
    return out


#: Pseudo-count per category in a cluster's categorical distribution (:func:`partition_log_likelihood`).
CATEGORY_PSEUDOCOUNT = 0.5


def partition_log_likelihood(X: np.ndarray, labels: np.ndarray, k: int, blocks: list[tuple[int, int]] = ()
                             ) -> tuple[float, int]:
    """Log-likelihood of the rows ``X`` (N, P) in the design space under a mixture fitted to the hard partition
    ``labels`` (values in 0..k-1), and its number of free parameters.

    Each cluster with rows is a component, weighted by its share of the rows: on the numeric design columns a
    Gaussian with the cluster's mean and variances (at least ``VARIANCE_FLOOR``), on each categorical column (its
    one-hot ``blocks``, :func:`model.refinement.one_hot_blocks`) the cluster's category frequencies, smoothed by
    ``CATEGORY_PSEUDOCOUNT``. Parameters: per cluster 2 per numeric column and (levels - 1) per categorical one,
    and K - 1 weights."""
    n = X.shape[0]
    numeric = numeric_columns(X.shape[1], blocks)
    Xn = X[:, numeric]
    codes = [X[:, start:stop].argmax(1) for start, stop in blocks]
    joint = np.full((n, k), -np.inf)
    for c in range(k):
        members = labels == c
        size = int(members.sum())
        if size == 0:
            continue
        mean = Xn[members].mean(0)
        var = np.maximum(Xn[members].var(0), VARIANCE_FLOOR)
        col = np.log(size / n) - 0.5 * (((Xn - mean) ** 2 / var).sum(1) + np.log(2.0 * np.pi * var).sum())
        for (start, stop), code in zip(blocks, codes):
            counts = np.bincount(code[members], minlength=stop - start) + CATEGORY_PSEUDOCOUNT
            col = col + np.log(counts / counts.sum())[code]
        joint[:, c] = col
    top = joint.max(1, keepdims=True)
    total = float((top[:, 0] + np.log(np.exp(joint - top).sum(1))).sum())
    per_cluster = 2 * int(numeric.sum()) + sum(stop - start - 1 for start, stop in blocks)
    return total, k * per_cluster + k - 1


def member_agreement(member_probs: np.ndarray | None, c: int) -> np.ndarray:
    """``agree`` of candidates K = 2..c+1: the mean ARI between every two ensemble members' partitions (argmax of
    ``member_probs`` (M, K_max-1, N, K_max)) at each K -> (c,); ones with fewer than two members (or none given)."""
    if member_probs is None or member_probs.shape[0] < 2:
        return np.ones(c)
    from model.selection import pairwise_ari  # noqa: PLC0415  (as ranker_features imports select_k)

    labels = member_probs[:, :c].argmax(-1)  # (M, c, N)
    upper = np.triu_indices(labels.shape[0], 1)
    return np.array([pairwise_ari(labels[:, k])[upper].mean() for k in range(c)])


def candidate_mixtures(X: np.ndarray, candidates: np.ndarray, k_hi: int) -> list[tuple[np.ndarray, DiagonalMixture]]:
    """The diagonal mixture ``refine="gmm"`` fits from each candidate K = 2..k_hi: [(partition, mixture)]."""
    return [diagonal_em(X, candidates[c], c + 2) for c in range(k_hi - 1)]


def candidate_features(X: np.ndarray, candidates: np.ndarray, probs: np.ndarray, posterior: np.ndarray,
                       scores: np.ndarray, k_hi: int,
                       mixtures: list[tuple[np.ndarray, DiagonalMixture]] | None = None,
                       blocks: list[tuple[int, int]] = (), with_mixture: bool = True,
                       member_probs: np.ndarray | None = None) -> np.ndarray:
    """Features (``FEATURES``) of candidates K = 2..k_hi -> (k_hi - 1, len(FEATURES)).

    X : (N, P) the rows in the design space; candidates : (>= k_hi - 1, N) hard partitions for K = 2..;
    probs : (K_max-1, N, K_max) the network's soft partitions; posterior : (K_max-1,) p(K | X);
    scores : (K_max-1,) the expected ARI of each candidate (``select_k``'s scores); mixtures : the candidates'
    :func:`candidate_mixtures` where already fitted (else fitted here); blocks : the design columns of each
    categorical column's one-hot codes (:func:`model.refinement.one_hot_blocks`; none: every column numeric);
    with_mixture : False leaves ``mix_ll`` and ``mix_bic`` NaN and fits no mixture (for a ranker of set 1 or 3);
    member_probs : (M, K_max-1, N, K_max) each ensemble member's soft partitions, for ``agree`` (None: ones).
    """
    n = X.shape[0]
    c = k_hi - 1
    labels = np.asarray(candidates[:c])
    rows = np.arange(n)
    if n > SILHOUETTE_ROWS:
        rows = np.sort(np.random.default_rng(0).choice(n, SILHOUETTE_ROWS, replace=False))
    sub = X[rows]
    sq = (sub**2).sum(1)
    distances = np.sqrt(np.maximum(sq[:, None] + sq[None] - 2.0 * sub @ sub.T, 0.0))
    np.fill_diagonal(distances, 0.0)
    sil = silhouettes(distances, labels[:, rows])
    ratio = np.clip(within_ratios(X, labels), 1e-12, 1.0)
    log_within = np.log(ratio)
    drop = -np.diff(np.concatenate([[0.0], log_within]))
    ks = np.arange(2, k_hi + 1)
    ch = (1.0 - ratio) / ratio * (n - ks) / np.maximum(ks - 1, 1)
    smallest = np.array([np.bincount(lab, minlength=k).min() / n * k for lab, k in zip(labels, ks)])
    net = probs[:c].argmax(-1)
    moved = (net != labels).mean(1)  # the refinement keeps the network's cluster indices
    crisp = probs[:c].max(-1).mean(1)
    post = np.asarray(posterior[:c], dtype=np.float64)
    post = post / max(post.sum(), 1e-300)
    mix_ll = mix_bic = np.full(c, np.nan)
    if with_mixture:
        mixtures = candidate_mixtures(X, labels, k_hi) if mixtures is None else mixtures
        columns = X.shape[1] - sum(stop - start - 1 for start, stop in blocks)  # the table's columns
        fitted = [partition_log_likelihood(X, part, k, blocks) for (part, _), k in zip(mixtures[:c], ks)]
        mix_ll = np.array([ll for ll, _ in fitted]) / (n * columns)
        mix_bic = mix_ll - np.array([params for _, params in fitted]) * np.log(n) / (2.0 * n * columns)
    return np.stack([np.log(np.maximum(post, 1e-12)), np.asarray(scores[:c], dtype=np.float64), sil, log_within,
                     drop, np.log(np.maximum(ch, 1e-12)), smallest, moved, crisp, mix_ll, mix_bic,
                     member_agreement(member_probs, c)], axis=1)


def ranker_features(X: np.ndarray, candidates: np.ndarray, probs: np.ndarray, posterior: np.ndarray,
                    members: tuple[np.ndarray, np.ndarray], k_hi: int, *, stage: str = "kmeans",
                    with_mixture: bool = True, blocks: list[tuple[int, int]] = (),
                    scores: np.ndarray | None = None,
                    mixtures: list[tuple[np.ndarray, DiagonalMixture]] | None = None, with_agreement: bool = True
                    ) -> tuple[np.ndarray, list[tuple[np.ndarray, DiagonalMixture]] | None]:
    """A table's ranker features -> (features (k_hi - 1, len(FEATURES)), the candidates' mixtures or None).

    ``candidates`` are the Lloyd-refined partitions (:func:`model.refinement.refine_candidates`); with
    ``stage="gmm"`` the features describe their diagonal mixtures' partitions instead, each scored against the
    network's ``members`` for its expected ARI. ``scores``: the Lloyd candidates' expected ARI where already
    computed (``stage="kmeans"`` only); ``mixtures``: :func:`candidate_mixtures` where already fitted;
    ``with_agreement`` False leaves ``agree`` at ones (for a ranker that does not read it)."""
    from model.selection import select_k  # noqa: PLC0415  (selection imports refinement, as this module does)

    if stage not in CANDIDATE_STAGES:
        raise ValueError(f"unknown candidate stage {stage!r}: choose one of {CANDIDATE_STAGES}")
    if mixtures is None and (with_mixture or stage == "gmm"):
        mixtures = candidate_mixtures(X, candidates, k_hi)
    ranked = np.asarray(candidates)
    if stage == "gmm":
        ranked = ranked.copy()
        ranked[: k_hi - 1] = np.stack([part for part, _ in mixtures[: k_hi - 1]])
        scores = None
    if scores is None:
        _, scores = select_k(probs, posterior, k_hi=k_hi, members=members, candidates=ranked)
    return candidate_features(X, ranked, probs, posterior, scores, k_hi, mixtures, blocks, with_mixture,
                              member_probs=members[0] if with_agreement else None), mixtures
