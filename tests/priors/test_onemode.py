"""priors.onemode: tables with a single mode, labelled K = 2 by a cut along their first principal component."""

from __future__ import annotations

import numpy as np
import pytest

from priors import sample_dataset
from priors.onemode import MECHANISM, P_ORDINAL, P_SKEW, P_STUDENT, sample_one_mode


def test_deterministic_in_the_seed_and_sizes_in_range():
    a, b = sample_one_mode(7, n_rows=(100, 300), n_features=(2, 20)), sample_one_mode(7, (100, 300), (2, 20))
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.y, b.y)
    c = sample_one_mode(8, (100, 300), (2, 20))
    assert c.X.shape != a.X.shape or not np.array_equal(c.X, a.X)
    for seed in range(30):
        t = sample_one_mode(seed, n_rows=(100, 300), n_features=(2, 20))
        n, d = t.X.shape
        assert 100 <= n <= 300 and 2 <= d <= 20
        assert t.X.dtype == np.float32 and t.n_clusters == 2 and t.categorical == ()
        assert t.meta["mechanism"] == MECHANISM and t.meta["seed"] == seed


def test_columns_are_z_normalised_and_both_labels_occur():
    for seed in range(30):
        t = sample_one_mode(seed, n_rows=(100, 400), n_features=(2, 30))
        X = t.X.astype(np.float64)
        np.testing.assert_allclose(X.mean(0), 0.0, atol=1e-5)
        std = X.std(0)
        assert np.all((np.abs(std - 1.0) < 1e-4) | (std == 0.0))
        counts = np.bincount(t.y, minlength=2)
        assert counts.size == 2 and counts.min() >= 0.25 * len(t.y)  # a quantile in 0.3..0.7


def test_labels_are_a_cut_of_the_first_principal_component():
    for seed in range(20):
        t = sample_one_mode(seed, n_rows=(100, 400), n_features=(2, 30))
        X = t.X.astype(np.float64)
        pc = np.linalg.svd(X - X.mean(0), full_matrices=False)[2][0]
        score = X @ pc
        low, high = score[t.y == 0], score[t.y == 1]
        # one threshold separates the two labels (whichever side the component's sign put them)
        assert low.max() <= high.min() + 1e-4 or high.max() <= low.min() + 1e-4


def test_the_variations_occur_at_their_rates_and_ordinal_columns_have_few_levels():
    tables = [sample_one_mode(seed, n_rows=(100, 150), n_features=(2, 16)) for seed in range(300)]
    for key, p in (("student_t", P_STUDENT), ("skewed", P_SKEW)):
        rate = np.mean([t.meta[key] for t in tables])
        assert abs(rate - p) < 0.1, (key, rate)
    with_ordinal = [t for t in tables if t.meta["ordinal_columns"]]
    assert abs(len(with_ordinal) / len(tables) - P_ORDINAL) < 0.1
    for t in with_ordinal:
        for j in t.meta["ordinal_columns"]:
            assert len(np.unique(t.X[:, j])) <= 6
    skewed = [t for t in tables if t.meta["skewed"] and not t.meta["ordinal_columns"]]
    # exp of a normal column is right-skewed: the mean sits above the median in most columns
    assert np.mean([np.mean(t.X.mean(0) > np.median(t.X, axis=0)) for t in skewed]) > 0.9


def test_a_seed_gives_another_table_than_the_papers_prior():
    for seed in range(5):
        paper, one = sample_dataset(seed), sample_one_mode(seed)
        assert paper.X.shape != one.X.shape or not np.array_equal(paper.X, one.X)


@pytest.mark.parametrize("kw, match", [({"n_rows": (3, 10)}, "n_rows"), ({"n_rows": (50, 20)}, "n_rows"),
                                       ({"n_features": (0, 4)}, "n_features")])
def test_bad_sizes_are_refused(kw, match):
    with pytest.raises(ValueError, match=match):
        sample_one_mode(0, **kw)
