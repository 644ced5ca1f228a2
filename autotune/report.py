"""The static report of a study: one self-contained HTML file with its figures and recipes.

Every figure is two functions, as in Optuna's visualisation module: ``*_info(records)`` collects
plain data into a NamedTuple (no Plotly; unit-tested on its own) and ``*_figure(info)`` draws it.
The dashboard draws the same figures. Units: throughput in samples/s, step time in milliseconds,
compile time in seconds, fidelity distance in units of the baseline's seed noise floor (1.0 = as
different as a re-run with another seed). No TensorFlow here.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from autotune import _plotly
from autotune.exceptions import ConfigError
from autotune.measure import format_throughput
from autotune.records import (
    STEP_BREAKDOWN_COMPONENTS,
    BaselineRecord,
    StudyRecords,
    TrialRow,
    breakdown_source,
)

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

#: customdata key of the baseline's point; trials are "trial:<number>".
BASELINE_POINT = "baseline"
#: uid (and name) of the Pareto trace, so a browser test can find it and count its points.
PARETO_TRACE = "pareto-front"
#: The report's figure divs, in page order.
FIGURE_IDS = (
    "pareto-figure",
    "curves-figure",
    "breakdown-figure",
    "importance-figure",
    "history-figure",
)
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

_COLORS = {
    "baseline": "#222222",
    "pareto": "#1f77b4",
    "dominated": "#9aa5b1",
    "infeasible": "#d62728",
    "pruned": "#ff7f0e",
    "tolerance": "#d62728",
    "chosen": "#2ca02c",
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
_TRIAL_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


def point_key(number: int | None) -> str:
    """The customdata of a figure point: "baseline" or "trial:<number>"."""
    return BASELINE_POINT if number is None else f"trial:{number}"


def parse_point_key(key: object) -> int | None:
    """The trial number of a point key; None for the baseline. ValueError for anything else."""
    if key == BASELINE_POINT:
        return None
    if isinstance(key, str) and key.startswith("trial:") and key[6:].isdigit():
        return int(key[6:])
    raise ValueError(f"a point key is 'baseline' or 'trial:<number>'. Received: {key!r}")


def _config_lines(records: StudyRecords, row: TrialRow | None) -> list[str]:
    config = records.baseline.config if row is None else row.config
    learning_rate = records.baseline.learning_rate if row is None else row.learning_rate
    lines = [f"{k} = {v}" for k, v in (config.to_dict().items() if config else ())]
    if learning_rate is not None:
        lines.append(f"learning_rate = {learning_rate:g}")
    return lines


def _hover(records: StudyRecords, row: TrialRow | None) -> str:
    """Everything about a point, one fact a line (joined with <br> for Plotly)."""
    if row is None:
        lines = [
            "<b>baseline</b> (float32, no XLA)",
            format_throughput(records.baseline.throughput),
        ]
        lines.append("fidelity 0 (the reference curve)")
    else:
        lines = [f"<b>trial {row.number}</b> ({row.state})", format_throughput(row.throughput)]
        if row.fidelity is not None:
            lines.append(f"fidelity {row.fidelity:.3f} (tolerance {records.tolerance:g})")
        if row.reason:
            lines.append(html.escape(_shorten(row.reason, 90)))
    return "<br>".join([*lines, *_config_lines(records, row)])


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------------------------------
# (a) Pareto front
# ------------------------------------------------------------------------------------------


class ParetoPoint(NamedTuple):
    """One point of the throughput/fidelity plane.

    Attributes:
        key: "baseline" or "trial:<number>" (the figure's customdata).
        number: the trial number; None for the baseline.
        throughput, low, high: median samples/s and its confidence interval.
        fidelity: fidelity distance; None for a pruned trial (no curve).
        hover: the full configuration and measurements, lines joined by <br>.
    """

    key: str
    number: int | None
    throughput: float
    low: float
    high: float
    fidelity: float | None
    hover: str


class UnplottedTrial(NamedTuple):
    """A finished trial without a point: failed, pruned before measuring, or a repeat."""

    number: int
    what: str
    reason: str


class ParetoInfo(NamedTuple):
    """The points of the Pareto figure, split by what they are.

    Attributes:
        tolerance: the study's fidelity tolerance (the vertical line).
        baseline: the baseline's point (fidelity 0); None before it is measured.
        pareto: feasible trials no other feasible trial dominates, fastest first.
        dominated: other feasible scored trials.
        infeasible: scored trials over the tolerance.
        pruned: pruned trials whose throughput was measured (no fidelity).
        failed: failed trials (no values), with their kind and message.
        not_plotted: pruned trials never measured, and repeats of an earlier configuration.
        running: trials running or waiting now.
    """

    tolerance: float
    baseline: ParetoPoint | None
    pareto: list[ParetoPoint]
    dominated: list[ParetoPoint]
    infeasible: list[ParetoPoint]
    pruned: list[ParetoPoint]
    failed: list[UnplottedTrial]
    not_plotted: list[UnplottedTrial]
    running: int


def _point(records: StudyRecords, row: TrialRow | None) -> ParetoPoint | None:
    throughput = records.baseline.throughput if row is None else row.throughput
    if throughput is None:
        return None
    return ParetoPoint(
        key=point_key(None if row is None else row.number),
        number=None if row is None else row.number,
        throughput=throughput.median,
        low=throughput.low,
        high=throughput.high,
        fidelity=0.0 if row is None else row.fidelity,
        hover=_hover(records, row),
    )


def pareto_info(records: StudyRecords) -> ParetoInfo:
    """Splits the study's trials into the Pareto figure's groups."""
    front = {r.number for r in records.pareto()}
    info = ParetoInfo(
        tolerance=records.tolerance,
        baseline=_point(records, None),
        pareto=[],
        dominated=[],
        infeasible=[],
        pruned=[],
        failed=[],
        not_plotted=[],
        running=0,
    )
    for row in records.trials:
        point = _point(records, row)
        if row.state in ("running", "waiting"):
            info = info._replace(running=info.running + 1)
        elif row.state == "failed":
            info.failed.append(UnplottedTrial(row.number, row.failure_kind or "failed", _why(row)))
        elif row.duplicate_of is not None:
            info.not_plotted.append(
                UnplottedTrial(row.number, f"repeat of trial {row.duplicate_of}", _why(row))
            )
        elif point is None:
            info.not_plotted.append(UnplottedTrial(row.number, row.state, _why(row)))
        elif row.state == "pruned" or point.fidelity is None:
            info.pruned.append(point)
        elif row.number in front:
            info.pareto.append(point)
        elif row.feasible:
            info.dominated.append(point)
        else:
            info.infeasible.append(point)
    info.pareto.sort(key=lambda p: (-p.throughput, p.number or 0))
    return info


def _why(row: TrialRow) -> str:
    return row.reason or (row.config.describe() if row.config else "")


def _error_y(points: Sequence[ParetoPoint]) -> dict[str, Any]:
    return {
        "type": "data",
        "symmetric": False,
        "array": [p.high - p.throughput for p in points],
        "arrayminus": [p.throughput - p.low for p in points],
        "thickness": 1,
    }


def trace_uid(text: str) -> str:
    """A Plotly trace uid from ``text``: plotly.js builds CSS selectors from uids when it
    replaces a trace, so anything but letters, digits, '-' and '_' becomes '-'."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)


def pareto_figure(info: ParetoInfo, chosen_tolerance: float | None = None) -> Any:
    """Throughput (with CI error bars) against fidelity distance; the baseline, the tolerance
    line, the Pareto front (trace uid :data:`PARETO_TRACE`), dominated, infeasible and pruned
    trials drawn distinctly, failed ones listed under the plot. ``chosen_tolerance`` (the
    dashboard's slider) adds a second, dotted line."""
    _plotly.require()
    go, make_subplots = _plotly.go, _plotly.make_subplots
    side = bool(info.pruned)
    if side:
        figure = make_subplots(
            rows=1,
            cols=2,
            shared_yaxes=True,
            column_widths=[0.84, 0.16],
            horizontal_spacing=0.02,
        )
    else:
        figure = go.Figure()
    main: dict[str, int] = {"row": 1, "col": 1} if side else {}

    def add(points: Sequence[ParetoPoint], name: str, uid: str, style: dict[str, Any]) -> None:
        if not points and uid != PARETO_TRACE:
            return
        pruned = uid == "pruned"
        trace = go.Scatter(
            x=[p.number if pruned else p.fidelity for p in points],
            y=[p.throughput for p in points],
            error_y=_error_y(points),
            name=name,
            uid=uid,
            customdata=[p.key for p in points],
            hovertext=[p.hover for p in points],
            hovertemplate="%{hovertext}<extra></extra>",
            **style,
        )
        if side:
            figure.add_trace(trace, row=1, col=2 if pruned else 1)
        else:
            figure.add_trace(trace)

    add(
        info.dominated,
        "feasible (dominated)",
        "dominated",
        {"mode": "markers", "marker": {"color": _COLORS["dominated"], "size": 9}},
    )
    add(
        info.infeasible,
        "infeasible (fidelity over tolerance)",
        "infeasible",
        {"mode": "markers", "marker": {"color": _COLORS["infeasible"], "size": 9, "symbol": "x"}},
    )
    add(
        sorted(info.pareto, key=lambda p: p.fidelity or 0.0),
        "Pareto front",
        PARETO_TRACE,
        {
            "mode": "lines+markers",
            "line": {"color": _COLORS["pareto"], "shape": "hv", "width": 1},
            "marker": {"color": _COLORS["pareto"], "size": 13, "line": {"width": 1}},
        },
    )
    add(
        [info.baseline] if info.baseline else [],
        "baseline (float32, no XLA)",
        "baseline",
        {"mode": "markers", "marker": {"color": _COLORS["baseline"], "size": 16, "symbol": "star"}},
    )
    add(
        info.pruned,
        "pruned (slower than the baseline; no curve)",
        "pruned",
        {
            "mode": "markers",
            "marker": {"color": _COLORS["pruned"], "size": 9, "symbol": "triangle-down"},
        },
    )
    fidelities = [
        p.fidelity
        for p in [*info.pareto, *info.dominated, *info.infeasible]
        if p.fidelity is not None
    ]
    shown = [info.tolerance * 1.5, *(f * 1.08 for f in fidelities)]
    if chosen_tolerance is not None:
        shown.append(chosen_tolerance * 1.08)
    right = max(shown)
    figure.add_vrect(
        x0=info.tolerance,
        x1=right,
        fillcolor=_COLORS["infeasible"],
        opacity=0.05,
        line_width=0,
        layer="below",
        **main,
    )
    figure.add_vline(
        x=info.tolerance,
        line={"color": _COLORS["tolerance"], "dash": "dash"},
        annotation_text=f"tolerance {info.tolerance:g}",
        annotation_position="top right",
        **main,
    )
    if chosen_tolerance is not None:
        figure.add_vline(
            x=chosen_tolerance,
            line={"color": _COLORS["chosen"], "dash": "dot"},
            annotation_text=f"chosen {chosen_tolerance:.2f}",
            annotation_position="bottom right",
            **main,
        )
    figure.update_xaxes(
        title_text="fidelity distance (1.0 = as different as a seed re-run)",
        range=[-0.05 * right, right],
        zeroline=True,
        **main,
    )
    figure.update_yaxes(title_text="throughput (samples/s)", rangemode="tozero", **main)
    if side:
        numbers = [p.number for p in info.pruned if p.number is not None]
        figure.update_xaxes(
            title_text="pruned: trial #",
            tickmode="array",
            tickvals=numbers,
            range=[min(numbers) - 1, max(numbers) + 1],
            row=1,
            col=2,
        )
    notes = _unplotted_lines(info)
    subtitle = f"{info.running} trial(s) running" if info.running else ""
    figure.update_layout(
        title={
            "text": "Pareto front: throughput against fidelity"
            + (f"<br><sup>{subtitle}</sup>" if subtitle else "")
        },
        hovermode="closest",
        legend={"orientation": "h", "y": -0.18},
        margin={"b": 110 + 16 * len(notes)},
    )
    if notes:
        figure.add_annotation(
            text="<br>".join(notes),
            xref="paper",
            yref="paper",
            x=0,
            y=-0.3,
            yanchor="top",
            xanchor="left",
            align="left",
            showarrow=False,
            font={"size": 11},
        )
    if info.baseline is None and not fidelities and not info.pruned:
        _empty_note(figure, "nothing measured yet: the baseline has not finished")
    return figure


def _unplotted_lines(info: ParetoInfo, limit: int = 8) -> list[str]:
    lines = [
        f"failed trial {t.number} ({t.what}): {html.escape(_shorten(t.reason, 100))}"
        for t in info.failed
    ]
    lines += [
        f"trial {t.number} not plotted ({t.what}): {html.escape(_shorten(t.reason, 90))}"
        for t in info.not_plotted
    ]
    if len(lines) > limit:
        lines = [*lines[: limit - 1], f"... and {len(lines) - limit + 1} more"]
    return lines


def _empty_note(figure: Any, text: str) -> None:
    figure.add_annotation(
        text=text, xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False, font={"size": 14}
    )


# ------------------------------------------------------------------------------------------
# (b) validation curves
# ------------------------------------------------------------------------------------------


class CurveLine(NamedTuple):
    """One validation curve: loss after each number of training samples seen."""

    key: str
    name: str
    samples: list[int]
    val_loss: list[float]


class CurvesInfo(NamedTuple):
    """Trials' validation curves over the baseline's and its seed-noise band.

    Attributes:
        baseline: the baseline's seed-0 curve (the reference); None before it ran.
        band_samples, band_low, band_high: min and max validation loss over the baseline
            seeds at every checkpoint they share.
        seeds: number of seed curves in the band.
        trials: the trials' curves.
        note: what is missing, for people (None when nothing is).
    """

    baseline: CurveLine | None
    band_samples: list[int]
    band_low: list[float]
    band_high: list[float]
    seeds: int
    trials: list[CurveLine]
    note: str | None


def curves_info(records: StudyRecords, numbers: Sequence[int] | None = None) -> CurvesInfo:
    """The curves of trials ``numbers`` (the Pareto trials when None), the baseline's and its
    seed band."""
    baseline = records.baseline
    base_line = None
    if baseline.curve:
        base_line = CurveLine(
            BASELINE_POINT,
            "baseline (seed 0)",
            [p.samples for p in baseline.curve],
            [p.val_loss for p in baseline.curve],
        )
    seed_losses = [
        {p.samples: p.val_loss for p in curve} for curve in baseline.seed_curves.values() if curve
    ]
    shared = sorted(set.intersection(*(set(c) for c in seed_losses))) if seed_losses else []
    rows = records.pareto() if numbers is None else [records.trial(n) for n in numbers]
    trials = [
        CurveLine(
            point_key(r.number),
            f"trial {r.number}",
            [p.samples for p in r.curve],
            [p.val_loss for p in r.curve],
        )
        for r in rows
        if r.curve
    ]
    notes = []
    if base_line is None:
        notes.append("the baseline has no curve yet")
    if numbers is None and not rows:
        notes.append("no Pareto trial yet")
    notes += [
        f"trial {r.number} has no validation curve ({r.state}{': ' + r.reason if r.reason else ''})"
        for r in rows
        if not r.curve
    ]
    return CurvesInfo(
        baseline=base_line,
        band_samples=shared if len(seed_losses) >= 2 else [],
        band_low=[min(c[s] for c in seed_losses) for s in shared] if len(seed_losses) >= 2 else [],
        band_high=[max(c[s] for c in seed_losses) for s in shared] if len(seed_losses) >= 2 else [],
        seeds=len(seed_losses),
        trials=trials,
        note="; ".join(notes) or None,
    )


def curves_figure(info: CurvesInfo, title: str = "Validation curves of the Pareto trials") -> Any:
    """Validation loss (log scale) against samples seen: the seed band, the baseline, trials."""
    _plotly.require()
    go = _plotly.go
    figure = go.Figure()
    if info.band_samples:
        figure.add_trace(
            go.Scatter(
                x=info.band_samples,
                y=info.band_high,
                mode="lines",
                line={"width": 0},
                showlegend=False,
                hoverinfo="skip",
                uid="seed-band-high",
            )
        )
        figure.add_trace(
            go.Scatter(
                x=info.band_samples,
                y=info.band_low,
                mode="lines",
                line={"width": 0},
                fill="tonexty",
                fillcolor="rgba(34,34,34,0.15)",
                name=f"baseline seed noise (min-max of {info.seeds} seeds)",
                hoverinfo="skip",
                uid="seed-band",
            )
        )
    if info.baseline is not None:
        figure.add_trace(
            go.Scatter(
                x=info.baseline.samples,
                y=info.baseline.val_loss,
                mode="lines+markers",
                line={"color": _COLORS["baseline"], "dash": "dash"},
                name=info.baseline.name,
                uid=info.baseline.key,
            )
        )
    for index, line in enumerate(info.trials):
        figure.add_trace(
            go.Scatter(
                x=line.samples,
                y=line.val_loss,
                mode="lines+markers",
                line={"color": _TRIAL_COLORS[index % len(_TRIAL_COLORS)]},
                name=line.name,
                uid=trace_uid(line.key),
            )
        )
    figure.update_xaxes(title_text="training samples seen")
    figure.update_yaxes(title_text="validation loss (log scale)", type="log")
    subtitle = f"<br><sup>{html.escape(info.note)}</sup>" if info.note else ""
    figure.update_layout(title={"text": title + subtitle}, hovermode="x unified")
    if info.baseline is None and not info.trials:
        _empty_note(figure, info.note or "no curves")
    return figure


# ------------------------------------------------------------------------------------------
# (c) step-time breakdown
# ------------------------------------------------------------------------------------------


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


# ------------------------------------------------------------------------------------------
# (d) parameter importance and study history
# ------------------------------------------------------------------------------------------


class ImportanceInfo(NamedTuple):
    """fANOVA parameter importance for each objective.

    Attributes:
        importances: objective name -> parameter -> importance (they sum to 1 per objective).
        trials: complete, scored trials used (repeats left out).
        note: why importances are missing, or None.
    """

    importances: dict[str, dict[str, float]]
    trials: int
    note: str | None


def _objective_value(index: int) -> Callable[[FrozenTrial], float]:
    def value(trial: FrozenTrial) -> float:
        return float(trial.values[index])

    return value


def importance_info(records: StudyRecords) -> ImportanceInfo:
    """Optuna's parameter importance (fANOVA, seed 0) of each objective over the complete,
    scored trials; only when at least 2 such trials have differing parameters."""
    import optuna
    from optuna.distributions import json_to_distribution

    rows = [r for r in records.trials if r.scored and r.duplicate_of is None and r.params]
    varying = {k for r in rows for k in r.params if len({repr(o.params.get(k)) for o in rows}) > 1}
    if len(rows) < 2 or not varying:
        return ImportanceInfo(
            {},
            len(rows),
            "parameter importance needs at least 2 complete trials with differing parameters "
            f"({len(rows)} so far)",
        )
    # An in-memory copy of the scored trials, made without Optuna's "new study" log line.
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(max(verbosity, optuna.logging.WARNING))
    try:
        study = optuna.create_study(directions=["maximize", "minimize"])
    finally:
        optuna.logging.set_verbosity(verbosity)
    study.add_trials(
        optuna.trial.create_trial(
            params=r.params,
            distributions={k: json_to_distribution(v) for k, v in r.distributions.items()},
            values=[r.throughput.median if r.throughput else 0.0, r.fidelity or 0.0],
        )
        for r in rows
    )
    importances: dict[str, dict[str, float]] = {}
    problems = []
    for index, name in enumerate(records.metric_names[:2]):
        try:
            values = optuna.importance.get_param_importances(
                study,
                evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0),
                target=_objective_value(index),
            )
        except (ValueError, RuntimeError, ZeroDivisionError) as error:
            problems.append(f"{name}: cannot be computed ({error})")
            continue
        if values and all(math.isfinite(v) for v in values.values()):
            importances[name] = {k: float(v) for k, v in values.items()}
        else:
            problems.append(f"{name}: no variation to explain")
    note = "; ".join(problems) if problems else None
    return ImportanceInfo(importances, len(rows), note)


def importance_figure(info: ImportanceInfo) -> Any:
    """One horizontal bar chart of parameter importance per objective."""
    _plotly.require()
    go, make_subplots = _plotly.go, _plotly.make_subplots
    names = list(info.importances) or ["throughput", "fidelity"]
    figure = make_subplots(
        rows=1, cols=len(names), subplot_titles=[f"importance for {n}" for n in names]
    )
    for col, name in enumerate(names, start=1):
        values = info.importances.get(name, {})
        ordered = sorted(values.items(), key=lambda kv: kv[1])
        figure.add_trace(
            go.Bar(
                x=[v for _, v in ordered],
                y=[k for k, _ in ordered],
                orientation="h",
                name=name,
                showlegend=False,
                uid=f"importance-{name}",
                hovertemplate="%{y}: %{x:.2f}<extra></extra>",
            ),
            row=1,
            col=col,
        )
        figure.update_xaxes(title_text="fANOVA importance (sums to 1)", row=1, col=col)
        figure.update_yaxes(automargin=True, row=1, col=col)
    subtitle = f"<br><sup>{html.escape(info.note)}</sup>" if info.note else ""
    figure.update_layout(
        title={"text": f"Parameter importance ({info.trials} complete trials)" + subtitle}
    )
    if not info.importances:
        _empty_note(figure, info.note or "no importances")
    return figure


class HistoryInfo(NamedTuple):
    """How the study improved, trial after trial.

    Attributes:
        numbers: finished trials' numbers, in order.
        hypervolume: after each trial, the 2-D hypervolume (samples/s x fidelity units) that
            the feasible points, the baseline included, dominate above the reference point.
        best_throughput: after each trial, the fastest feasible throughput so far (samples/s),
            the baseline's included; None while nothing is measured.
        reference: the reference point (throughput 0, fidelity = tolerance).
        baseline_hypervolume: the baseline's own hypervolume (the starting level).
    """

    numbers: list[int]
    hypervolume: list[float]
    best_throughput: list[float | None]
    reference: tuple[float, float]
    baseline_hypervolume: float


def hypervolume_2d(points: Iterable[tuple[float, float]], reference: tuple[float, float]) -> float:
    """Area dominated by (throughput, fidelity) ``points`` (throughput maximised, fidelity
    minimised) within ``reference`` = (lowest throughput, highest fidelity)."""
    low_speed, high_fidelity = reference
    inside = sorted(
        (f, s) for s, f in points if s > low_speed and f <= high_fidelity and math.isfinite(s)
    )
    area, covered = 0.0, low_speed
    for fidelity, speed in inside:
        if speed > covered:
            area += (speed - covered) * (high_fidelity - fidelity)
            covered = speed
    return area


def history_info(records: StudyRecords) -> HistoryInfo:
    """Hypervolume and best feasible throughput after each finished trial; the baseline counts
    as the point (its throughput, fidelity 0)."""
    reference = (0.0, records.tolerance)
    points: list[tuple[float, float]] = []
    if records.baseline.throughput is not None:
        points.append((records.baseline.throughput.median, 0.0))
    start = hypervolume_2d(points, reference)
    numbers: list[int] = []
    volumes: list[float] = []
    best: list[float | None] = []
    for row in sorted(records.trials, key=lambda r: r.number):
        if row.state not in ("complete", "pruned", "failed"):
            continue
        if row.scored and row.feasible and row.throughput and row.fidelity is not None:
            points.append((row.throughput.median, row.fidelity))
        numbers.append(row.number)
        volumes.append(hypervolume_2d(points, reference))
        best.append(max((s for s, _ in points), default=None))
    return HistoryInfo(numbers, volumes, best, reference, start)


def history_figure(info: HistoryInfo) -> Any:
    """Hypervolume (left axis) and the fastest feasible throughput (right axis) by trial."""
    _plotly.require()
    go, make_subplots = _plotly.go, _plotly.make_subplots
    figure = make_subplots(specs=[[{"secondary_y": True}]])
    figure.add_trace(
        go.Scatter(
            x=info.numbers,
            y=info.hypervolume,
            mode="lines+markers",
            name="hypervolume",
            uid="hypervolume",
            line={"shape": "hv"},
        ),
        secondary_y=False,
    )
    figure.add_trace(
        go.Scatter(
            x=info.numbers,
            y=info.best_throughput,
            mode="lines",
            name="fastest feasible (samples/s)",
            uid="best-throughput",
            line={"shape": "hv", "dash": "dot"},
        ),
        secondary_y=True,
    )
    figure.update_xaxes(title_text="trial #")
    figure.update_yaxes(title_text="hypervolume (samples/s x fidelity)", secondary_y=False)
    figure.update_yaxes(title_text="samples/s", rangemode="tozero", secondary_y=True)
    speed, fidelity = info.reference
    figure.update_layout(
        title={
            "text": "Study history"
            f"<br><sup>reference point (throughput {speed:g}, fidelity {fidelity:g}); the "
            f"baseline alone gives {info.baseline_hypervolume:,.0f}</sup>"
        },
        legend={"orientation": "h", "y": -0.2},
    )
    if not info.numbers:
        _empty_note(figure, "no finished trial yet")
    return figure


# ------------------------------------------------------------------------------------------
# (e) Pareto table and page header
# ------------------------------------------------------------------------------------------


class RecipeRow(NamedTuple):
    """One Pareto trial in the report's table.

    Attributes:
        number: trial number.
        description: the configuration in one line.
        throughput: median samples/s with its CI, as text.
        speedup: median throughput / the baseline's (None before the baseline is measured).
        fidelity: fidelity distance.
        settings_json: the configuration and learning rate, as indented JSON.
        recipe_json: the recipe ``autotune export`` would write for this trial (config,
            learning rate, provenance), as indented JSON.
    """

    number: int
    description: str
    throughput: str
    speedup: float | None
    fidelity: float | None
    settings_json: str
    recipe_json: str


def recipe_json(records: StudyRecords, row: TrialRow | None) -> str:
    """The recipe of ``row`` (the baseline's when None) as JSON for ``autotune.apply``."""
    return json.dumps(records.recipe(row).to_dict(), indent=2, sort_keys=True)


def pareto_table_info(records: StudyRecords) -> list[RecipeRow]:
    """The Pareto trials, fastest first, with their recipes."""
    rows = []
    for row in records.pareto():
        recipe = records.recipe(row)
        rows.append(
            RecipeRow(
                number=row.number,
                description=row.config.describe() if row.config else "-",
                throughput=format_throughput(row.throughput),
                speedup=recipe.speedup,
                fidelity=row.fidelity,
                settings_json=json.dumps(
                    {"config": recipe.config.to_dict(), "learning_rate": recipe.learning_rate},
                    indent=2,
                ),
                recipe_json=json.dumps(recipe.to_dict(), indent=2, sort_keys=True),
            )
        )
    return rows


class Recommendation(NamedTuple):
    """What to use at a fidelity tolerance.

    Attributes:
        tolerance: the largest fidelity distance accepted (noise-floor units).
        number: the recommended trial; None when the baseline stays the recommendation.
        text: one sentence for people.
    """

    tolerance: float
    number: int | None
    text: str


def recommendation_info(records: StudyRecords, tolerance: float) -> Recommendation:
    """The fastest complete trial with fidelity <= ``tolerance`` that is faster than the
    baseline (``Study.best``'s rule), or the baseline, saying so."""
    baseline = records.baseline
    if baseline.throughput is None or baseline.config is None:
        return Recommendation(tolerance, None, "The baseline has not been measured yet.")
    best = records.fastest_within(tolerance)
    if best is None or best.throughput is None or best.config is None:
        within = len(records.within(tolerance))
        return Recommendation(
            tolerance,
            None,
            f"Keep the baseline ({baseline.config.describe()}, "
            f"{format_throughput(baseline.throughput)}): no trial is faster than the baseline "
            f"with fidelity <= {tolerance:.2f} ({within} trial(s) within it).",
        )
    speedup = best.throughput.median / baseline.throughput.median
    return Recommendation(
        tolerance,
        best.number,
        f"Trial {best.number}: {best.config.describe()}: {format_throughput(best.throughput)}, "
        f"{speedup:.2f}x the baseline, fidelity {best.fidelity:.2f} <= {tolerance:.2f}.",
    )


class HeaderInfo(NamedTuple):
    """The page's title and its facts (label, value) in order."""

    title: str
    facts: list[tuple[str, str]]


def _hardware_text(hardware: dict[str, Any]) -> str:
    if not hardware:
        return "unknown"
    parts = [str(hardware.get("cpu", "?"))]
    if hardware.get("logical_cores"):
        parts.append(f"{hardware['logical_cores']} logical cores")
    if hardware.get("memory_bytes"):
        parts.append(f"{hardware['memory_bytes'] / 2**30:.0f} GiB memory")
    gpus = hardware.get("gpus") or []
    parts.append("GPUs: " + ", ".join(gpus) if gpus else "no GPU")
    return "; ".join(parts)


def header_info(records: StudyRecords) -> HeaderInfo:
    """Study, experiment, hardware, versions, tolerance, baseline throughput and trial counts."""
    baseline = records.baseline
    floor = baseline.noise_floor
    versions = ", ".join(f"{k} {v}" for k, v in sorted(records.versions.items()) if v)
    counts = records.counts()
    recommendation = recommendation_info(records, records.tolerance).text
    facts = [
        ("study", records.study_name),
        ("storage", records.storage),
        ("experiment", f"{records.experiment} ({records.experiment_reference})"),
        ("search space", str((records.info.get("space") or {}).get("name", "?"))),
        ("hardware", _hardware_text(records.hardware)),
        ("versions", versions or "unknown"),
        ("fidelity tolerance", f"{records.tolerance:g} (1.0 = as different as a seed re-run)"),
        (
            "baseline",
            (baseline.config.describe() if baseline.config else "not run yet")
            + f": {format_throughput(baseline.throughput)}",
        ),
        (
            "seed noise floor",
            f"{floor.value:.4f} mean |log loss ratio| (seeds {sorted(baseline.seed_curves)})"
            if floor
            else "not measured yet",
        ),
        (
            "trials",
            ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "none yet",
        ),
        ("recommendation", recommendation),
        ("study created", str(records.info.get("created", "?"))),
        ("report made", records.read_at),
    ]
    if records.mismatches_allowed:
        facts.append(
            ("warning", f"resumed {len(records.mismatches_allowed)} time(s) with --allow-mismatch")
        )
    return HeaderInfo(f"autotune report: {records.study_name}", facts)


# ------------------------------------------------------------------------------------------
# The page
# ------------------------------------------------------------------------------------------

_CSS = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 0.3em 0.6em;
         border-bottom: 1px solid #eee; }
table.facts th { width: 12em; color: #555; font-weight: normal; }
pre { background: #f6f8fa; padding: 0.6em; overflow-x: auto; font-size: 0.85em; margin: 0; }
.note { color: #666; font-size: 0.9em; }
.figure { margin: 1em 0 2em; }
"""


def _figure_html(figure: Any, div_id: str, first: bool) -> str:
    return str(
        _plotly.pio.to_html(
            figure,
            include_plotlyjs=first,
            full_html=False,
            div_id=div_id,
            default_height="520px",
            config={"displaylogo": False, "responsive": True},
        )
    )


def _table_html(rows: list[RecipeRow]) -> str:
    if not rows:
        return (
            '<p class="note">No Pareto trial yet: no complete trial is within the tolerance. '
            "The baseline configuration stays the recommendation.</p>"
        )
    body = []
    for row in rows:
        speedup = f"{row.speedup:.2f}x" if row.speedup is not None else "-"
        if row.speedup is not None and row.speedup < 1:
            speedup += " (slower than the baseline)"
        fidelity = f"{row.fidelity:.3f}" if row.fidelity is not None else "-"
        body.append(
            f'<tr id="pareto-trial-{row.number}"><td>{row.number}</td>'
            f"<td>{html.escape(row.description)}</td><td>{html.escape(row.throughput)}</td>"
            f"<td>{speedup}</td><td>{fidelity}</td>"
            f"<td><pre>{html.escape(row.settings_json)}</pre><details><summary>recipe.json "
            f"(with provenance)</summary><pre>{html.escape(row.recipe_json)}</pre></details>"
            "</td></tr>"
        )
    return (
        '<table id="pareto-table"><thead><tr><th>#</th><th>configuration</th>'
        "<th>throughput</th><th>speed-up</th><th>fidelity</th><th>recipe</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
        '<p class="note">Save a recipe as recipe.json and reproduce it with '
        "<code>autotune.apply(autotune.Recipe.load('recipe.json'))</code>.</p>"
    )


def render_report(records: StudyRecords) -> str:
    """The report as one HTML page that works offline (plotly.js is embedded once)."""
    _plotly.require()
    header = header_info(records)
    facts = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in header.facts
    )
    figures = [
        ("Pareto front", pareto_figure(pareto_info(records))),
        ("Validation curves", curves_figure(curves_info(records))),
        ("Step time", breakdown_figure(breakdown_info(records))),
        ("Parameter importance", importance_figure(importance_info(records))),
        ("Study history", history_figure(history_info(records))),
    ]
    sections = []
    for index, ((heading, figure), div_id) in enumerate(zip(figures, FIGURE_IDS, strict=True)):
        sections.append(
            f'<h2>{heading}</h2><div class="figure">{_figure_html(figure, div_id, index == 0)}'
            "</div>"
        )
        if index == 0:
            table = _table_html(pareto_table_info(records))
            sections.append(f"<h2>Pareto trials and their recipes</h2>{table}")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(header.title)}</title><style>{_CSS}</style></head><body>"
        f'<h1>{html.escape(header.title)}</h1><table class="facts">{facts}</table>'
        + "".join(sections)
        + "</body></html>\n"
    )


def write_report(records: StudyRecords, path: str | Path) -> Path:
    """Writes :func:`render_report` to ``path`` and returns it; ConfigError naming -o when the
    file cannot be written."""
    path = Path(path)
    text = render_report(records)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise ConfigError(
            f"-o/--output: report file {str(path)!r} cannot be written: {error.strerror}"
        ) from error
    return path


__all__ = [
    "ABLATION_NOTE",
    "BASELINE_POINT",
    "COMPONENT_LABELS",
    "FIGURE_IDS",
    "NOT_PROFILED_NOTE",
    "PARETO_TRACE",
    "SCALED_NOTE",
    "UNPROFILED",
    "BreakdownBar",
    "BreakdownInfo",
    "CurveLine",
    "CurvesInfo",
    "HeaderInfo",
    "HistoryInfo",
    "ImportanceInfo",
    "ParetoInfo",
    "ParetoPoint",
    "RecipeRow",
    "Recommendation",
    "UnplottedTrial",
    "breakdown_figure",
    "breakdown_info",
    "curves_figure",
    "curves_info",
    "header_info",
    "history_figure",
    "history_info",
    "hypervolume_2d",
    "importance_figure",
    "importance_info",
    "pareto_figure",
    "pareto_info",
    "pareto_table_info",
    "parse_point_key",
    "point_key",
    "recipe_json",
    "recommendation_info",
    "render_report",
    "write_report",
]
