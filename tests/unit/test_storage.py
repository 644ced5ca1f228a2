"""Unit tests for autotune.store.storage: URL checks, opening SQLite storage, picking a study
name."""

from __future__ import annotations

import os
import re
from pathlib import Path

import optuna
import pytest

from autotune.cli import error_message
from autotune.exceptions import ConfigError
from autotune.store.storage import (
    DEFAULT_STORAGE,
    GRACE_SECONDS,
    HEARTBEAT_SECONDS,
    check_url,
    database_file,
    engine_url,
    has_heartbeat,
    journal_lock,
    journal_path,
    open_storage,
    pick_study_name,
    sqlite_path,
    storage_files,
    study_names,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)


# --------------------------------------------------------------------------------------------
# sqlite_path
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:///autotune.db", Path("autotune.db")),
        ("sqlite:///runs/a.db", Path("runs/a.db")),
        ("sqlite:////abs/a.db", Path("/abs/a.db")),
        ("sqlite:///:memory:", None),
        ("sqlite:///", None),
        ("sqlite://", None),
        ("postgresql://user@host/db", None),
        ("mysql+pymysql://user@host/db", None),
    ],
)
def test_sqlite_path(url, expected):
    assert sqlite_path(url) == expected


# --------------------------------------------------------------------------------------------
# check_url
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["autotune.db", "/tmp/autotune.db", "sqlite:autotune.db", ""])
def test_url_without_scheme(url):
    with pytest.raises(ConfigError) as info:
        check_url(url)

    message = error_message(info.value)
    assert info.value.argument == "storage"
    assert "--storage must be a database URL such as 'sqlite:///autotune.db'" in message
    assert f"Received: {url!r}" in message


@pytest.mark.parametrize("url", [None, 3, Path("sqlite:///a.db")])
def test_url_that_is_not_a_string(url):
    with pytest.raises(ConfigError) as info:
        check_url(url)

    assert info.value.argument == "storage"
    assert "--storage must be a database URL" in error_message(info.value)


@pytest.mark.parametrize("url", ["redis://host/0", "http://host/db", "://x", "sqlit:///a.db"])
def test_unknown_scheme(url):
    with pytest.raises(ConfigError) as info:
        check_url(url)

    message = error_message(info.value)
    assert info.value.argument == "storage"
    assert "--storage scheme must be one of ['sqlite', 'journal', 'postgresql', 'mysql']" in message
    assert f"Received: {url!r}" in message


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://user@host/db",
        "postgresql+psycopg2://user:pw@host:5432/db",
        "mysql://user@host/db",
        "mysql+pymysql://user@host/db",
    ],
)
def test_server_urls_pass_without_touching_files(url):
    check_url(url)
    check_url(url, must_exist=True)


@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite://", "sqlite:///"])
def test_in_memory_sqlite_is_refused_because_the_study_would_vanish_at_exit(url):
    with pytest.raises(ConfigError) as info:
        check_url(url)

    message = error_message(info.value)
    assert message.startswith("--storage must name a database file: in-memory SQLite")
    assert f"Received: {url!r}" in message


def test_storage_files_are_the_database_its_journals_and_its_run_lock():
    assert storage_files("sqlite:///runs/a.db") == (
        Path("runs/a.db"),
        Path("runs/a.db-journal"),
        Path("runs/a.db-wal"),
        Path("runs/a.db-shm"),
        Path("runs/a.db.lock"),
    )
    assert storage_files("postgresql://user@host/db") == ()


def test_sqlite_in_an_existing_writable_folder_passes(tmp_path):
    check_url(f"sqlite:///{tmp_path}/new.db")


def test_relative_sqlite_path_resolves_against_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()

    check_url("sqlite:///sub/a.db")
    with pytest.raises(ConfigError, match="does not exist"):
        check_url("sqlite:///other/a.db")


def test_sqlite_in_a_missing_folder(tmp_path):
    url = f"sqlite:///{tmp_path}/missing/deeper/a.db"

    with pytest.raises(ConfigError) as info:
        check_url(url)

    message = str(info.value)
    assert f"folder {str(tmp_path / 'missing' / 'deeper')!r} for the database does not exist" in (
        message
    )
    assert f"Received: {url!r}" in message


def test_sqlite_in_a_read_only_folder(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("this user (root?) can write to a 0o500 folder")
        url = f"sqlite:///{folder}/a.db"
        with pytest.raises(ConfigError) as info:
            check_url(url)
        message = str(info.value)
        assert f"folder {str(folder)!r} for the database is not writable" in message
        assert f"Received: {url!r}" in message
    finally:
        folder.chmod(0o700)


def test_existing_database_in_a_read_only_folder_may_be_read(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "a.db").write_bytes(b"")
    folder.chmod(0o500)
    try:
        check_url(f"sqlite:///{folder}/a.db", must_exist=True)
    finally:
        folder.chmod(0o700)


def test_must_exist_with_a_missing_file(tmp_path):
    url = f"sqlite:///{tmp_path}/absent.db"

    with pytest.raises(ConfigError) as info:
        check_url(url, must_exist=True)

    message = str(info.value)
    assert f"database file {str(tmp_path / 'absent.db')!r} does not exist" in message
    assert f"Received: {url!r}" in message


def test_must_exist_with_a_folder_instead_of_a_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        check_url(f"sqlite:///{tmp_path}", must_exist=True)


def test_must_exist_with_an_existing_file(tmp_path):
    (tmp_path / "a.db").write_bytes(b"")

    check_url(f"sqlite:///{tmp_path}/a.db", must_exist=True)


def test_default_storage_is_sqlite_in_the_current_folder():
    assert DEFAULT_STORAGE == "sqlite:///autotune.db"
    assert sqlite_path(DEFAULT_STORAGE) == Path("autotune.db")


# --------------------------------------------------------------------------------------------
# open_storage
# --------------------------------------------------------------------------------------------


def test_open_storage_creates_an_sqlite_database_with_heartbeats(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path}/s.db")

    assert isinstance(storage, optuna.storages.RDBStorage)
    assert storage.heartbeat_interval == HEARTBEAT_SECONDS
    assert storage.grace_period == GRACE_SECONDS
    optuna.create_study(storage=storage, study_name="x")
    assert (tmp_path / "s.db").is_file()


def test_open_storage_passes_the_stale_trial_callback(tmp_path):
    def callback(study, trial):
        pass

    storage = open_storage(f"sqlite:///{tmp_path}/s.db", stale_trial_callback=callback)

    assert storage.get_heartbeat_stale_trial_callback() is callback


def test_open_storage_checks_the_url_first(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        open_storage(f"sqlite:///{tmp_path}/absent.db", must_exist=True)
    with pytest.raises(ConfigError, match="scheme must be one of"):
        open_storage("redis://localhost/0")


def test_open_storage_wraps_database_errors(tmp_path):
    not_a_database = tmp_path / "notes.db"
    not_a_database.write_text("these are not the tables you are looking for\n" * 100)
    url = f"sqlite:///{not_a_database}"

    with pytest.raises(ConfigError) as info:
        open_storage(url, must_exist=True)

    assert info.value.argument == "storage"
    assert re.search(r"--storage .* cannot be opened", error_message(info.value))
    assert url in str(info.value)


# --------------------------------------------------------------------------------------------
# study_names and pick_study_name
# --------------------------------------------------------------------------------------------


def storage_with(*names):
    storage = optuna.storages.InMemoryStorage()
    for name in names:
        optuna.create_study(storage=storage, study_name=name)
    return storage


def test_study_names():
    assert study_names(storage_with()) == []
    assert sorted(study_names(storage_with("b", "a"))) == ["a", "b"]


def test_pick_the_only_study():
    assert pick_study_name(storage_with("only"), "sqlite:///x.db", None) == "only"


def test_pick_a_named_study():
    assert pick_study_name(storage_with("a", "b"), "sqlite:///x.db", "b") == "b"


def test_pick_from_an_empty_storage():
    with pytest.raises(ConfigError) as info:
        pick_study_name(storage_with(), "sqlite:///x.db", None)

    message = error_message(info.value)
    assert info.value.argument == "storage"
    assert "--storage 'sqlite:///x.db' holds no study yet" in message
    assert "autotune run" in message


def test_pick_without_a_name_among_several():
    with pytest.raises(ConfigError) as info:
        pick_study_name(storage_with("a", "b"), "sqlite:///x.db", None)

    message = error_message(info.value)
    assert info.value.argument == "study_name"
    assert "--study is needed" in message
    assert "'sqlite:///x.db'" in message
    assert "'a'" in message and "'b'" in message


def test_pick_an_unknown_name_lists_the_names():
    with pytest.raises(ConfigError) as info:
        pick_study_name(storage_with("a", "b"), "sqlite:///x.db", "c")

    message = error_message(info.value)
    assert info.value.argument == "study_name"
    assert "--study 'c' is not in 'sqlite:///x.db'" in message
    assert "'a'" in message and "'b'" in message


def test_pick_a_name_from_an_empty_storage():
    with pytest.raises(ConfigError, match="it holds: no study"):
        pick_study_name(storage_with(), "sqlite:///x.db", "c")


# --------------------------------------------------------------------------------------------
# Journal files (several workers on one host)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "path", "lock"),
    [
        ("journal:///study.journal", Path("study.journal"), "symlink"),
        ("journal:////abs/s.journal", Path("/abs/s.journal"), "symlink"),
        ("journal:///s.journal?lock=open", Path("s.journal"), "open"),
        ("journal:///s.journal?lock=symlink", Path("s.journal"), "symlink"),
    ],
)
def test_journal_urls_name_a_file_and_its_lock(url, path, lock):
    assert journal_path(url) == path
    assert database_file(url) == path
    assert journal_lock(url) == lock


@pytest.mark.parametrize("url", ["journal:///s.journal?lock=nfs", "journal:///s.journal?x=1"])
def test_a_journal_url_with_an_unknown_option_is_refused(url, tmp_path):
    with pytest.raises(ConfigError) as info:
        check_url(url)

    assert "one option, ?lock= with one of ['symlink', 'open']" in str(info.value)
    assert f"Received: {url!r}" in str(info.value)


def test_a_journal_url_without_a_file_is_refused():
    with pytest.raises(ConfigError, match="must name a Journal file"):
        check_url("journal:///")


def test_a_journal_file_that_does_not_exist_is_named_when_it_must(tmp_path):
    with pytest.raises(ConfigError, match=r"Journal file .* does not exist"):
        check_url(f"journal:///{tmp_path}/none.journal", must_exist=True)


@pytest.mark.parametrize("lock", ["symlink", "open"])
def test_a_journal_file_opens_as_optunas_journal_storage(tmp_path, lock):
    url = f"journal:///{tmp_path}/s.journal?lock={lock}"

    storage = open_storage(url)
    optuna.create_study(storage=storage, study_name="one")

    assert isinstance(storage, optuna.storages.JournalStorage)
    assert not has_heartbeat(storage)
    assert study_names(open_storage(url, must_exist=True)) == ["one"]


def test_a_file_that_is_not_a_journal_is_refused_naming_it(tmp_path):
    path = tmp_path / "not.journal"
    path.write_text("this is not JSON\n", encoding="utf-8")

    with pytest.raises(ConfigError) as info:
        open_storage(f"journal:///{path}", must_exist=True)

    assert f"{str(path)!r} is not an Optuna Journal file" in str(info.value)
    assert path.read_text(encoding="utf-8") == "this is not JSON\n"  # untouched


def test_an_sqlite_database_given_as_a_journal_is_refused_untouched(tmp_path):
    database = tmp_path / "study.db"
    optuna.create_study(storage=open_storage(f"sqlite:///{database}"), study_name="kept")
    before = database.read_bytes()

    with pytest.raises(ConfigError, match=r"is an SQLite database \(use sqlite:///"):
        open_storage(f"journal:///{database}")

    assert database.read_bytes() == before


def test_journal_storage_files_are_the_journal_and_its_locks():
    assert storage_files("journal:///runs/s.journal") == (
        Path("runs/s.journal"),
        Path("runs/s.journal.lock"),
        Path("runs/s.journal.baseline.lock"),
        Path("runs/s.journal.proposal.lock"),
    )


def test_a_bare_postgresql_url_goes_through_psycopg_3():
    assert engine_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert engine_url("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2://u@h/db"
    assert engine_url("sqlite:///a.db") == "sqlite:///a.db"


def test_a_postgresql_study_opens_with_heartbeats(postgres_url):
    storage = open_storage(postgres_url)
    optuna.create_study(storage=storage, study_name="pg")

    assert has_heartbeat(storage)
    assert study_names(storage) == ["pg"]
