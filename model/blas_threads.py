"""numpy's and scipy's BLAS held to a number of threads while the estimator works (threadpoolctl).

A fit's numpy and scipy work is on small matrices (a context of at most 1000 rows, a few dozen columns), where a
second BLAS thread saves nothing; meanwhile OpenBLAS's idle threads spin-wait on the cores torch's threads need for
the network. In a plain Python process on 2 cores a real table's fit took 1.5x as long with the BLAS pools at their
defaults (its fastest fit; 1.7x a typical one: ``docs/results/bench-blas-threads.md``).

The limit is process-wide while it holds (threadpoolctl's): another thread of the same process calling BLAS during
a fit gets one thread too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from threadpoolctl import ThreadpoolController

_controller: ThreadpoolController | None = None


def _blas_controller() -> ThreadpoolController:
    """The process's BLAS pools, found once (a scan of the loaded libraries takes about 15 ms); numpy's and scipy's
    are loaded by then, since the estimator's modules import both."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController().select(user_api="blas")
    return _controller


@contextlib.contextmanager
def blas_threads(limit: int | None) -> Iterator[None]:
    """Hold every loaded BLAS pool to ``limit`` threads inside the block, restoring each pool's own after; None
    leaves them as they are."""
    if limit is None:
        yield
        return
    with _blas_controller().limit(limits=limit):
        yield
