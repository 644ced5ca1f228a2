"""autotune: find the fastest way to train a Keras model without changing what it learns.

Importing autotune imports neither TensorFlow nor Optuna; the study and trial machinery (and
:func:`apply`, which shares the trial's code) load on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from autotune.bundled import load_experiment
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import (
    AutotuneError,
    ConfigError,
    ExperimentError,
    StudyError,
    TrialFailure,
)
from autotune.experiment import Experiment
from autotune.measure import Estimate
from autotune.recipe import Recipe
from autotune.store.result import CurvePoint, RunResult

__version__ = "0.1.0"

_LAZY = {
    "AppliedRecipe": "autotune.trial.applied",
    "apply": "autotune.trial.applied",
    "Study": "autotune.study",
    "StudyCallback": "autotune.study",
    "StudyOutcome": "autotune.study",
    "TrialRow": "autotune.store.records",
    "load_study": "autotune.study",
    "SearchSpace": "autotune.space",
    "Choice": "autotune.space",
    "IntRange": "autotune.space",
    "load_space": "autotune.space",
    "run_isolated": "autotune.trial.isolation",
}

__all__ = [
    "AppliedRecipe",
    "AutotuneError",
    "Choice",
    "ConfigError",
    "CurvePoint",
    "Estimate",
    "Experiment",
    "ExperimentError",
    "IntRange",
    "Recipe",
    "RunResult",
    "RunSettings",
    "SearchSpace",
    "Study",
    "StudyCallback",
    "StudyError",
    "StudyOutcome",
    "TrialConfig",
    "TrialFailure",
    "TrialRow",
    "__version__",
    "apply",
    "load_experiment",
    "load_space",
    "load_study",
    "run_isolated",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'autotune' has no attribute {name!r}")
