"""The report's page: one HTML file with the header, the five figures (six with the memory
objective) and the Pareto trials' recipes. By default it is self-contained (plotly.js, about
4.8 MB, embedded once) and works offline; with ``plotly_js="cdn"`` a script tag loads plotly.js
from Plotly's CDN instead, for a file of tens of kB (a small study) that needs the network to
draw its figures."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from autotune.exceptions import ConfigError
from autotune.outputs import check_output, write_output
from autotune.store.records import StudyRecords
from autotune.store.storage import storage_files
from autotune.views import _plotly
from autotune.views.report.breakdown import breakdown_figure, breakdown_info
from autotune.views.report.curves import curves_figure, curves_info
from autotune.views.report.header import header_info
from autotune.views.report.history import history_figure, history_info
from autotune.views.report.importance import importance_figure, importance_info
from autotune.views.report.memory import memory_figure, memory_info
from autotune.views.report.pareto import pareto_figure, pareto_info
from autotune.views.report.recipes import RecipeRow, pareto_table_info

#: The report's figure divs, in page order.
FIGURE_IDS = (
    "pareto-figure",
    "curves-figure",
    "breakdown-figure",
    "importance-figure",
    "history-figure",
)
#: The div of the memory view, after the Pareto front, in a study with the memory objective.
MEMORY_FIGURE_ID = "memory-figure"
#: Where the report's plotly.js comes from: embedded in the file (the default: it works offline)
#: or Plotly's CDN (a much smaller file that needs the network to draw its figures).
PLOTLY_JS = ("inline", "cdn")

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


def _figure_html(figure: Any, div_id: str, first: bool, plotly_js: str) -> str:
    include: bool | str = False  # plotly.js goes with the first figure only
    if first:
        include = "cdn" if plotly_js == "cdn" else True
    return str(
        _plotly.pio.to_html(
            figure,
            include_plotlyjs=include,
            full_html=False,
            div_id=div_id,
            default_height="520px",
            config={"displaylogo": False, "responsive": True},
        )
    )


def _mib(size: float | None) -> str:
    return "-" if size is None else f"{size:,.0f} MiB"


def _table_html(rows: list[RecipeRow]) -> str:
    if not rows:
        return (
            '<p class="note">No Pareto trial yet: no complete trial is within the tolerance. '
            "The baseline configuration stays the recommendation.</p>"
        )
    memory = any(row.memory_mib is not None for row in rows)
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
            + (f"<td>{_mib(row.memory_mib)}</td>" if memory else "")
            + f"<td><pre>{html.escape(row.settings_json)}</pre><details><summary>recipe.json "
            f"(with provenance)</summary><pre>{html.escape(row.recipe_json)}</pre></details>"
            "</td></tr>"
        )
    return (
        '<table id="pareto-table"><thead><tr><th>#</th><th>configuration</th>'
        "<th>throughput (search)</th><th>speed-up (search)</th><th>fidelity</th>"
        + ("<th>peak memory</th>" if memory else "")
        + "<th>recipe</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
        '<p class="note">Throughput and speed-up here are the search phase\'s, over the '
        "baseline measured at the study's start (unconfirmed); the header's recommendation "
        "gives the confirmed figures once the candidates are confirmed head to head. "
        "Save a recipe as recipe.json and reproduce it with "
        "<code>autotune.apply(autotune.Recipe.load('recipe.json'))</code>.</p>"
    )


def check_plotly_js(plotly_js: str) -> str:
    """``plotly_js`` itself when it is one of :data:`PLOTLY_JS`, else ConfigError naming it."""
    if plotly_js not in PLOTLY_JS:
        raise ConfigError(
            f"must be one of {list(PLOTLY_JS)}. Received: {plotly_js!r}", argument="plotly_js"
        )
    return plotly_js


def render_report(records: StudyRecords, plotly_js: str = "inline") -> str:
    """The report as one HTML page: plotly.js embedded once (``"inline"``, works offline) or
    loaded from Plotly's CDN (``"cdn"``, see :data:`PLOTLY_JS`)."""
    check_plotly_js(plotly_js)
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
    placed = list(zip(figures, FIGURE_IDS, strict=True))
    if records.has_memory:  # the front's second projection, beside the first
        memory = ("Throughput and peak memory", memory_figure(memory_info(records)))
        placed.insert(1, (memory, MEMORY_FIGURE_ID))
    sections = []
    for index, ((heading, figure), div_id) in enumerate(placed):
        drawn = _figure_html(figure, div_id, index == 0, plotly_js)
        sections.append(f'<h2>{heading}</h2><div class="figure">{drawn}</div>')
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


def write_report(records: StudyRecords, output: str | Path, plotly_js: str = "inline") -> Path:
    """Writes :func:`render_report` (with ``plotly_js``) to the file ``output`` atomically and
    returns its path; ConfigError naming ``output`` when it cannot be written, or when it is the
    study's storage, another SQLite database or a symbolic link (see
    :func:`autotune.outputs.write_output`)."""
    check_plotly_js(plotly_js)
    protected = storage_files(records.storage)
    check_output(output, what="report file", protected=protected)
    page = render_report(records, plotly_js)
    return write_output(output, page, what="report file", protected=protected)
