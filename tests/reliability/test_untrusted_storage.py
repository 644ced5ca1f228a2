"""Issue 13, items 1 and 2: a stored study is data, and the study is never written over.

1. The read-only commands (``status``, ``best``, ``export``, ``report``) show what the storage
   holds without importing the experiment whose path is stored in it: opening a shared database
   runs no code named in it, and a database moved to a machine without that file still works.
2. ``export`` and ``report`` never write their output over the storage (nor any SQLite
   database), write atomically, and refuse a symbolic link instead of following it.

The study is made by the fake-runner driver with an experiment file that, when imported while
``HOSTILE_MARK`` is set, writes that file: the mark appearing means user code ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.reliability import FAKE_SPACE, MISBEHAVE_FILE, Sandbox, one_line_error

pytestmark = pytest.mark.slow

READ_COMMANDS = (
    ("status",),
    ("best",),
    ("best", "--json"),
    ("export", "-o", "recipe.json"),
    ("report", "-o", "report.html"),
)


def _hostile_experiment(sandbox: Sandbox) -> Path:
    """The misbehave fixture experiment, plus code that marks that it was imported."""
    path = sandbox.root / "hostile_experiment.py"
    path.write_text(
        MISBEHAVE_FILE.read_text(encoding="utf-8")
        + "\n\nif os.environ.get('HOSTILE_MARK'):\n"
        + "    open(os.environ['HOSTILE_MARK'], 'w').write('user code ran')\n",
        encoding="utf-8",
    )
    return path


def _cli(sandbox: Sandbox, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "autotune.cli", *args, "--storage", sandbox.storage],
        cwd=sandbox.root,
        env=sandbox.env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def hostile_study(sandbox: Sandbox) -> Path:
    """A study with a baseline and 3 trials, made with the hostile experiment; its path."""
    experiment = _hostile_experiment(sandbox)
    control = sandbox.root / "control-mark"
    imported = subprocess.run(
        [sys.executable, "-c", f"import runpy; runpy.run_path({str(experiment)!r})"],
        env=sandbox.env(HOSTILE_MARK=str(control)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert imported.returncode == 0 and control.exists(), imported.stderr  # the mark works
    space = sandbox.write_space("hostile", FAKE_SPACE)
    reference = f"{experiment}:misbehave"
    sandbox.seed_study(space, experiment=reference)
    done = sandbox.driver(
        "run", sandbox.storage, str(space), "--experiment", reference, "--trials", "3",
        "--sleep", "0", "0",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return experiment


def test_read_only_commands_import_no_code_named_in_the_storage(
    sandbox: Sandbox, hostile_study: Path
) -> None:
    mark = sandbox.root / "mark"
    before = sandbox.db_digest()

    for command in READ_COMMANDS:
        done = _cli(sandbox, *command, HOSTILE_MARK=str(mark))
        assert done.returncode == 0, (command, done.stdout + done.stderr)
        assert not mark.exists(), f"autotune {' '.join(command)} imported the stored experiment"

    assert sandbox.db_digest() == before
    assert json.loads((sandbox.root / "recipe.json").read_text(encoding="utf-8"))["config"]


def test_read_only_commands_work_when_the_experiment_file_is_gone(
    sandbox: Sandbox, hostile_study: Path
) -> None:
    hostile_study.unlink()  # the database moved to a machine without the experiment
    before = sandbox.db_digest()

    outputs = {command: _cli(sandbox, *command) for command in READ_COMMANDS}

    for command, done in outputs.items():
        assert done.returncode == 0, (command, done.stdout + done.stderr)
    assert "finished trials" in outputs[("status",)].stdout
    assert json.loads(outputs[("best", "--json")].stdout)["experiment"].endswith(":misbehave")
    assert sandbox.db_digest() == before


@pytest.mark.parametrize("command", ["export", "report"])
def test_an_output_onto_the_storage_is_refused_and_the_study_kept(
    sandbox: Sandbox, hostile_study: Path, command: str
) -> None:
    before = sandbox.db_digest()

    done = _cli(sandbox, command, "-o", str(sandbox.db))

    assert done.returncode == 2, done.stdout + done.stderr
    line = one_line_error(done.stderr)
    assert line.startswith("autotune: error: -o/--output: ")
    assert f"{str(sandbox.db)!r} is the study's storage" in line
    assert sandbox.db_digest() == before


@pytest.mark.parametrize("command", ["export", "report"])
def test_an_output_onto_another_sqlite_database_is_refused(
    sandbox: Sandbox, hostile_study: Path, command: str
) -> None:
    other = sandbox.root / "other.db"
    other.write_bytes(sandbox.db.read_bytes())

    done = _cli(sandbox, command, "-o", "other.db")

    assert done.returncode == 2
    assert "'other.db' is an SQLite database; autotune never overwrites one" in one_line_error(
        done.stderr
    )
    assert other.read_bytes() == sandbox.db.read_bytes()


@pytest.mark.parametrize("command", ["export", "report"])
def test_an_output_that_is_a_symbolic_link_is_refused_not_followed(
    sandbox: Sandbox, hostile_study: Path, command: str
) -> None:
    target = sandbox.root / "elsewhere.txt"
    target.write_text("keep me", encoding="utf-8")
    (sandbox.root / "out.json").symlink_to(target)
    (sandbox.root / "db-link").symlink_to(sandbox.db)
    before = sandbox.db_digest()

    to_file = _cli(sandbox, command, "-o", "out.json")
    to_storage = _cli(sandbox, command, "-o", "db-link")

    for done in (to_file, to_storage):
        assert done.returncode == 2
        assert "is a symbolic link" in one_line_error(done.stderr)
    assert target.read_text(encoding="utf-8") == "keep me"
    assert sandbox.db_digest() == before


def test_outputs_are_written_atomically_beside_the_target(
    sandbox: Sandbox, hostile_study: Path
) -> None:
    old = sandbox.root / "report.html"
    old.write_text("old report", encoding="utf-8")
    inode = old.stat().st_ino

    done = _cli(sandbox, "report", "-o", "report.html")

    assert done.returncode == 0, done.stderr
    assert old.stat().st_ino != inode  # replaced by a rename, not rewritten in place
    assert old.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in sandbox.root.iterdir() if p.name.startswith(".report.html")] == []
    assert oct(old.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
