"""Unit tests for autotune.fidelity: curve distance, alignment by samples seen, the seed noise
floor and the fidelity distance in units of it."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from autotune.fidelity import (
    MIN_NOISE_FLOOR,
    NoiseFloor,
    checkpoint_log_ratios,
    checkpoint_steps,
    curve_distance,
    fidelity_distance,
    loss_floor,
    noise_floor,
)


def exponential_curve(checkpoints, start=2.0, rate=1e-4, factor=1.0):
    """Loss start * exp(-rate * samples) * factor at each checkpoint: log-linear in samples, so
    linear interpolation of log loss reproduces it exactly between any two checkpoints."""
    return [(s, factor * start * math.exp(-rate * s)) for s in checkpoints]


CHECKPOINTS = [1000, 2000, 3000, 4000, 5000, 6000]


def checkpoint_differences(trial, baseline):
    """|log ratio| of plain (unfloored) losses at each baseline checkpoint."""
    return [abs(r) for r in checkpoint_log_ratios(trial, baseline)]


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

    assert floor.loss_floor == pytest.approx(loss_floor(curves))
    expected_pairs = [
        curve_distance(a, b, floor.loss_floor) for a, b in itertools.combinations(curves, 2)
    ]
    assert len(floor.pairs) == 3
    assert floor.pairs == pytest.approx(expected_pairs)
    assert floor.measured == pytest.approx(sum(expected_pairs) / 3)
    assert floor.value == floor.measured


def test_loss_floor_is_the_mean_absolute_loss_difference_between_seed_pairs():
    a = [(100, 1.0), (200, 0.5)]
    b = [(100, 1.2), (200, 0.4)]
    c = [(100, 1.0), (200, 0.5)]

    # pairs (a, b): 0.2, 0.1 -> 0.15; (a, c): 0 -> 0; (b, c): 0.2, 0.1 -> 0.15.
    assert loss_floor([a, b, c]) == pytest.approx(0.1)
    assert loss_floor([a, a]) == 0.0


def test_floored_log_ratio_is_signed_and_uses_the_floor_in_loss_units():
    baseline = [(100, 0.5), (200, 0.01)]
    trial = [(100, 1.0), (200, 0.001)]

    assert checkpoint_log_ratios(trial, baseline) == pytest.approx([math.log(2.0), math.log(0.1)])
    assert checkpoint_log_ratios(trial, baseline, loss_floor=0.1) == pytest.approx(
        [math.log(1.1 / 0.6), math.log(0.101 / 0.11)]
    )


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf])
def test_a_bad_loss_floor_raises_value_error(bad):
    curve = exponential_curve(CHECKPOINTS)

    with pytest.raises(ValueError, match="loss_floor must be a finite number >= 0"):
        curve_distance(curve, curve, bad)


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


def test_noise_floor_to_dict_and_back():
    floor = NoiseFloor(value=0.02, measured=0.02, pairs=(0.01, 0.03), loss_floor=0.004)

    assert floor.to_dict() == {
        "value": 0.02,
        "measured": 0.02,
        "pairs": [0.01, 0.03],
        "loss_floor": 0.004,
    }
    assert NoiseFloor.from_dict(floor.to_dict()) == floor


def test_a_noise_floor_stored_before_the_loss_floor_reads_with_a_zero_floor():
    stored = {"value": 0.02, "measured": 0.02, "pairs": [0.01, 0.03]}

    assert NoiseFloor.from_dict(stored).loss_floor == 0.0


# --------------------------------------------------------------------------------------------
# fidelity_distance
# --------------------------------------------------------------------------------------------


def test_fidelity_distance_divides_by_the_noise_floor():
    seeds = [exponential_curve(CHECKPOINTS, factor=f) for f in (1.0, 1.02, 0.98)]
    floor = noise_floor(seeds)
    trial = exponential_curve(CHECKPOINTS, factor=1.05)

    expected = curve_distance(trial, seeds[0], floor.loss_floor) / floor.value
    assert fidelity_distance(trial, seeds[0], floor) == pytest.approx(expected)
    assert 0 < expected < math.log(1.05) / floor.value * 1.5


def _worse_by(curve, log_ratio, floor):
    """``curve`` with each loss raised so its floored log ratio to ``curve`` is ``log_ratio``."""
    return [(s, (v + floor) * math.exp(log_ratio) - floor) for s, v in curve]


def test_a_trial_worse_everywhere_by_the_typical_seed_pair_scores_one():
    seeds = [exponential_curve(CHECKPOINTS, factor=f) for f in (1.0, 1.01, 0.99)]
    floor = noise_floor(seeds)
    trial = _worse_by(seeds[0], floor.measured, floor.loss_floor)

    assert fidelity_distance(trial, seeds[0], floor) == pytest.approx(1.0)
    assert fidelity_distance(trial, seeds[0], floor, one_sided=False) == pytest.approx(1.0)


def test_seed_re_runs_score_one_on_average_symmetrically_and_at_most_that_one_sided():
    """1.0 is "a re-run with another seed": over the ordered seed pairs, the symmetric
    fidelity averages exactly 1.0; the one-sided one counts half of each pair's checkpoints."""
    seeds = [exponential_curve(CHECKPOINTS, factor=f) for f in (1.0, 1.03, 0.98, 1.01)]
    seeds[2] = [(s, v * (1.02 if i % 2 else 0.99)) for i, (s, v) in enumerate(seeds[2])]
    floor = noise_floor(seeds)
    ordered = list(itertools.permutations(seeds, 2))

    symmetric = [fidelity_distance(a, b, floor, one_sided=False) for a, b in ordered]
    one_sided = [fidelity_distance(a, b, floor) for a, b in ordered]

    assert sum(symmetric) / len(symmetric) == pytest.approx(1.0)
    assert sum(one_sided) / len(one_sided) == pytest.approx(0.5)


def test_a_better_curve_is_not_a_drift_one_sided_but_is_shown_symmetrically():
    seeds = [exponential_curve(CHECKPOINTS, factor=f) for f in (1.0, 1.01, 0.99)]
    floor = noise_floor(seeds)
    better = exponential_curve(CHECKPOINTS, factor=0.8)
    worse = exponential_curve(CHECKPOINTS, factor=1.25)

    assert fidelity_distance(better, seeds[0], floor) == 0.0
    assert fidelity_distance(better, seeds[0], floor, one_sided=False) > 10
    assert fidelity_distance(worse, seeds[0], floor) > 10


def test_one_sided_fidelity_never_exceeds_the_symmetric_one():
    rng = random.Random(7)
    seeds = [exponential_curve(CHECKPOINTS, factor=f) for f in (1.0, 1.01, 0.99)]
    floor = noise_floor(seeds)
    for _ in range(200):
        trial = [(s, v * math.exp(rng.gauss(0, 0.1))) for s, v in seeds[0]]
        one_sided = fidelity_distance(trial, seeds[0], floor)
        assert 0 <= one_sided <= fidelity_distance(trial, seeds[0], floor, one_sided=False)


def _falling_to(end, rate=4e-4, factor=1.0):
    """A validation loss falling from 0.62 to ``end`` (0.125 at 4,000 samples, about 1e-4 at
    24,000 for end=1e-4): a classifier reaching accuracy 1.0."""
    return [(s, factor * 0.62 * math.exp(-rate * s) + end) for s in range(4000, 28000, 4000)]


NEAR_ZERO_SEEDS = [
    _falling_to(1.0e-4),
    _falling_to(1.5e-4, factor=1.015),
    _falling_to(0.7e-4, factor=0.985),
]


@pytest.mark.parametrize("tail", [3e-6, 5e-5, 1.2e-4])
def test_fidelity_stays_near_zero_for_the_same_curve_when_the_loss_reaches_1e_4(tail):
    """The same curve with its tail noise at 1e-4 scale: plain log ratios of 1e-4 against 3e-6
    read as a 30-fold drift (definition 1 scored such trials 1.7-10.6); floored, they do not."""
    floor = noise_floor(NEAR_ZERO_SEEDS)
    trial = _falling_to(tail)

    assert fidelity_distance(trial, NEAR_ZERO_SEEDS[0], floor) < 0.5
    assert fidelity_distance(trial, NEAR_ZERO_SEEDS[0], floor, one_sided=False) < 1.5
    unfloored = curve_distance(trial, NEAR_ZERO_SEEDS[0]) / floor.value
    assert unfloored > 1.5 or tail > 5e-5  # what the floor protects against


def test_fidelity_grows_with_real_drift_when_the_loss_reaches_1e_4():
    floor = noise_floor(NEAR_ZERO_SEEDS)
    slower = [_falling_to(1e-4, rate=4e-4 * (1 - d)) for d in (0.02, 0.05, 0.1, 0.25)]

    scores = [fidelity_distance(c, NEAR_ZERO_SEEDS[0], floor) for c in slower]

    assert scores == sorted(scores)
    assert scores[0] < 1.5 < scores[2]


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
    floored = NoiseFloor(0.0133, 0.0133, (0.0101, 0.0170), loss_floor=0.00421)
    assert floored.describe() == (
        "0.0133 mean |log ratio| (pairs 0.0101-0.0170; losses floored at 0.00421)"
    )
    assert disagreeing.disagreement == pytest.approx(7.0)
    assert disagreeing.describe() == (
        "0.0200 mean |log ratio| (pairs 0.0050-0.0350); WARNING: the seed pairs disagree 7.0x "
        "(over 3x): the baseline's seeds are too few to pin the noise floor down, so fidelities "
        "near the tolerance are uncertain"
    )
    assert NoiseFloor(0.001, 0.0, (0.0, 0.01, 0.01)).disagreement == math.inf
