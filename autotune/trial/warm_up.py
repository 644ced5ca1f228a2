"""A trial's warm-up: calls of the training function until their times stop falling, or until
they show the trial cannot reach the baseline. No TensorFlow here: the runner hands in one call.

:func:`warm_up` runs calls through a callable that runs one and returns its seconds, so the loop
and its early stops are the same whatever trains (the runner's trainer, or a scripted one in the
unit tests). The stops and the steady state decide on the training steps that ran, never on a
count of calls: one call of 64 steps per execution is as much evidence as 64 one-step calls, so at
64 steps a call the warm-up needs 3 calls (the compiling one and two to compare), not 7.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from autotune.config import RunSettings
from autotune.measure import WarmupDetector, hopeless_warm_up, slow_steady_warm_up


@dataclass(frozen=True)
class WarmUp:
    """What a warm-up measured.

    Attributes:
        steps: calls run (the first one compiles).
        steady_step_seconds: the steady call time (seconds per call).
        compile_seconds: the first call's extra time (seconds).
        stopped: why it stopped the trial (:func:`hopeless_warm_up`,
            :func:`slow_steady_warm_up`), or None.
        samples_per_second: each call's after the first.
    """

    steps: int = 0
    steady_step_seconds: float = 0.0
    compile_seconds: float = 0.0
    stopped: str | None = None
    samples_per_second: tuple[float, ...] = ()


def warm_up(
    run_call: Callable[[], float],
    settings: RunSettings,
    samples_per_call: int,
    steps_per_call: int = 1,
) -> WarmUp:
    """Runs calls (``run_call`` runs one, ``steps_per_call`` training steps of
    ``samples_per_call`` samples in all, and returns its seconds) until their times stop
    falling (:class:`WarmupDetector`, counting training steps), ``warmup_max_steps`` calls have
    run, or ``warmup_max_seconds`` have passed with at least 2 run; or until the trial is
    hopeless against ``stop_below_samples_per_second`` (:func:`hopeless_warm_up`, from the
    first training steps after compilation) or, once steady, grossly slower than it
    (:func:`slow_steady_warm_up`)."""
    detector = WarmupDetector(min_steps=settings.warmup_min_steps, steps_per_call=steps_per_call)
    threshold = settings.stop_below_samples_per_second
    calls = 0
    while True:
        detector.add(run_call())
        calls += 1
        stopped = hopeless_warm_up(
            detector.step_seconds, samples_per_call, threshold, steps_per_call
        )
        if stopped is None and detector.steady:
            recent = detector.step_seconds[1:][-detector.span :]
            stopped = slow_steady_warm_up(
                [samples_per_call / seconds for seconds in recent],
                len(recent) * steps_per_call,
                threshold,
            )
        if stopped or detector.steady or calls >= settings.warmup_max_steps:
            break
        if sum(detector.step_seconds) > settings.warmup_max_seconds and calls >= 2:
            break
    steady = detector.steady_step_seconds
    rates = tuple(samples_per_call / seconds for seconds in detector.step_seconds[1:])
    compile_seconds = max(0.0, detector.step_seconds[0] - steady)
    return WarmUp(calls, steady, compile_seconds, stopped, rates)


__all__ = ["WarmUp", "warm_up"]
