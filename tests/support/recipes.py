"""A recipe as a study writes one, for the tests that apply or render one without a study."""

from __future__ import annotations

from typing import Any

from autotune import hardware
from autotune.config import TrialConfig
from autotune.recipe import Recipe


def recipe_for(config: TrialConfig, learning_rate: float | None = 0.01, **changes: Any) -> Recipe:
    """A recipe of ``config`` at ``learning_rate``, measured on this machine (so ``apply()``
    finds no hardware difference), its throughput and fidelity unset; ``changes`` replace any
    other field."""
    values: dict[str, Any] = {
        "config": config,
        "learning_rate": learning_rate,
        "throughput": None,
        "baseline_throughput": None,
        "speedup": None,
        "fidelity": None,
        "tolerance": 1.5,
        "experiment": "tiny",
        "study": "tiny-s",
        "storage": "sqlite:///autotune.db",
        "trial": 1,
        "effective": {"learning_rate": learning_rate},
        "hardware": dict(hardware.hardware()),
    }
    return Recipe(**(values | changes))
