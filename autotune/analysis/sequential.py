"""Sequential head-to-head rounds: stop once the decision is settled, and the coverage that leaves.

A confirmation measures paired ratios, one per round (candidate samples/s over the same round's
baseline samples/s, or, for an attribution, the winner's over a reversion's). With a fixed
number ``R`` of rounds a candidate is *faster beyond noise* when its order-statistic interval
(:func:`autotune.measure.summarize`) lies above 1, that is when fewer than ``k_R`` of its ``R``
ratios are <= 1 (``k_R`` the interval's rank: 1 for 2-8 rounds, so every ratio must be above 1).

Run sequentially, ``R`` becomes a maximum and the rounds stop as soon as more could not change
the decision:

* **cannot pass**: once ``k_R`` ratios are <= 1, no later round can make the candidate faster
  beyond noise (``k_n`` never exceeds ``k_R``): it drops out. This is exact, it costs nothing in
  coverage.
* **passes early**: from round :func:`first_look` on, a candidate whose ``n``-round interval
  already lies above 1 is called faster beyond noise. Each such look is one more chance of a
  false call, so the guarantee is that of the whole procedure: :func:`false_pass_bound` is the
  probability, when the true median ratio is 1 (P(ratio > 1) = 1/2 each round, rounds
  independent), that *any* look from ``first_look`` to ``R`` passes; it bounds the error of every
  stopping rule that only decides at those looks. :func:`first_look` is the earliest look that
  keeps it within 5%: with ``R = 6`` the look at 5 rounds (all 5 above 1: 2^-5, so 96.9%
  one-sided, where 6 fixed rounds give 1 - 2^-6 = 98.4%).

Which candidate is fastest is decided by median ratio; :func:`median_bounds` gives the range its
final median can still take (the remaining rounds all 0 or all infinite), so two candidates whose
ranges do not overlap are ranked for good. No TensorFlow here.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from autotune.measure import CONFIDENCE

#: The one-sided confidence a sequential "faster beyond noise" keeps at least.
ONE_SIDED_TARGET = 0.95


def interval_rank(n: int, confidence: float = CONFIDENCE) -> int:
    """The rank ``k`` of :func:`autotune.measure.summarize`'s interval [x_(k), x_(n+1-k)] over
    ``n`` values."""
    if n < 1:
        raise ValueError(f"interval_rank needs n >= 1. Received: {n}")
    k = 1
    while k + 1 <= n // 2 and 1.0 - 2.0 * _binomial_cdf(k, n) >= confidence:
        k += 1
    return k


def _binomial_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n


def _against(ratios: Sequence[float]) -> int:
    return sum(1 for r in ratios if r <= 1.0)


def false_pass_bound(max_rounds: int, first: int) -> float:
    """P(some look n in [first, max_rounds], or at max_rounds, has fewer than k_n of its n ratios
    <= 1) when each ratio is <= 1 with probability 1/2: the largest chance that the sequential
    rule calls a candidate no faster than the baseline faster beyond noise."""
    looks = {n for n in range(max(first, 1), max_rounds + 1)} | {max_rounds}
    alive = {0: 1.0}  # ratios <= 1 so far -> probability, among paths that have not passed
    passed = 0.0
    for n in range(1, max_rounds + 1):
        step: dict[int, float] = {}
        for against, p in alive.items():
            step[against] = step.get(against, 0.0) + p / 2
            step[against + 1] = step.get(against + 1, 0.0) + p / 2
        alive = step
        if n in looks:
            rank = interval_rank(n)
            passed += sum(p for against, p in alive.items() if against < rank)
            alive = {a: p for a, p in alive.items() if a >= rank}
    return passed


def first_look(max_rounds: int) -> int:
    """The earliest round from which a candidate may pass early while the whole procedure keeps
    :data:`ONE_SIDED_TARGET`; ``max_rounds`` when none does (only the last round decides)."""
    for first in range(1, max_rounds + 1):
        if 1.0 - false_pass_bound(max_rounds, first) >= ONE_SIDED_TARGET:
            return first
    return max_rounds


def one_sided_coverage(max_rounds: int, sequential: bool = True) -> float:
    """The one-sided confidence of a "faster beyond noise" verdict: of the sequential procedure
    over at most ``max_rounds`` rounds, or of ``max_rounds`` fixed rounds."""
    first = first_look(max_rounds) if sequential else max_rounds
    return 1.0 - false_pass_bound(max_rounds, first)


def passes(ratios: Sequence[float], max_rounds: int, sequential: bool = True) -> bool:
    """Whether ``ratios`` (one per round) are above 1 beyond noise at this look."""
    n = len(ratios)
    if n == 0 or n > max_rounds:
        return False
    if n < max_rounds and (not sequential or n < first_look(max_rounds)):
        return False
    return _against(ratios) < interval_rank(n)


def can_pass(ratios: Sequence[float], max_rounds: int) -> bool:
    """Whether some outcome of the remaining rounds (or these) makes ``ratios`` pass."""
    return passes(ratios, max_rounds) or (
        len(ratios) < max_rounds and _against(ratios) < interval_rank(max_rounds)
    )


def open_verdict(ratios: Sequence[float], max_rounds: int) -> bool:
    """Whether more rounds could still change the verdict: not passed yet, and still able to."""
    return not passes(ratios, max_rounds) and can_pass(ratios, max_rounds)


def median_bounds(ratios: Sequence[float], max_rounds: int, running: bool) -> tuple[float, float]:
    """The lowest and highest median of ``ratios`` once the rounds end: the remaining rounds
    all 0 or all infinite while it is ``running``, its median as it is otherwise."""
    if not ratios:
        return 0.0, math.inf
    missing = max(max_rounds - len(ratios), 0) if running else 0
    low = statistics.median([*ratios, *([0.0] * missing)])
    high = statistics.median([*ratios, *([math.inf] * missing)])
    return low, high


def ranked_apart(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two :func:`median_bounds` ranges leave the order of their medians settled."""
    return a[0] > b[1] or b[0] > a[1]


__all__ = [
    "ONE_SIDED_TARGET",
    "can_pass",
    "false_pass_bound",
    "first_look",
    "interval_rank",
    "median_bounds",
    "one_sided_coverage",
    "open_verdict",
    "passes",
    "ranked_apart",
]
