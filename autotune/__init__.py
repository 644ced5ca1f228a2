"""autotune: find the fastest way to train a Keras model without changing what it learns.

Importing autotune does not import TensorFlow; only a trial process does.
"""

from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import AutotuneError, ConfigError, ExperimentError, TrialFailure
from autotune.experiment import Experiment, load_experiment
from autotune.measure import Estimate
from autotune.result import CurvePoint, RunResult

__version__ = "0.1.0"

__all__ = [
    "AutotuneError",
    "ConfigError",
    "CurvePoint",
    "Estimate",
    "Experiment",
    "ExperimentError",
    "RunResult",
    "RunSettings",
    "TrialConfig",
    "TrialFailure",
    "__version__",
    "load_experiment",
    "run_isolated",
]


def __getattr__(name: str) -> object:
    if name == "run_isolated":
        from autotune.isolation import run_isolated

        return run_isolated
    raise AttributeError(f"module 'autotune' has no attribute {name!r}")
