"""A trial process's log: copied by the parent from a pipe into ``trial.log``, capped in size.

The trial process writes its stdout and stderr into a pipe; :class:`LogCopier`, a thread of the
parent, copies it into the log file. Past ``limit`` bytes the middle of the output is dropped: the
file keeps the first ``limit`` bytes, a marker line saying how many bytes were dropped, and the
last :data:`KEEP_TAIL_BYTES` bytes, so a trial that prints gigabytes neither fills the disk nor
loses its last words (the traceback). The pipe is always drained, so the trial never blocks on a
full pipe, not even when the log cannot be written (a full disk): the copier then keeps the end
of the output in memory only and says why in :attr:`LogCopier.write_error`.

A log file that already holds something (a folder used again) is appended to, after a marker
line, never truncated. :func:`log_tail` reads only the end of a file.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import BinaryIO

from autotune.exceptions import ConfigError

LOG_TAIL_LINES = 40
#: Bytes :func:`log_tail` reads at most, from the end of the file.
TAIL_READ_BYTES = 256 * 1024
#: Bytes kept from the end of the output when the middle is dropped (and in memory).
KEEP_TAIL_BYTES = 64 * 1024
#: Bytes of one trial's output kept in its log before the middle is dropped.
DEFAULT_LOG_LIMIT_BYTES = 64 * 2**20
#: Overrides :data:`DEFAULT_LOG_LIMIT_BYTES` (an integer number of bytes).
LOG_LIMIT_ENV = "AUTOTUNE_TRIAL_LOG_LIMIT"
READ_BYTES = 64 * 1024
POLL_SECONDS = 0.1


def log_limit(value: int | None = None) -> int:
    """The log cap in bytes: ``value``, else ``$AUTOTUNE_TRIAL_LOG_LIMIT``, else the default.

    Raises:
        ConfigError: the value is not an integer >= 0.
    """
    if value is None:
        text = os.environ.get(LOG_LIMIT_ENV, "").strip()
        if not text:
            return DEFAULT_LOG_LIMIT_BYTES
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < 0:
            raise ConfigError(
                f"{LOG_LIMIT_ENV} must be an integer number of bytes >= 0. "
                f"Received: {LOG_LIMIT_ENV}={text!r}"
            )
    if value < 0:
        raise ConfigError(f"log_limit_bytes must be >= 0. Received: log_limit_bytes={value!r}")
    return value


def log_tail(path: Path, lines: int = LOG_TAIL_LINES, start: int = 0) -> str:
    """The last ``lines`` lines of a log file after byte ``start`` ('' when it is missing).

    Reads at most :data:`TAIL_READ_BYTES` from the end of the file, however large it is.
    """
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            begin = max(start, size - TAIL_READ_BYTES, 0)
            handle.seek(begin)
            data = handle.read(size - begin)
    except OSError:
        return ""
    return tail_text(data, lines)


def tail_text(data: bytes, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of ``data`` as text (undecodable bytes replaced)."""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def _now() -> str:
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")


class LogCopier(threading.Thread):
    """Copies a trial's output from the read end of a pipe into ``path``, at most ``limit``
    bytes and then the end; keeps the last :data:`KEEP_TAIL_BYTES` bytes in memory.

    ``path`` None keeps the output in memory only. Call :meth:`finish` once the trial process
    has ended.
    """

    def __init__(self, read_fd: int, path: Path | None, limit: int) -> None:
        super().__init__(name="autotune-trial-log", daemon=True)
        self._fd = read_fd
        self.path = path
        self.limit = limit
        self.written = 0  # bytes of this trial's output in the file
        self.dropped = 0  # bytes of this trial's output not in the file
        self.start_offset = 0  # where this trial's output starts in the file
        self.write_error: str | None = None
        self._tail = bytearray()  # the last bytes of the output
        self._file: BinaryIO | None = None
        self._finish_by: float | None = None
        self._open()

    # ------------------------------------------------------------------ the file
    def _open(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.path, "ab")  # noqa: SIM115 (closed in run())
            if handle.tell() > 0:
                handle.write(
                    f"\n===== autotune: this log is used again; a new trial process starts "
                    f"here ({_now()}) =====\n".encode()
                )
                handle.flush()
            self.start_offset = handle.tell()
            self._file = handle
        except OSError as error:
            self._failed(error)

    def _failed(self, error: OSError) -> None:
        self.write_error = f"the log {str(self.path)!r} could not be written: {error}"
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        self._file = None

    def _write(self, data: bytes) -> None:
        if self._file is None:
            return
        try:
            self._file.write(data)
            self._file.flush()
        except OSError as error:
            self._failed(error)

    # ------------------------------------------------------------------ the thread
    def run(self) -> None:
        try:
            while self._finish_by is None or time.monotonic() < self._finish_by:
                # past _finish_by a process that escaped still holds the pipe open: stop
                ready, _, _ = select.select([self._fd], [], [], POLL_SECONDS)
                if ready:
                    data = os.read(self._fd, READ_BYTES)
                    if not data:
                        break
                    self._take(data)
        except OSError as error:
            self.write_error = self.write_error or f"the trial's output could not be read: {error}"
        finally:
            self._close()

    def _take(self, data: bytes) -> None:
        self._tail += data
        if len(self._tail) > 2 * KEEP_TAIL_BYTES:
            del self._tail[:-KEEP_TAIL_BYTES]
        room = self.limit - self.written
        if room > 0:
            kept = data[:room]
            self._write(kept)
            self.written += len(kept)
            data = data[room:]
        self.dropped += len(data)

    def _close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)
        if self.dropped:
            tail = bytes(self._tail[-min(KEEP_TAIL_BYTES, self.dropped) :])
            self._write(
                f"\n===== autotune: the trial's log passed its limit of {self.limit} bytes; "
                f"{self.dropped - len(tail)} bytes were dropped here, the last {len(tail)} "
                "follow =====\n".encode()
            )
            self._write(tail)
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
            self._file = None

    def finish(self, wait_seconds: float = 2.0) -> None:
        """Copies what is left in the pipe and closes the file; waits at most about
        ``wait_seconds`` for the pipe's other end to close."""
        self._finish_by = time.monotonic() + wait_seconds
        self.join(wait_seconds + 5)

    # ------------------------------------------------------------------ reading
    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of this trial's output: from the file when it was written
        whole, else from memory (with why the file is incomplete first)."""
        if self.path is not None and self.write_error is None:
            return log_tail(self.path, lines, start=self.start_offset)
        text = tail_text(bytes(self._tail), lines)
        if self.write_error is None:
            return text
        return f"[autotune: {self.write_error}]\n{text}"
