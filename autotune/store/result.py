"""What one measured trial produced: :class:`RunResult`, JSON round-tripping."""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from autotune.analysis.profile import ProfileSummary
from autotune.analysis.recompilation import Recompilation
from autotune.config import TrialConfig
from autotune.measure import Estimate, InputAblation


def _plain(value: Any) -> Any:
    """A field's JSON-ready value: its own ``to_dict`` where it has one (the configuration,
    the estimate, the ablation, the profile, the recompilation check), a curve as a list of
    dicts, anything else (numbers, strings, plain dicts and lists) copied."""
    if isinstance(value, list):
        return [_plain(item) for item in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return copy.deepcopy(value)


@dataclass(frozen=True)
class CurvePoint:
    """Validation loss after ``samples`` training examples; under loss scaling
    (``mixed_float16``) also the loss scale there and the training steps skipped since the curve
    began (non-finite gradients: the scale was halved and the step not applied)."""

    samples: int
    val_loss: float
    loss_scale: float | None = None
    skipped_steps: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The point as JSON; the loss-scale fields only where they were recorded."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclass(frozen=True)
class RunResult:
    """The measurements of one trial.

    Attributes:
        config: the configuration asked for.
        effective: the settings that took effect: dtype policy, compute dtype, jit_compile asked
            and effective, the output layer's dtype and whether autotune fixed it, loss scaling,
            learning rate, and the pipeline settings.
        throughput: median samples/s over the timed windows with its confidence interval; None
            when throughput was not measured.
        window_samples_per_second: each timed window's throughput (samples/s).
        steps_per_window: whole training steps in each timed window.
        warmup_steps: steps run before steady state (excluded from throughput).
        compile_seconds: first step time minus a steady step time: tracing and XLA compilation.
        steady_step_seconds: median step time at the end of warm-up (seconds).
        curve: validation loss at fixed sample checkpoints; empty when no curve was trained.
        final_metrics: validation metrics at the last checkpoint.
        stopped_early: why the trial stopped before its curve, or None.
        input_ablation: input-boundness by ablation (see :class:`InputAblation`), or None.
        profile: the profiled window read with XProf (see :class:`ProfileSummary`), or None
            when the trial was not profiled or its profile could not be read.
        profile_error: why a profile that was asked for is missing, or None.
        recompilation: XLA recompilation seen in the timed windows (see
            :class:`Recompilation`), or None when throughput was not measured.
        peak_host_bytes: peak resident memory of the trial process (bytes).
        peak_device_bytes: peak accelerator memory (bytes), None on a CPU.
        phase_seconds: wall time of each phase (setup, warmup, windows, profile, ablation,
            curve).
        hardware, versions: where and with what the trial ran.
    """

    config: TrialConfig
    effective: dict[str, Any]
    throughput: Estimate | None
    window_samples_per_second: list[float] = field(default_factory=list)
    steps_per_window: int = 0
    warmup_steps: int = 0
    compile_seconds: float = 0.0
    steady_step_seconds: float = 0.0
    curve: list[CurvePoint] = field(default_factory=list)
    final_metrics: dict[str, float] = field(default_factory=dict)
    stopped_early: str | None = None
    input_ablation: InputAblation | None = None
    profile: ProfileSummary | None = None
    profile_error: str | None = None
    recompilation: Recompilation | None = None
    peak_host_bytes: int = 0
    peak_device_bytes: int | None = None
    phase_seconds: dict[str, float] = field(default_factory=dict)
    hardware: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)

    def to_dict(self, *, with_config: bool = True) -> dict[str, Any]:
        """The result as JSON-ready data, in field order; without ``config`` when not
        ``with_config`` (a stored trial keeps its configuration on its own:
        :func:`autotune.store.writer.write_result`)."""
        data: dict[str, Any] = {}
        for item in dataclasses.fields(self):
            if item.name != "config" or with_config:
                data[item.name] = _plain(getattr(self, item.name))
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        values = dict(data)
        values["config"] = TrialConfig.from_dict(values["config"])
        if values.get("throughput") is not None:
            values["throughput"] = Estimate(**values["throughput"])
        values["curve"] = [CurvePoint(**point) for point in values.get("curve", [])]
        if values.get("input_ablation") is not None:
            values["input_ablation"] = InputAblation.from_dict(values["input_ablation"])
        if values.get("profile") is not None:
            values["profile"] = ProfileSummary.from_dict(values["profile"])
        if values.get("recompilation") is not None:
            values["recompilation"] = Recompilation.from_dict(values["recompilation"])
        return cls(**values)

    @classmethod
    def from_json(cls, text: str) -> RunResult:
        return cls.from_dict(json.loads(text))
