"""docs/reliability.md: when the study process dies (SIGKILL) its trial process dies too;
SIGINT and SIGTERM stop the running trial, mark it interrupted, leave nothing RUNNING and exit
130/143.

The study is the real ``autotune run`` command; its baseline is stored beforehand (fake, by the
driver) so the command goes straight to a trial of the misbehave experiment that hangs."""

from __future__ import annotations

import signal
import subprocess
import time
from typing import Any

import psutil
import pytest
from optuna.trial import TrialState

from autotune.store.records import row_of
from autotune.store.schema import INTERRUPTED, INTERRUPTED_FAILURE
from tests.support.reliability import (
    MISBEHAVE,
    TINY_MEASURE,
    TRIAL_MODULE,
    Sandbox,
    alive,
    group_members,
    wait_until,
)

pytestmark = pytest.mark.slow


def _start_hanging_study(
    sandbox: Sandbox, fault: str
) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    space = sandbox.write_space("hangs", {"batch_size": [64]}, TINY_MEASURE)
    sandbox.seed_study(space)
    study = sandbox.start_cli(
        "run",
        MISBEHAVE,
        "--space",
        str(space),
        "--storage",
        sandbox.storage,
        "--trials",
        "1",
        faults={64: fault},
    )
    try:
        marker = sandbox.wait_for_marker(180)
    except AssertionError:
        study.kill()
        study.wait()
        raise AssertionError(sandbox.output(study)) from None
    trial = psutil.Process(marker["pid"])
    assert TRIAL_MODULE in " ".join(trial.cmdline())
    assert trial.ppid() == study.pid, "the hanging process is the study's trial process"
    return study, marker


def test_sigkill_of_the_study_kills_its_trial_process_and_the_trials_children(
    sandbox: Sandbox,
) -> None:
    # The trial hangs in the model factory: TensorFlow is loaded, with its many threads.
    study, marker = _start_hanging_study(sandbox, "hang_with_child")
    assert alive(marker["child_pid"])

    study.send_signal(signal.SIGKILL)
    study.wait()
    killed = time.monotonic()
    gone = wait_until(lambda: not alive(marker["pid"]) and not alive(marker["child_pid"]), 10)
    took = time.monotonic() - killed

    assert gone, (
        f"10 s after the study was killed: trial alive={alive(marker['pid'])}, "
        f"its child alive={alive(marker['child_pid'])}"
    )
    assert not group_members(marker["pgid"])
    assert took < 10


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_sigint_and_sigterm_stop_the_trial_mark_it_interrupted_and_exit_128_plus_signal(
    sandbox: Sandbox, signum: signal.Signals
) -> None:
    study, marker = _start_hanging_study(sandbox, "hang@load")

    study.send_signal(signum)
    try:
        code = study.wait(timeout=60)
    except subprocess.TimeoutExpired:
        study.kill()
        study.wait()
        pytest.fail(
            f"the study did not stop within 60 s of {signum.name}:\n{sandbox.output(study)}"
        )
    output = sandbox.output(study)

    assert code == 128 + signum, output
    assert f"stopped by {signum.name}" in output
    assert wait_until(lambda: not alive(marker["pid"]), 2), "the trial process outlived the study"
    assert not group_members(marker["pgid"])
    trials = sandbox.trials()
    assert [t.state for t in trials] == [TrialState.FAIL], output
    (trial,) = trials
    assert trial.user_attrs["failure"] == INTERRUPTED_FAILURE
    assert row_of(trial).failure_kind == INTERRUPTED
    assert not row_of(trial).counts  # it is retried on resume instead
