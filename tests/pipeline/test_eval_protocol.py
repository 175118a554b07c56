"""The decision protocol's rule, as the choice benchmarks apply it."""

from __future__ import annotations

import numpy as np

from pipeline.evaluation.protocol import beyond, gains_and_losses


def _paired(diff: np.ndarray) -> tuple[float, float]:
    return float(diff.mean()), float(diff.std(ddof=1) / np.sqrt(len(diff)))


def test_one_changed_table_sits_at_one_standard_error_and_is_not_beyond_it():
    """A set of 200 tables where one lost 0.065 (choice-screening-modes' low-d set): mean = -s.e. up to rounding
    (which there came out 2e-16 below), no loss beyond one s.e. With a second table lost it is one."""
    one = np.zeros(200)
    one[51] = -0.064984
    mean, se = _paired(one)
    assert np.isclose(mean, -se, rtol=1e-12)
    assert not beyond(mean, se, -1.0) and not beyond(mean, se * (1 - 1e-15), -1.0)
    two = one.copy()
    two[7] = -0.02
    assert beyond(*_paired(two), -1.0)


def test_gains_and_losses_name_the_sets_beyond_their_bounds():
    gains, losses = gains_and_losses({"prior": (0.010, 0.004), "noisy": (-0.003, 0.002), "dev": (0.001, 0.01),
                                      "low-d": (-0.001, 0.001)})
    assert gains == ["prior"]  # 2.5 s.e.; dev's 0.1 s.e. is not
    assert losses == ["noisy"]  # 1.5 s.e.; low-d's exactly 1 s.e. is not
    assert gains_and_losses({"prior": (0.008, 0.004)}) == ([], [])  # exactly 2 s.e.: not beyond
