"""The decision protocol's rules (docs/DESIGN.md): a candidate qualifies when, against the baseline on the same
development tables, it gains beyond two standard errors on some set and loses beyond one on none; a candidate
that only makes the default cheaper qualifies when it loses beyond one on none, and the cheapest of those wins."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["GAIN_SE", "LOSS_SE", "beyond", "cheapest_holding", "gains_and_losses"]

GAIN_SE, LOSS_SE = 2.0, 1.0


def beyond(mean: float, se: float, factor: float) -> bool:
    """Whether a paired mean difference lies beyond ``factor`` standard errors (``factor`` > 0: above, < 0: below).

    A set in which a single table changed has |mean| = s.e. exactly, so whether it lies beyond one s.e. would be
    decided by rounding; a difference counts only where it passes the bound by more than a relative 1e-9."""
    bound = abs(factor) * se * (1 + 1e-9)
    return mean > bound if factor > 0 else mean < -bound


def gains_and_losses(per_set: Mapping[str, tuple[float, float]]) -> tuple[list[str], list[str]]:
    """``per_set[name] = (mean, se)`` of candidate minus baseline -> the sets it gains on beyond ``GAIN_SE``
    standard errors and those it loses on beyond ``LOSS_SE``; it qualifies when the first is not empty and the
    second is."""
    gains = [s for s, (m, se) in per_set.items() if beyond(m, se, GAIN_SE)]
    losses = [s for s, (m, se) in per_set.items() if beyond(m, se, -LOSS_SE)]
    return gains, losses


def cheapest_holding(per_candidate: Mapping[str, Mapping[str, tuple[float, float]]], cost: Mapping[str, float]
                     ) -> tuple[str | None, dict[str, list[str]]]:
    """A choice made for cost: ``per_candidate[c][set] = (mean, se)`` of candidate ``c`` minus the baseline and
    ``cost[c]`` its cost (e.g. median seconds per table) -> the cheapest candidate that loses beyond ``LOSS_SE``
    standard errors on no set (None: none holds, the baseline stays) and, per candidate, the sets it loses on.
    Only candidates cheaper than the baseline (``cost`` of the key ``"baseline"``) may be chosen."""
    losses = {c: [s for s, (m, se) in per_set.items() if beyond(m, se, -LOSS_SE)]
              for c, per_set in per_candidate.items()}
    holding = [c for c, lost in losses.items() if not lost and cost[c] < cost["baseline"]]
    return (min(holding, key=cost.__getitem__) if holding else None), losses
