"""Opening the Optuna storage a study lives in, with clear errors for bad URLs and paths.

SQLite (``sqlite:///autotune.db``) is the embedded default; PostgreSQL and MySQL URLs work for many
workers. Heartbeats let a resumed study find trials whose process died.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import optuna

from autotune.exceptions import ConfigError, error_chain

DEFAULT_STORAGE = "sqlite:///autotune.db"
HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 30
SQLITE_BUSY_SECONDS = 60
SCHEMES = ("sqlite", "postgresql", "mysql")
#: The arguments a storage error names (:attr:`autotune.exceptions.ConfigError.argument`).
STORAGE = "storage"
STUDY_NAME = "study_name"


@contextlib.contextmanager
def quiet_experimental() -> Iterator[None]:
    """Silences Optuna's ExperimentalWarning for the features autotune relies on (heartbeats,
    metric names, the retry callback)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        yield


def sqlite_path(url: str) -> Path | None:
    """The database file of an ``sqlite:///`` URL, None for other URLs or in-memory SQLite."""
    if not url.startswith("sqlite:///"):
        return None
    path = url[len("sqlite:///") :]
    return None if path in ("", ":memory:") else Path(path)


def storage_files(url: str) -> tuple[Path, ...]:
    """The files an SQLite storage keeps (the database, its journals and autotune's run lock,
    :mod:`autotune.study.run_lock`); none for a server."""
    path = sqlite_path(url)
    if path is None:
        return ()
    suffixes = ("-journal", "-wal", "-shm", ".lock")
    return (path, *(path.with_name(path.name + suffix) for suffix in suffixes))


def check_url(url: str, *, must_exist: bool = False) -> None:
    """Raises ConfigError (argument "storage") when ``url`` cannot hold a study."""
    if not isinstance(url, str) or "://" not in url:
        raise ConfigError(
            f"must be a database URL such as {DEFAULT_STORAGE!r} or "
            f"'postgresql://user@host/db'. Received: {url!r}",
            argument=STORAGE,
        )
    scheme = url.split("://", 1)[0].split("+", 1)[0]
    if scheme not in SCHEMES:
        raise ConfigError(
            f"scheme must be one of {list(SCHEMES)}. Received: {url!r}", argument=STORAGE
        )
    path = sqlite_path(url)
    if path is None:
        if scheme == "sqlite":
            raise ConfigError(
                "must name a database file: in-memory SQLite would throw the whole study away "
                f"when the command exits. Use for example {DEFAULT_STORAGE!r}. Received: {url!r}",
                argument=STORAGE,
            )
        return
    if must_exist and not path.is_file():
        raise ConfigError(
            f": database file {str(path)!r} does not exist. Received: {url!r}", argument=STORAGE
        )
    folder = path.resolve().parent
    if not folder.is_dir():
        raise ConfigError(
            f": folder {str(folder)!r} for the database does not exist. Received: {url!r}",
            argument=STORAGE,
        )
    if not must_exist and not os.access(folder, os.W_OK):
        raise ConfigError(
            f": folder {str(folder)!r} for the database is not writable. Received: {url!r}",
            argument=STORAGE,
        )


def open_storage(
    url: str = DEFAULT_STORAGE,
    *,
    must_exist: bool = False,
    stale_trial_callback: Any = None,
) -> optuna.storages.RDBStorage:
    """An Optuna RDB storage with heartbeats and a generous SQLite busy timeout."""
    check_url(url, must_exist=must_exist)
    engine_kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        engine_kwargs["connect_args"] = {"timeout": SQLITE_BUSY_SECONDS}
    try:
        with quiet_experimental():
            return optuna.storages.RDBStorage(
                url,
                engine_kwargs=engine_kwargs,
                heartbeat_interval=HEARTBEAT_SECONDS,
                grace_period=GRACE_SECONDS,
                heartbeat_stale_trial_callback=stale_trial_callback,
            )
    except Exception as error:  # SQLAlchemy raises many kinds; all mean "cannot open this"
        raise ConfigError(
            f"{url!r} cannot be opened: {database_error_text(error)}", argument=STORAGE
        ) from error


def is_storage_error(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) is the database failing: an SQLAlchemy or DB-API
    error, or Optuna's StorageInternalError, rather than a bug or bad input."""
    for cause in error_chain(error):
        module = type(cause).__module__
        if module.startswith(("sqlalchemy", "sqlite3", "psycopg", "pymysql")) or (
            type(cause).__name__ == "StorageInternalError"
        ):
            return True
    return False


def database_error_text(error: BaseException) -> str:
    """One line saying what the database reported: the innermost driver error's first line
    (``database disk image is malformed``), without SQLAlchemy's SQL and links."""
    causes = error_chain(error)
    for cause in reversed(causes):  # the driver's own error is the innermost one
        module = type(cause).__module__
        if module.startswith(("sqlite3", "psycopg", "pymysql")) or module == "_sqlite3":
            return _first_line(cause)
    orig = getattr(error, "orig", None)  # SQLAlchemy's wrapper keeps the driver's error here
    return _first_line(orig if isinstance(orig, BaseException) else error)


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def study_names(storage: optuna.storages.BaseStorage) -> list[str]:
    return [s.study_name for s in optuna.get_all_study_summaries(storage, include_best_trial=False)]


def pick_study_name(storage: optuna.storages.BaseStorage, url: str, name: str | None) -> str:
    """``name`` if the storage holds it; the only study when ``name`` is None."""
    names = study_names(storage)
    if name is None:
        if len(names) == 1:
            return names[0]
        if not names:
            raise ConfigError(
                f"{url!r} holds no study yet; run 'autotune run' first", argument=STORAGE
            )
        raise ConfigError(f"is needed: {url!r} holds several studies: {names}", argument=STUDY_NAME)
    if name not in names:
        raise ConfigError(
            f"{name!r} is not in {url!r}; it holds: {names or 'no study'}", argument=STUDY_NAME
        )
    return name
