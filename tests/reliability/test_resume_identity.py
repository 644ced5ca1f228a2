"""docs/reliability.md: resuming a study with another experiment, search space, tolerance or
hardware is refused with a one-line error naming what differs (exit code 2, storage untouched), and
allowed explicitly with --allow-mismatch, which records the difference. Never silently mixed.

Each case resumes a stored study (fake baseline, no trial) with the real ``autotune run``; the
other machine is simulated by the driver, which replaces ``autotune.hardware.fingerprint`` and
runs the same command in its process."""

from __future__ import annotations

import subprocess
import sys

import optuna
import pytest

from tests.support.reliability import (
    DRIVER,
    MISBEHAVE,
    MISBEHAVE_OTHER,
    Sandbox,
    one_line_error,
    stored_trials,
)

pytestmark = pytest.mark.slow

STUDY = "misbehave-resumed"
PARAMETERS = {"batch_size": [64, 128]}
MEASURE = {"time_limit_seconds": 60}
OTHER_FINGERPRINT = "0ther0machine000"
IDENTITY_KEYS = (
    "experiment", "space", "measurement", "objectives", "tolerance", "hardware", "tensorflow",
    "keras",
)  # fmt: skip

#: What is changed on resume -> (key the error names, text of the stored value, of the new one).
CASES = {
    "experiment": ("experiment", "'misbehave'", "'misbehave_other'"),
    "space": ("space", "stored '", "now '"),
    "tolerance": ("tolerance", "stored 1.5", "now 3.0"),
    "hardware": ("hardware", "stored '", f"now '{OTHER_FINGERPRINT}'"),
}


def _resume(sandbox: Sandbox, case: str, *extra: str) -> subprocess.CompletedProcess[str]:
    space = sandbox.root / "resumed.toml"
    experiment = MISBEHAVE_OTHER if case == "experiment" else MISBEHAVE
    if case == "space":  # the same file name and space name, other batch sizes
        sandbox.write_space("resumed", {"batch_size": [64, 256]}, MEASURE)
    args = ["run", experiment, "--space", str(space), "--storage", sandbox.storage]
    args += ["--study", STUDY, "--trials", "0", *extra]
    if case == "tolerance":
        args += ["--tolerance", "3"]
    if case == "hardware":
        return subprocess.run(
            [sys.executable, str(DRIVER), "cli", "--fingerprint", OTHER_FINGERPRINT, "--", *args],
            cwd=sandbox.root, env=sandbox.env(), capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
    return sandbox.cli(*args, timeout=120)


@pytest.mark.parametrize("case", list(CASES))
def test_resume_with_other_settings_is_refused_naming_the_difference_unless_allowed(
    sandbox: Sandbox, case: str
) -> None:
    space = sandbox.write_space("resumed", PARAMETERS, MEASURE)
    sandbox.seed_study(space)
    assert optuna.get_all_study_names(sandbox.storage) == [STUDY]
    digest = sandbox.db_digest()
    key, stored, now = CASES[case]

    refused = _resume(sandbox, case)

    assert refused.returncode == 2, refused.stdout + refused.stderr
    error = one_line_error(refused.stderr)
    assert f"{key}: stored " in error and stored in error and now in error, error
    assert "--allow-mismatch" in error
    others = [k for k in IDENTITY_KEYS if k != key]
    assert not [k for k in others if f"{k}: stored" in error], "names only what differs"
    assert sandbox.db_digest() == digest, "a refused resume changed the storage"

    allowed = _resume(sandbox, case, "--allow-mismatch")

    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    study = optuna.load_study(study_name=STUDY, storage=sandbox.storage)
    (recorded,) = study.user_attrs["autotune_mismatches_allowed"]
    assert [d.split(":", 1)[0] for d in recorded["differences"]] == [key]
    assert optuna.get_all_study_names(sandbox.storage) == [STUDY], "no second study was made"
    assert stored_trials(sandbox.storage) == []


def test_reading_a_study_on_another_machine_neither_writes_nor_records_a_mismatch(
    sandbox: Sandbox,
) -> None:
    space = sandbox.write_space("resumed", PARAMETERS, MEASURE)
    sandbox.seed_study(space)
    digest = sandbox.db_digest()

    shown = subprocess.run(
        [sys.executable, str(DRIVER), "cli", "--fingerprint", OTHER_FINGERPRINT, "--", "status",
         "--storage", sandbox.storage],
        cwd=sandbox.root, env=sandbox.env(), capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip

    assert shown.returncode == 0, shown.stdout + shown.stderr
    study = optuna.load_study(study_name=STUDY, storage=sandbox.storage)
    assert "autotune_mismatches_allowed" not in study.user_attrs
    assert sandbox.db_digest() == digest
