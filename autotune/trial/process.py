"""Entry point of a trial process: ``python -m autotune.trial.process REQUEST RESULT PARENT_PID``,
or ``python -m autotune.trial.process --spare PARENT_PID`` for a process started ahead of its
trial: it imports the Keras backend its environment names, then reads ``REQUEST<TAB>RESULT`` from
its stdin and goes on as the first form does (an empty stdin: it was not needed, and it exits).

Reads the request (experiment reference, config, settings) from REQUEST, runs the trial and writes
a JSON outcome to RESULT atomically: ``{"status": "ok", "result": ...}``, ``{"status": "failed",
"kind": ..., "message": ...}`` or ``{"status": "config_error", "message": ...}``; the parent
kills it as soon as that file exists, so nothing may follow the write. A request with
``"beside"`` (more configs) and ``"pairs"`` times them all side by side instead
(:func:`autotune.trial.runner.run_side_by_side`), its outcome ``{"status": "ok", "result": ...,
"beside": [...]}``. Its stdout and
stderr are the trial's log, kept by the parent. It and every process it starts die with its parent:
it is a child subreaper (Linux), so a process it started that leaves the process group with
``setsid`` and is orphaned stays among its descendants, and it kills them before its group.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import psutil

PR_SET_PDEATHSIG = 1
#: Seconds a process started ahead waits for its trial before it exits.
SPARE_IDLE_SECONDS = 900.0
PR_SET_CHILD_SUBREAPER = 36
WATCHDOG_SECONDS = 0.2


def _kill_my_group(*_: object) -> None:
    """SIGKILLs every descendant of this process (in its group or not) and then its whole process
    group: the trial and anything it started."""
    try:
        descendants = psutil.Process().children(recursive=True)
    except psutil.Error:
        descendants = []
    for process in descendants:
        with contextlib.suppress(psutil.Error):
            process.kill()
    os.killpg(0, signal.SIGKILL)


def _die_with_parent(parent_pid: int) -> None:
    """Ends this process and every process it started when the parent dies.

    Linux sends SIGTERM on the parent's death (PR_SET_PDEATHSIG), whose handler kills the whole
    process group; a watchdog thread does the same if the main thread is busy in native code
    when it happens. This process leads its own group (the parent starts it in a new session).
    """
    signal.signal(signal.SIGTERM, _kill_my_group)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(WATCHDOG_SECONDS)
        _kill_my_group()

    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        _kill_my_group()
    threading.Thread(target=watch, name="autotune-parent-watchdog", daemon=True).start()


def _write(path: Path, outcome: dict[str, Any]) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(outcome), encoding="utf-8")
    os.replace(partial, path)


def _preload() -> None:
    """Imports what every trial of this process's Keras backend imports (``KERAS_BACKEND`` is
    fixed at process start), and nothing that depends on a configuration: no TensorFlow context
    is created, so thread settings can still be applied
    (:func:`autotune.trial.threads.set_threads`). A backend that cannot be imported is left for
    the trial to report."""
    with contextlib.suppress(Exception):
        import keras  # noqa: F401  (imports the backend: TensorFlow, JAX or PyTorch)


def spare(parent_pid: int) -> int:
    """A process started ahead of its trial: preloads, then waits for its request on stdin (at
    most :data:`SPARE_IDLE_SECONDS`: a parent that starts no more trials gets it back)."""
    _die_with_parent(parent_pid)
    _preload()
    ready, _, _ = select.select([sys.stdin], [], [], SPARE_IDLE_SECONDS)
    line = sys.stdin.readline().rstrip("\n") if ready else ""
    if not line:  # not needed after all
        return 0
    request_path, result_path = line.split("\t")
    # From here on it is the cold trial process exactly, to the experiment's code too (the
    # reliability tests' misbehaving experiment reads its request from the command line).
    sys.argv[1:] = [request_path, result_path, str(parent_pid)]
    return run(Path(request_path), Path(result_path))


def main(argv: list[str]) -> int:
    if argv[:1] == ["--spare"]:
        return spare(int(argv[1]))
    request_path, result_path, parent_pid = Path(argv[0]), Path(argv[1]), int(argv[2])
    _die_with_parent(parent_pid)
    return run(request_path, result_path)


def run(request_path: Path, result_path: Path) -> int:
    """Runs the trial of the request at ``request_path``; its outcome goes to ``result_path``.
    A request may name an ``untimed_marker`` file, created once nothing more is timed."""
    request = json.loads(request_path.read_text(encoding="utf-8"))
    marker = request.get("untimed_marker")

    from autotune.config import RunSettings, TrialConfig, backend_missing
    from autotune.exceptions import ConfigError
    from autotune.experiment import load_experiment

    config = TrialConfig.from_dict(request["config"])
    settings = RunSettings.from_dict(request["settings"])
    try:
        missing = backend_missing(config.backend)
        if missing is not None:
            raise ConfigError(f"{config.describe()}: {missing}")
        os.environ["KERAS_BACKEND"] = config.backend  # before anything imports keras
        if config.intra_op_threads or config.inter_op_threads:
            from autotune.trial.threads import set_threads

            set_threads(config)  # before the experiment's module can run TensorFlow
        experiment = load_experiment(request["experiment"])
        from autotune.trial.backends import check_backend
        from autotune.trial.runner import classify_exception, run_trial

        check_backend(config)

        try:
            untimed = (lambda: Path(marker).touch()) if marker else None
            if request.get("beside") is not None:  # configurations side by side, one process
                from autotune.trial.runner import run_side_by_side

                others = [TrialConfig.from_dict(c, "beside") for c in request["beside"]]
                result, *beside = run_side_by_side(
                    experiment, (config, *others), settings, request["pairs"]
                )
                if untimed is not None:
                    untimed()  # its last window is timed
                outcome = {
                    "status": "ok",
                    "result": result.to_dict(),
                    "beside": [r.to_dict() for r in beside],
                }
                _write(result_path, outcome)
                return 0
            result = run_trial(experiment, config, settings, on_untimed=untimed)
        except ConfigError:
            raise
        except BaseException as error:
            traceback.print_exc()
            failure = classify_exception(error, config)
            _write(result_path, {"status": "failed", **failure.to_dict()})
            return 0
    except ConfigError as error:
        traceback.print_exc()
        _write(result_path, {"status": "config_error", "message": str(error)})
        return 0
    _write(result_path, {"status": "ok", "result": result.to_dict()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
