"""Unit tests for autotune.space: bundled spaces, TOML and Python validation, size, digest,
sampling with Optuna trials and [measure] overrides. No TensorFlow here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import optuna
import pytest

import autotune
from autotune.bundled import SPACES as BUNDLED_SPACES
from autotune.bundled import resolve_space
from autotune.config import AUTOTUNE, PRECISIONS, RunSettings, TrialConfig
from autotune.exceptions import ConfigError
from autotune.space import (
    MEASURE_KEYS,
    PARAMETERS,
    Choice,
    IntRange,
    SearchSpace,
    choices,
    describe_parameters,
    load_space,
    space_from_dict,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)

BUNDLED = ("quick", "cpu", "gpu", "input", "keras3")


def write_space(directory: Path, text: str, name: str = "space.toml") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_error(directory: Path, text: str) -> tuple[Path, str]:
    """Writes ``text`` as a space file, loads it, and returns (path, the ConfigError message)."""
    path = write_space(directory, text)
    with pytest.raises(ConfigError) as info:
        load_space(path)
    return path, str(info.value)


def assert_mentions(message: str, *parts: str) -> None:
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"


# --------------------------------------------------------------------------------------------
# Bundled spaces
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_space_loads_by_name(name):
    space = resolve_space(name)

    assert space.name == name
    assert Path(space.source) == BUNDLED_SPACES / f"{name}.toml"
    assert space.description
    assert set(space.parameters) <= set(PARAMETERS)
    assert space.size() > 1


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_space_loads_by_path(name):
    path = BUNDLED_SPACES / f"{name}.toml"

    assert load_space(path) == resolve_space(name)
    assert resolve_space(str(path)) == resolve_space(name)


def test_bundled_space_folder_is_the_top_level_search_spaces():
    # A checkout's spaces; the wheel ships the same files inside the package (test_packaging.py).
    package = Path(autotune.__file__).resolve().parent
    assert package.parent / "search_spaces" == BUNDLED_SPACES
    assert BUNDLED_SPACES.is_dir()
    assert sorted(p.stem for p in BUNDLED_SPACES.glob("*.toml")) == sorted(BUNDLED)


def test_quick_space_contents():
    space = resolve_space("quick")

    assert space.parameters == {
        "precision": Choice(("float32", "mixed_bfloat16")),
        "jit_compile": Choice((False, True)),
        "batch_size": Choice((32, 64, 128)),
        "num_parallel_calls": Choice((AUTOTUNE, 1)),
        "steps_per_execution": Choice((1, 16, 64)),
    }
    assert space.measure == {"windows": 6, "window_seconds": 0.3, "time_limit_seconds": 180}
    assert space.size() == 2 * 2 * 3 * 2 * 3


def test_cpu_and_gpu_space_sizes():
    cpu = resolve_space("cpu")
    gpu = resolve_space("gpu")

    assert cpu.parameters["batch_size"] == IntRange(16, 512, 16)
    steps, threads = 4, 4 * 3 * 4  # steps per execution; intra-op, inter-op, tf.data pool
    assert cpu.size() == 3 * 2 * ((512 - 16) // 16 + 1) * 4 * 4 * 3 * steps * threads
    assert gpu.parameters["batch_size"] == IntRange(64, 2048, 8)
    remedies = 4 * 3  # lr_rule, float32_layers (drawn only where they change something)
    assert gpu.size() == 3 * 2 * ((2048 - 64) // 8 + 1) * 3 * 4 * 2 * 4 * remedies
    assert gpu.parameters["lr_rule"] == choices(
        "experiment", "sqrt", "sqrt_warmup", "linear_warmup"
    )
    assert gpu.parameters["float32_layers"] == choices("none", "norms", "norms+attention")
    assert "lr_rule" not in cpu.parameters and "float32_layers" not in cpu.parameters
    assert cpu.parameters["steps_per_execution"] == choices(1, 4, 16, 64)


def test_bundled_spaces_include_every_precision_where_documented():
    assert set(resolve_space("cpu").parameters["precision"].values) == set(PRECISIONS)
    assert set(resolve_space("gpu").parameters["precision"].values) == set(PRECISIONS)


def test_resolve_space_returns_a_space_object_unchanged():
    space = SearchSpace("mine", {"jit_compile": choices(False, True)})

    assert resolve_space(space) is space


def test_resolve_space_accepts_a_path_object_to_a_file(tmp_path):
    path = write_space(tmp_path, 'name = "mine"\n[parameters]\nbatch_size = [16, 32]\n')

    space = resolve_space(path)

    assert space.name == "mine"
    assert space.source == str(path)


def test_resolve_space_unknown_name_says_the_file_does_not_exist(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"search space file 'no_such_space' does not exist"):
        resolve_space("no_such_space")


def test_resolve_space_prefers_a_local_file_over_a_bundled_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_space(tmp_path, 'name = "local"\n[parameters]\nbatch_size = [8]\n', name="quick")

    assert resolve_space("quick").name == "local"


def test_name_defaults_to_the_file_stem(tmp_path):
    path = write_space(tmp_path, "[parameters]\nbatch_size = [16]\n", name="tiny_space.toml")

    assert load_space(path).name == "tiny_space"


# --------------------------------------------------------------------------------------------
# File errors: each names the file, the key, what was expected and what was received
# --------------------------------------------------------------------------------------------

FILE_ERRORS = {
    "unknown parameter": (
        """
        [parameters]
        precision = ["float32"]
        batch = [32, 64]
        """,
        ["unknown parameter 'parameters.batch'", "expected some of", "'batch_size'", "'batch'"],
    ),
    "unknown top-level key": (
        """
        title = "mine"
        [parameters]
        batch_size = [32]
        """,
        ["unknown top-level key", "'title'", "expected some of", "'parameters'", "'measure'"],
    ),
    "unknown measure key": (
        """
        [parameters]
        batch_size = [32]
        [measure]
        seed = 3
        """,
        ["'measure.seed'", "expected some of", "'windows'", "Received: 'seed'"],
    ),
    "bad measure value": (
        """
        [parameters]
        batch_size = [32]
        [measure]
        windows = 0
        """,
        ["[measure]", "windows", "an integer >= 1", "Received: windows=0"],
    ),
    "bad measure type": (
        """
        [parameters]
        batch_size = [32]
        [measure]
        window_seconds = "fast"
        """,
        ["[measure]", "window_seconds", "seconds > 0", "Received: window_seconds='fast'"],
    ),
    "measure not a table": (
        """
        measure = 5
        [parameters]
        batch_size = [32]
        """,
        ["[measure]", "a table", "Received: 5"],
    ),
    "bad precision": (
        """
        [parameters]
        precision = ["float32", "fp8"]
        """,
        ["parameters.precision[1]", "one of ['float32', 'mixed_float16'", "Received: 'fp8'"],
    ),
    "bad precision in a choices table": (
        """
        [parameters]
        precision = { choices = ["fp8"] }
        """,
        ["parameters.precision[0]", "one of ['float32'", "Received: 'fp8'"],
    ),
    "jit_compile integer": (
        """
        [parameters]
        jit_compile = [false, 1]
        """,
        ["parameters.jit_compile[1]", "true or false", "Received: 1"],
    ),
    "jit_compile string": (
        """
        [parameters]
        jit_compile = ["yes"]
        """,
        ["parameters.jit_compile[0]", "true or false", "Received: 'yes'"],
    ),
    "duplicate choices": (
        """
        [parameters]
        batch_size = [32, 64, 32]
        """,
        ["parameters.batch_size", "without repeated choices", "Received: [32, 64, 32]"],
    ),
    "duplicate booleans": (
        """
        [parameters]
        jit_compile = [true, true]
        """,
        ["parameters.jit_compile", "without repeated choices", "Received: [True, True]"],
    ),
    "empty list": (
        """
        [parameters]
        precision = []
        """,
        ["parameters.precision", "a non-empty list of choices", "Received: []"],
    ),
    "batch size choice zero": (
        """
        [parameters]
        batch_size = [0, 32]
        """,
        ["parameters.batch_size[0]", "an integer >= 1", "Received: 0"],
    ),
    "prefetch choice negative": (
        """
        [parameters]
        prefetch = ["autotune", -1]
        """,
        ["parameters.prefetch[1]", "'autotune' or an integer >= 0", "Received: -1"],
    ),
    "num_parallel_calls choice zero": (
        """
        [parameters]
        num_parallel_calls = [0]
        """,
        ["parameters.num_parallel_calls[0]", "'autotune' or an integer >= 1", "Received: 0"],
    ),
    "shuffle_buffer choice string": (
        """
        [parameters]
        shuffle_buffer = ["autotune"]
        """,
        ["parameters.shuffle_buffer[0]", "an integer >= 1", "Received: 'autotune'"],
    ),
    "range low below the minimum": (
        """
        [parameters]
        batch_size = { low = 0, high = 64, multiple_of = 16 }
        """,
        ["parameters.batch_size.low", "an integer >= 1", "Received: 0"],
    ),
    "prefetch range below zero": (
        """
        [parameters]
        prefetch = { low = -2, high = 4, multiple_of = 2 }
        """,
        ["parameters.prefetch.low", "'autotune' or an integer >= 0", "Received: -2"],
    ),
    "range low above high": (
        """
        [parameters]
        batch_size = { low = 256, high = 32, multiple_of = 16 }
        """,
        ["parameters.batch_size", "low <= high", "Received: low=256, high=32"],
    ),
    "batch size multiple_of not 8 or 16": (
        """
        [parameters]
        batch_size = { low = 32, high = 256, multiple_of = 4 }
        """,
        ["parameters.batch_size.multiple_of", "8 or 16", "Received: 4"],
    ),
    "bounds not multiples": (
        """
        [parameters]
        batch_size = { low = 40, high = 256, multiple_of = 16 }
        """,
        ["parameters.batch_size", "multiples of multiple_of=16", "Received: low=40, high=256"],
    ),
    "high not a multiple": (
        """
        [parameters]
        shuffle_buffer = { low = 100, high = 1010, multiple_of = 100 }
        """,
        ["parameters.shuffle_buffer", "multiples of multiple_of=100", "low=100, high=1010"],
    ),
    "float low": (
        """
        [parameters]
        batch_size = { low = 32.0, high = 256 }
        """,
        ["parameters.batch_size.low", "an integer", "Received: 32.0"],
    ),
    "string high": (
        """
        [parameters]
        batch_size = { low = 32, high = "256" }
        """,
        ["parameters.batch_size.high", "an integer", "Received: '256'"],
    ),
    "boolean multiple_of": (
        """
        [parameters]
        shuffle_buffer = { low = 1, high = 8, multiple_of = true }
        """,
        ["parameters.shuffle_buffer.multiple_of", "an integer", "Received: True"],
    ),
    "range for precision": (
        """
        [parameters]
        precision = { low = 1, high = 3 }
        """,
        [
            "parameters.precision",
            "a list of choices (a range is only for integers)",
            "Received: {'low': 1, 'high': 3, 'multiple_of': 1}",
        ],
    ),
    "range for jit_compile": (
        """
        [parameters]
        jit_compile = { low = 0, high = 1 }
        """,
        ["parameters.jit_compile", "a range is only for integers", "'low': 0"],
    ),
    "range table with an unknown key": (
        """
        [parameters]
        batch_size = { low = 32, high = 256, step = 16 }
        """,
        ["parameters.batch_size", "low, high and optional multiple_of", "'step': 16"],
    ),
    "range table without high": (
        """
        [parameters]
        batch_size = { low = 32 }
        """,
        ["parameters.batch_size", "low, high and optional multiple_of", "Received: {'low': 32}"],
    ),
    "choices mixed with a range": (
        """
        [parameters]
        batch_size = { choices = [32], low = 32 }
        """,
        ["parameters.batch_size", "either {choices = [...]}", "'choices': [32]"],
    ),
    "choices not a list": (
        """
        [parameters]
        precision = { choices = "float32" }
        """,
        ["parameters.precision.choices", "a list", "Received: 'float32'"],
    ),
    "scalar parameter": (
        """
        [parameters]
        batch_size = 32
        """,
        ["parameters.batch_size", "a list of choices or a {low, high, multiple_of} table", "32"],
    ),
    "parameters missing": (
        """
        name = "nothing"
        """,
        ["[parameters]", "a table with at least one parameter", "Received: None"],
    ),
    "parameters empty": (
        """
        [parameters]
        """,
        ["[parameters]", "a table with at least one parameter", "Received: {}"],
    ),
    "parameters not a table": (
        """
        parameters = ["batch_size"]
        """,
        ["[parameters]", "a table with at least one parameter", "Received: ['batch_size']"],
    ),
    "empty name": (
        """
        name = ""
        [parameters]
        batch_size = [32]
        """,
        ["name must be a non-empty string", "Received: ''"],
    ),
    "description not a string": (
        """
        description = 3
        [parameters]
        batch_size = [32]
        """,
        ["description must be a string", "Received: 3"],
    ),
}


@pytest.mark.parametrize("case", list(FILE_ERRORS), ids=list(FILE_ERRORS))
def test_space_file_errors_name_file_key_expected_and_received(tmp_path, case):
    text, parts = FILE_ERRORS[case]

    path, message = load_error(tmp_path, text)

    assert message.startswith(f"{path}: "), message
    assert_mentions(message, *parts)


def test_missing_file_is_named(tmp_path):
    path = tmp_path / "absent.toml"

    with pytest.raises(ConfigError) as info:
        load_space(path)

    assert str(info.value) == f"search space file {str(path)!r} does not exist"
    assert isinstance(info.value.__cause__, FileNotFoundError)


def test_invalid_toml_is_named_with_the_parser_error(tmp_path):
    path, message = load_error(tmp_path, "[parameters\nbatch_size = [32]\n")

    assert_mentions(message, f"search space file {str(path)!r} is not valid TOML", "line 1")


def test_directory_is_named(tmp_path):
    folder = tmp_path / "spaces.toml"
    folder.mkdir()

    with pytest.raises(ConfigError, match="is a directory") as info:
        load_space(folder)

    assert str(folder) in str(info.value)


def test_space_from_dict_names_the_given_source():
    with pytest.raises(ConfigError, match=r"^from the CLI: unknown parameter 'parameters.xla'"):
        space_from_dict({"parameters": {"xla": [True]}}, "from the CLI")


def test_config_error_is_a_value_error(tmp_path):
    with pytest.raises(ValueError):
        load_space(write_space(tmp_path, "[parameters]\nprecision = []\n"))


# --------------------------------------------------------------------------------------------
# Python-built spaces are validated the same way
# --------------------------------------------------------------------------------------------

PYTHON_ERRORS = {
    "unknown parameter": (
        {"xla": Choice((True,))},
        ["unknown parameter 'parameters.xla'", "expected some of", "Received: 'xla'"],
    ),
    "bad precision": (
        {"precision": Choice(("float32", "fp8"))},
        ["parameters.precision[1]", "one of ['float32'", "Received: 'fp8'"],
    ),
    "jit_compile non-bool": (
        {"jit_compile": Choice((0, 1))},
        ["parameters.jit_compile[0]", "true or false", "Received: 0"],
    ),
    "duplicate choices": (
        {"batch_size": Choice((64, 64))},
        ["parameters.batch_size", "without repeated choices", "Received: [64, 64]"],
    ),
    "empty choice": (
        {"precision": Choice(())},
        ["parameters.precision", "a non-empty list", "Received: []"],
    ),
    "low above high": (
        {"batch_size": IntRange(128, 64, 16)},
        ["parameters.batch_size", "low <= high", "Received: low=128, high=64"],
    ),
    "batch size multiple_of 32": (
        {"batch_size": IntRange(32, 256, 32)},
        ["parameters.batch_size.multiple_of", "8 or 16", "Received: 32"],
    ),
    "bounds not multiples": (
        {"batch_size": IntRange(32, 100, 8)},
        ["parameters.batch_size", "multiples of multiple_of=8", "Received: low=32, high=100"],
    ),
    "multiple_of zero": (
        {"shuffle_buffer": IntRange(16, 16, 0)},
        ["parameters.shuffle_buffer.multiple_of", "an integer >= 1", "Received: 0"],
    ),
    "range for precision": (
        {"precision": IntRange(1, 2)},
        ["parameters.precision", "a range is only for integers", "'low': 1"],
    ),
    "not a Choice or IntRange": (
        {"batch_size": [32, 64]},
        ["parameters.batch_size", "a Choice or an IntRange", "Received: [32, 64]"],
    ),
}


@pytest.mark.parametrize("case", list(PYTHON_ERRORS), ids=list(PYTHON_ERRORS))
def test_python_space_errors_name_source_key_expected_and_received(case):
    parameters, parts = PYTHON_ERRORS[case]

    with pytest.raises(ConfigError) as info:
        SearchSpace("mine", parameters)

    message = str(info.value)
    assert message.startswith("<python>: "), message
    assert_mentions(message, *parts)


def test_python_space_names_a_given_source():
    with pytest.raises(ConfigError, match=r"^tune\.py: parameters.precision\[0\]"):
        SearchSpace("mine", {"precision": choices("fp8")}, source="tune.py")


def test_python_space_validates_measure():
    with pytest.raises(ConfigError, match=r"unknown key 'measure.curve'"):
        SearchSpace("mine", {"batch_size": choices(32)}, measure={"curve": False})
    with pytest.raises(ConfigError, match=r"^<python>: \[measure\]: RunSettings.checkpoints"):
        SearchSpace("mine", {"batch_size": choices(32)}, measure={"checkpoints": 0})
    with pytest.raises(ConfigError, match=r"warmup_min_steps <= warmup_max_steps"):
        SearchSpace(
            "mine",
            {"batch_size": choices(32)},
            measure={"warmup_min_steps": 10, "warmup_max_steps": 5},
        )


def test_every_measure_key_is_a_run_settings_field():
    assert set(MEASURE_KEYS) <= set(RunSettings.__dataclass_fields__)


def test_python_space_equals_the_file_space(tmp_path):
    path = write_space(
        tmp_path,
        """
        name = "mine"
        [parameters]
        precision = ["float32", "mixed_bfloat16"]
        batch_size = { low = 32, high = 128, multiple_of = 16 }
        [measure]
        windows = 3
        """,
    )
    built = SearchSpace(
        "mine",
        {"precision": choices("float32", "mixed_bfloat16"), "batch_size": IntRange(32, 128, 16)},
        {"windows": 3},
    )

    loaded = load_space(path)

    assert loaded.parameters == built.parameters
    assert loaded.measure == built.measure
    assert loaded.digest() == built.digest()


def test_valid_edge_values_are_accepted():
    space = SearchSpace(
        "edges",
        {
            "prefetch": choices(AUTOTUNE, 0, 1),
            "num_parallel_calls": choices(AUTOTUNE, 1),
            "shuffle_buffer": IntRange(1, 1),
            "batch_size": IntRange(8, 8, 8),
        },
    )

    assert space.size() == 3 * 2 * 1 * 1


# Range bounds follow the same rule as the parameter's choices.
@pytest.mark.parametrize(
    ("key", "parameter"),
    [
        ("batch_size", IntRange(0, 64, 16)),
        ("shuffle_buffer", IntRange(0, 8)),
        ("prefetch", IntRange(-4, 4)),
        ("num_parallel_calls", IntRange(0, 4)),
    ],
)
def test_range_bounds_follow_the_parameter_rule(key, parameter):
    with pytest.raises(ConfigError) as info:
        SearchSpace("mine", {key: parameter})

    message = str(info.value)
    assert message.startswith(f"<python>: parameters.{key}.low must be "), message
    assert f"Received: {parameter.low}" in message


# --------------------------------------------------------------------------------------------
# size() and digest()
# --------------------------------------------------------------------------------------------


def test_size_multiplies_choices_and_range_steps():
    space = SearchSpace(
        "s",
        {
            "precision": choices("float32", "mixed_float16", "mixed_bfloat16"),
            "batch_size": IntRange(32, 256, 16),
            "shuffle_buffer": IntRange(1, 10),
        },
    )

    assert space.size() == 3 * 15 * 10


def test_size_of_a_single_configuration():
    assert SearchSpace("s", {"batch_size": IntRange(64, 64, 16)}).size() == 1


def small_space(name="small", **extra):
    parameters = {
        "precision": choices("float32", "mixed_bfloat16"),
        "batch_size": IntRange(32, 128, 16),
        "jit_compile": choices(False, True),
    }
    return SearchSpace(name, parameters, {"windows": 5, "checkpoints": 4}, **extra)


def test_digest_is_a_stable_short_hex_string():
    space = small_space()

    assert space.digest() == small_space().digest()
    assert len(space.digest()) == 16
    int(space.digest(), 16)
    # Stored studies compare this value on resume, so it must not change between versions or
    # processes (no hash() randomisation): pinned here.
    assert space.digest() == "b625dcc45abe99c2"


def test_digest_ignores_name_description_source_and_key_order():
    reordered = SearchSpace(
        "other",
        {
            "jit_compile": choices(False, True),
            "batch_size": IntRange(32, 128, 16),
            "precision": choices("float32", "mixed_bfloat16"),
        },
        {"checkpoints": 4, "windows": 5},
        description="something else",
        source="elsewhere.toml",
    )

    assert reordered.digest() == small_space().digest()


@pytest.mark.parametrize(
    "changed",
    [
        {"precision": choices("float32", "mixed_float16")},
        {"batch_size": IntRange(32, 144, 16)},
        {"batch_size": IntRange(32, 128, 8)},
        {"jit_compile": choices(False)},
        {"shuffle_buffer": choices(1024)},
    ],
)
def test_digest_changes_with_parameters(changed):
    base = small_space()
    parameters = {**base.parameters, **changed}

    assert SearchSpace("small", parameters, base.measure).digest() != base.digest()


def test_digest_changes_with_measure():
    base = small_space()

    assert SearchSpace("small", base.parameters, {"windows": 6}).digest() != base.digest()
    assert SearchSpace("small", base.parameters, {}).digest() != base.digest()


def test_to_dict_round_trips_through_space_from_dict():
    space = small_space()

    again = space_from_dict(space.to_dict(), "stored")

    assert again.parameters == space.parameters
    assert again.measure == space.measure
    assert again.name == space.name
    assert again.digest() == space.digest()


def test_describe_parameters():
    assert describe_parameters(small_space()) == [
        "precision: float32, mixed_bfloat16",
        "batch_size: 32..128 step 16",
        "jit_compile: False, True",
    ]


# --------------------------------------------------------------------------------------------
# sample()
# --------------------------------------------------------------------------------------------


def test_sample_with_fixed_trial_keeps_baseline_values_for_absent_parameters():
    space = SearchSpace("s", {"precision": choices("float32", "mixed_bfloat16")})

    config = space.sample(optuna.trial.FixedTrial({"precision": "mixed_bfloat16"}), 48)

    assert config == TrialConfig(batch_size=48, precision="mixed_bfloat16")
    assert config.jit_compile is False
    assert config.prefetch == AUTOTUNE
    assert config.num_parallel_calls == AUTOTUNE
    assert config.shuffle_buffer == TrialConfig(batch_size=1).shuffle_buffer


def test_sample_of_a_batch_size_only_space_keeps_float32_and_no_xla():
    space = SearchSpace("s", {"batch_size": IntRange(32, 64, 16)})

    config = space.sample(optuna.trial.FixedTrial({"batch_size": 48}), 32)

    assert config == TrialConfig(batch_size=48)
    assert config.precision == "float32"
    assert config.jit_compile is False


def test_sample_every_parameter():
    space = SearchSpace(
        "s",
        {
            "precision": choices(*PRECISIONS),
            "jit_compile": choices(False, True),
            "batch_size": IntRange(16, 64, 16),
            "prefetch": choices(AUTOTUNE, 2),
            "num_parallel_calls": choices(AUTOTUNE, 4),
            "shuffle_buffer": choices(1, 4096),
        },
    )
    params = {
        "precision": "mixed_float16",
        "jit_compile": True,
        "batch_size": 64,
        "prefetch": 2,
        "num_parallel_calls": AUTOTUNE,
        "shuffle_buffer": 1,
    }

    assert space.sample(optuna.trial.FixedTrial(params), 32) == TrialConfig(**params)


def test_sample_with_study_ask_draws_valid_configs():
    space = SearchSpace(
        "s",
        {
            "precision": choices("float32", "mixed_bfloat16"),
            "batch_size": IntRange(32, 256, 16),
            "shuffle_buffer": IntRange(100, 1000, 100),
        },
    )
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))

    configs = []
    for _ in range(40):
        trial = study.ask()
        configs.append(space.sample(trial, 24))
        study.tell(trial, 1.0)

    for config in configs:
        assert config.batch_size % 16 == 0 and 32 <= config.batch_size <= 256
        assert config.shuffle_buffer % 100 == 0 and 100 <= config.shuffle_buffer <= 1000
        assert config.precision in ("float32", "mixed_bfloat16")
        assert config.jit_compile is False
        assert config.prefetch == AUTOTUNE
    assert len({c.batch_size for c in configs}) > 3  # it really draws from the range


def test_sample_draws_precision_and_jit_before_batch_size():
    space = SearchSpace(
        "s",
        {
            "batch_size": IntRange(32, 64, 16),
            "shuffle_buffer": choices(16),
            "jit_compile": choices(False, True),
            "precision": choices("float32"),
        },
    )
    study = optuna.create_study()
    trial = study.ask()

    space.sample(trial, 32)

    assert list(trial.params) == ["precision", "jit_compile", "batch_size", "shuffle_buffer"]


def test_sample_records_optuna_distributions():
    space = small_space()
    study = optuna.create_study()
    trial = study.ask()

    space.sample(trial, 32)
    study.tell(trial, 1.0)

    frozen_trial = study.trials[0]
    assert frozen_trial.distributions["batch_size"] == optuna.distributions.IntDistribution(
        32, 128, step=16
    )
    assert frozen_trial.distributions["precision"] == optuna.distributions.CategoricalDistribution(
        ["float32", "mixed_bfloat16"]
    )


# --------------------------------------------------------------------------------------------
# run_settings()
# --------------------------------------------------------------------------------------------


def test_run_settings_applies_measure_overrides():
    settings = resolve_space("quick").run_settings()

    assert settings == RunSettings(windows=6, window_seconds=0.3, time_limit_seconds=180)


def test_run_settings_keeps_the_base_fields_not_overridden():
    base = RunSettings(seed=3, windows=9, checkpoints=2, curve_samples=512)

    settings = resolve_space("quick").run_settings(base)

    assert settings.seed == 3
    assert settings.checkpoints == 2
    assert settings.curve_samples == 512
    assert settings.windows == 6  # the space wins over the base
    assert base.windows == 9  # the base itself is untouched


def test_run_settings_without_measure_is_the_base():
    space = SearchSpace("s", {"batch_size": choices(32)})
    base = RunSettings(seed=1)

    assert space.run_settings() == RunSettings()
    assert space.run_settings(base) == base


def test_an_unreadable_file_is_named_with_the_reason(tmp_path, monkeypatch):
    path = tmp_path / "locked.toml"
    path.write_text('name = "x"\n', encoding="utf-8")

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(ConfigError) as info:
        load_space(path)

    assert str(info.value) == f"search space file {str(path)!r} cannot be read: Permission denied"


def test_a_file_that_is_not_utf8_is_named_with_the_byte(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "café"\n'.encode("latin-1"))

    with pytest.raises(ConfigError) as info:
        load_space(path)

    assert str(info.value) == (
        f"search space file {str(path)!r} is not UTF-8 text (TOML must be): byte b'\\xe9' at "
        "offset 11"
    )


def test_steps_per_execution_is_searched_from_a_list_or_a_range(tmp_path):
    path = tmp_path / "steps.toml"
    path.write_text(
        "[parameters]\nsteps_per_execution = [1, 8, 32]\nbatch_size = [32]\n", encoding="utf-8"
    )
    ranged = space_from_dict(
        {"parameters": {"steps_per_execution": {"low": 4, "high": 64, "multiple_of": 4}}}, "r"
    )

    assert load_space(path).parameters["steps_per_execution"] == choices(1, 8, 32)
    assert ranged.parameters["steps_per_execution"] == IntRange(4, 64, 4)
    assert ranged.size() == 16


@pytest.mark.parametrize("bad", [[0, 4], [1, 2.5], {"low": 0, "high": 8}])
def test_bad_steps_per_execution_names_the_key(bad):
    with pytest.raises(ConfigError, match=r"f\.toml: parameters\.steps_per_execution"):
        space_from_dict({"parameters": {"steps_per_execution": bad}}, "f.toml")


def test_thread_counts_are_searched_from_a_list_or_a_range(tmp_path):
    path = tmp_path / "threads.toml"
    path.write_text(
        "[parameters]\nintra_op_threads = [0, 1, 2]\ninter_op_threads = [0, 1]\n"
        "private_threadpool_size = { low = 0, high = 4 }\n",
        encoding="utf-8",
    )

    space = load_space(path)

    assert space.parameters["intra_op_threads"] == choices(0, 1, 2)
    assert space.parameters["private_threadpool_size"] == IntRange(0, 4, 1)
    assert space.size() == 3 * 2 * 5


@pytest.mark.parametrize("bad", [[-1, 2], [1, 2.5], ["auto"], {"low": -1, "high": 8}])
def test_bad_thread_counts_name_the_key_and_what_0_means(bad):
    with pytest.raises(ConfigError, match=r"f\.toml: parameters\.inter_op_threads.*0: the default"):
        space_from_dict({"parameters": {"inter_op_threads": bad}}, "f.toml")
