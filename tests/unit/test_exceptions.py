"""Unit tests for autotune.exceptions: the error tiers and TrialFailure's kinds."""

from __future__ import annotations

import pytest

from autotune.exceptions import (
    FAILURE_KINDS,
    AutotuneError,
    ConfigError,
    ExperimentError,
    TrialFailure,
)


def test_failure_kinds_are_the_documented_eight():
    assert set(FAILURE_KINDS) == {
        "signal",
        "exit",
        "timeout",
        "oom",
        "xla_compile",
        "nan",
        "loss_scale",
        "exception",
    }


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_trial_failure_accepts_every_valid_kind(kind):
    failure = TrialFailure(kind, "something happened", log_tail="last line")

    assert failure.kind == kind
    assert failure.message == "something happened"
    assert failure.log_tail == "last line"
    assert str(failure) == f"[{kind}] something happened"


@pytest.mark.parametrize("kind", ["crash", "OOM", "", "nan "])
def test_trial_failure_rejects_unknown_kind(kind):
    with pytest.raises(ValueError, match="kind must be one of") as info:
        TrialFailure(kind, "message")  # type: ignore[arg-type]

    assert f"Received: kind={kind!r}" in str(info.value)


def test_trial_failure_log_tail_defaults_to_empty():
    assert TrialFailure("nan", "loss became NaN").log_tail == ""


def test_trial_failure_to_dict_holds_kind_message_and_log_tail():
    failure = TrialFailure("oom", "ran out of memory", log_tail="ResourceExhaustedError")

    assert failure.to_dict() == {
        "kind": "oom",
        "message": "ran out of memory",
        "log_tail": "ResourceExhaustedError",
    }


def test_trial_failure_is_an_autotune_error_with_exit_code_1():
    failure = TrialFailure("exit", "exited with code 3")

    assert isinstance(failure, AutotuneError)
    assert not isinstance(failure, ConfigError)
    assert failure.exit_code == 1


def test_config_error_exit_code_is_2():
    assert ConfigError.exit_code == 2
    assert ConfigError("bad input").exit_code == 2


def test_config_error_is_a_value_error_and_an_autotune_error():
    error = ConfigError("bad input")

    assert isinstance(error, ValueError)
    assert isinstance(error, AutotuneError)


def test_experiment_error_is_a_config_error_with_exit_code_2():
    error = ExperimentError("bad experiment")

    assert isinstance(error, ConfigError)
    assert error.exit_code == 2


def test_autotune_error_exit_code_is_1():
    assert AutotuneError("generic").exit_code == 1


def test_a_config_error_names_the_library_argument_and_the_cli_its_flag():
    error = ConfigError("'x' cannot be opened", argument="storage")
    joined = ConfigError(": database file 'a.db' does not exist", argument="storage")

    assert error.argument == "storage"
    assert str(error) == "storage 'x' cannot be opened"
    assert error.naming("--storage") == "--storage 'x' cannot be opened"
    assert str(joined) == "storage: database file 'a.db' does not exist"
    assert joined.naming("--storage") == "--storage: database file 'a.db' does not exist"
    assert ConfigError("plain").naming("--storage") == "plain"


@pytest.mark.parametrize(
    ("argument", "flag"), [("storage", "--storage"), ("study_name", "--study")]
)
def test_the_cli_shows_the_flag_of_the_argument_at_fault(argument, flag):
    from autotune.cli import error_message

    error = ConfigError("is needed", argument=argument)

    assert error_message(error) == f"{flag} is needed"
    assert error_message(ConfigError("no argument")) == "no argument"
    assert not str(error).startswith("-")


def test_arguments_a_message_mentions_are_shown_as_their_flags_by_the_cli():
    from autotune.cli import error_message

    error = ConfigError(
        "differs ({'a': 1}); use another {study_name}, or {allow_mismatch}",
        mentions=("study_name", "allow_mismatch"),
    )

    assert str(error) == "differs ({'a': 1}); use another study_name, or allow_mismatch"
    assert error_message(error) == "differs ({'a': 1}); use another --study, or --allow-mismatch"
    assert error.render({"study_name": "NAME"}).endswith("another NAME, or allow_mismatch")


def test_storage_errors_name_no_flag():
    from autotune.store.storage import check_url

    with pytest.raises(ConfigError) as info:
        check_url("redis://host/0")

    assert info.value.argument == "storage"
    assert "--" not in str(info.value)
