"""Unit tests for autotune.recipe: Recipe JSON round trip and load errors.

autotune.apply is not called here: it imports keras."""

from __future__ import annotations

import json

import pytest

from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.recipe import RECIPE_FORMAT, AppliedRecipe, Recipe


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
# AppliedRecipe (no keras needed for its plain accessors)
# --------------------------------------------------------------------------------------------


def test_applied_recipe_accessors():
    applied = AppliedRecipe(TrialConfig(batch_size=96, jit_compile=True), 0.01)

    assert applied.batch_size == 96
    assert applied.compile_kwargs() == {"jit_compile": True}
    assert applied.learning_rate == 0.01
