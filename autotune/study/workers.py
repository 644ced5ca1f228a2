"""Workers: processes that share one study on a Journal file or PostgreSQL and run its trials.

:func:`join` opens a stored study as one more worker (``autotune worker``): with the experiment,
space and settings the study was made with, its own sampler seed (:func:`worker_seed`), and its
placement on this host (:mod:`autotune.study.placement`). A worker whose hardware fingerprint (its
core count included) differs from the study's is refused, naming the difference
(:mod:`autotune.study.identity`): its throughputs could not be compared with the others'.
It runs towards the study's stored target (:data:`autotune.store.schema.TARGET_KEY`, set by
``autotune run`` or :func:`set_target`); the claims of :mod:`autotune.study.claims` make the
workers run the baseline once and never the same configuration twice.

:class:`LocalWorkers` starts more workers on this host as ``python -m autotune worker``
processes (``autotune run --workers K``), each logging to ``worker_<i>.log`` in the study's log
folder. No TensorFlow here.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from autotune.exceptions import StudyError
from autotune.store import writer
from autotune.store.schema import TARGET_KEY
from autotune.study.checks import MAX_SEED
from autotune.study.claims import check_workers
from autotune.study.loading import load_study
from autotune.study.placement import Placement, format_cpus
from autotune.study.study import Study, TrialRunner

#: Seconds a stopped local worker gets to end its trial before it is killed.
STOP_SECONDS = 30.0


def worker_seed(seed: int, host: str | None = None, pid: int | None = None) -> int:
    """A sampler seed for this worker: ``seed`` mixed with its host and pid, so that two
    workers started with the same ``--seed`` draw differently."""
    host = socket.gethostname() if host is None else host
    pid = os.getpid() if pid is None else pid
    digest = hashlib.sha256(f"{seed}\0{host}\0{pid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (MAX_SEED + 1)


def join(
    storage: str,
    study_name: str | None,
    *,
    placement: Placement | None = None,
    seed: int = 0,
    runner: TrialRunner | None = None,
) -> Study:
    """Opens the stored study ``study_name`` in ``storage`` (a Journal file or PostgreSQL) as a
    worker; ConfigError when the storage holds one worker only or the study was made on other
    hardware."""
    check_workers(storage)
    return load_study(
        storage,
        study_name,
        runner=runner,
        seed=worker_seed(seed),
        placement=placement,
        read_only=False,
    )


def set_target(study: Study, n_trials: int) -> None:
    """Stores the finished trials the study's workers run towards."""
    writer.write_target(study.optuna, n_trials)


def target_of(study: Study) -> int:
    """The study's stored target; StudyError when none was stored yet."""
    target = study.optuna.user_attrs.get(TARGET_KEY)
    if not isinstance(target, int) or isinstance(target, bool):
        raise StudyError(
            f"study {study.name!r} has no number of trials to run yet: start it with "
            f"'autotune run ... --storage {study.storage_url} --trials N' first"
        )
    return target


def worker_arguments(storage: str, study_name: str, placement: Placement, seed: int) -> list[str]:
    """The ``python -m autotune worker`` command line of one local worker."""
    command = [sys.executable, "-m", "autotune", "worker", "--storage", storage]
    command += ["--study", study_name, "--seed", str(seed)]
    if placement.device is not None:
        command += ["--device", placement.device]
    if placement.cpus is not None:
        command += ["--cpus", format_cpus(placement.cpus)]
    if placement.shared:
        command.append("--share-cores")
    return command


class LocalWorkers:
    """More workers of ``study`` on this host, one per placement, started on entering and
    waited for (or stopped, when the block raises) on leaving."""

    def __init__(self, study: Study, placements: Sequence[Placement], seed: int = 0) -> None:
        self.study = study
        self.placements = list(placements)
        self.seed = seed
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def __enter__(self) -> LocalWorkers:
        self.study.log_root.mkdir(parents=True, exist_ok=True)
        for index, placement in enumerate(self.placements, start=1):
            log = self.study.log_root / f"worker_{index}.log"
            command = worker_arguments(
                self.study.storage_url, self.study.name, placement, self.seed + index
            )
            with open(log, "wb") as output:
                process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
            self.processes.append(process)
            self.logs.append(log)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is not None:
            self.stop()
        else:
            for process in self.processes:
                process.wait()

    def stop(self) -> None:
        """Stops the workers still running (SIGTERM: each fails its trial as interrupted)."""
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def failures(self) -> list[str]:
        """One line per worker that exited with an error: its number, exit code and the last
        line of its log."""
        lines = []
        for index, (process, log) in enumerate(zip(self.processes, self.logs, strict=True), 1):
            if process.returncode:
                try:
                    tail = log.read_text(encoding="utf-8", errors="replace").strip()
                except OSError:
                    tail = ""
                last = tail.splitlines()[-1] if tail else "(no output)"
                lines.append(f"worker {index} exited with {process.returncode}: {last} ({log})")
        return lines


__all__ = [
    "STOP_SECONDS",
    "LocalWorkers",
    "join",
    "set_target",
    "target_of",
    "worker_arguments",
    "worker_seed",
]
