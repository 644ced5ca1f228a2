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
import sqlite3
import time
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
#: Seconds a network storage (PostgreSQL, MySQL) may take to connect before the command fails;
#: the environment variable :data:`CONNECT_TIMEOUT_VARIABLE` sets another number of seconds.
CONNECT_TIMEOUT_SECONDS = 10
CONNECT_TIMEOUT_VARIABLE = "AUTOTUNE_CONNECT_TIMEOUT"
#: The tables every Optuna RDB storage has: a database without them holds no study.
OPTUNA_TABLES = frozenset({"studies", "trials", "version_info"})
#: The op codes of Optuna's Journal records (optuna.storages.journal's JournalOperation).
JOURNAL_OP_CODES = frozenset(range(11))


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


def connect_timeout() -> float:
    """Seconds a network storage may take to connect: :data:`CONNECT_TIMEOUT_SECONDS`, or the
    positive number of seconds in the environment variable :data:`CONNECT_TIMEOUT_VARIABLE`."""
    text = os.environ.get(CONNECT_TIMEOUT_VARIABLE, "").strip()
    if not text:
        return CONNECT_TIMEOUT_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= 3600:  # also refuses NaN
        raise ConfigError(
            f": environment variable {CONNECT_TIMEOUT_VARIABLE} must be a number of seconds "
            f"above 0 and at most 3600. Received: {text[:40]!r}",
            argument=STORAGE,
        )
    return seconds


def connect_args(url: str) -> dict[str, Any]:
    """The DB-API connect arguments autotune opens ``url`` with: SQLite's busy timeout, or a
    network storage's connect timeout (whole seconds, as libpq and PyMySQL take it)."""
    if url.startswith("sqlite"):
        return {"timeout": SQLITE_BUSY_SECONDS}
    if url.startswith(("postgresql", "mysql")):
        return {"connect_timeout": max(1, round(connect_timeout()))}
    return {}


def open_storage(
    url: str = DEFAULT_STORAGE,
    *,
    must_exist: bool = False,
    stale_trial_callback: Any = None,
    read_only: bool = False,
) -> optuna.storages.BaseStorage:
    """An Optuna storage: RDB with heartbeats (and a generous SQLite busy timeout), or a
    Journal file.

    A Journal file is checked whole before it is opened (:func:`check_journal`). With
    ``read_only`` (the reading commands) nothing is written to the storage: an RDB storage must
    hold Optuna's tables already (they are not created), so an empty file or another database
    is refused, not turned into a study storage.
    """
    check_url(url, must_exist=must_exist)
    journal = journal_path(url)
    if journal is not None:
        return _open_journal(url, journal)
    if read_only:
        _check_sqlite_is_optuna(url)
    engine_kwargs: dict[str, Any] = {"connect_args": connect_args(url)}
    try:
        with quiet_experimental():
            return optuna.storages.RDBStorage(
                engine_url(url),
                engine_kwargs=engine_kwargs,
                skip_table_creation=read_only,
                heartbeat_interval=HEARTBEAT_SECONDS,
                grace_period=GRACE_SECONDS,
                heartbeat_stale_trial_callback=stale_trial_callback,
            )
    except Exception as error:  # SQLAlchemy raises many kinds; all mean "cannot open this"
        if read_only and _missing_tables(error):
            raise ConfigError(
                f"{url!r} is not an autotune/Optuna study storage: it has no Optuna tables; "
                "autotune does not write to it",
                argument=STORAGE,
            ) from error
        raise ConfigError(
            f"{url!r} cannot be opened: {database_error_text(error)}", argument=STORAGE
        ) from error


def _missing_tables(error: BaseException) -> bool:
    """Whether ``error`` says a table is missing (SQLite's "no such table", PostgreSQL's
    UndefinedTable: 'relation "version_info" does not exist', MySQL's "doesn't exist")."""
    for cause in error_chain(error):
        text = str(cause).lower()
        if type(cause).__name__ == "UndefinedTable" or "no such table" in text:
            return True
        if "relation" in text and "does not exist" in text:
            return True
        if "table" in text and "doesn't exist" in text:
            return True
    return False


def _check_sqlite_is_optuna(url: str) -> None:
    """Refuses an SQLite file that is empty or holds no Optuna tables, reading it read-only
    (``mode=ro``: SQLite neither creates the file nor writes to it)."""
    path = sqlite_path(url)
    if path is None:
        return
    not_a_study = f"{url!r} is not an autotune/Optuna study storage"
    try:
        size = path.stat().st_size
    except OSError as error:
        raise ConfigError(
            f"{url!r} cannot be read: {error.strerror or error}", argument=STORAGE
        ) from error
    if size == 0:
        raise ConfigError(
            f"{not_a_study}: {str(path)!r} is an empty file; autotune does not write to it. "
            "Name the database a study was run with",
            argument=STORAGE,
        )
    uri = "file:" + _uri_path(path) + "?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_SECONDS)
        try:
            rows = connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
            tables = {row[0] for row in rows}
        finally:
            connection.close()
    except sqlite3.Error as error:
        raise ConfigError(
            f"{not_a_study}: {str(path)!r} cannot be read as an SQLite database ({error}); "
            "autotune does not write to it",
            argument=STORAGE,
        ) from error
    if not OPTUNA_TABLES.issubset(tables):
        raise ConfigError(
            f"{not_a_study}: the SQLite database {str(path)!r} has no Optuna tables; "
            "autotune does not write to it. Name the database a study was run with",
            argument=STORAGE,
        )


def _uri_path(path: Path) -> str:
    from urllib.parse import quote

    return quote(str(path.absolute()), safe="/")


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
    """Refuses an existing file that is not a whole Optuna Journal before anything is appended
    to it (:func:`check_journal`)."""
    for attempt in range(4):
        try:
            check_journal(url, path)
            return
        except _CutOff:
            if attempt == 3:
                raise
            time.sleep(0.1)  # another worker may be writing its last line this instant


class _CutOff(ConfigError):
    """The Journal's last line has no newline yet."""


def check_journal(url: str, path: Path) -> None:
    """Raises ConfigError (argument "storage") unless the file at ``path`` is a whole Optuna
    Journal: every line a JSON object with a known op code, the last one ended by a newline.

    Optuna would skip a line it cannot read, then append its own records to a half-written
    last line (what a killed writer or a full disk leaves), and from then on no command could
    open the study; a line it can read but does not know fails deep inside it. A missing or
    empty file is a new Journal.
    """
    try:
        with open(path, "rb") as journal:
            data = journal.read()
    except FileNotFoundError:
        return
    except OSError as error:
        raise ConfigError(
            f"{url!r} cannot be read: {error.strerror or error}", argument=STORAGE
        ) from error
    if not data:
        return
    if data.startswith(b"SQLite format 3"):
        raise ConfigError(
            f"{str(path)!r} is an SQLite database (use sqlite:///...); autotune does not write "
            f"to it. Received: {url!r}",
            argument=STORAGE,
        )
    lines = data.split(b"\n")
    complete, last = lines[:-1], lines[-1]
    for number, line in enumerate(complete, start=1):
        problem = _journal_line_problem(line)
        if problem is not None:
            if number == 1:
                raise ConfigError(
                    f"{str(path)!r} is not an Optuna Journal file: its first line is not a "
                    f"journal record ({problem}); autotune does not write to it. "
                    f"Received: {url!r}",
                    argument=STORAGE,
                )
            raise ConfigError(
                f"the Journal file {str(path)!r} is damaged: line {number} {problem}; autotune "
                "does not write to it. Restore it from a copy, or keep a copy and remove that "
                "line and those after it (the records they held are lost)",
                argument=STORAGE,
            )
    if last:
        where = f"line {len(lines)}"
        raise _CutOff(
            f"the Journal file {str(path)!r} is damaged: its last line ({where}) is cut off "
            "(no newline: a writer was killed or the disk filled); autotune does not write to "
            "it. Keep a copy, then remove the partial line "
            f"(truncate -s {len(data) - len(last)} {str(path)!r}) and run again",
            argument=STORAGE,
        )


def _journal_line_problem(line: bytes) -> str | None:
    """What is wrong with one Journal line, None when it is a record Optuna knows."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return "is not JSON"
    if not isinstance(record, dict):
        return f"is a JSON {type(record).__name__}, not a record"
    op_code = record.get("op_code")
    if isinstance(op_code, bool) or not isinstance(op_code, int):
        return "has no op_code"
    if op_code not in JOURNAL_OP_CODES:
        return f"has the unknown op_code {op_code}"
    return None


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
