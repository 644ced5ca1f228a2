"""One process runs trials on an SQLite study at a time: a second one is refused, not doubled.

Two ``autotune run`` processes on one SQLite file would each run the baseline, seed their
samplers alike and propose the same configurations in lockstep, and on one host their trials
would slow each other, so every throughput and the early stop would be wrong, silently. While
a study runs trials (:meth:`~autotune.study.Study.optimize`, :meth:`~autotune.study.Study.confirm`)
it holds an exclusive ``flock`` on ``<database>.lock`` beside the database file, with who holds
it written inside; another process asking for it gets a
:class:`~autotune.exceptions.StudyBusyError` (exit code 2) naming the holder. The kernel drops
the lock when its process ends, however it ends, so a crashed run never blocks the next one.
Storages made for several workers (a Journal file, PostgreSQL) take no lock
here: their workers coordinate through claims (:mod:`autotune.study.claims`). No TensorFlow
here.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from autotune.exceptions import ConfigError, StudyBusyError
from autotune.store.storage import sqlite_path

#: The lock files this process holds (a block holding one may call another that asks again).
_held: set[Path] = set()


def lock_file(storage_url: str) -> Path | None:
    """The lock file of an SQLite storage (None for a Journal file or a server, which several
    workers share): ``<database>.lock`` beside the database file itself, whatever name the URL
    gives it (a symbolic link, a relative path: the same file has the same lock)."""
    database = sqlite_path(storage_url)
    if database is None:
        return None
    real = Path(os.path.realpath(database))
    return real.with_name(real.name + ".lock")


def _lock_database(storage_url: str) -> int | None:
    """A descriptor holding an exclusive ``flock`` on the database file itself, which every
    name of it shares (a hard link too); None when the file is not there yet. Raises
    BlockingIOError when another process holds it. SQLite locks with ``fcntl`` byte ranges,
    which a ``flock`` does not touch."""
    database = sqlite_path(storage_url)
    if database is None:
        return None
    try:
        descriptor = os.open(database, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _holder(path: Path) -> str:
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
        return (
            f"pid {holder['pid']} on host {holder['host']}, running study "
            f"{holder['study']!r} since {holder['since']}"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that has not said who it is yet"


def _held_file(path: Path) -> bool:
    """Whether this process holds the lock of the same database under another name."""
    database = path.with_name(path.name[: -len(".lock")])
    for held in _held:
        with contextlib.suppress(OSError):
            if os.path.samefile(database, held.with_name(held.name[: -len(".lock")])):
                return True
    return False


@contextlib.contextmanager
def hold(storage_url: str, study_name: str) -> Iterator[None]:
    """Holds the storage's run lock while the block runs trials; raises StudyBusyError at once when
    another process holds it. Re-entrant: a block inside one holding it holds it already."""
    path = lock_file(storage_url)
    if path is None or path in _held or _held_file(path):  # a server, or held already here
        yield
        return
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as error:
        raise ConfigError(
            f"cannot open the run lock {str(path)!r} beside the database: "
            f"{error.strerror or error}",
            argument="storage",
        ) from error
    database: int | None = None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            database = _lock_database(storage_url)
        except BlockingIOError:
            raise StudyBusyError(
                f"{storage_url} is in use by {_holder(path)}. An SQLite study runs in one "
                "process at a time: two would measure the same configurations twice and slow "
                "each other's trials. Wait for it to finish (or stop it); to share one study "
                "between several workers, use a Journal file on one host "
                "(journal:///autotune.journal) or PostgreSQL across hosts (postgresql://...)."
            ) from None
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "study": study_name,
            "since": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        }
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, json.dumps(holder).encode(), 0)
        _held.add(path)
        try:
            yield
        finally:
            _held.discard(path)
    finally:
        if database is not None:
            os.close(database)
        os.close(descriptor)  # releases the lock


__all__ = ["hold", "lock_file"]
