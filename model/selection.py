"""Choosing K from the network's outputs: the posterior's mode, or the partition of highest expected ARI.

The network gives, for one table, a partition for every candidate K and CIN's posterior p(K | X). Two rules turn
them into one answer:

``posterior_mode`` (the paper's): the most probable K. It is the Bayes choice for the 0-1 loss on K, not for the
ARI the answer is judged by. When the posterior is flat it falls on the prior's mode (K = 2, prior mass 0.3):
the partition of a table with 8 clusters into 2 scores low, while a partition into 5 would score far higher.

``expected_ari`` (minimum Bayes risk for the ARI): the candidate partition whose ARI with the partition at K',
averaged over K' ~ p(K | X), is highest. It is the Bayes choice for the ARI when the network's partition at the
true K stands for the truth: a confident posterior picks its K, a flat one the candidate that agrees most with
all the others (a central K rather than the smallest). Costs (K_max-1)^2/2 contingency tables of N rows.
With a column-order ensemble (:mod:`model.ensemble`) the network's answer is a mixture: ordering j, drawn
uniformly, gives its partition at K' with probability p_j(K' | X). The expected ARI is then taken against that
mixture (``members=`` of :func:`select_k`), so a K at which the orderings disagree scores lower: on 400 held-out
prior tasks with 4 orderings, +0.016 +- 0.004 ARI task by task over the same rule against the averaged partitions
and posterior (median 0.678 -> 0.701). With one ordering the two are the same.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from model.refinement import REFINED_CANDIDATES

KSelection = Literal["posterior_mode", "expected_ari"]
K_SELECTIONS: tuple[str, ...] = ("posterior_mode", "expected_ari")
#: The rule ``TabClustPFN`` and the validation metrics use unless told otherwise. Chosen on 400 held-out prior
#: tasks (N 500-1000) with the weights of 2026-11-26: median ARI 0.173 against 0.118 for the mode, mean 0.279
#: against 0.240, mean |K^ - K| 2.33 against 2.68 (the mode wins only on tables with K = 2: 0.140 against 0.125).
#: Re-checked with the weights continued on an H100 (2026-11-26): median 0.547 against 0.536, mean 0.536 against
#: 0.514, mean |K^ - K| 1.72 against 2.03; the mode still wins on K = 2 (0.799 against 0.757). With 4 column
#: orderings (2026-11-27): median 0.701 against 0.633, mean 0.621 against 0.572.
DEFAULT_K_SELECTION: KSelection = "expected_ari"
#: The rules ``TabClustPFN(k_selection=)`` takes: those above, on the network's outputs; ``"ranker"``, the K ranker
#: the checkpoint carries (:mod:`model.k_ranker`, among the refined candidates); and ``"auto"``, the ranker where
#: the checkpoint has one and the candidates are refined (``refine="gmm"`` or ``"kmeans"``), ``DEFAULT_K_SELECTION``
#: otherwise; with ``refine="gmm"`` on a table of at most 4 design columns, the BIC of full-covariance mixtures
#: (:mod:`model.low_dim`, the estimator's ``k_selection_ = "bic"``).
ESTIMATOR_K_SELECTIONS: tuple[str, ...] = ("auto", "ranker", *K_SELECTIONS)
DEFAULT_ESTIMATOR_K_SELECTION = "auto"


def resolve_k_selection(k_selection: str, has_ranker: bool, refine: str) -> str:
    """The rule ``TabClustPFN(k_selection=)`` applies: ``"auto"`` is ``"ranker"`` for a checkpoint with a K ranker
    and refined candidates (``refine="gmm"`` or ``"kmeans"``), else ``DEFAULT_K_SELECTION``; any other rule is
    itself."""
    if k_selection != "auto":
        return k_selection
    return "ranker" if has_ranker and refine in REFINED_CANDIDATES else DEFAULT_K_SELECTION


#: Contingency codes :func:`cross_ari` holds at once (8 MB of int64): partitions of ``a`` are taken in slices.
_CROSS_CODES = 2**20


def _pairs(counts: np.ndarray) -> np.ndarray:
    counts = counts.astype(np.float64)
    return counts * (counts - 1.0) / 2.0


def _check_labels(labels: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.ndim != 2 or labels.shape[1] < 1:
        raise ValueError(f"labels must be (C, N) with N >= 1, got shape {labels.shape}")
    if labels.min() < 0:
        raise ValueError("labels must be non-negative cluster indices")
    return labels.astype(np.int64, copy=False)


def cross_ari(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ARI between every partition in ``a`` (P, N) and every partition in ``b`` (Q, N) of the same rows -> (P, Q);
    equal to ``sklearn.metrics.adjusted_rand_score`` for every pair (including its convention that two trivial
    partitions, all one cluster or all singletons, score 1.0)."""
    a, b = _check_labels(a), _check_labels(b)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"partitions of different rows: N = {a.shape[1]} and {b.shape[1]}")
    n = a.shape[1]
    width = int(max(a.max(), b.max())) + 1
    total = n * (n - 1) / 2.0
    sums_a = np.array([_pairs(np.bincount(lab, minlength=width)).sum() for lab in a])
    sums_b = np.array([_pairs(np.bincount(lab, minlength=width)).sum() for lab in b])
    # every pair's contingency table from one bincount: pair (i, j) counts its cells at offset (i*Q + j) * width^2
    # (in slices of partitions of a, to bound the memory of the (P, Q, N) codes)
    cells = width * width
    step = max(1, _CROSS_CODES // max(1, len(b) * n))
    index = np.empty((len(a), len(b)))
    offsets = np.arange(len(b), dtype=np.int64)[:, None] * cells
    for start in range(0, len(a), step):
        part = a[start : start + step]
        codes = part[:, None, :] * width + b[None, :, :] + offsets[None] + \
            np.arange(len(part), dtype=np.int64)[:, None, None] * (len(b) * cells)
        counts = np.bincount(codes.ravel(), minlength=len(part) * len(b) * cells)
        index[start : start + step] = _pairs(counts.reshape(len(part), len(b), cells)).sum(-1)
    expected = np.outer(sums_a, sums_b) / total if total > 0 else np.zeros((len(a), len(b)))
    maximum = (sums_a[:, None] + sums_b[None, :]) / 2.0
    trivial = maximum == expected  # both partitions trivial (all one cluster, or all singletons): sklearn's 1.0
    return np.where(trivial, 1.0, (index - expected) / np.where(trivial, 1.0, maximum - expected))


def pairwise_ari(labels: np.ndarray) -> np.ndarray:
    """ARI between every pair of hard partitions of the same rows.

    Parameters
    ----------
    labels : (C, N) int array, non-negative, one partition per row.

    Returns
    -------
    (C, C) symmetric float array, ones on the diagonal; equal to ``sklearn.metrics.adjusted_rand_score`` for every
    pair (including its convention that two single-cluster partitions score 1.0).
    """
    return cross_ari(labels, labels)  # symmetric and 1 on the diagonal exactly (same sums in the same order)


def expected_ari(labels: np.ndarray, posterior: np.ndarray) -> np.ndarray:
    """Expected ARI of each candidate partition against the partition at K ~ ``posterior``.

    Parameters
    ----------
    labels : (C, N) hard partitions of the candidates (K = 2..C+1 for the network).
    posterior : (C,) probabilities of the candidates, summing to 1.

    Returns
    -------
    (C,) the score of each candidate: ``pairwise_ari(labels) @ posterior``.
    """
    posterior = np.asarray(posterior, dtype=np.float64)
    if posterior.ndim != 1 or posterior.shape[0] != np.shape(labels)[0]:
        raise ValueError(f"posterior must have one entry per candidate ({np.shape(labels)[0]}), "
                         f"got shape {posterior.shape}")
    return pairwise_ari(labels) @ posterior


def expected_ari_members(labels: np.ndarray, member_labels: np.ndarray, member_posteriors: np.ndarray
                         ) -> np.ndarray:
    """Expected ARI of each candidate partition against an ensemble's partition: member j drawn uniformly, then
    its partition at K' ~ its own posterior.

    Parameters
    ----------
    labels : (C, N) hard partitions of the candidates.
    member_labels : (M, C, N) each member's hard partitions of the same candidates' K.
    member_posteriors : (M, C) each member's probabilities of the candidates, each row summing to 1.

    Returns
    -------
    (C,) ``mean_j cross_ari(labels, member_labels[j]) @ member_posteriors[j]``; with one member whose partitions
    are the candidates, :func:`expected_ari`.
    """
    member_labels = np.asarray(member_labels)
    member_posteriors = np.asarray(member_posteriors, dtype=np.float64)
    m, c = member_posteriors.shape
    if member_labels.shape[:2] != (m, c) or np.shape(labels)[0] != c:
        raise ValueError(f"member_labels must be (M, C, N) = ({m}, {c}, N) for {c} candidates, got "
                         f"{member_labels.shape} and candidates {np.shape(labels)}")
    cross = cross_ari(labels, member_labels.reshape(m * c, -1)).reshape(c, m, c)  # candidate, member, K'
    return np.einsum("imk,mk->i", cross, member_posteriors) / m


def select_k(probs: np.ndarray, posterior: np.ndarray, k_hi: int, rule: KSelection = DEFAULT_K_SELECTION,
             members: tuple[np.ndarray, np.ndarray] | None = None, candidates: np.ndarray | None = None
             ) -> tuple[int, np.ndarray]:
    """The chosen K and each candidate's score under ``rule``.

    Parameters
    ----------
    probs : (K_max-1, N, K_max) soft partitions for K = 2..K_max.
    posterior : (K_max-1,) p(K | X) for K = 2..K_max.
    k_hi : largest admissible K (e.g. N - 1); candidates above it are never chosen.
    rule : ``"posterior_mode"`` or ``"expected_ari"`` (see the module docstring).
    members : optional ``(member_probs (M, K_max-1, N, K_max), member_posteriors (M, K_max-1))`` of a
        column-order ensemble whose averages are ``probs`` and ``posterior``: ``expected_ari`` then scores each
        candidate against the members' partitions (:func:`expected_ari_members`). Ignored by ``posterior_mode``.
    candidates : optional (K_max-1, N) hard partitions to choose among in place of ``probs``' argmax (e.g. the
        refined ones of :func:`model.refinement.refine_candidates`); the network's partitions (``probs`` or the
        members') remain what each candidate is scored against.

    Returns
    -------
    k : int, in 2..k_hi; among equal scores (e.g. identical partitions) the smallest K.
    scores : (K_max-1,) the posterior (``posterior_mode``) or the expected ARI (``expected_ari``, under the
        posterior renormalised over the admissible K) of every candidate; inadmissible candidates score -inf.
    """
    if rule not in K_SELECTIONS:
        raise ValueError(f"unknown K selection rule {rule!r}: use one of {K_SELECTIONS}")
    posterior = np.asarray(posterior, dtype=np.float64)
    n_cand = posterior.shape[0]
    if k_hi < 2:
        raise ValueError(f"k_hi must be >= 2, got {k_hi}")
    allowed = min(n_cand, k_hi - 1)  # candidates K = 2..k_hi
    scores = np.full(n_cand, -np.inf)
    if rule == "posterior_mode":
        scores[:allowed] = posterior[:allowed]
    else:
        labels = (np.asarray(probs).argmax(-1) if candidates is None else np.asarray(candidates))[:allowed]
        if members is None:
            weights = posterior[:allowed] / max(posterior[:allowed].sum(), 1e-300)
            reference = np.asarray(probs)[:allowed].argmax(-1)
            scores[:allowed] = cross_ari(labels, reference) @ weights
        else:
            member_probs, member_posteriors = members
            weights = np.asarray(member_posteriors, dtype=np.float64)[:, :allowed]
            weights = weights / np.maximum(weights.sum(1, keepdims=True), 1e-300)
            scores[:allowed] = expected_ari_members(labels, np.asarray(member_probs)[:, :allowed].argmax(-1),
                                                    weights)
    # ties (identical hard partitions at several K, e.g. duplicated rows): the smallest K, which leaves the fewest
    # clusters without rows and spreads no probability over them
    if np.isnan(scores[:allowed]).any():
        raise ValueError("the network's partitions or posterior over K are not finite (NaN scores); check the "
                         "table for values the preprocessing could not scale")
    best = np.flatnonzero(scores[:allowed] >= scores[:allowed].max() - 1e-12)
    return 2 + int(best[0]), scores


def next_k(k_probabilities: dict[int, float] | None, chosen: int) -> int | None:
    """The most probable K after ``chosen`` (``TabClustPFN.k_probabilities_``; the smaller K on a tie) among those
    a fit weighed (probability above 0), or None where there is none (K given, or a table so small that no other
    K is admissible)."""
    others = [k for k, p in (k_probabilities or {}).items() if k != chosen and p > 0]
    return min(others, key=lambda k: (-k_probabilities[k], k)) if others else None
