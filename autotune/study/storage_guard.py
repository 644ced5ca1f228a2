"""Storage faults while a study runs: a full disk, a database file deleted or replaced.

SQLite refuses to write through a connection whose database file was deleted or replaced
("attempt to write a readonly database"), but a connection opened after the replacement writes
into the new file, and Optuna reports every failed commit as "invalid data in the commit, e.g.
exceeding max length". :class:`StorageGuard` remembers which file a study opened (its device and
inode) and :meth:`StorageGuard.check` raises a :class:`StudyError` once it is gone or another;
:func:`storage_fault` turns an error raised while writing the storage into one line naming the
file and the cause (a full disk is ENOSPC), or None when it is not a storage fault.

The study loop uses both outside Optuna's ``optimize`` (an error raised inside an objective makes
Optuna write the trial's failure, which fails the same way): ``StorageGuard(url)`` when the study
opens its storage, ``check()`` before each trial, and ``storage_fault(error, url)`` around each
trial, raised in place of the error it describes. Trials already stored are never touched: the
study stops, and the same command run again, once the disk has room or the file is back, resumes
it (the trial that was running is failed and retried once, as after a crash).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from autotune.exceptions import StudyError, error_chain
from autotune.store.storage import sqlite_path

_RESUME = "trials stored before are kept; run the same command again to resume"
T = TypeVar("T")


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


class StorageGuard:
    """Which SQLite file a study opened; :meth:`check` fails once that file is gone or another.

    A storage that is not an SQLite file is never checked.
    """

    def __init__(self, storage_url: str) -> None:
        self.storage_url = storage_url
        database = sqlite_path(storage_url)
        self.path = database.resolve() if database is not None else None
        self.opened = _file_id(self.path) if self.path is not None else None

    def check(self) -> None:
        """Raises StudyError when the database file opened was deleted or replaced."""
        if self.path is None or self.opened is None:
            return
        now = _file_id(self.path)
        if now == self.opened:
            return
        what = "deleted" if now is None else "replaced by another file"
        raise StudyError(
            f"the storage {str(self.path)!r} was {what} while the study ran; the study stopped. "
            "Put the database back and run the same command again to resume"
        )

    def run(self, action: Callable[[], T]) -> T:
        """``action()`` after :meth:`check`, raising the one-line :func:`storage_fault` in place
        of an error that means the storage can no longer be written."""
        self.check()
        try:
            return action()
        except Exception as error:
            fault = storage_fault(error, self.storage_url)
            if fault is None:
                raise
            raise fault from error


def storage_fault(error: BaseException, storage_url: str) -> StudyError | None:
    """A one-line StudyError for ``error`` raised while the study wrote ``storage_url`` when it
    means the storage cannot be written any more (its disk is full, its file was deleted,
    replaced or made read-only, a disk I/O error); None for any other error."""
    database = sqlite_path(storage_url)
    where = repr(str(database.resolve())) if database is not None else repr(storage_url)
    for link in error_chain(error):
        if isinstance(link, OSError) and link.errno in (errno.ENOSPC, errno.EDQUOT):
            name = link.filename or where
            return StudyError(
                f"cannot write {str(name)!r}: no space left on the device (ENOSPC); the study "
                f"stopped; {_RESUME} once there is room"
            )
        if not isinstance(link, sqlite3.Error):
            continue
        text = str(link)
        lowered = text.lower()
        if "database or disk is full" in lowered:
            return StudyError(
                f"the storage {where} is full ({text}: no space left on the device, ENOSPC); "
                f"the study stopped; {_RESUME} once there is room"
            )
        if "readonly database" in lowered or "read-only" in lowered:
            gone = database is not None and not database.exists()
            cause = "was deleted" if gone else "was replaced or made read-only"
            return StudyError(
                f"the storage {where} {cause} while the study ran ({text}); the study stopped "
                f"without writing to it; {_RESUME} once the database is back"
            )
        if "disk i/o error" in lowered or "no such table" in lowered:
            return StudyError(
                f"the storage {where} cannot be written ({text}); the study stopped; "
                f"{_RESUME} once the database is readable again"
            )
    return None
