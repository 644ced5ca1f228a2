"""README.md, "Reliability": bad input given to the ``autotune`` command gets a one-line error on
stderr ('autotune: error: ...') that names the file, key or argument, what was expected and what
was received; the exit code is 2 and the storage is left as it was."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.reliability import MISBEHAVE, MISBEHAVE_FILE, Sandbox, one_line_error


@dataclass(frozen=True)
class Case:
    """A bad command: ``args(box)`` builds its arguments; ``expected`` are texts of its error."""

    args: Callable[[Sandbox], list[str]]
    expected: Callable[[Sandbox], list[str]]


def _space(box: Sandbox, text: str) -> str:
    path = box.root / "space.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _broken_experiment(box: Sandbox) -> str:
    path = box.root / "broken.py"
    path.write_text("from autotune import Experiment\n\ndef model(:\n    pass\n", encoding="utf-8")
    return f"{path}:broken"


def _run(box: Sandbox, experiment: str = MISBEHAVE, space: str | None = None) -> list[str]:
    space = space or _space(box, 'name = "ok"\n[parameters]\nbatch_size = [32, 64]\n')
    return ["run", experiment, "--space", space, "--storage", box.storage, "--trials", "1"]


GOOD_SPACE = 'name = "ok"\n[parameters]\nbatch_size = [32, 64]\n'
CASES = {
    "malformed_toml": Case(
        lambda b: _run(b, space=_space(b, 'name = "bad"\n[parameters\nbatch_size = [32]\n')),
        lambda b: [str(b.root / "space.toml"), "is not valid TOML", "line 2"],
    ),
    "wrong_typed_space_value": Case(
        lambda b: _run(b, space=_space(b, '[parameters]\nbatch_size = ["big", 64]\n')),
        lambda b: [
            str(b.root / "space.toml"),
            "parameters.batch_size[0]",
            "must be an integer >= 1",
            "Received: 'big'",
        ],
    ),
    "experiment_syntax_error": Case(
        lambda b: _run(b, experiment=_broken_experiment(b)),
        lambda b: [str(b.root / "broken.py"), "syntax error at line 3"],
    ),
    "experiment_name_missing": Case(
        lambda b: _run(b, experiment=f"{MISBEHAVE_FILE}:nope"),
        lambda b: [f"{MISBEHAVE_FILE}:nope", "no name 'nope'", "'misbehave'", "'misbehave_other'"],
    ),
    "storage_scheme": Case(
        lambda b: [*_run(b)[:-4], "--storage", "redis://localhost/0", "--trials", "1"],
        lambda b: ["--storage", "['sqlite', 'postgresql', 'mysql']", "Received: 'redis://localhost/0'"],
    ),
    "storage_folder_missing": Case(
        lambda b: [*_run(b)[:-4], "--storage", f"sqlite:///{b.root}/missing/s.db", "--trials", "1"],
        lambda b: ["--storage", f"'{b.root}/missing'", "does not exist", f"sqlite:///{b.root}/missing"],
    ),
    "storage_folder_read_only": Case(
        lambda b: [*_run(b)[:-4], "--storage", f"sqlite:///{b.root}/locked/s.db", "--trials", "1"],
        lambda b: ["--storage", f"'{b.root}/locked'", "not writable", f"sqlite:///{b.root}/locked"],
    ),
    **{
        f"unknown_study_{command}": Case(
            lambda b, c=command: [c, "--storage", b.storage, "--study", "nope"],
            lambda b: ["--study 'nope'", f"'{b.storage}'", "'misbehave-ok'"],
        )
        for command in ("status", "best", "export", "report")
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def seeded_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A storage holding one study (fake baseline), copied by every case: the bystander whose
    bytes must not change."""
    box = Sandbox(tmp_path_factory.mktemp("seeded"))
    space = box.root / "ok.toml"
    space.write_text(GOOD_SPACE, encoding="utf-8")
    box.seed_study(space)
    return box.db


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_a_one_line_error_naming_it_with_exit_code_2(
    sandbox: Sandbox, seeded_database: Path, case: str
) -> None:
    shutil.copy(seeded_database, sandbox.db)
    bad = CASES[case]
    if case == "storage_folder_read_only":
        locked = sandbox.root / "locked"
        locked.mkdir()
        locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
        if os.access(locked, os.W_OK):
            pytest.skip("this user can write to a read-only folder (root)")
    args = bad.args(sandbox)
    before = sorted(str(p) for p in sandbox.root.rglob("*"))
    digest = sandbox.db_digest()

    done = sandbox.cli(*args, timeout=120)

    assert done.returncode == 2, done.stdout + done.stderr
    error = one_line_error(done.stderr)
    for text in bad.expected(sandbox):
        assert text in error, f"{text!r} not in {error!r}"
    assert sandbox.db_digest() == digest, "the storage changed"
    after = sorted(str(p) for p in sandbox.root.rglob("*"))
    assert after == before, "files were made"
