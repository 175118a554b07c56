"""benchmarks/robustness.py: its perturbations keep the clusters and change what they name; one small run."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.robustness import (PERTURBATIONS, discrete_columns, heavy_tails, noise_columns, outlier_rows,
                                   peer_matrix, report, run)
from model.estimator import default_checkpoint_path


@pytest.fixture()
def table():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 6))
    X[:, 4] = rng.integers(0, 3, 400)  # a categorical column of codes
    return X, (4,)


def test_outlier_rows_replace_two_percent_of_the_rows_numeric_values_only(table):
    X, cat = table
    Y, cat_out = outlier_rows(X, cat, np.random.default_rng(1))
    changed = np.flatnonzero((Y != X).any(axis=1))
    assert cat_out == cat and len(changed) == 8  # 2 % of 400
    np.testing.assert_array_equal(Y[:, 4], X[:, 4])
    assert np.all(Y[changed][:, [0, 1, 2, 3, 5]] != X[changed][:, [0, 1, 2, 3, 5]])


def test_noise_columns_append_half_the_width_up_to_64_columns(table):
    X, cat = table
    Y, _ = noise_columns(X, cat, np.random.default_rng(1))
    assert Y.shape == (400, 6 + 3)
    np.testing.assert_array_equal(Y[:, :6], X)
    wide = np.zeros((50, 60))
    assert noise_columns(wide, (), np.random.default_rng(1))[0].shape == (50, 64)
    assert noise_columns(np.zeros((50, 64)), (), np.random.default_rng(1))[0].shape == (50, 64)


def test_heavy_tails_keep_each_numeric_columns_order_and_stretch_its_tails(table):
    X, cat = table
    Y, _ = heavy_tails(X, cat, np.random.default_rng(1))
    np.testing.assert_array_equal(Y[:, 4], X[:, 4])
    for j in (0, 1, 2, 3, 5):
        assert np.array_equal(np.argsort(Y[:, j], kind="stable"), np.argsort(X[:, j], kind="stable"))
        z = (X[:, j] - X[:, j].mean()) / X[:, j].std()
        assert np.abs(Y[:, j]).max() == pytest.approx(np.abs(z).max() ** 1.5)


def test_discrete_columns_round_some_numeric_columns_to_few_ordered_levels_and_leave_the_rest(table):
    X, cat = table
    rounded_counts = []
    for seed in range(20):
        Y, cat_out = discrete_columns(X, cat, np.random.default_rng(seed))
        assert cat_out == cat
        np.testing.assert_array_equal(Y[:, 4], X[:, 4])
        changed = [j for j in (0, 1, 2, 3, 5) if not np.array_equal(Y[:, j], X[:, j])]
        assert changed  # at least one column
        for j in (0, 1, 2, 3, 5):
            if j in changed:
                levels = np.unique(Y[:, j])
                assert set(levels) <= set(range(10)) and 2 <= len(levels) <= 10
                order = np.argsort(X[:, j], kind="stable")
                assert np.all(np.diff(Y[order, j]) >= 0)  # monotone in the original values
        rounded_counts.append(len(changed))
    assert min(rounded_counts) < 5 and max(rounded_counts) > 1  # a random half, not always one or all
    only = np.random.default_rng(0).standard_normal((50, 2))
    Y, _ = discrete_columns(np.column_stack([only, np.zeros(50)]), (2,), np.random.default_rng(3))
    assert any(len(np.unique(Y[:, j])) <= 10 for j in (0, 1))
    np.testing.assert_array_equal(discrete_columns(np.ones((5, 1)), (0,), np.random.default_rng(0))[0], 1.0)


def test_the_peers_matrix_is_the_evaluations_z_normalised_numbers_and_0_1_one_hot_categories(table):
    X, cat = table
    M = peer_matrix(X, cat)
    assert M.shape == (400, 5 + 3)
    np.testing.assert_allclose(M[:, :5].mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(M[:, :5].std(0), 1.0)
    assert set(np.unique(M[:, 5:])) == {0.0, 1.0} and np.all(M[:, 5:].sum(1) == 1.0)
    np.testing.assert_array_equal(M[:, 5:].argmax(1), X[:, 4])


def test_a_small_run_scores_every_method_and_perturbation_and_reports_the_drops(capsys):
    ckpt = str(default_checkpoint_path())
    df = run([ckpt], n_tasks=2, perturbations=list(PERTURBATIONS), peer=True)
    assert len(df) == 2 * len(PERTURBATIONS) * 2
    assert set(df["method"]) == {ckpt, "KMeans+"}
    assert df["ari"].between(-1, 1).all() and (df["k_pred"] >= 2).all()
    report(df)
    out = capsys.readouterr().out
    for name in PERTURBATIONS:
        assert f"\n{name}\n" in out
    lines = out.splitlines()[1:]  # after the header
    assert sum(" drop " in line for line in lines) == 2 * (len(PERTURBATIONS) - 1)  # both methods, not clean
    assert sum("vs KMeans+" in line for line in lines) == len(PERTURBATIONS)  # the checkpoint against its peer
