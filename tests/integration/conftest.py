"""Shared fixtures of the integration tests: fixture experiment references and small settings.

Nothing here imports TensorFlow; tests that need it import it themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from autotune import RunSettings

EXPERIMENTS = Path(__file__).resolve().parents[1] / "fixtures" / "experiments"


@pytest.fixture(scope="session")
def tiny_ref() -> Callable[[str], str]:
    """``tiny_ref(name)``: the reference of an experiment in fixtures/experiments/tiny.py."""
    return lambda name="tiny": f"{EXPERIMENTS / 'tiny.py'}:{name}"


@pytest.fixture(scope="session")
def faulty_ref() -> Callable[[str], str]:
    """``faulty_ref(name)``: the reference of an experiment in fixtures/experiments/faulty.py."""
    return lambda name: f"{EXPERIMENTS / 'faulty.py'}:{name}"


@pytest.fixture(scope="session")
def settings() -> RunSettings:
    """Tiny, fast measurement settings: a short warm-up, 3 short windows, a 3-point curve."""
    return RunSettings(
        seed=0,
        warmup_min_steps=3,
        warmup_max_steps=30,
        windows=3,
        window_seconds=0.05,
        checkpoints=3,
        curve_samples=1024,
        time_limit_seconds=60,
    )


@pytest.fixture
def float32_policy() -> Iterator[None]:
    """Keras's process-global dtype policy at float32 before and after the test, so a test that
    sets a mixed policy leaves none behind (Keras is imported only when a test asks for this)."""
    import keras

    keras.config.set_dtype_policy("float32")
    yield
    keras.config.set_dtype_policy("float32")
