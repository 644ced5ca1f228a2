"""Figure (d), parameter importance: Optuna's fANOVA importance (shares summing to 1) of each
objective, computed on an in-memory copy of the scored trials. Optuna is imported when called."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from autotune.store.records import StudyRecords
from autotune.views import _plotly
from autotune.views.report._style import _empty_note, trace_uid

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial


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
    scored trials (the peak memory too, in a study with the memory objective); only when at
    least 2 such trials have differing parameters."""
    import optuna
    from optuna.distributions import json_to_distribution

    memory = records.has_memory
    rows = [
        r
        for r in records.trials
        if r.scored
        and r.duplicate_of is None
        and r.params
        and (r.peak_memory_mib is not None or not memory)
    ]
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
    directions: list[Literal["maximize", "minimize"]] = ["maximize", "minimize"]
    directions += ["minimize"] * memory
    try:
        study = optuna.create_study(directions=directions)
    finally:
        optuna.logging.set_verbosity(verbosity)
    study.add_trials(
        optuna.trial.create_trial(
            params=r.params,
            distributions={k: json_to_distribution(v) for k, v in r.distributions.items()},
            values=[
                r.throughput.median if r.throughput else 0.0,
                r.fidelity or 0.0,
                *([r.peak_memory_mib or 0.0] if memory else []),
            ],
        )
        for r in rows
    )
    importances: dict[str, dict[str, float]] = {}
    problems = []
    for index, name in enumerate(records.metric_names[: 3 if memory else 2]):
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
        rows=1, cols=len(names), subplot_titles=[f"importance for {html.escape(n)}" for n in names]
    )
    for col, name in enumerate(names, start=1):
        values = info.importances.get(name, {})
        ordered = sorted(values.items(), key=lambda kv: kv[1])
        figure.add_trace(
            go.Bar(
                x=[v for _, v in ordered],
                y=[html.escape(k) for k, _ in ordered],
                orientation="h",
                name=html.escape(name),
                showlegend=False,
                uid=trace_uid(f"importance-{name}"),
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
