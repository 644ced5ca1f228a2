"""Runs one trial in a fresh process with a time and memory limit, and classifies how it ended.

The trial process is started with ``subprocess`` (a fresh interpreter: never a fork of a process
that imported TensorFlow), in its own process group, and dies with its parent. Everything fixed at
process start (environment such as ``KERAS_BACKEND``, ``TF_CPP_MIN_LOG_LEVEL``, ``XLA_FLAGS``) is
set in :func:`child_environment`, the one place a trial process is configured.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import psutil

import autotune
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ConfigError, TrialFailure
from autotune.experiment import Experiment, reference_of
from autotune.result import RunResult

POLL_SECONDS = 0.1
LOG_TAIL_LINES = 40
DEFAULT_MEMORY_FRACTION = 0.8


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a trial process: the caller's, plus autotune's fixed settings.

    ``extra`` overrides anything (for example ``CUDA_VISIBLE_DEVICES`` or ``XLA_FLAGS``).
    """
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["KERAS_BACKEND"] = "tensorflow"
    env["PYTHONUNBUFFERED"] = "1"
    package_root = str(Path(autotune.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log file ('' when it is missing)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _tree_rss(process: psutil.Process) -> int:
    """Resident memory (bytes) of a process and all its descendants."""
    total = 0
    with contextlib.suppress(psutil.Error):
        for member in [process, *process.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += member.memory_info().rss
    return total


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def run_isolated(
    experiment: Experiment | str,
    config: TrialConfig,
    settings: RunSettings,
    *,
    log_dir: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> RunResult:
    """Runs one trial in a fresh process and returns its :class:`RunResult`.

    The trial's log (its stdout and stderr) is written to ``log_dir/trial.log`` when ``log_dir`` is
    given, else to a temporary file removed afterwards.

    Raises:
        TrialFailure: the trial failed; ``kind`` says how (signal, exit, timeout, oom,
            xla_compile, nan, exception) and ``log_tail`` holds the end of its log.
        ConfigError: the experiment cannot be loaded or built (not worth retrying).
    """
    reference = reference_of(experiment)
    memory_limit = settings.memory_limit_bytes or int(
        psutil.virtual_memory().total * DEFAULT_MEMORY_FRACTION
    )
    with tempfile.TemporaryDirectory(prefix="autotune-trial-") as scratch:
        workdir = Path(scratch)
        logs = Path(log_dir) if log_dir is not None else workdir
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / "trial.log"
        request_path, result_path = workdir / "request.json", workdir / "result.json"
        request = {
            "experiment": reference,
            "config": config.to_dict(),
            "settings": settings.to_dict(),
        }
        request_path.write_text(json.dumps(request), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "autotune.trial.process",
            str(request_path),
            str(result_path),
            str(os.getpid()),
        ]
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=child_environment(env),
                start_new_session=True,
            )
        stopped: tuple[str, str] | None = None
        try:
            stopped = _watch(process, settings.time_limit_seconds, memory_limit)
        finally:
            _kill_group(process.pid)  # on any exit path, including KeyboardInterrupt
            process.wait()
        return _outcome(process.returncode, stopped, result_path, log_path)


def _watch(
    process: subprocess.Popen[bytes], time_limit: float, memory_limit: int
) -> tuple[str, str] | None:
    """Waits for the trial process; stops it past its limits. Returns (kind, why) if stopped."""
    watched = psutil.Process(process.pid)
    deadline = time.monotonic() + time_limit
    while process.poll() is None:
        if time.monotonic() > deadline:
            _kill_group(process.pid)
            return "timeout", f"trial ran past its time limit of {time_limit:g} s and was stopped"
        rss = _tree_rss(watched)
        if rss > memory_limit:
            _kill_group(process.pid)
            return "oom", (
                f"trial used {rss / 2**30:.2f} GiB, over its memory limit of "
                f"{memory_limit / 2**30:.2f} GiB, and was stopped"
            )
        time.sleep(POLL_SECONDS)
    return None


def _outcome(
    returncode: int, stopped: tuple[str, str] | None, result_path: Path, log_path: Path
) -> RunResult:
    tail = log_tail(log_path)
    if stopped is not None:
        raise TrialFailure(stopped[0], stopped[1], tail)  # type: ignore[arg-type]
    if result_path.exists():
        outcome = json.loads(result_path.read_text(encoding="utf-8"))
        if outcome["status"] == "ok":
            return RunResult.from_dict(outcome["result"])
        if outcome["status"] == "config_error":
            raise ConfigError(outcome["message"])
        raise TrialFailure(outcome["kind"], outcome["message"], tail)
    if returncode < 0:
        name = _signal_name(-returncode)
        hint = " (possibly the kernel's out-of-memory killer)" if name == "SIGKILL" else ""
        raise TrialFailure("signal", f"trial process was killed by {name}{hint}", tail)
    raise TrialFailure(
        "exit", f"trial process exited with code {returncode} without reporting a result", tail
    )
