"""Unit tests for autotune.trial.warm_up: the warm-up loop and its early stops, driven by scripted
call times (seconds) instead of a model, so each case says exactly what the trial would cost."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from autotune.config import RunSettings
from autotune.measure import HOPELESS_MIN_STEPS
from autotune.trial.warm_up import warm_up

BATCH = 32
BASELINE_STEP = 32 / 9_000.0  # seconds per training step of a ~9,000 samples/s baseline
THRESHOLD = 8_800.0  # the baseline's lower bound, samples/s
COMPILE = 20.0  # seconds of compilation in the first call


class ScriptedCalls:
    """Stands in for the trainer: each call takes the next of ``seconds`` (the last one repeats
    forever) and counts itself; ``spent`` is the seconds the calls took in all."""

    def __init__(self, seconds: Sequence[float]) -> None:
        self.seconds = list(seconds)
        self.calls = 0
        self.spent = 0.0

    def __call__(self) -> float:
        took = self.seconds[min(self.calls, len(self.seconds) - 1)]
        self.calls += 1
        self.spent += took
        return took


def calls_at(slower: float, steps_per_call: int) -> ScriptedCalls:
    """A configuration ``slower`` times slower than the baseline, ``steps_per_call`` steps a call,
    the first call compiling."""
    call = steps_per_call * BASELINE_STEP * slower
    return ScriptedCalls([COMPILE + call, call])


def settings(**changes: object) -> RunSettings:
    return RunSettings(stop_below_samples_per_second=THRESHOLD).replace(**changes)


@pytest.mark.parametrize("steps_per_call", [1, 64])
def test_a_configuration_100x_slower_costs_three_steps_or_one_call_past_its_compiling_one(
    steps_per_call,
):
    """The floor with whole calls: after the compiling call, three training steps' time, or one
    call's when a call holds more (at 64 steps of a 100x slower configuration here, 23 s)."""
    calls = calls_at(100.0, steps_per_call)
    result = warm_up(calls, settings(), BATCH * steps_per_call, steps_per_call)

    assert result.stopped is not None and result.stopped.startswith("hopeless in warm-up")
    assert calls.calls == (4 if steps_per_call == 1 else 2)  # three steps, or one call of 64
    steps_after_compile = max(HOPELESS_MIN_STEPS, steps_per_call)
    assert calls.spent - calls.seconds[0] == pytest.approx(
        steps_after_compile * 100.0 * BASELINE_STEP
    )
    assert len(result.samples_per_second) == calls.calls - 1


def test_the_warm_up_stop_at_64_steps_per_call_stops_after_one_call():
    calls = calls_at(90.0, 64)
    result = warm_up(calls, settings(), BATCH * 64, 64)

    assert result.steps == 2  # the compiling call and one more
    assert result.stopped is not None
    assert "fastest of 1 call (64 steps) after compilation" in result.stopped
    assert result.samples_per_second == pytest.approx((9_000.0 / 90.0,))
    assert result.compile_seconds == pytest.approx(COMPILE)


@pytest.mark.parametrize("steps_per_call", [1, 64])
def test_a_configuration_2_5x_slower_stops_once_steady_without_a_window(steps_per_call):
    calls = calls_at(2.5, steps_per_call)
    result = warm_up(calls, settings(), BATCH * steps_per_call, steps_per_call)

    assert result.stopped is not None and result.stopped.startswith("slow in steady warm-up")
    # the detector's fewest calls to call the warm-up steady: spans of 3 steps, whole calls
    assert result.steps == (7 if steps_per_call == 1 else 3)


@pytest.mark.parametrize("slower", [1.0, 1.5, 1.9])
@pytest.mark.parametrize("steps_per_call", [1, 64])
def test_a_configuration_within_2x_of_the_baseline_warms_up_to_its_windows(slower, steps_per_call):
    calls = calls_at(slower, steps_per_call)
    result = warm_up(calls, settings(), BATCH * steps_per_call, steps_per_call)

    assert result.stopped is None
    assert result.steps == (7 if steps_per_call == 1 else 3)
    assert result.steady_step_seconds == pytest.approx(calls.seconds[1])


def test_slow_first_calls_after_compilation_do_not_stop_a_good_configuration():
    # the two calls after compilation 50x slow (caches filling), then the baseline's speed
    slow, steady = BASELINE_STEP * 50, BASELINE_STEP
    calls = ScriptedCalls([COMPILE, slow, slow, steady])
    result = warm_up(calls, settings(), BATCH, 1)

    assert result.stopped is None


def test_calls_that_still_fall_at_64_steps_keep_the_warm_up_going():
    # caches fill over the first calls of 64 steps: 3, 2, 1.5, then 1 s a call
    calls = ScriptedCalls([COMPILE, 3.0, 2.0, 1.5, 1.0])
    result = warm_up(calls, RunSettings(), BATCH * 64, 64)

    assert result.stopped is None
    assert result.steps == 6  # steady once a call is no faster than the one before it
    assert result.steady_step_seconds == pytest.approx(1.0)


def test_without_a_threshold_nothing_stops_early():
    calls = calls_at(100.0, 1)
    result = warm_up(calls, RunSettings(), BATCH, 1)

    assert result.stopped is None and result.steps == 7


def test_the_time_cap_ends_a_warm_up_whose_calls_still_fall():
    falling = ScriptedCalls([5.0, *[10.0 - i * 0.5 for i in range(19)]])
    result = warm_up(falling, RunSettings(warmup_max_seconds=30.0), BATCH, 1)

    assert result.stopped is None
    assert result.steps == 4  # 5 + 10 + 9.5 + 9 > 30 s
