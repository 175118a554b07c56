"""The decision protocol's rules (docs/DESIGN.md): a candidate qualifies when, against the baseline on the same
development tables, it gains beyond two standard errors on some set and loses on none; a candidate that only makes
the default cheaper qualifies when it loses on no set, and the cheapest of those wins. A set counts as lost where
the paired mean difference lies beyond one standard error below zero and below ``-LOSS_MARGIN`` (mean ARI)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["GAIN_SE", "LOSS", "LOSS_MARGIN", "LOSS_SE", "RULE", "beyond", "cheapest_holding", "gains_and_losses",
           "lost"]

GAIN_SE, LOSS_SE = 2.0, 1.0

#: A loss smaller than this in mean ARI over a set does not veto. With one s.e. alone as the bar, a candidate that
#: changes nothing on S sets but the one it is for is vetoed by chance with probability 1 - 0.84^S (0.58 at S = 5);
#: losses this small are far below what any suite here resolves (the test suites' s.e. are 0.01-0.03).
LOSS_MARGIN = 0.001

#: What a loss is, and the rule, in words, as the choice benchmarks print them.
LOSS = f"a loss: beyond {LOSS_SE:g} s.e. and more than {LOSS_MARGIN:g} in mean ARI"
RULE = f"a candidate qualifies when it gains beyond {GAIN_SE:g} standard errors on a set and loses on none ({LOSS})"


def beyond(mean: float, se: float, factor: float) -> bool:
    """Whether a paired mean difference lies beyond ``factor`` standard errors (``factor`` > 0: above, < 0: below).

    A set in which a single table changed has |mean| = s.e. exactly, so whether it lies beyond one s.e. would be
    decided by rounding; a difference counts only where it passes the bound by more than a relative 1e-9."""
    bound = abs(factor) * se * (1 + 1e-9)
    return mean > bound if factor > 0 else mean < -bound


def gains_and_losses(per_set: Mapping[str, tuple[float, float]]) -> tuple[list[str], list[str]]:
    """``per_set[name] = (mean, se)`` of candidate minus baseline -> the sets it gains on beyond ``GAIN_SE``
    standard errors and those it loses on (:func:`lost`); it qualifies when the first is not empty and the
    second is."""
    gains = [s for s, (m, se) in per_set.items() if beyond(m, se, GAIN_SE)]
    losses = [s for s, (m, se) in per_set.items() if lost(m, se)]
    return gains, losses


def lost(mean: float, se: float) -> bool:
    """Whether a set's paired mean difference ``mean`` (+- ``se``) is a loss: beyond ``LOSS_SE`` standard errors
    below zero and below ``-LOSS_MARGIN``."""
    return beyond(mean, se, -LOSS_SE) and mean < -LOSS_MARGIN


def cheapest_holding(per_candidate: Mapping[str, Mapping[str, tuple[float, float]]], cost: Mapping[str, float]
                     ) -> tuple[str | None, dict[str, list[str]]]:
    """A choice made for cost: ``per_candidate[c][set] = (mean, se)`` of candidate ``c`` minus the baseline and
    ``cost[c]`` its cost (e.g. median seconds per table) -> the cheapest candidate that loses (:func:`lost`) on no
    set (None: none holds, the baseline stays) and, per candidate, the sets it loses on.
    Only candidates cheaper than the baseline (``cost`` of the key ``"baseline"``) may be chosen."""
    losses = {c: [s for s, (m, se) in per_set.items() if lost(m, se)]
              for c, per_set in per_candidate.items()}
    holding = [c for c, sets in losses.items() if not sets and cost[c] < cost["baseline"]]
    return (min(holding, key=cost.__getitem__) if holding else None), losses
