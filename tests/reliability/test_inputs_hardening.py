"""docs/reliability.md, issue 28 classes 4, 7, 8 and 9: outputs only write regular files or new
paths; parsed numbers and ranges are bounded before they are used; unreadable input and stored
values of the wrong type are one line (exit 2), not a traceback; smaller ones (a busy study
exits 2, long values are shortened in error lines, a recipe's fields are checked, a space file's
bad name is blamed on the space file)."""

from __future__ import annotations

import fcntl
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest

from autotune.exceptions import ConfigError
from autotune.recipe import Recipe
from autotune.study.run_lock import lock_file
from tests.support.reliability import MISBEHAVE, MISBEHAVE_FILE, Sandbox, one_line_error

GOOD_SPACE = 'name = "ok"\n[parameters]\nbatch_size = [32, 64]\n'
JOURNAL_LINE = '{"op_code": 0, "worker_id": "w", "study_name": "other", "directions": [1]}\n'


@pytest.fixture(scope="module")
def seeded_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A storage holding one study with a fake baseline, copied by every test."""
    box = Sandbox(tmp_path_factory.mktemp("seeded"))
    space = box.root / "ok.toml"
    space.write_text(GOOD_SPACE, encoding="utf-8")
    box.seed_study(space)
    return box.db


@pytest.fixture
def box(sandbox: Sandbox, seeded_database: Path) -> Sandbox:
    shutil.copy(seeded_database, sandbox.db)
    (sandbox.root / "ok.toml").write_text(GOOD_SPACE, encoding="utf-8")
    return sandbox


def _refused(done: subprocess.CompletedProcess[str], *texts: str) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    error = one_line_error(done.stderr)
    for text in texts:
        assert text in error, f"{text!r} not in {error!r}"
    return error


# ---------------------------------------------------------------- class 4: -o only writes files
def test_output_onto_a_fifo_is_refused_without_hanging(box: Sandbox) -> None:
    fifo = box.root / "pipe"
    os.mkfifo(fifo)
    for command in ("export", "report"):
        done = box.cli(command, "--storage", box.storage, "-o", str(fifo), timeout=60)
        _refused(done, "-o/--output", "'" + str(fifo) + "'", "FIFO", "not a regular file")
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"


def test_output_onto_a_character_device_does_not_replace_it(box: Sandbox) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a character device needs root (CI runs as root)")
    device = box.root / "null"
    os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
    done = box.cli("export", "--storage", box.storage, "-o", str(device), timeout=60)
    _refused(done, "-o/--output", "character device", "not a regular file")
    assert stat.S_ISCHR(os.lstat(device).st_mode), "the device was replaced by a file"


def test_output_onto_another_studys_journal_file_is_refused(box: Sandbox) -> None:
    journal = box.root / "other.journal"
    journal.write_text(JOURNAL_LINE, encoding="utf-8")
    for command in ("export", "report"):
        done = box.cli(command, "--storage", box.storage, "-o", str(journal), timeout=60)
        _refused(done, "-o/--output", "Optuna Journal file")
        assert journal.read_text(encoding="utf-8") == JOURNAL_LINE


def test_output_dash_is_standard_output_not_a_file_named_dash(box: Sandbox) -> None:
    done = box.cli("export", "--storage", box.storage, "-o", "-", timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["config"]["batch_size"] == 32
    assert "wrote standard output" in done.stderr
    report = box.cli("report", "--storage", box.storage, "-o", "-", timeout=120)
    assert report.returncode == 0, report.stdout + report.stderr
    assert report.stdout.startswith("<!DOCTYPE html>")
    assert not (box.root / "-").exists()


# ---------------------------------------------------------------- class 7: bounded numbers
def _limited(box: Sandbox, *args: str) -> subprocess.CompletedProcess[str]:
    """The command with its address space capped at 4 GiB: an unbounded expansion fails fast
    instead of filling the machine's memory."""
    cap = 4 << 30

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    return subprocess.run(
        [sys.executable, "-m", "autotune.cli", *args],
        cwd=box.root,
        env=box.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=limit,
    )


@pytest.mark.parametrize("cpus", ["0-99999999999", "0-4000000000", "99999999999"])
def test_a_huge_core_range_is_refused_before_it_is_expanded(box: Sandbox, cpus: str) -> None:
    digest = box.db_digest()
    run = ["run", MISBEHAVE, "--space", "ok.toml", "--storage", box.storage, "--trials", "1"]
    _refused(_limited(box, *run, "--cpus", cpus), "--cpus", "Received: " + repr(cpus))
    worker = ["worker", MISBEHAVE, "--storage", box.storage, "--study", "misbehave-ok"]
    worker += ["--cpus", cpus]  # a worker names its experiment (issue 28, class 2)
    _refused(_limited(box, *worker), "--cpus", "Received: " + repr(cpus))
    assert box.db_digest() == digest


def test_a_huge_device_list_is_refused(box: Sandbox) -> None:
    devices = ",".join(str(n) for n in range(10_000))
    run = ["run", MISBEHAVE, "--space", "ok.toml", "--storage", box.storage, "--trials", "1"]
    error = _refused(_limited(box, *run, "--devices", devices), "--devices", "at most")
    assert len(error) < 1000


# ---------------------------------------------------------------- class 8: one line, no traceback
def _config_files(root: Path) -> dict[str, tuple[Path, str]]:
    not_utf8 = root / "latin1.json"
    not_utf8.write_bytes(b'{"batch_size": 32, "note": "caf\xe9"}')
    deep = root / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    return {"not_utf8": (not_utf8, "is not UTF-8 text"), "deep": (deep, "too deeply")}


@pytest.mark.parametrize("case", ["not_utf8", "deep"])
def test_an_unreadable_config_file_is_one_line(box: Sandbox, case: str) -> None:
    path, text = _config_files(box.root)[case]
    done = box.cli("trial", MISBEHAVE, "--config", f"@{path}", timeout=120)
    _refused(done, "--config file", str(path), text)
    with pytest.raises(ConfigError, match=text):  # what autotune.apply reads a recipe file with
        Recipe.load(path)


def _damage(box: Sandbox, how: Callable[[optuna.Study], None]) -> None:
    url = box.storage
    study = optuna.load_study(study_name=optuna.get_all_study_names(url)[0], storage=url)
    how(study)


def _effective_a_number(study: optuna.Study) -> None:
    trial = study.ask()
    trial.set_user_attr("config", {"batch_size": 64})
    trial.set_user_attr("result", {"effective": 5})
    study.tell(trial, [1.0, 0.5])


DAMAGE: dict[str, tuple[Callable[[optuna.Study], None], list[str]]] = {
    "baseline_a_string": (
        lambda s: s.set_user_attr("autotune_baseline", "x"),
        ["its baseline", "'autotune_baseline' must be a JSON object", "Received: 'x'"],
    ),
    "baseline_runs_a_list": (
        lambda s: s.set_user_attr("autotune_baseline", {"runs": [1, 2]}),
        ["its baseline", "'runs' must be a JSON object"],
    ),
    "info_a_list": (
        lambda s: s.set_user_attr("autotune_info", ["x"]),
        ["'autotune_info' must be a JSON object", "Received: ['x']"],
    ),
    "effective_a_number": (_effective_a_number, ["trial 0", "result.effective", "Received: 5"]),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_stored_value_of_the_wrong_type_is_a_damaged_study(box: Sandbox, case: str) -> None:
    how, texts = DAMAGE[case]
    _damage(box, how)
    digest = box.db_digest()
    run = ["run", MISBEHAVE, "--space", "ok.toml", "--storage", box.storage, "--trials", "1"]
    commands = [["status"], ["best"], ["report", "-o", "r.html"], run]
    for command in commands:
        args = command if command is run else [*command, "--storage", box.storage]
        done = box.cli(*args, timeout=120)
        _refused(done, "--storage", "study 'misbehave-ok' is damaged", *texts)
        assert box.db_digest() == digest, f"{command[0]} changed the storage"
    assert not (box.root / "r.html").exists()


# ---------------------------------------------------------------- class 9: smaller ones
def test_a_busy_study_is_refused_with_exit_code_2(box: Sandbox) -> None:
    path = lock_file(box.storage)
    assert path is not None
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        run = ["run", MISBEHAVE, "--space", "ok.toml", "--storage", box.storage, "--trials", "1"]
        done = box.cli(*run, timeout=120)
    finally:
        os.close(descriptor)
    _refused(done, "is in use by")


def test_long_values_are_shortened_in_error_lines(box: Sandbox) -> None:
    name = "n" * 10_000
    done = box.cli("status", "--storage", box.storage, "--study", name, timeout=60)
    error = _refused(done, "--study", "(10,000 characters)")
    assert len(error) < 2000, len(error)
    experiment = f"{MISBEHAVE_FILE}:{'e' * 100_000}"
    run = ["run", experiment, "--space", "ok.toml", "--storage", box.storage, "--trials", "1"]
    done = box.cli(*run, timeout=60)
    assert done.returncode == 2, done.stderr[:2000]
    assert len(one_line_error(done.stderr)) < 2000


def _recipe(root: Path, **fields: object) -> Path:
    data = {
        "config": {"batch_size": 32},
        "learning_rate": 0.001,
        "throughput": None,
        "baseline_throughput": None,
        "speedup": 1.0,
        "fidelity": 0.0,
        "tolerance": 1.5,
        "experiment": "e.py:e",
        "study": "s",
        "storage": "sqlite:///s.db",
        "trial": None,
        "format": 1,
    }
    path = root / "recipe.json"
    path.write_text(json.dumps(data | fields), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("fields", "texts"),
    [
        ({"hardware": "x"}, ["hardware must be a JSON object", "Received: hardware='x'"]),
        ({"versions": [1]}, ["versions must be a JSON object"]),
        ({"effective": 3}, ["effective must be a JSON object"]),
        ({"format": 999}, ["format must be 1", "Received: format=999"]),
    ],
)
def test_a_recipe_with_fields_of_the_wrong_type_is_refused(
    tmp_path: Path, fields: dict[str, object], texts: list[str]
) -> None:
    path = _recipe(tmp_path, **fields)
    Recipe.load(_recipe(tmp_path))  # the same recipe without the bad field loads
    path = _recipe(tmp_path, **fields)
    with pytest.raises(ConfigError) as info:
        Recipe.load(path)
    for text in [f"recipe file {str(path)!r}", *texts]:
        assert text in str(info.value)


def test_a_space_files_hostile_name_is_blamed_on_the_space_file(box: Sandbox) -> None:
    space = box.root / "hostile.toml"
    space.write_text('name = "a\\nb"\n[parameters]\nbatch_size = [32, 64]\n', encoding="utf-8")
    new = f"sqlite:///{box.root / 'new.db'}"
    run = ["run", MISBEHAVE, "--space", str(space), "--storage", new, "--trials", "1"]
    error = _refused(box.cli(*run, timeout=120), str(space), "name must be")
    assert "--study" not in error
    assert not (box.root / "new.db").exists()
