"""Crash recovery: trials left RUNNING by a dead worker are failed as interrupted and retried once.

Each trial records its worker first thing (:data:`autotune.store.schema.WORKER_ATTR`: host, pid and
process start time, hardware fingerprint, core set and device). Before each trial a study fails
the RUNNING trials whose worker is gone and queues one retry with the same parameters for every
interrupted trial that has none. A worker on this host is gone when its process is; one on
another host when its liveness record is older than the grace period: Optuna's heartbeat on an
RDB storage (its stale-trial callback is :class:`RetryInterrupted`), autotune's own on a Journal
file, which has none (:class:`KeepAlive` writes :data:`ALIVE_ATTR` while a trial runs).
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import os
import socket
import threading
import time
from types import TracebackType
from typing import Any

import optuna
import psutil
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial, TrialState

from autotune import hardware
from autotune.store import writer
from autotune.store.schema import (
    ALIVE_ATTR,
    INTERRUPTED,
    WORKER_ATTR,
    failure_of,
)
from autotune.store.storage import (
    GRACE_SECONDS,
    HEARTBEAT_SECONDS,
    has_heartbeat,
    quiet_experimental,
)

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
        writer.clear_failure_for_retry(trial)
        super().__call__(study, trial)


def this_worker() -> dict[str, Any]:
    """This process as a trial's worker record: host, pid and start time (seconds since the
    epoch), the hardware fingerprint its trials are measured with, its core set (the CPUs it
    and its trials may run on) and its device (``CUDA_VISIBLE_DEVICES``, None when unset)."""
    me = psutil.Process()
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = list(range(os.cpu_count() or 1))
    return {
        "host": socket.gethostname(),
        "pid": me.pid,
        "started": me.create_time(),
        "fingerprint": hardware.fingerprint(),
        "cpus": cpus,
        "device": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


class KeepAlive:
    """While its block runs, writes the trial's :data:`ALIVE_ATTR` every
    :data:`~autotune.store.storage.HEARTBEAT_SECONDS` from a thread, on storages without Optuna's
    heartbeat; nothing on the others."""

    def __init__(self, study: optuna.Study, trial: optuna.Trial) -> None:
        self._storage = study._storage
        self._trial_id = trial._trial_id
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if not has_heartbeat(self._storage):
            self._beat()
            self._thread = threading.Thread(target=self._run, name="autotune-alive", daemon=True)

    def _beat(self) -> None:
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            writer.write_alive(self._storage, self._trial_id, time.time())

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            with contextlib.suppress(Exception):  # a storage hiccup: the next beat tries again
                self._beat()

    def __enter__(self) -> KeepAlive:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def alive(worker: dict[str, Any]) -> bool:
    """Whether the worker process (pid and start time) still runs on this host (a zombie, killed
    but not yet reaped by its parent, does not)."""
    try:
        process = psutil.Process(int(worker.get("pid", -1)))
        same = abs(process.create_time() - float(worker.get("started", 0))) < 1.0
        return same and process.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, ValueError):
        return False


def _orphaned(trial: FrozenTrial, host: str, now: dt.datetime, heartbeat: bool) -> bool:
    worker = trial.user_attrs.get(WORKER_ATTR)
    if worker is None:
        started = trial.datetime_start or now
        return (now - started).total_seconds() >= UNRECORDED_WORKER_SECONDS
    if worker.get("host") == host:
        return not alive(worker)
    if heartbeat:  # another host's worker on an RDB storage: Optuna's heartbeat decides
        return False
    last = trial.user_attrs.get(ALIVE_ATTR)
    if not isinstance(last, (int, float)):
        last = (trial.datetime_start or now).timestamp()
    return now.timestamp() - float(last) > GRACE_SECONDS


def fail_orphans(study: optuna.Study, storage: optuna.storages.BaseStorage) -> None:
    """Fails RUNNING trials whose worker is gone: its process, on this host (killed
    mid-trial); its liveness record, from another host on a storage without heartbeats (older
    than :data:`~autotune.store.storage.GRACE_SECONDS`); and those that never recorded a worker
    (killed between Optuna creating the trial and the objective's first line; a live worker records
    itself within milliseconds). On an RDB storage, Optuna's stale heartbeats first."""
    host, now, heartbeat = socket.gethostname(), dt.datetime.now(), has_heartbeat(storage)
    if heartbeat:  # Optuna's own check (it runs before each trial, but not while one waits)
        with quiet_experimental():
            optuna.storages.fail_stale_trials(study)
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if not _orphaned(trial, host, now, heartbeat):
            continue
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            writer.mark_orphan_interrupted(storage, trial._trial_id)
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
    "ALIVE_ATTR",
    "UNRECORDED_WORKER_SECONDS",
    "KeepAlive",
    "RetryInterrupted",
    "alive",
    "fail_orphans",
    "retry_interrupted",
    "this_worker",
]
