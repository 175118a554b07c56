"""The decision protocol's rule, as the choice benchmarks apply it."""

from __future__ import annotations

import numpy as np

from pipeline.evaluation.protocol import LOSS_MARGIN, beyond, cheapest_holding, gains_and_losses, lost


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
                                      "low-d": (-0.002, 0.002)})
    assert gains == ["prior"]  # 2.5 s.e.; dev's 0.1 s.e. is not
    assert losses == ["noisy"]  # 1.5 s.e.; low-d's exactly 1 s.e. is not
    assert gains_and_losses({"prior": (0.008, 0.004)}) == ([], [])  # exactly 2 s.e.: not beyond


def test_a_loss_beyond_one_standard_error_vetoes_only_past_the_margin():
    """choice-cat-screening-split-fresh's coarse set: -0.0004 +- 0.0003 (1 better / 4 worse of 200) is beyond one
    s.e. but a fraction of the margin: not a loss. The same s.e. with a mean past the margin is one, and so is a
    loss past the margin only where it is also beyond one s.e."""
    assert beyond(-0.0004, 0.0003, -1.0) and not lost(-0.0004, 0.0003)
    assert gains_and_losses({"cat-noise": (0.046, 0.011), "coarse": (-0.0004, 0.0003)}) == (["cat-noise"], [])
    assert lost(-(LOSS_MARGIN + 1e-4), 0.0003)
    assert not lost(-0.005, 0.006)  # past the margin, within one s.e.
    assert not lost(-LOSS_MARGIN, 0.0001)  # at the margin exactly: not past it


def test_a_cheaper_candidate_wins_only_where_it_loses_on_no_set_and_the_cheapest_of_those_wins():
    per = {"1": {"prior": (-0.030, 0.005), "dev": (0.0, 0.01)},  # loses 6 s.e. on prior: out, cheapest or not
           "2": {"prior": (-0.004, 0.005), "dev": (-0.01, 0.02)},  # within one s.e. everywhere
           "3": {"prior": (0.0, 0.004), "dev": (0.0, 0.01)}}
    cost = {"baseline": 1.0, "1": 0.3, "2": 0.5, "3": 0.75}
    chosen, losses = cheapest_holding(per, cost)
    assert chosen == "2" and losses == {"1": ["prior"], "2": [], "3": []}
    assert cheapest_holding(per, {**cost, "2": 1.2, "3": 1.0})[0] is None  # not cheaper than the baseline: out
    assert cheapest_holding({"1": per["1"]}, cost) == (None, {"1": ["prior"]})
