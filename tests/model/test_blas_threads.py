"""model/blas_threads.py and the estimator's use of it: BLAS held to one thread while a fit or an assignment runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from model.blas_threads import blas_threads
from model.estimator import TabClustPFN
from model.preprocessing import TablePreprocessor


def _blas_threads_now() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def _table(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, 150)
    return pd.DataFrame(rng.normal(size=(150, 6)) + 3.0 * y[:, None], columns=[f"c{j}" for j in range(6)])


def test_the_block_holds_every_blas_pool_to_the_limit_and_restores_each_pools_own_after():
    assert _blas_threads_now(), "numpy's BLAS should be among the loaded pools"
    with threadpool_limits(limits=2, user_api="blas"):
        with blas_threads(1):
            assert _blas_threads_now() == {1}
        assert _blas_threads_now() == {2}
        with blas_threads(None):  # None: left as they are
            assert _blas_threads_now() == {2}


@pytest.mark.parametrize("limit, inside", [(1, {1}), (None, {2})])
def test_fit_and_predict_run_their_numpy_work_at_the_estimators_blas_threads(tiny_checkpoint, monkeypatch, limit,
                                                                             inside):
    seen: dict[str, set[int]] = {}
    for name in ("fit_transform", "transform"):  # spies: the real methods run, the pools' threads are recorded
        real = getattr(TablePreprocessor, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            seen.setdefault(_name, set()).update(_blas_threads_now())
            return _real(self, *args, **kwargs)
        monkeypatch.setattr(TablePreprocessor, name, spy)
    monkeypatch.setattr(TabClustPFN, "_blas_threads", limit)
    est = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0)
    with threadpool_limits(limits=2, user_api="blas"):
        est.fit(_table(0))
        assert _blas_threads_now() == {2}  # the pools' own count is back after the fit
        est.predict(_table(1))
        assert _blas_threads_now() == {2}
    assert seen == {"fit_transform": inside, "transform": inside}


def test_one_blas_thread_gives_the_labels_the_pools_defaults_give(tiny_checkpoint, monkeypatch):
    X, new = _table(2), _table(3)
    with threadpool_limits(limits=2, user_api="blas"):
        held = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0).fit(X)
        monkeypatch.setattr(TabClustPFN, "_blas_threads", None)
        as_is = TabClustPFN(checkpoint=tiny_checkpoint, random_state=0).fit(X)
    np.testing.assert_array_equal(held.labels_, as_is.labels_)
    np.testing.assert_array_equal(held.predict(new), as_is.predict(new))
