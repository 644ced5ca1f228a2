"""Opening the Optuna storage a study lives in, with clear errors for bad URLs and paths.

SQLite (``sqlite:///autotune.db``) is the embedded default, for one process. Several workers share
a Journal file on one host (``journal:///study.journal``: Optuna's ``JournalFileBackend``, with
its symlink lock, or ``?lock=open`` for its ``O_EXCL`` lock on filesystems without symbolic
links) or a PostgreSQL server across hosts (``postgresql+psycopg://user@host/db``). MySQL URLs
open too, for one process. Heartbeats let an RDB study find trials whose process died; a Journal
file has none, so :mod:`autotune.study.recovery` keeps its own liveness record there.
"""

from __future__ import annotations

import contextlib
import json
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
SCHEMES = ("sqlite", "journal", "postgresql", "mysql")
JOURNAL_PREFIX = "journal:///"
#: The Journal file locks (``?lock=``): Optuna's symlink lock (the default) and its open lock.
JOURNAL_LOCKS = ("symlink", "open")
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


def journal_path(url: str) -> Path | None:
    """The file of a ``journal:///`` URL (relative like SQLite's; ``journal:////abs/file`` is
    absolute), without its ``?lock=`` option; None for other URLs."""
    if not url.startswith(JOURNAL_PREFIX):
        return None
    path = url[len(JOURNAL_PREFIX) :].split("?", 1)[0]
    return Path(path) if path else None


def journal_lock(url: str) -> str:
    """The ``?lock=`` option of a Journal URL: "symlink" (the default) or "open"."""
    _, _, query = url.partition("?")
    options = dict(part.partition("=")[::2] for part in query.split("&") if part)
    unknown = sorted(set(options) - {"lock"})
    lock = options.get("lock", JOURNAL_LOCKS[0])
    if unknown or lock not in JOURNAL_LOCKS:
        raise ConfigError(
            f"a Journal URL takes one option, ?lock= with one of {list(JOURNAL_LOCKS)}. "
            f"Received: {url!r}",
            argument=STORAGE,
        )
    return lock


def database_file(url: str) -> Path | None:
    """The file a study lives in: an SQLite database or a Journal file; None for a server."""
    return sqlite_path(url) or journal_path(url)


def storage_files(url: str) -> tuple[Path, ...]:
    """The files a file storage keeps: an SQLite database, its journals and autotune's run lock
    (:mod:`autotune.study.run_lock`); a Journal file, Optuna's lock and autotune's claims
    (:mod:`autotune.study.claims`). None for a server."""
    path = database_file(url)
    if path is None:
        return ()
    if journal_path(url) is not None:
        suffixes: tuple[str, ...] = (".lock", ".baseline.lock", ".proposal.lock")
    else:
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
    if scheme == "journal":
        journal_lock(url)
        if journal_path(url) is None:
            raise ConfigError(
                "must name a Journal file, for example 'journal:///autotune.journal'. "
                f"Received: {url!r}",
                argument=STORAGE,
            )
    path = database_file(url)
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
            f": {'Journal' if scheme == 'journal' else 'database'} file {str(path)!r} does not "
            f"exist. Received: {url!r}",
            argument=STORAGE,
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


def engine_url(url: str) -> str:
    """``url`` as SQLAlchemy opens it: a bare ``postgresql://`` goes through psycopg 3 (the
    driver autotune installs), not SQLAlchemy's default psycopg2."""
    if url.startswith("postgresql://"):
        return "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def open_storage(
    url: str = DEFAULT_STORAGE,
    *,
    must_exist: bool = False,
    stale_trial_callback: Any = None,
) -> optuna.storages.BaseStorage:
    """An Optuna storage: RDB with heartbeats (and a generous SQLite busy timeout), or a
    Journal file."""
    check_url(url, must_exist=must_exist)
    journal = journal_path(url)
    if journal is not None:
        return _open_journal(url, journal)
    engine_kwargs: dict[str, Any] = {}
    if url.startswith("sqlite"):
        engine_kwargs["connect_args"] = {"timeout": SQLITE_BUSY_SECONDS}
    try:
        with quiet_experimental():
            return optuna.storages.RDBStorage(
                engine_url(url),
                engine_kwargs=engine_kwargs,
                heartbeat_interval=HEARTBEAT_SECONDS,
                grace_period=GRACE_SECONDS,
                heartbeat_stale_trial_callback=stale_trial_callback,
            )
    except Exception as error:  # SQLAlchemy raises many kinds; all mean "cannot open this"
        raise ConfigError(
            f"{url!r} cannot be opened: {database_error_text(error)}", argument=STORAGE
        ) from error


def _open_journal(url: str, path: Path) -> optuna.storages.JournalStorage:
    from optuna.storages.journal import (
        JournalFileBackend,
        JournalFileOpenLock,
        JournalFileSymlinkLock,
    )

    lock_type = JournalFileOpenLock if journal_lock(url) == "open" else JournalFileSymlinkLock
    _check_journal(url, path)
    try:
        backend = JournalFileBackend(str(path), lock_obj=lock_type(str(path)))
        return optuna.storages.JournalStorage(backend)
    except (OSError, ValueError) as error:  # unreadable, or not a journal (a JSON error)
        raise ConfigError(f"{url!r} cannot be opened: {error}", argument=STORAGE) from error


def _check_journal(url: str, path: Path) -> None:
    """Refuses an existing file that is not an Optuna Journal (whose records Optuna would
    otherwise skip as unreadable, then append its own to: a database given by mistake would be
    damaged)."""
    try:
        with open(path, "rb") as journal:
            first = journal.readline(1 << 16)
    except FileNotFoundError:
        return
    except OSError as error:
        raise ConfigError(
            f"{url!r} cannot be read: {error.strerror or error}", argument=STORAGE
        ) from error
    if not first:
        return
    try:
        record = json.loads(first)
    except ValueError:
        record = None
    if isinstance(record, dict) and "op_code" in record:
        return
    what = (
        "an SQLite database (use sqlite:///...)"
        if first.startswith(b"SQLite format 3")
        else "not an Optuna Journal file: its first line is not a journal record"
    )
    raise ConfigError(
        f"{str(path)!r} is {what}; autotune does not write to it. Received: {url!r}",
        argument=STORAGE,
    )


def has_heartbeat(storage: optuna.storages.BaseStorage) -> bool:
    """Whether Optuna itself finds this storage's stale trials (RDB heartbeats; a study wraps
    its RDB storage in a cache that has them too)."""
    from optuna.storages._heartbeat import is_heartbeat_enabled

    return is_heartbeat_enabled(storage)


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
