"""The recipe as code, run (docs/your-model.md, "The answer as code"): the module
``python_snippet(recipe)`` writes, used as its docstring says on the bundled digits CNN and on a
model with normalisation and attention layers, builds the model and the batches that
``autotune.apply(...).build(...)`` builds: the same dtype policies, ``jit_compile``, steps per
execution, learning rate per step and first batch."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import keras
import numpy as np
import pytest

from autotune import TrialConfig
from autotune.bundled import load_experiment
from autotune.experiment import Experiment
from autotune.recipe import Recipe
from autotune.trial.applied import apply
from autotune.trial.data_forms import to_examples
from autotune.trial.recipe_code import python_snippet
from tests.support.recipes import recipe_for

pytestmark = [
    pytest.mark.slow,  # imports TensorFlow and builds models
    pytest.mark.usefixtures("float32_policy"),
]


def recipe_of(experiment: Experiment, config: TrialConfig) -> Recipe:
    learning = experiment.learning_rate_of(config.lr_rule, config.batch_size, 6400)
    return recipe_for(
        config,
        learning.rate,
        speedup=1.5,
        fidelity=0.5,
        experiment=experiment.name,
        study=f"{experiment.name}-s",
        trial=3,
        effective=learning.to_dict(),
    )


def snippet(recipe: Recipe, folder: Path) -> ModuleType:
    """The recipe's code, written to a file and imported as a module of its own."""
    path = folder / "recipe_code.py"
    path.write_text(python_snippet(recipe), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("recipe_code_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def built_by_the_snippet(code: ModuleType, experiment: Experiment) -> tuple[keras.Model, object]:
    """The model and training stream the snippet's docstring says to make, with the
    experiment's own model, data, optimizer and loss."""
    code.set_up()
    keras.utils.set_random_seed(0)
    examples = to_examples(experiment.train_data, "train_data").dataset
    train = code.pipeline(examples, preprocess=experiment.preprocess, seed=0)
    model = code.keep_float32(experiment.model(), next(iter(train))[0])
    model.compile(
        optimizer=experiment.optimizer(code.learning_rate()),
        loss=experiment.loss,
        **code.COMPILE,
    )
    return model, train


def policies(model: keras.Model) -> list[tuple[str, str]]:
    return [
        (type(layer).__name__, layer.dtype_policy.name)
        for layer in model._flatten_layers(include_self=False)
    ]


def rates(model: keras.Model, steps: int) -> list[float]:
    schedule = model.optimizer._learning_rate
    if not callable(schedule):
        return [float(model.optimizer.learning_rate)] * steps
    return [float(schedule(np.int64(step))) for step in range(steps)]


@pytest.mark.parametrize(
    ("name", "config"),
    [
        (
            "digits_cnn",
            TrialConfig(
                batch_size=64,
                precision="mixed_bfloat16",
                jit_compile=True,
                steps_per_execution=8,
                lr_rule="sqrt_warmup",
                shuffle_buffer=512,
                num_parallel_calls=2,
                prefetch=3,
            ),
        ),
        (
            "tiny_attention",
            TrialConfig(
                batch_size=32, precision="mixed_bfloat16", float32_layers="norms+attention"
            ),
        ),
    ],
)
def test_the_code_builds_what_apply_builds(tiny_ref, tmp_path: Path, name: str, config) -> None:
    experiment = load_experiment(name if name == "digits_cnn" else tiny_ref(name))
    recipe = recipe_of(experiment, config)
    code = snippet(recipe, tmp_path)

    model, train = built_by_the_snippet(code, experiment)
    applied = apply(recipe, experiment)
    expected, expected_train = applied.build(experiment, seed=0)

    x, y = next(iter(train))
    x_expected, y_expected = next(iter(expected_train))
    assert x.shape[0] == config.batch_size
    np.testing.assert_array_equal(np.asarray(x), np.asarray(x_expected))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(y_expected))
    assert policies(model) == policies(expected)
    assert policies(model)[-1][1] == "float32"  # the output layer, under the mixed policy
    assert bool(model.jit_compile) == bool(expected.jit_compile) == config.jit_compile
    assert model.steps_per_execution == expected.steps_per_execution == config.steps_per_execution
    assert rates(model, 8) == pytest.approx(rates(expected, 8))
    if config.float32_layers != "none":
        kept = {cls for cls, policy in policies(model) if policy == "float32"}
        assert {"LayerNormalization", "BatchNormalization", "MultiHeadAttention"} <= kept
