"""docs/reliability.md: a study killed with SIGKILL and started again with the same command
loses no completed trial, fails the interrupted trial and retries it once with the same parameters,
ends with exactly the number of trials asked for, and measures no configuration twice.

The study runs in a driver process with a fake runner (tests/fixtures/drivers/fake_study.py):
each trial sleeps a random while, so SIGKILL lands mid-trial at a random moment, cheaply. The
driver logs every runner call (start and end) to a file, which tells the test when a trial runs
and how often each configuration was measured."""

from __future__ import annotations

import collections
import json
import random
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from optuna.trial import FrozenTrial, TrialState

from autotune.store.records import row_of
from autotune.store.schema import INTERRUPTED
from tests.support.reliability import (
    FAKE_SPACE,
    MISBEHAVE,
    Sandbox,
    kill_strays,
    lineage,
    snapshot,
    trial_starts,
    wait_for_call,
)

pytestmark = pytest.mark.slow


def _run_args(box: Sandbox, space: Path, trials: int, sleep: tuple[float, float]) -> list[str]:
    return [
        "run", box.storage, str(space), "--experiment", MISBEHAVE, "--trials", str(trials),
        "--calls", str(box.calls), "--sleep", str(sleep[0]), str(sleep[1]),
    ]  # fmt: skip


def _kill(process: subprocess.Popen[str]) -> None:
    process.kill()
    process.wait()


def _by_config(events: list[dict[str, Any]], kind: str) -> collections.Counter[str]:
    return collections.Counter(
        json.dumps(e["config"], sort_keys=True) for e in events if e["event"] == kind and e["trial"]
    )


def _retries_of(trials: list[FrozenTrial], number: int) -> list[FrozenTrial]:
    return [t for t in trials if t.number != number and lineage(t) == number]


def _running(trials: list[FrozenTrial]) -> list[int]:
    return [t.number for t in trials if t.state == TrialState.RUNNING]


# ---------------------------------------------------------------------------------------------
# One kill mid-trial, then the same command again (shared by the tests of guarantees 4 and 7)
# ---------------------------------------------------------------------------------------------

N_TRIALS = 6
HELD_CALL = 3  # the first run's 4th trial hangs until it is killed


@dataclass(frozen=True)
class KilledOnce:
    completed_before: dict[int, str]  # snapshots of the completed trials just after the kill
    running_after_kill: list[int]
    killed: int  # number of the trial that was running when the study was killed
    killed_params: dict[str, Any]
    first_pid: int
    second_pid: int
    trials: list[FrozenTrial]  # after the second run
    events: list[dict[str, Any]]
    finished: int  # what the second run reported


@pytest.fixture(scope="module")
def killed_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KilledOnce]:
    box = Sandbox(tmp_path_factory.mktemp("killed_once"))
    space = box.write_space("fake", FAKE_SPACE)
    args = _run_args(box, space, N_TRIALS, (0.05, 0.3))
    try:
        first = box.start_driver(*args, FAKE_HOLD_TRIAL=str(HELD_CALL))
        try:
            held = wait_for_call(
                box, first.pid, lambda ev: [e for e in trial_starts(ev) if e["sleep"] >= 600], 120
            )[0]
            time.sleep(random.uniform(0.0, 0.5))
        finally:
            _kill(first)
        after_kill = box.trials()
        completed_before = {
            t.number: snapshot(t) for t in after_kill if t.state == TrialState.COMPLETE
        }
        second = box.start_driver(*args)  # the same command again
        assert second.wait(timeout=120) == 0, box.output(second)
        yield KilledOnce(
            completed_before=completed_before,
            running_after_kill=_running(after_kill),
            killed=held["number"],
            killed_params=after_kill[held["number"]].params,
            first_pid=first.pid,
            second_pid=second.pid,
            trials=box.trials(),
            events=box.call_events(),
            finished=json.loads(box.output(second).strip().splitlines()[-1])["finished"],
        )
    finally:
        assert not kill_strays(box)


def test_sigkill_mid_trial_then_the_same_command_keeps_completed_trials_and_retries_once(
    killed_once: KilledOnce,
) -> None:
    run = killed_once
    trials = run.trials
    assert run.running_after_kill == [run.killed]  # the kill did land mid-trial
    assert len(run.completed_before) == HELD_CALL

    # Completed trials are intact: values, parameters and attributes unchanged, byte for byte.
    for number, before in run.completed_before.items():
        assert snapshot(trials[number]) == before, f"trial {number} changed"

    # The interrupted trial is failed as interrupted and does not count.
    killed = row_of(trials[run.killed])
    assert killed.state == "failed"
    assert killed.failure_kind == INTERRUPTED
    assert not killed.counts

    # It is retried once, with the same parameters, and the retry completes.
    (retry,) = _retries_of(trials, run.killed)
    assert retry.params == run.killed_params
    assert retry.state == TrialState.COMPLETE
    assert retry.system_attrs["retry_history"] == [run.killed]
    assert retry.user_attrs["worker"]["pid"] == run.second_pid

    # Exactly the number of trials asked for, and nothing left running.
    assert run.finished == N_TRIALS
    assert sum(row_of(t).counts for t in trials) == N_TRIALS
    assert len(trials) == N_TRIALS + 1  # the interrupted one does not count
    assert not _running(trials)


def test_resume_after_a_kill_does_not_measure_a_configuration_again(
    killed_once: KilledOnce,
) -> None:
    run = killed_once
    first = [e for e in run.events if e["pid"] == run.first_pid]
    second = [e for e in run.events if e["pid"] == run.second_pid]
    ends = _by_config(run.events, "end")
    starts = _by_config(run.events, "start")

    # Every configuration was measured to the end at most once.
    assert max(ends.values()) == 1, ends
    # The only configuration started twice is the interrupted one: killed, then retried.
    killed_config = json.dumps(run.trials[run.killed].user_attrs["config"], sort_keys=True)
    assert {c: n for c, n in starts.items() if n > 1} == {killed_config: 2}
    # The second run measured nothing the first had measured.
    assert not set(_by_config(first, "end")) & set(_by_config(second, "start"))

    # The seeded sampler did not replay the first run's draws: no trial duplicates another
    # (a replayed draw would be recorded as a duplicate of the earlier trial).
    duplicates = {t.number: t.user_attrs.get("duplicate_of") for t in run.trials}
    assert not {n: d for n, d in duplicates.items() if d is not None}, "draws were replayed"
    configs = [json.dumps(t.user_attrs["config"], sort_keys=True) for t in run.trials]
    retry = _retries_of(run.trials, run.killed)[0].number
    distinct = [c for t, c in zip(run.trials, configs, strict=True) if t.number != retry]
    assert len(set(distinct)) == len(distinct)

    # So the second run's runner was called once for the retry and once per missing trial.
    assert len(trial_starts(second)) == N_TRIALS - HELD_CALL


# ---------------------------------------------------------------------------------------------
# Three kills at random moments
# ---------------------------------------------------------------------------------------------


def test_three_sigkills_at_random_moments_still_end_with_exactly_the_trials_asked_for(
    sandbox: Sandbox,
) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    trials_asked = 10
    space = sandbox.write_space("fake", FAKE_SPACE)
    args = _run_args(sandbox, space, trials_asked, (0.2, 1.5))
    completed: dict[int, str] = {}
    running_after_kills: set[int] = set()
    for _ in range(3):
        run = sandbox.start_driver(*args)
        skip = rng.randrange(3)  # let this many of its trials start before the one killed
        try:
            start = wait_for_call(
                sandbox, run.pid, lambda ev, k=skip: trial_starts(ev)[k : k + 1], 120
            )[0]
            time.sleep(rng.uniform(0.0, 0.5) * start["sleep"])
        finally:
            _kill(run)
        trials = sandbox.trials()
        running_after_kills.update(_running(trials))
        for trial in trials:
            if trial.state == TrialState.COMPLETE:
                before = completed.setdefault(trial.number, snapshot(trial))
                assert snapshot(trial) == before, f"seed {seed}: trial {trial.number} changed"

    final = sandbox.start_driver(*args)  # the same command, left to finish
    assert final.wait(timeout=180) == 0, sandbox.output(final)
    trials = sandbox.trials()
    why = f"(random seed {seed})"

    assert running_after_kills, f"no kill landed mid-trial {why}"
    assert sum(row_of(t).counts for t in trials) == trials_asked, why
    assert not _running(trials), why
    for number, before in completed.items():
        assert snapshot(trials[number]) == before, f"trial {number} changed {why}"
    lineages = collections.defaultdict(list)
    for trial in trials:
        lineages[lineage(trial)].append(trial)
    for root, members in lineages.items():
        complete = [t.number for t in members if t.state == TrialState.COMPLETE]
        assert len(complete) <= 1, f"lineage of trial {root} completed twice: {complete} {why}"
        assert len(members) <= 2, f"trial {root} was retried more than once {why}"
    interrupted = {t.number for t in trials if row_of(t).failure_kind == INTERRUPTED}
    assert interrupted == running_after_kills, why
    for number in interrupted:
        if lineage(trials[number]) == number:  # not itself a retry: retried once, same params
            (retry,) = _retries_of(trials, number)
            assert retry.params == trials[number].params, why


# ---------------------------------------------------------------------------------------------
# A kill in the moment between the trial's creation and the record of its worker
# ---------------------------------------------------------------------------------------------


def test_sigkill_before_the_trial_records_its_worker_still_fails_and_retries_it(
    sandbox: Sandbox,
) -> None:
    space = sandbox.write_space("fake", FAKE_SPACE)
    args = _run_args(sandbox, space, 3, (0.05, 0.2))
    run = sandbox.start_driver(*args, FAKE_PAUSE_IN_SAMPLE="600")
    try:
        sampled = wait_for_call(
            sandbox, run.pid, lambda ev: [e for e in ev if e["event"] == "sampled"], 120
        )[0]
    finally:
        _kill(run)
    assert sandbox.trials()[sampled["number"]].state == TrialState.RUNNING

    resumed = sandbox.driver(*args)  # the same command again
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    trials = sandbox.trials()

    assert sum(row_of(t).counts for t in trials) == 3
    assert not _running(trials), f"left RUNNING: {_running(trials)}"
    killed = trials[sampled["number"]]
    assert row_of(killed).failure_kind == INTERRUPTED
    (retry,) = _retries_of(trials, killed.number)
    assert retry.params == killed.params
