"""Workers that ``autotune run --workers K`` (:meth:`Study.run`'s ``local_workers``) starts beside
itself on this host: ``python -m autotune worker`` processes, each on its own placement
(:mod:`autotune.study.placement`) and logging to ``worker_<i>.log`` in the study's log folder.
They run towards the study's stored target (:func:`set_target`). No TensorFlow here, and no
import of the study module: :class:`~autotune.study.study.Study` starts them.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from autotune.store import writer
from autotune.study.placement import Placement, format_cpus

if TYPE_CHECKING:
    from autotune.study.study import Study

#: Seconds a stopped local worker gets to end its trial before it is killed.
STOP_SECONDS = 30.0


def set_target(study: Study, n_trials: int) -> None:
    """Stores the finished trials the study's workers run towards."""
    writer.write_target(study.optuna, n_trials)


def worker_arguments(
    storage: str, study_name: str, placement: Placement, seed: int, experiment: str
) -> list[str]:
    """The ``python -m autotune worker`` command line of one local worker, naming its
    experiment (the reference ``autotune run`` made the study with) explicitly."""
    command = [sys.executable, "-m", "autotune", "worker", f"--experiment={experiment}"]
    command += ["--storage", storage]
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
                self.study.storage_url,
                self.study.name,
                placement,
                self.seed + index,
                self.study.reference,
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


__all__ = ["STOP_SECONDS", "LocalWorkers", "set_target", "worker_arguments"]
