"""Writing a command's output file (a recipe, a report) without harming what is already there.

An output is written atomically: to a temporary file in the same folder, flushed to disk, then
renamed over the target, so a reader never sees half a file and a failed write leaves the old
file as it was. It never replaces the study's storage (nor any SQLite database: one slip of
``-o autotune.db`` must not cost a study), and a symbolic link is refused rather than followed
to wherever it points.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from autotune.exceptions import ConfigError

#: The first bytes of every SQLite 3 database file.
SQLITE_MAGIC = b"SQLite format 3\x00"

#: The library argument an output error names (the CLI shows it as -o/--output).
OUTPUT = "output"


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


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

    Raises ConfigError (argument "output") for a symbolic link, a folder, a protected file or
    an SQLite database.
    """
    path = Path(output)
    if path.is_symlink():
        raise ConfigError(
            f": {what} {str(path)!r} is a symbolic link (to {os.readlink(path)!r}); autotune "
            "does not write through links. Name the target itself, or another file",
            argument=OUTPUT,
        )
    if path.is_dir():
        raise ConfigError(f": {what} {str(path)!r} is a folder; name a file", argument=OUTPUT)
    if not path.exists():
        return path
    storage = _same_file(path, protected)
    if storage is not None:
        raise ConfigError(
            f": {what} {str(path)!r} is the study's storage ({str(storage)!r}); writing there "
            "would destroy the study. Name another file",
            argument=OUTPUT,
        )
    if _is_sqlite(path):
        raise ConfigError(
            f": {what} {str(path)!r} is an SQLite database; autotune never overwrites one. "
            "Name another file",
            argument=OUTPUT,
        )
    return path


def write_output(
    output: str | Path, text: str, *, what: str, protected: Iterable[Path] = ()
) -> Path:
    """Writes ``text`` (UTF-8) to ``output`` atomically and returns its path (see
    :func:`check_output` for what is refused; ConfigError naming "output" when the folder
    cannot be written)."""
    path = check_output(output, what=what, protected=protected)
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


__all__ = ["OUTPUT", "SQLITE_MAGIC", "check_output", "write_output"]
