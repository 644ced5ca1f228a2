"""The dynamic-shape trap: XLA compiling again during the timed windows. No TensorFlow here.

XLA compiles the training step once per input shape. A pipeline whose batches change shape (a
padded batch as long as its longest sequence, a last short batch) makes XLA compile again and again
while it is being timed. The runner gives :func:`detect` the time of every timed step, the first
step's compile time, whether XLA was on and which input dimensions the pipeline leaves unknown; a
step that took as long as a compilation, not a training step, counts as a recompilation.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

#: A step counts as compile-like when it is this many times a typical step or more ...
MEDIAN_FACTOR = 10.0
#: ... and longer than a typical step by at least this share of the first step's compile time.
COMPILE_SHARE = 0.1
#: A typical step: this quantile of the timed steps (not the median, so that recompilations in
#: up to three quarters of the steps still stand out).
TYPICAL_QUANTILE = 0.25


@dataclass(frozen=True)
class Recompilation:
    """What the timed windows say about recompilation.

    Attributes:
        jit_compile: whether XLA compiled the training step.
        dynamic_dims: input dimensions the pipeline leaves unknown, e.g. ``["x[1]"]``; each new
            size there is a new shape for XLA.
        compile_like_steps: timed steps that took as long as a compilation.
        timed_steps: steps in the timed windows.
        median_step_ms: median timed step (milliseconds).
        slowest_step_ms: slowest timed step (milliseconds).
        compile_ms: the first step's compile time (milliseconds), the yardstick.
        slow_steps_ms: the compile-like steps' times (milliseconds, at most 20 kept).
    """

    jit_compile: bool
    dynamic_dims: list[str]
    compile_like_steps: int
    timed_steps: int
    median_step_ms: float
    slowest_step_ms: float
    compile_ms: float
    slow_steps_ms: list[float] = field(default_factory=list)

    @property
    def flagged(self) -> bool:
        """XLA recompiled while being timed: compile-like steps with XLA on, two or more, or one
        with dynamic input dimensions to explain it."""
        if not self.jit_compile or self.compile_like_steps == 0:
            return False
        return self.compile_like_steps >= 2 or bool(self.dynamic_dims)

    @property
    def message(self) -> str:
        """One sentence for people; empty when there is nothing to say."""
        dims = ", ".join(self.dynamic_dims)
        if self.flagged:
            cause = (
                f"the input has dynamic dimensions ({dims}), so each new size is a new XLA "
                "shape: pad or bucket batches to fixed shapes"
                if dims
                else "something changes the step's shapes or graph between steps"
            )
            return (
                f"XLA recompiled during the timed windows: {self.compile_like_steps} of "
                f"{self.timed_steps} steps took compile-like time (up to "
                f"{self.slowest_step_ms:,.0f} ms against a {self.median_step_ms:,.1f} ms median); "
                f"{cause}"
            )
        if self.jit_compile and dims:
            return (
                f"dynamic input dimensions ({dims}) can make XLA recompile; none seen while timed"
            )
        return ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["flagged"] = self.flagged
        data["message"] = self.message
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Recompilation:
        values = {k: v for k, v in data.items() if k not in ("flagged", "message")}
        return cls(**values)


def detect(
    step_seconds: Sequence[float],
    compile_seconds: float,
    jit_compile: bool,
    dynamic_dims: Sequence[str] = (),
) -> Recompilation:
    """Counts the timed steps (``step_seconds``, seconds each) that took compile-like time.

    A step is compile-like when it is at least :data:`MEDIAN_FACTOR` times a typical step (the
    :data:`TYPICAL_QUANTILE` quantile) and longer than it by :data:`COMPILE_SHARE` of
    ``compile_seconds`` (the first step's compile time): an XLA recompilation costs a good part
    of the first compilation, a slow step on a busy machine rarely ten typical steps.
    """
    if not step_seconds:
        return Recompilation(jit_compile, list(dynamic_dims), 0, 0, 0.0, 0.0, compile_seconds * 1e3)
    median = statistics.median(step_seconds)
    ordered = sorted(step_seconds)
    typical = ordered[int(TYPICAL_QUANTILE * (len(ordered) - 1))]
    threshold = max(MEDIAN_FACTOR * typical, typical + COMPILE_SHARE * compile_seconds)
    slow = [s for s in step_seconds if s >= threshold]
    return Recompilation(
        jit_compile=jit_compile,
        dynamic_dims=list(dynamic_dims),
        compile_like_steps=len(slow),
        timed_steps=len(step_seconds),
        median_step_ms=median * 1e3,
        slowest_step_ms=max(step_seconds) * 1e3,
        compile_ms=compile_seconds * 1e3,
        slow_steps_ms=[s * 1e3 for s in slow[:20]],
    )
