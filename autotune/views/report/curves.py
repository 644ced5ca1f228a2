"""Figure (b), validation curves: validation loss against training samples seen, over the
baseline's curve and its seed-noise band."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any, NamedTuple

from autotune.store.records import StudyRecords
from autotune.views import _plotly
from autotune.views.report._style import _COLORS, BASELINE_POINT, _empty_note, point_key, trace_uid
from autotune.views.terminal import loss_scale_text

_TRIAL_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22")


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
            f"trial {r.number}" + (f" ({scale})" if (scale := loss_scale_text(r.curve)) else ""),
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
