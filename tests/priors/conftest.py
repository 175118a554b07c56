"""Prior tests run with a single-threaded BLAS, as the prior does in Ray workers (small matrices, shared CPUs)."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    with threadpool_limits(limits=1):
        yield
