"""Reproducing a :class:`~autotune.recipe.Recipe` in the user's own training code.

:func:`apply` sets the dtype policy and returns an :class:`AppliedRecipe`: the learning rate for
the tuned batch size, the ``model.compile`` settings, the float32 output head and the training
pipeline, each made by the trial's own code (this package), so the user's training runs what was
measured. TensorFlow loads only inside the functions that build something.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.experiment import Experiment
from autotune.recipe import Recipe, hardware_differences
from autotune.trial.compile_settings import compile_settings


class HardwareMismatchWarning(UserWarning):
    """A recipe is applied on hardware other than the one it was measured on."""


def _warn_on_other_hardware(recipe: Recipe, differences: list[str], stacklevel: int) -> None:
    if differences:
        warnings.warn(
            f"recipe of study {recipe.study!r} was measured on other hardware "
            f"({'; '.join(differences)}): its configuration may not be the fastest here, or "
            "may not fit in memory; tune again on this machine to be sure",
            HardwareMismatchWarning,
            stacklevel=stacklevel + 1,
        )


def _experiment_learning_rate(
    recorded: float | None, experiment: Experiment, config: TrialConfig, stacklevel: int
) -> float:
    """``experiment``'s learning rate for ``config`` (its batch size under its ``lr_rule``, as
    in a trial); warns when the recipe ``recorded`` another one."""
    rate = experiment.learning_rate_of(config.lr_rule, config.batch_size, 0).rate
    if recorded is not None and not math.isclose(rate, recorded, rel_tol=1e-9):
        warnings.warn(
            f"experiment {experiment.name!r} gives learning rate {rate:g} at batch size "
            f"{config.batch_size} (lr_rule {config.lr_rule!r}), but the recipe was measured "
            f"with {recorded:g}: the experiment's base_learning_rate, base_batch_size or "
            f"lr_scaling changed since; using {rate:g}",
            UserWarning,
            stacklevel=stacklevel + 1,
        )
    return rate


def _warmup_steps(recipe: Recipe) -> int:
    """The warm-up steps the recipe's trial trained with (``effective.lr_warmup_steps``; 0
    when it had none, or was measured before warm-ups were recorded)."""
    steps = recipe.effective.get("lr_warmup_steps") or 0
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise ConfigError(
            f"recipe effective.lr_warmup_steps must be an integer >= 0. Received: {steps!r}"
        )
    return steps


def _check_data(data: Any) -> None:
    """Refuses what is neither a Dataset, a PyDataset, (x, y) arrays, nor a function giving one
    (the trial's :func:`autotune.trial.data_forms.to_examples` checks what a function gives)."""
    import keras
    import tensorflow as tf

    from autotune.trial.data_forms import ACCEPTED

    if isinstance(data, (tf.data.Dataset, keras.utils.PyDataset)) or callable(data):
        return
    if isinstance(data, tuple) and len(data) == 2:
        return
    raise ConfigError(
        f"data must be {ACCEPTED}, or a zero-argument function returning one. "
        f"Received: data={type(data).__name__}"
    )


@dataclass(frozen=True)
class AppliedRecipe:
    """What :func:`apply` leaves for the user's code: everything a trial of ``config`` used.

    Attributes:
        config: the performance settings.
        learning_rate: the learning rate for ``config.batch_size`` (the trial's, rescaled from
            the experiment's base learning rate by its ``lr_scaling`` rule); None when neither
            the recipe nor an experiment gives one.
        hardware_differences: how this machine differs from the one the recipe was measured
            on (see :func:`hardware_differences`); empty on the same hardware.
        warmup_steps: optimizer steps over which the trial's learning rate rose linearly to
            ``learning_rate`` (its ``lr_rule`` warmed up: :mod:`autotune.lr_rules`); 0: none.
    """

    config: TrialConfig
    learning_rate: float | None
    hardware_differences: tuple[str, ...] = ()
    warmup_steps: int = 0

    @classmethod
    def from_recipe(
        cls, recipe: Recipe | str | Path, experiment: Experiment | None = None
    ) -> AppliedRecipe:
        """The settings of ``recipe`` (or of the recipe file at that path), without setting the
        dtype policy (:func:`apply` does both). Warns with :class:`HardwareMismatchWarning`
        when this machine is not the one the recipe was measured on."""
        return cls._make(recipe, experiment, stacklevel=2)

    @classmethod
    def _make(
        cls, recipe: Recipe | str | Path, experiment: Experiment | None, stacklevel: int
    ) -> AppliedRecipe:
        if isinstance(recipe, (str, Path)):
            recipe = Recipe.load(recipe)
        if not isinstance(recipe, Recipe):
            raise ConfigError(
                "recipe must be an autotune.Recipe or the path of a recipe file. "
                f"Received: recipe={type(recipe).__name__}"
            )
        if experiment is not None and not isinstance(experiment, Experiment):
            raise ConfigError(
                "experiment must be an autotune.Experiment or None. "
                f"Received: experiment={type(experiment).__name__}"
            )
        differences = hardware_differences(recipe.hardware)
        _warn_on_other_hardware(recipe, differences, stacklevel + 1)
        rate = recipe.learning_rate
        if experiment is not None:
            rate = _experiment_learning_rate(rate, experiment, recipe.config, stacklevel + 1)
        return cls(recipe.config, rate, tuple(differences), _warmup_steps(recipe))

    @property
    def batch_size(self) -> int:
        """Examples per training step."""
        return self.config.batch_size

    @property
    def precision(self) -> str:
        """The Keras dtype policy name: float32, mixed_float16 or mixed_bfloat16."""
        return self.config.precision

    @property
    def backend(self) -> str:
        """The Keras backend it was measured on: tensorflow or jax (``KERAS_BACKEND``)."""
        return self.config.backend

    def optimizer_learning_rate(self) -> Any:
        """What to give the optimizer as its learning rate, as a trial gave it:
        :attr:`learning_rate`, or with a warm-up a Keras schedule
        (:class:`autotune.trial.lr_schedule.LinearWarmup`) rising to it over
        :attr:`warmup_steps`. ConfigError when the recipe has no learning rate."""
        if self.learning_rate is None:
            raise ConfigError(
                "the recipe records no learning rate: pass the experiment to autotune.apply()"
            )
        if not self.warmup_steps:
            return self.learning_rate
        from autotune.trial.lr_schedule import LinearWarmup

        return LinearWarmup(self.learning_rate, self.warmup_steps)

    def compile_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``model.compile``, as a trial passes them besides the optimizer,
        loss and metrics: ``jit_compile`` (XLA), ``steps_per_execution`` (1) and
        ``auto_scale_loss`` (True: under ``mixed_float16`` Keras wraps the optimizer in a
        ``LossScaleOptimizer``, for a model built after :func:`apply`)."""
        return compile_settings(self.config)

    def pipeline(
        self, data: Any, preprocess: Callable[..., Any] | None = None, seed: int = 0
    ) -> Any:
        """The trial's training stream over ``data`` (a ``tf.data.Dataset`` of (x, y) pairs,
        batched ones unbatched first, a ``keras.utils.PyDataset``, or (x, y) arrays):
        shuffle(buffer, seed) -> repeat -> map(preprocess, num_parallel_calls, deterministic)
        -> batch(batch_size, drop_remainder=True; padded when examples vary in shape) ->
        prefetch. It repeats forever: give ``model.fit`` a
        ``steps_per_epoch``. ``preprocess`` is a per-example ``(x, y[, seed]) -> (x, y)``
        function; ``seed`` (an integer >= 0) seeds the shuffle and a seeded ``preprocess``."""
        if preprocess is not None and not callable(preprocess):
            raise ConfigError(
                "preprocess must be a function (x, y[, seed]) -> (x, y) or None. "
                f"Received: preprocess={preprocess!r}"
            )
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ConfigError(f"seed must be an integer >= 0. Received: seed={seed!r}")
        _check_data(data)
        from autotune.trial.data_forms import to_examples
        from autotune.trial.pipeline import prepare_training

        examples = to_examples(data, "recipe pipeline data")
        prepared, _ = prepare_training(
            examples.dataset, self.config, preprocess, seed, examples.unbatched_from
        )
        return prepared

    def float32_output(self, model: Any, inputs: Any) -> Any:
        """``model`` with float32 outputs, fixed as a trial fixes it under a mixed policy (the
        last layer's dtype policy set to float32, else the outputs cast by a wrapper), and the
        layers the recipe's ``float32_layers`` names set to float32 as in its trial
        (:mod:`autotune.float32_layers`); the same model under float32. ``inputs`` is one batch
        of model inputs, e.g.
        ``next(iter(dataset))[0]``. Build the model after :func:`apply`: a model built under
        another dtype policy is refused with a :class:`ConfigError`."""
        policy = getattr(getattr(model, "dtype_policy", None), "name", None)
        if policy != self.config.precision:
            raise ConfigError(
                f"model must be built after autotune.apply(), under the recipe's dtype policy "
                f"{self.config.precision!r}. Received: model.dtype_policy={policy!r}"
            )
        from autotune.trial.layer_policies import keep_float32
        from autotune.trial.model import ensure_float32_head

        keep_float32(model, self.config.float32_layers)
        fixed, _ = ensure_float32_head(model, inputs)
        return fixed

    def build(self, experiment: Experiment, seed: int = 0) -> tuple[Any, Any]:
        """``experiment``'s compiled model and training stream, made exactly as a trial makes
        them with ``seed``: dtype policy and seed set, pipeline, model with its float32 head
        and float32 layers, compiled with the experiment's optimizer at
        :attr:`learning_rate`-for-the-batch-size and :meth:`compile_kwargs`, training with the
        experiment's own ``train_step`` where it gives one."""
        if not isinstance(experiment, Experiment):
            raise ConfigError(
                "experiment must be an autotune.Experiment. "
                f"Received: experiment={type(experiment).__name__}"
            )
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ConfigError(f"seed must be an integer >= 0. Received: seed={seed!r}")
        import keras

        from autotune.trial.model import compile_model, model_with_float32_head
        from autotune.trial.pipeline import training_pipeline

        check_backend(self.config)
        keras.config.set_dtype_policy(self.config.precision)
        keras.utils.set_random_seed(seed)
        train_data, _ = training_pipeline(experiment, self.config, seed)
        model, _ = model_with_float32_head(experiment, train_data, self.config.float32_layers)
        rate = _experiment_learning_rate(self.learning_rate, experiment, self.config, 2)
        applied = dataclasses.replace(self, learning_rate=rate)
        compile_model(experiment, self.config, model, applied.optimizer_learning_rate())
        if experiment.train_step is not None:
            from autotune.trial.custom_step import install_train_step

            install_train_step(model, experiment.train_step, experiment)
        return model, train_data


def _set_dtype_policy(name: str) -> None:
    import keras

    keras.config.set_dtype_policy(name)


def check_backend(config: TrialConfig) -> None:
    """ConfigError when Keras runs on another backend here than the recipe's ``config`` was
    measured on, naming both (:func:`autotune.trial.backends.check_backend`, as a recipe)."""
    from autotune.trial.backends import check_backend as check_loaded_backend

    check_loaded_backend(config, recipe=True)


def apply(recipe: Recipe | str | Path, experiment: Experiment | None = None) -> AppliedRecipe:
    """Sets the recipe's Keras dtype policy and TensorFlow thread counts (call it before
    building the model; thread counts before TensorFlow runs anything, else ConfigError) and
    returns the settings a trial of it used (see :class:`AppliedRecipe`). A recipe measured on
    another Keras backend than the one loaded is refused with a ConfigError naming both.

    ``recipe`` is a :class:`Recipe` or the path of a recipe file. With ``experiment``, the
    learning rate comes from its scaling rule for the recipe's batch size (as in a trial).
    Warns with :class:`HardwareMismatchWarning`, naming the differences, when this machine is
    not the one the recipe was measured on.
    """
    applied = AppliedRecipe._make(recipe, experiment, stacklevel=2)
    check_backend(applied.config)
    if applied.config.intra_op_threads or applied.config.inter_op_threads:
        from autotune.trial.threads import set_threads

        set_threads(applied.config)
    _set_dtype_policy(applied.config.precision)
    return applied


__all__ = [
    "AppliedRecipe",
    "HardwareMismatchWarning",
    "apply",
    "check_backend",
]
