"""One process runs trials on an SQLite study at a time (autotune.study.run_lock): a second
`autotune run` gets a clear error instead of doubling the work. No TensorFlow."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner

import autotune.study.study
from autotune.cli import main
from autotune.exceptions import StudyError
from autotune.study import Study
from autotune.study.run_lock import hold, lock_file
from tests.support.demo_study import fake_runner, write_experiment
from tests.support.fake_trials import SPACE

HOLDER = """
import sys, time
from autotune.study.run_lock import hold
with hold(sys.argv[1], "someone-else"):
    print("holding", flush=True)
    time.sleep(120)
"""


@pytest.fixture
def storage(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'study.db'}"


@pytest.fixture
def holder(storage: str):
    """Another process holding the storage's run lock (killed at the end)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, storage], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "holding"
    yield process
    process.kill()
    process.wait()


def make(tmp_path: Path, storage: str) -> Study:
    return Study(write_experiment(tmp_path), SPACE, storage, runner=fake_runner, start="random")


def test_a_second_process_is_refused_naming_the_holder_and_nothing_is_stored(
    tmp_path, storage, holder
) -> None:
    study = make(tmp_path, storage)

    with pytest.raises(StudyError) as refused:
        study.optimize(n_trials=2)

    message = str(refused.value)
    assert f"pid {holder.pid} on host" in message and "'someone-else'" in message
    assert "one process at a time" in message and "postgresql://" in message
    assert study.optuna.trials == [] and study.baseline() == {"runs": {}}
    with pytest.raises(StudyError, match=f"pid {holder.pid}"):
        study.confirm(top=1, rounds=2)


def test_the_lock_goes_with_its_process_however_it_ends(tmp_path, storage, holder) -> None:
    study = make(tmp_path, storage)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()

    study.optimize(n_trials=2)

    assert len(study.optuna.trials) == 2


def test_one_process_runs_again_and_again(tmp_path, storage) -> None:
    study = make(tmp_path, storage)

    study.optimize(n_trials=1)
    study.optimize(n_trials=2)
    with hold(storage, study.name):  # released after each run
        pass

    assert len(study.optuna.trials) == 2
    assert lock_file(storage) == tmp_path / "study.db.lock"


def test_server_storages_take_no_lock() -> None:
    assert lock_file("postgresql://user@host/db") is None
    with hold("postgresql://user@host/db", "shared"):
        pass


def test_a_second_autotune_run_exits_with_the_reason(
    tmp_path, storage, holder, monkeypatch
) -> None:
    monkeypatch.setattr(autotune.study.study, "isolated_runner", fake_runner)
    monkeypatch.chdir(tmp_path)
    reference = write_experiment(tmp_path)

    started = time.monotonic()
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["run", reference, "--space", "quick", "--storage", storage, "--trials", "2"]
    )

    assert result.exit_code != 0
    assert f"is in use by pid {holder.pid}" in result.output
    assert time.monotonic() - started < 30  # refused at once, not after waiting
    stored = optuna.load_study(study_name="fake-quick", storage=storage)
    assert stored.trials == []
