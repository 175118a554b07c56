"""Tables whose columns are all categorical: K and the partition from latent class models, K by AIC3 or BIC.

A table of categories only (survey answers, yes/no findings, codes) has no geometry for the network's Gaussian-like
clusters to live in: its rows are combinations of levels, and a cluster is a distribution over them. The latent
class model (Lazarsfeld; Goodman 1974) is the mixture that says so: given its cluster, a row's columns are
independent categorical variables, each with its own level probabilities per cluster. It is the model of the
prior's categorical columns too (:mod:`priors.zeus`: per cluster, level probabilities ~ Dirichlet). Here each
candidate K's model is run by EM to convergence from a hard partition at that K (k-means++ on the one-hot codes,
:func:`model.low_dim.kmeans_starts`, or the network's candidate), and K is the one of lowest penalised likelihood,
as the BIC path of few numeric columns does (:mod:`model.low_dim`, whose :class:`~model.low_dim.BicChoice` it
returns): BIC (log N per parameter) or AIC3 (3 per parameter, the estimator's: BIC under-split small tables of many
classes).

The model lives in the estimator's design space (:func:`model.refinement.design`: each categorical column one-hot,
``blocks`` saying where): a component's "means" are its level probabilities, so a row's log-likelihood under it is
the row's one-hot codes times their logarithms, and rows new to the fit are assigned as every refined mixture
assigns them (:class:`CategoricalMixture`). Level probabilities are estimated with a pseudo-count of
:data:`PSEUDO_COUNT` per level (a level a cluster never shows stays possible for a new row).

``TabClustPFN`` takes this path with its defaults on tables whose every kept column is categorical, a numeric column
of two values (a 0/1 flag, :func:`model.preprocessing.flag_cuts`) counted as one, and whose design is wider than 4
columns (narrower ones keep the BIC path of few columns): chosen on development data by
``benchmarks/choose_categorical_path.py`` (``docs/results/choice-categorical-*.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from model.low_dim import PENALTIES, BicChoice, bic_probabilities
from model.refinement import _Mixture

__all__ = ["PSEUDO_COUNT", "MAX_STEPS", "TOLERANCE", "TEMPERATURE", "TOP_INTERCEPT", "TOP_SLOPE",
           "CategoricalMixture", "latent_class_em", "n_parameters", "choose"]

#: Pseudo-count added to every level's count in a cluster when its probabilities are estimated.
PSEUDO_COUNT = 0.01
#: EM steps at most, and the smallest gain in mean log-likelihood per row that continues them.
MAX_STEPS = 200
TOLERANCE = 1e-4
#: The probabilities over K (:func:`model.low_dim.bic_probabilities`) from the estimator's criterion (AIC3): the top
#: choice's logistic curve in its margin (fitted to whether it was the labelled K), and the temperature of the softmax
#: on -AIC3 / (2N) that shares the rest (fitted, with that curve, to the labelled K), both by maximum likelihood on
#: the first draw of the ``all-cat`` development tables and checked on a fresh one (``benchmarks/bic_calibration.py
#: --path latent-class``, ``docs/results/latent-class-calibration.md``).
TEMPERATURE = 0.1644
TOP_INTERCEPT = -4.277
TOP_SLOPE = 1.673


@dataclass(frozen=True)
class CategoricalMixture(_Mixture):
    """A latent class model in the design space: per component the probability of every level of every
    categorical column (``means`` (K, P): within each column's one-hot block they sum to 1) and mixing proportions.
    Rows (one-hot codes) go to the most probable component; the soft assignment is its posterior."""

    means: np.ndarray  # (K, P) level probabilities
    log_weights: np.ndarray  # (K,), -inf for a component that takes no row

    def log_joint(self, X: np.ndarray) -> np.ndarray:
        """(n, K): log p(row, component), the row's one-hot codes ``X`` (n, P) times the logs of the levels'
        probabilities."""
        return X @ np.log(self.means).T + self.log_weights[None]


def _check_blocks(blocks: list[tuple[int, int]], p: int) -> None:
    covered = np.zeros(p, bool)
    for start, stop in blocks:
        if not 0 <= start < stop <= p or covered[start:stop].any():
            raise ValueError(f"blocks must be disjoint (start, stop) ranges within the {p} design columns, got "
                             f"{blocks}")
        covered[start:stop] = True
    if not covered.all():
        raise ValueError(f"blocks must cover every one of the {p} design columns (a latent class model has only "
                         f"categorical columns), got {blocks}")


def _m_step(X: np.ndarray, resp: np.ndarray, blocks: list[tuple[int, int]]) -> CategoricalMixture:
    n = X.shape[0]
    mass = resp.sum(0)
    counts = resp.T @ X + PSEUDO_COUNT  # (K, P)
    means = np.empty_like(counts)
    for start, stop in blocks:
        means[:, start:stop] = counts[:, start:stop] / counts[:, start:stop].sum(1, keepdims=True)
    kept = mass > 1e-12
    log_weights = np.full(len(mass), -np.inf)
    log_weights[kept] = np.log(mass[kept] / n)
    return CategoricalMixture(means, log_weights)


def latent_class_em(X: np.ndarray, labels: np.ndarray, k: int, blocks: list[tuple[int, int]],
                    max_steps: int = MAX_STEPS, tol: float = TOLERANCE
                    ) -> tuple[np.ndarray, CategoricalMixture, float]:
    """EM of a ``k``-class latent class model on one-hot rows ``X`` (n, P; ``blocks``: each categorical column's
    (start, stop) design columns) from the hard partition ``labels`` (values in 0..k-1), until a step raises the
    mean log-likelihood per row by less than ``tol`` (at most ``max_steps``) -> (each row's most probable class,
    the model, its total log-likelihood). A class that loses every row takes no row from then on (weight 0)."""
    X = np.asarray(X, np.float64)
    n, p = X.shape
    _check_blocks(blocks, p)
    labels = np.asarray(labels, np.int64)
    if labels.shape != (n,) or labels.min() < 0 or labels.max() >= k:
        raise ValueError(f"labels must be {n} values in 0..{k - 1}")
    resp = np.zeros((n, k))
    resp[np.arange(n), labels] = 1.0
    previous = -np.inf
    for _ in range(max_steps):
        model = _m_step(X, resp, blocks)
        resp, row_ll = model.posterior(X)
        mean_ll = float(row_ll.mean())
        if mean_ll - previous < tol:
            break
        previous = mean_ll
    model = _m_step(X, resp, blocks)
    resp, row_ll = model.posterior(X)
    return resp.argmax(1), model, float(row_ll.sum())


def n_parameters(k: int, widths: np.ndarray) -> int:
    """Free parameters of a ``k``-class latent class model of columns with ``widths`` levels."""
    return (k - 1) + k * int(np.sum(np.asarray(widths) - 1))


#: :func:`choose`'s criteria: the penalty per free parameter on -2 log-likelihood, as a function of the rows
CRITERIA = PENALTIES


def choose(X: np.ndarray, blocks: list[tuple[int, int]], candidates: dict[int, list[np.ndarray]],
           criterion: str = "bic") -> BicChoice:
    """K and the partition of one-hot rows ``X`` (n, P; ``blocks`` as :func:`latent_class_em`'s): per K of
    ``candidates`` (K -> the hard partitions to start EM from) the converged model of highest likelihood among its
    starts, then the K of lowest BIC (ties to the smaller K), with its probabilities over K
    (:func:`model.low_dim.bic_probabilities`). ``criterion="aic3"``: a penalty of 3 per parameter instead of log N
    (Bozdogan's AIC3, which studies of latent class models found to under-split less than BIC on small tables)."""
    if not candidates:
        raise ValueError("choose needs at least one K to fit")
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {sorted(CRITERIA)}, got {criterion!r}")
    n = X.shape[0]
    widths = np.array([stop - start for start, stop in blocks])
    ks = np.array(sorted(candidates))
    fits, bic = [], np.empty(len(ks))
    for i, k in enumerate(ks):
        best = max((latent_class_em(X, s, int(k), blocks) for s in candidates[int(k)]), key=lambda f: f[2])
        fits.append(best)
        bic[i] = -2.0 * best[2] + n_parameters(int(k), widths) * CRITERIA[criterion](n)
    j = int(np.argmin(bic))
    scores = -0.5 * bic / n
    probabilities = bic_probabilities(scores, n, TEMPERATURE, TOP_INTERCEPT, TOP_SLOPE)
    return BicChoice(int(ks[j]), fits[j][0], fits[j][1], ks, bic, scores, probabilities,
                     {int(k): fit[1] for k, fit in zip(ks, fits)})
