"""The memory view of a three-objective study: throughput (samples/s) against peak memory (MiB),
the second projection of its Pareto front beside throughput against fidelity
(:mod:`autotune.views.report.pareto`). Only studies with ``memory`` among their objectives have
it."""

from __future__ import annotations

from typing import Any, NamedTuple

from autotune.store.records import StudyRecords, TrialRow
from autotune.views import _plotly
from autotune.views.report._style import _COLORS, _empty_note, _hover, point_key

#: uid (and name) of the Pareto trace of the memory view.
MEMORY_FRONT_TRACE = "memory-front"


class MemoryPoint(NamedTuple):
    """One point of the throughput/memory plane.

    Attributes:
        key: "baseline" or "trial:<number>" (the figure's customdata).
        throughput: median samples/s.
        memory_mib: peak memory (MiB).
        hover: the configuration and measurements, lines joined by <br>.
    """

    key: str
    throughput: float
    memory_mib: float
    hover: str


class MemoryInfo(NamedTuple):
    """The points of the memory view.

    Attributes:
        baseline: the baseline's point; None before it is measured.
        pareto: the trials of the three-objective Pareto front, least memory first.
        feasible: the other scored trials within the tolerance.
        infeasible: scored trials over the tolerance.
    """

    baseline: MemoryPoint | None
    pareto: list[MemoryPoint]
    feasible: list[MemoryPoint]
    infeasible: list[MemoryPoint]


def _point(records: StudyRecords, row: TrialRow | None) -> MemoryPoint | None:
    source = records.baseline if row is None else row
    memory = source.peak_memory_mib
    if source.throughput is None or memory is None:
        return None
    return MemoryPoint(
        point_key(None if row is None else row.number),
        source.throughput.median,
        memory,
        _hover(records, row),
    )


def memory_info(records: StudyRecords) -> MemoryInfo:
    """Splits the scored trials with a measured peak memory into the memory view's groups."""
    front = {r.number for r in records.pareto()}
    info = MemoryInfo(_point(records, None), [], [], [])
    for row in records.trials:
        point = _point(records, row)
        if point is None or not row.scored or row.duplicate_of is not None:
            continue
        if row.number in front:
            info.pareto.append(point)
        elif row.feasible:
            info.feasible.append(point)
        else:
            info.infeasible.append(point)
    info.pareto.sort(key=lambda p: (p.memory_mib, -p.throughput))
    return info


def memory_figure(info: MemoryInfo) -> Any:
    """Throughput against peak memory: the baseline, the Pareto front of all three objectives
    (trace uid :data:`MEMORY_FRONT_TRACE`; a trial on it may look dominated here, beaten on
    speed and memory, when it is more faithful), and the other trials."""
    _plotly.require()
    go = _plotly.go
    figure = go.Figure()

    def add(points: list[MemoryPoint], name: str, uid: str, style: dict[str, Any]) -> None:
        if not points and uid != MEMORY_FRONT_TRACE:
            return
        figure.add_trace(
            go.Scatter(
                x=[p.memory_mib for p in points],
                y=[p.throughput for p in points],
                name=name,
                uid=uid,
                customdata=[p.key for p in points],
                hovertext=[p.hover for p in points],
                hovertemplate="%{hovertext}<extra></extra>",
                **style,
            )
        )

    add(
        info.feasible,
        "feasible (dominated)",
        "memory-dominated",
        {"mode": "markers", "marker": {"color": _COLORS["dominated"], "size": 9}},
    )
    add(
        info.infeasible,
        "infeasible (fidelity over tolerance)",
        "memory-infeasible",
        {"mode": "markers", "marker": {"color": _COLORS["infeasible"], "size": 9, "symbol": "x"}},
    )
    add(
        info.pareto,
        "Pareto front (throughput, fidelity, memory)",
        MEMORY_FRONT_TRACE,
        {
            "mode": "markers",
            "marker": {"color": _COLORS["pareto"], "size": 13, "line": {"width": 1}},
        },
    )
    add(
        [info.baseline] if info.baseline else [],
        "baseline (float32, no XLA)",
        "memory-baseline",
        {"mode": "markers", "marker": {"color": _COLORS["baseline"], "size": 16, "symbol": "star"}},
    )
    figure.update_xaxes(title_text="peak memory (MiB; the device's on a GPU)", rangemode="tozero")
    figure.update_yaxes(title_text="throughput (samples/s)", rangemode="tozero")
    figure.update_layout(
        title={"text": "Throughput against peak memory"},
        hovermode="closest",
        legend={"orientation": "h", "y": -0.18},
    )
    if info.baseline is None and not (info.pareto or info.feasible or info.infeasible):
        _empty_note(figure, "no peak memory measured yet")
    return figure


__all__ = ["MEMORY_FRONT_TRACE", "MemoryInfo", "MemoryPoint", "memory_figure", "memory_info"]
