"""Loss-scale health under ``mixed_float16``: a collapsing loss scale is not drift.

Keras wraps the optimizer of a ``mixed_float16`` model in a ``LossScaleOptimizer``: the loss is
multiplied by a dynamic scale (2^15 at first) so small float16 gradients do not underflow; a
step whose gradients are not finite is skipped and the scale halved, and every
``dynamic_growth_steps`` finite steps double it. The curve run records the scale at each
checkpoint and the steps skipped since the curve began (``CurvePoint.loss_scale`` and
``skipped_steps`` in :mod:`autotune.store.result`). Two signs of a collapse, either of which makes
the trial fail with kind ``loss_scale`` rather than score a drifted curve:

- the scale fell below :data:`MIN_HEALTHY_SCALE` (1): scaling no longer protects anything, and
  the gradients overflow even unscaled;
- more than :data:`MAX_SKIPPED_SHARE` of the steps were skipped, beyond the first
  :data:`CALIBRATION_STEPS` (halving from 2^15 down to 1 takes 15 skipped steps: the scale
  finding its level, which is normal at the start).

A skipped step trains nothing, so a collapse also shows as drift; this names the cause. No
TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Sequence

MIN_HEALTHY_SCALE = 1.0
MAX_SKIPPED_SHARE = 0.05
CALIBRATION_STEPS = 16


def loss_scale_collapse(scales: Sequence[float], skipped: int, steps: int) -> str | None:
    """Why the loss scale of a curve of ``steps`` training steps collapsed, or None when it
    stayed healthy: ``scales`` are the scale at each checkpoint (none recorded: no loss
    scaling, nothing to judge), ``skipped`` the steps skipped in all."""
    if not scales or steps < 1:
        return None
    lowest = min(scales)
    beyond = max(0, skipped - CALIBRATION_STEPS)
    listed = ", ".join(f"{scale:g}" for scale in scales)
    where = f"(scale at the checkpoints: {listed}; {skipped} of {steps} steps skipped)"
    if lowest < MIN_HEALTHY_SCALE:
        return (
            f"the loss scale collapsed to {lowest:g}, under {MIN_HEALTHY_SCALE:g}: the float16 "
            f"gradients overflow even unscaled {where}"
        )
    if beyond > MAX_SKIPPED_SHARE * steps:
        return (
            f"the loss scale kept overflowing: {skipped} steps skipped for non-finite gradients "
            f"({beyond} beyond the first {CALIBRATION_STEPS}, over {MAX_SKIPPED_SHARE:.0%} of "
            f"the steps) {where}"
        )
    return None


__all__ = ["CALIBRATION_STEPS", "MAX_SKIPPED_SHARE", "MIN_HEALTHY_SCALE", "loss_scale_collapse"]
