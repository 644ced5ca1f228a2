"""Crash recovery: trials left RUNNING by a dead worker are failed as interrupted and retried once.

Each trial records its worker (host, pid, process start time) first thing
(:data:`autotune.schema.WORKER_ATTR`). On start a study fails the RUNNING trials whose worker on
this host is gone, without waiting for Optuna's heartbeat grace period, and queues one retry with
the same parameters for every interrupted trial that has none.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import socket
from typing import Any

import optuna
import psutil
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial, TrialState

from autotune.schema import (
    FAILURE_ATTR,
    INTERRUPTED,
    INTERRUPTED_FAILURE,
    WORKER_ATTR,
    failure_of,
)
from autotune.storage import quiet_experimental

#: A RUNNING trial without a worker record this old was left by a worker killed while Optuna
#: created it (seconds).
UNRECORDED_WORKER_SECONDS = 10.0


class RetryInterrupted(RetryHeartbeatStaleTrialCallback):
    """Queues an interrupted trial once more with the same parameters (Optuna's retry callback
    with ``max_retry=1``); the retry starts without the interrupted trial's failure record.

    Optuna calls it for trials whose heartbeat went stale; :func:`retry_interrupted` calls it
    for trials interrupted on this host (worker killed, Ctrl-C)."""

    def __init__(self) -> None:
        with quiet_experimental():
            super().__init__(max_retry=1)

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        trial.user_attrs[FAILURE_ATTR] = None
        super().__call__(study, trial)


def this_worker() -> dict[str, Any]:
    """This process as a trial's worker record: host, pid and start time (seconds since the
    epoch)."""
    me = psutil.Process()
    return {"host": socket.gethostname(), "pid": me.pid, "started": me.create_time()}


def alive(worker: dict[str, Any]) -> bool:
    """Whether the worker process (pid and start time) still runs on this host."""
    try:
        process = psutil.Process(int(worker.get("pid", -1)))
        return abs(process.create_time() - float(worker.get("started", 0))) < 1.0
    except (psutil.Error, ValueError):
        return False


def _orphaned(trial: FrozenTrial, host: str, now: dt.datetime) -> bool:
    worker = trial.user_attrs.get(WORKER_ATTR)
    if worker is None:
        started = trial.datetime_start or now
        return (now - started).total_seconds() >= UNRECORDED_WORKER_SECONDS
    return worker.get("host") == host and not alive(worker)


def fail_orphans(study: optuna.Study, storage: optuna.storages.BaseStorage) -> None:
    """Fails RUNNING trials whose worker process on this host is gone (killed mid-trial), and
    those that never recorded a worker (killed between Optuna creating the trial and the
    objective's first line; a live worker records itself within milliseconds)."""
    host, now = socket.gethostname(), dt.datetime.now()
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if not _orphaned(trial, host, now):
            continue
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            storage.set_trial_user_attr(trial._trial_id, FAILURE_ATTR, INTERRUPTED_FAILURE)
            storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL)


def retry_interrupted(study: optuna.Study) -> None:
    """Queues one retry, with the same parameters, of each interrupted trial that has none (a
    retry that is interrupted again is not retried: ``max_retry=1``)."""
    trials = study.get_trials(deepcopy=False)
    retried = {n for t in trials for n in t.system_attrs.get("retry_history", [])}
    callback = RetryInterrupted()
    for trial in trials:
        failure = failure_of(trial)
        if trial.number not in retried and failure and failure["kind"] == INTERRUPTED:
            callback(study, copy.deepcopy(trial))


__all__ = [
    "UNRECORDED_WORKER_SECONDS",
    "RetryInterrupted",
    "alive",
    "fail_orphans",
    "retry_interrupted",
    "this_worker",
]
