"""The trial's model: built after the dtype policy is set, checked against the labels, its
outputs kept in float32 under mixed precision, and compiled with the trial's ``jit_compile``."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from autotune.config import TrialConfig
from autotune.exceptions import ExperimentError
from autotune.experiment import Experiment
from autotune.lr_rules import LearningRate
from autotune.trial.compile_settings import compile_settings
from autotune.trial.custom_step import own_step
from autotune.trial.layer_policies import keep_float32
from autotune.trial.pipeline import PipelineSettings
from autotune.trial.threads import thread_settings


def _dtype(tensor: Any) -> str:
    return str(keras.backend.standardize_dtype(tensor.dtype))


def _output_dtypes(model: keras.Model, x: Any) -> list[str]:
    return [_dtype(t) for t in keras.tree.flatten(model(x, training=False))]


class _Float32Output(keras.Model):
    """Wraps a model whose output layer cannot be set to float32, casting its outputs."""

    def __init__(self, inner: keras.Model) -> None:
        super().__init__(name=f"{inner.name}_float32_output")
        self.inner = inner

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        outputs = self.inner(inputs, training=training)
        return keras.tree.map_structure(lambda t: keras.ops.cast(t, "float32"), outputs)


def ensure_float32_head(model: keras.Model, x: Any) -> tuple[keras.Model, dict[str, Any]]:
    """Makes the model's outputs float32 under a mixed policy; reports what it found and did.

    Returns the model to train and ``{"output_dtype_found", "head_fixed", "head_fix"}``, where
    ``head_fix`` is "last_layer" (the last layer's dtype policy set to float32, so its activation
    computes in float32) or "cast" (outputs cast to float32 by a wrapper).
    """
    found = _output_dtypes(model, x)
    info: dict[str, Any] = {
        "output_dtype_found": found[0] if len(set(found)) == 1 else found,
        "head_fixed": False,
        "head_fix": None,
    }
    if all(d == "float32" for d in found):
        return model, info
    layers = getattr(model, "layers", [])
    if layers:
        last, policy = layers[-1], layers[-1].dtype_policy
        last.dtype_policy = "float32"
        if all(d == "float32" for d in _output_dtypes(model, x)):
            info.update(head_fixed=True, head_fix="last_layer")
            return model, info
        last.dtype_policy = policy  # not the output layer after all: leave it as it was
    if own_step(model):
        raise ExperimentError(
            f"model {model.name!r} has its own train_step and its outputs are not float32 under "
            f"the mixed policy ({info['output_dtype_found']}), and its last layer is not its "
            "output layer: wrapping it to cast the outputs would bypass its train_step. Build "
            "the output layer with dtype='float32'"
        )
    wrapped = _Float32Output(model)
    wrapped(x, training=False)
    info.update(head_fixed=True, head_fix="cast")
    return wrapped, info


def build_model(experiment: Experiment) -> keras.Model:
    model = experiment.model()
    if model is None:
        raise ExperimentError(
            f"Experiment {experiment.name!r}: model() returned None; it must return a keras.Model"
        )
    if not isinstance(model, keras.Model):
        raise ExperimentError(
            f"Experiment {experiment.name!r}: model() must return a keras.Model. "
            f"Received: {type(model).__name__}"
        )
    return model


def check_output_matches_labels(experiment: Experiment, model: keras.Model, x: Any, y: Any) -> None:
    outputs = model(x, training=False)
    loss = (
        keras.losses.get(experiment.loss) if isinstance(experiment.loss, str) else experiment.loss
    )
    try:
        value = loss(y, outputs)
    except Exception as error:
        shapes = [tuple(t.shape) for t in keras.tree.flatten(outputs)]
        raise ExperimentError(
            f"Experiment {experiment.name!r}: the model's output shape {shapes} does not fit the "
            f"labels' shape {tuple(y.shape)} for loss {experiment.loss!r}: {error}"
        ) from error
    if value is None:
        raise ExperimentError(f"Experiment {experiment.name!r}: the loss returned None")


def model_with_float32_head(
    experiment: Experiment, train_data: tf.data.Dataset, float32_layers: str = "none"
) -> tuple[keras.Model, dict[str, Any]]:
    """Builds the experiment's model, checks it against one training batch, keeps the layers
    ``float32_layers`` names in float32 (:func:`autotune.trial.layer_policies.keep_float32`)
    and makes its outputs float32 (see :func:`ensure_float32_head`); returns the model and
    what both record. On JAX the batch is read as numpy arrays, as the JAX trainer reads every
    batch."""
    if keras.backend.backend() == "jax":
        x, y = next(train_data.take(1).as_numpy_iterator())[:2]
    else:
        x, y = next(iter(train_data))[:2]
    model = build_model(experiment)
    check_output_matches_labels(experiment, model, x, y)
    kept = keep_float32(model, float32_layers)
    fixed, head = ensure_float32_head(model, x)
    return fixed, {**kept, **head}


def compile_model(
    experiment: Experiment, config: TrialConfig, model: keras.Model, learning_rate: Any
) -> bool:
    """Compiles ``model`` with the trial's settings (:func:`compile_settings`: ``jit_compile``,
    loss scaling) and builds its optimizer with ``learning_rate`` (a number, or a Keras
    schedule: :func:`autotune.trial.lr_schedule.optimizer_learning_rate`); returns whether Keras
    wrapped the optimizer in loss scaling."""
    optimizer = experiment.optimizer(learning_rate)
    if optimizer is None:
        raise ExperimentError(
            f"Experiment {experiment.name!r}: optimizer({learning_rate}) returned None; "
            "it must return a keras optimizer"
        )
    model.compile(
        optimizer=optimizer,
        loss=experiment.loss,
        # A step of the experiment's own updates no compiled metric: fit would read them unbuilt.
        metrics=None if experiment.train_step is not None else list(experiment.metrics),
        **compile_settings(config),
    )
    loss_scaling = isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    if config.precision == "mixed_float16" and not loss_scaling:
        raise ExperimentError(
            f"Experiment {experiment.name!r}: mixed_float16 needs loss scaling, but Keras did not "
            "wrap the optimizer in a LossScaleOptimizer"
        )
    model.optimizer.build(model.trainable_variables)
    return loss_scaling


def effective_settings(
    config: TrialConfig,
    model: keras.Model,
    learning_rate: LearningRate,
    loss_scaling: bool,
    pipeline_settings: PipelineSettings,
    head: dict[str, Any],
) -> dict[str, Any]:
    """The settings that took effect: Keras backend, dtype policy, XLA (``jit_compile``: XLA on
    TensorFlow, ``jax.jit`` on JAX), steps per execution (while timed), TensorFlow's thread
    counts, loss scaling, learning rate (its rule, scaling and warm-up steps), pipeline (its
    tf.data pool included), the layers kept in float32 and the output head."""
    return {
        "backend": keras.backend.backend(),
        "dtype_policy": keras.config.dtype_policy().name,
        "compute_dtype": keras.config.dtype_policy().compute_dtype,
        "variable_dtype": keras.config.dtype_policy().variable_dtype,
        "jit_compile_requested": config.jit_compile,
        "jit_compile": bool(model.jit_compile),
        "steps_per_execution": int(model.steps_per_execution),
        **thread_settings(),
        "loss_scaling": loss_scaling,
        **learning_rate.to_dict(),
        "pipeline": pipeline_settings.to_dict(),
        **head,
    }


def one_step_per_call(model: keras.Model) -> None:
    """Makes ``model``'s training and test functions run one step per call again (a trial's
    curve trains so: its checkpoints then fall at the same sample counts whatever the trial's
    ``steps_per_execution``, and the batches it sees are the same)."""
    if model.steps_per_execution != 1:
        model.steps_per_execution = 1
        model.make_train_function(force=True)
        model.make_test_function(force=True)


__all__ = [
    "build_model",
    "check_output_matches_labels",
    "compile_model",
    "effective_settings",
    "ensure_float32_head",
    "model_with_float32_head",
    "one_step_per_call",
]
