"""Unit tests for autotune.bundled: the experiments and spaces shipped inside the package, reached
by short name from the library, the CLI and the old checkout paths; and the trial process's path
(a checkout's root on it, an installed package's site-packages not). Nothing builds a model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import autotune
from autotune.bundled import (
    DEFAULT_EXPERIMENT,
    EXPERIMENTS,
    SPACES,
    experiment_reference,
    load_experiment,
    reference_of,
    resolve_space,
    space_file,
    space_names,
)
from autotune.cli import main
from autotune.exceptions import ConfigError, ExperimentError
from autotune.experiment import Experiment

PACKAGE = Path(autotune.__file__).resolve().parent
CHECKOUT_EXPERIMENTS = PACKAGE.parent / "experiments"


def test_the_bundled_files_live_in_the_package_and_the_top_level_spaces_folder() -> None:
    # In a checkout the spaces are read from search_spaces/ (the wheel ships them as
    # autotune/bundled/spaces/: tests/unit/test_packaging.py).
    assert PACKAGE.parent / "search_spaces" == SPACES
    assert space_names() == ["cpu", "gpu", "input", "keras3", "quick"]
    assert DEFAULT_EXPERIMENT in EXPERIMENTS == ("digits_cnn", "tabular_mlp", "transformer")
    for name in EXPERIMENTS:
        assert (PACKAGE / "bundled" / f"{name}.py").is_file()


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_a_short_name_stands_for_the_bundled_module(name: str) -> None:
    reference = f"autotune.bundled.{name}:experiment"

    assert experiment_reference(name) == reference
    assert experiment_reference(f" {name} ") == reference
    assert reference_of(name) == reference
    loaded = load_experiment(name)
    assert isinstance(loaded, Experiment) and loaded.name == name
    assert load_experiment(reference) is loaded
    assert reference_of(loaded) == reference


@pytest.mark.parametrize(
    "reference",
    ["digits_cnn:experiment", "digits_cnn.py", "path/to/digits_cnn.py", "my.module:job", "other"],
)
def test_other_references_are_left_as_they_are(reference: str) -> None:
    assert experiment_reference(reference) == reference
    assert reference_of(reference) == reference


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_the_checkout_path_re_exports_the_same_experiment(name: str) -> None:
    shim = CHECKOUT_EXPERIMENTS / f"{name}.py"
    if not shim.is_file():
        pytest.skip("not a checkout")

    assert load_experiment(str(shim)) is load_experiment(name)


def test_bundled_experiments_import_without_tensorflow() -> None:
    code = (
        "import sys\n"
        "from autotune.bundled import load_experiment\n"
        f"for name in {EXPERIMENTS!r}:\n"
        "    load_experiment(name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tensorflow', 'keras')))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )

    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "[]"


def test_an_unknown_module_name_lists_the_bundled_experiments() -> None:
    with pytest.raises(ExperimentError) as info:
        load_experiment("autotune_no_such_experiment_xyz")

    assert "a bundled experiment's name (digits_cnn, tabular_mlp, transformer)" in str(info.value)


# --------------------------------------------------------------------------------------------
# Spaces
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["quick", "cpu", "gpu", "input"])
def test_space_file_finds_each_bundled_space(name: str) -> None:
    assert space_file(name) == SPACES / f"{name}.toml"


@pytest.mark.parametrize("name", ["", "nope", "quick.toml", "../bundled/spaces/quick", "a/quick"])
def test_space_file_is_none_for_anything_else(name: str) -> None:
    assert space_file(name) is None


def test_an_unknown_space_name_lists_the_bundled_spaces(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)

    with pytest.raises(ConfigError) as info:
        resolve_space("nope")

    assert str(info.value) == (
        "search space file 'nope' does not exist, and no bundled space has that name "
        "(bundled: cpu, gpu, input, keras3, quick)"
    )


# --------------------------------------------------------------------------------------------
# The command and the trial process's path
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "trial"])
def test_the_commands_default_to_the_bundled_digits_cnn_and_name_the_others(command: str) -> None:
    result = CliRunner().invoke(main, [command, "--help"])

    assert result.exit_code == 0, result.output
    assert "digits_cnn, tabular_mlp, transformer" in " ".join(result.output.split())


def test_run_help_names_every_bundled_space() -> None:
    result = CliRunner().invoke(main, ["run", "--help"])

    listed = "quick, cpu, gpu, input, keras3"
    assert f"a bundled space: {listed}." in " ".join(result.output.split())
    assert sorted(listed.split(", ")) == space_names()


def test_the_trial_process_gets_a_checkout_root_on_its_path(monkeypatch) -> None:
    from autotune.trial import isolation

    if isolation._source_root() is None:
        pytest.skip("autotune is installed here, not imported from a checkout")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    root = str(PACKAGE.parent)

    assert isolation.child_environment()["PYTHONPATH"].split(os.pathsep) == [root, "/elsewhere"]


def test_an_installed_package_adds_nothing_to_the_trial_process_path(monkeypatch) -> None:
    from autotune.trial import isolation

    monkeypatch.setattr(isolation.site, "getsitepackages", lambda: [str(PACKAGE.parent)])
    monkeypatch.delenv("PYTHONPATH", raising=False)

    assert isolation._source_root() is None
    assert "PYTHONPATH" not in isolation.child_environment()
