"""One trial, isolated: the child process, the runner and the tf.data pipeline.

This package holds autotune's only TensorFlow importers; importing it imports none of them (each
module loads TensorFlow itself, in the trial process). :func:`run_isolated` runs one trial in a
fresh process and returns its :class:`autotune.store.result.RunResult`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from autotune.trial.isolation import run_isolated

__all__ = ["run_isolated"]


def __getattr__(name: str) -> Any:
    if name == "run_isolated":
        from autotune.trial.isolation import run_isolated

        return run_isolated
    raise AttributeError(f"module 'autotune.trial' has no attribute {name!r}")
