"""Anchors during the search: the baseline configuration re-measured every few trials or minutes,
throughput only, so trials are compared with a baseline measured now (what is stored and how it
is read: :mod:`autotune.store.anchors`).

Before it proposes a trial, a worker runs an anchor when one is :func:`due`: ``every.trials``
trials (:data:`DEFAULT_EVERY`: 5) started since the study's latest anchor, any worker's, or since
the start's baseline, or ``every.seconds`` (600) passed since then with at least one trial
started. An anchor is the baseline's seed-0 run without its curve, profile, ablation or early stop
(:func:`autotune.study.confirming.speed_settings`), in a fresh process like a trial; it is no
Optuna trial, so it counts towards no ``n_trials`` and the sampler never sees it. It is stored as
one study user attribute of its own, first while it runs (so other workers do not start one at
the same time), then with its result; a failed anchor is stored with its error and the previous
reference stays. Then:

- the early stop of a trial uses the latest anchor's lower bound (:func:`current`);
- a stopped trial's ``speed`` constraint, its speed-up as shown, and the structured start's
  decisions use the anchor nearest in time to the trial's start (:func:`reference_at`,
  :func:`at_start_speed`).

No TensorFlow here.
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import optuna

from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ConfigError, TrialFailure
from autotune.measure import Estimate
from autotune.store import writer
from autotune.store.anchors import ANCHOR_PREFIX, Anchor, Anchors, epoch, read_anchors
from autotune.store.result import RunResult
from autotune.store.schema import BASELINE_SEEDS
from autotune.study import baseline
from autotune.study.confirming import speed_settings

if TYPE_CHECKING:
    from autotune.study.study import Study

#: Runs the baseline configuration once: (config, settings, log folder) -> RunResult.
AnchorRunner = Callable[[TrialConfig, RunSettings, Path], RunResult]


@dataclass(frozen=True)
class Every:
    """How often a study re-measures its baseline: after ``trials`` trials started or
    ``seconds`` seconds, whichever comes first."""

    trials: int = 5
    seconds: float = 600.0

    def __post_init__(self) -> None:
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or self.trials < 1:
            raise ConfigError(
                f"trials must be an integer >= 1. Received: {self.trials!r}",
                argument="anchor_every",
            )
        seconds = self.seconds
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
            raise ConfigError(
                f"seconds must be a number > 0. Received: {seconds!r}", argument="anchor_every"
            )


#: Every 5 trials or 10 minutes, whichever comes first.
DEFAULT_EVERY = Every()


def stored(study: optuna.Study) -> Anchors:
    """The study's start baseline and anchors."""
    return read_anchors(study.user_attrs)


def due(study: optuna.Study, every: Every, now: float) -> bool:
    """Whether an anchor is due at ``now`` (seconds since the epoch; see the module docstring)."""
    anchors = stored(study)
    since = anchors.runs[-1].started if anchors.runs else anchors.baseline_at
    starts = [epoch(t.datetime_start) for t in study.get_trials(deepcopy=False)]
    count = sum(1 for s in starts if s is not None and (since is None or s >= since))
    if count >= every.trials:
        return True
    return since is not None and count > 0 and now - since >= every.seconds


def anchor_settings(settings: RunSettings) -> RunSettings:
    """The baseline's throughput run: seed 0, the search's timed windows, nothing else."""
    return speed_settings(settings).replace(seed=BASELINE_SEEDS[0], measure_throughput=True)


def run(
    study: optuna.Study,
    measure: AnchorRunner,
    config: TrialConfig,
    settings: RunSettings,
    log_root: Path,
) -> Anchor:
    """Runs one anchor of the baseline ``config`` with ``measure`` and stores it (first as
    running, then with its throughput or its error); a failure never stops the study."""
    started = time.time()
    key = f"{ANCHOR_PREFIX}{started:.3f}:{socket.gethostname()}:{os.getpid()}"
    writer.write_anchor(study, key, Anchor(key, started, None, None).to_dict())
    try:
        result = measure(config, anchor_settings(settings), log_root / f"anchor_{int(started)}")
        throughput, error = result.throughput, None
        if throughput is None or not throughput.median > 0:
            throughput, error = None, "throughput was not measured"
    except TrialFailure as failure:
        throughput, error = None, f"{failure.kind}: {failure.message}"
    anchor = Anchor(key, started, time.time(), throughput, error)
    writer.write_anchor(study, key, anchor.to_dict())
    return anchor


def run_if_due(study: Study, n_trials: int | None) -> Anchor | None:
    """Runs an anchor for ``study`` when one is due and trials remain to be run towards
    ``n_trials``; its ``anchor_every`` (None: never) says how often."""
    every = study.anchor_every
    if every is None or (n_trials is not None and study.finished_count() >= n_trials):
        return None
    if not due(study.optuna, every, time.time()):
        return None
    return run(study.optuna, study._run, study.baseline_config, study.settings, study.log_root)


def current(study: optuna.Study) -> Estimate:
    """The baseline's samples/s now: the latest measured anchor's, else the start's."""
    return stored(study).latest() or baseline.reference(study)[0]


def reference_at(study: optuna.Study, when: dt.datetime | None) -> Estimate:
    """The baseline's samples/s nearest in time to ``when`` (the start's without anchors)."""
    return stored(study).at(epoch(when)) or baseline.reference(study)[0]


__all__ = [
    "DEFAULT_EVERY",
    "AnchorRunner",
    "Every",
    "anchor_settings",
    "current",
    "due",
    "reference_at",
    "run",
    "run_if_due",
    "stored",
]
