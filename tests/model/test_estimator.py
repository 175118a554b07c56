"""model/estimator.py: the TabClustPFN scikit-learn clusterer on a tiny random checkpoint."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import adjusted_rand_score

import model.estimator as estimator_module
from model.checkpoint import save_checkpoint
from model.estimator import TabClustPFN
from model.preprocessing import TablePreprocessor
from model.refinement import FULL_COVARIANCE_MAX_WIDTH, REFINES, DiagonalMixture, FullMixture
from model.encoder import Encoder
from tests.model.conftest import make_tiny_net

K_MAX = 10  # of the tiny preset


def _blobs(n_per: int = 40, d: int = 4, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=4.0, size=(3, d))
    return np.concatenate([rng.normal(c, 0.5, size=(n_per, d)) for c in centers])


def test_fit_sets_the_fitted_attributes(tiny_checkpoint):
    X = _blobs()
    est = TabClustPFN(checkpoint=tiny_checkpoint)
    assert est.fit(X) is est
    n = len(X)
    assert est.labels_.shape == (n,) and est.labels_.dtype == np.int64
    assert est.probabilities_.shape == (n, est.n_clusters_)
    np.testing.assert_allclose(est.probabilities_.sum(1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(est.labels_, est.probabilities_.argmax(1))
    assert est.n_features_in_ == 4 and not hasattr(est, "feature_names_in_")
    np.testing.assert_array_equal(est.context_indices_, np.arange(n))


def test_k_posterior_covers_2_to_kmax_and_sums_to_one(tiny_checkpoint):
    est = TabClustPFN(checkpoint=tiny_checkpoint).fit(_blobs(d=6))  # wider than the BIC path's 4 columns
    assert sorted(est.k_posterior_) == list(range(2, K_MAX + 1))
    assert sum(est.k_posterior_.values()) == pytest.approx(1.0, abs=1e-9)


def test_posterior_mode_rule_picks_the_most_probable_k(tiny_checkpoint):
    est = TabClustPFN(checkpoint=tiny_checkpoint, k_selection="posterior_mode").fit(_blobs())
    assert est.k_chosen_ == max(est.k_posterior_, key=est.k_posterior_.get)  # N=120: every K allowed
    assert est.n_clusters_ == len(np.unique(est.labels_)) <= est.k_chosen_  # a component left empty: dropped
    assert est.k_scores_ == pytest.approx(est.k_posterior_)


def test_expected_ari_rule_picks_the_partition_agreeing_most_with_the_posterior(tiny_checkpoint):
    X = _blobs()  # one column ordering: the posterior-weighted ARI with the candidates themselves
    est = TabClustPFN(refine="none", checkpoint=tiny_checkpoint, n_estimators=1).fit(X)
    assert est.k_selection_ == "expected_ari"  # "auto" without a K ranker in the checkpoint
    fixed = {k: TabClustPFN(refine="none", n_clusters=k, checkpoint=tiny_checkpoint, n_estimators=1).fit(X).labels_
             for k in range(2, K_MAX + 1)}
    for k, score in est.k_scores_.items():  # the score is the posterior-weighted ARI with every other candidate
        expected = sum(est.k_posterior_[j] * adjusted_rand_score(fixed[k], fixed[j]) for j in fixed)
        assert score == pytest.approx(expected, abs=1e-9)
    assert est.k_chosen_ == max(est.k_scores_, key=est.k_scores_.get)
    np.testing.assert_array_equal(est.labels_, fixed[est.k_chosen_])


def test_k_selection_rules_agree_when_n_clusters_is_given(tiny_checkpoint):
    X = _blobs()
    a = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint, k_selection="posterior_mode").fit(X)
    b = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint, k_selection="expected_ari").fit(X)
    assert a.n_clusters_ == b.n_clusters_ == 3
    np.testing.assert_array_equal(a.labels_, b.labels_)


@pytest.mark.parametrize("refine", ["gmm", "kmeans", "none"])
def test_a_chosen_k_whose_partition_leaves_a_component_empty_reports_the_clusters_found(tiny_checkpoint, refine):
    """Three blobs, K by the posterior's mode: the random tiny network's mode is K = 4 and its partition at K = 4
    holds rows in only 3 components (refined or not). The answer is those 3: ``n_clusters_``, the columns of
    ``probabilities_`` and of ``predict_proba``, each row's soft assignment renormalised over them."""
    X = _blobs()
    est = TabClustPFN(checkpoint=tiny_checkpoint, refine=refine, k_selection="posterior_mode").fit(X)
    assert est.k_chosen_ == 4 and est.n_clusters_ == 3
    assert sorted(np.unique(est.labels_)) == [0, 1, 2]
    assert est.probabilities_.shape == (len(X), 3)
    np.testing.assert_allclose(est.probabilities_.sum(1), 1.0, atol=1e-9)
    np.testing.assert_array_equal(est.probabilities_.argmax(1), est.labels_)
    np.testing.assert_allclose(est.predict_proba(X), est.probabilities_, atol=1e-6)
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    fixed = TabClustPFN(checkpoint=tiny_checkpoint, refine=refine, n_clusters=4).fit(X)  # a given K is kept
    assert fixed.n_clusters_ == fixed.k_chosen_ == 4 and fixed.probabilities_.shape == (len(X), 4)
    np.testing.assert_array_equal(fixed.labels_, est.labels_)


def test_given_n_clusters_is_used_and_the_posterior_is_still_computed(tiny_checkpoint):
    X = _blobs(d=6)
    auto = TabClustPFN(checkpoint=tiny_checkpoint).fit(X)
    fixed = TabClustPFN(n_clusters=4, checkpoint=tiny_checkpoint).fit(X)
    assert fixed.n_clusters_ == 4 and fixed.probabilities_.shape == (len(X), 4)
    assert fixed.k_posterior_ == pytest.approx(auto.k_posterior_)
    assert fixed.labels_.max() <= 3


def test_labels_are_numbered_in_order_of_first_appearance(tiny_checkpoint):
    est = TabClustPFN(n_clusters=5, checkpoint=tiny_checkpoint).fit(_blobs(seed=3))
    _, first = np.unique(est.labels_, return_index=True)
    assert est.labels_[0] == 0
    assert np.all(np.diff(first) > 0)  # label j appears before label j+1
    assert set(est.labels_) == set(range(len(first)))  # contiguous 0..m-1


def test_fit_predict_and_list_input_match_fit(tiny_checkpoint):
    X = _blobs(seed=4)
    est = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint, random_state=0)
    labels = est.fit(X).labels_
    np.testing.assert_array_equal(est.fit_predict(X), labels)
    np.testing.assert_array_equal(est.fit(X.tolist()).labels_, labels)
    assert labels.max() <= 2


def test_single_feature_table_is_clustered(tiny_checkpoint):
    X = np.concatenate([np.zeros(10), np.full(10, 5.0)])[:, None] + np.linspace(0, 0.1, 20)[:, None]
    est = TabClustPFN(n_clusters=2, checkpoint=tiny_checkpoint).fit(X)
    assert est.labels_.shape == (20,) and est.n_features_in_ == 1


@pytest.mark.parametrize("rule", ["expected_ari", "posterior_mode"])
def test_auto_k_stays_below_the_number_of_rows(tiny_checkpoint, rule):
    X = _blobs()[::30]  # 4 rows
    est = TabClustPFN(checkpoint=tiny_checkpoint, k_selection=rule).fit(X)
    assert 2 <= est.n_clusters_ <= 3
    assert all(v == -np.inf for k, v in est.k_scores_.items() if k > 3)


@pytest.mark.parametrize("rule", ["expected_ari", "posterior_mode"])
@pytest.mark.parametrize("cap", [2, 3, 5])
def test_max_clusters_bounds_the_inferred_k(tiny_checkpoint, rule, cap):
    X = _blobs()
    est = TabClustPFN(checkpoint=tiny_checkpoint, k_selection=rule, max_clusters=cap).fit(X)
    assert 2 <= est.n_clusters_ <= est.k_chosen_ <= cap
    assert all(v == -np.inf for k, v in est.k_scores_.items() if k > cap)
    assert est.k_chosen_ == max(est.k_scores_, key=est.k_scores_.get)
    if rule == "posterior_mode":  # the most probable K among those allowed
        allowed = {k: p for k, p in est.k_posterior_.items() if k <= cap}
        assert est.k_chosen_ == max(allowed, key=allowed.get)
    fixed = TabClustPFN(n_clusters=est.k_chosen_, checkpoint=tiny_checkpoint).fit(X)
    np.testing.assert_array_equal(est.labels_, fixed.labels_)


def test_max_clusters_leaves_a_given_n_clusters_alone(tiny_checkpoint):
    X = _blobs()
    capped = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint, max_clusters=6).fit(X)
    plain = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint).fit(X)
    assert capped.n_clusters_ == 3
    np.testing.assert_array_equal(capped.labels_, plain.labels_)


@pytest.mark.parametrize(
    ("X", "params", "match"),
    [
        (np.zeros((0, 3)), {}, "empty table"),
        (np.ones((1, 3)), {}, "at least 2 rows"),
        (np.zeros((5, 3, 2)), {}, "3-D array"),
        (np.array([[0.0, 1.0], [np.inf, 2.0], [1.0, 0.0]]), {}, "contains inf"),
        (np.array([[1.0, np.nan], [2.0, np.nan], [2.0, np.nan]]), {}, None),  # fine: NaN column dropped
        (np.array([[np.nan, 1.0], [np.nan, 1.0], [np.nan, 1.0]]), {}, "no usable column"),
        (pd.DataFrame({"age": np.array([3.0, "low", 5.0], dtype=object)}), {}, "'age'.*non-numeric"),
        (pd.DataFrame(_blobs(d=2), columns=["x", "x"]), {}, r"column names \['x'\] occur more than once"),
        (_blobs(), {"n_clusters": 1}, r"n_clusters=1 is outside 2\.\.10"),
        (_blobs(), {"n_clusters": K_MAX + 1}, r"n_clusters=11 is outside 2\.\.10"),
        (_blobs()[:3], {"n_clusters": 3}, r"smaller than the number of rows \(n_samples=3\)"),
        (_blobs()[:2], {}, r"choosing K needs at least 3 rows: got n_samples=2"),
        (_blobs(), {"n_context": 3, "n_clusters": 3}, r"smaller than the number of rows \(the context's "
                                                       r"n_context=3 rows; raise n_context\)"),
        (_blobs(), {"n_context": 2}, r"at least 3 rows: the context has n_context=2; raise n_context"),
        (_blobs(), {"k_selection": "silhouette"}, "'k_selection' parameter .* must be a str among"),
        (_blobs(), {"max_clusters": 1}, r"max_clusters=1 is outside 2\.\.10"),
        (_blobs(), {"max_clusters": K_MAX + 1}, r"max_clusters=11 is outside 2\.\.10"),
        (_blobs(), {"n_clusters": 5, "max_clusters": 3}, "n_clusters=5 is larger than max_clusters=3"),
        (_blobs(), {"max_clusters": 2.5}, "'max_clusters' parameter .* must be an int"),
        (_blobs(), {"impute": "mean"}, "'impute' parameter .* must be a str among"),
    ],
)
def test_bad_input_raises_a_value_error_naming_the_problem(tiny_checkpoint, X, params, match):
    est = TabClustPFN(checkpoint=tiny_checkpoint, **params)
    if match is None:
        assert est.fit(X).labels_.shape == (len(X),)
        return
    with pytest.raises(ValueError, match=match):
        est.fit(X)


def test_non_integer_n_clusters_is_refused(tiny_checkpoint):
    with pytest.raises(ValueError, match="n_clusters"):
        TabClustPFN(n_clusters=2.5, checkpoint=tiny_checkpoint).fit(_blobs())


def test_dataframe_with_categorical_object_and_bool_columns(tiny_checkpoint):
    rng = np.random.default_rng(0)
    n = 60
    df = pd.DataFrame({
        "income": rng.normal(50, 10, n),
        "city": rng.choice(["paris", "lyon", "nice"], n).astype(object),
        "segment": pd.Categorical(rng.choice(["a", "b"], n)),
        "member": rng.random(n) > 0.5,
        "visits": rng.integers(0, 20, n).astype(float),
    })
    df.loc[3, "income"] = np.nan
    df.loc[5, "city"] = None
    est = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint).fit(df)
    assert est.labels_.shape == (n,)
    assert list(est.feature_names_in_) == list(df.columns)
    assert est.preprocessor_.cat_mask_.tolist() == [False, True, True, True, False]
    np.testing.assert_array_equal(est.predict(df), est.labels_)
    with pytest.raises(ValueError, match="feature names"):
        est.predict(df[list(reversed(df.columns))])


@pytest.mark.parametrize("refine", REFINES)
def test_predict_on_the_fitted_rows_reproduces_labels(tiny_checkpoint, refine):
    X = _blobs(n_per=50)
    est = TabClustPFN(checkpoint=tiny_checkpoint, refine=refine).fit(X)
    assert len(X) <= est.n_context
    np.testing.assert_array_equal(est.predict(X), est.labels_)


@pytest.mark.parametrize("d", [2, FULL_COVARIANCE_MAX_WIDTH, FULL_COVARIANCE_MAX_WIDTH + 2])
def test_gmm_refinement_fits_full_covariances_on_tables_of_few_columns_and_diagonal_ones_beyond(tiny_checkpoint, d):
    X = _blobs(n_per=50, d=d)
    est = TabClustPFN(checkpoint=tiny_checkpoint, refine="gmm", n_clusters=3).fit(X)  # K given: not the BIC path
    assert isinstance(est._centroids, FullMixture if d <= FULL_COVARIANCE_MAX_WIDTH else DiagonalMixture)
    np.testing.assert_allclose(est.predict_proba(X), est.probabilities_, atol=1e-5)  # the same mixture reads new rows
    np.testing.assert_array_equal(est.predict(X), est.labels_)


def _tilted_table(seed: int = 0, n_per: int = 150) -> tuple[np.ndarray, np.ndarray]:
    """Three elongated, differently tilted Gaussian clusters in 2 columns."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n_per)
    X = np.empty((3 * n_per, 2))
    for c, (centre, angle) in enumerate((((0, 0), 0.3), ((7, 1), 1.2), ((2, 7), -0.6))):
        rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
        X[y == c] = rng.normal(size=(n_per, 2)) * [2.0, 0.4] @ rot.T + centre
    return X, y


def _assert_three_groups_by_bic(est: TabClustPFN, X, y: np.ndarray, rule: str, mixture: type) -> None:
    """A fit whose K and partition came from a BIC path (``rule``): K = 3 found, of the highest score and
    probability over K, the path's ``mixture`` assigning the rows it was fitted on as fit did."""
    assert est.k_selection_ == rule and est.n_clusters_ == 3
    assert adjusted_rand_score(y, est.labels_) > 0.9
    assert isinstance(est._centroids, mixture)
    assert max(est.k_scores_, key=est.k_scores_.get) == 3
    assert sum(est.k_probabilities_.values()) == pytest.approx(1.0)
    assert max(est.k_probabilities_, key=est.k_probabilities_.get) == 3
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    np.testing.assert_allclose(est.predict_proba(X), est.probabilities_, atol=1e-6)


def test_on_few_columns_k_and_the_partition_come_from_the_bic_of_full_covariance_mixtures(tiny_checkpoint):
    """The defaults on a 2-column table take model.low_dim's path, whatever the network (here an untrained one)
    proposes: K of lowest BIC, its probabilities over K from the BIC, the mixture assigning new rows."""
    X, y = _tilted_table()
    est = TabClustPFN(checkpoint=tiny_checkpoint).fit(X)
    _assert_three_groups_by_bic(est, X, y, "bic", FullMixture)
    capped = TabClustPFN(checkpoint=tiny_checkpoint, max_clusters=2).fit(X)
    assert capped.k_selection_ == "bic" and capped.n_clusters_ == 2
    assert all(p == 0.0 for k, p in capped.k_probabilities_.items() if k > 2)


def test_the_bic_path_merges_the_components_that_tile_two_crescents(tiny_checkpoint):
    """Two crescents in 2 columns: BIC tiles them with many Gaussians; the defaults merge tiles of one crescent
    (model.tiles; part of the way at the shipped thresholds), report that K with the probability BIC's top choice
    had, assign new rows by the merged mixture, and still give BIC's own partition at the K it preferred."""
    from sklearn.datasets import make_moons

    from model.tiles import MergedMixture

    X, y = make_moons(800, noise=0.06, random_state=2)
    est = TabClustPFN(checkpoint=tiny_checkpoint).fit(X)
    tiles = TabClustPFN(checkpoint=tiny_checkpoint)
    tiles._low_dim_merge = None  # the baseline it was judged against: BIC's components are the clusters
    tiles.fit(X)
    k_bic = tiles.n_clusters_
    k = est.n_clusters_
    assert est.k_selection_ == tiles.k_selection_ == "bic" and k_bic >= 7 and 2 <= k < k_bic
    assert adjusted_rand_score(y, est.labels_) > adjusted_rand_score(y, tiles.labels_) + 0.2
    assert all(len(np.unique(y[est.labels_ == c])) == 1 for c in range(k))  # no cluster spans the two crescents
    assert isinstance(est._centroids, MergedMixture)
    assert est.k_scores_ == tiles.k_scores_ and max(est.k_scores_, key=est.k_scores_.get) == k_bic
    assert est.k_probabilities_[k] == tiles.k_probabilities_[k_bic]
    assert max(est.k_probabilities_, key=est.k_probabilities_.get) == k
    np.testing.assert_array_equal(est.predict(X), est.labels_)
    np.testing.assert_allclose(est.predict_proba(X), est.probabilities_, atol=1e-6)
    np.testing.assert_array_equal(est.predict(X, n_clusters=k_bic), tiles.labels_)


def test_the_bic_path_runs_no_network_its_answer_is_the_same_under_other_weights(tiny_checkpoint, tmp_path):
    """On the BIC path the mixtures start from k-means++ partitions: another network's weights change nothing,
    no posterior of CIN is reported and no ordering is used; the mixture alone assigns new rows."""
    from model.checkpoint import save_checkpoint
    from tests.model.conftest import make_tiny_net

    other = tmp_path / "other.pt"
    save_checkpoint(other, make_tiny_net(seed=7), {"steps": 0, "note": "other random weights"})
    X, _ = _tilted_table()
    fits = [TabClustPFN(checkpoint=path).fit(X) for path in (tiny_checkpoint, str(other))]
    for est in fits:
        assert est.k_selection_ == "bic" and est.k_posterior_ is None and est.n_estimators_ == 0
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    np.testing.assert_array_equal(fits[0].probabilities_, fits[1].probabilities_)
    assert fits[0].k_probabilities_ == fits[1].k_probabilities_
    rng = np.random.default_rng(5)
    new = X[:20] + 0.1 * rng.normal(size=(20, 2))
    np.testing.assert_array_equal(fits[0].predict(new), fits[1].predict(new))
    np.testing.assert_array_equal(fits[0].predict(X), fits[0].labels_)


def test_the_bic_path_from_the_networks_candidates_still_reports_its_posterior(tiny_checkpoint):
    """The design alternative the default replaced (``_low_dim_starts="network"``) runs the network: CIN's
    posterior and the orderings are reported, and K still comes from BIC."""
    X, y = _tilted_table()
    est = TabClustPFN(checkpoint=tiny_checkpoint)
    est._low_dim_starts = "network"
    est.fit(X)
    assert est.k_selection_ == "bic" and est.n_estimators_ > 0
    assert sum(est.k_posterior_.values()) == pytest.approx(1.0)
    assert adjusted_rand_score(y, est.labels_) > 0.9


def test_the_bic_path_judges_k_by_the_criterion_its_switch_names(tiny_checkpoint):
    """``_low_dim_criterion`` reaches the BIC path: its ``k_scores_`` are -criterion / (2N) of the same mixtures,
    AIC3's above BIC's by (log N - 3) per parameter / (2N)."""
    from model.low_dim import n_parameters

    X, _ = _tilted_table()
    fits = {}
    for criterion in ("bic", "aic3"):
        est = TabClustPFN(checkpoint=tiny_checkpoint)
        est._low_dim_criterion = criterion
        fits[criterion] = est.fit(X)
        assert est.k_selection_ == "bic"
    n, ks = len(X), [k for k, v in fits["bic"].k_scores_.items() if np.isfinite(v)]
    for k in ks:
        gap = n_parameters(k, X.shape[1]) * (np.log(n) - 3.0) / (2 * n)
        assert fits["aic3"].k_scores_[k] - fits["bic"].k_scores_[k] == pytest.approx(gap)
    assert fits["aic3"].n_clusters_ >= fits["bic"].n_clusters_


def test_the_bic_path_with_aic3_takes_it_on_complete_fine_tables_and_bic_on_rough_ones(tiny_checkpoint):
    """The defaults judge K by BIC. With ``_low_dim_criterion="aic3"`` (a design switch), AIC3 judges a complete
    table of few fine-grained columns, and BIC a rough one (``_low_dim_criterion_rough``): a cell to fill (one is
    enough) or a column of <= 20 values, whose filled cells and levels sit where no Gaussian put them."""
    from model.low_dim import fine_columns

    X, _ = _tilted_table()
    gappy = X.copy()
    gappy[5, 1] = np.nan
    levels = X.copy()
    levels[:, 1] = np.round(X[:, 1] / 2)  # a column of a few levels
    assert not fine_columns(levels).all() and fine_columns(X).all()

    def scores(table, criterion=None, rough=None):
        est = TabClustPFN(checkpoint=tiny_checkpoint)
        est._low_dim_criterion = est._low_dim_criterion if criterion is None else criterion
        est._low_dim_criterion_rough = est._low_dim_criterion_rough if rough is None else rough
        return est.fit(table).k_scores_

    assert (TabClustPFN._low_dim_criterion, TabClustPFN._low_dim_criterion_rough) == ("bic", "bic")
    assert scores(X) == scores(X, "bic", "aic3") != scores(X, "aic3")
    for rough in (gappy, levels):
        assert scores(rough, "aic3") == scores(rough) != scores(rough, "aic3", "aic3")


def test_kmeans_starts_are_seeded_k_means_partitions_at_every_k():
    from model.low_dim import kmeans_starts

    X, y = _tilted_table()
    starts = kmeans_starts(X, 5)
    assert starts.shape == (4, len(X)) and starts.dtype == np.int64
    assert [len(np.unique(s)) for s in starts] == [2, 3, 4, 5]
    np.testing.assert_array_equal(starts, kmeans_starts(X, 5))  # the same table, the same starts
    coarse = np.repeat(np.arange(3.0), 20)[:, None]  # 3 distinct rows, 4 clusters asked: no warning, one empty
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(np.unique(kmeans_starts(coarse, 4)[2])) == 3


@pytest.mark.parametrize("settings", [dict(n_clusters=3), dict(k_selection="expected_ari"), dict(refine="kmeans"),
                                      dict(wide=True)])
def test_the_bic_path_is_taken_only_by_the_defaults_on_few_columns(tiny_checkpoint, settings):
    X, _ = _tilted_table()
    if settings.pop("wide", False):
        rng = np.random.default_rng(1)  # 5 columns, each carrying the clusters (none screened out as noise)
        X = X @ rng.normal(size=(2, 5)) + 0.3 * rng.normal(size=(len(X), 5))
    est = TabClustPFN(checkpoint=tiny_checkpoint, **settings).fit(X)
    assert est.k_selection_ != "bic"


@pytest.mark.parametrize("refine", REFINES)
def test_predict_proba_on_the_fitted_rows_reproduces_probabilities_in_label_order(tiny_checkpoint, refine):
    X = _blobs(n_per=50)
    rng = np.random.default_rng(0)
    for _ in range(20):  # a row order whose first-seen numbering differs from the network's cluster order
        Xs = X[rng.permutation(len(X))]
        est = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint, refine=refine).fit(Xs)
        if not np.array_equal(est._relabel, np.arange(3)):
            break
    else:
        pytest.fail("no row order renumbered the clusters")
    proba = est.predict_proba(Xs)
    assert proba.shape == (len(Xs), est.n_clusters_)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(proba, est.probabilities_, atol=1e-5)
    np.testing.assert_array_equal(proba.argmax(axis=1), est.predict(Xs))
    np.testing.assert_array_equal(est.predict(Xs), est.labels_)


def test_predict_rows_do_not_depend_on_each_other(tiny_checkpoint):
    X = _blobs()
    est = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint, batch_rows=7).fit(X)
    rng = np.random.default_rng(1)
    X_new = rng.normal(scale=3.0, size=(25, 4))
    full = est.predict(X_new)
    np.testing.assert_array_equal(est.predict(X_new[:9]), full[:9])  # subset invariance
    order = rng.permutation(25)
    np.testing.assert_array_equal(est.predict(X_new[order]), full[order])  # row-order equivariance
    assert est.predict(X_new[:1]).shape == (1,)


def test_predict_refuses_wrong_width_1d_input_and_unfitted_use(tiny_checkpoint):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        TabClustPFN(checkpoint=tiny_checkpoint).predict(_blobs())
    with pytest.raises(NotFittedError):
        TabClustPFN(checkpoint=tiny_checkpoint).predict_proba(_blobs())
    est = TabClustPFN(checkpoint=tiny_checkpoint).fit(_blobs())
    with pytest.raises(ValueError, match="X has 3 features, but TabClustPFN is expecting 4"):
        est.predict(_blobs(d=3))
    with pytest.raises(ValueError, match="X has 3 features, but TabClustPFN is expecting 4"):
        est.predict_proba(_blobs(d=3))
    with pytest.raises(ValueError, match="Reshape your data"):
        est.predict(np.zeros(4))
    named = TabClustPFN(checkpoint=tiny_checkpoint).fit(pd.DataFrame(_blobs(), columns=list("abcd")))
    with pytest.raises(ValueError, match=r"column names \['a'\] occur more than once"):
        named.predict(pd.DataFrame(_blobs(), columns=list("abca")))


def test_fit_does_not_change_the_parameters(tiny_checkpoint):
    est = TabClustPFN(checkpoint=tiny_checkpoint, random_state=3, n_context=50, batch_rows=30)
    before = est.get_params()
    est.fit(_blobs())
    assert est.get_params() == before
    public = {k for k in vars(est) if not k.startswith("_")}
    assert {k for k in public if not k.endswith("_")} == set(before)  # fit only adds trailing-_ attributes


def test_large_n_uses_a_context_subsample_and_labels_every_row(tiny_checkpoint, monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 6)) + np.repeat(rng.normal(scale=5.0, size=(2, 6)), 2500, axis=0)
    rows_per_pass = []
    encode = Encoder._encode

    def spy(self, X, *args, **kwargs):
        rows_per_pass.append(X.shape[1])
        return encode(self, X, *args, **kwargs)

    monkeypatch.setattr(Encoder, "_encode", spy)
    est = TabClustPFN(refine="none", checkpoint=tiny_checkpoint, n_context=500, batch_rows=1500, random_state=0).fit(X)
    assert est.labels_.shape == (5000,) and est.labels_.min() == 0
    assert est.probabilities_.shape == (5000, est.n_clusters_) and np.isfinite(est.probabilities_).all()
    np.testing.assert_allclose(est.probabilities_.sum(1), 1.0, atol=1e-6)
    assert len(est.context_indices_) == 500 and len(np.unique(est.context_indices_)) == 500
    assert max(rows_per_pass) <= 1500  # memory is bounded by max(n_context, batch_rows) rows
    # the context once (every K and the chosen K's prototypes), then 3 chunks that encode only their rows
    assert rows_per_pass == [500, 1500, 1500, 1500]
    again = TabClustPFN(refine="none", checkpoint=tiny_checkpoint, n_context=500, batch_rows=1500, random_state=0).fit(X)
    np.testing.assert_array_equal(again.labels_, est.labels_)  # deterministic given random_state
    other = TabClustPFN(refine="none", checkpoint=tiny_checkpoint, n_context=500, batch_rows=1500, random_state=1).fit(X)
    assert not np.array_equal(other.context_indices_, est.context_indices_)


@pytest.mark.parametrize("refine", REFINES)
def test_large_n_labels_agree_with_predict_for_context_and_other_rows(tiny_checkpoint, refine):
    X = _blobs(n_per=100)  # 300 rows, 120 of them context
    est = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint, n_context=120, batch_rows=50,
                      random_state=0, refine=refine).fit(X)
    # Context rows were assigned in the context pass, the others in chunks; predict treats all as new rows.
    np.testing.assert_array_equal(est.predict(X), est.labels_)


def test_wide_table_is_reduced_with_a_warning(tiny_checkpoint):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 70))
    with pytest.warns(UserWarning, match="principal components") as record:
        est = TabClustPFN(checkpoint=tiny_checkpoint).fit(X)
    assert est.labels_.shape == (80,)
    assert record[0].filename == __file__  # the warning points at the user's line, not at the package


def test_default_checkpoint_missing_gives_a_clear_file_not_found(monkeypatch, tmp_path):
    monkeypatch.setattr(estimator_module, "default_checkpoint_path", lambda: tmp_path / "absent.pt")
    with pytest.raises(FileNotFoundError, match="checkpoint="):
        TabClustPFN().fit(_blobs())


def test_networks_are_cached_per_path_mtime_and_reloaded_when_the_file_changes(tmp_path, monkeypatch):
    path = save_checkpoint(tmp_path / "m.pt", make_tiny_net(0))
    loads = []
    real = estimator_module.load_checkpoint
    monkeypatch.setattr(estimator_module, "load_checkpoint", lambda *a, **k: loads.append(a) or real(*a, **k))
    est = TabClustPFN(refine="none", checkpoint=path)
    est.fit(_blobs())
    est.fit(_blobs(seed=1))
    est.predict(_blobs())
    assert len(loads) == 1
    save_checkpoint(path, make_tiny_net(1))
    os.utime(path, ns=(1, 1))  # a distinct mtime even on coarse-grained filesystems
    with pytest.raises(ValueError, match="changed since fit"):
        est.predict(_blobs())
    assert len(loads) == 2
    assert est.fit(_blobs()).predict(_blobs()).shape == (120,)  # a new fit uses the new weights


def test_auto_k_stays_below_the_number_of_context_rows(tiny_checkpoint):
    """With N > n_context the partitions come from the context alone, so K is bounded by its size, not N's."""
    est = TabClustPFN(checkpoint=tiny_checkpoint, n_context=3, random_state=0).fit(_blobs())
    assert est.n_clusters_ == 2
    assert all(v == -np.inf for k, v in est.k_scores_.items() if k > 2)


def test_a_failed_refit_leaves_the_previous_fit_usable(tiny_checkpoint):
    X = _blobs()
    est = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint).fit(X)
    labels = est.labels_.copy()
    bad = np.c_[X, X[:, :1]]
    bad[0, 0] = np.inf
    with pytest.raises(ValueError, match="contains inf"):
        est.fit(bad)
    assert est.n_features_in_ == 4
    np.testing.assert_array_equal(est.predict(X), labels)


def test_predict_checks_parameters_changed_after_fit(tiny_checkpoint):
    est = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint).fit(_blobs())
    est.set_params(batch_rows=0)
    with pytest.raises(ValueError, match="batch_rows"):
        est.predict(_blobs())


def test_relative_checkpoint_path_still_found_after_a_change_of_directory(tiny_checkpoint, tmp_path,
                                                                          monkeypatch):
    monkeypatch.chdir(Path(tiny_checkpoint).parent)
    est = TabClustPFN(n_clusters=3, checkpoint=Path(tiny_checkpoint).name).fit(_blobs())
    monkeypatch.chdir(tmp_path)
    np.testing.assert_array_equal(est.predict(_blobs()), est.labels_)


def test_unpickled_estimator_uses_the_shipped_weights_of_the_package_it_is_loaded_with(tmp_path, monkeypatch):
    """A model fitted on the shipped weights and unpickled where the package lives elsewhere (another checkout,
    another environment) predicts with that copy's weights, and refuses if they are not the ones fitted with."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    monkeypatch.setattr(estimator_module, "default_checkpoint_path", lambda: here / "shipped.pt")
    save_checkpoint(here / "shipped.pt", make_tiny_net(0))
    est = TabClustPFN(refine="none", n_clusters=3).fit(_blobs())
    blob = pickle.dumps(est)
    (here / "shipped.pt").unlink()
    monkeypatch.setattr(estimator_module, "default_checkpoint_path", lambda: there / "shipped.pt")
    save_checkpoint(there / "shipped.pt", make_tiny_net(0))
    np.testing.assert_array_equal(pickle.loads(blob).predict(_blobs()), est.labels_)
    save_checkpoint(there / "shipped.pt", make_tiny_net(1))
    with pytest.raises(ValueError, match="changed since fit"):
        pickle.loads(blob).predict(_blobs())


def test_pickle_round_trip_drops_the_network_and_predicts_the_same(tiny_checkpoint):
    est = TabClustPFN(n_clusters=3, checkpoint=tiny_checkpoint).fit(_blobs())
    blob = pickle.dumps(est)
    assert b"TabClustNet" not in blob
    np.testing.assert_array_equal(pickle.loads(blob).predict(_blobs(seed=2)), est.predict(_blobs(seed=2)))


def test_device_choice(tiny_checkpoint):
    est = TabClustPFN(checkpoint=tiny_checkpoint, device="cpu").fit(_blobs())
    assert est.labels_.shape == (120,)
    with pytest.raises(ValueError, match="not a torch device"):
        TabClustPFN(checkpoint=tiny_checkpoint, device="abacus").fit(_blobs())
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            TabClustPFN(checkpoint=tiny_checkpoint, device="cuda").fit(_blobs())


def test_estimator_never_imports_ray_or_mlflow(tiny_checkpoint):
    code = (
        "import sys, numpy as np\n"
        "from model import TabClustPFN\n"
        f"TabClustPFN(checkpoint={tiny_checkpoint!r}).fit(np.random.default_rng(0).normal(size=(30, 3)))\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('ray', 'mlflow'))\n"
        "assert not bad, bad\n"
    )
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_power_transform_reaches_the_preprocessing_and_predict_applies_the_fitted_exponents(tiny_checkpoint):
    from scipy.stats import skew

    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 60)  # three groups on a multiplicative scale, some columns skewed more than others
    scale = [0.3, 0.6, 0.9, 1.2, 0.2, 1.0]
    X = np.exp(rng.normal(scale=scale, size=(180, 6)) + 0.5 * y[:, None]) * [1.0, 10.0, 1e3, 1e-2, 5.0, 1.0]
    on = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, power_transform=True).fit(X)
    off = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, power_transform=False).fit(X)
    skewed = {f"column {j}" for j in range(6) if abs(skew(X[:, j])) > 1.0}
    assert skewed and set(on.preprocessor_.power_transformed_) == skewed
    assert off.preprocessor_.power_transformed_ == {}
    narrow = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, power_transform=True).fit(X[:, :4])
    assert narrow.preprocessor_.power_transformed_ == {}  # 4 columns: the BIC path's width, left as they are
    np.testing.assert_array_equal(on.predict(X), on.labels_)  # new rows: the exponents fitted on X
    Z_on, Z_off = on.preprocessor_.transform(X)[0], off.preprocessor_.transform(X)[0]
    assert not np.allclose(Z_on, Z_off)  # the network saw the transformed table
    with pytest.raises(ValueError, match="power_transform"):
        TabClustPFN(checkpoint=tiny_checkpoint, power_transform="yes").fit(X)


def test_impute_reaches_the_preprocessing_and_predict_fills_new_rows_from_the_fitted_ones(tiny_checkpoint):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    X = np.where(rng.random((200, 3)) < 0.2, np.nan, 8.0 * y[:, None] + rng.normal(size=(200, 3)))
    est = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, impute="neighbors").fit(X)
    assert est.preprocessor_.impute == "neighbors"
    gaps = np.isnan(X)
    Z_fit, Z_median = est.preprocessor_.transform(X)[0], TablePreprocessor().fit_transform(X)[0]
    np.testing.assert_array_equal(Z_fit[~gaps], Z_median[~gaps])
    assert not np.allclose(Z_fit[gaps], Z_median[gaps])
    np.testing.assert_array_equal(est.predict(X), est.labels_)


def _blobs_with_empty_rows(n_features: int, share: float = 0.05):
    """Three blobs (600 rows) with every cell of about ``share`` of the rows missing -> (X, labels, empty mask)."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=600, n_features=n_features, centers=3, random_state=1)
    empty = np.random.default_rng(0).random(600) < share
    X[empty] = np.nan
    return X, y, empty


def test_rows_with_no_value_are_named_and_set_apart_only_by_the_design_switch():
    X, y, empty = _blobs_with_empty_rows(2)
    with pytest.warns(UserWarning, match=f"{empty.sum()} of the 600 rows have no value in any usable column: they "
                                         "are filled at the columns' centre"):
        filled = TabClustPFN(random_state=0).fit(X)
    np.testing.assert_array_equal(filled.empty_rows_, np.flatnonzero(empty))
    assert filled.n_clusters_ == 4  # the empty rows' own cluster (the model card names it)
    apart = TabClustPFN(random_state=0)
    apart._empty_rows_apart = True  # judged by the protocol, not the default (choice-empty-rows-fresh.md)
    with pytest.warns(UserWarning, match="they do not shape the clusters"):
        apart.fit(X)
    assert apart.n_clusters_ == 3 and adjusted_rand_score(y[~empty], apart.labels_[~empty]) == 1.0
    np.testing.assert_array_equal(apart.empty_rows_, np.flatnonzero(empty))
    assert not np.isin(apart.context_indices_, apart.empty_rows_).any()
    shares = apart.probabilities_[~empty].mean(0)
    np.testing.assert_allclose(apart.probabilities_[empty], np.broadcast_to(shares, (empty.sum(), 3)))
    assert (apart.labels_[empty] == shares.argmax()).all()
    np.testing.assert_allclose(apart.predict_proba(X), apart.probabilities_, atol=1e-12)
    new = np.array([[np.nan, np.nan], X[~empty][0]])
    np.testing.assert_allclose(apart.predict_proba(new)[0], shares)
    assert apart.predict(new)[1] == apart.labels_[~empty][0]


def test_rows_with_no_value_set_apart_stay_out_of_the_networks_context_too(tiny_checkpoint):
    X, _, empty = _blobs_with_empty_rows(6)
    est = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, n_context=200)
    est._empty_rows_apart = True
    with pytest.warns(UserWarning, match="no value in any usable column"):
        est.fit(X)
    assert est.k_selection_ != "bic" and len(est.context_indices_) == 200  # sampled from the rows holding values
    assert not np.isin(est.context_indices_, np.flatnonzero(empty)).any()
    np.testing.assert_allclose(est.probabilities_[empty], np.broadcast_to(est.probabilities_[~empty].mean(0),
                                                                        (empty.sum(), est.n_clusters_)))
    plain = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0).fit(np.nan_to_num(X))
    assert len(plain.empty_rows_) == 0


def test_set_apart_too_few_rows_holding_values_are_refused_naming_the_empty_rows():
    X = np.full((10, 2), np.nan)
    X[:2] = [[0.0, 1.0], [1.0, 0.0]]
    est = TabClustPFN(random_state=0)
    est._empty_rows_apart = True
    with pytest.raises(ValueError, match="8 of the 10 rows have no value in any usable column, which leaves 2 to "
                                         "cluster; choosing K needs at least 3"):
        est.fit(X)
    with pytest.raises(ValueError, match="n_clusters=2 needs at least 3"):
        est.set_params(n_clusters=2).fit(X)


def test_a_column_of_names_beside_blobs_is_dropped_and_the_blobs_are_found():
    # every name distinct: pooled into 15 one-row codes and "other" it once made K = 2 (ARI 0.61) of three blobs
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=600, n_features=2, centers=3, random_state=1)
    df = pd.DataFrame(X, columns=["a", "b"]).assign(name=[f"customer {i:04d}" for i in range(600)])
    with pytest.warns(UserWarning, match="'name' is dropped: every one of its 600 values is distinct"):
        est = TabClustPFN(random_state=0).fit(df)
    assert "column 'name'" in est.preprocessor_.dropped_
    assert est.n_clusters_ == 3 and adjusted_rand_score(y, est.labels_) == 1.0
    np.testing.assert_array_equal(est.labels_, TabClustPFN(random_state=0).fit(df[["a", "b"]]).labels_)
    np.testing.assert_array_equal(est.predict(df.assign(name="someone new")), est.labels_)


def test_question_marks_among_numbers_read_as_missing_and_the_blobs_are_found(tmp_path):
    # a CSV whose numeric columns hold "?" for a missing value reads them as text: taken as categories of 600
    # one-row values, the columns carried nothing (ARI 0); read as numbers with gaps they are the blobs
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=600, n_features=2, centers=3, random_state=1)
    df = pd.DataFrame(X, columns=["a", "b"]).round(4)
    gaps = df.copy()
    gaps.loc[[3, 50, 170], "a"], gaps.loc[[7, 400], "b"] = np.nan, np.nan
    path = tmp_path / "t.csv"
    gaps.to_csv(path, index=False, na_rep="?")
    read = pd.read_csv(path)
    assert not pd.api.types.is_numeric_dtype(read["a"]) and not pd.api.types.is_numeric_dtype(read["b"])
    with pytest.warns(UserWarning, match=r"column 'a': '\?' \(3 cells\) read as missing"):
        est = TabClustPFN(random_state=0).fit(read)
    assert est.preprocessor_.missing_markers_ == {"column 'a'": ["?"], "column 'b'": ["?"]}
    assert not est.preprocessor_.cat_mask_.any()
    np.testing.assert_array_equal(est.labels_, TabClustPFN(random_state=0).fit(gaps).labels_)
    assert est.n_clusters_ == 3 and adjusted_rand_score(y, est.labels_) > 0.95
    np.testing.assert_array_equal(est.predict(read), est.labels_)
    as_categories = TabClustPFN(random_state=0).fit(read.astype("category"))  # how such text was read before
    assert adjusted_rand_score(y, as_categories.labels_) < 0.1


def test_a_missing_value_code_named_in_missing_values_is_imputed_not_clustered():
    # a tenth of one column coded -999: read as a value it is a far group (K = 5 of 3 blobs); named, it is a gap
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=600, n_features=3, centers=3, random_state=2)
    as_nan = pd.DataFrame(X, columns=list("abc")).round(3)
    as_nan.loc[np.random.default_rng(0).choice(600, 60, replace=False), "a"] = np.nan
    coded = as_nan.fillna(-999.0)
    with pytest.warns(UserWarning, match="-999 .* name it in missing_values"):
        plain = TabClustPFN(random_state=0).fit(coded)
    est = TabClustPFN(random_state=0, missing_values=[-999]).fit(coded)
    reference = TabClustPFN(random_state=0).fit(as_nan)
    np.testing.assert_array_equal(est.labels_, reference.labels_)
    np.testing.assert_array_equal(est.predict(coded), reference.predict(as_nan))
    assert adjusted_rand_score(y, est.labels_) > 0.95 > adjusted_rand_score(y, plain.labels_)


def test_a_few_gross_values_are_fenced_and_no_longer_hide_the_clusters():
    # five rows at 1e6 in both columns of three blobs: unfenced they are each column's whole spread (K = 2, ARI 0)
    from sklearn.datasets import make_blobs

    X, y = make_blobs(n_samples=600, n_features=2, centers=3, random_state=1)
    X[:5] = 1e6
    est = TabClustPFN(random_state=0).fit(X)
    assert est._clip_fences == 10.0 and np.isfinite([c.high for c in est.preprocessor_.columns_]).all()
    assert adjusted_rand_score(y[5:], est.labels_[5:]) > 0.95
    unfenced = TabClustPFN(random_state=0)
    unfenced._clip_fences = None
    assert adjusted_rand_score(y[5:], unfenced.fit(X).labels_[5:]) < 0.1


def _latent_class_frame(seed: int = 0, n: int = 450, d: int = 8) -> tuple[pd.DataFrame, np.ndarray]:
    """A table of ``d`` text columns drawn from three latent classes, each favouring its own level of every
    column (probability 0.85; the other two 0.075 each)."""
    rng = np.random.default_rng(seed)
    favoured = np.stack([rng.permutation(3) for _ in range(d)])  # (d, 3): class c's level of column j
    rows = np.random.default_rng([seed, n])
    y = rows.permutation(np.arange(n) % 3)
    other = rows.integers(1, 3, size=(n, d))  # which of the other two levels, where the favoured one is not drawn
    codes = np.where(rows.random((n, d)) < 0.85, favoured.T[y], (favoured.T[y] + other) % 3)
    return pd.DataFrame({f"q{j}": pd.Categorical([f"answer {c}" for c in codes[:, j]]) for j in range(d)}), y


def test_a_table_of_categories_only_takes_k_and_its_partition_from_latent_class_models(tiny_checkpoint):
    """Every column categorical: K of lowest BIC among latent class models started from the network's candidates
    (model.latent_class), its probabilities over K from the BIC, the model assigning new rows and other K."""
    from model.latent_class import CategoricalMixture

    frame, y = _latent_class_frame()
    est = TabClustPFN(checkpoint=tiny_checkpoint).fit(frame)
    _assert_three_groups_by_bic(est, frame, y, "latent-class", CategoricalMixture)
    new, y_new = _latent_class_frame(n=60)  # the same classes, other rows
    assert adjusted_rand_score(y_new, est.predict(new)) > 0.8
    assert len(np.unique(est.predict(frame, n_clusters=2))) == 2
    baseline = TabClustPFN(checkpoint=tiny_checkpoint)
    baseline._categorical_path = None  # the design alternative it replaced: the network's path
    assert baseline.fit(frame).k_selection_ != "latent-class"


def test_predict_warns_of_a_category_fit_never_saw_and_still_assigns_the_row(tiny_checkpoint):
    frame, _ = _latent_class_frame()
    est = TabClustPFN(checkpoint=tiny_checkpoint).fit(frame)
    new = frame.head(3).astype(object)
    new.iloc[0, 0] = "answer 7"
    with pytest.warns(UserWarning, match=r"column 'q0': 1 row\(s\) hold 'answer 7'"):
        labels = est.predict(new)
    assert labels.shape == (3,) and labels[1:].tolist() == est.predict(frame.head(3))[1:].tolist()


def test_a_numeric_column_beside_the_categories_keeps_the_networks_path(tiny_checkpoint):
    frame, y = _latent_class_frame(seed=1)
    frame["amount"] = np.random.default_rng(0).normal(size=len(frame)) + 3.0 * y
    est = TabClustPFN(checkpoint=tiny_checkpoint).fit(frame)
    assert est.k_selection_ == "expected_ari"  # the network's rule ("auto" without a K ranker in the checkpoint)


def test_a_table_of_numeric_flags_takes_the_latent_class_path_its_flags_read_as_two_levels(tiny_checkpoint):
    """0/1 columns stored as numbers count as categories there (``_categorical_flags``): the same classes found
    as from the same answers written as text, and new rows with a value between 0 and 1 assigned by the cut."""
    pattern = np.zeros((3, 10), bool)  # each class's likely answer per column: yes on its own block of columns
    pattern[0, :4], pattern[1, 4:7], pattern[2, 7:] = True, True, True
    rows = np.random.default_rng(4)
    y = rows.permutation(np.arange(450) % 3)
    flags = np.where(rows.random((450, 10)) < 0.85, pattern[y], ~pattern[y]).astype(np.int64)
    numbers = pd.DataFrame(flags, columns=[f"f{j}" for j in range(10)])
    est = TabClustPFN(checkpoint=tiny_checkpoint).fit(numbers)
    assert est.k_selection_ == "latent-class" and est.n_clusters_ == 3
    assert adjusted_rand_score(y, est.labels_) > 0.9
    text = TabClustPFN(checkpoint=tiny_checkpoint).fit(numbers.replace({0: "no", 1: "yes"}).astype("category"))
    assert text.k_selection_ == "latent-class" and adjusted_rand_score(text.labels_, est.labels_) == 1.0
    np.testing.assert_array_equal(est.predict(numbers), est.labels_)
    np.testing.assert_allclose(est.predict(numbers.iloc[:5] * 0.9 + 0.05), est.labels_[:5])  # 0.05 / 0.95: by the cut
    numeric = TabClustPFN(checkpoint=tiny_checkpoint)
    numeric._categorical_flags = False  # the design alternative: flags are numbers, the network's path
    assert numeric.fit(numbers).k_selection_ != "latent-class"


def test_a_table_of_categories_with_a_design_of_at_most_four_columns_stays_on_the_bic_path(tiny_checkpoint):
    """Two yes/no answers (four one-hot codes) or four 0/1 flags: the latent class path's choice never met such
    designs, so they keep the BIC path of few columns, as before it."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    answers = np.where(rng.random((300, 4)) < 0.9, y[:, None], 1 - y[:, None])
    text = pd.DataFrame({f"q{j}": pd.Categorical(np.where(answers[:, j] == 1, "yes", "no")) for j in range(2)})
    flags = pd.DataFrame(answers, columns=[f"f{j}" for j in range(4)])
    for frame in (text, flags):
        assert TabClustPFN(checkpoint=tiny_checkpoint).fit(frame).k_selection_ == "bic"
    wider = pd.DataFrame({f"q{j}": pd.Categorical(np.where(answers[:, j] == 1, "yes", "no")) for j in range(3)})
    assert TabClustPFN(checkpoint=tiny_checkpoint).fit(wider).k_selection_ == "latent-class"  # six codes
