"""autotune.study.storage_guard: a database file deleted or replaced under a study, and an error
meaning the storage cannot be written, each become one line naming the file and the cause."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from autotune.exceptions import StudyError
from autotune.study.storage_guard import StorageGuard, storage_fault


def _database(path: Path) -> Path:
    sqlite3.connect(path).execute("create table t (x)").connection.close()
    return path


def test_an_unchanged_database_passes(tmp_path: Path) -> None:
    guard = StorageGuard(f"sqlite:///{_database(tmp_path / 'a.db')}")
    guard.check()


def test_a_deleted_database_stops_the_study_naming_it(tmp_path: Path) -> None:
    path = _database(tmp_path / "a.db")
    guard = StorageGuard(f"sqlite:///{path}")
    path.unlink()
    with pytest.raises(StudyError, match="was deleted while the study ran") as raised:
        guard.check()
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


def test_a_replaced_database_stops_the_study_naming_it(tmp_path: Path) -> None:
    path = _database(tmp_path / "a.db")
    guard = StorageGuard(f"sqlite:///{path}")
    os.replace(_database(tmp_path / "b.db"), path)
    with pytest.raises(StudyError, match="was replaced by another file") as raised:
        guard.check()
    assert str(path) in str(raised.value)


def test_a_server_storage_is_never_checked() -> None:
    StorageGuard("postgresql://me@db.example/autotune").check()


def _wrapped(error: BaseException) -> BaseException:
    """``error`` as Optuna passes it on: the cause of a StorageInternalError-like error, itself
    the context of an AssertionError."""
    commit = RuntimeError("An exception is raised during the commit")
    commit.__cause__ = error
    outer = AssertionError("Should not reach.")
    outer.__context__ = commit
    return outer


def test_a_full_sqlite_database_is_one_line_naming_the_file_and_enospc(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    fault = storage_fault(
        _wrapped(sqlite3.OperationalError("database or disk is full")), f"sqlite:///{path}"
    )
    assert isinstance(fault, StudyError)
    text = str(fault)
    assert str(path) in text and "ENOSPC" in text and "run the same command again" in text
    assert "\n" not in text


def test_a_database_written_after_it_was_deleted_says_so(tmp_path: Path) -> None:
    path = tmp_path / "gone.db"
    fault = storage_fault(
        sqlite3.OperationalError("attempt to write a readonly database"), f"sqlite:///{path}"
    )
    assert fault is not None and "was deleted while the study ran" in str(fault)


def test_enospc_from_the_os_names_the_file() -> None:
    error = OSError(errno.ENOSPC, "No space left on device", "/data/autotune.db-journal")
    fault = storage_fault(error, "sqlite:///data/autotune.db")
    assert fault is not None
    assert "/data/autotune.db-journal" in str(fault) and "ENOSPC" in str(fault)


def test_other_errors_are_not_storage_faults(tmp_path: Path) -> None:
    assert storage_fault(RuntimeError("boom"), f"sqlite:///{tmp_path / 'a.db'}") is None
    assert storage_fault(sqlite3.IntegrityError("UNIQUE constraint failed"), "sqlite:///a") is None
    assert storage_fault(OSError(errno.EACCES, "denied"), "sqlite:///a.db") is None
