"""Several workers on one study (autotune.study.workers, claims, recovery): real worker
processes with a fake runner, on a Journal file and on PostgreSQL (skipped outside CI without a
server, :mod:`tests.support.postgres`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import optuna
import pytest

from autotune import hardware
from autotune.exceptions import ConfigError, StudyError
from autotune.store.schema import TARGET_KEY
from autotune.study import Study
from autotune.study.placement import Placement
from autotune.study.workers import join, set_target, target_of, worker_arguments, worker_seed
from tests.support.demo_study import write_experiment
from tests.support.fake_trials import SPACE
from tests.support.fake_worker import read_events

REPO = Path(__file__).resolve().parents[2]
STUDY = "shared"
#: Seconds the whole of a multi-worker test may take before it is a failure.
DEADLINE = 180

optuna.logging.set_verbosity(optuna.logging.ERROR)


@pytest.fixture(params=["journal", "postgresql"])
def shared_storage(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "journal":
        return f"journal:///{tmp_path}/study.journal"
    return request.getfixturevalue("postgres_url")


def make_study(storage: str, folder: Path, n_trials: int) -> Study:
    """The study the workers join: made, with its target, but no baseline run yet."""
    study = Study(
        write_experiment(folder),
        SPACE,
        storage,
        STUDY,
        profile_mode="off",
        placement=Placement(shared=True),
    )
    set_target(study, n_trials)
    return study


def start_workers(
    storage: str, count: int, events: Path, seconds: float, experiment: str
) -> list[subprocess.Popen]:
    command = [sys.executable, "-m", "tests.support.fake_worker", storage, STUDY, str(events)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return [
        subprocess.Popen(
            [*command, str(seconds), experiment],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for _ in range(count)
    ]


def finish(workers: list[subprocess.Popen]) -> list[tuple[int, str]]:
    """Each worker's exit code and output, once all have exited."""
    ended = []
    for worker in workers:
        output, _ = worker.communicate(timeout=DEADLINE)
        ended.append((worker.returncode, output.decode(errors="replace")))
    return ended


def trial_starts(events: list[dict]) -> list[dict]:
    return [e for e in events if e["event"] == "start" and e["run"].startswith("trial_")]


def test_three_workers_share_one_study_without_doing_anything_twice(shared_storage, tmp_path):
    study = make_study(shared_storage, tmp_path, n_trials=9)
    events = tmp_path / "events.jsonl"

    ended = finish(
        start_workers(shared_storage, 3, events, seconds=0.4, experiment=study.reference)
    )

    assert all(code == 0 for code, _ in ended), ended
    runs = read_events(events)
    baseline = [e for e in runs if e["event"] == "start" and e["run"].startswith("baseline")]
    assert sorted(e["run"] for e in baseline) == [f"baseline_seed_{s}" for s in (0, 1, 2)]
    assert len({e["pid"] for e in baseline}) == 1  # one worker ran it; the others waited
    measured = Counter(tuple(sorted(e["config"].items())) for e in trial_starts(runs))
    assert measured and max(measured.values()) == 1  # no configuration measured twice
    assert len({e["pid"] for e in trial_starts(runs)}) >= 2  # the trials were shared
    records = study.records()
    assert study.finished_count() == 9
    assert not [r for r in records if r.state in ("running", "waiting")]
    assert {r.number for r in records} == set(range(len(records)))


def test_a_worker_killed_mid_trial_is_failed_and_its_trial_retried_by_another(
    shared_storage, tmp_path
):
    study = make_study(shared_storage, tmp_path, n_trials=6)
    events = tmp_path / "events.jsonl"
    workers = start_workers(shared_storage, 3, events, seconds=1.5, experiment=study.reference)
    deadline = time.monotonic() + DEADLINE
    victim = None
    while victim is None and time.monotonic() < deadline:
        started = trial_starts(read_events(events))
        if started:
            victim = started[0]
        time.sleep(0.05)
    assert victim is not None, "no worker started a trial"
    os.kill(victim["pid"], signal.SIGKILL)

    ended = finish(workers)

    survivors = [
        (code, out) for w, (code, out) in zip(workers, ended, strict=True) if w.pid != victim["pid"]
    ]
    assert [code for code, _ in survivors] == [0, 0], survivors
    killed_number = int(victim["run"].removeprefix("trial_"))
    trials = study.optuna.get_trials(deepcopy=False)
    records = {r.number: r for r in study.records()}
    assert records[killed_number].state == "failed"
    assert records[killed_number].failure_kind == "interrupted"
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == killed_number]
    assert len(retries) == 1
    assert records[retries[0].number].state in ("complete", "pruned")
    assert retries[0].params == trials[killed_number].params
    assert study.finished_count() == 6
    assert not [r for r in records.values() if r.state in ("running", "waiting")]


def test_a_worker_on_other_hardware_is_refused_naming_the_difference(tmp_path, monkeypatch):
    storage = f"journal:///{tmp_path}/study.journal"
    study = make_study(storage, tmp_path, n_trials=2)
    facts = {**hardware._machine(), "cpu": "Another CPU @ 1.0GHz"}
    monkeypatch.setattr(hardware, "_machine", lambda: facts)

    with pytest.raises(ConfigError) as info:
        join(storage, STUDY, study.reference, placement=Placement(shared=True))

    assert "hardware: stored" in str(info.value)
    assert "cpu: stored" in str(info.value) and "now 'Another CPU @ 1.0GHz'" in str(info.value)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable cores")
def test_a_worker_on_fewer_cores_than_the_study_is_refused(tmp_path):
    storage = f"journal:///{tmp_path}/study.journal"
    study = make_study(storage, tmp_path, n_trials=2)
    command = [
        sys.executable,
        "-c",
        "import sys; from autotune.study.workers import join; from autotune.study.placement import "
        f"Placement; join({storage!r}, {STUDY!r}, {study.reference!r}, "
        "placement=Placement(cpus=(0,)))",
    ]

    completed = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)

    assert completed.returncode != 0
    assert "usable_cores: stored 2, now 1" in completed.stderr or "usable_cores: stored" in (
        completed.stderr
    ), completed.stderr


def test_sqlite_holds_one_worker(tmp_path):
    with pytest.raises(ConfigError, match=r"Journal file on one host.*PostgreSQL"):
        join(f"sqlite:///{tmp_path}/a.db", STUDY, "digits_cnn")


def test_a_study_without_a_target_says_how_to_start_it(tmp_path):
    storage = f"journal:///{tmp_path}/study.journal"
    study = make_study(storage, tmp_path, n_trials=2)
    study.optuna.set_user_attr(TARGET_KEY, None)

    with pytest.raises(StudyError, match=r"autotune run .* --trials N"):
        target_of(join(storage, STUDY, study.reference, placement=Placement(shared=True)))


def test_optimize_stores_its_target_for_workers_joining_later(tmp_path):
    from tests.support.demo_study import fake_runner

    storage = f"journal:///{tmp_path}/study.journal"
    study = Study(
        write_experiment(tmp_path), SPACE, storage, STUDY, runner=fake_runner, profile_mode="off"
    )
    study.optimize(n_trials=2)

    assert target_of(study) == 2


def test_workers_seeds_differ_by_host_and_process_and_are_stable():
    assert worker_seed(0, "a", 1) == worker_seed(0, "a", 1)
    assert len({worker_seed(0, "a", 1), worker_seed(0, "a", 2), worker_seed(0, "b", 1)}) == 3
    assert worker_seed(1, "a", 1) != worker_seed(0, "a", 1)


def test_worker_arguments_carry_the_placement():
    command = worker_arguments(
        "journal:///s.journal", "st", Placement(cpus=(2, 3)), seed=4, experiment="x.py:e"
    )

    assert command[1:4] == ["-m", "autotune", "worker"]
    assert command[4] == "--experiment=x.py:e"
    assert command[command.index("--cpus") + 1] == "2-3"
    assert command[command.index("--seed") + 1] == "4"
    gpu = worker_arguments(
        "journal:///s.journal", "st", Placement(device="1"), seed=0, experiment="digits_cnn"
    )
    assert gpu[gpu.index("--device") + 1] == "1" and "--cpus" not in gpu


def _running_trial(study: Study, worker: dict, alive_at: float | None) -> int:
    """A RUNNING trial of ``worker``, as a worker elsewhere leaves it."""
    study.optuna.enqueue_trial({"precision": "float32", "jit_compile": True, "batch_size": 64})
    trial = study.optuna.ask()
    trial.set_user_attr("worker", worker)
    if alive_at is not None:
        trial.set_user_attr("alive_at", alive_at)
    return trial.number


@pytest.mark.parametrize(("age", "failed"), [(60.0, True), (1.0, False)])
def test_a_journal_trial_of_another_host_is_failed_once_its_liveness_record_is_stale(
    tmp_path, age, failed
):
    from autotune.study import recovery

    storage = f"journal:///{tmp_path}/study.journal"
    study = make_study(storage, tmp_path, n_trials=2)
    remote = {"host": "another-host.invalid", "pid": 1, "started": 0.0}
    number = _running_trial(study, remote, alive_at=time.time() - age)

    recovery.fail_orphans(study.optuna, study._storage)

    state = {r.number: r for r in study.records()}[number].state
    assert state == ("failed" if failed else "running")


def test_a_running_trial_writes_its_liveness_record_on_a_journal_file(tmp_path, monkeypatch):
    from autotune.study import recovery

    monkeypatch.setattr(recovery, "HEARTBEAT_SECONDS", 0.05)
    storage = f"journal:///{tmp_path}/study.journal"
    study = make_study(storage, tmp_path, n_trials=2)
    trial = study.optuna.ask()

    before = time.time()
    with recovery.KeepAlive(study.optuna, trial):
        time.sleep(0.3)
    beats = study.optuna.trials[trial.number].user_attrs["alive_at"]

    assert beats >= before + 0.2  # beaten while the block ran, not only at its start


def test_a_postgresql_trial_keeps_no_liveness_record_optunas_heartbeat_does(postgres_url, tmp_path):
    from autotune.study import recovery

    study = make_study(postgres_url, tmp_path, n_trials=2)
    with warnings.catch_warnings():  # "heartbeat ... used with Study.optimize": a bare ask here
        warnings.simplefilter("ignore", UserWarning)
        trial = study.optuna.ask()
    with recovery.KeepAlive(study.optuna, trial):
        pass

    assert "alive_at" not in study.optuna.trials[trial.number].user_attrs
