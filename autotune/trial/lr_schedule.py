"""The optimizer's learning rate for a :class:`~autotune.lr_rules.LearningRate`: the rate itself,
or a Keras schedule that warms it up (the same object a recipe gives the user's optimizer)."""

from __future__ import annotations

from typing import Any

import keras

from autotune.lr_rules import LearningRate


@keras.saving.register_keras_serializable(package="autotune")
class LinearWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """``rate * min(1, (step + 1) / warmup_steps)`` at optimizer step ``step`` (0 first): the
    rate rises linearly over the first ``warmup_steps`` updates, then stays at ``rate``
    (:meth:`autotune.lr_rules.LearningRate.at_step`)."""

    def __init__(self, rate: float, warmup_steps: int) -> None:
        super().__init__()
        self.rate = float(rate)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step: Any) -> Any:
        done = (keras.ops.cast(step, "float32") + 1.0) / float(self.warmup_steps)
        return self.rate * keras.ops.minimum(1.0, done)

    def get_config(self) -> dict[str, Any]:
        return {"rate": self.rate, "warmup_steps": self.warmup_steps}


def optimizer_learning_rate(learning: LearningRate) -> float | LinearWarmup:
    """What the experiment's optimizer factory receives: ``learning.rate`` without a warm-up, a
    :class:`LinearWarmup` schedule with one."""
    if learning.warmup_steps:
        return LinearWarmup(learning.rate, learning.warmup_steps)
    return learning.rate


__all__ = ["LinearWarmup", "optimizer_learning_rate"]
