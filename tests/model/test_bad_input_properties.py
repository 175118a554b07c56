"""Bad input, tried at random (issue 30 item 6): TabClustPFN and the preprocessing it runs, on generated DataFrames
(NaN/inf/1e300, 0-3 rows, constant, boolean, datetime, mixed-type, complex, duplicate- and unicode-named columns,
single-level and many-level categories, wide tables that take the PCA path). Every table is either clustered (one
integer label per row, finite probabilities) or refused with a ValueError that says what is wrong."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from model import TabClustPFN
from tests.bad_frames import assert_labels, assert_names_the_problem, bad_frames, column

MAX_FLOAT = np.finfo(np.float64).max
PROPERTY = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(scope="module", params=[False, True], ids=["partition", "allow_single_cluster"])
def estimator(tiny_checkpoint, request):
    """One estimator for every example (it keeps its network loaded; ``fit`` replaces every fitted attribute);
    also with the one-cluster answer, whose structure test sees every table that is clustered."""
    return TabClustPFN(checkpoint=tiny_checkpoint, random_state=0, n_estimators=2, allow_single_cluster=request.param)


def _refusal_expected(frame: pd.DataFrame, kinds: list[str]) -> str | None:
    """Why the table must be refused whatever the model does (None: it may cluster or be refused)."""
    if len(frame) < 3:
        return "rows"
    if frame.columns.duplicated().any():
        return "unique column names"
    for (name, col), kind in zip(frame.items(), kinds):
        if kind in ("datetime", "complex"):
            return f"{name!r}"
        if kind == "float_inf" and np.isinf(col.to_numpy(np.float64)).any():
            return f"{name!r}"
    return None


def _fit_or_refusal(estimator: TabClustPFN, frame: pd.DataFrame):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow, PCA and dropped-column warnings are not what is tested
        try:
            return estimator.fit(frame), None
        except ValueError as exc:  # the only exception a table may raise
            return None, str(exc)


def _check(estimator: TabClustPFN, frame: pd.DataFrame, kinds: list[str]) -> None:
    fitted, refusal = _fit_or_refusal(estimator, frame)
    must_refuse = _refusal_expected(frame, kinds)
    if refusal is not None:
        assert_names_the_problem(refusal, frame)
        if must_refuse == "rows":
            assert "rows" in refusal, refusal
        return
    assert must_refuse is None, f"clustered a table that must be refused ({must_refuse}): {kinds}"
    n = len(frame)
    assert_labels(fitted.labels_, n)
    assert fitted.probabilities_.shape == (n, fitted.n_clusters_)
    assert np.isfinite(fitted.probabilities_).all()
    np.testing.assert_allclose(fitted.probabilities_.sum(1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(fitted.labels_, fitted.probabilities_.argmax(1))
    assert (1 if fitted.allow_single_cluster else 2) <= fitted.n_clusters_ <= n - 1
    if fitted.allow_single_cluster:  # tested: a score, +inf for rows that are all the same
        assert not np.isnan(fitted.structure_score_)
    if fitted.k_posterior_ is None:  # BIC chose K without the network: its probabilities instead
        assert fitted.k_selection_ == "bic" and fitted.n_estimators_ == 0
        assert np.isfinite(list(fitted.k_probabilities_.values())).all()
    else:
        assert np.isfinite(list(fitted.k_posterior_.values())).all()


def _frame(**columns) -> pd.DataFrame:
    return pd.DataFrame(columns)


_rng = np.random.default_rng(0)


@PROPERTY
@given(bad_frames())
# a column spanning float64's whole range: its z-scores overflow to inf when centred (the network still gives
# finite probabilities); the wide-table variant below leaves the PCA no component
@example((_frame(x=[MAX_FLOAT, MAX_FLOAT, MAX_FLOAT, -MAX_FLOAT, 0.0], y=[1.0, 2, 3, 4, 5]), ["float", "float"]))
@example((_frame(x=[1e300, -1e300, np.nan, 1e-300, 5e-324], y=[0.0, 1, 0, 1, 0]), ["float", "float"]))
@example((_frame(x=[1.0, np.inf, 2.0, 3.0]), ["float_inf"]))
# subnormal numbers: the standard deviation in the column's units underflows to 0.0 (a ZeroDivisionError once)
@example((_frame(a=[np.nan, 0.0, 5e-324]), ["float"]))
@example((pd.DataFrame({"a": [], "b": []}), ["float", "float"]))
@example((_frame(a=[1.0], b=["x"]), ["float", "text"]))
@example((_frame(a=[1.0, 2.0], b=[3.0, 4.0]), ["float", "float"]))
@example((_frame(k=[7] * 5, b=[True, False, True, True, False]), ["constant", "bool"]))
@example((_frame(t=pd.date_range("2020", periods=6), x=np.arange(6.0)), ["datetime", "float"]))
@example((_frame(m=np.array([1.5, "?", 3, None, "n/a"], dtype=object), x=np.arange(5.0)), ["mixed", "float"]))
@example((pd.DataFrame(np.arange(12.0).reshape(4, 3), columns=["a", "a", "b"]), ["float"] * 3))
@example((_frame(**{"naïve": [0.1, 0.2, 5.0, 5.1], "列🙂": ["x", "y", "x", "y"], "../x": [1, 2, 3, 4]}),
          ["float", "text", "int"]))
@example((_frame(c=pd.Categorical(["only"] * 6), x=[0.0, 0.1, 0.2, 5, 5.1, 5.2]), ["category_1", "float"]))
@example((_frame(c=pd.Categorical.from_codes(_rng.integers(0, 300, 250), [f"l{i}" for i in range(300)]),
                 x=_rng.normal(size=250)), ["category_many", "float"]))
@example((_frame(z=np.arange(5) + 1j, x=np.arange(5.0)), ["complex", "float"]))
@example((_frame(e=np.full(4, np.nan), k=["a"] * 4), ["all_nan", "constant"]))
def test_the_estimator_clusters_or_refuses_any_table(estimator, case):
    frame, kinds = case
    _check(estimator, frame, kinds)


WIDE_KINDS = ("float", "int", "constant", "bool", "bool_na", "text", "numeric_text", "category_1", "category_many",
              "all_nan")


@settings(PROPERTY, max_examples=25)
@given(st.integers(2, 40), st.integers(60, 90), st.data())
# a column spanning float64's range makes every principal component NaN: refused ("n_features must be >= 1")
@example(30, 70, None)
def test_wide_tables_through_the_pca_path_cluster_or_are_refused(estimator, n, width, data):
    if data is None:
        frame = pd.DataFrame(_rng.normal(size=(n, width))).add_prefix("c")
        frame["c0"] = [MAX_FLOAT, MAX_FLOAT, -MAX_FLOAT] * (n // 3)
    else:
        frame = pd.DataFrame({f"c{j}": data.draw(column(n, data.draw(st.sampled_from(WIDE_KINDS))))[1]
                              for j in range(width)})
    _check(estimator, frame, ["wide"] * width)
