"""Warm-up detection, timed-window sizing and throughput statistics. No TensorFlow here.

The runner feeds call times (seconds) to :class:`WarmupDetector` until training is in steady state,
sizes the timed windows with :func:`steps_per_window`, and summarises the windows' throughputs
(samples/s) with :func:`summarize`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95


def whole_calls(steps: int, steps_per_call: int) -> int:
    """The fewest calls of ``steps_per_call`` training steps each that hold ``steps`` steps (at
    least one): 5 steps are 5 one-step calls, or one call at 64 steps per execution."""
    if steps_per_call < 1:
        raise ValueError(f"steps_per_call must be >= 1. Received: steps_per_call={steps_per_call}")
    return max(1, math.ceil(steps / steps_per_call))


class WarmupDetector:
    """Declares steady state once call times stop falling.

    It is fed the time of each call of the training function (seconds), one training step or
    ``steps_per_call`` of them. Its counts are training steps, rounded up to whole calls, so a
    call of 64 steps is as much evidence as 64 one-step calls: steady state holds when calls of
    at least ``min_steps`` steps ran and the median of the last ``span`` steps' calls is no more
    than ``tolerance`` (a fraction) below the median of the calls before them (as many). The
    first call (tracing and compilation) never counts towards either median. At one step a call
    that is 7 calls at the least (the first, then two spans of 3); from 3 steps a call on, 3.

    Attributes:
        span: calls in each median (``span`` steps, rounded up to whole calls).
        min_calls: fewest calls before steady state (at least the first and two spans).
    """

    def __init__(
        self,
        min_steps: int = 5,
        span: int = 3,
        tolerance: float = 0.05,
        steps_per_call: int = 1,
    ) -> None:
        if span < 1:
            raise ValueError(f"span must be >= 1. Received: span={span}")
        self.span = whole_calls(span, steps_per_call)
        self.min_calls = max(whole_calls(min_steps, steps_per_call), 2 * self.span + 1)
        self.tolerance = tolerance
        self.step_seconds: list[float] = []

    def add(self, seconds: float) -> bool:
        """Records one call time (seconds); returns True once training is in steady state."""
        self.step_seconds.append(seconds)
        return self.steady

    @property
    def steady(self) -> bool:
        times = self.step_seconds
        if len(times) < self.min_calls:
            return False
        recent = statistics.median(times[-self.span :])
        before = statistics.median(times[-2 * self.span : -self.span])
        return recent >= before * (1.0 - self.tolerance)

    @property
    def steady_step_seconds(self) -> float:
        """Median of the most recent call times (seconds per call)."""
        if len(self.step_seconds) < 2:
            raise ValueError("steady_step_seconds needs at least two steps")
        return statistics.median(self.step_seconds[1:][-self.span :])


def steps_per_window(step_seconds: float, window_seconds: float, min_steps: int) -> int:
    """Whole steps filling ``window_seconds`` at ``step_seconds`` per step (>= min_steps)."""
    if step_seconds <= 0:
        return max(min_steps, 1)
    return max(min_steps, math.ceil(window_seconds / step_seconds))


@dataclass(frozen=True)
class Estimate:
    """A median with a distribution-free confidence interval.

    Attributes:
        median: the median of the values.
        low, high: the confidence interval's bounds.
        confidence: the interval's actual coverage (0..1); below 0.95 when there are too few
            values for a 95% interval (fewer than 6), where [min, max] is the best available.
        n: number of values.
    """

    median: float
    low: float
    high: float
    confidence: float
    n: int

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0

    @property
    def relative_half_width(self) -> float:
        """Half-width as a fraction of the median (0.02 = +/-2%)."""
        return self.half_width / self.median if self.median else math.inf

    def to_dict(self) -> dict[str, float | int]:
        return {
            "median": self.median,
            "low": self.low,
            "high": self.high,
            "confidence": self.confidence,
            "n": self.n,
        }


def format_throughput(estimate: Estimate | None) -> str:
    """'15,174 samples/s (95% CI 15,057-18,602, n=7)', naming the interval's actual coverage
    when it is under 95%; 'not measured' for None."""
    if estimate is None:
        return "not measured"
    level = f"{estimate.confidence:.0%}" if estimate.confidence < CONFIDENCE else "95%"
    return (
        f"{estimate.median:,.0f} samples/s ({level} CI {estimate.low:,.0f}-{estimate.high:,.0f}, "
        f"n={estimate.n})"
    )


def _binomial_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n


def summarize(values: Sequence[float], confidence: float = CONFIDENCE) -> Estimate:
    """Median and order-statistic confidence interval of ``values`` (e.g. samples/s per window).

    The interval is [x_(k), x_(n+1-k)] for the largest k whose coverage 1 - 2 P(X <= k-1),
    X ~ Binomial(n, 1/2), is at least ``confidence``. It needs no assumption of normality, which
    matters for step times (skewed by the occasional slow step on a shared machine).
    """
    if not values:
        raise ValueError("summarize needs at least one value")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"summarize needs finite values. Received: {list(values)}")
    ordered = sorted(values)
    n = len(ordered)
    k, coverage = 1, 1.0 - 2.0 * _binomial_cdf(0, n)
    while k + 1 <= n // 2:
        wider = 1.0 - 2.0 * _binomial_cdf(k, n)
        if wider < confidence:
            break
        k, coverage = k + 1, wider
    if n == 1:
        coverage = 0.0
    return Estimate(
        median=statistics.median(ordered),
        low=ordered[k - 1],
        high=ordered[n - k],
        confidence=coverage,
        n=n,
    )


#: With too few timed windows for a 95% interval, a trial stops only when every window ran under
#: this fraction of the stop threshold (a gross gap, never ordinary noise).
FIRST_WINDOW_FACTOR = 0.5


def confidently_below(
    estimate: Estimate, threshold: float, first_window_factor: float = FIRST_WINDOW_FACTOR
) -> bool:
    """Whether a throughput ``estimate`` (samples/s) is confidently below ``threshold``.

    With a 95% interval, the whole interval must lie below the threshold. With too few windows for
    one, only a gross gap counts: every window below ``first_window_factor * threshold`` (so a
    configuration 90x slower is recognised from its first timed window, while ordinary noise of a
    few percent never stops a trial).
    """
    if estimate.confidence >= CONFIDENCE:
        return estimate.high < threshold
    return estimate.high < first_window_factor * threshold


def slower_than_baseline(throughput: Estimate, threshold: float | None) -> str | None:
    """Why timing stops after ``throughput.n`` windows: the throughput (samples/s) is
    :func:`confidently_below` ``threshold`` (the baseline's lower bound); None to go on."""
    if threshold is None or not confidently_below(throughput, threshold):
        return None
    return (
        f"throughput {throughput.median:.0f} samples/s (95% CI upper "
        f"{throughput.high:.0f}) is confidently below the baseline's "
        f"{threshold:.0f} samples/s after {throughput.n} window(s)"
    )


#: A warm-up stops as hopeless when even its fastest call after the first (compilation) runs
#: under the stop threshold divided by this factor: the steady calls would have to be this much
#: faster than every call seen for the trial to reach the baseline.
HOPELESS_FACTOR = 3.0
#: Training steps after the compiling call that a warm-up runs before it can be called hopeless
#: (the first few after compilation can be slower than the steady ones: the fastest call is what
#: counts). Counted in steps, not calls: one call of 64 steps per execution is enough evidence.
HOPELESS_MIN_STEPS = 3


def hopeless_warm_up(
    call_seconds: Sequence[float],
    samples_per_call: int,
    threshold: float | None,
    steps_per_call: int = 1,
) -> str | None:
    """Why a warm-up whose calls took ``call_seconds`` (the first one compiles; each call is
    ``steps_per_call`` training steps of ``samples_per_call`` samples in all) is hopeless against
    ``threshold`` (samples/s, the baseline's lower bound), or None to go on: once the calls after
    the first hold :data:`HOPELESS_MIN_STEPS` training steps, its fastest call is under
    ``threshold / HOPELESS_FACTOR``. A configuration 100x slower than the baseline stops after the
    compiling call and three one-step calls, or one call of three steps or more."""
    if steps_per_call < 1:
        raise ValueError(f"steps_per_call must be >= 1. Received: steps_per_call={steps_per_call}")
    after_compile = call_seconds[1:]
    steps = len(after_compile) * steps_per_call
    if threshold is None or steps < HOPELESS_MIN_STEPS:
        return None
    fastest = samples_per_call / min(after_compile)
    if fastest * HOPELESS_FACTOR >= threshold:
        return None
    return (
        f"hopeless in warm-up: its fastest of {_calls(len(after_compile), steps)} after "
        f"compilation ran {fastest:.0f} samples/s, under 1/{HOPELESS_FACTOR:g} of the baseline's "
        f"{threshold:.0f} samples/s"
    )


def slow_steady_warm_up(
    steady_samples_per_second: Sequence[float], steps: int, threshold: float | None
) -> str | None:
    """Why timing need not start: the warm-up reached steady state and every one of its last
    calls (``steady_samples_per_second``, samples/s each, ``steps`` training steps in all) ran
    under :data:`FIRST_WINDOW_FACTOR` of ``threshold`` (samples/s, the baseline's lower bound):
    the gross gap that stops a trial after its first timed window (:func:`confidently_below`).
    None to go on.

    Steady calls are whole calls synchronised by reading the loss, like a window's, and their
    times no longer fall, so a timed window would only repeat them: a configuration 2-3x slower
    stops here instead of after one more window (at 64 steps per execution, one more call). Only
    the gross gap counts, never the 95% interval: calls before steady state may be slower than
    the steady ones."""
    if threshold is None or not steady_samples_per_second:
        return None
    fastest = max(steady_samples_per_second)
    if fastest >= FIRST_WINDOW_FACTOR * threshold:
        return None
    return (
        f"slow in steady warm-up: its last {_calls(len(steady_samples_per_second), steps)} ran "
        f"{fastest:.0f} samples/s at most, under {FIRST_WINDOW_FACTOR:g}x the baseline's "
        f"{threshold:.0f} samples/s"
    )


def _calls(calls: int, steps: int) -> str:
    """'3 steps' when each call is one step, else '1 call (64 steps)'."""
    if calls == steps:
        return f"{steps} step{'s' if steps != 1 else ''}"
    return f"{calls} call{'s' if calls != 1 else ''} ({steps} steps)"


#: XProf's thresholds on the share of step time spent waiting for input.
INPUT_BOUND_THRESHOLDS = (0.05, 0.20)


def input_bound_verdict(input_fraction: float) -> str:
    """'not', 'moderately' or 'highly' input-bound for a share (0..1) of step time waiting for
    input: under 5%, 5-20%, 20% or more (XProf's thresholds)."""
    moderate, high = INPUT_BOUND_THRESHOLDS
    if input_fraction >= high:
        return "highly input-bound"
    if input_fraction >= moderate:
        return "moderately input-bound"
    return "not input-bound"


def ablation_pairs(pairs: int, window_seconds: float, timed_window_seconds: float) -> int:
    """Pairs of windows (real pipeline, cached batch) an input ablation times: ``pairs`` while
    its windows take at most twice their nominal time (``pairs`` pairs of ``window_seconds``
    windows), fewer where the trial's windows (``timed_window_seconds`` each, as timed) are
    longer, and at least one. Windows hold whole calls, so at 64 steps a call of a large batch
    one window can be a call of 20 s, and three pairs two minutes of a diagnostic."""
    if pairs < 1:
        raise ValueError(f"pairs must be >= 1. Received: pairs={pairs}")
    if not timed_window_seconds > 0:
        return pairs
    return max(1, min(pairs, math.floor(2 * pairs * window_seconds / timed_window_seconds)))


@dataclass(frozen=True)
class InputAblation:
    """Input-boundness measured by ablation: the same model fed one cached batch, repeated.

    Attributes:
        pipeline: samples/s through the real input pipeline (windows alternating with the
            cached ones).
        cached: samples/s when every step reuses one cached batch (no input work).
        input_fraction: share of the real step time spent waiting for input,
            ``1 - pipeline.median / cached.median``, clamped to 0..1.
        verdict: :func:`input_bound_verdict` of ``input_fraction``.
    """

    pipeline: Estimate
    cached: Estimate
    input_fraction: float
    verdict: str

    @classmethod
    def of(cls, pipeline: Estimate, cached: Estimate) -> InputAblation:
        fraction = min(1.0, max(0.0, 1.0 - pipeline.median / cached.median))
        return cls(pipeline, cached, fraction, input_bound_verdict(fraction))

    def step_milliseconds(self, batch_size: int) -> dict[str, float]:
        """Step time split into 'input' and 'compute' (milliseconds per step)."""
        real = batch_size / self.pipeline.median * 1e3
        compute = min(real, batch_size / self.cached.median * 1e3)
        return {"input": real - compute, "compute": compute}

    def to_dict(self) -> dict[str, object]:
        return {
            "method": (
                "ablation: the same steps fed one cached batch (take(1).cache().repeat()), "
                "alternating with windows of the real pipeline"
            ),
            "pipeline": self.pipeline.to_dict(),
            "cached": self.cached.to_dict(),
            "input_fraction": self.input_fraction,
            "verdict": self.verdict,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> InputAblation:
        return cls.of(Estimate(**data["pipeline"]), Estimate(**data["cached"]))  # type: ignore[arg-type]
