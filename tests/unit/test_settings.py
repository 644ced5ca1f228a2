"""Unit tests for autotune.settings, the one table of tunable settings: it agrees with
TrialConfig, what derives from it follows it, and a setting added to it appears in a search space,
the ``trial --help`` and the JSON schema without another list to edit. No TensorFlow here."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path
from typing import get_args, get_type_hints

import pytest
from click.testing import CliRunner

from autotune import settings
from autotune.analysis import attribution
from autotune.cli import main
from autotune.config import LIMITS, THREAD_SETTINGS, TrialConfig, Tunable
from autotune.exceptions import ConfigError
from autotune.settings import SETTINGS, Setting
from autotune.space import PARAMETERS, describe_parameters, load_space
from autotune.study import start
from autotune.views.study_json import config_schema

#: A setting that no code applies: what a new one looks like before the trial applies it.
FAKE = Setting(
    "fake_knob",
    int,
    3,
    help="a knob for tests.",
    label="fake knob",
    summary="a knob for tests",
    minimum=1,
    maximum=8,
    changes_learning=False,
)


@pytest.fixture
def with_fake(monkeypatch: pytest.MonkeyPatch) -> Setting:
    """The table with :data:`FAKE` added at its end."""
    monkeypatch.setattr(settings, "SETTINGS", (*SETTINGS, FAKE))
    return FAKE


# --------------------------------------------------------------------------------------------
# The table and TrialConfig
# --------------------------------------------------------------------------------------------


def test_the_table_has_one_setting_per_trial_config_field_in_field_order() -> None:
    fields = dataclasses.fields(TrialConfig)
    assert settings.names() == tuple(f.name for f in fields)
    for field, setting in zip(fields, SETTINGS, strict=True):
        required = field.default is dataclasses.MISSING
        assert setting.default == (None if required else field.default), setting.name


def test_each_setting_has_the_type_and_choices_of_its_field() -> None:
    hints = get_type_hints(TrialConfig)
    for setting in SETTINGS:
        hint = hints[setting.name]
        if setting.choices:
            assert setting.kind is str
            assert get_args(hint) == setting.choices, setting.name
        elif setting.autotune:
            assert (setting.kind, hint) == (int, Tunable), setting.name
        else:
            assert hint is setting.kind, setting.name


def test_each_default_is_accepted_and_the_baseline_is_made_of_them() -> None:
    baseline = TrialConfig.baseline(32).to_dict()
    for setting in SETTINGS:
        if setting.default is not None:
            assert setting.accepts(setting.default), setting.name
            assert baseline[setting.name] == setting.default
    assert settings.json_schema()["required"] == ["batch_size"]


def test_every_setting_says_what_it_is_and_how_it_is_shown() -> None:
    assert len({s.name for s in SETTINGS}) == len(SETTINGS)
    for setting in SETTINGS:
        assert setting.help and setting.label and setting.summary, setting.name
        if setting.kind is int:
            assert 0 <= setting.minimum < setting.maximum, setting.name


# --------------------------------------------------------------------------------------------
# What derives from the table
# --------------------------------------------------------------------------------------------


def test_the_derived_names_are_the_tables() -> None:
    assert THREAD_SETTINGS == ("intra_op_threads", "inter_op_threads", "private_threadpool_size")
    assert {k: v for k, v in LIMITS.items() if k != "seed"} == settings.limits()
    assert LIMITS["seed"] == 2**32 - 1
    assert settings.draw_order() == PARAMETERS
    drawn = (  # the order a space draws them in
        "backend",
        "precision",
        "jit_compile",
        "batch_size",
        "prefetch",
        "num_parallel_calls",
        "shuffle_buffer",
        "steps_per_execution",
        *THREAD_SETTINGS,
        "lr_rule",
        "float32_layers",
    )
    assert drawn == PARAMETERS
    assert settings.names() == attribution.SETTINGS
    assert attribution.CURVE_NEUTRAL == ("prefetch", "num_parallel_calls", "steps_per_execution")
    assert start.FACTORS == (
        "precision",
        "jit_compile",
        "batch_size",
        "steps_per_execution",
        "backend",
    )


def test_a_setting_says_the_rule_and_the_value_received() -> None:
    prefetch = settings.setting("prefetch")
    with pytest.raises(ConfigError) as info:
        prefetch.check("TrialConfig", -1)
    assert str(info.value) == (
        "TrialConfig.prefetch must be 'autotune' or an integer >= 0 and <= 4,096. "
        "Received: prefetch=-1"
    )
    threads = settings.setting("inter_op_threads")
    assert threads.expected(explain_zero=True) == "an integer >= 0 (0: the default) and <= 1,024"
    assert settings.setting("jit_compile").expected() == "true or false"
    assert not settings.setting("batch_size").accepts(True)
    with pytest.raises(KeyError):
        settings.setting("nope")


def test_the_json_schema_describes_each_setting() -> None:
    schema = config_schema()
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == list(settings.names())
    assert schema["properties"]["precision"]["enum"] == list(settings.setting("precision").choices)
    assert schema["properties"]["jit_compile"] == {
        "title": "XLA",
        "description": settings.setting("jit_compile").help,
        "type": "boolean",
        "default": False,
    }
    assert schema["properties"]["prefetch"]["oneOf"][1] == {"const": "autotune"}


# --------------------------------------------------------------------------------------------
# A setting added to the table
# --------------------------------------------------------------------------------------------


def test_an_added_setting_can_be_searched_by_a_space_file(tmp_path: Path, with_fake) -> None:
    path = tmp_path / "space.toml"
    path.write_text(
        textwrap.dedent(
            """
            [parameters]
            batch_size = [32]
            fake_knob = { low = 2, high = 8, multiple_of = 2 }
            """
        ),
        encoding="utf-8",
    )
    space = load_space(path)
    assert space.size() == 4
    assert "fake_knob: 2..8 step 2" in describe_parameters(space)
    assert settings.draw_order()[-1] == "fake_knob"

    path.write_text("[parameters]\nfake_knob = [1, 9]\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_space(path)
    assert str(info.value) == (
        f"{path}: parameters.fake_knob[1] must be an integer >= 1 and <= 8. Received: 9"
    )


def test_an_added_setting_is_listed_by_trial_help(with_fake) -> None:
    result = CliRunner().invoke(main, ["trial", "--help"])
    assert result.exit_code == 0, result.output
    help_text = " ".join(result.output.split())  # as wrapped to the terminal
    assert "Keys: batch_size, precision, jit_compile," in help_text
    assert "private_threadpool_size, backend, lr_rule, float32_layers, fake_knob." in help_text


def test_an_added_setting_is_in_the_json_schema_and_the_derived_sets(with_fake) -> None:
    schema = config_schema()
    assert schema["properties"]["fake_knob"] == {
        "title": "fake knob",
        "description": "a knob for tests.",
        "type": "integer",
        "minimum": 1,
        "maximum": 8,
        "default": 3,
    }
    assert "fake_knob" not in schema["required"]
    assert settings.curve_neutral()[-1] == "fake_knob"
    assert settings.limits()["fake_knob"] == 8
    assert "fake_knob" not in settings.probed()
