"""What a :class:`~autotune.study.Study` refuses before anything is stored: a sampler seed
numpy cannot take, a study name an Optuna storage cannot hold, a log folder that cannot be
made, a Keras backend that is not installed (or that an experiment's own training step cannot
run on)."""

from __future__ import annotations

import os
from pathlib import Path

from autotune.config import LIMITS, backend_missing, is_positive_finite
from autotune.exceptions import ConfigError
from autotune.experiment import Experiment
from autotune.space import SearchSpace, space_values
from autotune.store.storage import STUDY_NAME

#: The largest sampler seed (numpy's range).
MAX_SEED = LIMITS["seed"]
#: The longest study name an Optuna storage holds (its indexed string column).
MAX_STUDY_NAME = 512


def check_seed(seed: object) -> int:
    """``seed`` when it is an integer in [0, :data:`MAX_SEED`]; ConfigError naming "seed"."""
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(
            f"must be an integer in [0, {MAX_SEED}]. Received: {seed!r}", argument="seed"
        )
    return seed


def check_study_name(name: object) -> str:
    """``name`` when an Optuna storage can hold it: a non-empty string of at most
    :data:`MAX_STUDY_NAME` characters without control characters; ConfigError naming
    "study_name" otherwise, before anything is written."""
    shown = repr(name) if not isinstance(name, str) or len(name) <= 80 else f"{name[:60]!r}..."
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"must be a non-empty string. Received: {shown}", argument=STUDY_NAME)
    if len(name) > MAX_STUDY_NAME:
        raise ConfigError(
            f"must be at most {MAX_STUDY_NAME} characters (Optuna's limit). Received "
            f"{len(name):,} characters: {shown}",
            argument=STUDY_NAME,
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise ConfigError(
            f"must not contain control characters. Received: {shown}", argument=STUDY_NAME
        )
    return name


def check_log_root(path: Path, argument: str = "log_root") -> Path:
    """``path`` when the study can keep its logs there: it is a folder, or the nearest part of
    it that exists is a folder this process can write in. ConfigError naming ``argument`` and
    the file in the way, or the folder that is not writable, otherwise."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(
            f"{str(path)!r} cannot be made: {str(existing)!r} is a file, not a folder. Move "
            "the file away, or keep the logs elsewhere",
            argument=argument,
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{str(path)!r} cannot be made: folder {str(existing)!r} is not writable",
            argument=argument,
        )
    return path


def check_budget(n_trials: object, timeout: object) -> None:
    """Raises ConfigError unless ``n_trials`` (an integer >= 0) or ``timeout`` (seconds > 0) is
    given and valid: otherwise a study would never end."""
    if n_trials is not None and (
        not isinstance(n_trials, int) or isinstance(n_trials, bool) or n_trials < 0
    ):
        raise ConfigError(f"n_trials must be an integer >= 0. Received: n_trials={n_trials!r}")
    if timeout is not None and not is_positive_finite(timeout):
        raise ConfigError(
            f"must be a finite number of seconds > 0 or None. Received: {timeout!r}",
            argument="timeout",
        )
    if n_trials is None and timeout is None:
        raise ConfigError("give n_trials or timeout (or both); otherwise the study never ends")


__all__ = [
    "MAX_SEED",
    "MAX_STUDY_NAME",
    "check_budget",
    "check_log_root",
    "check_seed",
    "check_study_name",
]


def check_backends(space: SearchSpace, experiment: Experiment | None = None) -> SearchSpace:
    """``space`` when every Keras backend it searches can run here, and run ``experiment``'s
    own ``train_step`` (a TensorFlow step: TensorFlow only); ConfigError naming "space", the
    backend and what to do otherwise (before any trial fails for it)."""
    backend = space.parameters.get("backend")
    backends = space_values(backend) if backend is not None else ()
    if experiment is not None and experiment.train_step is not None:
        others = [name for name in backends if name != "tensorflow"]
        if others:
            raise ConfigError(
                f"{space.source} searches the backend(s) {others}, but experiment "
                f"{experiment.name!r} gives its own train_step, which runs on TensorFlow only. "
                "Leave them out of parameters.backend",
                argument="space",
            )
    for name in backends:
        missing = backend_missing(name)
        if missing is not None:
            raise ConfigError(
                f"{space.source} searches {missing}. Install it, or leave {name!r} out of "
                "parameters.backend",
                argument="space",
            )
    return space
