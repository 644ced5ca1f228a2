"""autotune.apply on the README's own experiment (README.md, "Tune your own model"): the applied
pipeline, float32 head, learning rate and compile settings are the trial's, and a model trained
with them takes a few finite steps. Every test trains a handful of steps of a tiny CNN on CPU.

The dtype policy is process-global, so every test starts and ends with float32."""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import keras
import numpy as np
import pytest

from autotune import Experiment, TrialConfig, hardware
from autotune.bundled import load_experiment
from autotune.exceptions import ConfigError
from autotune.recipe import Recipe
from autotune.trial.applied import AppliedRecipe, HardwareMismatchWarning, apply
from autotune.trial.pipeline import training_pipeline
from tests.support import readme_example

pytestmark = [
    pytest.mark.slow,  # imports TensorFlow and trains
    pytest.mark.usefixtures("float32_policy"),
]

STEPS = 3

CONFIGS = {
    "float32": TrialConfig(batch_size=32),
    "bfloat16-xla": TrialConfig(
        batch_size=64, precision="mixed_bfloat16", jit_compile=True, prefetch=2
    ),
    "float16": TrialConfig(
        batch_size=48, precision="mixed_float16", num_parallel_calls=2, shuffle_buffer=256
    ),
}


@pytest.fixture(autouse=True)
def no_hardware_warning() -> Iterator[None]:
    """Every recipe here was "measured" on this machine: a hardware warning is a failure."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", HardwareMismatchWarning)
        yield


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("readme")
    readme_example.write_my_experiment(path)
    return path


@pytest.fixture(scope="module")
def experiment(folder: Path) -> Experiment:
    return load_experiment(str(folder / "my_experiment.py"))


def recipe_for(config: TrialConfig, experiment: Experiment) -> Recipe:
    """A recipe of ``config`` as export writes one, measured on this machine."""
    return Recipe(
        config=config,
        learning_rate=experiment.learning_rate(config.batch_size),
        throughput=None,
        baseline_throughput=None,
        speedup=None,
        fidelity=None,
        tolerance=1.5,
        experiment="my_experiment.py",
        study="my_experiment-cpu",
        storage="sqlite:///autotune.db",
        trial=1,
        hardware=dict(hardware.hardware()),
    )


def assert_as_recipe(model: keras.Model, config: TrialConfig) -> None:
    """``model`` is compiled the way a trial of ``config`` compiles it."""
    assert bool(model.jit_compile) == config.jit_compile
    wrapped = isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert wrapped == (config.precision == "mixed_float16")
    assert model.dtype_policy.name == config.precision


def batches(dataset, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(x.numpy(), y.numpy()) for x, y in dataset.take(count)]


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
def test_user_code_trains_with_the_applied_settings(
    config: TrialConfig, experiment: Experiment
) -> None:
    """The README's steps by hand: pipeline, float32 head, learning rate, compile_kwargs."""
    module = sys.modules[_module_of(experiment)]
    applied = apply(recipe_for(config, experiment), experiment)
    model = module.build_model()
    train = applied.pipeline(module.train_data(), preprocess=module.augment)
    x, y = next(iter(train))
    model = applied.float32_output(model, x)
    model.compile(
        optimizer=module.optimizer(applied.learning_rate),
        loss=experiment.loss,
        metrics=list(experiment.metrics),
        **applied.compile_kwargs(),
    )

    history = model.fit(train, steps_per_epoch=STEPS, epochs=1, shuffle=False, verbose=0)

    assert x.shape == (config.batch_size, 8, 8, 1)
    assert x.dtype == "float32" and y.shape == (config.batch_size,)
    assert applied.learning_rate == pytest.approx(experiment.learning_rate(config.batch_size))
    assert float(model.optimizer.learning_rate) == pytest.approx(applied.learning_rate)
    assert_as_recipe(model, config)
    assert keras.backend.standardize_dtype(model(x).dtype) == "float32"
    assert math.isfinite(history.history["loss"][-1])


def _module_of(experiment: Experiment) -> str:
    """The name of the module the loaded README experiment lives in."""
    return experiment.model.__module__


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
def test_the_pipeline_is_the_trials(config: TrialConfig, experiment: Experiment) -> None:
    applied = apply(recipe_for(config, experiment))
    module = sys.modules[_module_of(experiment)]

    mine = applied.pipeline(module.train_data(), preprocess=experiment.preprocess, seed=0)
    trials, _ = training_pipeline(experiment, config, seed=0)

    for (x, y), (tx, ty) in zip(batches(mine, 3), batches(trials, 3), strict=True):
        np.testing.assert_array_equal(x, tx)
        np.testing.assert_array_equal(y, ty)


def test_the_pipeline_takes_arrays_and_repeats_full_batches(experiment: Experiment) -> None:
    applied = AppliedRecipe(TrialConfig(batch_size=100, shuffle_buffer=1), 1e-3)
    x, y = experiment.validation_data()  # 397 (x, y) arrays: not a multiple of 100

    first = batches(applied.pipeline((x, y)), 5)  # past one epoch, every batch full

    assert [b[0].shape[0] for b in first] == [100] * 5
    np.testing.assert_array_equal(first[0][0], x[:100])  # shuffle_buffer=1: in order
    with pytest.raises(ConfigError, match="Received: data=list"):
        applied.pipeline([x, y])


@pytest.mark.parametrize("config", list(CONFIGS.values()), ids=list(CONFIGS))
def test_build_makes_the_trials_model_and_data(config: TrialConfig, experiment: Experiment) -> None:
    applied = apply(recipe_for(config, experiment), experiment)

    model, train = applied.build(experiment)
    history = model.fit(train, steps_per_epoch=STEPS, epochs=1, shuffle=False, verbose=0)

    assert_as_recipe(model, config)
    assert float(model.optimizer.learning_rate) == pytest.approx(
        experiment.learning_rate(config.batch_size)
    )
    assert math.isfinite(history.history["loss"][-1])


def test_the_float32_head_is_fixed_as_in_a_trial(experiment: Experiment) -> None:
    applied = apply(recipe_for(CONFIGS["bfloat16-xla"], experiment))
    model = experiment.model()
    x = np.zeros((2, 8, 8, 1), "float32")
    assert keras.backend.standardize_dtype(model(x).dtype) == "bfloat16"  # the softmax head

    fixed = applied.float32_output(model, x)

    assert fixed is model  # the last layer set to float32, as the trial's "last_layer" fix
    assert model.layers[-1].dtype_policy.name == "float32"
    assert keras.backend.standardize_dtype(fixed(x).dtype) == "float32"
    assert model.layers[0].compute_dtype == "bfloat16"


def test_a_model_built_before_apply_is_refused(experiment: Experiment) -> None:
    model = experiment.model()  # under float32
    applied = apply(recipe_for(CONFIGS["float16"], experiment))

    with pytest.raises(ConfigError, match=r"Received: model.dtype_policy='float32'"):
        applied.float32_output(model, np.zeros((2, 8, 8, 1), "float32"))


def test_the_readme_training_code_runs(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's training block itself, on a recipe in the working folder, for one epoch."""
    source = readme_example.training_source()
    assert source.count("epochs=10") == 1
    experiment = load_experiment(str(folder / "my_experiment.py"))
    recipe_for(CONFIGS["bfloat16-xla"], experiment).save(folder / "recipe.json")
    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(sys.modules, "my_experiment", raising=False)
    namespace: dict[str, object] = {}

    try:
        exec(compile(source.replace("epochs=10", "epochs=1"), "README.md", "exec"), namespace)
    finally:
        sys.modules.pop("my_experiment", None)

    model = namespace["model"]
    assert isinstance(model, keras.Model)
    assert_as_recipe(model, CONFIGS["bfloat16-xla"])
    assert model.optimizer.iterations.numpy() == 1400 // 64


def test_apply_sets_the_recipes_thread_counts_before_tensorflow_runs(tmp_path: Path) -> None:
    import subprocess

    config = TrialConfig(batch_size=32, intra_op_threads=1, inter_op_threads=2)
    path = recipe_for(config, load_experiment("tabular_mlp")).save(tmp_path / "recipe.json")
    fresh = (
        "import autotune, tensorflow as tf\n"
        f"autotune.apply({str(path)!r})\n"
        "print(tf.config.threading.get_intra_op_parallelism_threads(),"
        " tf.config.threading.get_inter_op_parallelism_threads())"
    )
    late = (
        "import autotune, tensorflow as tf\n"
        "tf.constant(1.0) + 1.0\n"  # TensorFlow runs: its pools are fixed now
        f"autotune.apply({str(path)!r})"
    )

    first = subprocess.run([sys.executable, "-c", fresh], capture_output=True, text=True)
    second = subprocess.run([sys.executable, "-c", late], capture_output=True, text=True)

    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["1", "2"]
    assert second.returncode != 0
    assert "TensorFlow's thread counts are set when it first runs" in second.stderr
