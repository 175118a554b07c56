"""Tables of few columns: K and the partition from full-covariance Gaussian mixtures run to convergence, K by BIC.

In two to four columns a mixture of full-covariance Gaussians is well determined by a few hundred rows, and EM run
to convergence from a sensible start finds it; the network, trained over the prior's whole D range, is then
the weaker judge of both K and the borders. Here each candidate K's mixture is run to convergence from a k-means++
partition at that K (:func:`kmeans_starts`; the estimator does not run the network on such a table), its
covariances' eigenvalues floored at 0.01 (z units) where every column is fine-grained and at 0.1 where one has few
levels (:func:`resolution_floor`), and K is the one of lowest BIC (:data:`CRITERION`; AIC3 is a design switch of
the estimator). The mixture is
:class:`model.refinement.FullMixture`, so rows new to the fit are assigned as ``refine="gmm"`` assigns them.
The probabilities over K (:func:`bic_probabilities`) give the K of lowest BIC the probability that a logistic
curve in the log of its BIC margin over the runner-up gives (the reliability of that top choice), and share the
rest among the other K as a softmax of the per-row score -BIC / (2N) at :data:`TEMPERATURE` does (at 1 / N that
softmax would be Schwarz's approximation to the posterior over K, far too sure where the clusters are not
Gaussian); -AIC3 / (2N) likewise. Both are fitted on development data per criterion
(``benchmarks/bic_calibration.py``, :data:`CALIBRATION`).

``TabClustPFN`` takes this path with its defaults (``k_selection="auto"``, ``refine="gmm"``, K not given) on tables
whose design has at most :data:`MAX_WIDTH` columns (one-hot codes counted): :func:`choose`. Chosen on development
data by ``benchmarks/choose_low_dim.py`` (``docs/results/choice-low-dim*.md``) among starts (the network's,
k-means++'s, both) and covariance floors: the variant the first draw chose (both starts, eigenvalues down to 0.01)
lost on the fresh draw's coarse tables (-0.0032 +- 0.0016); this one, the only other to qualify on both draws,
gained on 2-3-column prior tables +0.040 +- 0.009 / +0.032 +- 0.008 and on cluster shapes +0.106 +- 0.028 /
+0.049 +- 0.024 (first / fresh draw), and lost beyond one standard error on no set. Started from k-means++ partitions
instead of the network's (Lloyd-refined) candidates it is within one standard error on every set on two draws
(``choice-low-dim-kmeans-starts*.md``) and spares the network's forward passes (``bench-low-dim-starts.md``).
The resolution floor, against 0.1 everywhere (``choice-low-dim-floor*.md``): low-d +0.029 +- 0.005 / +0.033 +-
0.006, mid-d +0.006 +- 0.002 / +0.009 +- 0.003, shapes +0.041 +- 0.012 / +0.045 +- 0.017, no set lost; 0.01
everywhere lost on coarse tables. AIC3 against BIC (``choice-low-dim-aic3*.md``): low-d +0.019 +- 0.004 / +0.016
+- 0.004 / +0.019 +- 0.004 (three draws), mid-d +0.009 / +0.008 / +0.008 +- 0.003, shapes +0.000 +- 0.007 / -0.004
+- 0.007 / -0.003 +- 0.003 (1-3 better, 7-8 worse on each draw): a loss on the third draw, and where cells were
filled or a column had few levels it split them (``*-gaps.md``; issue 28's lattice of 1-5 scores), so BIC stays.
Where BIC takes many components on a design of many-valued columns, those that tile one cluster (a crescent, a ring)
are then merged into it (:func:`merge_tiles`, :mod:`model.tiles`; chosen on cluster shapes and Gaussian blobs,
``choice-low-dim-tiles*.md``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.special import logsumexp

from model.dequantize import MAX_LEVELS as COARSE_LEVELS  # a coarse column's most values (scores, counts)
from model.dequantize import dequantize_rows
from model.refinement import FULL_COVARIANCE_MAX_WIDTH, VARIANCE_FLOOR, FullMixture, full_em
from model.tiles import MergedMixture, tile_groups

#: EM steps at most, and the smallest gain in mean log-likelihood per row that continues them.
MAX_STEPS = 100
TOLERANCE = 1e-3
#: :func:`choose`: the widest design it serves.
MAX_WIDTH = FULL_COVARIANCE_MAX_WIDTH
#: :func:`choose`'s criterion for K (:data:`PENALTIES`). AIC3 gained on 2-3-column prior tables and lost a little on
#: cluster shapes; it failed the protocol on a fresh draw (``choice-low-dim-aic3*.md``), so BIC stays.
CRITERION = "bic"
#: Per criterion, the constants of :func:`bic_probabilities` on its per-row scores -criterion / (2N): the temperature
#: of the softmax over K by which the rest is shared, and the top choice's probability sigmoid(intercept + slope *
#: log(1 + margin)), the margin half the criterion's gap to the runner-up. Fitted by maximum likelihood on the low-d
#: and shapes development tables (``benchmarks/bic_calibration.py``): the curve to whether the top choice was the
#: labelled K, BIC's temperature to the labelled K by the softmax alone (``docs/results/bic-calibration.md``; fitted
#: with the network's starts, 0.387 with today's k-means++ starts at the same mean log p to three decimals),
#: AIC3's to the labelled K under the curve (``bic-calibration-aic3.md``). A softmax alone cannot fit both the top
#: choice and the rest: at BIC's temperature the top choice, right on 0.32 / 0.30 of the tables (fit / fresh draw),
#: got 0.16 on average (ECE 0.17 / 0.15); with its curve 0.33 (ECE 0.08 / 0.07). ICL takes BIC's.
CALIBRATION = {"bic": (0.373, -2.218, 0.5365), "aic3": (3.019, -1.309, 0.3233)}
#: the constants of :data:`CRITERION`
TEMPERATURE, TOP_INTERCEPT, TOP_SLOPE = CALIBRATION[CRITERION]
#: :func:`resolution_floor`: the eigenvalue floor where every design column is fine-grained.
FINE_FLOOR = 0.01
#: :func:`kmeans_starts`: the seed of its k-means++ initialisations (fixed: a table always gets the same starts).
KMEANS_SEED = 0


def log_likelihood(X: np.ndarray, mixture: FullMixture) -> float:
    """The total log-likelihood of the rows ``X`` (n, P) under ``mixture`` (its Gaussians' normalising constant
    included)."""
    n, p = X.shape
    return float(mixture.posterior(X)[1].sum() - 0.5 * n * p * np.log(2.0 * np.pi))


def resolution_floor(X: np.ndarray) -> float:
    """The covariance eigenvalue floor (z units) for the design rows ``X`` (n, P): :data:`FINE_FLOOR` where every
    column has more than :data:`COARSE_LEVELS` distinct values, else ``VARIANCE_FLOOR``. A floor of 0.1 caps the
    likelihood of clusters tighter than a third of a column's spread, so BIC merges them (eight clean blobs in 3
    columns came out K = 4-6); on a column of few levels a lower floor lets a component collapse onto one level."""
    return FINE_FLOOR if fine_columns(X).all() else VARIANCE_FLOOR


def column_levels(X: np.ndarray) -> np.ndarray:
    """Per column of ``X`` (n, P): its number of distinct values."""
    return np.array([len(np.unique(X[:, j])) for j in range(X.shape[1])], dtype=np.int64)


def fine_columns(X: np.ndarray) -> np.ndarray:
    """Per column of ``X`` (n, P): whether it has more than :data:`COARSE_LEVELS` distinct values."""
    return column_levels(X) > COARSE_LEVELS


def n_parameters(k: int, p: int) -> int:
    """Free parameters of a K-component full-covariance Gaussian mixture in P columns."""
    return (k - 1) + k * p + k * p * (p + 1) // 2


def converged_em(X: np.ndarray, labels: np.ndarray, k: int, floor: float = VARIANCE_FLOOR,
                 max_steps: int = MAX_STEPS, tol: float = TOLERANCE) -> tuple[np.ndarray, FullMixture, float]:
    """:func:`model.refinement.full_em` from the partition ``labels`` until a step raises the mean log-likelihood
    per row by less than ``tol`` (at most ``max_steps``) -> (partition, mixture, total log-likelihood)."""
    labels, mixture = full_em(X, labels, k, steps=max_steps, floor=floor, tol=tol)
    return labels, mixture, log_likelihood(X, mixture)


@dataclass(frozen=True)
class BicChoice:
    """The mixture BIC chose: ``k``, its ``labels`` and ``mixture``; per K of ``ks`` the ``bic``, the per-row score
    -BIC / (2N) (``scores``) and the probabilities over K (``probabilities``, :func:`bic_probabilities` with the
    criterion's :data:`CALIBRATION`); under another criterion than BIC, ``bic`` and ``scores`` hold its values.
    After :func:`merge_tiles`, ``k``, ``labels`` and ``mixture`` are the merged clusters'."""

    k: int
    labels: np.ndarray
    mixture: FullMixture | MergedMixture
    ks: np.ndarray
    bic: np.ndarray
    scores: np.ndarray
    probabilities: np.ndarray
    mixtures: dict[int, FullMixture] = field(default_factory=dict)  # K -> its mixture, every K fitted


def classification_entropy(X: np.ndarray, mixture: FullMixture) -> float:
    """The entropy of the rows' posteriors over the components, summed over the rows ``X`` (n, P): 0 where every
    row belongs to one component for sure, large where components overlap."""
    post = mixture.posterior(X)[0]
    return float(-(post * np.log(np.clip(post, 1e-300, None))).sum())


#: the penalties per free parameter on -2 log-likelihood that a choice of K may use, as functions of the rows:
#: Schwarz's BIC (log N) and Bozdogan's AIC3 (3), which under-splits less where clusters overlap
PENALTIES = {"bic": np.log, "aic3": lambda n: 3.0}


def bic_choice(X: np.ndarray, starts: dict[int, list[np.ndarray]], floor: float = VARIANCE_FLOOR,
               max_steps: int = MAX_STEPS, tol: float = TOLERANCE, criterion: str = "bic") -> BicChoice:
    """Per K of ``starts`` (K -> the hard partitions to start EM from), the converged mixture of highest likelihood
    among its starts; then the K of lowest BIC (ties to the smaller K). ``criterion="aic3"``: a penalty of 3 per
    parameter instead of log N (:data:`PENALTIES`); ``bic`` then holds AIC3. ``criterion="icl"``: BIC plus twice the
    :func:`classification_entropy` (Biernacki, Celeux and Govaert's ICL), which counts against K the components
    that overlap, so a cluster that is not Gaussian is not split into several that are; ``bic`` then holds it.
    The probabilities over K are the criterion's (:data:`CALIBRATION`; ICL takes BIC's)."""
    if not starts:
        raise ValueError("bic_choice needs at least one K to fit")
    if criterion not in (*PENALTIES, "icl"):
        raise ValueError(f"criterion must be 'bic', 'aic3' or 'icl', got {criterion!r}")
    n, p = X.shape
    penalty = PENALTIES.get(criterion, np.log)(n)
    ks = np.array(sorted(starts))
    fits, bic = [], np.empty(len(ks))
    for i, k in enumerate(ks):
        best = max((converged_em(X, s, int(k), floor, max_steps, tol) for s in starts[int(k)]), key=lambda f: f[2])
        fits.append(best)
        bic[i] = -2.0 * best[2] + n_parameters(int(k), p) * penalty
        if criterion == "icl":
            bic[i] += 2.0 * classification_entropy(X, best[1])
    j = int(np.argmin(bic))
    scores = -0.5 * bic / n
    probabilities = bic_probabilities(scores, n, *CALIBRATION.get(criterion, CALIBRATION["bic"]))
    return BicChoice(int(ks[j]), fits[j][0], fits[j][1], ks, bic, scores, probabilities,
                     {int(k): fit[1] for k, fit in zip(ks, fits)})


def top_margin(scores: np.ndarray, n: np.ndarray | int) -> np.ndarray:
    """Per table, half the BIC gap between its best and second-best K: ``scores`` (..., C) per-row scores -BIC /
    (2N) (-inf where not admissible), ``n`` its rows -> (...,); inf where only one K is admissible."""
    s = np.sort(np.asarray(scores, np.float64), axis=-1)
    second = s[..., -2] if s.shape[-1] > 1 else np.full(s.shape[:-1], -np.inf)
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(second), (s[..., -1] - second) * np.asarray(n, np.float64), np.inf)


def top_probability(margin: np.ndarray, intercept: float = TOP_INTERCEPT, slope: float = TOP_SLOPE) -> np.ndarray:
    """The probability that the K of lowest BIC is the labelled one, given its :func:`top_margin` (1 where that is
    inf: the only K admissible)."""
    margin = np.asarray(margin, np.float64)
    with np.errstate(invalid="ignore"):
        z = intercept + slope * np.log1p(margin)
    return np.where(np.isinf(margin), 1.0, 1.0 / (1.0 + np.exp(-z)))


def bic_probabilities(scores: np.ndarray, n: np.ndarray | int, temperature: float = TEMPERATURE,
                      intercept: float = TOP_INTERCEPT, slope: float = TOP_SLOPE) -> np.ndarray:
    """Probabilities over K (..., C) from per-row scores -BIC / (2N) (..., C; -inf where not admissible) of tables
    of ``n`` rows: the best K gets :func:`top_probability` of its margin (at least what the softmax at
    ``temperature`` gives it, so that it stays the most probable K), the others share the rest in proportion to
    that softmax."""
    from model.k_ranker import k_probabilities

    q = k_probabilities(scores, temperature)
    best = np.argmax(q, axis=-1)[..., None]
    q_top = np.take_along_axis(q, best, axis=-1)
    top = np.maximum(top_probability(top_margin(scores, n), intercept, slope)[..., None], q_top)
    rest = 1.0 - q_top
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(rest > 0, q * (1.0 - top) / rest, 0.0)
    np.put_along_axis(p, best, top, axis=-1)
    return p


def fit_top_calibration(margin: np.ndarray, right: np.ndarray) -> tuple[float, float]:
    """(intercept, slope) of :func:`top_probability` by maximum likelihood: ``margin`` (T,) each table's
    :func:`top_margin` (finite), ``right`` (T,) whether its top choice was the labelled K."""
    from scipy.optimize import minimize

    x = np.log1p(np.asarray(margin, np.float64))
    y = np.asarray(right, np.float64)

    def nll(w: np.ndarray) -> float:
        z = w[0] + w[1] * x
        return float(np.mean(np.logaddexp(0.0, z) - y * z))

    return tuple(float(v) for v in minimize(nll, np.zeros(2), method="BFGS").x)


def fit_rest_temperature(scores: np.ndarray, n: np.ndarray, k_true: np.ndarray, intercept: float,
                         slope: float) -> float:
    """The temperature that maximises the likelihood of the labelled K of T tables under
    :func:`bic_probabilities` with the top choice's curve (``intercept``, ``slope``) fixed: ``scores`` (T, C) per-row
    scores -BIC / (2N) of K = 2..C+1, ``n`` (T,) rows, ``k_true`` (T,); tables whose labelled K is not admissible
    are left out. The softmax alone fits a lower temperature than the rest's share wants once the top choice has
    its own curve."""
    from scipy.optimize import minimize_scalar

    from model.k_ranker import labelled_candidates

    scores = np.asarray(scores, np.float64)
    ok, idx = labelled_candidates(scores, k_true)
    s, rows, idx = scores[ok], np.asarray(n, np.float64)[ok], idx[ok]

    def nll(log_t: float) -> float:
        p = bic_probabilities(s, rows, float(np.exp(log_t)), intercept, slope)
        return float(-np.log(np.clip(p[np.arange(len(p)), idx], 1e-300, 1.0)).mean())

    return float(np.exp(minimize_scalar(nll, bounds=(-6.0, 8.0), method="bounded").x))


def kmeans_start(X: np.ndarray, k: int, seed: int = KMEANS_SEED) -> np.ndarray:
    """A k-means++ partition of the rows ``X`` into ``k`` (one initialisation seeded by ``seed``, Lloyd to
    convergence; the start scikit-learn's mixtures use). Rows of fewer distinct values than ``k`` leave components
    empty, which the mixture's EM then drops (:func:`model.refinement.full_em`), as it does the network's."""
    import warnings

    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():  # "fewer distinct points than clusters": expected on coarse columns
        warnings.simplefilter("ignore", ConvergenceWarning)
        return KMeans(n_clusters=k, n_init=1, random_state=seed).fit_predict(X).astype(np.int64)


def kmeans_starts(X: np.ndarray, k_hi: int, seed: int = KMEANS_SEED) -> np.ndarray:
    """:func:`kmeans_start` at each K = 2..``k_hi`` -> (k_hi - 1, n), K = 2.. in order."""
    return np.stack([kmeans_start(X, k, seed) for k in range(2, k_hi + 1)])


#: :func:`choose`'s default ``merge``: where components that tile one cluster are merged (:func:`merge_tiles`):
#: ``"fine"``, on designs whose every column has many values (:func:`fine_columns`; a column of few levels has no
#: density to read a valley in); ``"any"``, on every design; None, nowhere.
MERGE = "fine"
MERGES = (None, "any", "fine")


def merge_tiles(X: np.ndarray, choice: BicChoice, **thresholds: float) -> BicChoice:
    """``choice`` with the components that tile one cluster merged into it (:func:`model.tiles.tile_groups` on the
    rows ``X`` it was fitted to): K the clusters, the partition and the mixture (:class:`model.tiles.MergedMixture`)
    theirs. The merged K takes the probability the components' K had (the top choice's); BIC's scores and its
    mixtures at every K stay as they were. ``choice`` itself where nothing merges. ``thresholds``: ``min_ratio``,
    ``min_fill``, ``min_pairs`` or ``min_components`` of :func:`model.tiles.tile_groups` other than its defaults."""
    groups = tile_groups(X, choice.mixture, choice.labels, **thresholds)
    live = np.unique(choice.labels)
    k = int(groups[live].max()) + 1
    if k == len(live):
        return choice
    probabilities = choice.probabilities.copy()
    top, merged = np.searchsorted(choice.ks, choice.k), np.searchsorted(choice.ks, k)
    probabilities[[top, merged]] = probabilities[[merged, top]]
    return replace(choice, k=k, labels=groups[choice.labels], mixture=MergedMixture(choice.mixture, groups),
                   probabilities=probabilities)


def choose(X: np.ndarray, candidates: np.ndarray, k_hi: int, criterion: str = CRITERION,
           merge: str | None = MERGE) -> BicChoice:
    """K in 2..``k_hi`` and the partition of the design rows ``X`` (n, P <= :data:`MAX_WIDTH`): per K the mixture
    run to convergence from the candidate partition at that K (``candidates`` (>= k_hi - 1, n), K = 2.. in order:
    :func:`kmeans_starts`, or the network's), its eigenvalues floored at :func:`resolution_floor`, then the K of
    lowest ``criterion`` (:data:`PENALTIES`; :func:`bic_choice`); then, where ``merge`` (:data:`MERGE`) says, the
    components that tile one cluster merged into it (:func:`merge_tiles`)."""
    if X.shape[1] > MAX_WIDTH:
        raise ValueError(f"the BIC path serves designs of at most {MAX_WIDTH} columns, got {X.shape[1]}")
    if criterion not in PENALTIES:
        raise ValueError(f"criterion must be one of {sorted(PENALTIES)}, got {criterion!r}")
    if merge not in MERGES:  # refused before the mixtures are fitted
        raise ValueError(f"merge must be one of {MERGES}, got {merge!r}")
    choice = bic_choice(X, {k: [candidates[k - 2]] for k in range(2, k_hi + 1)}, floor=resolution_floor(X),
                        criterion=criterion)
    return merged_where(X, choice, merge)


#: :func:`discretized_choice`: the uniform draws per row by which a row's cell mass is estimated
CELL_DRAWS = 8


def cell_log_likelihood(X: np.ndarray, columns: np.ndarray, mixture: FullMixture, draws: int = CELL_DRAWS) -> float:
    """The log-likelihood of the rows ``X`` (n, P) read as cells: each of ``columns`` (bool (P,)) of few levels is
    known only to its level's cell (:func:`model.dequantize.dequantize_rows`), so a row's likelihood is the mixture's
    mass over its cell, estimated by the mean density over ``draws`` uniform draws in it (the cells' volumes, the
    same for every mixture, left out). Unlike the density at the levels, it cannot grow without bound where a
    component sits on one level: a cell's mass is at most 1."""
    logs = np.stack([logsumexp(mixture.log_joint(dequantize_rows(X, columns, seed=d)[0]), axis=1)
                     for d in range(draws)])
    return float((logsumexp(logs, axis=0) - np.log(draws)).sum())


def discretized_choice(X: np.ndarray, columns: np.ndarray, as_given: BicChoice, spread: BicChoice) -> BicChoice:
    """K and the mixture for rows ``X`` (n, P) with columns of few levels (``columns``): per K the mixture of higher
    :func:`cell_log_likelihood` of the one fitted to the levels as given (``as_given``) and the one fitted to them
    spread over their cells (``spread``), then the K of lowest BIC on that likelihood, with its probabilities over K
    (BIC's :data:`CALIBRATION`). The labels are the chosen mixture's for the rows as given."""
    n, p = X.shape
    ks = np.array(sorted(set(as_given.mixtures) & set(spread.mixtures)))
    if not len(ks):
        raise ValueError("discretized_choice needs both choices fitted at a common K")
    mixtures, bic = {}, np.empty(len(ks))
    for i, k in enumerate(ks):
        fits = [(cell_log_likelihood(X, columns, c.mixtures[int(k)]), c.mixtures[int(k)]) for c in (as_given, spread)]
        ll, mixtures[int(k)] = max(fits, key=lambda f: f[0])
        bic[i] = -2.0 * ll + n_parameters(int(k), p) * np.log(n)
    j = int(np.argmin(bic))
    scores = -0.5 * bic / n
    chosen = mixtures[int(ks[j])]
    return BicChoice(int(ks[j]), chosen.posterior(X)[0].argmax(1), chosen, ks, bic, scores,
                     bic_probabilities(scores, n, *CALIBRATION["bic"]), mixtures)


def merged_where(X: np.ndarray, choice: BicChoice, merge: str | None = MERGE, **thresholds: float) -> BicChoice:
    """``choice`` on the design rows ``X`` with its tiles merged (:func:`merge_tiles`, ``thresholds`` passed on) where
    ``merge`` (:data:`MERGE`) says so, else ``choice`` itself."""
    if merge not in MERGES:
        raise ValueError(f"merge must be one of {MERGES}, got {merge!r}")
    if merge == "any" or (merge == "fine" and fine_columns(X).all()):
        return merge_tiles(X, choice, **thresholds)
    return choice
