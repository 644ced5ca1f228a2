"""autotune.outputs: output files written atomically, never over a study or through a link."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from autotune.cli import error_message
from autotune.exceptions import ConfigError
from autotune.outputs import SQLITE_MAGIC, check_output, write_output


def test_writes_a_new_file_and_replaces_an_old_one(tmp_path: Path) -> None:
    target = tmp_path / "r.json"

    assert write_output(target, "one", what="recipe file") == target
    assert target.read_text(encoding="utf-8") == "one"
    write_output(target, "two", what="recipe file")
    assert target.read_text(encoding="utf-8") == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "r.json"
    target.write_text("old", encoding="utf-8")

    def no_space(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_space)
    with pytest.raises(ConfigError) as info:
        write_output(target, "new", what="recipe file")

    assert info.value.argument == "output"
    assert error_message(info.value) == (
        f"-o/--output: recipe file {str(target)!r} cannot be written: No space left on device"
    )
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"report file '.*missing/r.html' cannot be written"):
        write_output(tmp_path / "missing" / "r.html", "x", what="report file")


def test_the_protected_storage_is_refused_by_any_name(tmp_path: Path) -> None:
    database = tmp_path / "study.db"
    database.write_text("not sqlite, but the storage", encoding="utf-8")
    (tmp_path / "hard").hardlink_to(database)

    for name in (database, tmp_path / "hard", tmp_path / "." / "study.db"):
        with pytest.raises(ConfigError, match="is the study's storage"):
            write_output(name, "x", what="report file", protected=[database])
    assert database.read_text(encoding="utf-8") == "not sqlite, but the storage"


def test_any_sqlite_database_is_refused(tmp_path: Path) -> None:
    database = tmp_path / "other.db"
    sqlite3.connect(database).execute("create table t (x)").connection.close()
    assert database.read_bytes().startswith(SQLITE_MAGIC)

    with pytest.raises(ConfigError, match="is an SQLite database; autotune never overwrites one"):
        check_output(database, what="recipe file")


def test_a_symbolic_link_is_refused_even_to_a_harmless_file(tmp_path: Path) -> None:
    target = tmp_path / "target.txt"
    target.write_text("keep", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere")

    for name in (link, dangling):
        with pytest.raises(ConfigError, match="is a symbolic link"):
            write_output(name, "x", what="recipe file")
    assert target.read_text(encoding="utf-8") == "keep"
    assert not (tmp_path / "nowhere").exists()


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder; name a file"):
        check_output(tmp_path, what="report file")
