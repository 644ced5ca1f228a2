"""Figure (c), the step-time breakdown: each run's step time (milliseconds per step) split
into its parts, next to its compile time (seconds)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any, NamedTuple

from autotune.store.records import (
    STEP_BREAKDOWN_COMPONENTS,
    BaselineRecord,
    StudyRecords,
    TrialRow,
    breakdown_source,
)
from autotune.views import _plotly
from autotune.views.report._style import BASELINE_POINT, _empty_note, point_key, trace_uid

#: The one bar segment drawn when a run has no profile breakdown.
UNPROFILED = "whole step (profile breakdown not captured)"
NOT_PROFILED_NOTE = (
    "profile breakdown not captured: each bar is the whole step time over the timed windows "
    "(batch size / median throughput); its parts need a profile (autotune run --profile all or "
    "pareto) or an input ablation"
)
#: The note of a figure with a bar from XProf.
SCALED_NOTE = (
    "XProf's proportions scaled to the timed step time (batch size / median throughput): the "
    "profiler slows the profiled window down"
)
#: The note of a figure with a bar from an input ablation only.
ABLATION_NOTE = (
    "input and compute by ablation (the step time saved by feeding one cached batch), for runs "
    "without a profile"
)
#: Legend names of the step-time components.
COMPONENT_LABELS = {
    "input": "input pipeline",
    "host_compute": "host compute",
    "device_compute": "device compute",
    "compute": "compute (ablation: the step fed one cached batch)",
    "compile": "compile (in the profiled window)",
    "other": "other (launches, transfers, idle)",
    UNPROFILED: UNPROFILED,
}

_COMPONENT_COLORS = {
    "input": "#ff7f0e",
    "host_compute": "#1f77b4",
    "device_compute": "#2ca02c",
    "compute": "#1f77b4",
    "compile": "#e377c2",
    "other": "#9467bd",
    UNPROFILED: "#8c9db5",
}


class BreakdownBar(NamedTuple):
    """One run's step time and compile time.

    Attributes:
        key: "baseline" or "trial:<number>".
        label: short name on the axis ("baseline", "trial 7").
        description: the configuration.
        step_ms: milliseconds per step over the timed windows: batch size / median throughput
            (None when not measured).
        warmup_step_ms: the median step time at the end of warm-up (milliseconds), for
            comparison.
        components: the step split into parts (milliseconds); one :data:`UNPROFILED` part
            holding the whole step when there is no profile.
        compile_seconds: first step time minus a steady step time (seconds).
        profiled: whether ``components`` came from a profile or an input ablation.
        source: where ``components`` came from: "xprof" (XProf's proportions scaled to
            ``step_ms``), "ablation" (input and compute) or None.
        verdict: the input verdict with its source and both figures ("highly input-bound 37%
            (ablation; xprof 3%)"); "" when not measured.
        log_dir: the profile's TensorBoard folder; None without a profile.
        profile_source: "trial", "rerun" (the study's Pareto re-run) or None.
        recompiled: whether XLA recompiled during the timed windows.
    """

    key: str
    label: str
    description: str
    step_ms: float | None
    warmup_step_ms: float | None
    components: dict[str, float]
    compile_seconds: float | None
    profiled: bool
    source: str | None = None
    verdict: str = ""
    log_dir: str | None = None
    profile_source: str | None = None
    recompiled: bool = False


class BreakdownInfo(NamedTuple):
    """Step-time bars of the baseline and some trials.

    Attributes:
        bars: the baseline first, then the trials.
        components: the parts drawn, in stacking order.
        note: :data:`SCALED_NOTE` when any bar comes from XProf, :data:`ABLATION_NOTE` when any
            comes from an input ablation and :data:`NOT_PROFILED_NOTE` when any has neither,
            joined by "; "; None when there is no bar.
    """

    bars: list[BreakdownBar]
    components: list[str]
    note: str | None


def _bar(
    key: str,
    label: str,
    step_ms: float | None,
    run: BaselineRecord | TrialRow,
) -> BreakdownBar:
    breakdown = run.breakdown
    if breakdown:
        components = {k: float(breakdown[k]) for k in STEP_BREAKDOWN_COMPONENTS if k in breakdown}
    else:
        components = {UNPROFILED: step_ms} if step_ms is not None else {}
    steady = run.steady_step_seconds
    return BreakdownBar(
        key=key,
        label=label,
        description=run.config.describe() if run.config else "-",
        step_ms=step_ms,
        warmup_step_ms=None if steady is None else 1e3 * steady,
        components=components,
        compile_seconds=run.compile_seconds,
        profiled=bool(breakdown),
        source=breakdown_source(breakdown),
        verdict=run.verdict_text,
        log_dir=run.profile_log_dir,
        profile_source=run.profile_source,
        recompiled=run.recompiled,
    )


def breakdown_info(records: StudyRecords, numbers: Sequence[int] | None = None) -> BreakdownInfo:
    """Bars for the baseline and trials ``numbers`` (the Pareto trials when None)."""
    baseline = records.baseline
    bars = []
    if baseline.config is not None:
        bars.append(_bar(BASELINE_POINT, "baseline", baseline.step_ms, baseline))
    rows = records.pareto() if numbers is None else [records.trial(n) for n in numbers]
    for row in rows:
        bars.append(_bar(point_key(row.number), f"trial {row.number}", row.step_ms, row))
    components = [k for k in STEP_BREAKDOWN_COMPONENTS if any(k in b.components for b in bars)]
    if any(UNPROFILED in b.components for b in bars):
        components.append(UNPROFILED)
    notes = [
        note
        for note, present in (
            (SCALED_NOTE, any(b.source == "xprof" for b in bars)),
            (ABLATION_NOTE, any(b.source == "ablation" for b in bars)),
            (NOT_PROFILED_NOTE, any(not b.profiled for b in bars)),
        )
        if present
    ]
    return BreakdownInfo(bars=bars, components=components, note="; ".join(notes) or None)


def _bar_hover(bar: BreakdownBar) -> str:
    lines = [bar.label, bar.description]
    if bar.step_ms is not None:
        lines.append(f"timed step {bar.step_ms:.3f} ms")
    if bar.warmup_step_ms:
        lines.append(f"warm-up steady step {bar.warmup_step_ms:.3f} ms")
    if bar.verdict:
        lines.append(f"input: {bar.verdict}")
    if bar.source == "xprof":
        rerun = ", Pareto re-run" if bar.profile_source == "rerun" else ""
        lines.append(f"breakdown: XProf{rerun}, scaled to the timed step")
    elif bar.source == "ablation":
        lines.append("breakdown: input ablation")
    if bar.log_dir:
        lines.append(f"tensorboard --logdir {bar.log_dir}")
    if bar.recompiled:
        lines.append("XLA RECOMPILED during the timed windows")
    return "<br>".join(html.escape(line) for line in lines)


def breakdown_figure(info: BreakdownInfo, title: str = "Where a training step goes") -> Any:
    """Stacked step-time bars (ms) next to compile-time bars (s), saying where each breakdown
    came from (XProf scaled to the timed step, an input ablation, or none); each bar's hover
    shows its input verdict and its profile's log folder."""
    _plotly.require()
    go, make_subplots = _plotly.go, _plotly.make_subplots
    figure = make_subplots(
        rows=1,
        cols=2,
        column_widths=[0.62, 0.38],
        subplot_titles=("step time (ms per step)", "compile time (s, first step extra)"),
    )
    labels = [b.label for b in info.bars]
    hover = [_bar_hover(b) for b in info.bars]
    for component in info.components:
        name = COMPONENT_LABELS.get(component, component)
        figure.add_trace(
            go.Bar(
                x=labels,
                y=[b.components.get(component) for b in info.bars],
                name=name,
                marker={"color": _COMPONENT_COLORS.get(component, "#7f7f7f")},
                hovertext=hover,
                hovertemplate="%{hovertext}<br>%{y:.3f} ms<extra>" + name + "</extra>",
                uid=trace_uid(f"step-{component}"),
            ),
            row=1,
            col=1,
        )
    figure.add_trace(
        go.Bar(
            x=labels,
            y=[b.compile_seconds for b in info.bars],
            name="compile (first step minus a steady step)",
            marker={"color": "#bcbd22"},
            hovertext=hover,
            hovertemplate="%{hovertext}<br>%{y:.2f} s<extra>compile</extra>",
            uid="compile",
        ),
        row=1,
        col=2,
    )
    figure.update_yaxes(title_text="ms per step", row=1, col=1)
    figure.update_yaxes(title_text="seconds", row=1, col=2)
    subtitle = f"<br><sup>{html.escape(info.note)}</sup>" if info.note else ""
    figure.update_layout(
        title={"text": title + subtitle},
        barmode="stack",
        legend={"orientation": "h", "y": -0.2},
        margin={"t": 100},
    )
    if not info.bars:
        _empty_note(figure, "nothing measured yet")
    return figure
