"""Training steps, run and timed: the loop every phase of a trial shares.

:class:`Trainer` calls a compiled model's training function on one iterator (one call is one
step, or ``steps_per_execution`` of them) and checks the loss, on the TensorFlow or the JAX
backend; :func:`timed_window` times whole calls in samples/s. TensorFlow is imported here: only
the trial process uses this module.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from autotune.exceptions import TrialFailure, is_out_of_memory
from autotune.trial import backends

#: The exception classes JAX raises for XLA's errors (compiling, running out of memory).
JAX_XLA_ERRORS = ("JaxRuntimeError", "XlaRuntimeError")


class Stopwatch:
    """Wall time (seconds) since it was made."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def seconds(self) -> float:
        """Seconds since the stopwatch was made."""
        return time.perf_counter() - self._start


class Trainer:
    """Runs training steps of a compiled model from one iterator, checking the loss.

    With ``xla_compiles`` the first step is where XLA compiles the training step, so an error
    there is reported as an XLA compilation failure.

    On TensorFlow the training function updates the model's variables in place. On JAX it is
    stateless: it takes the model's state (its variables' values) and returns the next, and
    donates the state it was given, so the model's own variables are stale, their buffers even
    freed, while a JAX trainer holds the state. :meth:`sync` writes it back; call it before
    anything else reads the model (an evaluation, a snapshot, another trainer). The pipeline is
    tf.data on both; a JAX trainer reads it as numpy arrays.
    """

    def __init__(self, model: keras.Model, dataset: tf.data.Dataset, xla_compiles: bool) -> None:
        self.model = model
        self.xla_compiles = xla_compiles
        self.steps = 0
        self._jax = backends.is_jax()
        self._state: tuple[Any, ...] | None = None
        if self._jax:
            # JAX traces a stateless step: every variable (metrics too) must exist before.
            model._symbolic_build(data_batch=next(dataset.take(1).as_numpy_iterator()))
            self.iterator: Any = dataset.as_numpy_iterator()
        else:
            self.iterator = iter(dataset)
        model.make_train_function()
        self._step: Callable[..., Any] = model.train_function

    def _call(self) -> dict[str, Any]:
        """One call of the training function (one step, or ``steps_per_execution``)."""
        if not self._jax:
            logs: dict[str, Any] = self._step(self.iterator)
            return logs
        if self._state is None:
            self._state = self.model._get_jax_state(
                trainable_variables=True,
                non_trainable_variables=True,
                optimizer_variables=True,
                metrics_variables=True,
            )
        logs, self._state = self._step(self._state, self.iterator)
        return logs

    def sync(self) -> None:
        """Writes a JAX trainer's state back into the model's variables (nothing to do on
        TensorFlow); the next step reads them again."""
        if self._state is None:
            return
        trainable, non_trainable, optimizer, metrics = self._state
        self.model._jax_state = {
            "trainable_variables": trainable,
            "non_trainable_variables": non_trainable,
            "optimizer_variables": optimizer,
            "metrics_variables": metrics,
        }
        self.model._jax_state_synced = False
        self.model.jax_state_sync()
        self.model._jax_state = None
        self._state = None

    def reset_metrics(self) -> None:
        """Resets the model's metrics (a JAX trainer's state synced first)."""
        self.sync()
        self.model.reset_metrics()

    def run(
        self,
        steps: int,
        phase: str,
        step_seconds: list[float] | None = None,
        step_markers: bool = False,
    ) -> float:
        """Runs ``steps`` steps and returns the last loss, read back so all work is finished.

        Appends each step's wall time (seconds, as the host saw it) to ``step_seconds`` when
        given; with ``step_markers`` each step runs inside a profiler step marker, which gives
        XProf its per-step times.
        """
        logs: dict[str, Any] = {}
        for _ in range(steps):
            clock = Stopwatch()
            if self.xla_compiles and self.steps == 0:
                logs = self._first_compiled_call()
            elif step_markers:
                with backends.step_marker(self.steps):
                    logs = self._call()
            else:
                logs = self._call()
            if step_seconds is not None:
                step_seconds.append(clock.seconds())
            self.steps += 1
        loss = float(logs["loss"])
        if not math.isfinite(loss):
            raise TrialFailure("nan", f"training loss became {loss} by step {self.steps} ({phase})")
        return loss

    def _first_compiled_call(self) -> dict[str, Any]:
        """The first call, where XLA compiles: its errors are XLA's (out of memory, or it could
        not compile), on TensorFlow as on JAX."""
        try:
            return self._call()
        except tf.errors.OpError as error:
            message = error.message
            failed: Exception = error
        except RuntimeError as error:  # JAX's XLA errors (JaxRuntimeError, XlaRuntimeError)
            if not any(c.__name__ in JAX_XLA_ERRORS for c in type(error).__mro__):
                raise
            message, failed = str(error), error
        if is_out_of_memory(failed):  # XLA's RESOURCE_EXHAUSTED while compiling
            raise TrialFailure(
                "oom", f"out of memory in the first (compiled) step: {message}"
            ) from failed
        raise TrialFailure(
            "xla_compile", f"XLA could not compile the training step: {message}"
        ) from failed


def timed_window(
    trainer: Trainer,
    steps: int,
    samples_per_call: int,
    phase: str,
    step_seconds: list[float] | None = None,
    step_markers: bool = False,
) -> float:
    """Resets the model's metrics, runs ``steps`` calls of the training function (each of
    ``samples_per_call`` examples: batch size x steps per execution) and returns their
    samples/s."""
    trainer.reset_metrics()
    clock = Stopwatch()
    trainer.run(steps, phase, step_seconds=step_seconds, step_markers=step_markers)
    return steps * samples_per_call / clock.seconds()


__all__ = ["JAX_XLA_ERRORS", "Stopwatch", "Trainer", "timed_window"]
