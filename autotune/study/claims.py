"""Claims in the storage: work one worker of a shared study does while the others wait for it.

Two claims per study. ``baseline`` is held while a worker runs the baseline: the others wait, then
read it, so it runs once per study. ``proposal`` is held from the moment a worker counts the
study's trials until its new trial's configuration is stored: no two workers start the same
configuration (the sampler counts a running trial's configuration as tried,
:data:`autotune.study.search.TRIED_STATES`), nor more trials than the study's target, nor the same
retry twice. How a claim is held depends on the storage:

- SQLite: nothing to claim; the run lock (:mod:`~autotune.study.run_lock`) already makes one
  process the study's only worker.
- A Journal file (one host): an exclusive ``flock`` on ``<journal>.<claim>.lock`` beside it.
- PostgreSQL: a session advisory lock (``pg_advisory_lock``) keyed by the study name and the
  claim. The kernel or the server drops either with the process or its connection, so a killed
  worker never leaves a claim behind.
- MySQL: one process only (several workers are refused, :func:`check_workers`).

No TensorFlow here.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

from autotune.exceptions import ConfigError
from autotune.store.storage import STORAGE, connect_args, engine_url, journal_path

CLAIMS = ("baseline", "proposal")
#: Seconds between two tries of a claim another worker holds.
POLL_SECONDS = 0.1


def scheme_of(storage_url: str) -> str:
    return storage_url.split("://", 1)[0].split("+", 1)[0]


def check_workers(storage_url: str, workers: int = 2) -> None:
    """Raises ConfigError (argument "storage") when ``workers`` > 1 cannot share this storage."""
    if workers <= 1 or scheme_of(storage_url) in ("journal", "postgresql"):
        return
    raise ConfigError(
        f"holds one worker at a time; {workers} workers need a storage made for several: a "
        "Journal file on one host (journal:///autotune.journal) or PostgreSQL across hosts "
        f"(postgresql+psycopg://user@host/db). Received: {storage_url!r}",
        argument=STORAGE,
    )


def _advisory_key(study_name: str, claim: str) -> int:
    """A signed 64-bit PostgreSQL advisory-lock key for (study, claim)."""
    digest = hashlib.sha256(f"autotune\0{study_name}\0{claim}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class Claim:
    """One claim (``"baseline"`` or ``"proposal"``) on one study; a context manager, reusable.

    :meth:`acquire` waits until this process holds it, calling ``on_wait`` once if it has to
    wait; :meth:`release` may be called early (inside the block) and again at its end.
    """

    def __init__(self, storage_url: str, study_name: str, claim: str) -> None:
        if claim not in CLAIMS:
            raise ValueError(f"claim must be one of {CLAIMS}, not {claim!r}")
        self.storage_url = storage_url
        self.study_name = study_name
        self.claim = claim
        self.held = False
        self._descriptor: int | None = None
        self._connection: Any = None
        self._engine: Any = None

    # ---------------------------------------------------------------- one try per storage kind
    def _try(self) -> bool:
        journal = journal_path(self.storage_url)
        if journal is not None:
            return self._try_flock(journal.with_name(f"{journal.name}.{self.claim}.lock"))
        if scheme_of(self.storage_url) == "postgresql":
            return bool(self._sql("SELECT pg_try_advisory_lock(:key)"))
        return True  # SQLite (the run lock holds) or MySQL (one process)

    def _try_flock(self, path: os.PathLike[str]) -> bool:
        if self._descriptor is None:
            self._descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(self._descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _sql(self, statement: str) -> Any:
        import sqlalchemy

        if self._connection is None:
            self._engine = sqlalchemy.create_engine(
                engine_url(self.storage_url),
                poolclass=sqlalchemy.pool.NullPool,
                connect_args=connect_args(self.storage_url),
            )
            self._connection = self._engine.connect().execution_options(
                isolation_level="AUTOCOMMIT"
            )
        key = _advisory_key(self.study_name, self.claim)
        return self._connection.execute(sqlalchemy.text(statement), {"key": key}).scalar()

    # ---------------------------------------------------------------- the claim
    def acquire(self, on_wait: Callable[[], None] | None = None) -> None:
        """Waits (polling every :data:`POLL_SECONDS`) until this process holds the claim."""
        if self.held:
            return
        waited = False
        while not self._try():
            if not waited and on_wait is not None:
                on_wait()
            waited = True
            time.sleep(POLL_SECONDS)
        self.held = True

    def release(self) -> None:
        """Lets the next worker have the claim (nothing when not held)."""
        if not self.held:
            return
        self.held = False
        if self._descriptor is not None:
            fcntl.flock(self._descriptor, fcntl.LOCK_UN)
        elif self._connection is not None:
            self._sql("SELECT pg_advisory_unlock(:key)")

    def close(self) -> None:
        """Releases the claim and closes its file or connection."""
        self.release()
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None
        if self._connection is not None:
            self._connection.close()
            self._engine.dispose()
            self._connection = self._engine = None

    def __enter__(self) -> Claim:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


__all__ = ["CLAIMS", "POLL_SECONDS", "Claim", "check_workers", "scheme_of"]
