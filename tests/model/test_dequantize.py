"""model.dequantize: few-level numeric columns spread over their levels' cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from model.dequantize import MAX_LEVELS, dequantize


def _table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "score": rng.integers(1, 6, n).astype(float),  # 1-5 levels
        "flag": rng.integers(0, 2, n),  # a 0/1 flag coded as an integer
        "height": rng.normal(170, 10, n),  # continuous: untouched
        "many": rng.integers(0, MAX_LEVELS + 1, n).astype(float),  # 21 levels: untouched
        "region": pd.Categorical(rng.choice(["n", "s"], n)),  # categorical: untouched
        "member": rng.random(n) < 0.5,  # bool: untouched
    })


def test_few_level_numeric_columns_are_spread_over_their_cells_and_keep_their_order():
    frame = _table()
    out, spread = dequantize(frame)
    assert spread == ["score", "flag"]
    for name, width in (("score", 0.5), ("flag", 0.5)):
        old, new = frame[name].to_numpy(float), out[name].to_numpy()
        assert len(np.unique(new)) == len(new)  # no two rows share a value any more
        assert np.all(np.abs(new - old) <= width + 1e-12)  # each value stays in its level's cell
        order = np.argsort(new, kind="stable")
        assert np.all(np.diff(old[order]) >= 0)  # the levels keep their order
        # the cells tile the range: no gap of a level's width is left between neighbouring levels
        assert np.max(np.diff(np.sort(new))) < 0.5
    for name in ("height", "many", "region", "member"):
        assert out[name].equals(frame[name])
    assert frame["score"].nunique() == 5  # the input is not modified


def test_the_same_table_gives_the_same_draws_and_uneven_levels_get_their_own_cells():
    frame = pd.DataFrame({"count": [0, 1, 1, 2, 5, 5, 5, 0, 1, 2] * 10})
    a, b = dequantize(frame)[0], dequantize(frame)[0]
    assert a.equals(b)
    new, old = a["count"].to_numpy(), frame["count"].to_numpy(float)
    # level 5's neighbour is 2, 3 apart: its cell reaches 1.5 down and (an end level) 1.5 up
    assert new[old == 5].min() >= 3.5 and new[old == 5].max() <= 6.5 and np.ptp(new[old == 5]) > 1.0
    assert new[old == 0].min() >= -0.5 and new[old == 0].max() <= 0.5


def test_missing_values_stay_missing_and_small_tables_keep_continuous_looking_columns():
    frame = pd.DataFrame({"score": [1.0, 2.0, np.nan, 3.0] * 25, "x": np.arange(100.0) % 30})
    out, spread = dequantize(frame)
    assert spread == ["score"] and out["score"].isna().sum() == 25
    assert out["x"].equals(frame["x"])  # 30 levels: above MAX_LEVELS
    few = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0, 5.0]})  # 5 levels in 5 rows: a continuous column, not levels
    assert dequantize(few)[1] == []


def test_the_estimator_clusters_a_table_of_score_levels_without_reading_the_lattice_as_clusters():
    """Issue 28's case: 4 columns of 1-5 levels, 3 classes. Read as given, the K ranker takes the lattice's points
    for clusters (K = 7 on this draw); spread, the table comes out K = 2 to 4 and closer to the classes. With the
    defaults a table of 4 columns takes the BIC path (model.low_dim), whose covariance floor does not chase the
    lattice either."""
    from sklearn.metrics import adjusted_rand_score

    from model.estimator import TabClustPFN

    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 300)
    centres = rng.uniform(1.5, 4.5, (3, 4))
    frame = pd.DataFrame(np.clip(np.round(centres[y] + rng.normal(0, 0.8, (300, 4))), 1, 5), columns=list("abcd"))
    as_given = TabClustPFN(random_state=0, k_selection="ranker").fit(frame)
    spread = TabClustPFN(random_state=0, k_selection="ranker", dequantize=True).fit(frame)
    assert as_given.n_clusters_ >= 6 and as_given.dequantized_ == []
    assert 2 <= spread.n_clusters_ <= 4 and spread.dequantized_ == list("abcd")
    assert adjusted_rand_score(y, spread.labels_) > adjusted_rand_score(y, as_given.labels_) + 0.1
    default = TabClustPFN(random_state=0).fit(frame)
    assert default.k_selection_ == "bic" and 2 <= default.n_clusters_ <= 4
    assert adjusted_rand_score(y, default.labels_) > adjusted_rand_score(y, as_given.labels_) + 0.1
    # new rows are read as given: a row of the table lands in a cluster, deterministically
    assert np.array_equal(spread.predict(frame.iloc[:20]), spread.predict(frame.iloc[:20]))


@pytest.mark.parametrize("bad", ["yes", 1])
def test_the_estimator_refuses_a_dequantize_that_is_not_a_bool(bad):
    from model.estimator import TabClustPFN

    with pytest.raises(ValueError, match="dequantize"):
        TabClustPFN(dequantize=bad).fit(_table().drop(columns=["region", "member"]))


def test_design_rows_are_spread_only_in_the_columns_asked_for_and_as_a_frame_of_them_is():
    from model.dequantize import dequantize_rows

    frame = _table()[["score", "flag", "height", "many"]].astype(float)
    X = frame.to_numpy()
    asked = np.array([True, False, True, True])  # the flag stands in for a one-hot code: not asked for
    out, spread = dequantize_rows(X, asked)
    assert spread.tolist() == [True, False, False, False]  # height is continuous, many has 21 levels
    assert np.array_equal(out[:, 1:], X[:, 1:]) and not np.array_equal(out[:, 0], X[:, 0])
    assert np.all(np.abs(out[:, 0] - X[:, 0]) <= 0.5 + 1e-12)  # within the level's cell
    assert np.array_equal(dequantize_rows(X, asked)[0], out)  # the same rows, the same draws
    # a column spread alone gets the draws dequantize gives that column alone in a frame
    alone = dequantize(frame[["score"]])[0]["score"].to_numpy()
    assert np.allclose(dequantize_rows(X[:, :1], np.array([True]))[0][:, 0], alone)
    assert X[:, 0].min() == 1.0  # the input is not modified


def _ratings(seed=3, n=300):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    centres = rng.uniform(1.5, 4.5, (3, 4))
    return pd.DataFrame(np.clip(np.round(centres[y] + rng.normal(0, 0.8, (n, 4))), 1, 5), columns=list("abcd")), y


@pytest.mark.parametrize("spread", ["spread", "spread-unmerged", "discretized"])
def test_the_bic_path_fits_spread_levels_but_assigns_the_rows_as_given(spread):
    from model.estimator import TabClustPFN

    frame, _ = _ratings()
    est = TabClustPFN(random_state=0)
    est._low_dim_spread = spread
    est.fit(frame)
    assert est.k_selection_ == "bic"
    # the labels are the fitted mixture's answer for the rows as given, which predict reads too
    assert np.array_equal(est.predict(frame), est.labels_)
    levels = TabClustPFN(random_state=0)
    levels._low_dim_spread = None
    levels.fit(frame)
    assert not np.allclose(est.k_scores_[2], levels.k_scores_[2])  # BIC was scored on other rows: the spread ones


def test_spreading_on_the_bic_path_leaves_a_wide_table_and_a_fine_one_as_they_were():
    from sklearn.datasets import make_blobs

    from model.estimator import TabClustPFN

    wide, _ = _ratings()
    wide = pd.concat([wide, wide.add_prefix("w")], axis=1)  # 8 columns: the network's path, not BIC's
    fine = pd.DataFrame(make_blobs(300, 3, centers=3, random_state=0)[0])  # no column of few levels
    for frame in (wide, fine):
        a = TabClustPFN(random_state=0)
        a._low_dim_spread = None
        a.fit(frame)
        b = TabClustPFN(random_state=0)
        b._low_dim_spread = "spread"
        b.fit(frame)
        assert np.array_equal(a.labels_, b.labels_) and a.k_scores_ == b.k_scores_


def test_an_unknown_spread_is_refused():
    from model.estimator import TabClustPFN

    est = TabClustPFN(random_state=0)
    est._low_dim_spread = "jitter"
    with pytest.raises(ValueError, match="_low_dim_spread"):
        est.fit(_ratings()[0])
