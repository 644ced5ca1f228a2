"""Unit tests for autotune.fidelity: curve distance, alignment by samples seen, the seed noise
floor and the fidelity distance in units of it."""

from __future__ import annotations

import itertools
import math

import pytest

from autotune.fidelity import (
    MIN_NOISE_FLOOR,
    NoiseFloor,
    checkpoint_differences,
    checkpoint_steps,
    curve_distance,
    fidelity_distance,
    noise_floor,
)


def exponential_curve(checkpoints, start=2.0, rate=1e-4, factor=1.0):
    """Loss start * exp(-rate * samples) * factor at each checkpoint: log-linear in samples, so
    linear interpolation of log loss reproduces it exactly between any two checkpoints."""
    return [(s, factor * start * math.exp(-rate * s)) for s in checkpoints]


CHECKPOINTS = [1000, 2000, 3000, 4000, 5000, 6000]


# --------------------------------------------------------------------------------------------
# curve_distance
# --------------------------------------------------------------------------------------------


def test_identical_curves_have_distance_zero():
    curve = exponential_curve(CHECKPOINTS)

    assert curve_distance(curve, curve) == 0.0


@pytest.mark.parametrize("factor", [1.01, 1.1, 2.0, 0.5, 0.9])
def test_constant_factor_gives_abs_log_factor(factor):
    baseline = exponential_curve(CHECKPOINTS)
    trial = exponential_curve(CHECKPOINTS, factor=factor)

    assert curve_distance(trial, baseline) == pytest.approx(abs(math.log(factor)), rel=1e-9)


def test_distance_is_the_mean_over_checkpoints():
    baseline = [(100, 1.0), (200, 1.0), (300, 1.0), (400, 1.0)]
    trial = [(100, 1.0), (200, math.e), (300, 1.0), (400, 1.0 / math.e)]

    assert curve_distance(trial, baseline) == pytest.approx((0 + 1 + 0 + 1) / 4)


def test_same_curve_at_other_checkpoints_is_aligned_by_interpolation():
    baseline = exponential_curve(CHECKPOINTS)
    # The same run evaluated at other sample counts (a trial with another batch size validates
    # at different steps), covering the baseline's range.
    trial = exponential_curve([1000, 1750, 2600, 3333, 4100, 4800, 5500, 6000])

    assert curve_distance(trial, baseline) == pytest.approx(0.0, abs=1e-12)


def test_interpolation_is_in_log_space():
    # Two trial points with losses 1 and 4: log-linear interpolation gives 2 halfway (not 2.5).
    trial = [(0, 1.0), (100, 4.0)]

    assert curve_distance(trial, [(50, 2.0)]) == pytest.approx(0.0, abs=1e-12)
    assert curve_distance(trial, [(50, 2.5)]) == pytest.approx(math.log(2.5 / 2.0))


def test_curves_are_sorted_by_samples_first():
    baseline = exponential_curve(CHECKPOINTS)
    shuffled = list(reversed(exponential_curve([1000, 2500, 3500, 6000])))

    assert curve_distance(shuffled, list(reversed(baseline))) == pytest.approx(0.0, abs=1e-12)


def test_baseline_checkpoints_outside_the_trial_range_meet_its_nearest_evaluation():
    baseline = exponential_curve(CHECKPOINTS)
    # The trial only covers 2000..4000 and is identical there: 1000 is compared with its value
    # at 2000, 5000 and 6000 with its value at 4000 (log-linear curve: rate * distance).
    trial = exponential_curve([2000, 3000, 4000])
    expected = 1e-4 * (1000 + 0 + 0 + 0 + 1000 + 2000) / 6

    assert curve_distance(trial, baseline) == pytest.approx(expected)
    assert checkpoint_differences(trial, baseline) == pytest.approx(
        [0.1, 0.0, 0.0, 0.0, 0.1, 0.2], abs=1e-12
    )


def test_trial_points_beyond_the_baseline_range_do_not_count():
    baseline = exponential_curve([2000, 3000])
    trial = [*exponential_curve([1000, 2000, 3000]), (9000, 100.0)]

    assert curve_distance(trial, baseline) == pytest.approx(0.0, abs=1e-12)


def test_range_ends_are_inclusive():
    baseline = [(1000, 1.0), (2000, 2.0)]

    # 2000 matches exactly; 1000 meets the trial's first evaluation (2.0 against 1.0).
    assert curve_distance([(2000, 2.0), (3000, 1.0)], baseline) == pytest.approx(math.log(2) / 2)


def test_one_point_trial_is_compared_at_every_checkpoint():
    baseline = [(1000, 1.0), (2000, 2.0)]

    assert checkpoint_differences([(2000, 2.0 * math.e)], baseline) == pytest.approx(
        [1.0 + math.log(2), 1.0]
    )


def test_a_trial_entirely_after_the_baseline_is_compared_not_refused():
    baseline = exponential_curve([1000, 2000, 3000])
    trial = exponential_curve([4000, 5000])

    assert checkpoint_differences(trial, baseline) == pytest.approx([0.3, 0.2, 0.1])


def test_trial_between_baseline_checkpoints_is_compared_at_both():
    baseline = [(1000, 1.0), (4000, 1.0)]
    trial = [(2000, 1.0), (3000, math.e)]

    assert checkpoint_differences(trial, baseline) == pytest.approx([0.0, 1.0])


@pytest.mark.parametrize("batch_size", range(8, 1032, 8))
@pytest.mark.parametrize("base_batch_size", [16, 32, 128])
def test_no_batch_size_skips_a_baseline_checkpoint(batch_size, base_batch_size):
    """First evaluation before, at or after the baseline's first checkpoint: every checkpoint
    is compared, each with a trial evaluation (or a point between two) at most half a step of
    each curve away from it."""
    samples, checkpoints = 20_000, 6
    baseline_at = [s * base_batch_size for s in checkpoint_steps(samples, base_batch_size, 6)]
    trial_at = [s * batch_size for s in checkpoint_steps(samples, batch_size, checkpoints)]
    baseline = [(s, 1.0) for s in baseline_at]
    # A trial whose loss is e at its first evaluation and 1 afterwards: the first baseline
    # checkpoint must meet that first evaluation (or a point between it and the next).
    trial = [(s, math.e if i == 0 else 1.0) for i, s in enumerate(trial_at)]

    differences = checkpoint_differences(trial, baseline)

    assert len(differences) == len(baseline_at) == checkpoints
    assert differences[0] > 0, (baseline_at[0], trial_at[0])
    nearest = [min(abs(t - b) for t in trial_at) for b in baseline_at]
    for b, gap in zip(baseline_at, nearest, strict=True):
        between = any(lo <= b <= hi for lo, hi in itertools.pairwise(trial_at))
        assert between or gap <= (batch_size + base_batch_size) / 2, (b, trial_at)


def test_checkpoint_steps_aim_at_the_same_sample_counts_for_every_batch_size():
    assert checkpoint_steps(6000, 100, 6) == [10, 20, 30, 40, 50, 60]
    assert checkpoint_steps(6000, 320, 6) == [3, 6, 9, 12, 16, 19]
    assert checkpoint_steps(100, 64, 3) == [1, 2, 3]  # at least one step apart


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("which", ["trial", "baseline"])
def test_non_positive_or_non_finite_losses_raise_value_error(bad, which):
    good = exponential_curve(CHECKPOINTS)
    broken = [*good[:2], (good[2][0], bad), *good[3:]]
    trial, baseline = (broken, good) if which == "trial" else (good, broken)

    with pytest.raises(ValueError, match=f"{which} curve has a non-positive or non-finite loss"):
        curve_distance(trial, baseline)


@pytest.mark.parametrize("which", ["trial", "baseline"])
def test_empty_curves_raise_value_error(which):
    good = exponential_curve(CHECKPOINTS)
    trial, baseline = ([], good) if which == "trial" else (good, [])

    with pytest.raises(ValueError, match=f"{which} curve is empty"):
        curve_distance(trial, baseline)


# --------------------------------------------------------------------------------------------
# noise_floor
# --------------------------------------------------------------------------------------------


def test_noise_floor_is_the_mean_over_all_pairs_of_three_seeds():
    factors = [1.0, 1.02, 0.97]
    curves = [exponential_curve(CHECKPOINTS, factor=f) for f in factors]

    floor = noise_floor(curves)

    expected_pairs = [abs(math.log(a / b)) for a, b in itertools.combinations(factors, 2)]
    assert len(floor.pairs) == 3
    assert floor.pairs == pytest.approx(expected_pairs)
    assert floor.measured == pytest.approx(sum(expected_pairs) / 3)
    assert floor.value == floor.measured


def test_noise_floor_of_four_seeds_uses_six_pairs():
    curves = [exponential_curve(CHECKPOINTS, factor=1 + 0.01 * i) for i in range(4)]

    assert len(noise_floor(curves).pairs) == 6


def test_noise_floor_clamps_identical_seed_curves_at_the_minimum():
    curve = exponential_curve(CHECKPOINTS)

    floor = noise_floor([curve, list(curve), list(curve)])

    assert floor.measured == 0.0
    assert floor.pairs == (0.0, 0.0, 0.0)
    assert floor.value == MIN_NOISE_FLOOR


def test_noise_floor_below_the_minimum_is_clamped_but_measured_is_kept():
    tiny = 1 + MIN_NOISE_FLOOR / 10
    curves = [exponential_curve(CHECKPOINTS, factor=f) for f in (1.0, tiny, 1.0)]

    floor = noise_floor(curves)

    assert 0 < floor.measured < MIN_NOISE_FLOOR
    assert floor.value == MIN_NOISE_FLOOR


@pytest.mark.parametrize("count", [0, 1])
def test_noise_floor_needs_two_curves(count):
    with pytest.raises(ValueError, match=f"at least 2 seed curves. Received: {count}"):
        noise_floor([exponential_curve(CHECKPOINTS)] * count)


def test_noise_floor_to_dict():
    floor = NoiseFloor(value=0.02, measured=0.02, pairs=(0.01, 0.03))

    assert floor.to_dict() == {"value": 0.02, "measured": 0.02, "pairs": [0.01, 0.03]}


# --------------------------------------------------------------------------------------------
# fidelity_distance
# --------------------------------------------------------------------------------------------


def test_fidelity_distance_divides_by_the_noise_floor():
    seeds = [exponential_curve(CHECKPOINTS, factor=f) for f in (1.0, 1.02, 0.98)]
    floor = noise_floor(seeds)
    trial = exponential_curve(CHECKPOINTS, factor=1.05)

    assert fidelity_distance(trial, seeds[0], floor) == pytest.approx(math.log(1.05) / floor.value)


def test_a_trial_as_far_as_the_typical_seed_pair_scores_one():
    seeds = [exponential_curve(CHECKPOINTS, factor=f) for f in (1.0, 1.01, 0.99)]
    floor = noise_floor(seeds)
    typical = math.exp(floor.measured)  # a constant log ratio equal to the mean pair distance
    trial = exponential_curve([500, 2200, 3900, 6500], factor=typical)

    assert fidelity_distance(trial, seeds[0], floor) == pytest.approx(1.0)


def test_the_baseline_itself_scores_zero():
    seeds = [exponential_curve(CHECKPOINTS, factor=f) for f in (1.0, 1.01, 0.99)]

    assert fidelity_distance(seeds[0], seeds[0], noise_floor(seeds)) == 0.0


def test_fidelity_with_identical_seeds_uses_the_minimum_floor():
    baseline = exponential_curve(CHECKPOINTS)
    floor = noise_floor([baseline, baseline, baseline])
    trial = exponential_curve(CHECKPOINTS, factor=math.exp(0.01))

    assert fidelity_distance(trial, baseline, floor) == pytest.approx(0.01 / MIN_NOISE_FLOOR)
    assert math.isfinite(fidelity_distance(trial, baseline, floor))


def test_fidelity_distance_raises_when_a_curve_is_empty():
    baseline = exponential_curve(CHECKPOINTS)
    floor = NoiseFloor(0.01, 0.01, (0.01,))

    with pytest.raises(ValueError, match="trial curve is empty"):
        fidelity_distance([], baseline, floor)


def test_the_noise_floor_reports_its_own_spread_and_warns_when_seeds_disagree():
    agreeing = NoiseFloor(0.0133, 0.0133, (0.0101, 0.0128, 0.0170))
    disagreeing = NoiseFloor(0.02, 0.02, (0.005, 0.02, 0.035))

    assert agreeing.disagreement == pytest.approx(0.0170 / 0.0101)
    assert agreeing.describe() == "0.0133 mean |log ratio| (pairs 0.0101-0.0170)"
    assert disagreeing.disagreement == pytest.approx(7.0)
    assert disagreeing.describe() == (
        "0.0200 mean |log ratio| (pairs 0.0050-0.0350); WARNING: the seed pairs disagree 7.0x "
        "(over 3x): the baseline's seeds are too few to pin the noise floor down, so fidelities "
        "near the tolerance are uncertain"
    )
    assert NoiseFloor(0.001, 0.0, (0.0, 0.01, 0.01)).disagreement == math.inf
