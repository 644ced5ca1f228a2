"""Unit tests for autotune.config: TrialConfig and RunSettings validation and round trips."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from autotune import settings
from autotune.config import PRECISIONS, RunSettings, TrialConfig
from autotune.exceptions import ConfigError

# --------------------------------------------------------------------------------------------
# TrialConfig: construction
# --------------------------------------------------------------------------------------------


def test_trial_config_defaults():
    config = TrialConfig(batch_size=32)

    assert config.precision == "float32"
    assert config.jit_compile is False
    assert config.prefetch == "autotune"
    assert config.num_parallel_calls == "autotune"
    assert config.shuffle_buffer == 1024


def test_trial_config_accepts_every_setting_explicitly():
    config = TrialConfig(
        batch_size=256,
        precision="mixed_bfloat16",
        jit_compile=True,
        prefetch=4,
        num_parallel_calls=8,
        shuffle_buffer=1,
    )

    assert config.batch_size == 256
    assert config.precision == "mixed_bfloat16"
    assert config.jit_compile is True
    assert config.prefetch == 4
    assert config.num_parallel_calls == 8
    assert config.shuffle_buffer == 1


@pytest.mark.parametrize("precision", PRECISIONS)
def test_trial_config_accepts_every_precision(precision):
    assert TrialConfig(batch_size=8, precision=precision).precision == precision


def test_precisions_are_the_three_keras_policies():
    assert set(PRECISIONS) == {"float32", "mixed_float16", "mixed_bfloat16"}


def test_trial_config_baseline_is_float32_without_xla_and_default_pipeline():
    assert TrialConfig.baseline(64) == TrialConfig(
        batch_size=64,
        precision="float32",
        jit_compile=False,
        prefetch="autotune",
        num_parallel_calls="autotune",
        shuffle_buffer=1024,
    )


def test_trial_config_baseline_validates_batch_size():
    with pytest.raises(ConfigError, match="batch_size"):
        TrialConfig.baseline(0)


def test_trial_config_is_frozen():
    config = TrialConfig(batch_size=32)

    with pytest.raises(dataclasses.FrozenInstanceError):
        config.batch_size = 64  # type: ignore[misc]


def test_equal_trial_configs_are_equal_and_hash_alike():
    first = TrialConfig(batch_size=32, precision="mixed_float16", prefetch=2)
    second = TrialConfig(batch_size=32, precision="mixed_float16", prefetch=2)

    assert first == second
    assert hash(first) == hash(second)
    assert first != TrialConfig(batch_size=32, precision="mixed_float16", prefetch=3)


def test_describe_names_every_setting():
    text = TrialConfig(
        batch_size=128,
        precision="mixed_bfloat16",
        jit_compile=True,
        prefetch=2,
        num_parallel_calls="autotune",
        shuffle_buffer=64,
    ).describe()

    assert text == "bs=128 mixed_bfloat16 xla prefetch=2 parallel=autotune shuffle=64"


def test_describe_says_no_xla_without_jit_compile():
    assert " no-xla " in TrialConfig(batch_size=16).describe()


# --------------------------------------------------------------------------------------------
# TrialConfig: round trips
# --------------------------------------------------------------------------------------------

# keyword arguments, so that a validation change fails these tests rather than collection
ROUND_TRIP_SETTINGS = [
    {"batch_size": 1},
    {"batch_size": 32, "precision": "mixed_float16", "jit_compile": True},
    {"batch_size": 512, "prefetch": 0, "num_parallel_calls": 1, "shuffle_buffer": 1},
    {
        "batch_size": 64,
        "precision": "mixed_bfloat16",
        "prefetch": "autotune",
        "num_parallel_calls": 16,
        "shuffle_buffer": 10_000,
        "steps_per_execution": 64,
        "intra_op_threads": 2,
        "inter_op_threads": 1,
        "private_threadpool_size": 4,
    },
]


@pytest.mark.parametrize("settings", ROUND_TRIP_SETTINGS)
def test_trial_config_json_round_trip(settings):
    config = TrialConfig(**settings)

    assert TrialConfig.from_json(config.to_json()) == config


@pytest.mark.parametrize("settings", ROUND_TRIP_SETTINGS)
def test_trial_config_dict_round_trip(settings):
    config = TrialConfig(**settings)

    assert TrialConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "4", 1 << 13])
def test_trial_config_rejects_bad_steps_per_execution(value):
    with pytest.raises(ConfigError, match=r"steps_per_execution.*Received: steps_per_execution="):
        TrialConfig(batch_size=32, steps_per_execution=value)


def test_steps_per_execution_multiplies_the_samples_per_call_and_shows_only_when_not_1():
    config = TrialConfig(batch_size=32, steps_per_execution=16)

    assert config.samples_per_call == 512
    assert config.describe().endswith("shuffle=1024 steps=16")
    assert TrialConfig(batch_size=32).describe().endswith("shuffle=1024")
    assert TrialConfig(batch_size=32).samples_per_call == 32


@pytest.mark.parametrize(
    "name", ["intra_op_threads", "inter_op_threads", "private_threadpool_size"]
)
@pytest.mark.parametrize("value", [-1, 1.5, True, "2", (1 << 10) + 1])
def test_trial_config_rejects_bad_thread_counts(name, value):
    with pytest.raises(ConfigError, match=rf"TrialConfig\.{name} must be an integer >= 0"):
        TrialConfig(batch_size=32, **{name: value})


def test_thread_counts_show_only_where_set_and_default_to_tensorflows():
    config = TrialConfig(batch_size=32, intra_op_threads=1, private_threadpool_size=2)

    assert config.describe().endswith("shuffle=1024 intra=1 data-pool=2")
    assert TrialConfig(batch_size=32).intra_op_threads == 0
    stored = {"batch_size": 64, "precision": "float32", "jit_compile": False}
    assert TrialConfig.from_dict(stored).inter_op_threads == 0  # stored before threads existed


def test_a_config_stored_before_steps_per_execution_reads_as_one_step_per_call():
    stored = {"batch_size": 64, "precision": "float32", "jit_compile": False}

    assert TrialConfig.from_dict(stored).steps_per_execution == 1


def test_trial_config_to_dict_has_every_field():
    assert TrialConfig(batch_size=32, prefetch=3).to_dict() == {
        "batch_size": 32,
        "precision": "float32",
        "jit_compile": False,
        "prefetch": 3,
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


def test_trial_config_to_json_is_a_json_object_with_sorted_keys():
    text = TrialConfig(batch_size=32).to_json()

    data = json.loads(text)
    assert data == TrialConfig(batch_size=32).to_dict()
    assert list(data) == sorted(data)


def test_trial_config_to_json_is_identical_for_equal_configs():
    first = TrialConfig(batch_size=8, precision="mixed_float16", jit_compile=True)
    second = TrialConfig(jit_compile=True, precision="mixed_float16", batch_size=8)

    assert first.to_json() == second.to_json()


def test_trial_config_from_dict_fills_defaults_for_missing_optional_keys():
    assert TrialConfig.from_dict({"batch_size": 16, "jit_compile": True}) == TrialConfig(
        batch_size=16, jit_compile=True
    )


def test_trial_config_from_json_validates_values():
    with pytest.raises(ConfigError, match=r"Received: precision='fp8'"):
        TrialConfig.from_json('{"batch_size": 32, "precision": "fp8"}')


# --------------------------------------------------------------------------------------------
# TrialConfig: validation errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "received"),
    [
        (0, "batch_size=0"),
        (-8, "batch_size=-8"),
        (True, "batch_size=True"),
        (False, "batch_size=False"),
        (32.0, "batch_size=32.0"),
        (1.5, "batch_size=1.5"),
        ("32", "batch_size='32'"),
        (None, "batch_size=None"),
    ],
)
def test_trial_config_rejects_bad_batch_size(value, received):
    with pytest.raises(ConfigError) as info:
        TrialConfig(batch_size=value)

    message = str(info.value)
    assert "TrialConfig.batch_size must be an integer >= 1" in message
    assert f"Received: {received}" in message


def test_trial_config_rejects_unknown_precision_naming_it():
    with pytest.raises(ConfigError) as info:
        TrialConfig(batch_size=32, precision="fp8")  # type: ignore[arg-type]

    message = str(info.value)
    assert "Received: precision='fp8'" in message
    assert "TrialConfig.precision must be one of" in message
    for precision in PRECISIONS:
        assert precision in message


@pytest.mark.parametrize("precision", ["Float32", "float16", "bfloat16", "", None])
def test_trial_config_rejects_other_precisions(precision):
    with pytest.raises(ConfigError, match=r"Received: precision="):
        TrialConfig(batch_size=32, precision=precision)


@pytest.mark.parametrize("value", [1, 0, "true", "false", None, 1.0])
def test_trial_config_rejects_non_bool_jit_compile(value):
    with pytest.raises(ConfigError) as info:
        TrialConfig(batch_size=32, jit_compile=value)

    message = str(info.value)
    assert "TrialConfig.jit_compile must be true or false" in message
    assert f"Received: jit_compile={value!r}" in message


@pytest.mark.parametrize("name", ["prefetch", "num_parallel_calls"])
def test_tunable_settings_accept_autotune(name):
    assert getattr(TrialConfig(batch_size=32, **{name: "autotune"}), name) == "autotune"


@pytest.mark.parametrize("name", ["prefetch", "num_parallel_calls"])
def test_tunable_settings_accept_positive_int(name):
    assert getattr(TrialConfig(batch_size=32, **{name: 7}), name) == 7


def test_prefetch_accepts_zero():
    assert TrialConfig(batch_size=32, prefetch=0).prefetch == 0


@pytest.mark.parametrize(
    ("name", "value", "minimum"),
    [
        ("prefetch", -1, 0),
        ("num_parallel_calls", 0, 1),
        ("num_parallel_calls", -1, 1),
    ],
)
def test_tunable_settings_reject_ints_below_minimum(name, value, minimum):
    with pytest.raises(ConfigError) as info:
        TrialConfig(batch_size=32, **{name: value})

    message = str(info.value)
    assert f"TrialConfig.{name} must be 'autotune' or an integer >= {minimum}" in message
    assert f"Received: {name}={value!r}" in message


@pytest.mark.parametrize("name", ["prefetch", "num_parallel_calls"])
@pytest.mark.parametrize("value", ["auto", "AUTOTUNE", "Autotune", " autotune", "4", "", None])
def test_tunable_settings_reject_other_strings_and_none(name, value):
    with pytest.raises(ConfigError, match=rf"Received: {name}="):
        TrialConfig(batch_size=32, **{name: value})


@pytest.mark.parametrize("name", ["prefetch", "num_parallel_calls"])
@pytest.mark.parametrize("value", [2.0, 2.5, True])
def test_tunable_settings_reject_floats_and_bools(name, value):
    with pytest.raises(ConfigError, match=rf"Received: {name}={value!r}"):
        TrialConfig(batch_size=32, **{name: value})


def test_shuffle_buffer_accepts_one_to_disable_shuffling():
    assert TrialConfig(batch_size=32, shuffle_buffer=1).shuffle_buffer == 1


@pytest.mark.parametrize("value", [0, -1, True, 1.5, 1024.0, "autotune", None])
def test_shuffle_buffer_rejects_non_positive_and_non_int(value):
    with pytest.raises(ConfigError) as info:
        TrialConfig(batch_size=32, shuffle_buffer=value)

    message = str(info.value)
    assert "TrialConfig.shuffle_buffer must be an integer >= 1" in message
    assert f"Received: shuffle_buffer={value!r}" in message


def test_config_error_is_a_value_error():
    with pytest.raises(ValueError):
        TrialConfig(batch_size=0)


# --------------------------------------------------------------------------------------------
# TrialConfig: from_dict / from_json input errors
# --------------------------------------------------------------------------------------------


def test_from_dict_rejects_unknown_keys_naming_them():
    with pytest.raises(ConfigError) as info:
        TrialConfig.from_dict({"batch_size": 32, "xla": True, "amp": "on"})

    message = str(info.value)
    assert "unknown key(s) ['amp', 'xla']" in message
    assert "batch_size" in message  # the expected keys are listed


def test_from_dict_rejects_missing_batch_size_as_config_error():
    with pytest.raises(ConfigError, match="batch_size"):
        TrialConfig.from_dict({"precision": "float32"})


def test_from_dict_missing_key_error_keeps_the_type_error_as_cause():
    with pytest.raises(ConfigError) as info:
        TrialConfig.from_dict({})

    assert isinstance(info.value.__cause__, TypeError)


@pytest.mark.parametrize(
    ("data", "type_name"),
    [([1, 2], "list"), (42, "int"), ("batch_size=32", "str"), (None, "NoneType")],
)
def test_from_dict_rejects_non_mapping(data, type_name):
    with pytest.raises(ConfigError, match="must be a JSON object") as info:
        TrialConfig.from_dict(data)

    assert f"Received: {type_name}" in str(info.value)


@pytest.mark.parametrize("text", ["[1, 2]", "42", '"batch_size"', "null", "true"])
def test_from_json_rejects_non_object_json(text):
    with pytest.raises(ConfigError, match="must be a JSON object"):
        TrialConfig.from_json(text)


@pytest.mark.parametrize("text", ["", "{", "{batch_size: 32}", "{'batch_size': 32}", "32 x"])
def test_from_json_rejects_invalid_json(text):
    with pytest.raises(ConfigError, match="is not valid JSON") as info:
        TrialConfig.from_json(text)

    assert f"Received: {text!r}" in str(info.value)
    assert isinstance(info.value.__cause__, json.JSONDecodeError)


def test_from_json_rejects_unknown_keys():
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['bogus'\]"):
        TrialConfig.from_json('{"batch_size": 32, "bogus": 1}')


def test_from_json_names_the_source_in_errors():
    with pytest.raises(ConfigError, match=r"^space\.json is not valid JSON"):
        TrialConfig.from_json("{", source="space.json")
    with pytest.raises(ConfigError, match=r"^space\.json must be a JSON object"):
        TrialConfig.from_json("[]", source="space.json")
    with pytest.raises(ConfigError, match=r"^space\.json has unknown key"):
        TrialConfig.from_json('{"batch_size": 1, "x": 2}', source="space.json")


def test_default_source_is_trial_config():
    with pytest.raises(ConfigError, match=r"^trial config must be a JSON object"):
        TrialConfig.from_dict([])


# --------------------------------------------------------------------------------------------
# RunSettings
# --------------------------------------------------------------------------------------------


def test_run_settings_defaults_are_valid():
    settings = RunSettings()

    assert settings.measure_throughput is True
    assert settings.curve is True
    assert settings.warmup_min_steps <= settings.warmup_max_steps
    assert settings.stop_below_samples_per_second is None


def test_run_settings_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunSettings().seed = 3  # type: ignore[misc]


def test_run_settings_dict_round_trip():
    settings = RunSettings(
        seed=7,
        measure_throughput=False,
        warmup_min_steps=2,
        warmup_max_steps=2,
        warmup_max_seconds=1.5,
        window_seconds=0.25,
        min_window_steps=1,
        windows=3,
        curve=True,
        curve_samples=5000,
        checkpoints=2,
        time_limit_seconds=30,
        memory_limit_bytes=2**30,
        stop_below_samples_per_second=123.5,
    )

    assert RunSettings.from_dict(settings.to_dict()) == settings


def test_run_settings_dict_survives_json():
    settings = RunSettings(seed=3, curve_samples=100, stop_below_samples_per_second=10.0)

    assert RunSettings.from_dict(json.loads(json.dumps(settings.to_dict()))) == settings


def test_run_settings_from_dict_fills_defaults():
    assert RunSettings.from_dict({"seed": 4}) == RunSettings(seed=4)


def test_run_settings_from_dict_rejects_unknown_keys():
    with pytest.raises(ConfigError, match=r"^run settings has unknown key\(s\) \['warmup'\]"):
        RunSettings.from_dict({"warmup": 10})


def test_run_settings_from_dict_rejects_non_mapping():
    with pytest.raises(ConfigError, match=r"^run settings must be a JSON object"):
        RunSettings.from_dict(["seed", 1])


def test_run_settings_replace_returns_a_changed_copy():
    settings = RunSettings()
    changed = settings.replace(seed=9, windows=3)

    assert (changed.seed, changed.windows) == (9, 3)
    assert (settings.seed, settings.windows) == (0, 7)


def test_run_settings_replace_validates():
    with pytest.raises(ConfigError, match="windows"):
        RunSettings().replace(windows=0)


def test_warmup_min_steps_above_max_is_rejected():
    with pytest.raises(ConfigError) as info:
        RunSettings(warmup_min_steps=10, warmup_max_steps=9)

    message = str(info.value)
    assert "warmup_min_steps <= warmup_max_steps" in message
    assert "warmup_min_steps=10, warmup_max_steps=9" in message


def test_warmup_min_steps_equal_to_max_is_allowed():
    settings = RunSettings(warmup_min_steps=10, warmup_max_steps=10)

    assert settings.warmup_min_steps == settings.warmup_max_steps == 10


@pytest.mark.parametrize("name", ["warmup_max_seconds", "window_seconds", "time_limit_seconds"])
@pytest.mark.parametrize("value", [0, 0.0, -1.0, math.nan, math.inf, True, "1", None])
def test_seconds_must_be_positive_numbers(name, value):
    with pytest.raises(ConfigError) as info:
        RunSettings(**{name: value})

    message = str(info.value)
    assert f"RunSettings.{name} must be a number of seconds > 0" in message
    assert f"Received: {name}={value!r}" in message


@pytest.mark.parametrize("name", ["warmup_max_seconds", "window_seconds", "time_limit_seconds"])
def test_seconds_accept_ints_and_small_floats(name):
    assert getattr(RunSettings(**{name: 2}), name) == 2
    assert getattr(RunSettings(**{name: 0.001}), name) == 0.001


def test_measure_throughput_and_curve_cannot_both_be_off():
    with pytest.raises(ConfigError) as info:
        RunSettings(measure_throughput=False, curve=False)

    message = str(info.value)
    assert "at least one of measure_throughput and curve" in message
    assert "Received: measure_throughput=False, curve=False" in message


@pytest.mark.parametrize(
    ("measure_throughput", "curve"), [(True, False), (False, True), (True, True)]
)
def test_either_measure_throughput_or_curve_is_enough(measure_throughput, curve):
    settings = RunSettings(measure_throughput=measure_throughput, curve=curve)

    assert (settings.measure_throughput, settings.curve) == (measure_throughput, curve)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, "100", [100]])
def test_stop_below_must_be_finite_number(value):
    with pytest.raises(ConfigError) as info:
        RunSettings(stop_below_samples_per_second=value)

    message = str(info.value)
    assert "stop_below_samples_per_second must be a finite number or None" in message
    assert f"Received: stop_below_samples_per_second={value!r}" in message


@pytest.mark.parametrize("value", [None, 0, 839, 78676.5])
def test_stop_below_accepts_none_and_finite_numbers(value):
    assert RunSettings(stop_below_samples_per_second=value).stop_below_samples_per_second == value


@pytest.mark.parametrize(
    ("name", "value", "minimum"),
    [
        ("seed", -1, 0),
        ("seed", 1.0, 0),
        ("seed", True, 0),
        ("warmup_min_steps", 0, 1),
        ("warmup_max_steps", 1, 2),
        ("min_window_steps", 0, 1),
        ("windows", 0, 1),
        ("windows", 7.0, 1),
        ("checkpoints", 0, 1),
        ("curve_samples", 0, 1),
        ("curve_samples", 10.5, 1),
        ("memory_limit_bytes", 0, 1),
        ("memory_limit_bytes", -1, 1),
    ],
)
def test_run_settings_integer_fields_are_validated(name, value, minimum):
    with pytest.raises(ConfigError) as info:
        RunSettings(**{name: value})

    message = str(info.value)
    assert f"RunSettings.{name} must be an integer >= {minimum}" in message
    assert f"Received: {name}={value!r}" in message


def test_run_settings_optional_integers_accept_none_and_positive_values():
    assert RunSettings(curve_samples=None, memory_limit_bytes=None).curve_samples is None
    settings = RunSettings(curve_samples=1, memory_limit_bytes=1)
    assert (settings.curve_samples, settings.memory_limit_bytes) == (1, 1)


def test_seed_zero_is_allowed():
    assert RunSettings(seed=0).seed == 0


def test_a_one_step_warmup_is_refused_because_the_first_step_compiles():
    with pytest.raises(ConfigError, match=r"warmup_max_steps must be an integer >= 2"):
        RunSettings(warmup_min_steps=1, warmup_max_steps=1)


def test_process_differences_name_what_one_process_cannot_hold_twice() -> None:
    base = TrialConfig(batch_size=32)
    # What a trial process fixes at its start: the backend and TensorFlow's thread pools.
    assert settings.process_fixed() == ("intra_op_threads", "inter_op_threads", "backend")
    # Everything a model or a pipeline carries can differ within one process.
    other = TrialConfig(
        batch_size=64, precision="mixed_bfloat16", jit_compile=True, steps_per_execution=8,
        private_threadpool_size=2, float32_layers="norms", lr_rule="sqrt",
    )  # fmt: skip
    assert base.process_differences(other) == []
    threads = TrialConfig(batch_size=32, intra_op_threads=2, inter_op_threads=1)
    assert base.process_differences(threads) == [
        "intra_op_threads: 0 vs 2",
        "inter_op_threads: 0 vs 1",
    ]
    jax = TrialConfig(batch_size=32, backend="jax", jit_compile=True)
    assert jax.process_differences(base) == ["backend: 'jax' vs 'tensorflow'"]
