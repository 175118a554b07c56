"""The regime suites (issue 31): held-out draws of priors.regimes with reserved seeds, sizes, groups, quick mode."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.evaluation import suites
from pipeline.evaluation.calibration import calibration_seeds
from pipeline.evaluation.runner import SUITES, EvalConfig, command_line, load_datasets, regime_tasks


def test_amortized_suite_is_2d_full_size_and_deterministic():
    a = suites.amortized_suite(5)
    b = suites.amortized_suite(5)
    assert [d.name for d in a] == [f"amortized_{i:03d}" for i in range(5)]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.features.to_numpy(), y.features.to_numpy())
        np.testing.assert_array_equal(x.y, y.y)
    for d in a:
        assert d.suite == "amortized" and d.group == "amortized"
        assert d.features.shape[1] == 2 and d.categorical == []
        assert 100 <= len(d.y) <= 500 and 2 <= d.n_clusters <= 10
        assert d.n_clusters == len(np.unique(d.y)) and d.bayes_labels is not None
    assert len({len(d.y) for d in a}) > 1  # N varies from task to task
    assert [d.meta["seed"] for d in a] == suites.amortized_seeds(5)


def test_amortized_suite_holds_160_tasks_and_a_count_cuts_the_head():
    seeds = suites.amortized_seeds()
    assert len(seeds) == suites.AMORTIZED_TASKS == 160 and len(set(seeds)) == 160
    assert suites.amortized_seeds(3) == seeds[:3]
    assert suites.amortized_seeds(10_000) == seeds  # never more than the suite holds
    first = suites.amortized_suite(2)
    np.testing.assert_array_equal(first[1].y, suites.amortized_suite(3)[1].y)


def test_cluster_pfn_suite_has_one_group_per_d_with_n_500():
    data = suites.cluster_pfn_suite(2)
    assert [d.group for d in data] == ["d2", "d2", "d3", "d3", "d4", "d4", "d5", "d5"]
    assert len({d.name for d in data}) == len(data)
    for d in data:
        assert d.suite == "cluster-pfn"
        assert d.features.shape == (500, int(d.group[1:]))
        assert 2 <= d.n_clusters <= 10 and d.n_clusters == len(np.unique(d.y))
    again = suites.cluster_pfn_suite(2, dims=(4,))
    np.testing.assert_array_equal(again[1].features.to_numpy(), data[5].features.to_numpy())
    assert all(len(suites.cluster_pfn_seeds(d)) == 320 for d in suites.CLUSTER_PFN_DIMS)


def test_regime_seeds_are_reserved_and_collide_with_no_other_suite():
    regime = set(suites.amortized_seeds())
    for d in suites.CLUSTER_PFN_DIMS:
        per_d = set(suites.cluster_pfn_seeds(d))
        assert not per_d & regime
        regime |= per_d
    assert len(regime) == 160 + 4 * 320 and min(regime) >= suites.EVAL_SEED_BASE
    gmm = {suites.EVAL_SEED_BASE + suites.GMM_SEED_OFFSET + i for i in range(len(suites.GMM_SIZES))}
    zeus_first = suites.EVAL_SEED_BASE + suites.ZEUS_SEED_OFFSET
    zeus = set(range(zeus_first, zeus_first + suites.ZEUS_SEED_TRIES * len(suites.ZEUS_SIZES)))
    assert not regime & (gmm | zeus | set(calibration_seeds(3200)))


def test_regime_suites_are_test_suites_on_the_command_line():
    assert {"amortized", "cluster-pfn"} <= set(SUITES)
    assert suites.SUITE_ROLES["amortized"] == suites.SUITE_ROLES["cluster-pfn"] == "test"


def test_tasks_per_group_and_quick_shrink_the_regime_suites():
    assert regime_tasks(EvalConfig(suites=("amortized",))) is None
    assert regime_tasks(EvalConfig(suites=("amortized",), tasks_per_group=7)) == 7
    assert regime_tasks(EvalConfig(suites=("amortized",), quick=True)) == 4
    assert regime_tasks(EvalConfig(suites=("amortized",), quick=True, tasks_per_group=2)) == 2
    data = load_datasets(EvalConfig(suites=("amortized", "cluster-pfn"), tasks_per_group=1))
    assert [(d.suite, d.group) for d in data] == [("amortized", "amortized"), ("cluster-pfn", "d2"),
                                                  ("cluster-pfn", "d3"), ("cluster-pfn", "d4"),
                                                  ("cluster-pfn", "d5")]
    with pytest.raises(ValueError, match="--tasks-per-group"):
        EvalConfig(suites=("amortized",), tasks_per_group=0)
    cmd = command_line(EvalConfig(suites=("cluster-pfn",), tasks_per_group=5, calibration_size=0))
    assert "--suite cluster-pfn" in cmd and "--tasks-per-group 5" in cmd
