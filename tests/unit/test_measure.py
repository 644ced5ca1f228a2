"""Unit tests for autotune.measure: warm-up detection, window sizing and statistics."""

from __future__ import annotations

import math
import random

import pytest

from autotune.measure import (
    CONFIDENCE,
    FIRST_WINDOW_FACTOR,
    HOPELESS_FACTOR,
    HOPELESS_MIN_STEPS,
    Estimate,
    InputAblation,
    WarmupDetector,
    ablation_pairs,
    confidently_below,
    hopeless_warm_up,
    input_bound_verdict,
    slow_steady_warm_up,
    slower_than_baseline,
    steps_per_window,
    summarize,
    whole_calls,
)


def first_steady_step(detector: WarmupDetector, step_seconds: list[float]) -> int | None:
    """Feeds ``step_seconds`` and returns the 0-based index of the first step add() calls steady."""
    for index, seconds in enumerate(step_seconds):
        if detector.add(seconds):
            return index
    return None


# --------------------------------------------------------------------------------------------
# WarmupDetector
# --------------------------------------------------------------------------------------------


def test_falling_then_flat_step_times_become_steady_only_once_flat():
    # compile step, then falling step times, then flat at 0.3 s
    times = [5.0, 1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3]
    detector = WarmupDetector(min_steps=5, span=3, tolerance=0.05)

    steady = [detector.add(t) for t in times]

    # median of the last 3 (0.3) first reaches 95% of the median of the 3 before (0.3) at
    # index 10; before that the previous span's median is 0.4 or more.
    assert steady == [False] * 10 + [True] * 3


def test_steady_stays_false_while_times_keep_falling():
    times = [5.0] + [1.0 * 0.8**i for i in range(30)]  # 20% faster every step
    detector = WarmupDetector(min_steps=5, span=3)

    assert first_steady_step(detector, times) is None
    assert detector.steady is False


def test_constant_step_times_are_steady_at_min_steps():
    detector = WarmupDetector(min_steps=10, span=3)

    assert first_steady_step(detector, [0.1] * 20) == 9  # the 10th step


def test_never_steady_before_min_steps_even_if_flat():
    detector = WarmupDetector(min_steps=12, span=2)

    results = [detector.add(0.2) for _ in range(11)]

    assert not any(results)
    assert detector.add(0.2) is True


def test_min_steps_is_raised_to_two_spans_plus_the_first_step():
    detector = WarmupDetector(min_steps=1, span=3)

    assert detector.min_calls == 7
    assert first_steady_step(detector, [0.1] * 10) == 6


def test_large_min_steps_is_kept():
    assert WarmupDetector(min_steps=50, span=3).min_calls == 50


@pytest.mark.parametrize(
    ("steps_per_call", "span", "min_calls"),
    [(1, 3, 7), (2, 2, 5), (3, 1, 3), (8, 1, 3), (64, 1, 3)],
)
def test_counts_are_training_steps_in_whole_calls(steps_per_call, span, min_calls):
    # spans of 3 steps and at least 5: at 64 steps a call one call per span, and the compiling
    # call plus two to compare
    detector = WarmupDetector(min_steps=5, span=3, steps_per_call=steps_per_call)

    assert (detector.span, detector.min_calls) == (span, min_calls)
    assert first_steady_step(detector, [20.0] + [1.0] * 10) == min_calls - 1


def test_min_steps_beyond_the_spans_are_whole_calls():
    # 200 steps at 64 a call: 4 calls, more than the 3 the spans need
    assert WarmupDetector(min_steps=200, span=3, steps_per_call=64).min_calls == 4


def test_calls_still_falling_are_not_steady_at_64_steps_a_call():
    # each 64-step call 10% faster than the one before: never steady, however many
    detector = WarmupDetector(min_steps=5, span=3, steps_per_call=64)

    assert first_steady_step(detector, [20.0] + [2.0 * 0.9**i for i in range(12)]) is None


@pytest.mark.parametrize(
    ("steps", "steps_per_call", "calls"),
    [(5, 1, 5), (5, 2, 3), (5, 5, 1), (5, 64, 1), (200, 64, 4), (0, 8, 1)],
)
def test_whole_calls_hold_the_steps_and_at_least_one_call(steps, steps_per_call, calls):
    # the input ablation's cached pipeline warms up on these: 5 steps, one call at 64 a call
    assert whole_calls(steps, steps_per_call) == calls


@pytest.mark.parametrize(
    ("timed_window", "pairs"),
    [(0.5, 3), (0.6, 3), (1.0, 3), (1.5, 2), (2.0, 1), (20.0, 1), (0.0, 3)],
)
def test_the_ablation_keeps_its_pairs_until_its_windows_take_twice_their_time(timed_window, pairs):
    # 3 pairs of 0.5 s windows: 3 s nominal; up to twice that, then fewer pairs, one at least
    # (a window of one 20 s call: one pair, not 2 minutes)
    assert ablation_pairs(3, 0.5, timed_window) == pairs


def test_the_ablation_times_at_most_twice_its_nominal_seconds_beyond_one_pair():
    for timed_window in (0.3, 0.7, 1.1, 1.6, 2.9):
        pairs = ablation_pairs(3, 0.5, timed_window)
        assert pairs == 1 or 2 * pairs * timed_window <= 2 * 3 * 2 * 0.5


def test_ablation_pairs_below_one_are_rejected():
    with pytest.raises(ValueError, match="Received: pairs=0"):
        ablation_pairs(0, 0.5, 1.0)


def test_steps_per_call_below_one_is_rejected():
    with pytest.raises(ValueError, match="Received: steps_per_call=0"):
        WarmupDetector(steps_per_call=0)


def test_slow_first_step_does_not_delay_steady_state():
    # the compile step (index 0) is excluded from both medians at min_steps
    detector = WarmupDetector(min_steps=1, span=3)

    assert first_steady_step(detector, [30.0] + [0.1] * 10) == 6


def test_drop_within_tolerance_counts_as_steady():
    detector = WarmupDetector(min_steps=1, span=3, tolerance=0.05)

    assert first_steady_step(detector, [5.0, 1.0, 1.0, 1.0, 0.96, 0.96, 0.96]) == 6


def test_drop_beyond_tolerance_is_not_steady():
    detector = WarmupDetector(min_steps=1, span=3, tolerance=0.05)

    assert first_steady_step(detector, [5.0, 1.0, 1.0, 1.0, 0.9, 0.9, 0.9]) is None


def test_rising_step_times_count_as_steady():
    detector = WarmupDetector(min_steps=1, span=2)

    assert first_steady_step(detector, [5.0, 0.1, 0.1, 0.2, 0.2]) == 4


def test_single_outlier_does_not_break_steady_state_thanks_to_medians():
    detector = WarmupDetector(min_steps=1, span=3)
    for seconds in [5.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]:
        detector.add(seconds)

    # one very fast step in the recent span leaves its median at 0.1
    assert detector.add(0.001) is True


@pytest.mark.parametrize("span", [0, -1])
def test_span_below_one_is_rejected(span):
    with pytest.raises(ValueError, match=f"Received: span={span}"):
        WarmupDetector(span=span)


def test_steady_step_seconds_is_median_of_last_span_excluding_first_step():
    detector = WarmupDetector(span=3)
    for seconds in [5.0, 0.3, 0.2, 0.4, 0.25]:
        detector.add(seconds)

    assert detector.steady_step_seconds == 0.25  # median of [0.2, 0.4, 0.25]


def test_steady_step_seconds_never_uses_the_first_step():
    detector = WarmupDetector(span=3)
    detector.add(5.0)
    detector.add(0.3)

    assert detector.steady_step_seconds == 0.3


@pytest.mark.parametrize("steps", [0, 1])
def test_steady_step_seconds_needs_two_steps(steps):
    detector = WarmupDetector()
    for _ in range(steps):
        detector.add(1.0)

    with pytest.raises(ValueError, match="at least two steps"):
        _ = detector.steady_step_seconds


# --------------------------------------------------------------------------------------------
# steps_per_window
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step_seconds", "window_seconds", "min_steps", "expected"),
    [
        (0.01, 0.5, 3, 50),  # many fast steps fill the window
        (0.125, 0.5, 1, 4),  # exact fit
        (0.2, 0.5, 1, 3),  # partial step rounds up to a whole step
        (0.3, 0.5, 3, 3),  # slow steps: min_steps wins
        (10.0, 0.5, 1, 1),  # a step longer than the window
    ],
)
def test_steps_per_window(step_seconds, window_seconds, min_steps, expected):
    assert steps_per_window(step_seconds, window_seconds, min_steps) == expected


@pytest.mark.parametrize("step_seconds", [0.0, -0.1])
def test_steps_per_window_with_non_positive_step_time_returns_min_steps(step_seconds):
    assert steps_per_window(step_seconds, 0.5, 4) == 4


def test_steps_per_window_never_returns_zero_steps():
    assert steps_per_window(0.0, 0.5, 0) == 1


# --------------------------------------------------------------------------------------------
# summarize
# --------------------------------------------------------------------------------------------


def test_summarize_median_of_odd_count():
    assert summarize([3.0, 1.0, 2.0]).median == 2.0


def test_summarize_median_of_even_count_is_mean_of_middle_two():
    assert summarize([4.0, 1.0, 3.0, 2.0]).median == 2.5


def test_summarize_seven_values_gives_min_max_interval():
    values = [105.0, 99.0, 101.0, 97.0, 103.0, 100.0, 98.0]

    estimate = summarize(values)

    assert estimate == Estimate(median=100.0, low=97.0, high=105.0, confidence=1 - 2 / 128, n=7)


def test_summarize_ten_values_drops_one_value_from_each_end():
    values = [10.0, 1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0, 5.0]

    estimate = summarize(values)

    assert (estimate.low, estimate.high) == (2.0, 9.0)
    assert estimate.confidence == pytest.approx(1 - 2 * 11 / 1024)
    assert estimate.median == 5.5
    assert estimate.n == 10


def test_summarize_five_values_falls_short_of_95_percent():
    estimate = summarize([5.0, 1.0, 4.0, 2.0, 3.0])

    assert (estimate.low, estimate.high) == (1.0, 5.0)
    assert estimate.confidence == pytest.approx(0.9375)
    assert estimate.confidence < CONFIDENCE


def test_summarize_six_values_is_the_first_95_percent_interval():
    estimate = summarize([float(v) for v in range(6)])

    assert (estimate.low, estimate.high) == (0.0, 5.0)
    assert estimate.confidence == pytest.approx(1 - 2 / 64)
    assert estimate.confidence >= CONFIDENCE


def test_summarize_one_value_has_zero_confidence():
    estimate = summarize([42.0])

    assert estimate == Estimate(median=42.0, low=42.0, high=42.0, confidence=0.0, n=1)


def test_summarize_two_values():
    estimate = summarize([2.0, 1.0])

    assert (estimate.median, estimate.low, estimate.high) == (1.5, 1.0, 2.0)
    assert estimate.confidence == pytest.approx(0.5)


def _coverage(k: int, n: int) -> float:
    """Coverage of [x_(k), x_(n+1-k)]: 1 - 2 P(X <= k-1), X ~ Binomial(n, 1/2)."""
    return 1.0 - 2.0 * sum(math.comb(n, i) for i in range(k)) / 2**n


@pytest.mark.parametrize("n", range(6, 61))
def test_summarize_picks_the_narrowest_interval_with_95_percent_coverage(n):
    values = [float(v) for v in range(n)]
    random.Random(n).shuffle(values)

    estimate = summarize(values)

    k = int(estimate.low) + 1  # values are 0..n-1, so x_(k) == k - 1
    assert estimate.high == n - k  # symmetric: x_(n+1-k)
    assert estimate.confidence == pytest.approx(_coverage(k, n))
    assert estimate.confidence >= CONFIDENCE
    assert k + 1 > n // 2 or _coverage(k + 1, n) < CONFIDENCE  # one step narrower falls short


def test_summarize_honours_a_lower_confidence():
    values = [float(v) for v in range(10)]

    narrow = summarize(values, confidence=0.80)

    # k=3 covers 1 - 2*56/1024 = 0.89; k=4 covers 1 - 2*176/1024 = 0.66
    assert (narrow.low, narrow.high) == (2.0, 7.0)
    assert narrow.confidence == pytest.approx(1 - 2 * 56 / 1024)


def test_summarize_does_not_modify_its_input():
    values = [3.0, 1.0, 2.0]

    summarize(values)

    assert values == [3.0, 1.0, 2.0]


def test_summarize_accepts_a_tuple():
    assert summarize((1.0, 2.0, 3.0)).median == 2.0


def test_summarize_rejects_empty():
    with pytest.raises(ValueError, match="at least one value"):
        summarize([])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_summarize_rejects_non_finite(bad):
    with pytest.raises(ValueError, match="finite values"):
        summarize([1.0, bad, 2.0])


# --------------------------------------------------------------------------------------------
# Estimate
# --------------------------------------------------------------------------------------------


def test_estimate_half_width():
    assert Estimate(median=100.0, low=90.0, high=110.0, confidence=0.95, n=7).half_width == 10.0


def test_estimate_half_width_of_asymmetric_interval():
    assert Estimate(median=100.0, low=96.0, high=110.0, confidence=0.95, n=7).half_width == 7.0


def test_estimate_relative_half_width_is_a_fraction_of_the_median():
    estimate = Estimate(median=200.0, low=196.0, high=204.0, confidence=0.95, n=7)

    assert estimate.relative_half_width == pytest.approx(0.02)


def test_estimate_relative_half_width_of_zero_median_is_infinite():
    estimate = Estimate(median=0.0, low=-1.0, high=1.0, confidence=0.95, n=7)

    assert estimate.relative_half_width == math.inf


def test_estimate_to_dict():
    estimate = Estimate(median=5.0, low=4.0, high=6.0, confidence=0.98, n=8)

    assert estimate.to_dict() == {
        "median": 5.0,
        "low": 4.0,
        "high": 6.0,
        "confidence": 0.98,
        "n": 8,
    }


# --------------------------------------------------------------------------------------------
# confidently_below
# --------------------------------------------------------------------------------------------


def test_seven_windows_all_below_threshold_are_confidently_below():
    estimate = summarize([90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 99.0])

    assert confidently_below(estimate, threshold=100.0) is True


def test_seven_windows_touching_threshold_are_not_confidently_below():
    estimate = summarize([90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 100.0])

    assert confidently_below(estimate, threshold=100.0) is False


def test_seven_windows_with_median_below_but_max_above_are_not_confidently_below():
    estimate = summarize([50.0, 50.0, 50.0, 50.0, 50.0, 50.0, 120.0])

    assert estimate.median < 100.0
    assert confidently_below(estimate, threshold=100.0) is False


def test_ten_windows_use_the_interval_bound_not_the_maximum():
    # one slow outlier window's maximum lies above the threshold, but the 2nd largest does not
    estimate = summarize([90.0] * 9 + [500.0])

    assert estimate.high == 90.0
    assert confidently_below(estimate, threshold=100.0) is True


def test_with_95_percent_interval_a_small_gap_is_enough():
    # with >= 6 windows, no 2x rule applies: 0.95 * threshold is below
    estimate = summarize([95.0] * 6)

    assert estimate.confidence >= CONFIDENCE
    assert confidently_below(estimate, threshold=100.0) is True


def test_one_window_far_below_baseline_is_confidently_below():
    estimate = summarize([839.0])

    assert confidently_below(estimate, threshold=78676.0) is True


def test_one_window_at_ninety_percent_of_threshold_is_not_confidently_below():
    estimate = summarize([0.9 * 78676.0])

    assert confidently_below(estimate, threshold=78676.0) is False


def test_one_window_exactly_at_half_the_threshold_is_not_confidently_below():
    estimate = summarize([50.0])

    assert confidently_below(estimate, threshold=100.0) is False


def test_one_window_just_under_half_the_threshold_is_confidently_below():
    estimate = summarize([49.9])

    assert confidently_below(estimate, threshold=100.0) is True


def test_first_window_factor_sets_the_gap_needed_without_an_interval():
    estimate = summarize([80.0])

    assert confidently_below(estimate, threshold=100.0, first_window_factor=0.9) is True
    assert confidently_below(estimate, threshold=100.0, first_window_factor=0.5) is False


def test_five_windows_need_every_window_below_half_the_threshold():
    assert confidently_below(summarize([40.0, 41.0, 42.0, 43.0, 44.0]), 100.0) is True
    assert confidently_below(summarize([40.0, 41.0, 42.0, 43.0, 60.0]), 100.0) is False
    assert confidently_below(summarize([90.0] * 5), 100.0) is False


def test_throughput_above_threshold_is_never_below():
    assert confidently_below(summarize([150.0] * 7), 100.0) is False
    assert confidently_below(summarize([150.0]), 100.0) is False


@pytest.mark.parametrize(
    ("fraction", "verdict"),
    [
        (0.0, "not input-bound"),
        (0.049, "not input-bound"),
        (0.05, "moderately input-bound"),
        (0.199, "moderately input-bound"),
        (0.2, "highly input-bound"),
        (0.9, "highly input-bound"),
    ],
)
def test_input_bound_verdict_uses_xprofs_thresholds(fraction, verdict):
    assert input_bound_verdict(fraction) == verdict


def _estimate(median: float) -> Estimate:
    return Estimate(median=median, low=median * 0.9, high=median * 1.1, confidence=0.97, n=7)


def test_input_ablation_fraction_breakdown_and_round_trip():
    ablation = InputAblation.of(pipeline=_estimate(600.0), cached=_estimate(1000.0))

    assert ablation.input_fraction == pytest.approx(0.4)
    assert ablation.verdict == "highly input-bound"
    breakdown = ablation.step_milliseconds(batch_size=60)  # 100 ms real, 60 ms compute
    assert breakdown == pytest.approx({"input": 40.0, "compute": 60.0})
    assert InputAblation.from_dict(ablation.to_dict()) == ablation


def test_input_ablation_noise_never_gives_a_negative_share():
    ablation = InputAblation.of(pipeline=_estimate(1050.0), cached=_estimate(1000.0))

    assert ablation.input_fraction == 0.0
    assert ablation.step_milliseconds(batch_size=50)["input"] == 0.0


# --------------------------------------------------------------------------------------------
# hopeless_warm_up and slower_than_baseline: the early stop
# --------------------------------------------------------------------------------------------

#: Warm-up step times (seconds) at batch 32, shaped like the digits CNN's on the 2-core Xeon: the
#: baseline (float32, ~9,000 samples/s) and mixed_float16 without XLA (~90x slower on this CPU).
BASELINE_STEPS = [1.9, 0.0061, 0.0042, 0.0038, 0.0036, 0.0035, 0.0035, 0.0036]
FLOAT16_STEPS = [4.8, 0.41, 0.33, 0.32, 0.34]
THRESHOLD = 8_800.0  # the baseline's lower bound, samples/s


def test_a_configuration_90x_slower_stops_four_steps_into_its_warm_up():
    seen = [hopeless_warm_up(FLOAT16_STEPS[:n], 32, THRESHOLD) for n in range(1, 6)]

    assert seen[:3] == [None, None, None]  # the compile step, then too few steps to judge
    assert seen[3] is not None
    assert "fastest of 3 steps after compilation ran 100 samples/s" in seen[3]
    assert "under 1/3 of the baseline's 8800 samples/s" in seen[3]


def test_the_baseline_itself_is_never_hopeless():
    for n in range(1, len(BASELINE_STEPS) + 1):
        assert hopeless_warm_up(BASELINE_STEPS[:n], 32, THRESHOLD) is None


@pytest.mark.parametrize("slower", [1.0, 1.5, 2.0, 2.9])
def test_a_configuration_less_than_the_factor_slower_goes_on_to_its_timed_windows(slower):
    # steps exactly `slower` times the baseline's steady step, after a slow compile step
    steady = 32 / THRESHOLD
    steps = [10.0, *([steady * slower] * 20)]

    assert hopeless_warm_up(steps, 32, THRESHOLD) is None


def test_the_fastest_step_decides_so_one_slow_step_stops_nothing():
    steady = 32 / THRESHOLD
    steps = [2.0, steady * 50, steady * 1.1, steady * 50]

    assert hopeless_warm_up(steps, 32, THRESHOLD) is None
    assert hopeless_warm_up([2.0, *[steady * HOPELESS_FACTOR * 1.01] * 3], 32, THRESHOLD)
    assert not hopeless_warm_up([2.0, *[steady * HOPELESS_FACTOR * 1.01] * 2], 32, THRESHOLD)


#: A call of 64 training steps at batch 32: 2,048 samples.
CALL_64 = 64 * 32


def test_the_warm_up_stop_at_64_steps_per_call_stops_after_one_call():
    """Issue 25: the evidence is training steps, not calls. At 64 steps per call a configuration
    90x slower is hopeless after the compiling call and one more (the old rule waited for three
    calls more, 192 steps of a hopeless configuration)."""
    slow_call = 64 * FLOAT16_STEPS[-1]  # 64 steps at ~94 samples/s
    calls = [FLOAT16_STEPS[0] + slow_call, slow_call]

    assert hopeless_warm_up(calls[:1], CALL_64, THRESHOLD, steps_per_call=64) is None
    stopped = hopeless_warm_up(calls, CALL_64, THRESHOLD, steps_per_call=64)
    assert stopped is not None
    assert "fastest of 1 call (64 steps) after compilation ran 94 samples/s" in stopped


@pytest.mark.parametrize(("steps_per_call", "calls_needed"), [(1, 3), (2, 2), (3, 1), (64, 1)])
def test_the_warm_up_stop_needs_three_training_steps_after_compilation(
    steps_per_call, calls_needed
):
    slow_call = steps_per_call * FLOAT16_STEPS[-1]
    calls = [5.0, *[slow_call] * calls_needed]
    samples = steps_per_call * 32

    assert calls_needed * steps_per_call >= HOPELESS_MIN_STEPS
    assert hopeless_warm_up(calls[:-1], samples, THRESHOLD, steps_per_call) is None
    assert hopeless_warm_up(calls, samples, THRESHOLD, steps_per_call) is not None


@pytest.mark.parametrize("slower", [1.0, 2.0, 2.9])
def test_at_64_steps_per_call_a_configuration_under_the_factor_is_never_hopeless(slower):
    steady_call = 64 * 32 / THRESHOLD
    calls = [30.0, *([steady_call * slower] * 20)]

    for n in range(1, len(calls) + 1):
        assert hopeless_warm_up(calls[:n], CALL_64, THRESHOLD, steps_per_call=64) is None


def test_a_call_count_of_steps_below_one_is_refused():
    with pytest.raises(
        ValueError, match=r"steps_per_call must be >= 1\. Received: steps_per_call=0"
    ):
        hopeless_warm_up([1.0, 1.0], 32, THRESHOLD, steps_per_call=0)


def test_a_steady_warm_up_under_half_the_threshold_stops_before_any_window():
    half = FIRST_WINDOW_FACTOR * THRESHOLD
    stopped = slow_steady_warm_up([half * 0.9, half * 0.95, half * 0.99], 192, THRESHOLD)

    assert stopped == (
        "slow in steady warm-up: its last 3 calls (192 steps) ran 4356 samples/s at most, "
        "under 0.5x the baseline's 8800 samples/s"
    )
    assert "its last 3 steps ran" in (slow_steady_warm_up([100.0] * 3, 3, THRESHOLD) or "")


def test_a_steady_warm_up_near_the_threshold_goes_on_to_its_windows():
    half = FIRST_WINDOW_FACTOR * THRESHOLD
    # one call at half the threshold or more is enough to go on: only a gross gap stops here
    assert slow_steady_warm_up([half * 0.5, half * 0.5, half], 3, THRESHOLD) is None
    assert slow_steady_warm_up([THRESHOLD * 0.9] * 3, 3, THRESHOLD) is None
    assert slow_steady_warm_up([], 0, THRESHOLD) is None
    assert slow_steady_warm_up([1.0] * 3, 3, None) is None


def test_no_threshold_means_no_early_stop():
    assert hopeless_warm_up(FLOAT16_STEPS, 32, None) is None
    assert slower_than_baseline(summarize([1.0] * 7), None) is None


def test_slower_than_baseline_names_the_windows_and_the_bound():
    estimate = summarize([90.0, 91.0, 92.0, 93.0, 94.0, 95.0, 96.0])

    assert slower_than_baseline(estimate, 100.0) == (
        "throughput 93 samples/s (95% CI upper 96) is confidently below the baseline's "
        "100 samples/s after 7 window(s)"
    )
    assert slower_than_baseline(estimate, 95.0) is None
