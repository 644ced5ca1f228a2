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
folder (:mod:`autotune.study.local_workers`, re-exported here). No TensorFlow here.
"""

from __future__ import annotations

import hashlib
import os
import socket

from autotune.exceptions import StudyError
from autotune.store.schema import TARGET_KEY
from autotune.study.checks import MAX_SEED
from autotune.study.claims import check_workers
from autotune.study.loading import load_study
from autotune.study.local_workers import STOP_SECONDS, LocalWorkers, set_target, worker_arguments
from autotune.study.placement import Placement
from autotune.study.study import Study, TrialRunner


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
    experiment: str,
    *,
    placement: Placement | None = None,
    seed: int = 0,
    runner: TrialRunner | None = None,
) -> Study:
    """Opens the stored study ``study_name`` in ``storage`` (a Journal file or PostgreSQL) as a
    worker running ``experiment``, the one its operator named (a bundled name or a reference);
    ConfigError when the storage holds one worker only, the study was made with another
    experiment (its reference, or its file's digest, differs: refused before anything is
    imported) or on other hardware. The stored reference itself is never imported."""
    check_workers(storage)
    return load_study(
        storage,
        study_name,
        runner=runner,
        seed=worker_seed(seed),
        placement=placement,
        read_only=False,
        experiment=experiment,
    )


def target_of(study: Study) -> int:
    """The study's stored target; StudyError when none was stored yet."""
    target = study.optuna.user_attrs.get(TARGET_KEY)
    if not isinstance(target, int) or isinstance(target, bool):
        raise StudyError(
            f"study {study.name!r} has no number of trials to run yet: start it with "
            f"'autotune run ... --storage {study.storage_url} --trials N' first"
        )
    return target


__all__ = [
    "STOP_SECONDS",
    "LocalWorkers",
    "join",
    "set_target",
    "target_of",
    "worker_arguments",
    "worker_seed",
]
