"""Unit tests for autotune.recipe: Recipe JSON round trip and load errors; what apply() returns
(learning rate, compile settings, the hardware check) and the README's own experiment.

No TensorFlow: apply()'s one Keras call (setting the dtype policy) is replaced by a recorder, and
what builds tf.data pipelines or models is tested in tests/integration/test_apply_recipe.py."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import autotune
import autotune.trial.applied as applied_module
from autotune import hardware
from autotune.bundled import load_experiment
from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.experiment import Experiment
from autotune.recipe import HARDWARE_KEYS, RECIPE_FORMAT, Recipe, hardware_differences
from autotune.trial.applied import AppliedRecipe, HardwareMismatchWarning, apply
from autotune.trial.compile_settings import compile_settings
from tests.support import readme_example


def make_recipe(**changes):
    values = {
        "config": TrialConfig(
            batch_size=128, precision="mixed_bfloat16", jit_compile=True, prefetch=4
        ),
        "learning_rate": 0.004,
        "throughput": {"median": 3000.0, "low": 2950.0, "high": 3050.0, "confidence": 0.98, "n": 7},
        "baseline_throughput": {
            "median": 1000.0,
            "low": 990.0,
            "high": 1010.0,
            "confidence": 0.98,
            "n": 7,
        },
        "speedup": 3.0,
        "fidelity": 0.4,
        "tolerance": 1.5,
        "experiment": "experiments/digits.py:digits",
        "study": "digits-quick",
        "storage": "sqlite:///autotune.db",
        "trial": 7,
        "effective": {"dtype_policy": "mixed_bfloat16", "learning_rate": 0.004},
        "hardware": {"cpu": "test cpu", "gpus": []},
        "versions": {"keras": "3.8.0"},
        "note": "3.00x the baseline's throughput",
        "created": "2025-01-01T00:00:00+00:00",
    }
    values.update(changes)
    return Recipe(**values)


def saved_data(tmp_path, **changes):
    """The JSON of a saved recipe as a dict, with top-level ``changes`` applied."""
    path = make_recipe().save(tmp_path / "recipe.json")
    data = json.loads(path.read_text())
    data.update(changes)
    return data


def write_json(tmp_path, data, name="edited.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


# --------------------------------------------------------------------------------------------
# Round trip
# --------------------------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path):
    recipe = make_recipe()

    path = recipe.save(tmp_path / "recipe.json")

    assert path == tmp_path / "recipe.json"
    assert Recipe.load(path) == recipe
    assert Recipe.load(str(path)) == recipe


def test_round_trip_of_a_baseline_recipe(tmp_path):
    recipe = make_recipe(
        config=TrialConfig.baseline(32),
        trial=None,
        speedup=1.0,
        fidelity=0.0,
        learning_rate=None,
        note="no trial was faster than the baseline",
    )

    loaded = Recipe.load(recipe.save(tmp_path / "baseline.json"))

    assert loaded == recipe
    assert loaded.is_baseline
    assert not make_recipe().is_baseline


def test_saved_file_is_readable_sorted_json_with_a_format(tmp_path):
    path = make_recipe().save(tmp_path / "recipe.json")
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)

    assert text.endswith("\n")
    assert text.startswith("{\n  ")  # indented for people
    assert list(data) == sorted(data)
    assert data["format"] == RECIPE_FORMAT
    assert data["config"] == make_recipe().config.to_dict()
    assert data["trial"] == 7


def test_to_dict_has_the_config_as_a_plain_dict():
    data = make_recipe().to_dict()

    assert data["config"] == {
        "batch_size": 128,
        "precision": "mixed_bfloat16",
        "jit_compile": True,
        "prefetch": 4,
        "num_parallel_calls": "autotune",
        "shuffle_buffer": 1024,
        "steps_per_execution": 1,
        "intra_op_threads": 0,
        "inter_op_threads": 0,
        "private_threadpool_size": 0,
        "backend": "tensorflow",
        "lr_rule": "experiment",
        "float32_layers": "none",
    }
    json.dumps(data)  # JSON-serialisable as is


def test_load_fills_optional_fields(tmp_path):
    data = saved_data(tmp_path)
    for optional in ("effective", "hardware", "versions", "note", "created", "format"):
        del data[optional]

    loaded = Recipe.load(write_json(tmp_path, data))

    assert loaded.effective == {}
    assert loaded.note == ""
    assert loaded.format == RECIPE_FORMAT


def test_save_to_a_missing_folder_is_a_config_error(tmp_path):
    target = tmp_path / "missing" / "recipe.json"

    with pytest.raises(ConfigError, match="cannot be written") as info:
        make_recipe().save(target)

    assert str(target) in str(info.value)


# --------------------------------------------------------------------------------------------
# Load errors: ConfigError naming the file
# --------------------------------------------------------------------------------------------


def assert_names_file(error: ConfigError, path) -> None:
    assert f"recipe file {str(path)!r}" in str(error), str(error)


def test_missing_file(tmp_path):
    path = tmp_path / "absent.json"

    with pytest.raises(ConfigError, match="cannot be read: No such file") as info:
        Recipe.load(path)

    assert_names_file(info.value, path)


def test_a_directory_cannot_be_read(tmp_path):
    with pytest.raises(ConfigError, match="cannot be read") as info:
        Recipe.load(tmp_path)

    assert_names_file(info.value, tmp_path)


@pytest.mark.parametrize("text", ["", "{", "not json", '{"config": }'])
def test_invalid_json(tmp_path, text):
    path = tmp_path / "broken.json"
    path.write_text(text)

    with pytest.raises(ConfigError, match="is not valid JSON") as info:
        Recipe.load(path)

    assert_names_file(info.value, path)


@pytest.mark.parametrize(("text", "kind"), [("[]", "list"), ("3", "int"), ('"x"', "str")])
def test_json_that_is_not_an_object(tmp_path, text, kind):
    path = tmp_path / "list.json"
    path.write_text(text)

    with pytest.raises(ConfigError, match=f"must hold a JSON object. Received: {kind}") as info:
        Recipe.load(path)

    assert_names_file(info.value, path)


def test_unknown_key(tmp_path):
    path = write_json(tmp_path, saved_data(tmp_path, speed=2.0, zeta=1))

    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['speed', 'zeta'\]") as info:
        Recipe.load(path)

    assert_names_file(info.value, path)


def test_missing_config(tmp_path):
    data = saved_data(tmp_path)
    del data["config"]
    path = write_json(tmp_path, data)

    with pytest.raises(ConfigError, match="has no 'config'") as info:
        Recipe.load(path)

    assert_names_file(info.value, path)


def test_missing_required_field(tmp_path):
    data = saved_data(tmp_path)
    del data["experiment"]
    path = write_json(tmp_path, data)

    with pytest.raises(ConfigError, match="experiment") as info:
        Recipe.load(path)

    assert_names_file(info.value, path)


def test_unknown_config_key(tmp_path):
    data = saved_data(tmp_path)
    data["config"]["xla"] = True
    path = write_json(tmp_path, data)

    with pytest.raises(ConfigError, match=r"config has unknown key\(s\) \['xla'\]") as info:
        Recipe.load(path)

    assert_names_file(info.value, path)


@pytest.mark.parametrize("config", [[], "bs=32", None])
def test_config_that_is_not_an_object(tmp_path, config):
    path = write_json(tmp_path, saved_data(tmp_path, config=config))

    with pytest.raises(ConfigError, match="config must be a JSON object") as info:
        Recipe.load(path)

    assert_names_file(info.value, path)


def test_config_without_batch_size(tmp_path):
    data = saved_data(tmp_path)
    del data["config"]["batch_size"]
    path = write_json(tmp_path, data)

    with pytest.raises(ConfigError, match="batch_size") as info:
        Recipe.load(path)

    assert_names_file(info.value, path)


@pytest.mark.parametrize(
    ("key", "value"),
    [("precision", "fp8"), ("batch_size", 0), ("jit_compile", "yes"), ("prefetch", -1)],
)
def test_bad_config_value_names_the_file(tmp_path, key, value):
    data = saved_data(tmp_path)
    data["config"][key] = value
    path = write_json(tmp_path, data)

    with pytest.raises(ConfigError) as info:
        Recipe.load(path)

    assert f"Received: {key}={value!r}" in str(info.value)
    assert_names_file(info.value, path)


@pytest.mark.parametrize(
    ("key", "value"),
    [("precision", "fp8"), ("batch_size", 0), ("jit_compile", "yes"), ("prefetch", -1)],
)
def test_bad_config_value_is_a_config_error_naming_the_value(tmp_path, key, value):
    data = saved_data(tmp_path)
    data["config"][key] = value

    with pytest.raises(ConfigError, match=f"TrialConfig.{key} must be"):
        Recipe.load(write_json(tmp_path, data))


# --------------------------------------------------------------------------------------------
# AppliedRecipe: compile settings and learning rate (no TensorFlow)
# --------------------------------------------------------------------------------------------

#: The hardware facts of the machine every recipe below was "measured" on (see ``machine``).
HERE = {
    "cpu": "Test CPU 9000",
    "cpu_features": ["avx2"],
    "logical_cores": 8,
    "memory_bytes": 16 << 30,
    "gpus": [],
    "machine": "x86_64",
    "system": "Linux",
}


@pytest.fixture(autouse=True)
def machine(monkeypatch):
    """This machine's hardware facts are ``HERE`` (a copy a test may change), and setting the
    dtype policy is recorded instead of loading Keras."""
    facts = dict(HERE)
    policies: list[str] = []
    monkeypatch.setattr(hardware, "hardware", lambda: facts)
    monkeypatch.setattr(applied_module, "_set_dtype_policy", policies.append)
    return facts, policies


def here_recipe(**changes):
    """A recipe measured on this machine (``HERE``)."""
    return make_recipe(hardware=dict(HERE), **changes)


def experiment(**changes):
    values = {
        "name": "unit",
        "model": lambda: None,
        "train_data": lambda: None,
        "validation_data": lambda: None,
        "loss": "mse",
        "optimizer": lambda rate: None,
        "base_batch_size": 32,
        "base_learning_rate": 0.001,
        "lr_scaling": "linear",
    }
    values.update(changes)
    return Experiment(**values)


def test_applied_recipe_accessors():
    applied = AppliedRecipe(TrialConfig(batch_size=96, jit_compile=True), 0.01)

    assert applied.batch_size == 96
    assert applied.precision == "float32"
    assert applied.learning_rate == 0.01
    assert applied.hardware_differences == ()


@pytest.mark.parametrize(
    "config",
    [
        TrialConfig(batch_size=32),
        TrialConfig(batch_size=64, precision="mixed_bfloat16", jit_compile=True),
        TrialConfig(batch_size=16, precision="mixed_float16", prefetch=0),
        TrialConfig(batch_size=64, steps_per_execution=16),
    ],
    ids=["float32", "bfloat16-xla", "float16", "16-steps-per-call"],
)
def test_compile_kwargs_are_every_setting_a_trial_compiles_with(config):
    kwargs = AppliedRecipe(config, 0.01).compile_kwargs()

    assert kwargs == {
        "jit_compile": config.jit_compile,
        "steps_per_execution": config.steps_per_execution,
        "auto_scale_loss": True,  # Keras wraps a LossScaleOptimizer under mixed_float16
    }
    assert kwargs == compile_settings(config)
    assert kwargs is not AppliedRecipe(config, 0.01).compile_kwargs()  # a fresh dict each call


def test_the_trial_compiles_with_the_same_settings():
    """One source of truth: the trial's model.compile call spreads compile_settings."""
    source = (Path(autotune.__file__).parent / "trial" / "model.py").read_text()

    assert "**compile_settings(config)" in source
    assert "jit_compile=config.jit_compile" not in source


def test_apply_sets_the_dtype_policy_and_keeps_the_recorded_learning_rate(machine, tmp_path):
    _, policies = machine
    path = here_recipe().save(tmp_path / "recipe.json")

    applied = apply(path)

    assert policies == ["mixed_bfloat16"]
    assert applied.config == make_recipe().config
    assert applied.learning_rate == 0.004
    assert apply(str(path)).learning_rate == 0.004
    assert apply(here_recipe()).batch_size == 128


@pytest.mark.parametrize(
    ("scaling", "expected"), [("linear", 0.004), ("sqrt", 0.002), ("none", 0.001)]
)
def test_with_an_experiment_the_learning_rate_follows_its_rule(scaling, expected):
    rule = experiment(lr_scaling=scaling)  # base 0.001 at 32; the recipe's batch size is 128
    recipe = here_recipe(learning_rate=rule.learning_rate(128))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        applied = apply(recipe, rule)

    assert applied.learning_rate == pytest.approx(expected)
    assert applied.learning_rate == rule.learning_rate(applied.batch_size)


def test_an_experiment_gives_the_learning_rate_a_recipe_lacks():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        applied = AppliedRecipe.from_recipe(here_recipe(learning_rate=None), experiment())

    assert applied.learning_rate == pytest.approx(0.004)
    assert AppliedRecipe.from_recipe(here_recipe(learning_rate=None)).learning_rate is None


def test_an_experiment_whose_rule_changed_warns_and_wins():
    with pytest.warns(UserWarning, match=r"gives learning rate 0\.002 at batch size 128") as info:
        applied = apply(here_recipe(), experiment(lr_scaling="sqrt"))

    assert applied.learning_rate == pytest.approx(0.002)
    assert "measured with 0.004" in str(info[0].message)
    assert info[0].filename == __file__  # points at the caller


def test_bad_arguments_are_config_errors_naming_them(machine):
    _, policies = machine

    with pytest.raises(ConfigError, match=r"recipe must be .* Received: recipe=int"):
        apply(42)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"experiment must be .* Received: experiment=str"):
        apply(here_recipe(), "experiments/digits_cnn.py")  # type: ignore[arg-type]
    assert policies == []  # nothing set on bad input


def test_pipeline_and_build_refuse_bad_input_before_loading_tensorflow():
    applied = AppliedRecipe(TrialConfig(batch_size=32), 0.01)

    with pytest.raises(ConfigError, match=r"seed must be an integer >= 0. Received: seed=-1"):
        applied.pipeline((None, None), seed=-1)
    with pytest.raises(ConfigError, match=r"seed must be .* Received: seed=True"):
        applied.pipeline((None, None), seed=True)
    with pytest.raises(ConfigError, match=r"preprocess must be .* Received: preprocess=3"):
        applied.pipeline((None, None), preprocess=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"experiment must be .* Received: experiment=str"):
        applied.build("digits")  # type: ignore[arg-type]


class _FakePolicy:
    name = "float32"


class _FakeModel:
    dtype_policy = _FakePolicy()


def test_float32_output_refuses_a_model_built_before_apply():
    applied = AppliedRecipe(TrialConfig(batch_size=32, precision="mixed_bfloat16"), 0.01)

    with pytest.raises(ConfigError, match=r"after autotune.apply\(\)") as info:
        applied.float32_output(_FakeModel(), None)

    assert "'mixed_bfloat16'" in str(info.value)
    assert str(info.value).endswith("Received: model.dtype_policy='float32'")


# --------------------------------------------------------------------------------------------
# The hardware check
# --------------------------------------------------------------------------------------------


def test_no_warning_on_the_same_hardware():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        applied = apply(here_recipe())

    assert applied.hardware_differences == ()


def test_no_warning_on_this_real_machine(monkeypatch):
    monkeypatch.undo()  # the real hardware facts, but keep Keras unloaded:
    monkeypatch.setattr(applied_module, "_set_dtype_policy", lambda name: None)
    recipe = make_recipe(hardware={**hardware.hardware(), "devices": ["/CPU:0"], "cuda": ""})

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert apply(recipe).hardware_differences == ()


def test_other_hardware_warns_naming_each_difference(machine):
    facts, policies = machine
    facts.update(cpu="Other CPU", gpus=["NVIDIA H200, 143771 MiB"])

    with pytest.warns(HardwareMismatchWarning) as info:
        applied = apply(here_recipe())

    message = str(info[0].message)
    assert "recipe of study 'digits-quick' was measured on other hardware" in message
    assert "cpu: 'Test CPU 9000' there, 'Other CPU' here" in message
    assert "gpus: [] there, ['NVIDIA H200, 143771 MiB'] here" in message
    assert "logical_cores" not in message
    assert "tune again on this machine" in message
    assert info[0].filename == __file__  # points at the caller's apply()
    assert len(applied.hardware_differences) == 2
    assert policies == ["mixed_bfloat16"]  # a warning, not a refusal


def test_from_recipe_warns_at_its_caller_too(machine):
    machine[0]["logical_cores"] = 2

    with pytest.warns(HardwareMismatchWarning, match="logical_cores: 8 there, 2 here") as info:
        AppliedRecipe.from_recipe(here_recipe())

    assert info[0].filename == __file__
    assert machine[1] == []  # from_recipe sets no policy


def test_hardware_warning_is_a_user_warning_that_can_be_silenced(machine):
    machine[0]["machine"] = "aarch64"

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", HardwareMismatchWarning)
        applied = apply(here_recipe())

    assert issubclass(HardwareMismatchWarning, UserWarning)
    assert applied.hardware_differences == ("machine: 'x86_64' there, 'aarch64' here",)


def test_facts_outside_the_fingerprint_and_missing_facts_are_not_compared():
    other = {**HERE, "memory_bytes": 1, "cpu_features": [], "system": "Darwin"}

    assert hardware_differences(HERE, other) == []
    assert hardware_differences({}, other) == []  # a recipe that records no hardware
    assert hardware_differences({"cpu": "Test CPU 9000"}, {**HERE, "cpu": "x"}) == [
        "cpu: 'Test CPU 9000' there, 'x' here"
    ]


def test_hardware_keys_are_the_fingerprinted_facts():
    """A recipe warns exactly where a study would refuse to mix results (the fingerprint)."""
    base = hardware.fingerprint(HERE)
    changed = {
        "cpu": "x",
        "cpu_features": [],
        "logical_cores": 1,
        "memory_bytes": 1,
        "gpus": ["g"],
        "machine": "m",
        "system": "s",
    }

    fingerprinted = {
        key for key, value in changed.items() if hardware.fingerprint({**HERE, key: value}) != base
    }

    assert fingerprinted == set(HARDWARE_KEYS)


def test_nothing_here_loads_tensorflow(tmp_path):
    """from_recipe, compile_kwargs and the hardware check run without TensorFlow or Keras."""
    path = make_recipe().save(tmp_path / "recipe.json")
    code = (
        "import sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "from autotune.trial.applied import AppliedRecipe\n"
        f"applied = AppliedRecipe.from_recipe({str(path)!r})\n"
        "assert applied.compile_kwargs()['jit_compile'] is True\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras'))\n"
        "print('loaded:', loaded)\n"
    )

    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )

    assert completed.returncode == 0, completed.stderr
    assert "loaded: []" in completed.stdout


# --------------------------------------------------------------------------------------------
# The README's "Tune your own model" example
# --------------------------------------------------------------------------------------------


def test_the_section_follows_set_up():
    text = readme_example.README.read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]

    assert headings.index(readme_example.SECTION) == headings.index("## Set-up") + 1


def test_readme_my_experiment_loads_as_an_experiment(tmp_path):
    path = readme_example.write_my_experiment(tmp_path)

    loaded = load_experiment(str(path))

    assert isinstance(loaded, Experiment)
    assert loaded is load_experiment(f"{path}:experiment")
    assert loaded.name == "my_experiment"
    assert loaded.preprocess is not None
    assert loaded.learning_rate(128) == pytest.approx(0.002)  # sqrt rule from 1e-3 at 32


def test_readme_commands_are_the_real_cli():
    from click.testing import CliRunner

    from autotune.cli import main

    section = readme_example.section()
    runner = CliRunner()

    assert "autotune run my_experiment.py --space cpu --trials " in section
    for command in ("run", "export"):
        assert runner.invoke(main, [command, "--help"]).exit_code == 0
    run_help = runner.invoke(main, ["run", "--help"]).output
    assert "--space" in run_help and "--trials" in run_help
    assert "-o, --output" in runner.invoke(main, ["export", "--help"]).output


def test_readme_training_code_uses_only_what_apply_returns():
    import ast

    tree = ast.parse(readme_example.training_source())
    used = {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "applied"
    }

    assert used >= {
        "pipeline",
        "float32_output",
        "compile_kwargs",
        "optimizer_learning_rate",
        "batch_size",
    }
    assert all(hasattr(AppliedRecipe, name) or name in {"learning_rate"} for name in used), used
