"""Figure (a), the Pareto front: throughput (samples/s, with its confidence interval) against
fidelity distance (noise-floor units; 1.0 = worse by as much as a seed re-run)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any, NamedTuple

from autotune.store.predicted import predicted_from, sources_text
from autotune.store.records import StudyRecords, TrialRow
from autotune.views import _plotly
from autotune.views.report._style import _COLORS, _empty_note, _hover, _shorten, point_key

#: uid (and name) of the Pareto trace, so a browser test can find it and count its points.
PARETO_TRACE = "pareto-front"


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
            info.not_plotted.append(UnplottedTrial(row.number, _unplotted(row), _why(row)))
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


def _unplotted(row: TrialRow) -> str:
    """'pruned', or 'predicted infeasible from trials 2, 5' for a trial skipped so."""
    sources = predicted_from(row.user_attrs)
    return row.state if sources is None else f"predicted infeasible from {sources_text(sources)}"


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
        title_text="fidelity distance (1.0 = worse by as much as a seed re-run)",
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
        f"failed trial {t.number} ({html.escape(t.what)}): {html.escape(_shorten(t.reason, 100))}"
        for t in info.failed
    ]
    lines += [
        f"trial {t.number} not plotted ({html.escape(t.what)}): "
        f"{html.escape(_shorten(t.reason, 90))}"
        for t in info.not_plotted
    ]
    if len(lines) > limit:
        lines = [*lines[: limit - 1], f"... and {len(lines) - limit + 1} more"]
    return lines
