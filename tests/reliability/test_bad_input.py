"""docs/reliability.md: bad input given to the ``autotune`` command gets a one-line error on
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


def _run(
    box: Sandbox, experiment: str = MISBEHAVE, space: str | None = None, storage: str | None = None
) -> list[str]:
    space = space or _space(box, 'name = "ok"\n[parameters]\nbatch_size = [32, 64]\n')
    storage = storage or box.storage
    return ["run", experiment, "--space", space, "--storage", storage, "--trials", "1"]


def _space_bytes(box: Sandbox, data: bytes) -> str:
    path = box.root / "space.toml"
    path.write_bytes(data)
    return str(path)


def _space_folder(box: Sandbox) -> str:
    path = box.root / "folder.toml"
    path.mkdir()
    return str(path)


def _new(box: Sandbox, log_file: bool = False) -> str:
    """A storage that does not exist yet: the case must not leave it (or anything) behind.
    With ``log_file``, a file sits where the new study's log folder would go."""
    if log_file:
        (box.root / "autotune_logs").write_text("not a folder", encoding="utf-8")
    return f"sqlite:///{box.root / 'new.db'}"


def _a_file(box: Sandbox) -> Path:
    path = box.root / "a_file"
    path.write_text("in the way", encoding="utf-8")
    return path


def _corrupt_database(box: Sandbox) -> str:
    """A copy of the seeded storage with every other page overwritten."""
    path = box.root / "corrupt.db"
    data = bytearray(box.db.read_bytes())
    for start in range(4096, len(data), 8192):
        data[start : start + 2048] = bytes(range(256)) * 8
    path.write_bytes(bytes(data))
    return f"sqlite:///{path}"


HUGE_RANGE = f"{{low = 16, high = {10**18}}}"
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
        lambda b: ["--storage", "['sqlite', 'journal', 'postgresql', 'mysql']", "Received: 'redis://localhost/0'"],
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
    # Issue 13, item 5: what used to be a traceback.
    **{
        f"corrupt_database_{command}": Case(
            lambda b, c=command: [c, "--storage", _corrupt_database(b)],
            lambda b: ["--storage", "corrupt.db", "database disk image is malformed"],
        )
        for command in ("status", "best", "export", "report", "run")
    },
    "space_not_utf8": Case(
        lambda b: _run(b, space=_space_bytes(b, b'name = "caf\xe9"\n' + GOOD_SPACE[10:].encode())),
        lambda b: [str(b.root / "space.toml"), "is not UTF-8 text", "offset 11"],
    ),
    "space_is_a_folder_of_the_same_name": Case(
        lambda b: _run(b, space=_space_folder(b)),
        lambda b: [str(b.root / "folder.toml"), "is a directory"],
    ),
    "negative_seed_on_a_new_database": Case(
        lambda b: [*_run(b, storage=_new(b)), "--seed", "-1"],
        lambda b: ["'--seed'", "-1 is not in the range 0<=x<=4294967295"],
    ),
    "study_name_of_5000_characters": Case(
        lambda b: [*_run(b, storage=_new(b)), "--study", "n" * 5000],
        lambda b: ["--study must be at most 512 characters", "Received 5,000 characters"],
    ),
    "study_name_with_a_newline": Case(
        lambda b: [*_run(b, storage=_new(b)), "--study", "a\nb"],
        lambda b: ["--study must not contain control characters. Received: 'a\\nb'"],
    ),
    "a_file_where_the_log_folder_goes": Case(
        lambda b: _run(b, storage=_new(b, log_file=True)),
        lambda b: ["log folder", f"{str(b.root / 'autotune_logs')!r} is a file, not a folder"],
    ),
    "trial_log_dir_under_a_file": Case(
        lambda b: ["trial", MISBEHAVE, "--log-dir", str(_a_file(b) / "logs")],
        lambda b: ["--log-dir", f"{str(b.root / 'a_file')!r} is a file, not a folder"],
    ),
    # Issue 13, item 6: numbers that switched a limit off, or made a study unresumable.
    **{
        f"tolerance_{value}": Case(
            lambda b, v=value: [*_run(b), "--tolerance", v],
            lambda b, v=value: ["'--tolerance'", f"finite number. Received: {float(v)!r}"],
        )
        for value in ("nan", "inf")
    },
    "timeout_nan": Case(
        lambda b: [*_run(b), "--timeout", "nan"],
        lambda b: ["'--timeout'", "must be a finite number. Received: nan"],
    ),
    **{
        f"measure_{key}_inf": Case(
            lambda b, k=key: _run(b, space=_space(b, GOOD_SPACE + f"[measure]\n{k} = inf\n")),
            lambda b, k=key: [
                str(b.root / "space.toml"),
                f"RunSettings.{k} must be a number of seconds > 0 (finite)",
                f"{k}=inf",
            ],
        )
        for key in ("window_seconds", "time_limit_seconds", "warmup_max_seconds")
    },
    "batch_size_range_to_1e18": Case(
        lambda b: _run(b, space=_space(b, f"[parameters]\nbatch_size = {HUGE_RANGE}\n")),
        lambda b: ["parameters.batch_size.high", "must be an integer >= 1 and <= 1,048,576"],
    ),
    **{
        f"max_fidelity_{value}_{command}": Case(
            lambda b, v=value, c=command: [c, "--storage", b.storage, "--max-fidelity", v],
            lambda b, v=value: ["'--max-fidelity'", v],
        )
        for value in ("nan", "-1")
        for command in ("best", "export")
    },
    **{
        f"in_memory_storage_{name}": Case(
            lambda b, u=url: [*_run(b)[:-4], "--storage", u, "--trials", "1"],
            lambda b, u=url: ["--storage must name a database file: in-memory", f"Received: {u!r}"],
        )
        for name, url in (("empty", "sqlite://"), ("memory", "sqlite:///:memory:"))
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
