"""Writing a command's output file (a recipe, a report) without harming what is already there.

An output is written atomically: to a temporary file in the same folder, flushed to disk, then
renamed over the target, so a reader never sees half a file and a failed write leaves the old
file as it was. It never replaces the study's storage (nor any SQLite database or Optuna
Journal file: one slip of ``-o autotune.db`` must not cost a study), a symbolic link is refused
rather than followed to wherever it points, and only a regular file or a new path is written:
a device (``/dev/null``), a FIFO or a socket is refused, never replaced nor opened. ``-`` is
standard output.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from autotune.exceptions import ConfigError

#: The first bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"

#: The library argument an output error names (the CLI shows it as -o/--output).
OUTPUT = "output"
#: The output that means standard output (the string, not ``Path("-")``: ``./-`` names a file).
STDOUT = "-"

_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def is_stdout(output: str | Path) -> bool:
    """Whether ``output`` is ``"-"``: standard output."""
    return isinstance(output, str) and output == STDOUT


def _head(path: Path) -> bytes:
    """The first line (at most 64 KiB) of the regular file ``path``, read without blocking and
    without following a link; empty when it cannot be read."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError:
        return b""
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return b""
        return handle.readline(1 << 16)


def _is_journal(head: bytes) -> bool:
    """Whether a file's first line is an Optuna Journal record (a JSON object with "op_code")."""
    try:
        record = json.loads(head)
    except (ValueError, RecursionError):
        return False
    return isinstance(record, dict) and "op_code" in record


def _same_file(path: Path, others: Iterable[Path]) -> Path | None:
    for other in others:
        with contextlib.suppress(OSError):
            if other.exists() and os.path.samefile(path, other):
                return other
    return None


def check_output(output: str | Path, *, what: str, protected: Iterable[Path] = ()) -> Path:
    """The path ``output`` names, after refusing what must not be overwritten.

    Args:
        output: the file to write.
        what: what is written, for messages ("report file", "recipe file").
        protected: files that must never be replaced (the study's storage and its journals).

    Raises ConfigError (argument "output") for a symbolic link, a folder, anything else that
    is not a regular file (a device, a FIFO, a socket), a protected file, an SQLite database or
    an Optuna Journal file. ``"-"`` (:data:`STDOUT`) is standard output and passes.
    """
    if is_stdout(output):
        return Path(STDOUT)
    path = Path(output)
    if path.is_symlink():
        raise ConfigError(
            f": {what} {str(path)!r} is a symbolic link (to {os.readlink(path)!r}); autotune "
            "does not write through links. Name the target itself, or another file",
            argument=OUTPUT,
        )
    if path.is_dir():
        raise ConfigError(f": {what} {str(path)!r} is a folder; name a file", argument=OUTPUT)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as error:
        raise ConfigError(
            f": {what} {str(path)!r} cannot be examined: {error.strerror}", argument=OUTPUT
        ) from error
    for test, kind in _KINDS:
        if test(mode):
            raise ConfigError(
                f": {what} {str(path)!r} is {kind}, not a regular file; autotune writes only "
                "regular files or new paths ('-' for standard output). Name another file",
                argument=OUTPUT,
            )
    storage = _same_file(path, protected)
    if storage is not None:
        raise ConfigError(
            f": {what} {str(path)!r} is the study's storage ({str(storage)!r}); writing there "
            "would destroy the study. Name another file",
            argument=OUTPUT,
        )
    head = _head(path)
    if head.startswith(SQLITE_MAGIC):
        raise ConfigError(
            f": {what} {str(path)!r} is an SQLite database; autotune never overwrites one. "
            "Name another file",
            argument=OUTPUT,
        )
    if _is_journal(head):
        raise ConfigError(
            f": {what} {str(path)!r} is an Optuna Journal file (a study's storage); autotune "
            "never overwrites one. Name another file",
            argument=OUTPUT,
        )
    return path


def write_output(
    output: str | Path, text: str, *, what: str, protected: Iterable[Path] = ()
) -> Path:
    """Writes ``text`` (UTF-8) to ``output`` atomically and returns its path (see
    :func:`check_output` for what is refused; ConfigError naming "output" when the folder
    cannot be written). ``"-"`` writes to standard output instead."""
    path = check_output(output, what=what, protected=protected)
    if is_stdout(output):
        sys.stdout.write(text)
        sys.stdout.flush()
        return path
    folder = path.parent
    try:
        handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 (renamed below, not closed by with)
            "w", encoding="utf-8", dir=folder, prefix=f".{path.name}.", delete=False
        )
    except OSError as error:
        raise ConfigError(
            f": {what} {str(path)!r} cannot be written: {error.strerror}", argument=OUTPUT
        ) from error
    temporary = Path(handle.name)
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise ConfigError(
            f": {what} {str(path)!r} cannot be written: {error.strerror}", argument=OUTPUT
        ) from error
    return path


def _umask() -> int:
    """The process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


__all__ = ["OUTPUT", "SQLITE_MAGIC", "STDOUT", "check_output", "is_stdout", "write_output"]
