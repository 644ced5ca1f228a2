"""Fidelity: how closely a trial's validation-loss curve follows the float32 baseline's.

Curves are aligned by samples seen: the trial's log validation loss is linearly interpolated at
each baseline checkpoint that lies within the trial's curve. The curve distance is the mean
absolute log-ratio of validation losses over those checkpoints::

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
from collections.abc import Sequence
from dataclasses import dataclass

#: Smallest noise floor used, in mean |log ratio| (0.1%): seeds that give identical curves would
#: otherwise make every difference infinitely large.
MIN_NOISE_FLOOR = 1e-3

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


def _log_loss_at(points: list[tuple[float, float]], samples: float) -> float | None:
    """log(loss) interpolated at ``samples``; None outside the curve's range."""
    if samples < points[0][0] or samples > points[-1][0]:
        return None
    for (s0, v0), (s1, v1) in itertools.pairwise(points):
        if s0 <= samples <= s1:
            if s1 == s0:
                return math.log(v0)
            weight = (samples - s0) / (s1 - s0)
            return (1 - weight) * math.log(v0) + weight * math.log(v1)
    return math.log(points[0][1])  # a one-point curve at exactly ``samples``


def curve_distance(trial: Curve, baseline: Curve) -> float:
    """Mean |log(trial loss / baseline loss)| at the baseline's checkpoints.

    Only checkpoints within the trial's range of samples seen count; if none does, the curves
    cannot be compared and ValueError is raised.
    """
    trial_points = _checked(trial, "trial")
    differences = []
    for samples, loss in _checked(baseline, "baseline"):
        value = _log_loss_at(trial_points, samples)
        if value is not None:
            differences.append(abs(value - math.log(loss)))
    if not differences:
        raise ValueError(
            "the trial's curve covers none of the baseline's checkpoints "
            f"(trial samples {trial_points[0][0]:.0f}..{trial_points[-1][0]:.0f})"
        )
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
