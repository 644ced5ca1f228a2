"""autotune.analysis.head_to_head: the paired speed-up ratio, its interval, and the recommendation
rule, on synthetic per-round throughputs (no TensorFlow, nothing runs)."""

from __future__ import annotations

import random

import pytest

from autotune.analysis.head_to_head import (
    Candidate,
    Confirmation,
    paired_ratio,
    ratio_text,
)
from autotune.config import TrialConfig

BASE = TrialConfig.baseline(32)
SEEDS = (0, 1, 2)


def noisy(level: float, rounds: int, spread: float, seed: int) -> tuple[float, ...]:
    """``rounds`` throughputs (samples/s) around ``level``, +/- ``spread`` (a fraction)."""
    rng = random.Random(seed)
    return tuple(level * (1 + rng.uniform(-spread, spread)) for _ in range(rounds))


def candidate(trial: int, speeds, fidelity=(0.4, 0.5, 0.6), failure=None) -> Candidate:
    return Candidate(
        trial=trial,
        config=TrialConfig(batch_size=64 * trial),
        samples_per_second=tuple(speeds),
        fidelity=dict(zip(SEEDS, fidelity, strict=True)),
        failure=failure,
    )


def confirmation(baseline, *candidates, rounds=6, attributed=True) -> Confirmation:
    return Confirmation(
        rounds, SEEDS, BASE, tuple(baseline), tuple(candidates), attribution_done=attributed
    )


# --------------------------------------------------------------------------------------------
# paired_ratio
# --------------------------------------------------------------------------------------------


def test_the_ratio_is_paired_by_round_so_shared_drift_cancels():
    # The machine slows down 3x over the rounds; the candidate is always exactly 1.5x.
    baseline = [1000.0, 800.0, 600.0, 500.0, 400.0, 333.0]
    candidate_speeds = [1.5 * b for b in baseline]

    ratio = paired_ratio(candidate_speeds, baseline)

    assert ratio.median == pytest.approx(1.5)
    assert (ratio.low, ratio.high) == pytest.approx((1.5, 1.5))
    assert ratio.n == 6 and ratio.confidence >= 0.95


def test_six_rounds_give_min_max_with_95_percent_coverage_and_five_do_not():
    six = paired_ratio([2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [1.0] * 6)
    five = paired_ratio([2.0, 3.0, 4.0, 5.0, 6.0], [1.0] * 5)

    assert (six.low, six.high, six.confidence) == pytest.approx((2.0, 7.0, 1 - 2 / 64))
    assert five.confidence == pytest.approx(1 - 2 / 32)
    assert ratio_text(five) == "4.00x (94% CI 2.00-6.00)"
    assert ratio_text(six) == "4.50x (95% CI 2.00-7.00)"


def test_paired_ratio_needs_one_baseline_per_round():
    with pytest.raises(ValueError, match="one baseline value per candidate round"):
        paired_ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="must be > 0"):
        paired_ratio([1.0], [0.0])


# --------------------------------------------------------------------------------------------
# The recommendation rule
# --------------------------------------------------------------------------------------------


def test_overlapping_intervals_keep_the_baseline():
    # The README's main job: 10,053 against 9,652 samples/s, each +/- 10% per round.
    base = noisy(9652, 6, 0.10, seed=1)
    near = candidate(3, noisy(10053, 6, 0.10, seed=2))

    result = confirmation(base, near)

    verdict = result.verdict(near, 1.5)
    assert verdict.ratio is not None and verdict.ratio.low < 1.0 < verdict.ratio.high
    assert verdict.text == "within noise of the baseline" and not verdict.eligible
    assert result.recommended(1.5) is None
    assert result.summary(1.5) == (
        "no configuration beat the baseline beyond noise (1 candidate(s), 6 rounds head to "
        "head); keep the baseline"
    )


def test_a_clear_2x_is_recommended_with_its_interval_and_fidelity():
    base = noisy(1000, 6, 0.05, seed=3)
    fast = candidate(7, [2 * b * m for b, m in zip(base, noisy(1, 6, 0.03, 4), strict=True)])

    best = confirmation(base, fast).recommended(1.5)

    assert best is not None and best.candidate.trial == 7
    assert best.ratio is not None and 1.0 < best.ratio.low <= best.ratio.median <= best.ratio.high
    assert best.ratio.median == pytest.approx(2.0, rel=0.1)
    assert best.fidelity_mean == pytest.approx(0.5)
    assert (best.fidelity_low, best.fidelity_high) == (0.4, 0.6)
    assert confirmation(base, fast).summary(1.5) == (
        f"trial 7: {best.ratio.median:.2f}x the baseline (95% CI {best.ratio.low:.2f}-"
        f"{best.ratio.high:.2f}, 6 rounds head to head; faster beyond noise at 96.9% one-sided), "
        "fidelity 0.50 over seeds [0, 1, 2] "
        "(range 0.40-0.60)"
    )


def test_the_fastest_eligible_candidate_wins_not_the_fastest_in_the_search():
    base = [1000.0] * 6
    over = candidate(1, [3000.0] * 6, fidelity=(1.0, 2.0, 2.2))  # mean 1.73 > 1.5
    slower = candidate(2, [1500.0] * 6)
    faster = candidate(3, [1800.0] * 6)
    result = confirmation(base, over, slower, faster)

    texts = [v.text for v in result.verdicts(1.5)]

    assert texts == [
        "over the fidelity tolerance 1.5",
        "faster beyond noise",
        "faster beyond noise",
    ]
    best = result.recommended(1.5)
    assert best is not None and best.candidate.trial == 3
    # A larger limit lets the fastest one in.
    wider = result.recommended(2.0)
    assert wider is not None and wider.candidate.trial == 1


def test_one_good_seed_does_not_make_a_candidate_feasible():
    # Fidelity 0.37 in the search, 2.4 and 2.5 with other seeds: infeasible on the mean.
    lucky = candidate(5, [2000.0] * 6, fidelity=(0.37, 2.4, 2.5))

    assert confirmation([1000.0] * 6, lucky).recommended(1.5) is None


def test_failed_slower_and_unfinished_candidates_are_not_recommended():
    base = [1000.0] * 6
    failed = candidate(1, [2000.0] * 2, failure="oom: out of memory")
    slower = candidate(2, [600.0] * 6)
    result = confirmation(base, failed, slower)

    assert [v.text for v in result.verdicts(1.5)] == [
        "failed: oom: out of memory",
        "slower than the baseline",
    ]
    assert result.recommended(1.5) is None
    unfinished = confirmation(base[:3], candidate(3, [5000.0] * 3))
    assert not unfinished.complete and unfinished.recommended(1.5) is None
    assert unfinished.summary(1.5) == "confirmation unfinished (3 of 6 rounds)"
    pending = confirmation(base, candidate(3, [5000.0] * 6), attributed=False)
    assert pending.summary(1.5) == (
        "confirmation unfinished (the winner's settings are not attributed yet)"
    )
    assert pending.recommended(1.5) is None and pending.winner(1.5) is not None


def test_a_candidate_missing_a_seed_leaves_the_confirmation_incomplete():
    partial = Candidate(1, TrialConfig(batch_size=64), (2000.0,) * 6, {0: 0.4, 1: 0.5})

    assert not confirmation([1000.0] * 6, partial).complete


def test_nothing_to_confirm_is_complete_and_keeps_the_baseline():
    empty = confirmation([])

    assert empty.complete and empty.recommended(1.5) is None
    assert empty.summary(1.5) == "no feasible candidate to confirm; keep the baseline"


def test_round_trip_through_the_stored_dict():
    result = confirmation([1000.0] * 6, candidate(4, [1500.0] * 6), candidate(5, [], failure="x"))

    assert Confirmation.from_dict(result.to_dict()) == result
    assert result.same_plan([4, 5], 6, SEEDS)
    assert not result.same_plan([4], 6, SEEDS)
    assert not result.same_plan([4, 5], 8, SEEDS)
