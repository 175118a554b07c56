"""Tables of few columns (model/low_dim.py): full-covariance mixtures run to convergence, K by BIC."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture

from model.low_dim import (CALIBRATION, COARSE_LEVELS, CRITERION, FINE_FLOOR, bic_choice, bic_probabilities, choose,
                           classification_entropy, converged_em, kmeans_starts, log_likelihood, n_parameters,
                           resolution_floor)
from model.refinement import VARIANCE_FLOOR, full_em


def _tilted_blobs(seed: int = 0, n_per: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Three elongated, differently tilted Gaussian clusters in 2-D."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n_per)
    X = np.empty((3 * n_per, 2))
    for c, (centre, angle) in enumerate((((0, 0), 0.3), ((6, 1), 1.2), ((2, 6), -0.6))):
        rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
        X[y == c] = rng.normal(size=(n_per, 2)) * [2.0, 0.4] @ rot.T + centre
    return (X - X.mean(0)) / X.std(0), y


def test_the_parameter_count_is_a_full_covariance_mixtures():
    assert n_parameters(1, 2) == 5  # a mean (2) and a covariance (3)
    assert n_parameters(2, 2) == 1 + 4 + 6
    assert n_parameters(3, 4) == 2 + 12 + 30


def test_log_likelihood_matches_scikit_learns_for_the_same_mixture():
    X, y = _tilted_blobs()
    _, mixture = full_em(X, y, 3, steps=1, floor=1e-6)
    gmm = GaussianMixture(3, covariance_type="full", reg_covar=0.0)
    gmm.weights_ = np.exp(mixture.log_weights)
    gmm.means_ = mixture.means
    gmm.precisions_cholesky_ = np.stack([np.linalg.inv(L).T for L in mixture.cholesky])
    gmm.covariances_ = np.stack([L @ L.T for L in mixture.cholesky])
    np.testing.assert_allclose(log_likelihood(X, mixture), gmm.score(X) * len(X), rtol=1e-9)


def test_em_to_convergence_raises_the_likelihood_and_stops_before_its_step_limit():
    X, y = _tilted_blobs(seed=1)
    start = np.where(np.random.default_rng(0).random(len(y)) < 0.3, (y + 1) % 3, y)
    _, three = full_em(X, start, 3)
    labels, mixture, ll = converged_em(X, start, 3, max_steps=200, tol=1e-6)
    assert ll == pytest.approx(log_likelihood(X, mixture))
    assert ll > log_likelihood(X, three)
    best = adjusted_rand_score(y, converged_em(X, y, 3)[0])  # started from the truth (the clusters touch)
    assert adjusted_rand_score(y, labels) >= best - 0.005 and best > 0.9
    _, at_limit = full_em(X, start, 3, steps=200)  # without tol every step runs: the same fixed point
    assert log_likelihood(X, at_limit) == pytest.approx(ll, rel=1e-5)


def test_bic_chooses_the_number_of_tilted_gaussian_clusters_and_its_probabilities_say_so():
    X, y = _tilted_blobs(seed=2)
    choice = bic_choice(X, {k: [KMeans(k, n_init=1, random_state=0).fit_predict(X)] for k in range(2, 7)})
    best = adjusted_rand_score(y, converged_em(X, y, 3)[0])  # started from the truth (the clusters touch)
    assert choice.k == 3 and adjusted_rand_score(y, choice.labels) >= best - 0.02 and best > 0.9
    assert list(choice.ks) == [2, 3, 4, 5, 6] and int(np.argmin(choice.bic)) == 1
    np.testing.assert_allclose(choice.scores, -0.5 * choice.bic / len(X))  # per row: comparable across N
    np.testing.assert_allclose(choice.probabilities.sum(), 1.0)
    assert int(np.argmax(choice.probabilities)) == 1
    np.testing.assert_array_equal(choice.mixture.labels(X), choice.labels)
    # the probabilities are the criterion's calibrated ones (ICL takes BIC's)
    np.testing.assert_allclose(choice.probabilities, bic_probabilities(choice.scores, len(X), *CALIBRATION["bic"]))
    starts = {k: [KMeans(k, n_init=1, random_state=0).fit_predict(X)] for k in range(2, 7)}
    aic3, icl = bic_choice(X, starts, criterion="aic3"), bic_choice(X, starts, criterion="icl")
    np.testing.assert_allclose(aic3.probabilities, bic_probabilities(aic3.scores, len(X), *CALIBRATION["aic3"]))
    np.testing.assert_allclose(icl.probabilities, bic_probabilities(icl.scores, len(X), *CALIBRATION["bic"]))
    assert CALIBRATION["aic3"] != CALIBRATION["bic"]


def test_bic_keeps_the_best_likelihood_among_a_ks_starts():
    """A poor start (every row in one arbitrary half) beside a good one: the good one's mixture is kept."""
    X, y = _tilted_blobs(seed=3)
    poor = (np.arange(len(y)) % 3).astype(np.int64)
    choice = bic_choice(X, {3: [poor, y]})
    assert adjusted_rand_score(y, choice.labels) > 0.9
    alone = bic_choice(X, {3: [y]})
    assert choice.bic[0] == pytest.approx(alone.bic[0])


def test_icl_adds_twice_the_posteriors_entropy_to_bic_and_merges_a_non_gaussian_cluster():
    """ICL (``criterion="icl"``, measured, not shipped: ``docs/results/choice-low-dim-icl.md``) is BIC plus twice the
    entropy of the rows' posteriors. Two uniform squares side by side: BIC fits each with several overlapping
    Gaussians, ICL counts their overlap against them and keeps K = 2."""
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.uniform(0, 2, size=(400, 2)), rng.uniform(0, 2, size=(400, 2)) + [3.0, 0.0]])
    y = np.repeat([0, 1], 400)
    starts = {k: [KMeans(k, n_init=1, random_state=0).fit_predict(X)] for k in range(2, 7)}
    bic, icl = bic_choice(X, starts), bic_choice(X, starts, criterion="icl")
    for i, k in enumerate(bic.ks):
        mixture = converged_em(X, starts[int(k)][0], int(k))[1]
        assert icl.bic[i] == pytest.approx(bic.bic[i] + 2.0 * classification_entropy(X, mixture))
    assert icl.bic[0] >= bic.bic[0] and classification_entropy(X, icl.mixture) < 0.01 * len(X)  # far apart: sure
    assert bic.k > 2 and icl.k == 2 and adjusted_rand_score(y, icl.labels) == 1.0
    with pytest.raises(ValueError, match="criterion"):
        bic_choice(X, starts, criterion="aic")


def test_aic3_charges_three_per_parameter_so_it_never_chooses_fewer_clusters_than_bic():
    """AIC3 (``criterion="aic3"``) is -2 log-likelihood plus 3 per free parameter where BIC charges log N: on the
    same fits its values are BIC's less (log N - 3) per parameter, and as the parameters grow with K, its K is at
    least BIC's wherever log N > 3. Three clusters, two of them close: BIC merges the pair, AIC3 does not."""
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1, 2], 100)
    X = np.array([[0.0, 0.0], [2.8, 0.0], [6.0, 0.0]])[y] + rng.normal(size=(300, 2)) * [0.7, 1.0]
    X = (X - X.mean(0)) / X.std(0)
    candidates = kmeans_starts(X, 6)
    bic, aic3 = choose(X, candidates, 6, criterion="bic"), choose(X, candidates, 6, criterion="aic3")
    penalty_gap = np.array([n_parameters(int(k), 2) for k in bic.ks]) * (np.log(len(X)) - 3.0)
    np.testing.assert_allclose(aic3.bic, bic.bic - penalty_gap)
    np.testing.assert_allclose(aic3.scores, -0.5 * aic3.bic / len(X))
    assert bic.k == 2 and aic3.k > bic.k
    assert adjusted_rand_score(y, aic3.labels) > adjusted_rand_score(y, bic.labels) + 0.2
    with pytest.raises(ValueError, match="criterion"):
        choose(X, candidates, 6, criterion="icl")


def test_choose_starts_each_k_from_its_candidate_and_refuses_wide_designs():
    X, y = _tilted_blobs(seed=4)
    rng = np.random.default_rng(5)
    candidates = np.stack([KMeans(k, n_init=1, random_state=0).fit_predict(X) for k in range(2, 11)])
    choice = choose(X, candidates, k_hi=6)  # the default criterion, BIC
    assert CRITERION == "bic" and list(choice.ks) == [2, 3, 4, 5, 6] and choice.k == 3
    same = bic_choice(X, {k: [candidates[k - 2]] for k in range(2, 7)}, floor=resolution_floor(X))
    np.testing.assert_allclose(choice.bic, same.bic)
    with pytest.raises(ValueError, match="at most 4 columns"):
        choose(rng.normal(size=(50, 5)), candidates[:, :50], k_hi=3)
    with pytest.raises(ValueError, match="at least one K"):
        bic_choice(np.zeros((10, 2)), {})


def _tight_pairs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two pairs of tight round clusters (75 rows each), the pairs far apart, each pair's two 5 SD apart: in z units
    every cluster's variance is far below 0.1."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(4), 75)
    X = np.array([[-2, -2], [-1.4, -2], [2, 2], [2.6, 2]])[y] + rng.normal(size=(300, 2)) * 0.12
    return (X - X.mean(0)) / X.std(0), y


def test_the_floor_is_fine_only_where_every_column_has_many_values():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    assert resolution_floor(X) == FINE_FLOOR < VARIANCE_FLOOR
    for coarse in (rng.integers(1, 6, 300), rng.integers(0, 2, 300), rng.integers(0, COARSE_LEVELS, 300)):
        assert resolution_floor(np.column_stack([X, coarse])) == VARIANCE_FLOOR  # levels, counts, one-hot codes
    assert resolution_floor(np.column_stack([X, rng.integers(0, COARSE_LEVELS + 1, 300)])) == FINE_FLOOR


def test_bic_separates_tight_neighbouring_clusters_on_fine_columns():
    """The floor of 0.1 caps a tight cluster's likelihood, so BIC merged each pair (K = 2); the resolution floor
    lets it see four."""
    X, y = _tight_pairs()
    candidates = np.stack([KMeans(k, n_init=1, random_state=0).fit_predict(X) for k in range(2, 11)])
    choice = choose(X, candidates, k_hi=6)
    assert choice.k == 4 and adjusted_rand_score(y, choice.labels) > 0.9
    assert bic_choice(X, {k: [candidates[k - 2]] for k in range(2, 7)}, floor=VARIANCE_FLOOR).k == 2


def test_a_design_with_a_coarse_column_keeps_the_floor_of_the_refinement():
    X, _ = _tight_pairs(seed=1)
    X = np.column_stack([X, np.random.default_rng(1).integers(0, 2, len(X))])  # a one-hot code beside them
    candidates = np.stack([KMeans(k, n_init=1, random_state=0).fit_predict(X) for k in range(2, 11)])
    want = bic_choice(X, {k: [candidates[k - 2]] for k in range(2, 7)}, floor=VARIANCE_FLOOR)
    np.testing.assert_allclose(choose(X, candidates, k_hi=6, criterion="bic").bic, want.bic)


def test_bic_probabilities_give_the_top_choice_its_calibrated_probability_and_the_rest_by_the_softmax():
    from model.k_ranker import k_probabilities
    from model.low_dim import TEMPERATURE, bic_probabilities, top_margin, top_probability

    scores = np.array([[-1.00, -0.95, -0.99, -np.inf], [-1.0, -0.5, -0.9, -1.2]])
    n = np.array([200, 800])
    p = bic_probabilities(scores, n)
    np.testing.assert_allclose(p.sum(1), 1.0)
    assert (p.argmax(1) == 1).all() and p[0, 3] == 0.0  # the K of lowest BIC stays the top; -inf stays impossible
    np.testing.assert_allclose(top_margin(scores, n), [0.04 * 200, 0.4 * 800])  # half the BIC gap to the runner-up
    q = k_probabilities(scores, TEMPERATURE)
    np.testing.assert_allclose(p[:, 1], np.maximum(top_probability(top_margin(scores, n)), q[:, 1]))
    others = np.array([0, 2])  # the rest keeps the softmax's proportions
    np.testing.assert_allclose(p[:, others] / p[:, others].sum(1, keepdims=True),
                               q[:, others] / q[:, others].sum(1, keepdims=True))
    # a wider margin, in BIC units (so more rows at the same per-row gap), is a surer top choice
    assert top_probability(10.0) < top_probability(100.0) < top_probability(1000.0) < 1.0
    assert bic_probabilities(scores[:1], 2000)[0, 1] > p[0, 1]
    tie = bic_probabilities(np.array([-1.0, -1.0, -3.0]), 500)  # a tie: the floor keeps both tied K level
    assert tie[0] == pytest.approx(tie[1]) and tie[0] >= tie[2]
    np.testing.assert_allclose(bic_probabilities(np.array([-1.0, -np.inf]), 100), [1.0, 0.0])  # one K: sure


def test_fit_top_calibration_recovers_the_logistic_curve_it_was_drawn_from():
    from model.low_dim import fit_top_calibration, top_probability

    rng = np.random.default_rng(0)
    margin = np.exp(rng.uniform(0.0, 6.0, size=20000)) - 1.0
    right = rng.random(margin.size) < top_probability(margin, intercept=-2.0, slope=0.6)
    intercept, slope = fit_top_calibration(margin, right)
    assert intercept == pytest.approx(-2.0, abs=0.1) and slope == pytest.approx(0.6, abs=0.03)


def test_a_cell_holds_at_most_its_mass_so_a_component_on_one_level_gains_nothing_past_it():
    """One column of levels 0..4 (a rounded Gaussian): a mixture whose components sit on the levels has a huge
    density at them, but read as cells (the rows known only to their levels' cells, width 1) its likelihood is at
    most what the cells' masses allow, log 1 = 0 per row, and a single wide Gaussian does about as well."""
    from model.dequantize import dequantize_rows
    from model.low_dim import cell_log_likelihood, converged_em
    from model.refinement import full_em

    rng = np.random.default_rng(0)
    X = np.clip(np.round(rng.normal(2.0, 1.0, (500, 1))), 0, 4)
    levels = np.unique(X[:, 0])
    on_levels = full_em(X, np.searchsorted(levels, X[:, 0]), len(levels), steps=20, floor=1e-4)[1]
    wide = converged_em(X, np.zeros(500, np.int64), 1)[1]
    columns = np.array([True])
    density_on_levels = float(on_levels.posterior(X)[1].sum() - 0.5 * np.log(2 * np.pi) * 500)
    cells_on_levels = cell_log_likelihood(X, columns, on_levels) - 0.5 * np.log(2 * np.pi) * 500
    cells_wide = cell_log_likelihood(X, columns, wide) - 0.5 * np.log(2 * np.pi) * 500
    assert density_on_levels > 500  # points of mass: a density far above 1 per row
    assert cells_on_levels <= 0.05 * 500  # cells of width 1: at most mass 1 each (up to the draws' noise)
    assert cells_wide > cells_on_levels - 0.2 * 500  # a single Gaussian is nearly as likely on cells
    assert np.all(np.abs(dequantize_rows(X, columns, seed=1)[0] - X) <= 0.5)


def test_the_discretized_choice_keeps_per_k_the_mixture_likelier_on_cells_and_labels_rows_as_given():
    from model.dequantize import dequantize_rows
    from model.low_dim import bic_choice, discretized_choice, kmeans_starts, resolution_floor

    rng = np.random.default_rng(1)
    y = rng.integers(0, 3, 400)
    X = np.clip(np.round(np.array([[1.0, 1.0], [3.0, 4.0], [4.5, 1.5]])[y] + rng.normal(0, 0.7, (400, 2))), 1, 5)
    columns = np.array([True, True])
    S = dequantize_rows(X, columns)[0]
    as_given = bic_choice(X, {k: [s] for k, s in zip(range(2, 7), kmeans_starts(X, 6))}, floor=resolution_floor(X))
    spread = bic_choice(S, {k: [s] for k, s in zip(range(2, 7), kmeans_starts(S, 6))}, floor=resolution_floor(S))
    got = discretized_choice(X, columns, as_given, spread)
    assert list(got.ks) == [2, 3, 4, 5, 6] and got.k == got.ks[np.argmin(got.bic)]
    for k in got.ks:
        assert got.mixtures[int(k)] in (as_given.mixtures[int(k)], spread.mixtures[int(k)])
    np.testing.assert_array_equal(got.labels, got.mixture.posterior(X)[0].argmax(1))
    assert abs(got.probabilities.sum() - 1.0) < 1e-9
