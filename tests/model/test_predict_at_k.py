"""``TabClustPFN.predict(X, n_clusters=k)``: the partition at another K that a fit which chose K weighed."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import model.estimator as estimator_module
from model.estimator import TabClustPFN, default_checkpoint_path

shipped = pytest.mark.skipif(not default_checkpoint_path().is_file(), reason="no shipped checkpoint in this checkout")


def _groups(n: int = 400, d: int = 6, k: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    return rng.normal(size=(n, d)) + 6.0 * np.eye(d)[y], y


@pytest.mark.parametrize("refine", ["gmm", "kmeans", "none"])
def test_every_weighed_k_can_be_read_and_the_fitted_k_is_the_fit(tiny_checkpoint, refine):
    X, _ = _groups(seed=1)
    est = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, refine=refine).fit(X)
    np.testing.assert_array_equal(est.predict(X, n_clusters=est.k_chosen_), est.labels_)
    np.testing.assert_array_equal(est.predict(X, n_clusters=None), est.labels_)
    for k in range(2, 11):
        labels, proba = est.predict(X, n_clusters=k), est.predict_proba(X, n_clusters=k)
        if k == est.k_chosen_:
            continue
        assert proba.shape == (len(X), k) and np.allclose(proba.sum(axis=1), 1.0)
        np.testing.assert_array_equal(labels, proba.argmax(axis=1))
        assert labels.min() >= 0 and labels.max() < k
        np.testing.assert_array_equal(est.predict(X[:50], n_clusters=k), labels[:50])  # rows do not interact


@shipped
def test_the_partitions_at_other_k_merge_and_split_the_groups_without_a_second_network_pass(monkeypatch):
    """Four groups 6 SD apart: the fit chooses 4; read at K = 2 and 3 the groups merge (each group whole in one
    cluster), at K = 5 one splits (each cluster inside one group). Refined partitions need no network: with the
    network gone after fit, they are still read."""
    X, y = _groups(seed=2)
    est = TabClustPFN(random_state=0).fit(X)
    assert est.n_clusters_ == 4 and adjusted_rand_score(y, est.labels_) > 0.99
    monkeypatch.setattr(estimator_module.TabClustPFN, "_network", lambda *a: pytest.fail("the network was run"))
    for k in (2, 3, 5):
        labels = est.predict(X, n_clusters=k)
        assert len(np.unique(labels)) == k
        table = np.zeros((4, k), int)
        np.add.at(table, (y, labels), 1)
        per_row = (table > 0).sum(axis=1) if k < 4 else (table > 0).sum(axis=0)
        assert (per_row == 1).all(), table  # merges keep groups whole; a split stays inside one group


@shipped
def test_with_kmeans_refinement_another_k_is_what_a_fit_given_that_k_returns():
    X, _ = _groups(seed=0)
    est = TabClustPFN(random_state=0, refine="kmeans").fit(X)
    for k in (2, 3, 5):
        given = TabClustPFN(random_state=0, refine="kmeans", n_clusters=k).fit(X)
        assert adjusted_rand_score(given.labels_, est.predict(X, n_clusters=k)) == 1.0


@shipped
def test_on_the_bic_path_another_k_is_bics_own_mixture_at_that_k():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    X = rng.normal(size=(300, 2)) + 5.0 * np.eye(2)[y]
    est = TabClustPFN(random_state=0).fit(X)
    assert est.k_selection_ == "bic" and est.n_clusters_ == 2
    labels = est.predict(X, n_clusters=3)
    assert len(np.unique(labels)) == 3
    mixture = est._candidates.bic.mixtures[3]
    own = mixture.probabilities(est.preprocessor_.transform(X)[0]).argmax(axis=1)  # numeric columns: design = Z
    assert adjusted_rand_score(own, labels) == 1.0


@pytest.mark.parametrize(
    ("fit_k", "ask", "match"),
    [
        (3, 4, "this fit was given n_clusters=3, so it holds no partition at another K"),
        (None, 11, "n_clusters=11 is outside the K this fit weighed (2..10)"),
        (None, 1, "n_clusters=1 is outside the K this fit weighed"),
        (None, 2.5, "n_clusters must be an integer K, got 2.5"),
        (None, True, "n_clusters must be an integer K, got True"),
    ],
)
def test_a_k_the_fit_cannot_give_is_refused_naming_what_it_can(tiny_checkpoint, fit_k, ask, match):
    X, _ = _groups(n=120)
    est = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, n_clusters=fit_k).fit(X)
    with pytest.raises(ValueError, match=match.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        est.predict(X, n_clusters=ask)
    if fit_k is not None:
        np.testing.assert_array_equal(est.predict(X, n_clusters=fit_k), est.labels_)  # the K it was given
