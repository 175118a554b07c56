"""priors._common: label assignment with a minimum cluster size, standardisation, random rotations."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from priors import PriorConfig, sample_dataset
from priors._common import assign_labels


@pytest.mark.parametrize("k,n_rows,min_size", [(3, 15, 5), (10, 50, 5), (10, 21, 2), (4, 9, 2)])
def test_every_cluster_gets_the_minimum_size_even_when_n_is_close_to_k_times_it(k, n_rows, min_size):
    for seed in range(300):
        rng = np.random.default_rng(seed)
        weights = rng.dirichlet(np.full(k, 2.0))
        counts = np.bincount(assign_labels(rng, weights, n_rows, min_size), minlength=k)
        assert counts.sum() == n_rows
        assert counts.min() >= min_size, (seed, counts)


def test_counts_that_need_no_fix_are_multinomial_draws():
    """Well inside the constraint the labels are a shuffled Multinomial(N, weights) draw, as before."""
    weights = np.array([0.2, 0.3, 0.5])
    counts = np.bincount(assign_labels(np.random.default_rng(4), weights, 900, 5), minlength=3)
    assert np.array_equal(counts, np.random.default_rng(4).multinomial(900, weights))


def test_assign_labels_rejects_impossible_sizes():
    with pytest.raises(ValueError, match="cannot hold"):
        assign_labels(np.random.default_rng(0), np.full(4, 0.25), 7, 2)


def test_small_tasks_keep_every_cluster_at_the_minimum_size():
    config = replace(PriorConfig(), n_rows=(50, 55), n_clusters=(10, 10), min_cluster_size=5)
    for seed in range(10):
        ds = sample_dataset(seed, config=config)
        assert np.bincount(ds.y, minlength=10).min() >= 5, seed
