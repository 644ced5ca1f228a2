"""docs/reliability.md (the SQLite part): a study on an SQLite storage never fails on "database
is locked" while another connection holds the database exclusively for seconds and a reader keeps
loading the study; every trial is finalised.

The study runs in a driver process with a fake runner (about 10 short trials); this test holds
``BEGIN EXCLUSIVE`` for 3 s on its own sqlite3 connection in the middle of the run, while a
thread loops over ``autotune.study.load_study(...).records()``."""

from __future__ import annotations

import sqlite3
import threading
import time
import traceback

import pytest
from optuna.trial import TrialState

from autotune.study import load_study
from tests.support.reliability import FAKE_SPACE, MISBEHAVE, Sandbox, trial_starts, wait_for_call

pytestmark = pytest.mark.slow

TRIALS = 10
LOCK_SECONDS = 3.0


def test_study_survives_an_exclusive_lock_and_a_busy_reader_without_database_is_locked(
    sandbox: Sandbox,
) -> None:
    space = sandbox.write_space("fake", FAKE_SPACE)
    driver = sandbox.start_driver(
        "run", sandbox.storage, str(space), "--experiment", MISBEHAVE, "--trials", str(TRIALS),
        "--calls", str(sandbox.calls), "--sleep", "0.1", "0.4",
    )  # fmt: skip
    stop = threading.Event()
    reads: list[int] = []
    errors: list[str] = []

    def read_forever() -> None:
        while not stop.is_set():
            try:
                study = load_study(sandbox.storage)
                for _ in range(5):
                    reads.append(len(study.records()))
            except Exception:
                errors.append(traceback.format_exc())
            time.sleep(0.02)

    reader = threading.Thread(target=read_forever, daemon=True)
    try:
        # Once the study is under way (its baseline stored, trials running): reader and lock.
        wait_for_call(sandbox, driver.pid, lambda ev: trial_starts(ev)[1:], 120)
        reader.start()
        time.sleep(0.3)
        locker = sqlite3.connect(sandbox.db, timeout=60, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")
        locked = (time.time(), len(trial_starts(sandbox.call_events())))
        time.sleep(LOCK_SECONDS)
        locker.execute("COMMIT")
        released = time.time()
        locker.close()
        code = driver.wait(timeout=180)
    finally:
        stop.set()
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        if reader.is_alive():
            reader.join(timeout=120)
    output = sandbox.output(driver)

    assert code == 0, output
    assert "database is locked" not in output
    assert not errors, errors[0]
    assert reads, "the reader never read the study"
    assert locked[1] < TRIALS, "the lock was taken after the study had finished"
    # The study did wait for the lock: no trial started while it was held (after the trial then
    # running, at most 0.4 s long, had ended).
    held = [
        e for e in trial_starts(sandbox.call_events()) if locked[0] + 0.5 < e["time"] < released
    ]
    assert not held, held
    trials = sandbox.trials()
    assert not [t.number for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    assert sum(t.state == TrialState.COMPLETE for t in trials) == TRIALS
