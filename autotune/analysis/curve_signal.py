"""Whether the baseline's validation curve can show drift at all.

Fidelity compares a trial's curve with the baseline's in units of the seeds' spread. When the
baseline learns nothing within the curve's budget (a model at the chance loss at every
checkpoint, say), its curve does not move beyond that spread, and then no trial can score
worse than noise unless its loss rises: every configuration that keeps the model as stuck as
the baseline reads as feasible, and the search recommends speed for a model that never learned.

The test: over the checkpoints, the seeds' mean loss must change by more than the seeds differ.
``movement`` is the range (largest minus smallest) of the mean curve over the checkpoints;
``spread`` the largest difference between two seeds at one checkpoint. The check *cannot see*
when ``movement <= spread``. A curve of one checkpoint has no range: it is not judged (it can
still show drift at its one point, and nothing here can tell). Losses are in the experiment's
loss units. No TensorFlow here.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

#: A validation curve as (samples seen, validation loss) pairs.
Curve = Sequence[tuple[float, float]]


@dataclass(frozen=True)
class CurveSignal:
    """How far the baseline's curve moves against how far its seeds differ.

    Attributes:
        samples: the checkpoints' sample counts (seed 0's).
        mean_losses: the seeds' mean validation loss at each checkpoint (loss units).
        movement: the range of ``mean_losses`` (loss units).
        spread: the largest difference between two seeds at one checkpoint (loss units).
    """

    samples: tuple[float, ...]
    mean_losses: tuple[float, ...]
    movement: float
    spread: float

    @property
    def judged(self) -> bool:
        """Whether there are two checkpoints or more to judge the movement by."""
        return len(self.samples) >= 2

    @property
    def sees(self) -> bool:
        """Whether the curve moves beyond its seeds' spread (True when it cannot be judged)."""
        return not self.judged or self.movement > self.spread

    def describe(self) -> str:
        """'the seeds' mean validation loss is 2.3026 at 683 samples ... 2.3025 at 4,096: it
        moves 0.0003 over the checkpoints, while the seeds differ by up to 0.0011 at one'."""
        first, last = self.mean_losses[0], self.mean_losses[-1]
        points = (
            f"{first:.4g} at {self.samples[0]:,.0f} samples, {last:.4g} at {self.samples[-1]:,.0f}"
        )
        return (
            f"the seeds' mean validation loss is {points} ({len(self.samples)} checkpoints): it "
            f"moves {self.movement:.2g} over the checkpoints, while the seeds differ by up to "
            f"{self.spread:.2g} at one"
        )


def curve_signal(curves: Sequence[Curve]) -> CurveSignal:
    """The :class:`CurveSignal` of the baseline's seed ``curves`` (two or more, evaluated at the
    same checkpoints; seed 0's sample counts are reported)."""
    if len(curves) < 2:
        raise ValueError(f"curve_signal needs two seed curves or more. Received: {len(curves)}")
    length = min(len(curve) for curve in curves)
    if length < 1:
        raise ValueError("curve_signal needs curves with one checkpoint or more")
    losses = [[curve[i][1] for curve in curves] for i in range(length)]
    means = tuple(statistics.fmean(at) for at in losses)
    return CurveSignal(
        samples=tuple(float(curves[0][i][0]) for i in range(length)),
        mean_losses=means,
        movement=max(means) - min(means),
        spread=max(max(at) - min(at) for at in losses),
    )


__all__ = ["Curve", "CurveSignal", "curve_signal"]
