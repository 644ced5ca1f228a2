"""Figure (e), the study's history: the 2-D hypervolume (samples/s x fidelity units) and the
fastest feasible throughput (samples/s) after each finished trial."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

from autotune.store.records import StudyRecords
from autotune.views import _plotly
from autotune.views.report._style import _empty_note


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
