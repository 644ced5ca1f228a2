"""Unit tests for autotune.analysis.recompilation: XLA recompiling during the timed windows."""

from __future__ import annotations

import json

import pytest

from autotune.analysis.recompilation import COMPILE_SHARE, MEDIAN_FACTOR, Recompilation, detect

STEP = 0.004  # a 4 ms training step
SPIKE = 0.3  # a 300 ms recompilation
COMPILE = 0.9  # the first step compiled for 0.9 s


def steps_with_spikes(spikes: int, steps: int = 100) -> list[float]:
    """``steps`` steps of 4 ms with ``spikes`` 300 ms steps spread among them."""
    times = [STEP] * steps
    for index in range(spikes):
        times.insert(10 + index * 15, SPIKE)
    return times


def test_constants_are_ten_medians_and_a_tenth_of_the_compile_time() -> None:
    assert MEDIAN_FACTOR == 10.0
    assert COMPILE_SHARE == 0.1


# --------------------------------------------------------------------------------------------
# detect
# --------------------------------------------------------------------------------------------


def test_recompilation_spikes_with_xla_on_are_flagged() -> None:
    result = detect(steps_with_spikes(5), COMPILE, jit_compile=True, dynamic_dims=["x[1]"])

    assert result.compile_like_steps == 5
    assert result.timed_steps == 105
    assert result.median_step_ms == pytest.approx(4.0)
    assert result.slowest_step_ms == pytest.approx(300.0)
    assert result.compile_ms == pytest.approx(900.0)
    assert result.slow_steps_ms == pytest.approx([300.0] * 5)
    assert result.flagged


def test_flagged_message_names_the_dynamic_dims_and_the_fix() -> None:
    dims = ["x[1]", "mask[1]"]

    message = detect(steps_with_spikes(5), COMPILE, jit_compile=True, dynamic_dims=dims).message

    assert "XLA recompiled" in message
    assert "5 of 105 steps" in message
    assert "x[1], mask[1]" in message
    assert "pad or bucket" in message
    assert "300 ms" in message
    assert "4.0 ms median" in message


def test_repeated_spikes_without_dynamic_dims_are_flagged_with_another_cause() -> None:
    result = detect(steps_with_spikes(5), COMPILE, jit_compile=True)

    assert result.flagged
    assert "pad or bucket" not in result.message
    assert "changes the step's shapes or graph" in result.message


def test_the_same_spikes_with_xla_off_are_not_flagged() -> None:
    result = detect(steps_with_spikes(5), COMPILE, jit_compile=False, dynamic_dims=["x[1]"])

    assert result.compile_like_steps == 5  # counted, but no XLA to blame
    assert not result.flagged
    assert result.message == ""


def test_one_spike_without_dynamic_dims_is_not_flagged() -> None:
    result = detect(steps_with_spikes(1), COMPILE, jit_compile=True)

    assert result.compile_like_steps == 1
    assert not result.flagged
    assert result.message == ""


def test_one_spike_with_dynamic_dims_is_flagged() -> None:
    result = detect(steps_with_spikes(1), COMPILE, jit_compile=True, dynamic_dims=["x[1]"])

    assert result.compile_like_steps == 1
    assert result.flagged
    assert "x[1]" in result.message


def test_noise_of_a_few_3x_slow_steps_is_not_compile_like() -> None:
    times = [STEP] * 100 + [3 * STEP] * 4

    result = detect(times, COMPILE, jit_compile=True, dynamic_dims=["x[1]"])

    assert result.compile_like_steps == 0
    assert result.slow_steps_ms == []
    assert not result.flagged
    assert result.slowest_step_ms == pytest.approx(12.0)


def test_compile_share_decides_when_it_is_above_ten_medians() -> None:
    # median 4 ms, compile 2 s: ten medians are 40 ms, median + 0.1 * compile is 204 ms
    times = [STEP] * 50 + [0.1, 0.1, 0.21, 0.21]

    result = detect(times, 2.0, jit_compile=True)

    assert result.compile_like_steps == 2  # the 100 ms steps (25 medians) do not count
    assert result.slow_steps_ms == pytest.approx([210.0, 210.0])


def test_median_factor_decides_when_it_is_above_the_compile_share() -> None:
    # median 62.5 ms, compile 0.1 s: median + 0.1 * compile is 72.5 ms, ten medians 625 ms
    median = 0.0625
    times = [median] * 50 + [0.3, 0.3, 10 * median, 10 * median]

    result = detect(times, 0.1, jit_compile=True)

    assert result.compile_like_steps == 2  # exactly ten medians counts; 300 ms (4.8x) does not
    assert result.slow_steps_ms == pytest.approx([625.0, 625.0])


def test_a_step_just_under_the_threshold_is_not_compile_like() -> None:
    times = [STEP] * 50 + [0.0939]  # threshold: 4 ms + 0.1 * 0.9 s = 94 ms

    assert detect(times, COMPILE, jit_compile=True).compile_like_steps == 0
    assert detect([*times, 0.0941], COMPILE, jit_compile=True).compile_like_steps == 1


def test_without_a_compile_time_ten_medians_decide() -> None:
    times = [STEP] * 50 + [0.039, 0.041]

    result = detect(times, 0.0, jit_compile=True)

    assert result.compile_like_steps == 1
    assert result.compile_ms == 0.0


def test_no_timed_steps_gives_an_empty_unflagged_result() -> None:
    result = detect([], 0.5, jit_compile=True)

    assert result == Recompilation(
        jit_compile=True,
        dynamic_dims=[],
        compile_like_steps=0,
        timed_steps=0,
        median_step_ms=0.0,
        slowest_step_ms=0.0,
        compile_ms=500.0,
        slow_steps_ms=[],
    )
    assert not result.flagged
    assert result.message == ""


def test_no_timed_steps_with_dynamic_dims_still_warns() -> None:
    result = detect([], COMPILE, jit_compile=True, dynamic_dims=("x[1]",))

    assert result.dynamic_dims == ["x[1]"]
    assert "none seen" in result.message


def test_dynamic_dims_with_xla_on_and_no_spikes_say_none_seen() -> None:
    result = detect([STEP] * 100, COMPILE, jit_compile=True, dynamic_dims=["x[1]", "y[0]"])

    assert not result.flagged
    assert "x[1], y[0]" in result.message
    assert "can make XLA recompile" in result.message
    assert "none seen" in result.message


def test_dynamic_dims_with_xla_off_say_nothing() -> None:
    result = detect([STEP] * 100, COMPILE, jit_compile=False, dynamic_dims=["x[1]"])

    assert result.message == ""


def test_slow_steps_ms_keeps_at_most_20_but_counts_all() -> None:
    times = [STEP] * 200 + [SPIKE + i / 1000 for i in range(30)]

    result = detect(times, COMPILE, jit_compile=True)

    assert result.compile_like_steps == 30
    assert len(result.slow_steps_ms) == 20
    assert result.slow_steps_ms == pytest.approx([300.0 + i for i in range(20)])
    assert result.slowest_step_ms == pytest.approx(329.0)


def test_dynamic_dims_are_copied_into_a_list() -> None:
    dims = ("x[1]",)

    result = detect([STEP] * 10, COMPILE, jit_compile=True, dynamic_dims=dims)

    assert result.dynamic_dims == ["x[1]"]


# --------------------------------------------------------------------------------------------
# Recompilation
# --------------------------------------------------------------------------------------------


def test_to_dict_carries_flagged_and_message() -> None:
    result = detect(steps_with_spikes(5), COMPILE, jit_compile=True, dynamic_dims=["x[1]"])

    data = result.to_dict()

    assert data["flagged"] is True
    assert data["message"] == result.message
    assert data["compile_like_steps"] == 5
    assert data["dynamic_dims"] == ["x[1]"]


@pytest.mark.parametrize("spikes", [0, 1, 5])
def test_round_trip_through_a_dict_keeps_flagged_and_message_out_of_the_constructor(
    spikes: int,
) -> None:
    result = detect(steps_with_spikes(spikes), COMPILE, jit_compile=True, dynamic_dims=["x[1]"])

    restored = Recompilation.from_dict(json.loads(json.dumps(result.to_dict())))

    assert restored == result
    assert restored.flagged == result.flagged
    assert restored.message == result.message


def test_from_dict_recomputes_flagged_rather_than_trusting_the_stored_value() -> None:
    data = detect([STEP] * 10, COMPILE, jit_compile=True).to_dict()
    data["flagged"] = True
    data["message"] = "stale"

    restored = Recompilation.from_dict(data)

    assert not restored.flagged
    assert restored.message == ""


def test_flagged_needs_xla_and_compile_like_steps() -> None:
    def make(jit: bool, count: int, dims: list[str]) -> Recompilation:
        return Recompilation(jit, dims, count, 100, 4.0, 300.0, 900.0)

    assert not make(True, 0, ["x[1]"]).flagged
    assert not make(False, 3, ["x[1]"]).flagged
    assert not make(True, 1, []).flagged
    assert make(True, 1, ["x[1]"]).flagged
    assert make(True, 2, []).flagged


def test_recompilations_in_most_steps_still_stand_out_against_a_typical_step() -> None:
    # 6 of 10 steps recompile: the median is itself a compile, the lower quartile is not
    result = detect([0.004] * 4 + [0.3] * 6, 0.9, True, ["x[1]"])

    assert result.compile_like_steps == 6
    assert result.flagged
