"""The static report of a study: one self-contained HTML file with its figures and recipes.

Every figure is two functions, as in Optuna's visualisation module: ``*_info(records)`` collects
plain data into a NamedTuple (no Plotly; unit-tested on its own) and ``*_figure(info)`` draws it.
The dashboard draws the same figures. Units: throughput in samples/s, step time in milliseconds,
compile time in seconds, fidelity distance in units of the baseline's seed noise floor (1.0 = as
different as a re-run with another seed). No TensorFlow here.

One figure per module: :mod:`~autotune.views.report.pareto`, :mod:`~autotune.views.report.memory` (a
study with the memory objective), :mod:`~autotune.views.report.curves`,
:mod:`~autotune.views.report.breakdown`, :mod:`~autotune.views.report.importance` and
:mod:`~autotune.views.report.history`; :mod:`~autotune.views.report.recipes` (the table and the
recommendation rule), :mod:`~autotune.views.report.header` and :mod:`~autotune.views.report.page`
(the HTML) build on them, and all share :mod:`~autotune.views.report._style`. This module only
re-exports.
"""

from __future__ import annotations

from autotune.views.report._style import BASELINE_POINT, parse_point_key, point_key, trace_uid
from autotune.views.report.breakdown import (
    ABLATION_NOTE,
    COMPONENT_LABELS,
    NOT_PROFILED_NOTE,
    SCALED_NOTE,
    UNPROFILED,
    BreakdownBar,
    BreakdownInfo,
    breakdown_figure,
    breakdown_info,
)
from autotune.views.report.curves import CurveLine, CurvesInfo, curves_figure, curves_info
from autotune.views.report.header import HeaderInfo, header_info
from autotune.views.report.history import HistoryInfo, history_figure, history_info, hypervolume_2d
from autotune.views.report.importance import ImportanceInfo, importance_figure, importance_info
from autotune.views.report.memory import (
    MEMORY_FRONT_TRACE,
    MemoryInfo,
    MemoryPoint,
    memory_figure,
    memory_info,
)
from autotune.views.report.page import (
    FIGURE_IDS,
    MEMORY_FIGURE_ID,
    PLOTLY_JS,
    render_report,
    write_report,
)
from autotune.views.report.pareto import (
    PARETO_TRACE,
    ParetoInfo,
    ParetoPoint,
    UnplottedTrial,
    pareto_figure,
    pareto_info,
)
from autotune.views.report.recipes import (
    RecipeRow,
    Recommendation,
    pareto_table_info,
    recipe_json,
    recommendation_info,
)

__all__ = [
    "ABLATION_NOTE",
    "BASELINE_POINT",
    "COMPONENT_LABELS",
    "FIGURE_IDS",
    "MEMORY_FIGURE_ID",
    "MEMORY_FRONT_TRACE",
    "NOT_PROFILED_NOTE",
    "PARETO_TRACE",
    "PLOTLY_JS",
    "SCALED_NOTE",
    "UNPROFILED",
    "BreakdownBar",
    "BreakdownInfo",
    "CurveLine",
    "CurvesInfo",
    "HeaderInfo",
    "HistoryInfo",
    "ImportanceInfo",
    "MemoryInfo",
    "MemoryPoint",
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
    "memory_figure",
    "memory_info",
    "pareto_figure",
    "pareto_info",
    "pareto_table_info",
    "parse_point_key",
    "point_key",
    "recipe_json",
    "recommendation_info",
    "render_report",
    "trace_uid",
    "write_report",
]
