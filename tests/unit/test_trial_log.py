"""autotune.trial.trial_log: the trial's log is copied from a pipe, capped, appended to, and its
tail is read from the end of the file alone. No trial process here: the tests write the pipe."""

from __future__ import annotations

import io
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from autotune.exceptions import ConfigError
from autotune.trial import trial_log
from autotune.trial.trial_log import (
    KEEP_TAIL_BYTES,
    LOG_LIMIT_ENV,
    TAIL_READ_BYTES,
    LogCopier,
    log_limit,
    log_tail,
)

LINE = b"x" * 99 + b"\n"  # 100 bytes


def _copy(path: Path | None, limit: int, chunks: list[bytes]) -> LogCopier:
    """Writes ``chunks`` into a pipe from a thread while a LogCopier copies it; returns the
    copier once the pipe is closed and copied."""
    read_fd, write_fd = os.pipe()
    copier = LogCopier(read_fd, path, limit)
    copier.start()

    def write() -> None:
        with os.fdopen(write_fd, "wb") as pipe:
            for chunk in chunks:
                pipe.write(chunk)

    writer = threading.Thread(target=write)
    writer.start()
    writer.join(30)
    assert not writer.is_alive(), "the writer blocked: the copier stopped draining the pipe"
    copier.finish()
    assert not copier.is_alive()
    return copier


class _CountingFile(io.FileIO):
    read_bytes = 0

    def read(self, size: int | None = -1) -> bytes:
        data = super().read(size if size is not None else -1)
        _CountingFile.read_bytes += len(data)
        return data


def test_log_tail_of_a_huge_file_reads_only_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "trial.log"
    with open(path, "wb") as handle:
        handle.write(b"the first line\n")
        handle.truncate(600 * 2**20)  # sparse: 600 MiB that take no disk
        handle.seek(0, os.SEEK_END)
        handle.write(b"\n" + b"".join(f"last {n}\n".encode() for n in range(50)))
    _CountingFile.read_bytes = 0

    def counting_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        assert mode == "rb"
        return _CountingFile(file, "r")

    monkeypatch.setattr(trial_log, "open", counting_open, raising=False)

    tail = log_tail(path, lines=5)

    assert tail == "\n".join(f"last {n}" for n in range(45, 50))
    assert 0 < _CountingFile.read_bytes <= TAIL_READ_BYTES


def test_log_tail_starts_at_the_given_offset_and_is_empty_for_a_missing_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trial.log"
    path.write_bytes(b"earlier run\nmarker\nthis run\n")
    assert log_tail(path, start=len(b"earlier run\nmarker\n")) == "this run"
    assert log_tail(tmp_path / "missing.log") == ""


def test_output_past_the_limit_keeps_the_head_a_marker_and_the_last_words(tmp_path: Path) -> None:
    path = tmp_path / "trial.log"
    limit = 10_000
    flood = [LINE * 1000] * 50  # 5 MB
    copier = _copy(path, limit, [b"first words\n", *flood, b"last words\n"])

    data = path.read_bytes()
    assert data.startswith(b"first words\n")
    assert len(data) <= limit + KEEP_TAIL_BYTES + 500
    assert b"passed its limit of 10000 bytes" in data
    assert data.endswith(b"last words\n")
    assert copier.dropped == 12 + 5_000_000 + 11 - limit
    assert copier.tail(3).splitlines()[-1] == "last words"


def test_a_log_used_again_is_appended_to_after_a_marker_and_its_tail_is_this_runs(
    tmp_path: Path,
) -> None:
    path = tmp_path / "trial.log"
    path.write_bytes(b"the earlier trial's words\n")

    copier = _copy(path, 2**20, [b"this trial's words\n"])

    text = path.read_text()
    assert text.startswith("the earlier trial's words\n")
    assert "this log is used again" in text
    assert text.endswith("this trial's words\n")
    assert copier.tail() == "this trial's words"


def test_a_full_disk_costs_the_log_file_never_the_output(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full (it answers every write with ENOSPC)")
    path = tmp_path / "trial.log"
    path.symlink_to("/dev/full")

    copier = _copy(path, 2**20, [LINE * 100, b"last words\n"])

    assert copier.write_error is not None
    assert "No space left on device" in copier.write_error and str(path) in copier.write_error
    tail = copier.tail(3)
    assert "No space left on device" in tail.splitlines()[0]
    assert tail.splitlines()[-1] == "last words"


def test_a_log_folder_that_cannot_be_made_keeps_the_output_in_memory(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("")
    copier = _copy(tmp_path / "a_file" / "logs" / "trial.log", 2**20, [b"last words\n"])
    assert copier.write_error is not None
    assert copier.tail().endswith("last words")


def test_no_log_file_keeps_the_output_in_memory() -> None:
    copier = _copy(None, 2**20, [b"one\n", b"two\n"])
    assert copier.write_error is None
    assert copier.tail() == "one\ntwo"


def test_the_log_limit_comes_from_the_argument_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(LOG_LIMIT_ENV, raising=False)
    assert log_limit() == trial_log.DEFAULT_LOG_LIMIT_BYTES
    monkeypatch.setenv(LOG_LIMIT_ENV, "4096")
    assert log_limit() == 4096
    assert log_limit(10) == 10
    for bad in ("lots", "-1", "1.5"):
        monkeypatch.setenv(LOG_LIMIT_ENV, bad)
        with pytest.raises(ConfigError, match=f"{LOG_LIMIT_ENV}='{re.escape(bad)}'"):
            log_limit()
    with pytest.raises(ConfigError, match="log_limit_bytes=-5"):
        log_limit(-5)
