"""docs/reliability.md: a trial that crashes, is killed, exits, raises, runs out of memory,
produces NaN or hangs ends as a failed trial with its kind, message and log tail, and the study goes
on; too many failures in a row stop it with a clear message; a hanging trial is stopped at its time
limit with nothing of it left behind."""

from __future__ import annotations

import json
import time

import pytest
from optuna.trial import TrialState

from autotune.store.records import row_of
from autotune.store.schema import INTERRUPTED
from tests.support.reliability import (
    CHILD_TOKEN,
    MISBEHAVE,
    TINY_MEASURE,
    Sandbox,
    alive,
    group_members,
    one_line_error,
    wait_until,
)

pytestmark = pytest.mark.slow

HANG_LIMIT = 40  # seconds; a working trial of the misbehave experiment takes about 10 s here

#: (batch size, fault, failure kind, text of the message), in the order the trials run. No more
#: than four failures in a row (the limit is five), and the MemoryError at the largest batch size
#: (larger ones would be predicted out of memory and pruned without running).
PLAN: list[tuple[int, str | None, str | None, str | None]] = [
    (88, "hang", "timeout", f"time limit of {HANG_LIMIT} s"),
    (40, "segfault", "signal", "SIGSEGV"),
    (48, "sigkill", "signal", "SIGKILL"),
    (56, "exit", "exit", "exited with code 3"),
    (64, None, None, None),
    (72, "raise", "exception", "RuntimeError: misbehave: raised on purpose"),
    (80, "nan", "nan", "nan"),
    (256, "memory_error", "oom", "MemoryError: misbehave: pretended"),
    (128, None, None, None),
]


def test_each_trial_fault_is_a_failed_trial_with_kind_message_and_log_and_the_study_goes_on(
    sandbox: Sandbox,
) -> None:
    measure = {**TINY_MEASURE, "time_limit_seconds": HANG_LIMIT}
    space = sandbox.write_space("faults", {"batch_size": sorted(b for b, *_ in PLAN)}, measure)
    sandbox.seed_study(space, enqueue=[{"batch_size": b} for b, *_ in PLAN], baseline=False)
    faults = {b: fault for b, fault, *_ in PLAN if fault}

    run = sandbox.cli(
        "run",
        MISBEHAVE,
        "--space",
        str(space),
        "--storage",
        sandbox.storage,
        "--trials",
        str(len(PLAN)),
        "--confirm-top",
        "0",
        "--throughput-only",  # a tiny curve's seeds differ more than it moves: fidelity is blind
        faults=faults,
        timeout=900,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    trials = sandbox.trials()
    assert [t.params["batch_size"] for t in trials] == [b for b, *_ in PLAN]
    for trial, (batch_size, fault, kind, text) in zip(trials, PLAN, strict=True):
        where = f"trial {trial.number} (batch_size={batch_size}, fault {fault})"
        if fault is None:
            assert trial.user_attrs["failure"] is None, where
            assert trial.user_attrs["throughput"]["median"] > 0, where
            if trial.state == TrialState.PRUNED:  # measured, but slower: a busy shared machine
                assert "confidently below the baseline" in trial.user_attrs["pruned_reason"]
                continue
            assert trial.state == TrialState.COMPLETE, where
            assert trial.values is not None and trial.values[0] > 0, where
            continue
        assert trial.state == TrialState.FAIL, where
        failure = trial.user_attrs["failure"]
        assert failure["kind"] == kind, (where, failure)
        assert text in failure["message"], (where, failure)
        assert failure["log_tail"].strip(), f"{where}: empty log tail"
        if kind in ("signal", "exit", "timeout"):  # the process's last words are in the tail
            assert f"misbehave: {fault} at batch_size={batch_size}" in failure["log_tail"], where
        else:  # the trial process printed the exception's traceback
            assert "Traceback (most recent call last)" in failure["log_tail"], where
        record = row_of(trial)
        assert record.failure_kind == kind and record.counts, where
        assert record.failure_kind != INTERRUPTED

    hang = trials[0]
    assert hang.datetime_complete is not None and hang.datetime_start is not None
    took = (hang.datetime_complete - hang.datetime_start).total_seconds()
    assert took < HANG_LIMIT + 10, f"the hanging trial took {took:.1f} s"
    assert not [t for t in trials if t.state == TrialState.RUNNING]


def test_consecutive_failures_stop_the_study_with_a_clear_message(sandbox: Sandbox) -> None:
    sizes = [40, 48, 56, 72, 80, 88, 96, 104]  # more configurations than the limit of five
    cheap = ["segfault@load", "sigkill@load", "exit@load"]  # before TensorFlow is imported
    faults = {b: cheap[i % len(cheap)] for i, b in enumerate(sizes)}
    space = sandbox.write_space("failing", {"batch_size": sizes}, TINY_MEASURE)
    sandbox.seed_study(space)

    run = sandbox.cli(
        "run",
        MISBEHAVE,
        "--space",
        str(space),
        "--storage",
        sandbox.storage,
        "--trials",
        str(len(sizes)),
        faults=faults,
        timeout=300,
    )

    assert run.returncode == 1, run.stdout + run.stderr
    error = one_line_error(run.stderr)
    assert "5 trials in a row failed" in error
    assert "stopping" in error
    trials = sandbox.trials()
    assert len(trials) == 5
    assert all(t.state == TrialState.FAIL for t in trials)
    assert {t.user_attrs["failure"]["kind"] for t in trials} <= {"signal", "exit"}
    last = trials[-1]
    assert f"trial {last.number}" in error and last.user_attrs["failure"]["kind"] in error


def test_hanging_trial_is_stopped_at_its_time_limit_with_its_whole_process_group(
    sandbox: Sandbox,
) -> None:
    limit = 3
    started = time.monotonic()
    done = sandbox.cli(
        "trial",
        MISBEHAVE,
        "--config",
        '{"batch_size": 88}',
        "--time-limit",
        str(limit),
        "--json",
        "--log-dir",
        str(sandbox.root / "log"),
        faults={88: "hang_with_child@load"},
        timeout=120,
    )
    elapsed = time.monotonic() - started

    assert done.returncode == 1, done.stdout + done.stderr
    outcome = json.loads(done.stdout)
    assert outcome["status"] == "failed"
    assert outcome["kind"] == "timeout"
    assert f"time limit of {limit} s" in outcome["message"]
    assert "misbehave: hang_with_child" in outcome["log_tail"]
    assert elapsed < limit + 6, f"stopped after {elapsed:.1f} s (limit {limit} s)"

    (marker,) = sandbox.markers_seen()
    assert marker["pgid"] == marker["pid"], "the trial leads its own process group"
    assert not alive(marker["pid"])
    assert wait_until(lambda: not group_members(marker["pgid"]), 2), group_members(marker["pgid"])
    assert wait_until(lambda: not alive(marker["child_pid"]), 2), (
        f"the trial's own child ({CHILD_TOKEN}) outlived it"
    )
