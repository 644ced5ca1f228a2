"""Training steps, run and timed: the loop every phase of a trial shares.

:class:`Trainer` calls a compiled model's training function on one iterator (one call is one
step, or ``steps_per_execution`` of them) and checks the loss; :func:`timed_window` times whole
calls in samples/s. TensorFlow is imported here: only the trial process uses this module.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import keras
import tensorflow as tf

from autotune.exceptions import TrialFailure, is_out_of_memory


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
    """

    def __init__(self, model: keras.Model, dataset: tf.data.Dataset, xla_compiles: bool) -> None:
        self.model = model
        self.iterator = iter(dataset)
        self.xla_compiles = xla_compiles
        self.steps = 0
        model.make_train_function()
        self._step: Callable[[Any], dict[str, Any]] = model.train_function

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
                try:
                    logs = self._step(self.iterator)
                except tf.errors.OpError as error:
                    if is_out_of_memory(error):  # XLA's RESOURCE_EXHAUSTED while compiling
                        raise TrialFailure(
                            "oom", f"out of memory in the first (compiled) step: {error.message}"
                        ) from error
                    raise TrialFailure(
                        "xla_compile", f"XLA could not compile the training step: {error.message}"
                    ) from error
            elif step_markers:
                with tf.profiler.experimental.Trace("train", step_num=self.steps, _r=1):
                    logs = self._step(self.iterator)
            else:
                logs = self._step(self.iterator)
            if step_seconds is not None:
                step_seconds.append(clock.seconds())
            self.steps += 1
        loss = float(logs["loss"])
        if not math.isfinite(loss):
            raise TrialFailure("nan", f"training loss became {loss} by step {self.steps} ({phase})")
        return loss


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
    trainer.model.reset_metrics()
    clock = Stopwatch()
    trainer.run(steps, phase, step_seconds=step_seconds, step_markers=step_markers)
    return steps * samples_per_call / clock.seconds()


__all__ = ["Stopwatch", "Trainer", "timed_window"]
