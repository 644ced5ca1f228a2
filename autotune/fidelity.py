"""Fidelity: how closely a trial's validation-loss curve follows the float32 baseline's.

Curves are aligned by samples seen, and every baseline checkpoint is compared: the trial's log
validation loss is linearly interpolated at a checkpoint within the trial's curve, and taken at
the trial's nearest evaluation for one before its first or after its last evaluation. Dropping
such a checkpoint instead would let a batch size whose first evaluation falls just after the
baseline's first checkpoint skip it, and that early checkpoint is where a larger batch (fewer
steps so far) differs most. Both curves evaluate at the step nearest the same sample counts
(:func:`checkpoint_steps`), so the nearest evaluation is at most half a step of each away.

At each checkpoint the two losses are compared as a log ratio of *floored* losses::

    r_i = log((trial_loss(s_i) + floor) / (baseline_loss(s_i) + floor))

where ``floor`` (:attr:`NoiseFloor.loss_floor`, in loss units) is the mean absolute difference
between the baseline's seed curves: loss differences well below what a re-run with another seed
changes are noise, so once the losses fall under it (a loss going to 1e-4 with accuracy 1.0) the
ratio fades to 0 instead of measuring 1e-4 against 3e-6 as a 50-fold drift. Well above the
floor, ``r_i`` is the plain log ratio. Two distances follow:

    symmetric(trial, baseline) = mean_i |r_i|
    worse(trial, baseline)     = mean_i max(r_i, 0)

``worse`` (one-sided, the default) counts only the checkpoints where the trial's loss is above
the baseline's: a curve that learns *faster* is not a drift away from what the model learns.
The noise floor is the mean symmetric distance between every pair of baseline seed curves, and::

    fidelity = worse(trial, baseline_seed_0) / noise_floor

so 0 means the same curve or a better one, and 1.0 means "worse than the baseline everywhere by
as much as a re-run with another seed differs from it". A trial's symmetric fidelity (the same
quotient with ``symmetric``) is stored beside it; it is never below the one-sided one. A study's
tolerance (default 1.5) accepts honest re-runs while rejecting real drift. No TensorFlow here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The fidelity definition a study records in its identity: fidelities of another definition
#: are on another scale and must not be mixed in one study. 2: floored losses, one-sided.
DEFINITION = "2: one-sided, losses floored at the seeds' mean absolute difference"

#: Smallest noise floor used, in mean |log ratio| (0.1%): seeds that give identical curves would
#: otherwise make every difference infinitely large.
MIN_NOISE_FLOOR = 1e-3

#: Seed pairs whose distances differ by more than this factor make the study warn that its
#: seeds are too few to pin the noise floor down.
DISAGREEMENT_LIMIT = 3.0

Curve = Sequence[tuple[float, float]]  # (samples seen, validation loss)


def _checked(curve: Curve, what: str) -> list[tuple[float, float]]:
    points = sorted((float(s), float(v)) for s, v in curve)
    if not points:
        raise ValueError(f"{what} curve is empty")
    for samples, loss in points:
        if not (math.isfinite(loss) and loss > 0):
            raise ValueError(
                f"{what} curve has a non-positive or non-finite loss {loss} at {samples}"
            )
    return points


def checkpoint_steps(samples: int, batch_size: int, checkpoints: int) -> list[int]:
    """Cumulative step counts at which a curve run evaluates: the step nearest each of
    ``checkpoints`` evenly spaced sample counts over ``samples`` training examples, at least one
    step apart. The baseline and every trial aim at the same sample counts."""
    steps: list[int] = []
    for k in range(1, checkpoints + 1):
        target = round(samples * k / checkpoints / batch_size)
        steps.append(max(target, steps[-1] + 1 if steps else 1))
    return steps


def _log_loss_at(points: list[tuple[float, float]], samples: float) -> float:
    """log(loss) interpolated at ``samples``; the nearest end's outside the curve's range."""
    if samples <= points[0][0]:
        return math.log(points[0][1])
    if samples >= points[-1][0]:
        return math.log(points[-1][1])
    for (s0, v0), (s1, v1) in itertools.pairwise(points):
        if s0 <= samples <= s1:
            weight = (samples - s0) / (s1 - s0)
            return (1 - weight) * math.log(v0) + weight * math.log(v1)
    raise AssertionError("unreachable: samples lies within the sorted curve")


def _check_loss_floor(loss_floor: float) -> float:
    if not (math.isfinite(loss_floor) and loss_floor >= 0):
        raise ValueError(f"loss_floor must be a finite number >= 0. Received: {loss_floor!r}")
    return float(loss_floor)


def checkpoint_log_ratios(trial: Curve, baseline: Curve, loss_floor: float = 0.0) -> list[float]:
    """``log((trial + loss_floor) / (baseline + loss_floor))`` at each baseline checkpoint, in
    the baseline's order (sorted by samples seen): positive where the trial's loss is higher.
    One value per checkpoint, none dropped; ``loss_floor`` is in loss units."""
    floor = _check_loss_floor(loss_floor)
    trial_points = _checked(trial, "trial")
    return [
        math.log(math.exp(_log_loss_at(trial_points, samples)) + floor) - math.log(loss + floor)
        for samples, loss in _checked(baseline, "baseline")
    ]


def curve_distance(
    trial: Curve, baseline: Curve, loss_floor: float = 0.0, *, one_sided: bool = False
) -> float:
    """Mean |log ratio| of floored losses over every baseline checkpoint; with ``one_sided``,
    the mean of the positive ratios only (checkpoints where the trial's loss is higher). See
    the module's docstring for the alignment and the floor."""
    ratios = checkpoint_log_ratios(trial, baseline, loss_floor)
    parts = [max(r, 0.0) for r in ratios] if one_sided else [abs(r) for r in ratios]
    return sum(parts) / len(parts)


def loss_floor(seed_curves: Sequence[Curve]) -> float:
    """The mean absolute loss difference between every pair of seed curves (loss units): for
    each pair, the first curve's loss (interpolated as in :func:`checkpoint_log_ratios`)
    against the second's at each of the second's checkpoints, averaged over checkpoints, then
    over pairs."""
    per_pair = []
    for a, b in itertools.combinations(seed_curves, 2):
        a_points, b_points = _checked(a, "seed"), _checked(b, "seed")
        gaps = [abs(math.exp(_log_loss_at(a_points, s)) - loss) for s, loss in b_points]
        per_pair.append(sum(gaps) / len(gaps))
    return sum(per_pair) / len(per_pair) if per_pair else 0.0


@dataclass(frozen=True)
class NoiseFloor:
    """Seed-to-seed curve distance of the baseline.

    Attributes:
        value: the noise floor used (mean |log ratio|), at least :data:`MIN_NOISE_FLOOR`.
        measured: the mean pairwise distance actually measured between seed curves.
        pairs: the distances of each pair of seeds.
        loss_floor: the seeds' mean absolute loss difference (loss units) that every loss is
            floored at before the log ratio (0.0 in studies stored before definition 2).
    """

    value: float
    measured: float
    pairs: tuple[float, ...]
    loss_floor: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "value": self.value,
            "measured": self.measured,
            "pairs": list(self.pairs),
            "loss_floor": self.loss_floor,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoiseFloor:
        """The noise floor :meth:`to_dict` stored (one stored without a loss floor has 0.0)."""
        return cls(
            float(data["value"]),
            float(data["measured"]),
            tuple(data["pairs"]),
            float(data.get("loss_floor", 0.0)),
        )

    @property
    def disagreement(self) -> float:
        """The largest pair distance over the smallest (1.0 = every pair agrees; infinite when
        a pair measured no distance at all)."""
        if not self.pairs:
            return 1.0
        low, high = min(self.pairs), max(self.pairs)
        return math.inf if low <= 0 else high / low

    def describe(self) -> str:
        """'0.0133 mean |log ratio| (pairs 0.0101-0.0170; losses floored at 0.0042)', with a
        warning when the pairs disagree by more than :data:`DISAGREEMENT_LIMIT` (3 seeds are
        then too few to pin the floor down, and every fidelity in its units is that
        uncertain)."""
        text = f"{self.value:.4f} mean |log ratio|"
        details = []
        if self.pairs:
            details.append(f"pairs {min(self.pairs):.4f}-{max(self.pairs):.4f}")
        if self.loss_floor > 0:
            details.append(f"losses floored at {self.loss_floor:.3g}")
        if details:
            text += f" ({'; '.join(details)})"
        if self.disagreement > DISAGREEMENT_LIMIT:
            text += (
                f"; WARNING: the seed pairs disagree {self.disagreement:.1f}x (over "
                f"{DISAGREEMENT_LIMIT:g}x): the baseline's seeds are too few to pin the noise "
                "floor down, so fidelities near the tolerance are uncertain"
            )
        return text


def noise_floor(seed_curves: Sequence[Curve]) -> NoiseFloor:
    """The mean symmetric distance between every pair of baseline curves trained with different
    seeds, their losses floored at :func:`loss_floor`."""
    if len(seed_curves) < 2:
        raise ValueError(
            f"a noise floor needs at least 2 seed curves. Received: {len(seed_curves)}"
        )
    floor = loss_floor(seed_curves)
    pairs = tuple(curve_distance(a, b, floor) for a, b in itertools.combinations(seed_curves, 2))
    measured = sum(pairs) / len(pairs)
    return NoiseFloor(
        value=max(measured, MIN_NOISE_FLOOR), measured=measured, pairs=pairs, loss_floor=floor
    )


def fidelity_distance(
    trial: Curve, baseline: Curve, floor: NoiseFloor, *, one_sided: bool = True
) -> float:
    """Curve distance to the baseline in units of the seed noise floor: one-sided by default
    (1.0 = worse everywhere by as much as a seed re-run differs), symmetric with
    ``one_sided=False`` (1.0 = as different as a seed re-run)."""
    return curve_distance(trial, baseline, floor.loss_floor, one_sided=one_sided) / floor.value
