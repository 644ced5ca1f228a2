"""Entry point of a trial process: ``python -m autotune._trial_process REQUEST RESULT PARENT_PID``.

Reads the request (experiment reference, config, settings) from REQUEST, runs the trial and writes
a JSON outcome to RESULT atomically: ``{"status": "ok", "result": ...}``, ``{"status": "failed",
"kind": ..., "message": ...}`` or ``{"status": "config_error", "message": ...}``. Its stdout and
stderr are the trial's log, kept by the parent. It dies with its parent (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    """Asks Linux to SIGKILL this process when its parent dies; exits if it already has."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def _write(path: Path, outcome: dict[str, Any]) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(outcome), encoding="utf-8")
    os.replace(partial, path)


def main(argv: list[str]) -> int:
    request_path, result_path, parent_pid = Path(argv[0]), Path(argv[1]), int(argv[2])
    _die_with_parent(parent_pid)
    request = json.loads(request_path.read_text(encoding="utf-8"))

    from autotune.config import RunSettings, TrialConfig
    from autotune.exceptions import ConfigError
    from autotune.experiment import load_experiment

    config = TrialConfig.from_dict(request["config"])
    settings = RunSettings.from_dict(request["settings"])
    try:
        experiment = load_experiment(request["experiment"])
        from autotune.runner import classify_exception, run_trial

        try:
            result = run_trial(experiment, config, settings)
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
