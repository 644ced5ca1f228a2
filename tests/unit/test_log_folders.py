"""autotune.store.log_folders: a study's log folder is a safe, unique key inside the log root."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autotune.store.log_folders import (
    HASH_CHARS,
    LOG_FOLDER,
    SLUG_CHARS,
    default_log_root,
    slug,
    storage_identity,
    study_key,
)

SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
HOSTILE = [
    "../../x",
    "..",
    ".",
    "/etc/passwd",
    "C:\\Windows\\x",
    "a/b/../../../c",
    "x" * 5000,
    "",
    "<script>alert(1)</script>",
    "naïve ☃ study",
    "name\x00with\nnul",
    "-rf",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_key_is_one_safe_file_name_of_bounded_length(name: str) -> None:
    key = study_key("sqlite:///autotune.db", name)
    assert SAFE.match(key), key
    assert len(key) <= SLUG_CHARS + 1 + HASH_CHARS
    assert key not in (".", "..") and "/" not in key and "\\" not in key


@pytest.mark.parametrize("name", HOSTILE)
def test_the_default_log_root_stays_inside_autotune_logs_beside_the_database(
    tmp_path: Path, name: str
) -> None:
    root = default_log_root(f"sqlite:///{tmp_path / 'study.db'}", name)
    assert root.parent == (tmp_path / LOG_FOLDER).resolve()
    assert root.resolve().is_relative_to((tmp_path / LOG_FOLDER).resolve())


def test_a_plain_name_is_kept_readable() -> None:
    assert slug("digits_cnn-quick") == "digits_cnn-quick"
    assert study_key("sqlite:///a.db", "digits_cnn-quick").startswith("digits_cnn-quick-")
    assert slug("../../x") == "x"
    assert slug("") == slug("...") == "study"


def test_two_databases_in_one_folder_with_the_same_study_name_get_different_folders(
    tmp_path: Path,
) -> None:
    a = default_log_root(f"sqlite:///{tmp_path / 'a.db'}", "same")
    b = default_log_root(f"sqlite:///{tmp_path / 'b.db'}", "same")
    assert a.parent == b.parent and a != b


def test_names_that_slug_alike_get_different_folders() -> None:
    names = ["a/b", "a_b", "a b", "a?b", "x" * 5000, "x" * 5001]
    keys = {study_key("sqlite:///a.db", name) for name in names}
    assert len(keys) == len(names)


def test_one_database_named_two_ways_is_one_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    relative = default_log_root("sqlite:///study.db", "s")
    absolute = default_log_root(f"sqlite:///{tmp_path / 'sub' / '..' / 'study.db'}", "s")
    assert relative == absolute


def test_a_server_storage_keys_without_its_password_and_logs_in_the_current_folder(
    tmp_path: Path,
) -> None:
    one = "postgresql://me:secret@db.example/autotune"
    other = "postgresql://me:rotated@db.example/autotune"
    assert storage_identity(one) == "postgresql://me@db.example/autotune"
    assert study_key(one, "s") == study_key(other, "s")
    assert study_key(one, "s") != study_key("postgresql://me@other.example/autotune", "s")
    assert default_log_root(one, "s", cwd=tmp_path).parent == (tmp_path / LOG_FOLDER).resolve()
