"""An experiment's own training step (docs/your-model.md, "A training step of your own"): run as
Keras runs its own (the same curve as ``fit``'s step on the same maths), under mixed_float16 with
XLA and several steps per call through the LossScaleOptimizer, refused with a clear error when
it breaks the contract; a keras.Model subclass with its own train_step through ``fit``; and the
study end to end (search, confirmation, recipe, ``apply()`` and the exported code)."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

from autotune import TrialConfig
from autotune.bundled import load_experiment
from autotune.exceptions import ExperimentError
from autotune.experiment import Experiment
from autotune.recipe import Recipe
from autotune.trial.applied import apply
from autotune.trial.data_forms import to_examples
from autotune.trial.runner import run_trial

pytestmark = [
    pytest.mark.slow,  # imports TensorFlow and trains
    pytest.mark.usefixtures("float32_policy"),
]


@pytest.fixture(scope="module")
def custom(tiny_ref) -> Experiment:
    return load_experiment(tiny_ref("tiny_custom_step"))


def losses(result) -> list[float]:
    return [p.val_loss for p in result.curve]


def test_the_step_trains_the_curve_of_keras_own_step(custom, settings) -> None:
    curve_settings = settings.replace(measure_throughput=False)
    config = TrialConfig(batch_size=32)

    own = run_trial(custom, config, curve_settings)
    keras_step = run_trial(dataclasses.replace(custom, train_step=None), config, curve_settings)

    assert own.effective["train_step"] == "experiment"
    assert keras_step.effective["train_step"] == "keras"
    assert losses(own) == pytest.approx(losses(keras_step), rel=1e-4)


def test_under_float16_with_xla_and_steps_per_call_it_is_timed_and_loss_scaled(
    custom, settings
) -> None:
    config = TrialConfig(
        batch_size=32, precision="mixed_float16", jit_compile=True, steps_per_execution=4
    )

    result = run_trial(custom, config, settings)

    assert result.throughput is not None and result.throughput.median > 0
    assert result.effective["loss_scaling"] is True and result.effective["jit_compile"] is True
    assert result.effective["steps_per_execution"] == 4
    assert result.curve and all(math.isfinite(p.val_loss) for p in result.curve)
    assert all(p.loss_scale is not None and p.loss_scale > 1 for p in result.curve)


def unscaled_step(model, optimizer, batch):  # type: ignore[no-untyped-def]
    import tensorflow as tf

    x, y = batch[:2]
    with tf.GradientTape() as tape:
        loss = keras.ops.mean(keras.losses.sparse_categorical_crossentropy(y, model(x)))
    optimizer.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
    return loss


def per_example_step(model, optimizer, batch):  # type: ignore[no-untyped-def]
    x, y = batch[:2]
    return keras.losses.sparse_categorical_crossentropy(y, model(x))


@pytest.mark.parametrize(
    ("step", "precision", "message"),
    [
        (lambda model, optimizer, batch: None, "float32", "train_step returned None"),
        (per_example_step, "float32", r"scalar tensor .* Received: \(32,\)"),
        (unscaled_step, "mixed_float16", "never called optimizer.scale_loss"),
    ],
    ids=["no loss", "per-example loss", "float16 without scale_loss"],
)
def test_a_step_that_breaks_the_contract_is_refused(custom, settings, step, precision, message):
    broken = dataclasses.replace(custom, train_step=step)
    config = TrialConfig(batch_size=32, precision=precision)

    with pytest.raises(ExperimentError, match=message):
        run_trial(broken, config, settings.replace(measure_throughput=False))


def test_a_subclass_with_its_own_train_step_trains_through_fit(tiny_ref, settings) -> None:
    own = load_experiment(tiny_ref("tiny_own_step"))

    result = run_trial(own, TrialConfig(batch_size=32, precision="mixed_bfloat16"), settings)

    assert result.effective["train_step"] == "model"
    assert result.effective["head_fix"] == "last_layer"  # its head is its last layer
    assert result.throughput is not None
    assert result.curve and all(math.isfinite(p.val_loss) for p in result.curve)


def autotune(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autotune.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "COLUMNS": "300"},
    )


SPACE = """
name = "tiny-custom"
[parameters]
precision = ["float32", "mixed_bfloat16"]
steps_per_execution = [1, 4]
[measure]
warmup_max_steps = 40
windows = 4
window_seconds = 0.05
checkpoints = 3
curve_samples = 1024
time_limit_seconds = 120
"""


def test_a_custom_step_experiment_is_tuned_end_to_end(tiny_ref, tmp_path: Path) -> None:
    space = tmp_path / "space.toml"
    space.write_text(SPACE, encoding="utf-8")
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    reference = tiny_ref("tiny_custom_step")

    run = autotune(
        "run", reference, "--space", str(space), "--storage", storage, "--trials", "2",
        "--profile", "off", "--confirm-top", "1", "--confirm-rounds", "2", cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr + run.stdout
    best = autotune("best", "--storage", storage, "--json", cwd=tmp_path)
    assert best.returncode == 0, best.stderr
    (tmp_path / "recipe.json").write_text(best.stdout, encoding="utf-8")
    recipe = Recipe.load(tmp_path / "recipe.json")
    assert recipe.effective["train_step"] == "experiment"
    assert recipe.note.startswith("confirmed: ")
    exported = autotune(
        "export", "--storage", storage, "--format", "python", "-o", "r.py", cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr

    experiment = load_experiment(reference)
    applied = apply(recipe, experiment)
    model, train = applied.build(experiment)
    steps = 2 * applied.config.steps_per_execution
    model.fit(train, steps_per_epoch=steps, verbose=0)  # the experiment's step, through apply()
    assert int(model.optimizer.iterations) == steps

    spec = importlib.util.spec_from_file_location("exported_recipe", tmp_path / "r.py")
    assert spec is not None and spec.loader is not None
    code = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(code)
    code.set_up()
    examples = to_examples(experiment.train_data, "train_data").dataset
    stream = code.pipeline(examples)
    own = code.keep_float32(experiment.model(), next(iter(stream))[0])
    own.compile(optimizer=experiment.optimizer(code.learning_rate()), loss=experiment.loss,
                **code.COMPILE)  # fmt: skip
    step = code.train_function(own, experiment.train_step)
    iterator = iter(stream)
    first = float(step(iterator))
    for _ in range(4):
        last = float(step(iterator))
    calls = 5 * code.COMPILE["steps_per_execution"]
    assert int(own.optimizer.iterations) == calls  # steps_per_execution steps per call
    assert np.isfinite([first, last]).all() and last < first
