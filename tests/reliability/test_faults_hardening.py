"""Issue 13, item 8: the faults a long study meets besides a crashing trial.

- A trial that floods its log: the log is capped (its head, a marker, its last words); the trial
  is recorded with its own failure kind and the study goes on.
- A trial's child that leaves the process group with ``setsid``: it is killed with the trial,
  whether the trial exits first or is stopped at its time limit.
- Out of memory as TensorFlow reports it (``ResourceExhaustedError``, XLA's ``RESOURCE_EXHAUSTED``
  inside a compilation error): kind ``oom``, never ``exception`` or ``xla_compile``.
- A full disk under the logs: the trial loses its log file, never its outcome or its log tail.
- A full disk under the storage, the database deleted or replaced mid-run: the study stops, with
  nothing stored lost and nothing written to another file, and the same command resumes it.

Trial faults run through the real ``autotune run`` command (misbehave experiment, faults while
loading unless TensorFlow is needed); storage faults through the fake-runner driver."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from optuna.trial import TrialState

from autotune.store.log_folders import default_log_root
from autotune.store.schema import FAILURE_ATTR
from autotune.trial.trial_log import KEEP_TAIL_BYTES, LOG_LIMIT_ENV
from tests.support.reliability import (
    FAKE_SPACE,
    MISBEHAVE,
    TINY_MEASURE,
    Sandbox,
    alive,
    cli_with_env,
    one_line_error,
    snapshot,
    trial_starts,
    wait_for_call,
    wait_or_kill,
    wait_until,
)

FLOOD_LAST_WORDS = "misbehave: flood ended"  # as in misbehave.py


def _run_plan(
    sandbox: Sandbox,
    name: str,
    plan: list[tuple[dict[str, Any], str]],
    parameters: dict[str, Any] | None = None,
    measure: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> list[Any]:
    """Runs ``autotune run`` on a study (fake baseline) with ``plan``'s configurations queued,
    each with its fault (keyed by batch size); returns the stored trials, in order."""
    sizes = sorted({config["batch_size"] for config, _ in plan})
    space = sandbox.write_space(
        name, parameters or {"batch_size": sizes}, {**TINY_MEASURE, **(measure or {})}
    )
    sandbox.seed_study(space, enqueue=[config for config, _ in plan])
    faults = {config["batch_size"]: fault for config, fault in plan}
    done = cli_with_env(
        sandbox, "run", MISBEHAVE, "--space", str(space), "--storage", sandbox.storage,
        "--trials", str(len(plan)), faults=faults, env=env, timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    trials = sandbox.trials()
    assert [t.params["batch_size"] for t in trials] == [c["batch_size"] for c, _ in plan]
    assert all(t.state == TrialState.FAIL for t in trials), [t.state for t in trials]
    return trials


def _log_dir(sandbox: Sandbox, space_name: str, number: int) -> Path:
    return default_log_root(sandbox.storage, f"misbehave-{space_name}") / f"trial_{number}"


# --------------------------------------------------------------------------------- trial faults


def test_a_trial_flooding_its_log_is_capped_keeps_its_last_words_and_the_study_goes_on(
    sandbox: Sandbox,
) -> None:
    limit = 2**20  # the flood is 32 MiB
    plan = [({"batch_size": 40}, "flood@load"), ({"batch_size": 48}, "exit@load")]

    flood, after = _run_plan(sandbox, "flood", plan, env={LOG_LIMIT_ENV: str(limit)})

    failure = flood.user_attrs[FAILURE_ATTR]
    assert failure["kind"] == "exit", failure
    assert failure["log_tail"].splitlines()[-1] == FLOOD_LAST_WORDS
    log = _log_dir(sandbox, "flood", flood.number) / "trial.log"
    assert log.stat().st_size <= limit + KEEP_TAIL_BYTES + 1024
    with open(log, "rb") as handle:
        assert handle.read(200).startswith(b"misbehave: flood at batch_size=40")
        handle.seek(limit)
        assert b"passed its limit of 1048576 bytes" in handle.read(4096)
    assert after.user_attrs[FAILURE_ATTR]["kind"] == "exit", "the study went on"


def test_a_child_that_escapes_the_process_group_with_setsid_dies_with_its_trial(
    sandbox: Sandbox,
) -> None:
    limit = 4
    plan = [({"batch_size": 40}, "setsid_exit@load"), ({"batch_size": 48}, "setsid_hang@load")]

    exits, hangs = _run_plan(sandbox, "setsid", plan, measure={"time_limit_seconds": limit})

    assert exits.user_attrs[FAILURE_ATTR]["kind"] == "exit"
    assert hangs.user_attrs[FAILURE_ATTR]["kind"] == "timeout"
    markers = {m["fault"]: m for m in sandbox.markers_seen()}
    assert set(markers) == {"setsid_exit", "setsid_hang"}
    for fault, marker in markers.items():
        child = marker["child_pid"]
        assert child is not None
        assert wait_until(lambda c=child: not alive(c), 3), f"{fault}: the escaped child lives"


@pytest.mark.slow
def test_out_of_memory_as_tensorflow_and_xla_report_it_is_oom(sandbox: Sandbox) -> None:
    plan = [
        ({"batch_size": 40, "jit_compile": False}, "resource_exhausted"),
        ({"batch_size": 48, "jit_compile": True}, "xla_resource_exhausted"),
    ]
    parameters = {"batch_size": [40, 48], "jit_compile": [False, True]}

    resource, xla = _run_plan(sandbox, "oom", plan, parameters=parameters, timeout=240)

    for trial, text in ((resource, "OOM when allocating"), (xla, "RESOURCE_EXHAUSTED")):
        failure = trial.user_attrs[FAILURE_ATTR]
        assert failure["kind"] == "oom", failure
        assert text in failure["message"]
        assert "Traceback (most recent call last)" in failure["log_tail"]


def _full_log(sandbox: Sandbox, space_name: str, number: int) -> Path:
    """Makes trial ``number``'s log a link to /dev/full: every write fails with ENOSPC."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full (it answers every write with ENOSPC)")
    folder = _log_dir(sandbox, space_name, number)
    folder.mkdir(parents=True)
    (folder / "trial.log").symlink_to("/dev/full")
    return folder / "trial.log"


def test_a_full_log_disk_costs_the_trial_its_log_file_never_its_failure_kind_or_tail(
    sandbox: Sandbox,
) -> None:
    log = _full_log(sandbox, "logdisk", 0)
    plan = [({"batch_size": 40}, "exit@load"), ({"batch_size": 48}, "segfault@load")]

    full, after = _run_plan(sandbox, "logdisk", plan)

    failure = full.user_attrs[FAILURE_ATTR]
    assert failure["kind"] == "exit", failure
    first, *_, last = failure["log_tail"].splitlines()
    assert str(log) in first and "No space left on device" in first
    assert last.startswith("misbehave: exit at batch_size=40")
    assert after.user_attrs[FAILURE_ATTR]["kind"] == "signal", "the study went on"


@pytest.mark.slow
def test_a_working_trial_with_a_full_log_disk_is_measured(sandbox: Sandbox) -> None:
    _full_log(sandbox, "logdisk_ok", 0)
    space = sandbox.write_space("logdisk_ok", {"batch_size": [64]}, TINY_MEASURE)
    sandbox.seed_study(space)

    done = sandbox.cli(
        "run", MISBEHAVE, "--space", str(space), "--storage", sandbox.storage, "--trials", "1",
        "--confirm-top", "0", timeout=240,
    )  # fmt: skip

    assert done.returncode == 0, done.stdout + done.stderr
    (trial,) = sandbox.trials()
    assert trial.user_attrs[FAILURE_ATTR] is None
    assert trial.state in (TrialState.COMPLETE, TrialState.PRUNED)
    assert trial.user_attrs["throughput"]["median"] > 0


# ------------------------------------------------------------------------------- storage faults

N_TRIALS = 8


def _driver_args(sandbox: Sandbox, space: Path, sleep: float) -> list[str]:
    return [
        "run", sandbox.storage, str(space), "--experiment", MISBEHAVE, "--trials", str(N_TRIALS),
        "--calls", str(sandbox.calls), "--sleep", str(sleep), str(sleep),
    ]  # fmt: skip


def _run_until_the_storage_is_full(sandbox: Sandbox) -> tuple[Path, Any, dict[int, str]]:
    """Runs the fake study on a storage that may grow by 2 pages only; returns the space, the
    finished driver and snapshots of the trials stored when it stopped."""
    space = sandbox.write_space("full", FAKE_SPACE)
    sandbox.seed_study(space)
    done = sandbox.driver(*_driver_args(sandbox, space, 0.05), FAKE_DB_GROWTH_PAGES="2")
    stored = {t.number: snapshot(t) for t in sandbox.trials()}
    return space, done, stored


def test_a_full_storage_stops_the_study_loses_nothing_stored_and_the_same_command_resumes(
    sandbox: Sandbox,
) -> None:
    space, done, stored = _run_until_the_storage_is_full(sandbox)

    assert done.returncode != 0, done.stdout + done.stderr
    assert "database or disk is full" in done.stderr
    completed = [n for n, s in stored.items() if '"state": "COMPLETE"' in s]
    assert completed and len(stored) < N_TRIALS, "the storage filled up mid-study"

    again = sandbox.driver(*_driver_args(sandbox, space, 0.05))  # the disk has room again

    assert again.returncode == 0, again.stdout + again.stderr
    trials = {t.number: t for t in sandbox.trials()}
    for number in completed:
        assert snapshot(trials[number]) == stored[number], f"trial {number} changed"
    assert not [t for t in trials.values() if t.state == TrialState.RUNNING]
    assert '{"finished": 8}' in again.stdout


def test_a_full_storage_is_one_line_naming_the_file_and_enospc(sandbox: Sandbox) -> None:
    _, done, _ = _run_until_the_storage_is_full(sandbox)

    assert done.returncode == 1, done.stdout + done.stderr
    error = one_line_error(done.stderr)
    assert str(sandbox.db) in error and "ENOSPC" in error


def _pull_the_database(sandbox: Sandbox, how: str) -> tuple[Any, str | None]:
    """Runs the fake study (1 s trials) and, during its second trial, deletes its database or
    replaces it with a copy of itself; returns the finished driver and the replacement's
    digest."""
    space = sandbox.write_space("pulled", FAKE_SPACE)
    sandbox.seed_study(space)
    study = sandbox.start_driver(*_driver_args(sandbox, space, 1.0))
    wait_for_call(sandbox, study.pid, lambda events: len(trial_starts(events)) >= 2, 60)
    digest = None
    if how == "deleted":
        sandbox.db.unlink()
    else:
        other = sandbox.root / "other.db"
        shutil.copy(sandbox.db, other)
        digest = hashlib.sha256(other.read_bytes()).hexdigest()
        os.replace(other, sandbox.db)
    wait_or_kill(study, 60)
    return study, digest


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_database_deleted_or_replaced_mid_run_stops_the_study_writing_nowhere_else(
    sandbox: Sandbox, how: str
) -> None:
    study, digest = _pull_the_database(sandbox, how)

    assert study.returncode not in (0, -9), sandbox.output(study)
    if how == "deleted":
        assert not sandbox.db.exists(), "a new database was made in place of the deleted one"
    else:
        assert sandbox.db_digest() == digest, "the study wrote into the replacement"
    assert not list(sandbox.root.glob("*.db-journal"))


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_database_deleted_or_replaced_mid_run_is_one_line_naming_it(
    sandbox: Sandbox, how: str
) -> None:
    study, _ = _pull_the_database(sandbox, how)

    assert study.returncode == 1
    error = one_line_error(sandbox.output(study))
    assert str(sandbox.db) in error and how in error
