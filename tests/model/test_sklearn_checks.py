"""scikit-learn's estimator checks on TabClustPFN, with a tiny randomly initialised checkpoint.

Checks that cannot apply, and why, are listed in ``EXPECTED_FAILED``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from model.checkpoint import save_checkpoint
from model.estimator import TabClustPFN
from tests.model.conftest import make_tiny_net

# The estimators are built at collection time, so the checkpoint path is fixed here and the file is written
# by the module fixture below (and removed after the module's tests).
CHECKPOINT = Path(tempfile.gettempdir()) / f"tabclustpfn-sklearn-checks-{os.getpid()}.pt"


class _CheckpointPath(os.PathLike):
    """``CHECKPOINT`` with a stable repr, so test ids do not depend on the process id."""

    def __fspath__(self) -> str:
        return str(CHECKPOINT)

    def __repr__(self) -> str:
        return "'tiny-random.pt'"


_REFUSES_ONE_CLUSTER = (
    "sets n_clusters=1, which TabClustPFN refuses by design with a ValueError (the model partitions into "
    "K = 2..K_max, issue 3); the property this check is about is tested in tests/model/test_estimator.py"
)
EXPECTED_FAILED = {
    # These checks set n_clusters=1 before exercising something else.
    "check_dont_overwrite_parameters": _REFUSES_ONE_CLUSTER,
    "check_fit2d_predict1d": _REFUSES_ONE_CLUSTER,
    "check_methods_subset_invariance": _REFUSES_ONE_CLUSTER,
    "check_fit2d_1feature": _REFUSES_ONE_CLUSTER,
}
#: Clustering quality (ARI > 0.4 on three blobs) is a property of trained weights: with random ones it passes or
#: fails with the initialisation, so this check runs on the shipped weights instead (below).
NEEDS_TRAINED_WEIGHTS = "check_clustering"
SHIPPED = Path(__file__).resolve().parents[2] / "model" / "weights" / "tabclustpfn-small.pt"


@pytest.fixture(scope="module", autouse=True)
def _tiny_checkpoint_file():
    save_checkpoint(CHECKPOINT, make_tiny_net(0))
    yield
    CHECKPOINT.unlink(missing_ok=True)


@parametrize_with_checks(
    [TabClustPFN(checkpoint=_CheckpointPath(), random_state=0)],
    expected_failed_checks=lambda est: EXPECTED_FAILED,
)
def test_sklearn_estimator_checks(estimator, check):
    if getattr(check, "func", check).__name__ == NEEDS_TRAINED_WEIGHTS:
        pytest.skip("runs on the shipped weights: test_check_clustering_passes_with_the_shipped_weights")
    check(estimator)


@pytest.mark.skipif(not SHIPPED.is_file(), reason="no shipped checkpoint in this checkout")
def test_check_clustering_passes_with_the_shipped_weights():
    from sklearn.utils.estimator_checks import check_clustering

    check_clustering("TabClustPFN", TabClustPFN(checkpoint=SHIPPED, random_state=0))
    check_clustering("TabClustPFN", TabClustPFN(checkpoint=SHIPPED, random_state=0), readonly_memmap=True)
