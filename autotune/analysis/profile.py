"""Reads a TensorBoard profile with XProf's converters into a step-time breakdown and a verdict.

The runner captures one steady-state window under the TensorBoard profiler, each step wrapped in
a ``Trace("train", step_num=n, _r=1)`` marker, into ``<log_dir>/plugins/profile/<run>/``.
:func:`analyse` hands the XSpace to XProf (``xprof.convert.raw_to_tool_data``), reads the
``input_pipeline_analyzer`` (per-step input, host compute, device compute, compilation and other
time), ``framework_op_stats`` (operations by self time) and ``overview_page`` (the share of device
compute in 16-bit, where XProf reports one) tools, and judges input-boundness with XProf's
thresholds. No TensorFlow here: XProf parses profiles on its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from autotune.exceptions import AutotuneError, ConfigError
from autotune.measure import input_bound_verdict

#: How a study profiles: every trial, a re-run of its Pareto candidates, or never.
PROFILE_MODES = ("all", "pareto", "off")

#: Breakdown components, in drawing order (milliseconds per step).
BREAKDOWN_COMPONENTS = ("input", "host_compute", "device_compute", "compile", "other")

#: XProf's step-time columns that make up each breakdown component.
_COLUMNS = {
    "input": ("infeedTimeMs",),
    "host_compute": ("hostComputeTimeMs",),
    "device_compute": ("deviceComputeTimeMs",),
    "compile": ("compileTimeMs",),
    "other": (
        "otherTimeMs",
        "kernelLaunchTimeMs",
        "deviceToDeviceTimeMs",
        "deviceCollectivesTimeMs",
        "outfeedTimeMs",
    ),
}

TOP_OPS = 8


class ProfileError(AutotuneError):
    """A profile could not be captured or read (no XSpace, no step markers, XProf failed)."""


@dataclass(frozen=True)
class OpTime:
    """One operation type and name with its total self time in the profiled window.

    Attributes:
        name: the framework operation's name (e.g. ``.../dense/MatMul``).
        type: its type (e.g. ``_MklMatMul``, ``Conv2D``, ``Dataset``).
        host_or_device: where it ran, as XProf says ("Host" or "Device").
        self_ms: total self time over the window (milliseconds).
        fraction: share of all (non-idle) self time, 0..1.
    """

    name: str
    type: str
    host_or_device: str
    self_ms: float
    fraction: float


@dataclass(frozen=True)
class ProfileSummary:
    """What one profiled window says about where step time goes.

    Attributes:
        log_dir: the TensorBoard log folder of the trial (``tensorboard --logdir`` shows it).
        steps: steps with step markers that XProf measured.
        step_ms: mean step time in the profiled window (milliseconds).
        breakdown_ms: mean milliseconds per step for each of :data:`BREAKDOWN_COMPONENTS`.
        input_fraction: share of step time waiting for input, 0..1.
        verdict: "not", "moderately" or "highly input-bound" (XProf's 5% and 20% thresholds).
        statement: XProf's own conclusion, word for word.
        top_ops: the operations with the most self time, largest first.
        sixteen_bit_fraction: share of device compute time in 16-bit operations, 0..1; None
            where XProf reports none (on a CPU).
        device_type: the hardware XProf saw ("CPU_ONLY", "GPU", "TPU").
        capture_seconds: wall time of profiling: the profiled steps, starting and stopping the
            profiler, writing and reading the profile (seconds, outside every timed window).
        profiled_samples_per_second: throughput of the profiled window (samples/s); compared
            with the timed windows it gives the profiler's slowdown.
    """

    log_dir: str
    steps: int
    step_ms: float
    breakdown_ms: dict[str, float]
    input_fraction: float
    verdict: str
    statement: str = ""
    top_ops: list[OpTime] = field(default_factory=list)
    sixteen_bit_fraction: float | None = None
    device_type: str = ""
    capture_seconds: float = 0.0
    profiled_samples_per_second: float | None = None

    def with_capture(self, seconds: float, samples_per_second: float) -> ProfileSummary:
        return replace(
            self, capture_seconds=seconds, profiled_samples_per_second=samples_per_second
        )

    def slowdown(self, timed_samples_per_second: float) -> float | None:
        """How much slower the profiled window ran than the timed windows (0.1 = 10% slower)."""
        if not self.profiled_samples_per_second or timed_samples_per_second <= 0:
            return None
        return 1.0 - self.profiled_samples_per_second / timed_samples_per_second

    def to_dict(self) -> dict[str, Any]:
        return {
            "log_dir": self.log_dir,
            "steps": self.steps,
            "step_ms": self.step_ms,
            "breakdown_ms": dict(self.breakdown_ms),
            "input_fraction": self.input_fraction,
            "verdict": self.verdict,
            "statement": self.statement,
            "top_ops": [vars(op).copy() for op in self.top_ops],
            "sixteen_bit_fraction": self.sixteen_bit_fraction,
            "device_type": self.device_type,
            "capture_seconds": self.capture_seconds,
            "profiled_samples_per_second": self.profiled_samples_per_second,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProfileSummary:
        values = dict(data)
        values["top_ops"] = [OpTime(**op) for op in values.get("top_ops", [])]
        return cls(**values)


def xspace_files(log_dir: str | Path) -> list[Path]:
    """The XSpace files of the newest profiling session under ``log_dir`` that has any (a
    session folder left empty by a profile that failed to save is skipped)."""
    sessions = sorted(
        (p for p in (Path(log_dir) / "plugins" / "profile").glob("*") if p.is_dir()),
        key=lambda p: p.name,
    )
    for session in reversed(sessions):
        files = sorted(session.glob("*.xplane.pb"))
        if files:
            return files
    return []


def _tool_json(files: Sequence[Path], tool: str) -> Any:
    from xprof.convert import raw_to_tool_data

    data, _content_type = raw_to_tool_data.xspace_to_tool_data([str(f) for f in files], tool, {})
    if not data:
        raise ProfileError(f"XProf's {tool} tool returned nothing for {files[0].parent}")
    return json.loads(data)


def analyse(log_dir: str | Path) -> ProfileSummary:
    """Reads the newest profile under ``log_dir`` with XProf into a :class:`ProfileSummary`.

    Raises:
        ProfileError: no XSpace under ``log_dir``, XProf could not read it, or it holds no step
            markers (a profile of steps not wrapped in ``Trace(..., step_num=n, _r=1)``).
    """
    files = xspace_files(log_dir)
    if not files:
        raise ProfileError(f"no profile (*.xplane.pb) under {Path(log_dir) / 'plugins/profile'}")
    try:
        pipeline = _tool_json(files, "input_pipeline_analyzer")
        ops = _tool_json(files, "framework_op_stats")
        overview = _tool_json(files, "overview_page")
    except (ValueError, RuntimeError, OSError) as error:
        raise ProfileError(f"XProf could not read {files[0]}: {error}") from error
    return summarize_tools(str(log_dir), pipeline, ops, overview)


def summarize_tools(
    log_dir: str, input_pipeline: Any, op_stats: Any, overview: Any
) -> ProfileSummary:
    """Builds a :class:`ProfileSummary` from the JSON of XProf's ``input_pipeline_analyzer``,
    ``framework_op_stats`` and ``overview_page`` tools (DataTable lists, as XProf serves them)."""
    steps_table = _step_table(input_pipeline)
    rows = _records(steps_table)
    rows = [r for r in rows if isinstance(r.get("stepTimeMs"), (int, float))]
    if not rows:
        raise ProfileError(
            f"the profile in {log_dir} has no step times (XProf: 'No step time measured'); "
            "profiled steps need Trace('train', step_num=n, _r=1) markers"
        )
    count = len(rows)
    breakdown = {
        name: sum(float(r.get(col) or 0.0) for r in rows for col in cols) / count
        for name, cols in _COLUMNS.items()
    }
    step_ms = sum(float(r["stepTimeMs"]) for r in rows) / count
    fraction = min(1.0, breakdown["input"] / step_ms) if step_ms > 0 else 0.0
    properties = steps_table.get("p", {})
    return ProfileSummary(
        log_dir=log_dir,
        steps=count,
        step_ms=step_ms,
        breakdown_ms=breakdown,
        input_fraction=fraction,
        verdict=input_bound_verdict(fraction),
        statement=str(properties.get("input_conclusion", "")),
        top_ops=top_operations(op_stats),
        sixteen_bit_fraction=_sixteen_bit(overview),
        device_type=str(properties.get("hardware_type", "")),
    )


def _tables(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        return [data]
    return [t for t in data if isinstance(t, dict)] if isinstance(data, list) else []


def _records(table: dict[str, Any]) -> list[dict[str, Any]]:
    """A DataTable's rows as {column id: value} dicts."""
    columns = [c["id"] for c in table.get("cols", [])]
    return [
        {col: cell.get("v") for col, cell in zip(columns, row.get("c", []), strict=False)}
        for row in table.get("rows", [])
    ]


def _step_table(input_pipeline: Any) -> dict[str, Any]:
    for table in _tables(input_pipeline):
        if any(c.get("id") == "stepTimeMs" for c in table.get("cols", [])):
            return table
    return {}


def top_operations(op_stats: Any, limit: int = TOP_OPS) -> list[OpTime]:
    """The ``limit`` operations with the most self time, from ``framework_op_stats`` (idle time
    left out; ``fraction`` is the share of all non-idle self time)."""
    tables = _tables(op_stats)
    if not tables:
        return []
    rows = _records(tables[-1])  # XProf's last table leaves out IDLE
    rows = [r for r in rows if r.get("type") != "IDLE" and r.get("total_self_time") is not None]
    total = sum(float(r["total_self_time"]) for r in rows)
    rows.sort(key=lambda r: float(r["total_self_time"]), reverse=True)
    return [
        OpTime(
            name=str(r.get("operation", "")),
            type=str(r.get("type", "")),
            host_or_device=str(r.get("host_or_device", "")),
            self_ms=float(r["total_self_time"]) / 1e3,
            fraction=float(r["total_self_time"]) / total if total > 0 else 0.0,
        )
        for r in rows[:limit]
    ]


def _sixteen_bit(overview: Any) -> float | None:
    """XProf's ``device_compute_16bit_percent`` as a fraction, when the profile has device time."""
    for table in _tables(overview):
        value = table.get("p", {}).get("device_compute_16bit_percent")
        if value in (None, ""):
            continue
        try:
            percent = float(str(value).rstrip("%"))
        except ValueError:
            continue
        return percent / 100.0
    return None


@dataclass(frozen=True)
class Verdict:
    """A trial's input-boundness, from the source that sees it best.

    Attributes:
        verdict: "not", "moderately" or "highly input-bound".
        input_fraction: share of step time the input costs, 0..1.
        source: "xprof" (time the step waited for input in the profiled window) or "ablation"
            (the step time saved by feeding one cached batch).
        why: why this source was chosen.
    """

    verdict: str
    input_fraction: float
    source: str
    why: str

    def to_dict(self) -> dict[str, Any]:
        return vars(self).copy()


#: XProf's name for a profile with no accelerator.
CPU_ONLY = "CPU_ONLY"


def input_verdict(
    profile: Mapping[str, Any] | None, ablation: Mapping[str, Any] | None
) -> Verdict | None:
    """The verdict a trial reports, from its stored ``profile`` and ``input_ablation`` dicts.

    With an accelerator, XProf's: the host feeding the device too slowly shows as time the step
    waits for input. On a CPU the input pipeline and the training step share the cores, so the
    input also costs compute time that no step marker shows as waiting; there the ablation, which
    removes the input work altogether, measures the whole cost, and XProf's figure is shown next
    to it. Either one alone is used when the other is missing; None when neither was measured.
    """
    if profile and (not ablation or profile.get("device_type") != CPU_ONLY):
        return Verdict(
            str(profile["verdict"]),
            float(profile["input_fraction"]),
            "xprof",
            "time each profiled step waited for input (XProf's input-pipeline analyzer)"
            if not ablation
            else "with an accelerator, input costs the time the device waits for the host",
        )
    if ablation:
        return Verdict(
            str(ablation["verdict"]),
            float(ablation["input_fraction"]),
            "ablation",
            "on a CPU, input work and training share the cores: the ablation (one cached batch) "
            "counts that contention, XProf's step markers only the waiting"
            if profile
            else "no profile: step time saved by feeding one cached batch",
        )
    return None


def check_mode(mode: object, source: str = "profile") -> str:
    """``mode`` if it is one of :data:`PROFILE_MODES`, else a :class:`ConfigError` naming it."""

    if mode not in PROFILE_MODES:
        raise ConfigError(f"{source} must be one of {', '.join(PROFILE_MODES)}. Received: {mode!r}")
    return str(mode)
