"""Fidelity: how closely a trial's validation-loss curve follows the float32 baseline's.

Curves are aligned by samples seen, and every baseline checkpoint is compared: the trial's log
validation loss is linearly interpolated at a checkpoint within the trial's curve, and taken at
the trial's nearest evaluation for one before its first or after its last evaluation. Dropping
such a checkpoint instead would let a batch size whose first evaluation falls just after the
baseline's first checkpoint skip it, and that early checkpoint is where a larger batch (fewer
steps so far) differs most. Both curves evaluate at the step nearest the same sample counts
(:func:`checkpoint_steps`), so the nearest evaluation is at most half a step of each away. The
curve distance is the mean absolute log-ratio of validation losses over the checkpoints::

    distance(trial, baseline) = mean_i | log(trial_loss(s_i) / baseline_loss(s_i)) |

The noise floor is the mean distance between curves of the baseline trained with different seeds
(every pair among the seeds). The fidelity distance of a trial is::

    fidelity = distance(trial, baseline_seed_0) / noise_floor

so 0 means the same curve, 1.0 means "as different as a re-run with another seed", and a study's
tolerance (default 1.5) accepts honest re-runs while rejecting real drift. No TensorFlow here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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


def checkpoint_differences(trial: Curve, baseline: Curve) -> list[float]:
    """|log(trial loss / baseline loss)| at each baseline checkpoint, in the baseline's order
    (sorted by samples seen): one value per checkpoint, none dropped."""
    trial_points = _checked(trial, "trial")
    return [
        abs(_log_loss_at(trial_points, samples) - math.log(loss))
        for samples, loss in _checked(baseline, "baseline")
    ]


def curve_distance(trial: Curve, baseline: Curve) -> float:
    """Mean |log(trial loss / baseline loss)| over every baseline checkpoint (see the module's
    docstring for how a checkpoint outside the trial's range is compared)."""
    differences = checkpoint_differences(trial, baseline)
    return sum(differences) / len(differences)


@dataclass(frozen=True)
class NoiseFloor:
    """Seed-to-seed curve distance of the baseline.

    Attributes:
        value: the noise floor used (mean |log ratio|), at least :data:`MIN_NOISE_FLOOR`.
        measured: the mean pairwise distance actually measured between seed curves.
        pairs: the distances of each pair of seeds.
    """

    value: float
    measured: float
    pairs: tuple[float, ...]

    def to_dict(self) -> dict[str, object]:
        return {"value": self.value, "measured": self.measured, "pairs": list(self.pairs)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoiseFloor:
        """The noise floor :meth:`to_dict` stored."""
        return cls(float(data["value"]), float(data["measured"]), tuple(data["pairs"]))

    @property
    def disagreement(self) -> float:
        """The largest pair distance over the smallest (1.0 = every pair agrees; infinite when
        a pair measured no distance at all)."""
        if not self.pairs:
            return 1.0
        low, high = min(self.pairs), max(self.pairs)
        return math.inf if low <= 0 else high / low

    def describe(self) -> str:
        """'0.0133 mean |log ratio| (pairs 0.0101-0.0170)', with a warning when the pairs
        disagree by more than :data:`DISAGREEMENT_LIMIT` (3 seeds are then too few to pin the
        floor down, and every fidelity in its units is that uncertain)."""
        text = f"{self.value:.4f} mean |log ratio|"
        if self.pairs:
            text += f" (pairs {min(self.pairs):.4f}-{max(self.pairs):.4f})"
        if self.disagreement > DISAGREEMENT_LIMIT:
            text += (
                f"; WARNING: the seed pairs disagree {self.disagreement:.1f}x (over "
                f"{DISAGREEMENT_LIMIT:g}x): the baseline's seeds are too few to pin the noise "
                "floor down, so fidelities near the tolerance are uncertain"
            )
        return text


def noise_floor(seed_curves: Sequence[Curve]) -> NoiseFloor:
    """The mean distance between every pair of baseline curves trained with different seeds."""
    if len(seed_curves) < 2:
        raise ValueError(
            f"a noise floor needs at least 2 seed curves. Received: {len(seed_curves)}"
        )
    pairs = tuple(curve_distance(a, b) for a, b in itertools.combinations(seed_curves, 2))
    measured = sum(pairs) / len(pairs)
    return NoiseFloor(value=max(measured, MIN_NOISE_FLOOR), measured=measured, pairs=pairs)


def fidelity_distance(trial: Curve, baseline: Curve, floor: NoiseFloor) -> float:
    """Curve distance to the baseline in units of the seed noise floor (1.0 = a seed re-run)."""
    return curve_distance(trial, baseline) / floor.value
