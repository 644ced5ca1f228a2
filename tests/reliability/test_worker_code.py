"""Issue 28, class 2: ``autotune worker`` runs only the experiment its operator names.

Whoever can write a shared Journal file (or a row of the PostgreSQL database) can change the
``experiment_reference`` stored in a study. A worker used to import it: code named by the
storage ran on every worker host. Now the worker's command line names the experiment; it must
match the study's stored reference and the digest of its file, else the worker is refused
(exit 2, one line naming both, the storage unchanged) before anything is imported.

The hostile reference names a file that writes ``MARK`` when imported: the mark appearing means
code named by the storage ran. Trials run in this process with the fake runner, which records
the reference it was handed (what a trial process would import).
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner

import autotune.study.study
from autotune.cli import main
from autotune.store.schema import INFO_KEY
from autotune.study import Study
from autotune.study.placement import Placement
from autotune.study.workers import set_target, worker_arguments
from tests.support.demo_study import fake_runner, write_experiment
from tests.support.fake_trials import SPACE

STUDY = "shared"
REPO = Path(__file__).resolve().parents[2]
#: autotune.study.identity.DIGEST_KEY, spelled out so that this file also runs on older code.
DIGEST_KEY = "experiment_digest"


def _invoke(*args: str):
    return CliRunner(env={"COLUMNS": "200"}).invoke(main, list(args))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A Journal study made with the fake experiment, 2 trials to run; the references each
    trial was handed are in ``world["handed"]``."""
    handed: list[str] = []

    def runner(reference, config, settings, log_dir):
        handed.append(reference)
        return fake_runner(reference, config, settings, log_dir)

    monkeypatch.setattr(autotune.study.study, "isolated_runner", runner)
    monkeypatch.chdir(tmp_path)
    journal = tmp_path / "study.journal"
    storage = f"journal:///{journal}"
    reference = write_experiment(tmp_path)
    study = Study(
        reference, SPACE, storage, STUDY, profile_mode="off", placement=Placement(shared=True)
    )
    set_target(study, 2)
    mark = tmp_path / "MARK"
    hostile = tmp_path / "hostile.py"
    hostile.write_text(f"open({str(mark)!r}, 'w').write('storage-named code ran')\n")
    return {
        "storage": storage,
        "journal": journal,
        "reference": reference,
        "study": study,
        "mark": mark,
        "hostile": f"{hostile}:experiment",
        "handed": handed,
    }


def _name_hostile_code(world) -> None:
    """What a writer of the shared storage can do: point the study at its own module."""
    study = optuna.load_study(study_name=STUDY, storage=world["study"].optuna._storage)
    info = dict(study.user_attrs[INFO_KEY])
    info["experiment_reference"] = world["hostile"]
    info.pop(DIGEST_KEY, None)
    study.set_user_attr(INFO_KEY, info)


def _worker(world, *experiment: str):
    return _invoke(
        "worker", *experiment, "--storage", world["storage"], "--study", STUDY, "--share-cores"
    )


def test_a_worker_that_names_no_experiment_is_refused_and_runs_no_stored_code(world):
    _name_hostile_code(world)
    before = _digest(world["journal"])

    result = _worker(world)

    assert result.exit_code == 2, result.output
    assert "name the experiment" in result.output
    assert not world["mark"].exists()
    assert _digest(world["journal"]) == before


def test_a_worker_naming_another_experiment_is_refused_naming_both(world):
    _name_hostile_code(world)
    before = _digest(world["journal"])

    result = _worker(world, world["reference"])

    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert world["hostile"] in result.output and world["reference"] in result.output
    assert not world["mark"].exists()
    assert _digest(world["journal"]) == before
    assert world["handed"] == []


def test_a_worker_whose_experiment_file_changed_since_is_refused(world):
    path = Path(world["reference"].rpartition(":")[0])
    path.write_text(path.read_text() + "\n# changed after the study was made\n")
    before = _digest(world["journal"])

    result = _worker(world, world["reference"])

    assert result.exit_code == 2, result.output
    assert "has changed since the study was made" in result.output
    assert _digest(world["journal"]) == before
    assert world["handed"] == []


def test_a_worker_naming_the_study_experiment_runs_it_and_hands_its_trials_that_one(world):
    stored = world["study"].optuna.user_attrs[INFO_KEY]
    assert stored[DIGEST_KEY] == _digest(Path(world["reference"].rpartition(":")[0]))

    result = _worker(world, world["reference"])

    assert result.exit_code == 0, result.output
    assert "done: 2 of 2 trials finished" in result.output
    assert world["handed"] and set(world["handed"]) == {world["reference"]}


def test_the_experiment_option_names_it_too(world):
    result = _worker(world, f"--experiment={world['reference']}")

    assert result.exit_code == 0, result.output


def test_a_study_stored_before_digests_compares_the_reference_alone(world):
    study = world["study"].optuna
    info = dict(study.user_attrs[INFO_KEY])
    del info[DIGEST_KEY]
    study.set_user_attr(INFO_KEY, info)

    result = _worker(world, world["reference"])

    assert result.exit_code == 0, result.output


def test_the_local_workers_command_line_names_the_experiment_and_is_checked(world):
    """``autotune run --workers K`` starts ``python -m autotune worker`` with its experiment;
    the real command line parses, and a mismatch there is refused too."""
    given = worker_arguments(world["storage"], STUDY, Placement(shared=True), 0, world["reference"])
    assert f"--experiment={world['reference']}" in given
    wrong = worker_arguments(world["storage"], STUDY, Placement(shared=True), 0, "digits_cnn")
    before = _digest(world["journal"])

    completed = subprocess.run(
        wrong, capture_output=True, text=True, timeout=120, check=False, cwd=REPO
    )

    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert "autotune.bundled.digits_cnn:experiment" in completed.stderr
    assert world["reference"] in completed.stderr
    assert _digest(world["journal"]) == before
