"""Whether the tests of the JAX backend can run: JAX installed (``pip install -e '.[test,jax]'``,
the README's test command). ``.ci/run`` sets ``AUTOTUNE_REQUIRE_JAX=1``, so that in CI a test
needing JAX fails instead of skipping when it is missing.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

REQUIRE_ENV = "AUTOTUNE_REQUIRE_JAX"


def require_jax() -> None:
    """Skips the test when JAX is not installed, or fails it in CI."""
    if importlib.util.find_spec("jax") is not None:
        return
    reason = "needs JAX for the Keras JAX backend: pip install -e '.[test,jax]'"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but the test {reason}")
    pytest.skip(reason)
