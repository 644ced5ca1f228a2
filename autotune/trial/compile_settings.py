"""What a trial passes to ``model.compile`` besides the experiment's optimizer, loss and metrics.

No TensorFlow here: :mod:`autotune.recipe` reads it too, so a recipe's ``compile_kwargs()`` is
the trial's, from one place.
"""

from __future__ import annotations

from typing import Any

from autotune.config import TrialConfig


def compile_settings(config: TrialConfig) -> dict[str, Any]:
    """The ``model.compile`` keyword arguments of a trial of ``config``.

    ``jit_compile``: the trial's XLA setting. ``steps_per_execution``: the trial's (the trial
    times whole calls of that many steps). ``auto_scale_loss``: True, so under ``mixed_float16``
    Keras wraps the optimizer in a ``LossScaleOptimizer`` (dynamic loss scaling against float16
    underflow); under the other policies Keras leaves the optimizer as it is.
    """
    return {
        "jit_compile": config.jit_compile,
        "steps_per_execution": config.steps_per_execution,
        "auto_scale_loss": True,
    }


__all__ = ["compile_settings"]
