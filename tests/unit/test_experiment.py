"""Unit tests for autotune.experiment: Experiment validation, learning-rate scaling, loading by
reference and reference_of(). Nothing here builds a model, so nothing imports TensorFlow."""

from __future__ import annotations

import dataclasses
import math
import sys
import textwrap
from pathlib import Path

import pytest

from autotune.bundled import load_experiment, reference_of
from autotune.exceptions import ConfigError, ExperimentError
from autotune.experiment import LR_SCALINGS, Experiment


def make_experiment(**changes):
    """A valid Experiment with lambda factories; ``changes`` override single attributes."""
    arguments = {
        "name": "tiny",
        "model": lambda: None,
        "train_data": lambda: None,
        "validation_data": lambda: None,
        "loss": "mse",
        "optimizer": lambda learning_rate: None,
        "base_batch_size": 32,
        "base_learning_rate": 0.1,
    }
    arguments.update(changes)
    return Experiment(**arguments)


def experiment_definition(variable: str, name: str | None = None, **overrides: str) -> str:
    """Python source binding ``variable`` to a tiny Experiment; ``overrides`` maps keywords to
    replacement source text."""
    keywords = {
        "name": repr(name or variable),
        "model": "lambda: None",
        "train_data": "lambda: None",
        "validation_data": "lambda: None",
        "loss": "'mse'",
        "optimizer": "lambda learning_rate: None",
        "base_batch_size": "32",
        "base_learning_rate": "0.001",
        **overrides,
    }
    arguments = "".join(f"    {key}={value},\n" for key, value in keywords.items())
    return f"{variable} = Experiment(\n{arguments})\n"


def write_module(directory: Path, filename: str, *blocks: str) -> Path:
    path = directory / filename
    body = "".join(textwrap.dedent(block) for block in blocks)
    path.write_text("from autotune import Experiment\n\n" + body)
    return path


@pytest.fixture(autouse=True)
def forget_loaded_modules():
    """Removes modules a test loaded (experiment files, tmp_path modules) from sys.modules."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


# --------------------------------------------------------------------------------------------
# Experiment construction and validation
# --------------------------------------------------------------------------------------------


def test_experiment_defaults():
    experiment = make_experiment()

    assert experiment.lr_scaling == "linear"
    assert experiment.preprocess is None
    assert experiment.validation_preprocess is None
    assert tuple(experiment.metrics) == ()
    assert experiment.curve_samples is None
    assert experiment.description == ""


def test_experiment_accepts_array_pairs_as_data():
    experiment = make_experiment(train_data=([1, 2], [3, 4]), validation_data=([5], [6]))

    assert experiment.train_data == ([1, 2], [3, 4])


def test_experiment_accepts_every_optional_setting():
    experiment = make_experiment(
        lr_scaling="sqrt",
        preprocess=lambda x, y: (x, y),
        validation_preprocess=lambda x, y: (x, y),
        metrics=("accuracy",),
        curve_samples=1000,
        description="a tiny job",
    )

    assert experiment.lr_scaling == "sqrt"
    assert experiment.curve_samples == 1000


def test_experiment_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        make_experiment().name = "other"  # type: ignore[misc]


def test_experiments_compare_by_identity():
    assert make_experiment() != make_experiment()


def test_experiment_error_is_a_config_error():
    with pytest.raises(ConfigError):
        make_experiment(base_batch_size=0)


@pytest.mark.parametrize("name", ["", 3, None])
def test_experiment_rejects_bad_name(name):
    with pytest.raises(ExperimentError) as info:
        make_experiment(name=name)

    message = str(info.value)
    assert "Experiment.name must be a non-empty string" in message
    assert f"Received: {name!r}" in message


@pytest.mark.parametrize("attribute", ["model", "optimizer"])
@pytest.mark.parametrize("value", ["resnet", None, 3])
def test_experiment_rejects_non_callable_factories(attribute, value):
    with pytest.raises(ExperimentError) as info:
        make_experiment(**{attribute: value})

    message = str(info.value)
    assert message.startswith("Experiment 'tiny': ")
    assert f"{attribute} must be a callable factory" in message
    assert f"Received: {attribute}={value!r}" in message


@pytest.mark.parametrize("attribute", ["train_data", "validation_data"])
@pytest.mark.parametrize(
    ("value", "type_name"),
    [([1, 2], "list"), ((1, 2, 3), "tuple"), ((1,), "tuple"), (None, "NoneType"), ("x", "str")],
)
def test_experiment_rejects_bad_data(attribute, value, type_name):
    with pytest.raises(ExperimentError) as info:
        make_experiment(**{attribute: value})

    message = str(info.value)
    assert f"{attribute} must be a zero-argument function" in message
    assert f"Received: {type_name}" in message


@pytest.mark.parametrize("attribute", ["preprocess", "validation_preprocess"])
def test_experiment_rejects_non_callable_preprocess(attribute):
    with pytest.raises(ExperimentError) as info:
        make_experiment(**{attribute: "augment"})

    message = str(info.value)
    assert f"{attribute} must be a function (x, y) -> (x, y) or None" in message
    assert "Received: 'augment'" in message


@pytest.mark.parametrize("value", [0, -32, True, 32.0, "32", None])
def test_experiment_rejects_bad_base_batch_size(value):
    with pytest.raises(ExperimentError) as info:
        make_experiment(base_batch_size=value)

    message = str(info.value)
    assert "base_batch_size must be an integer >= 1" in message
    assert f"Received: {value!r}" in message


@pytest.mark.parametrize("value", [0, 0.0, -0.1, True, "0.1", None, math.nan])
def test_experiment_rejects_bad_base_learning_rate(value):
    with pytest.raises(ExperimentError) as info:
        make_experiment(base_learning_rate=value)

    message = str(info.value)
    assert "base_learning_rate must be a number > 0" in message
    assert f"Received: {value!r}" in message


def test_experiment_accepts_integer_base_learning_rate():
    assert make_experiment(base_learning_rate=1).base_learning_rate == 1


@pytest.mark.parametrize("value", ["log", "Linear", "", None])
def test_experiment_rejects_unknown_lr_scaling(value):
    with pytest.raises(ExperimentError) as info:
        make_experiment(lr_scaling=value)

    message = str(info.value)
    assert "lr_scaling must be one of ['linear', 'sqrt', 'none']" in message
    assert f"Received: lr_scaling={value!r}" in message


@pytest.mark.parametrize("value", [0, -1, 1.5, "100"])
def test_experiment_rejects_bad_curve_samples(value):
    with pytest.raises(ExperimentError) as info:
        make_experiment(curve_samples=value)

    message = str(info.value)
    assert "curve_samples must be an integer >= 1 or None" in message
    assert f"Received: {value!r}" in message


# --------------------------------------------------------------------------------------------
# learning_rate scaling
# --------------------------------------------------------------------------------------------


def test_lr_scalings_are_linear_sqrt_none():
    assert LR_SCALINGS == ("linear", "sqrt", "none")


@pytest.mark.parametrize(
    ("batch_size", "expected"), [(32, 0.1), (64, 0.2), (128, 0.4), (16, 0.05), (8, 0.025)]
)
def test_linear_scaling_is_proportional_to_batch_size(batch_size, expected):
    experiment = make_experiment(lr_scaling="linear", base_batch_size=32, base_learning_rate=0.1)

    assert experiment.learning_rate(batch_size) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("batch_size", "expected"), [(32, 0.1), (128, 0.2), (512, 0.4), (8, 0.05), (64, 0.1 * 2**0.5)]
)
def test_sqrt_scaling_follows_square_root_of_batch_ratio(batch_size, expected):
    experiment = make_experiment(lr_scaling="sqrt", base_batch_size=32, base_learning_rate=0.1)

    assert experiment.learning_rate(batch_size) == pytest.approx(expected)


@pytest.mark.parametrize("batch_size", [1, 32, 4096])
def test_no_scaling_keeps_the_base_learning_rate(batch_size):
    experiment = make_experiment(lr_scaling="none", base_batch_size=32, base_learning_rate=0.1)

    assert experiment.learning_rate(batch_size) == 0.1


@pytest.mark.parametrize("lr_scaling", LR_SCALINGS)
def test_every_scaling_returns_a_float_base_rate_at_base_batch(lr_scaling):
    experiment = make_experiment(lr_scaling=lr_scaling, base_batch_size=32, base_learning_rate=1)

    rate = experiment.learning_rate(32)

    assert rate == 1.0
    assert isinstance(rate, float)


# --------------------------------------------------------------------------------------------
# load_experiment: successes
# --------------------------------------------------------------------------------------------


def test_load_by_file_and_name(tmp_path):
    path = write_module(
        tmp_path, "jobs.py", experiment_definition("first"), experiment_definition("second")
    )

    experiment = load_experiment(f"{path}:second")

    assert isinstance(experiment, Experiment)
    assert experiment.name == "second"


def test_load_by_file_alone_picks_the_only_experiment(tmp_path):
    path = write_module(tmp_path, "job.py", experiment_definition("only", name="the-only-one"))

    assert load_experiment(str(path)).name == "the-only-one"


def test_load_by_file_alone_ignores_private_names(tmp_path):
    path = write_module(
        tmp_path, "job.py", experiment_definition("_draft"), experiment_definition("public")
    )

    assert load_experiment(str(path)).name == "public"


def test_load_by_relative_file_path(tmp_path, monkeypatch):
    write_module(tmp_path, "job.py", experiment_definition("only"))
    monkeypatch.chdir(tmp_path)

    assert load_experiment("job.py:only").name == "only"


def test_load_by_file_calls_a_factory_function(tmp_path):
    path = write_module(
        tmp_path,
        "job.py",
        """
        def build():
            return Experiment(
                name="built",
                model=lambda: None,
                train_data=lambda: None,
                validation_data=lambda: None,
                loss="mse",
                optimizer=lambda learning_rate: None,
                base_batch_size=8,
                base_learning_rate=0.01,
            )
        """,
    )

    assert load_experiment(f"{path}:build").name == "built"


def test_loading_the_same_file_twice_returns_the_same_object(tmp_path):
    path = write_module(tmp_path, "job.py", experiment_definition("only"))

    assert load_experiment(f"{path}:only") is load_experiment(str(path))


def test_load_by_module_and_name(tmp_path, monkeypatch):
    write_module(tmp_path, "autotune_test_jobs_module.py", experiment_definition("job"))
    monkeypatch.syspath_prepend(str(tmp_path))

    experiment = load_experiment("autotune_test_jobs_module:job")

    assert experiment is sys.modules["autotune_test_jobs_module"].job


def test_load_by_module_alone_picks_the_only_experiment(tmp_path, monkeypatch):
    write_module(tmp_path, "autotune_test_single_module.py", experiment_definition("job"))
    monkeypatch.syspath_prepend(str(tmp_path))

    assert load_experiment("autotune_test_single_module").name == "job"


# --------------------------------------------------------------------------------------------
# load_experiment: errors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", ":job"])
def test_load_missing_file_names_the_path(tmp_path, suffix):
    missing = tmp_path / "nowhere" / "missing.py"

    with pytest.raises(ExperimentError, match="does not exist") as info:
        load_experiment(f"{missing}{suffix}")

    assert str(missing.resolve()) in str(info.value)


def test_load_missing_name_lists_the_experiments_the_file_defines(tmp_path):
    path = write_module(
        tmp_path, "jobs.py", experiment_definition("beta"), experiment_definition("alpha")
    )

    with pytest.raises(ExperimentError) as info:
        load_experiment(f"{path}:gamma")

    message = str(info.value)
    assert "no name 'gamma'" in message
    assert "It defines: ['alpha', 'beta']" in message


def test_load_missing_name_in_file_without_experiments_says_so(tmp_path):
    path = write_module(tmp_path, "empty.py", "VALUE = 1\n")

    with pytest.raises(ExperimentError, match="It defines no Experiment"):
        load_experiment(f"{path}:job")


def test_load_file_alone_with_two_experiments_asks_for_a_name(tmp_path):
    path = write_module(
        tmp_path, "jobs.py", experiment_definition("second"), experiment_definition("first")
    )

    with pytest.raises(ExperimentError) as info:
        load_experiment(str(path))

    message = str(info.value)
    assert "defines 2 (['first', 'second'])" in message
    assert "use 'file.py:name'" in message


def test_load_file_alone_with_no_experiment_fails(tmp_path):
    path = write_module(tmp_path, "empty.py", "VALUE = 1\n")

    with pytest.raises(ExperimentError, match=r"defines 0 \(none\)"):
        load_experiment(str(path))


def test_load_file_with_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("x = 1\ny = 2\ndef broken(:\n    pass\n")

    with pytest.raises(ExperimentError) as info:
        load_experiment(f"{path}:x")

    message = str(info.value)
    assert "syntax error at line 3" in message
    assert str(path.resolve()) in message
    assert isinstance(info.value.__cause__, SyntaxError)


def test_load_file_that_raises_on_import_names_the_exception(tmp_path):
    path = write_module(tmp_path, "raises.py", "raise RuntimeError('boom')\n")

    with pytest.raises(ExperimentError) as info:
        load_experiment(f"{path}:job")

    message = str(info.value)
    assert "raised RuntimeError on import: boom" in message
    assert str(path.resolve()) in message
    assert isinstance(info.value.__cause__, RuntimeError)


def test_failed_file_import_is_retried_not_cached(tmp_path):
    path = write_module(tmp_path, "raises.py", "raise RuntimeError('boom')\n")

    for _ in range(2):  # a half-initialised module left in sys.modules would load the 2nd time
        with pytest.raises(ExperimentError, match="raised RuntimeError on import"):
            load_experiment(str(path))


def test_load_file_with_invalid_experiment_raises_its_experiment_error(tmp_path):
    path = write_module(tmp_path, "invalid.py", experiment_definition("job", base_batch_size="0"))

    with pytest.raises(ExperimentError, match="base_batch_size must be an integer >= 1"):
        load_experiment(f"{path}:job")


def test_load_missing_module_says_it_cannot_import_it():
    with pytest.raises(ExperimentError) as info:
        load_experiment("autotune_no_such_module_xyz:job")

    message = str(info.value)
    assert "cannot import module 'autotune_no_such_module_xyz'" in message
    assert isinstance(info.value.__cause__, ImportError)


def test_load_module_that_raises_on_import_is_an_experiment_error(tmp_path, monkeypatch):
    write_module(tmp_path, "autotune_test_raising_module.py", "raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    with pytest.raises(ExperimentError, match="RuntimeError"):
        load_experiment("autotune_test_raising_module:job")


def test_load_function_returning_none_fails(tmp_path):
    path = write_module(tmp_path, "job.py", "def build():\n    return None\n")

    with pytest.raises(ExperimentError) as info:
        load_experiment(f"{path}:build")

    message = str(info.value)
    assert "build() returned None" in message
    assert "must return an autotune.Experiment" in message


@pytest.mark.parametrize(
    ("source", "type_name"),
    [
        ("job = 3\n", "int"),
        ("job = 'mnist'\n", "str"),
        ("job = {'name': 'mnist'}\n", "dict"),
        ("def job():\n    return 'mnist'\n", "str"),
    ],
)
def test_load_name_bound_to_non_experiment_fails(tmp_path, source, type_name):
    path = write_module(tmp_path, "job.py", source)

    with pytest.raises(ExperimentError) as info:
        load_experiment(f"{path}:job")

    message = str(info.value)
    assert "'job' must be an autotune.Experiment" in message
    assert f"Received: {type_name}" in message


@pytest.mark.parametrize("reference", ["", "   ", None, 3])
def test_load_rejects_empty_or_non_string_reference(reference):
    with pytest.raises(ExperimentError, match="experiment reference must be"):
        load_experiment(reference)


def test_load_rejects_reference_with_nothing_before_colon():
    with pytest.raises(ExperimentError, match="has no file or module before ':'"):
        load_experiment(":job")


# --------------------------------------------------------------------------------------------
# reference_of
# --------------------------------------------------------------------------------------------


def test_reference_of_a_string_is_the_string():
    assert reference_of("path/to/job.py:job") == "path/to/job.py:job"


def test_reference_of_an_experiment_from_a_file_is_file_and_name(tmp_path):
    path = write_module(tmp_path, "jobs.py", experiment_definition("a"), experiment_definition("b"))
    experiment = load_experiment(f"{path}:b")

    reference = reference_of(experiment)

    assert reference == f"{path.resolve()}:b"
    assert load_experiment(reference) is experiment


def test_reference_of_an_experiment_from_a_module_is_module_and_name(tmp_path, monkeypatch):
    write_module(tmp_path, "autotune_test_ref_module.py", experiment_definition("job"))
    monkeypatch.syspath_prepend(str(tmp_path))
    experiment = load_experiment("autotune_test_ref_module:job")

    assert reference_of(experiment) == "autotune_test_ref_module:job"


def test_reference_of_an_experiment_not_at_module_top_level_fails():
    experiment = make_experiment(name="local-only")

    with pytest.raises(ExperimentError) as info:
        reference_of(experiment)

    message = str(info.value)
    assert "'local-only' is not a top-level name of any module" in message
    assert "'file.py:name'" in message


@pytest.mark.parametrize("value", [3, None, Path("job.py")])
def test_reference_of_rejects_other_types(value):
    with pytest.raises(ExperimentError, match=f"Received: {type(value).__name__}"):
        reference_of(value)
