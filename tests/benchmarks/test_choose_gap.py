"""benchmarks/choose_gap.py: the gap statistic reads K off a table, and its rules only ever step down from a large K."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from benchmarks import choose_gap


def blobs(k: int, n: int = 300, d: int = 4, sep: float = 12.0, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, d)) * sep
    return centres[rng.integers(0, k, n)] + rng.standard_normal((n, d))


@pytest.mark.parametrize("null", choose_gap.NULLS)
@pytest.mark.parametrize("k", [1, 3])
def test_the_gap_finds_well_separated_blobs_and_one_cloud(null, k):
    gap, s = choose_gap.gap_curve(blobs(k), null, k_max=6, n_ref=4)
    assert gap.shape == s.shape == (6,) and (s >= 0).all()
    assert choose_gap.gap_k(gap, s, "tibshirani") == k
    if k > 1:
        assert choose_gap.gap_k(gap, s, "argmax") == k


def test_gap_curve_is_deterministic_in_its_seed():
    X = blobs(2, n=120)
    a, b = choose_gap.gap_curve(X, "box", k_max=4, n_ref=3, seed=5), choose_gap.gap_curve(X, "box", 4, 3, seed=5)
    np.testing.assert_array_equal(a[0], b[0])


def test_reference_tables_keep_the_size_and_the_principal_variances():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4000, 3)) * [5.0, 1.0, 0.2]
    Z = choose_gap.reference(X, "gaussian", np.random.default_rng(2))
    assert Z.shape == X.shape
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(np.cov(Z.T))), np.sort(np.linalg.eigvalsh(np.cov(X.T))),
                               rtol=0.1)
    box = choose_gap.reference(X, "box", np.random.default_rng(2))
    assert box.shape == X.shape
    with pytest.raises(ValueError, match="unknown null"):
        choose_gap.reference(X, "ring", np.random.default_rng(0))


def test_tibshirani_takes_the_smallest_k_within_one_s_of_the_next_and_argmax_the_largest_gap():
    gap = np.array([0.0, 0.5, 0.55, 0.9])
    s = np.array([0.1, 0.1, 0.1, 0.1])
    assert choose_gap.gap_k(gap, s, "tibshirani") == 2  # 0.5 >= 0.55 - 0.1
    assert choose_gap.gap_k(gap, s, "argmax") == 4
    assert choose_gap.gap_k(np.array([0.0, 1.0, 2.0]), np.zeros(3), "tibshirani") == 3  # never flattens: the top
    with pytest.raises(ValueError, match="unknown reading"):
        choose_gap.gap_k(gap, s, "elbow")


def test_rules_only_step_down_from_a_large_k_and_never_below_two():
    assert choose_gap.stepped(5, 1, from_k=6) == 5  # below from_k: the ranker's answer
    assert choose_gap.stepped(9, 4, from_k=6) == 4
    assert choose_gap.stepped(7, 10, from_k=6) == 7  # the gap never raises K
    assert choose_gap.stepped(8, 1, from_k=6) == 2  # the network's smallest candidate


def test_design_one_hot_encodes_categories_and_caps_the_rows_at_the_context():
    rng = np.random.default_rng(0)
    n = choose_gap.CONTEXT_ROWS + 50
    frame = pd.DataFrame({"a": rng.standard_normal(n), "b": rng.standard_normal(n),
                          "c": pd.Categorical(rng.choice(["x", "y", "z"], n))})
    X = choose_gap.design(frame)
    assert X.shape == (choose_gap.CONTEXT_ROWS, 2 + 3)
    assert set(np.unique(X[:, 2:])) == {0.0, 1.0} and (X[:, 2:].sum(1) == 1).all()


def test_one_cluster_lines_count_the_tables_read_as_one_cluster_and_their_labelled_k():
    df = pd.DataFrame({"set": ["p"] * 4, "K": [7, 9, 3, 2], "ranker": [0.5, 0.7, 0.9, 1.0]})
    for null in choose_gap.NULLS:
        df[f"gap-{null}-tibshirani_gap"] = [1, 1, 4, 0]  # the last table was not looked at
    lines = choose_gap.one_cluster_lines(df)
    assert "| p | 3 | gaussian | 2 | 8 [7, 9] | 0.600 |" in lines and "| p | 3 | box | 2 | 8 [7, 9] | 0.600 |" in lines
