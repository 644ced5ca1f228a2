"""The Keras backend as a setting (``TrialConfig.backend``): validation, TOML, JSON and recipe
round trips, what the space draws on JAX (``jax.jit``, no ``jit_compile`` draw), the structured
start's JAX probe, attribution, the study's check that JAX is installed, and the trial process's
environment. No TensorFlow: what runs on JAX is in tests/integration/test_jax_backend.py."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import optuna
import pytest

from autotune import hardware
from autotune.analysis.attribution import changed_settings, reverted
from autotune.bundled import resolve_space
from autotune.config import BACKENDS, TrialConfig, backend_missing
from autotune.exceptions import ConfigError
from autotune.recipe import Recipe
from autotune.space import IntRange, SearchSpace, choices, load_space
from autotune.study.checks import check_backends
from autotune.study.start import combined_config, space_params, structured_start
from autotune.study.tensorboard_log import hparam_values
from autotune.trial.isolation import child_environment

BASE = 32
JAX = TrialConfig(batch_size=BASE, backend="jax", jit_compile=True)
TWO_BACKENDS = SearchSpace(
    "two",
    {
        "backend": choices("tensorflow", "jax"),
        "jit_compile": choices(False, True),
        "batch_size": choices(32, 64),
    },
)


def test_backends_are_tensorflow_and_jax_and_the_baseline_stays_tensorflow() -> None:
    assert BACKENDS == ("tensorflow", "jax")
    assert TrialConfig(batch_size=8).backend == "tensorflow"
    assert TrialConfig.baseline(BASE).backend == "tensorflow"


def test_jax_without_jit_compile_is_refused_naming_both() -> None:
    with pytest.raises(ConfigError, match="backend='jax' needs jit_compile=true") as error:
        TrialConfig(batch_size=BASE, backend="jax")
    assert "jit_compile=False" in str(error.value)


@pytest.mark.parametrize("bad", ["torch", "JAX", "", 1, None])
def test_an_unknown_backend_is_refused_with_what_was_received(bad: Any) -> None:
    with pytest.raises(ConfigError, match=r"TrialConfig.backend must be one of") as error:
        TrialConfig(batch_size=BASE, backend=bad, jit_compile=True)
    assert repr(bad) in str(error.value)


def test_a_jax_config_round_trips_through_json_and_says_jax_jit() -> None:
    assert TrialConfig.from_json(JAX.to_json()) == JAX
    assert JAX.compiler == "jax.jit"
    assert JAX.describe() == (
        "bs=32 float32 jax.jit prefetch=autotune parallel=autotune shuffle=1024"
    )
    assert TrialConfig(batch_size=BASE, jit_compile=True).compiler == "xla"


def test_a_config_stored_before_the_backend_existed_reads_as_tensorflow() -> None:
    stored = TrialConfig(batch_size=BASE).to_dict()
    del stored["backend"]

    assert TrialConfig.from_dict(stored).backend == "tensorflow"


def test_a_recipe_keeps_its_backend_and_an_old_recipe_is_tensorflow(tmp_path: Path) -> None:
    recipe = Recipe(
        config=JAX,
        learning_rate=1e-3,
        throughput=None,
        baseline_throughput=None,
        speedup=None,
        fidelity=None,
        tolerance=1.5,
        experiment="tiny.py",
        study="tiny-keras3",
        storage="sqlite:///autotune.db",
        trial=1,
        hardware=dict(hardware.hardware()),
    )
    path = recipe.save(tmp_path / "recipe.json")

    loaded = Recipe.load(path)
    assert loaded.backend == "jax" and loaded.config == JAX
    data = json.loads(path.read_text())
    del data["config"]["backend"]
    data["config"]["jit_compile"] = False
    (tmp_path / "old.json").write_text(json.dumps(data))
    assert Recipe.load(tmp_path / "old.json").backend == "tensorflow"


def test_a_recipe_file_with_jax_and_no_jit_names_the_file(tmp_path: Path) -> None:
    data = {"config": {"batch_size": 32, "backend": "jax", "jit_compile": False}}
    (tmp_path / "r.json").write_text(json.dumps(data))

    with pytest.raises(ConfigError, match=r"recipe file .*r\.json.*: config.*needs jit_compile"):
        Recipe.load(tmp_path / "r.json")


# --- search spaces ----------------------------------------------------------------------------


def test_a_space_file_searches_the_backend(tmp_path: Path) -> None:
    path = tmp_path / "space.toml"
    path.write_text('[parameters]\nbackend = ["tensorflow", "jax"]\njit_compile = [false, true]\n')

    space = load_space(path)

    assert space.parameters["backend"].values == ("tensorflow", "jax")  # type: ignore[union-attr]
    # jax has one jit_compile value (jax.jit): tensorflow x 2 + jax x 1
    assert space.size() == 3


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ('backend = ["tensorflow", "pytorch"]', r"parameters.backend\[1\] must be one of"),
        ("backend = { low = 1, high = 2 }", r"parameters.backend must be a list of choices"),
        ('backend = "jax"', r"parameters.backend must be a list of choices"),
    ],
)
def test_a_bad_backend_in_a_space_file_names_the_file_and_key(
    tmp_path: Path, raw: str, message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(f"[parameters]\n{raw}\n")

    with pytest.raises(ConfigError, match=message) as error:
        load_space(path)
    assert str(path) in str(error.value)


def test_on_jax_the_space_draws_no_jit_compile_and_compiles_with_jax_jit() -> None:
    # A FixedTrial fails on any parameter it was not given: jit_compile is not drawn on JAX.
    jax_trial = optuna.trial.FixedTrial({"backend": "jax", "batch_size": 64})
    tf_trial = optuna.trial.FixedTrial(
        {"backend": "tensorflow", "jit_compile": False, "batch_size": 64}
    )

    assert TWO_BACKENDS.sample(jax_trial, BASE) == TrialConfig(
        batch_size=64, backend="jax", jit_compile=True
    )
    assert TWO_BACKENDS.sample(tf_trial, BASE) == TrialConfig(batch_size=64)


def test_space_params_of_a_jax_config_leave_jit_compile_out() -> None:
    params = space_params(TWO_BACKENDS, JAX)

    assert params == {"backend": "jax", "batch_size": 32}
    assert TWO_BACKENDS.sample(optuna.trial.FixedTrial(params), BASE) == JAX


def test_the_keras3_space_searches_both_backends_and_the_cpu_space_only_tensorflow() -> None:
    keras3 = resolve_space("keras3")

    assert keras3.parameters["backend"].values == ("tensorflow", "jax")  # type: ignore[union-attr]
    assert "backend" not in resolve_space("cpu").parameters
    assert "backend" not in resolve_space("gpu").parameters


# --- the structured start and attribution -----------------------------------------------------


def test_the_structured_start_probes_jax_with_jax_jit() -> None:
    start = structured_start(TWO_BACKENDS, BASE, {"gpus": [], "cpu_features": []})

    assert JAX in start
    assert all(c.jit_compile for c in start if c.backend == "jax")


def test_a_space_of_jax_alone_centres_on_jax() -> None:
    space = SearchSpace("jax", {"backend": choices("jax"), "batch_size": IntRange(32, 64, 16)})

    start = structured_start(space, BASE, {"gpus": [], "cpu_features": []})

    assert start and all(c.backend == "jax" and c.jit_compile for c in start)


def test_a_jax_config_differs_from_the_baseline_in_its_backend_alone() -> None:
    baseline = TrialConfig.baseline(BASE)
    winner = TrialConfig(batch_size=64, backend="jax", jit_compile=True)

    assert changed_settings(winner, baseline) == ("batch_size", "backend")
    # reverting the backend alone keeps XLA: TensorFlow with jit_compile, the same batch
    assert reverted(winner, baseline, "backend") == TrialConfig(batch_size=64, jit_compile=True)
    assert reverted(winner, baseline, "batch_size") == JAX
    # against another JAX configuration jit_compile is the same anyway
    assert changed_settings(winner, JAX) == ("batch_size",)


def test_the_combination_of_a_jax_probe_and_a_batch_probe_compiles_with_jax_jit() -> None:
    centre = TrialConfig.baseline(BASE)
    measured = [(JAX, 1300.0, 0.1), (TrialConfig(batch_size=64), 1500.0, 0.2)]

    combined = combined_config(centre, 1000.0, measured, tolerance=1.5)

    assert combined == TrialConfig(batch_size=64, backend="jax", jit_compile=True)


# --- what must be installed, and the trial's environment --------------------------------------


def test_a_study_of_a_space_with_jax_is_refused_where_jax_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jax" else real(name, *a)
    )

    assert backend_missing("tensorflow") is None
    assert "pip install 'autotune[jax]'" in (backend_missing("jax") or "")
    with pytest.raises(ConfigError, match=r"space .*searches the Keras backend 'jax'") as error:
        check_backends(TWO_BACKENDS)
    assert error.value.argument == "space"
    assert check_backends(resolve_space("cpu")) is not None  # no backend searched: nothing asked


def test_an_experiment_with_its_own_train_step_is_refused_a_space_that_searches_jax() -> None:
    from autotune.experiment import Experiment

    def experiment(train_step: Any) -> Experiment:
        return Experiment(
            name="own",
            model=lambda: None,
            train_data=lambda: None,
            validation_data=lambda: None,
            loss="mse",
            optimizer=lambda rate: None,
            base_batch_size=32,
            base_learning_rate=0.01,
            train_step=train_step,
        )

    step = lambda model, optimizer, batch: None  # noqa: E731

    with pytest.raises(ConfigError, match=r"\['jax'\].*own train_step.*TensorFlow only") as error:
        check_backends(TWO_BACKENDS, experiment(step))
    assert error.value.argument == "space"
    assert check_backends(TWO_BACKENDS, experiment(None)) is TWO_BACKENDS
    assert check_backends(resolve_space("cpu"), experiment(step)) is not None  # TensorFlow only
    with pytest.raises(
        ConfigError, match=r"train_step must be a function .* Received: train_step=3"
    ):
        experiment(3)


def test_the_trial_process_gets_the_trial_s_backend_whatever_the_caller_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KERAS_BACKEND", "torch")

    assert child_environment()["KERAS_BACKEND"] == "tensorflow"
    assert child_environment(backend="jax")["KERAS_BACKEND"] == "jax"


def test_tensorboard_hparams_carry_the_backend() -> None:
    assert hparam_values(JAX, "trial")["backend"] == "jax"
