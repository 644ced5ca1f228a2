"""An experiment's own training step, run the way the practice runs a custom training loop.

An :class:`~autotune.experiment.Experiment` may give ``train_step(model, optimizer, batch) ->
loss`` instead of relying on Keras's ``fit`` step. :func:`install_train_step` makes it the
compiled model's training step, so Keras builds the training function around it exactly as
around its own: wrapped in ``tf.function(jit_compile=...)`` with ``steps_per_execution`` steps
per call, after the dtype policy was set and with the float32 head, under ``mixed_float16``
with the ``LossScaleOptimizer`` that ``auto_scale_loss`` made. Every phase of a trial (warm-up,
timed windows, profile, input ablation, the curve) runs that function, so a custom step is
timed, scored and its failures recorded as a ``fit`` trial's are.

The contract, checked when the step is first traced (an :class:`ExperimentError` otherwise):
it returns the loss, a floating scalar tensor; under ``mixed_float16`` it takes the gradients of
``optimizer.scale_loss(loss)`` (the optimizer unscales them in ``optimizer.apply``). TensorFlow
backend only: a ``GradientTape`` step does not run on JAX.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras

from autotune.exceptions import ExperimentError
from autotune.experiment import Experiment


def own_step(model: keras.Model) -> bool:
    """Whether ``model``'s class overrides Keras's ``train_step`` (a subclass with its own)."""
    return type(model).train_step is not keras.Model.train_step


def step_source(model: keras.Model, experiment: Experiment) -> str:
    """Whose training step a trial runs: "experiment" (its ``train_step``), "model" (the model's
    class overrides ``train_step``) or "keras" (``fit``'s own)."""
    if experiment.train_step is not None:
        return "experiment"
    return "model" if own_step(model) else "keras"


def _check_loss(loss: Any, name: str) -> None:
    if loss is None:
        raise ExperimentError(
            f"Experiment {name!r}: train_step returned None; it must return the loss "
            "(a scalar tensor)"
        )
    if not keras.ops.is_tensor(loss) or len(loss.shape) != 0:
        shape = tuple(loss.shape) if keras.ops.is_tensor(loss) else type(loss).__name__
        raise ExperimentError(
            f"Experiment {name!r}: train_step must return the loss as a scalar tensor (reduce "
            f"it, e.g. with keras.ops.mean). Received: {shape}"
        )
    if not keras.backend.is_float_dtype(loss.dtype):
        raise ExperimentError(
            f"Experiment {name!r}: train_step must return a floating loss. Received dtype "
            f"{keras.backend.standardize_dtype(loss.dtype)}"
        )


def install_train_step(
    model: keras.Model, step: Callable[[Any, Any, Any], Any], experiment: Experiment
) -> None:
    """Makes the experiment's ``step`` the compiled ``model``'s training step (see the module
    docstring): call it after ``model.compile`` and before the training function is made."""
    if keras.backend.backend() != "tensorflow":
        raise ExperimentError(
            f"Experiment {experiment.name!r} gives its own train_step, which runs on the "
            f"TensorFlow backend only. Received backend: {keras.backend.backend()!r}"
        )
    optimizer = model.optimizer
    scaling = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    scaled: list[bool] = []
    if scaling:
        scale_loss = optimizer.scale_loss

        def recorded_scale_loss(loss: Any) -> Any:
            scaled.append(True)  # at trace time: the step asked for the scaled loss
            return scale_loss(loss)

        optimizer.scale_loss = recorded_scale_loss

    def train_step(data: Any) -> dict[str, Any]:
        loss = step(model, model.optimizer, data)
        _check_loss(loss, experiment.name)
        if scaling and not scaled:
            raise ExperimentError(
                f"Experiment {experiment.name!r}: under mixed_float16 train_step must take the "
                "gradients of optimizer.scale_loss(loss) (the LossScaleOptimizer unscales them "
                "in optimizer.apply); it never called optimizer.scale_loss"
            )
        return {"loss": loss}

    model.train_step = train_step
    model.train_function = None  # made again around the step


__all__ = ["install_train_step", "own_step", "step_source"]
