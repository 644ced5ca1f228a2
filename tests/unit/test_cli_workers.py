"""``autotune worker`` and ``autotune run --workers/--devices/--cpus`` from the command line, with
the fake runner (autotune.cli.workers)."""

from __future__ import annotations

import os

import optuna
import pytest
from click.testing import CliRunner

import autotune.study.study
from autotune.cli import main
from autotune.study import Study
from autotune.study.placement import Placement
from autotune.study.workers import set_target
from tests.support.demo_study import fake_runner, write_experiment
from tests.support.fake_trials import SPACE

CORES = len(os.sched_getaffinity(0))


def invoke(*args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(main, list(args))


@pytest.fixture
def journal_study(tmp_path, monkeypatch):
    """A journal study made with the fake runner's world, 3 trials to run, no baseline yet."""
    monkeypatch.setattr(autotune.study.study, "isolated_runner", fake_runner)
    monkeypatch.chdir(tmp_path)
    storage = f"journal:///{tmp_path}/study.journal"
    study = Study(
        write_experiment(tmp_path),
        SPACE,
        storage,
        "shared",
        profile_mode="off",
        placement=Placement(shared=True),
    )
    set_target(study, 3)
    return study


def test_run_with_several_workers_on_sqlite_names_the_storages_that_take_them(tmp_path):
    result = invoke("run", "--storage", f"sqlite:///{tmp_path}/a.db", "--workers", "2")

    assert result.exit_code == 2
    assert "--storage holds one worker at a time; 2 workers need" in result.output
    assert "journal:///autotune.journal" in result.output and "postgresql" in result.output
    assert not (tmp_path / "a.db").exists()  # refused before anything was stored


def test_more_cpu_workers_than_cores_is_refused_unless_shared(tmp_path):
    storage = f"journal:///{tmp_path}/s.journal"

    result = invoke("run", "--storage", storage, "--workers", str(CORES + 1))

    assert result.exit_code == 2
    assert f"{CORES + 1} CPU workers need {CORES + 1} disjoint core sets" in result.output
    assert "--share-cores" in result.output


def test_devices_and_workers_must_agree(tmp_path):
    result = invoke(
        "run", "--storage", f"journal:///{tmp_path}/s.journal", "--devices", "0,1", "--workers", "3"
    )

    assert result.exit_code == 2
    assert "3 workers and 2 devices" in result.output


@pytest.mark.parametrize("bad", ["x", "0-", "99999"])
def test_a_bad_core_set_names_the_option(tmp_path, bad):
    result = invoke("run", "--storage", f"journal:///{tmp_path}/s.journal", "--cpus", bad)

    assert result.exit_code == 2
    assert "--cpus" in result.output


def test_a_worker_joins_runs_the_baseline_and_the_study_to_its_target(journal_study):
    result = invoke(
        "worker",
        journal_study.reference,
        "--storage",
        journal_study.storage_url,
        "--study",
        "shared",
        "--share-cores",
    )

    assert result.exit_code == 0, result.output
    assert "joined study shared: 0 of 3 trials finished" in result.output
    assert "(shared)" in result.output
    assert result.output.count("trial ") >= 3
    assert "done: 3 of 3 trials finished" in result.output
    assert journal_study.finished_count() == 3
    assert journal_study.baseline()["noise_floor"]


def test_a_worker_records_its_place_with_each_trial(journal_study):
    # In this process: a core set would pin the test run itself, so the cores are shared here
    # (tests/unit/test_workers.py pins worker processes).
    result = invoke(
        "worker",
        journal_study.reference,
        "--storage",
        journal_study.storage_url,
        "--study",
        "shared",
        "--share-cores",
    )

    assert result.exit_code == 0, result.output
    workers = [t.user_attrs["worker"] for t in journal_study.optuna.get_trials(deepcopy=False)]
    usable = sorted(os.sched_getaffinity(0))
    assert workers and all(w["cpus"] == usable and w["shared"] is True for w in workers)
    assert all(w["fingerprint"] and w["device"] is None for w in workers)


def test_a_worker_on_sqlite_is_refused(tmp_path):
    result = invoke(
        "worker", "digits_cnn", "--storage", f"sqlite:///{tmp_path}/a.db", "--study", "s"
    )

    assert result.exit_code == 2
    assert "holds one worker at a time" in result.output


def test_a_worker_needs_an_existing_study(tmp_path):
    storage = f"journal:///{tmp_path}/s.journal"
    optuna.create_study(
        storage=optuna.storages.JournalStorage(
            optuna.storages.journal.JournalFileBackend(str(tmp_path / "s.journal"))
        ),
        study_name="other",
    )

    result = invoke("worker", "digits_cnn", "--storage", storage, "--study", "missing")

    assert result.exit_code == 2
    assert "'missing' is not in" in result.output and "other" in result.output


def test_a_second_cpu_worker_on_the_host_is_refused_naming_the_first(journal_study):
    from autotune.study.placement import HostClaim

    with HostClaim(Placement(), "someone-else"):
        result = invoke(
            "worker",
            journal_study.reference,
            "--storage",
            journal_study.storage_url,
            "--study",
            "shared",
        )

    assert result.exit_code != 0
    assert "is already running trials for pid" in result.output
    assert "'someone-else'" in result.output and "--cpus" in result.output
    assert journal_study.baseline() == {"runs": {}}  # nothing ran
