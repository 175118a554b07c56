"""The estimator warns where it chose K at the top of the range it considered (:class:`KRangeWarning`), and its
warnings point at the caller's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_blobs

from model import KRangeWarning, TabClustPFN

HERE = __file__


def _six_blobs() -> np.ndarray:
    return make_blobs(n_samples=600, n_features=6, centers=6, cluster_std=0.5, random_state=3)[0]


def _k_range_warnings(est: TabClustPFN, X) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X)
    return [w for w in caught if issubclass(w.category, KRangeWarning)]


def test_k_chosen_at_a_lowered_cap_warns_at_the_callers_line_with_its_probability():
    est = TabClustPFN(random_state=0, max_clusters=3)
    (w,) = _k_range_warnings(est, _six_blobs())
    assert est.k_chosen_ == 3 == est.k_top_ and est.k_at_top_ is True and est.n_clusters is None
    assert w.filename == HERE  # the user's line, not the estimator's or scikit-learn's
    message = str(w.message)
    assert "K = 3, the most clusters this fit considers (K = 2..3)" in message
    assert f"k_probabilities_ puts {est.k_probabilities_[3]:.2f} on it" in message
    assert "allow_single_cluster=True" in message and "n_clusters" in message


def test_no_warning_where_k_is_given_chosen_below_the_top_or_the_range_is_two():
    X = _six_blobs()
    free = TabClustPFN(random_state=0)
    assert _k_range_warnings(free, X) == [] and free.k_chosen_ < 10
    given = TabClustPFN(random_state=0, n_clusters=3, max_clusters=3)
    assert _k_range_warnings(given, X) == [] and given.k_top_ is None and free.k_top_ == 10
    assert free.k_at_top_ is False and given.k_at_top_ is False
    two = TabClustPFN(random_state=0, max_clusters=2)
    assert _k_range_warnings(two, X) == [] and two.k_chosen_ == 2  # 2..2 is no choice to warn about


def test_k_at_the_top_of_the_full_range_on_a_round_cloud_warns():
    """One isotropic Gaussian, no clusters: the shipped model answers K_max here (docs/results/no-structure.md)."""
    X = np.random.default_rng(4).standard_normal((500, 10))
    est = TabClustPFN(random_state=0)
    (w,) = _k_range_warnings(est, X)
    assert est.k_chosen_ == 10 and "K = 10, the most clusters this fit considers (K = 2..10)" in str(w.message)


def test_the_empty_rows_warning_points_at_the_callers_line():
    X = make_blobs(n_samples=300, n_features=2, centers=3, random_state=1)[0]
    X[::20] = np.nan
    with pytest.warns(UserWarning, match="no value in any usable column") as record:
        TabClustPFN(random_state=0).fit(X)
    assert {w.filename for w in record if "no value" in str(w.message)} == {HERE}
