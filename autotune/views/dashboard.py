"""The live dashboard: a local Dash app that re-reads a study while another process runs it.

Every ``refresh_seconds`` (2 s by default) the app reads the study's records again from the same
open storage (reads only) and redraws when something changed. A fidelity-tolerance slider shows
what ``autotune best`` recommends at it (:func:`autotune.store.recommendation.recommend`: the
confirmed winner with its confirmation's figures, or the fastest trial, unconfirmed); clicking
a point of the Pareto figure (the report's own figure) shows that run's curve against the
baseline, its step time and its recipe JSON with a copy button. A study with the memory objective
also shows the memory view (throughput against peak memory), whose points select the same way,
and a peak-memory limit (MiB) that the recommendation keeps to: memory enters it as a limit,
never as a weight.

SQLite allows one writer at a time: a read that meets a writer waits (the storage's busy timeout)
and, if the database still reports itself busy or locked, the dashboard keeps the last records it
read and says "storage busy, retrying" instead of failing. No TensorFlow here.

Stored strings are data, never markup: the page title is HTML-escaped (Dash puts ``app.title``
into its page as it is), React escapes component text and the report's figures their text. A
request whose Host header names another site (DNS rebinding: :func:`allowed_hosts`) gets 400.
"""

from __future__ import annotations

import hashlib
import html
import json
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import optuna
import sqlalchemy.exc

from autotune.exceptions import AutotuneError
from autotune.store.records import StudyRecords, TrialRow, read_records
from autotune.store.storage import open_storage
from autotune.views._dashboard_hosts import (
    allowed_hosts,
    exposure_warning,
    guard_host,
)
from autotune.views.report import (
    BreakdownInfo,
    CurvesInfo,
    breakdown_figure,
    breakdown_info,
    curves_figure,
    curves_info,
    header_info,
    memory_figure,
    memory_info,
    pareto_figure,
    pareto_info,
    parse_point_key,
    point_key,
    recipe_json,
    recommendation_info,
)

if TYPE_CHECKING:
    import dash

#: Seconds between two reads of the storage.
REFRESH_SECONDS = 2.0
#: The slider goes from 0 to this many times the study's tolerance.
SLIDER_SPAN = 3.0
#: Errors of a read that another process's write can cause; the next read usually succeeds.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    sqlalchemy.exc.OperationalError,
    optuna.exceptions.StorageInternalError,
)
BUSY_NOTE = "storage busy, retrying"
CLICK_PROMPT = "Click a point of the Pareto figure to see its curve, step time and recipe."
#: The ids of the figures whose points select a run.
PARETO_GRAPH, MEMORY_GRAPH = "pareto-graph", "memory-graph"


# ------------------------------------------------------------------------------------------
# Data (plain; tested without Dash)
# ------------------------------------------------------------------------------------------


class Selection(NamedTuple):
    """The run a user clicked (or the recommendation, before any click).

    Attributes:
        key: "baseline" or "trial:<number>".
        title: a heading for people.
        curves: its validation curve over the baseline's seed band.
        breakdown: the baseline's and its step time.
        recipe_json: its recipe, as ``autotune export`` writes it.
    """

    key: str
    title: str
    curves: CurvesInfo
    breakdown: BreakdownInfo
    recipe_json: str


def clicked_key(click_data: Any) -> str | None:
    """The point key ("baseline", "trial:<n>") in a Plotly ``clickData``; None for none."""
    if not isinstance(click_data, dict):
        return None
    points = click_data.get("points") or []
    if not points or not isinstance(points[0], dict):
        return None
    key = points[0].get("customdata")
    if isinstance(key, list) and key:  # customdata given per point as a list
        key = key[0]
    try:
        parse_point_key(key)
    except ValueError:
        return None
    return str(key)


def selection_info(records: StudyRecords, key: str | None) -> Selection | None:
    """What to show for point ``key``; for None, the recommendation at the study's tolerance
    (its recipe as ``autotune best --json`` prints it: after a confirmation, the confirmed
    one, with the confirmation rounds' figures). None when there is nothing to show (no
    baseline yet, or an unknown trial)."""
    recommended = None
    if key is None:
        recommended = recommendation_info(records, records.tolerance).recipe
        key = point_key(recommended.trial if recommended is not None else None)
    try:
        number = parse_point_key(key)
        row: TrialRow | None = None if number is None else records.trial(number)
        recipe = (
            recipe_json(records, row)
            if recommended is None  # a clicked point: that run's own recipe
            else json.dumps(recommended.to_dict(), indent=2, sort_keys=True)
        )
    except (KeyError, ValueError):
        return None
    if row is None:
        title = f"baseline: {records.baseline.config.describe() if records.baseline.config else ''}"
        numbers: list[int] = []
    else:
        title = f"trial {row.number} ({row.state}): {row.config.describe() if row.config else ''}"
        numbers = [row.number]
    return Selection(
        key=key,
        title=title,
        curves=curves_info(records, numbers),
        breakdown=breakdown_info(records, numbers),
        recipe_json=recipe,
    )


def records_stamp(records: StudyRecords) -> str:
    """A short digest of what the figures show, so unchanged reads redraw nothing."""
    baseline = records.baseline
    parts = [
        records.study_name,
        repr(baseline.throughput),
        repr(baseline.noise_floor),
        repr(sorted(baseline.seed_curves)),
    ]
    # A Pareto re-run's profile arrives after its trial finished: it changes the step-time bars.
    parts += [
        repr((r.number, r.state, r.throughput, r.fidelity, r.duplicate_of, len(r.curve)))
        + repr((r.profile_source, r.profile_error))
        for r in records.trials
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def page_title(study_name: str) -> str:
    """The page's ``<title>`` text, HTML-escaped: Dash inserts ``app.title`` into its index page
    unescaped (and replaces ``{%...%}`` placeholders after it, so braces are escaped too)."""
    return html.escape(f"autotune: {study_name}").replace("{", "&#123;").replace("}", "&#125;")


# ------------------------------------------------------------------------------------------
# The app
# ------------------------------------------------------------------------------------------


class Dashboard:
    """The dashboard's state and callbacks, independent of the Dash app that calls them.

    Args:
        storage_url: the Optuna storage URL.
        study_name: the study; the storage's only study when None.
        refresh_seconds: seconds between two reads.

    Raises ConfigError naming storage or study_name when the first read cannot find the study.
    """

    def __init__(
        self,
        storage_url: str,
        study_name: str | None = None,
        *,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        self.storage_url = storage_url
        self.refresh_seconds = refresh_seconds
        self._storage = open_storage(storage_url, must_exist=True, read_only=True)
        self.records = read_records(self._storage, storage_url, study_name)
        self.study_name = self.records.study_name
        self.stamp = records_stamp(self.records)
        self.problem: str | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ reading
    def refresh(self) -> StudyRecords:
        """Reads the study again; on a transient error (or a read already in progress) keeps
        the last good records and sets :attr:`problem`."""
        if not self._lock.acquire(blocking=False):
            return self.records
        try:
            records = read_records(self._storage, self.storage_url, self.study_name)
        except TRANSIENT_ERRORS as error:
            self.problem = f"{BUSY_NOTE} ({_first_line(error)})"
        except AutotuneError as error:
            self.problem = f"cannot read the study, retrying: {error}"
        else:
            self.records = records
            self.stamp = records_stamp(records)
            self.problem = None
        finally:
            self._lock.release()
        return self.records

    # ------------------------------------------------------------------ callbacks
    def on_interval(
        self, _n_intervals: int | None = None, shown_stamp: str | None = None
    ) -> tuple[Any, str, str]:
        """Interval callback: reads the study again and returns (the new records stamp, or
        no_update when the page already shows ``shown_stamp``; the storage note; the facts)."""
        from dash import no_update

        self.refresh()
        note = self.problem or f"read {self.records.read_at}"
        stamp: Any = self.stamp if self.stamp != shown_stamp else no_update
        return stamp, note, self.facts_text()

    def facts_text(self) -> str:
        """The study's header facts on one line."""
        facts = dict(header_info(self.records).facts)
        keys = (
            "experiment",
            "hardware",
            "fidelity tolerance",
            "baseline",
            "trials",
            "confirmation",
        )
        return " | ".join(f"{k}: {facts[k]}" for k in keys if k in facts)

    def slider_value(self, value: float | None) -> float:
        return self.records.tolerance if value is None else float(value)

    def memory_limit(self, value: Any) -> float | None:
        """The peak-memory limit (MiB) typed into the page; None for none (empty, not a
        positive number, or a study without the memory objective)."""
        if not self.records.has_memory or isinstance(value, bool):
            return None
        try:
            limit = float(value)
        except (TypeError, ValueError):
            return None
        return limit if limit > 0 and limit != float("inf") else None

    def recommend(self, tolerance: float | None, _stamp: Any = None, max_memory: Any = None) -> str:
        """Slider (and memory-limit) callback: the recommendation's text at ``tolerance``,
        within ``max_memory`` MiB when one is given."""
        limit = self.memory_limit(max_memory)
        return recommendation_info(self.records, self.slider_value(tolerance), limit).text

    def pareto(self, _stamp: Any = None, tolerance: float | None = None) -> Any:
        """The Pareto figure, with a line at the slider's tolerance; zoom survives refreshes."""
        figure = pareto_figure(pareto_info(self.records), self.slider_value(tolerance))
        figure.update_layout(uirevision="pareto")
        return figure

    def memory(self, _stamp: Any = None, max_memory: Any = None) -> Any:
        """The memory view (throughput against peak memory), in a study with the memory
        objective, with a line at the memory limit when one is given; zoom survives
        refreshes."""
        figure = memory_figure(memory_info(self.records))
        limit = self.memory_limit(max_memory)
        if limit is not None:
            figure.add_vline(
                x=limit,
                line={"dash": "dash", "color": "#888"},
                annotation_text=f"limit {limit:g} MiB",
            )
        figure.update_layout(uirevision="memory")
        return figure

    @staticmethod
    def clicked(pareto_click: Any, memory_click: Any, graph: str | None) -> Any:
        """Click callback of both figures: the ``clickData`` of ``graph``, the one clicked
        last (kept in the page, so each browser keeps its own selection)."""
        return memory_click if graph == MEMORY_GRAPH else pareto_click

    def select(self, click_data: Any, _stamp: Any = None) -> tuple[str, Any, Any, str]:
        """Selection callback: (title, curve figure, step-time figure, recipe JSON) of the
        clicked point (a ``clickData`` of either figure); the recommendation's before any
        click."""
        key = clicked_key(click_data)
        selection = selection_info(self.records, key)
        if selection is None:
            empty = curves_figure(curves_info(self.records, []), "Validation curve")
            return CLICK_PROMPT, empty, breakdown_figure(breakdown_info(self.records, [])), ""
        prefix = "" if key is not None else "recommended at the study's tolerance: "
        # Plotly reads a figure title as HTML-like markup; the H3 is text (React escapes it).
        curve = curves_figure(selection.curves, f"Validation curve: {html.escape(selection.title)}")
        curve.update_layout(uirevision=selection.key)
        breakdown = breakdown_figure(selection.breakdown, "Step time against the baseline")
        return prefix + selection.title, curve, breakdown, selection.recipe_json

    # ------------------------------------------------------------------ layout
    def layout(self) -> Any:
        """The page, drawn from a fresh read (Dash calls it for every page load)."""
        from dash import dcc, html

        self.refresh()
        tolerance = self.records.tolerance
        top = SLIDER_SPAN * tolerance
        marks = {round(tolerance * k, 6): f"{tolerance * k:g}" for k in (0, 1, 2, 3)}
        marks[round(tolerance, 6)] = f"{tolerance:g} (study)"
        title, curve, breakdown, recipe = self.select(None)
        section = {"marginTop": "1.5em"}
        return html.Div(
            [
                html.H2(f"autotune: {self.study_name}"),
                html.Div(self.facts_text(), id="study-facts", style={"color": "#555"}),
                html.Div(
                    f"read {self.records.read_at}",
                    id="storage-note",
                    style={"color": "#a60", "fontSize": "0.85em"},
                ),
                dcc.Interval(
                    id="refresh", interval=int(self.refresh_seconds * 1000), n_intervals=0
                ),
                dcc.Store(id="records-stamp", data=self.stamp),
                dcc.Store(id="selected-point"),  # the clickData of the point clicked last
                html.Div(
                    [
                        html.Label("fidelity tolerance (1.0 = worse by as much as a seed re-run)"),
                        dcc.Slider(
                            id="tolerance-slider",
                            min=0,
                            max=top,
                            step=top / 300,
                            value=tolerance,
                            marks=marks,
                            tooltip={"placement": "bottom", "always_visible": False},
                        ),
                    ],
                    style=section,
                ),
                html.Div(
                    self.recommend(tolerance),
                    id="recommendation",
                    style={"fontWeight": "bold", "margin": "0.5em 0 1em"},
                ),
                dcc.Graph(id=PARETO_GRAPH, figure=self.pareto(None, tolerance)),
                html.Div(  # the front's second projection; hidden without the objective
                    [
                        html.Label("peak memory limit (MiB) ", htmlFor="memory-limit"),
                        dcc.Input(
                            id="memory-limit",
                            type="number",
                            min=0,
                            debounce=True,
                            placeholder="no limit",
                        ),
                        dcc.Graph(
                            id=MEMORY_GRAPH,
                            figure=self.memory() if self.records.has_memory else {},
                        ),
                    ],
                    id="memory-view",
                    style={} if self.records.has_memory else {"display": "none"},
                ),
                html.H3(title, id="selection-title", style=section),
                html.Div(
                    [
                        dcc.Graph(id="selection-curve", figure=curve),
                        dcc.Graph(id="selection-breakdown", figure=breakdown),
                    ]
                ),
                html.Div(
                    [
                        html.Span("recipe.json "),
                        dcc.Clipboard(id="copy-recipe", target_id="recipe", title="copy"),
                        html.Pre(
                            recipe,
                            id="recipe",
                            style={"background": "#f6f8fa", "padding": "0.6em"},
                        ),
                    ]
                ),
            ],
            style={"fontFamily": "system-ui, sans-serif", "margin": "1em 2em"},
        )

    def app(
        self, host: str = "127.0.0.1", port: int | None = None, extra_hosts: Iterable[str] = ()
    ) -> dash.Dash:
        """The Dash app with this dashboard's layout and callbacks, to serve on ``host`` and
        ``port`` (any when None); other Host headers get 400 (:func:`allowed_hosts`)."""
        from autotune.views._plotly import require

        require("dash")
        from dash import Dash, Input, Output, State, ctx

        app = Dash(__name__, title=page_title(self.study_name), update_title="")
        guard_host(app.server, allowed_hosts(host, extra_hosts), port)
        app.layout = self.layout  # called for every page load, with the latest records
        app.callback(
            Output("records-stamp", "data"),
            Output("storage-note", "children"),
            Output("study-facts", "children"),
            Input("refresh", "n_intervals"),
            State("records-stamp", "data"),
            prevent_initial_call=True,
        )(self.on_interval)
        app.callback(
            Output("recommendation", "children"),
            Input("tolerance-slider", "value"),
            Input("records-stamp", "data"),
            Input("memory-limit", "value"),
            prevent_initial_call=True,
        )(self.recommend)
        app.callback(
            Output("pareto-graph", "figure"),
            Input("records-stamp", "data"),
            Input("tolerance-slider", "value"),
            prevent_initial_call=True,
        )(self.pareto)
        app.callback(
            Output(MEMORY_GRAPH, "figure"),
            Input("records-stamp", "data"),
            Input("memory-limit", "value"),
            prevent_initial_call=True,
        )(self.memory)
        app.callback(
            Output("selected-point", "data"),
            Input(PARETO_GRAPH, "clickData"),
            Input(MEMORY_GRAPH, "clickData"),
            prevent_initial_call=True,
        )(lambda pareto, memory: self.clicked(pareto, memory, ctx.triggered_id))
        app.callback(
            Output("selection-title", "children"),
            Output("selection-curve", "figure"),
            Output("selection-breakdown", "figure"),
            Output("recipe", "children"),
            Input("selected-point", "data"),
            Input("records-stamp", "data"),
            prevent_initial_call=True,
        )(self.select)
        return app


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:120] if text else type(error).__name__


def create_app(
    storage: str,
    study_name: str | None = None,
    *,
    refresh_seconds: float = REFRESH_SECONDS,
    host: str = "127.0.0.1",
    port: int | None = None,
    extra_hosts: Iterable[str] = (),
) -> dash.Dash:
    """A ``dash.Dash`` app showing study ``study_name`` of ``storage``, re-read every
    ``refresh_seconds``, to serve on ``host`` and ``port`` (see :meth:`Dashboard.app`).
    Raises ConfigError naming storage or study_name when there is none."""
    dashboard = Dashboard(storage, study_name, refresh_seconds=refresh_seconds)
    return dashboard.app(host, port, extra_hosts)


__all__ = [
    "BUSY_NOTE",
    "MEMORY_GRAPH",
    "PARETO_GRAPH",
    "REFRESH_SECONDS",
    "Dashboard",
    "Selection",
    "allowed_hosts",
    "clicked_key",
    "create_app",
    "exposure_warning",
    "page_title",
    "records_stamp",
    "selection_info",
]
