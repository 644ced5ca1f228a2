"""Unit tests for autotune.views.dashboard: the recommendation at a tolerance, clicking a point,
reading a study while another process writes it, and the Dash app's wiring (no browser)."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from pathlib import Path

import dash
import optuna
import pytest
import sqlalchemy.exc
from click.testing import CliRunner

import autotune.views.dashboard
from autotune.cli import error_message, main
from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.store.records import StudyRecords, load_records
from autotune.study import Study, load_study
from autotune.views.dashboard import (
    BUSY_NOTE,
    CLICK_PROMPT,
    Dashboard,
    clicked_key,
    create_app,
    records_stamp,
    selection_info,
)
from autotune.views.report import PARETO_TRACE, recommendation_info
from tests.support.demo_study import (
    PARETO,
    PRUNED,
    SPACE,
    TRIALS,
    DemoStudy,
    build_demo_study,
    fake_runner,
    params,
    profiling_runner,
    write_experiment,
)
from tests.support.fake_trials import TOLERANCE

TIGHT, LOOSE = 0.1, 1.0


@pytest.fixture(scope="module")
def board(demo: DemoStudy) -> Dashboard:
    return Dashboard(demo.storage)


def click(key: str) -> dict:
    """Plotly's clickData for a point whose customdata is ``key``."""
    return {"points": [{"curveNumber": 0, "pointNumber": 0, "x": 1.0, "y": 2.0, "customdata": key}]}


def find(component, component_id: str):
    """The component with ``component_id`` in a Dash layout tree."""
    if getattr(component, "id", None) == component_id:
        return component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list) else [children]:
        if child is not None and not isinstance(child, str):
            found = find(child, component_id)
            if found is not None:
                return found
    return None


# --------------------------------------------------------------------------------------------
# Recommendation
# --------------------------------------------------------------------------------------------


def test_recommendation_changes_between_a_tight_and_a_loose_tolerance(board: Dashboard) -> None:
    tight = board.recommend(TIGHT)
    loose = board.recommend(LOOSE)

    assert tight != loose
    assert tight.startswith("Keep the baseline (bs=32 float32")
    assert "no trial is faster than the baseline with fidelity <= 0.10" in tight
    assert loose.startswith("Trial 2: bs=32 mixed_bfloat16 xla")
    assert "3.00x the baseline" in loose
    assert board.recommend(None) == board.recommend(TOLERANCE)
    assert board.recommend(None).startswith(f"Trial {PARETO[0]}:")


@pytest.mark.parametrize("tolerance", [0.0, 0.1, 0.5, 1.0, 1.2, 1.5, 2.7, 4.5])
def test_recommendation_follows_study_best(
    records: StudyRecords, demo: DemoStudy, tolerance: float
) -> None:
    expected = load_study(demo.storage).best(max_fidelity=tolerance)

    recommendation = recommendation_info(records, tolerance)

    assert recommendation.number == expected.trial
    assert recommendation.tolerance == tolerance


def test_recommendation_before_the_baseline(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    Study(write_experiment(tmp_path), SPACE, storage)

    assert recommendation_info(load_records(storage), 1.0).text == (
        "The baseline has not been measured yet."
    )


# --------------------------------------------------------------------------------------------
# Clicking a point
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (click("trial:3"), "trial:3"),
        (click("baseline"), "baseline"),
        ({"points": [{"customdata": ["trial:2"]}]}, "trial:2"),
        (None, None),
        ({}, None),
        ({"points": []}, None),
        (click("nonsense"), None),
        ({"points": [{"x": 1}]}, None),
        ("trial:3", None),
    ],
)
def test_clicked_key(data, expected) -> None:
    assert clicked_key(data) == expected


def test_click_shows_the_recipe_curve_and_breakdown(board: Dashboard, records) -> None:
    title, curve, breakdown, recipe = board.select(click("trial:2"))

    data = json.loads(recipe)
    assert data["trial"] == 2
    assert data["config"] == records.trial(2).config.to_dict()
    assert data["learning_rate"] == pytest.approx(0.01)
    assert title.startswith("trial 2 (complete): bs=32 mixed_bfloat16 xla")
    assert {t.uid for t in curve.data} >= {"baseline", "trial-2", "seed-band"}
    assert list(breakdown.data[0].x) == ["baseline", "trial 2"]


def test_click_on_the_baseline_and_on_a_pruned_trial(board: Dashboard) -> None:
    _, _, _, baseline = board.select(click("baseline"))
    title, curve, _, pruned = board.select(click(f"trial:{PRUNED[0]}"))

    assert json.loads(baseline)["trial"] is None
    assert json.loads(baseline)["config"] == TrialConfig.baseline(32).to_dict()
    assert "not a recommendation" in json.loads(pruned)["note"]
    assert "has no validation curve" in curve.layout.title.text
    assert title.startswith(f"trial {PRUNED[0]} (pruned)")


def test_before_a_click_the_recommendation_is_shown(board: Dashboard) -> None:
    title, _, _, recipe = board.select(None)

    assert title.startswith("recommended at the study's tolerance: trial 3")
    assert json.loads(recipe)["trial"] == PARETO[0]


def test_click_on_an_unknown_point(board: Dashboard, records: StudyRecords) -> None:
    title, _, _, recipe = board.select(click("trial:99"))

    assert (title, recipe) == (CLICK_PROMPT, "")
    assert selection_info(records, "trial:99") is None


# --------------------------------------------------------------------------------------------
# Figures and layout
# --------------------------------------------------------------------------------------------


def test_pareto_figure_follows_the_slider(board: Dashboard) -> None:
    figure = board.pareto("stamp", 0.7)

    front = next(t for t in figure.data if t.uid == PARETO_TRACE)
    assert len(front.x) == len(PARETO)
    assert sorted(s.x0 for s in figure.layout.shapes if s.type == "line") == [0.7, TOLERANCE]
    assert figure.layout.uirevision == "pareto"


def test_layout_has_the_controls(board: Dashboard) -> None:
    layout = board.layout()

    slider = find(layout, "tolerance-slider")
    assert slider.min == 0 and slider.max == pytest.approx(3 * TOLERANCE)
    assert slider.value == TOLERANCE
    assert find(layout, "recommendation").children == board.recommend(TOLERANCE)
    graph = find(layout, "pareto-graph")
    assert any(t.uid == PARETO_TRACE for t in graph.figure.data)
    recipe = find(layout, "recipe")
    assert isinstance(recipe, dash.html.Pre)
    assert json.loads(recipe.children)["trial"] == PARETO[0]
    clipboard = find(layout, "copy-recipe")
    assert isinstance(clipboard, dash.dcc.Clipboard) and clipboard.target_id == "recipe"
    assert find(layout, "refresh").interval == 2000


def test_create_app_serves_the_page_and_its_callbacks(demo: DemoStudy) -> None:
    app = create_app(demo.storage)
    client = app.server.test_client()

    assert isinstance(app, dash.Dash)
    assert client.get("/").status_code == 200
    layout = client.get("/_dash-layout").get_data(as_text=True)
    for component_id in ("tolerance-slider", "recommendation", "pareto-graph", "recipe"):
        assert f'"{component_id}"' in layout
    outputs = {d["output"] for d in client.get("/_dash-dependencies").get_json()}
    assert "recommendation.children" in outputs and "pareto-graph.figure" in outputs
    response = client.post(
        "/_dash-update-component",
        json={
            "output": "recommendation.children",
            "outputs": {"id": "recommendation", "property": "children"},
            "inputs": [
                {"id": "tolerance-slider", "property": "value", "value": LOOSE},
                {"id": "records-stamp", "property": "data", "value": "x"},
                {"id": "memory-limit", "property": "value", "value": None},
            ],
            "changedPropIds": ["tolerance-slider.value"],
            "state": [],
        },
    )
    assert response.status_code == 200
    text = response.get_json()["response"]["recommendation"]["children"]
    assert text.startswith("Trial 2:")
    on_memory = {"points": [{"customdata": "trial:3"}]}
    clicked = client.post(  # the figure clicked last is the one Dash says triggered
        "/_dash-update-component",
        json={
            "output": "selected-point.data",
            "outputs": {"id": "selected-point", "property": "data"},
            "inputs": [
                {"id": "pareto-graph", "property": "clickData", "value": None},
                {"id": "memory-graph", "property": "clickData", "value": on_memory},
            ],
            "changedPropIds": ["memory-graph.clickData"],
            "state": [],
        },
    )
    assert clicked.status_code == 200
    assert clicked.get_json()["response"]["selected-point"]["data"] == on_memory


def test_create_app_for_an_unknown_study(demo: DemoStudy) -> None:
    with pytest.raises(ConfigError) as info:
        create_app(demo.storage, "nope")
    assert "--study 'nope' is not in" in error_message(info.value)


# --------------------------------------------------------------------------------------------
# Reading while a study runs
# --------------------------------------------------------------------------------------------


def test_refresh_picks_up_new_trials(tmp_path: Path) -> None:
    demo = build_demo_study(tmp_path, trials=TRIALS[:1])
    board = Dashboard(demo.storage)
    first = board.stamp

    unchanged, note, _ = board.on_interval(1, first)
    writer = Study(demo.experiment_ref, SPACE, demo.storage, runner=fake_runner)
    writer.optuna.enqueue_trial(params("mixed_bfloat16", True, 64))
    writer.optimize(n_trials=2)
    stamp, _, facts = board.on_interval(2, first)

    assert unchanged is dash.no_update and note.startswith("read ")
    assert stamp == board.stamp != first
    assert stamp == records_stamp(board.records)
    assert [r.number for r in board.records.trials] == [0, 1]
    assert "2 complete" in facts
    assert board.recommend(TOLERANCE).startswith("Trial 1:")


def test_a_pareto_rerun_arriving_later_is_picked_up(tmp_path: Path) -> None:
    demo = build_demo_study(
        tmp_path, trials=TRIALS[2:4], runner=profiling_runner, profile_mode="off"
    )
    board = Dashboard(demo.storage)
    first = board.stamp
    _, _, before, _ = board.select(click("trial:1"))

    writer = Study(
        demo.experiment_ref, SPACE, demo.storage, runner=profiling_runner, profile_mode="pareto"
    )
    stored = writer.profile_pareto()
    stamp, _, _ = board.on_interval(2, first)
    _, _, after, _ = board.select(click("trial:1"))

    assert sorted(stored) == [0, 1]
    assert stamp == board.stamp != first
    assert board.records.trial(1).profile_source == "rerun"
    assert {t.uid for t in before.data} >= {"step-input", "step-compute"}
    uids = {t.uid for t in after.data}
    assert {"step-host_compute", "step-device_compute", "step-other"} <= uids
    hover = next(t for t in after.data if t.uid == "step-host_compute").hovertext
    assert "tensorboard --logdir" in hover[1] and "Pareto re-run" in hover[1]
    assert "ablation; xprof 3%" in hover[1]


def test_a_busy_storage_keeps_the_last_records(board: Dashboard, monkeypatch) -> None:
    before = board.records

    def busy(*args, **kwargs):
        raise sqlalchemy.exc.OperationalError("SELECT", {}, Exception("database is locked"))

    monkeypatch.setattr(autotune.views.dashboard, "read_records", busy)
    stamp, note, _ = board.on_interval(5, board.stamp)

    assert board.records is before
    assert stamp is dash.no_update
    assert note.startswith(BUSY_NOTE) and "database is locked" in note
    assert board.recommend(LOOSE).startswith("Trial 2:")

    def internal(*args, **kwargs):
        raise optuna.exceptions.StorageInternalError("An exception is raised during the commit.")

    monkeypatch.setattr(autotune.views.dashboard, "read_records", internal)
    assert board.on_interval(6, board.stamp)[1].startswith(BUSY_NOTE)
    monkeypatch.undo()
    assert board.on_interval(7, board.stamp)[1].startswith("read ")
    assert board.problem is None


def test_a_read_waits_for_a_writer_instead_of_failing(tmp_path: Path) -> None:
    demo = build_demo_study(tmp_path, trials=TRIALS[:1])
    board = Dashboard(demo.storage)
    locked = threading.Event()

    def hold_the_write_lock() -> None:
        connection = sqlite3.connect(demo.folder / "study.db", isolation_level=None)
        connection.execute("BEGIN EXCLUSIVE")
        locked.set()
        time.sleep(0.5)
        connection.execute("COMMIT")
        connection.close()

    writer = threading.Thread(target=hold_the_write_lock)
    writer.start()
    locked.wait(5)
    started = time.monotonic()
    records = board.refresh()
    waited = time.monotonic() - started
    writer.join()

    assert board.problem is None
    assert [r.number for r in records.trials] == [0]
    assert waited >= 0.3


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------


def test_dashboard_command_for_an_unknown_study(demo: DemoStudy) -> None:
    result = CliRunner().invoke(main, ["dashboard", "--storage", demo.storage, "--study", "nope"])

    assert result.exit_code == 2
    assert "--study 'nope' is not in" in result.output


def test_dashboard_command_on_a_taken_port(demo: DemoStudy) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        result = CliRunner().invoke(
            main, ["dashboard", "--storage", demo.storage, "--port", str(port)]
        )

    assert result.exit_code == 2
    assert f"--host/--port: cannot listen on 127.0.0.1:{port}" in result.output


def test_dashboard_command_help() -> None:
    result = CliRunner().invoke(main, ["dashboard", "--help"])

    assert result.exit_code == 0
    for option in ("--storage", "--study", "--port", "--host"):
        assert option in result.output


# --------------------------------------------------------------------------------------------
# Hostile stored strings and the Host header (issue 13)
# --------------------------------------------------------------------------------------------

#: Tags of the hostile strings (tests/support/demo_study.py) as they would look unescaped.
INJECTED = ("<script", "<img", "<svg", "<b onmouseover", "<a href", "</title>")


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> DemoStudy:
    from tests.support.demo_study import build_hostile_study

    return build_hostile_study(tmp_path_factory.mktemp("hostile"))


def _strings(value: object) -> list[str]:
    """Every string in a JSON-like value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def test_page_title_is_html_escaped() -> None:
    from autotune.views.dashboard import page_title

    assert page_title("</title><script>x</script>") == (
        "autotune: &lt;/title&gt;&lt;script&gt;x&lt;/script&gt;"
    )
    assert page_title("a {%scripts%} & b") == "autotune: a &#123;%scripts%&#125; &amp; b"


def test_index_page_of_a_hostile_study_has_no_injected_tag(hostile: DemoStudy) -> None:
    import html
    import re

    from tests.support.demo_study import HOSTILE_STUDY

    index = create_app(hostile.storage).server.test_client().get("/").get_data(as_text=True)

    title = re.search(r"<title>(.*?)</title>", index, re.S)
    assert title is not None
    assert title.group(1) == html.escape(f"autotune: {HOSTILE_STUDY}")
    assert index.count("<title>") == 1 and index.count("</title>") == 1
    assert "<script>alert" not in index


def test_figures_of_a_hostile_study_escape_every_stored_string(hostile: DemoStudy) -> None:
    from tests.support.demo_study import HOSTILE_EXPERIMENT, HOSTILE_MESSAGE, HOSTILE_STUDY

    board = Dashboard(hostile.storage)
    layout = board.layout()
    failed = board.records.trial(5)
    figures = [find(layout, graph).figure for graph in ("pareto-graph", "selection-curve")] + [
        find(layout, "selection-breakdown").figure,
        board.pareto(None, 0.5),
    ]
    for key in ("baseline", "trial:2", f"trial:{failed.number}", "trial:4"):
        _, curve, breakdown, _ = board.select(click(key))
        figures += [curve, breakdown]

    texts = [s for figure in figures for s in _strings(figure.to_plotly_json())]
    for tag in INJECTED:
        assert not [s for s in texts if tag in s], tag
    assert failed.reason == HOSTILE_MESSAGE
    assert any("&lt;script&gt;alert(&#x27;failure&#x27;)" in s for s in texts)
    # Dash components hold plain text (React escapes it): the name as it is, never markup.
    assert HOSTILE_EXPERIMENT in find(layout, "study-facts").children
    assert layout.children[0].children == f"autotune: {HOSTILE_STUDY}"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("localhost:8050", ("localhost", 8050)),
        ("127.0.0.1", ("127.0.0.1", None)),
        ("[::1]:8050", ("::1", 8050)),
        ("Example.ORG.:80", ("example.org", 80)),
    ],
)
def test_split_host_header(header: str, expected: tuple[str, int | None]) -> None:
    from autotune.views._dashboard_hosts import split_host_header

    assert split_host_header(header) == expected


@pytest.mark.parametrize("header", ["", "::1", "localhost:x", "a:99999", "me@evil:80", "a/b:80"])
def test_split_host_header_refuses_what_no_browser_sends(header: str) -> None:
    from autotune.views._dashboard_hosts import split_host_header

    with pytest.raises(ValueError):
        split_host_header(header)


def test_allowed_hosts_and_the_loopback_rule() -> None:
    from autotune.views._dashboard_hosts import (
        LOOPBACK_NAMES,
        allowed_hosts,
        host_allowed,
        is_loopback,
    )

    local = allowed_hosts("127.0.0.1")
    lan = allowed_hosts("192.0.2.7", extra=["Board.example"])
    anywhere = allowed_hosts("0.0.0.0")

    assert local == LOOPBACK_NAMES
    assert lan == LOOPBACK_NAMES | {"192.0.2.7", "board.example"}
    assert socket.gethostname().lower() in anywhere and "0.0.0.0" not in anywhere
    assert host_allowed("localhost:8050", local, 8050)
    assert host_allowed("[::1]:8050", local, 8050)
    assert not host_allowed("localhost:8051", local, 8050)
    assert not host_allowed("localhost", local, 8050)  # no port: 80
    assert host_allowed("localhost", local, None)
    assert not host_allowed("attacker.example:8050", local, 8050)
    assert not host_allowed("", local, 8050) and not host_allowed(None, local, 8050)
    assert not host_allowed("localhost:x", local, 8050)
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "", "192.0.2.7"))


@pytest.mark.parametrize(
    ("host", "port", "header", "status"),
    [
        ("127.0.0.1", 8050, "127.0.0.1:8050", 200),
        ("127.0.0.1", 8050, "localhost:8050", 200),
        ("127.0.0.1", 8050, "attacker.example:8050", 400),  # DNS rebinding
        ("127.0.0.1", 8050, "127.0.0.1:9999", 400),
        ("127.0.0.1", None, "localhost", 200),  # create_app's default: any port
        ("192.0.2.7", 8050, "192.0.2.7:8050", 200),
        ("192.0.2.7", 8050, "attacker.example:8050", 400),
    ],
)
def test_requests_naming_another_host_get_400(
    demo: DemoStudy, host: str, port: int | None, header: str, status: int
) -> None:
    client = create_app(demo.storage, host=host, port=port).server.test_client()

    for path in ("/", "/_dash-layout", "/_dash-dependencies"):
        response = client.get(path, headers={"Host": header})
        assert response.status_code == status, (path, response.get_data(as_text=True))
    if status == 400:
        assert "Host header" in response.get_data(as_text=True)


def test_exposure_warning_only_beyond_loopback() -> None:
    from autotune.views.dashboard import exposure_warning

    assert exposure_warning("127.0.0.1", 8050) is None
    assert exposure_warning("localhost", 8050) is None
    assert exposure_warning("::1", 8050) is None
    wide = exposure_warning("0.0.0.0", 8050)
    assert wide is not None and "every address of this machine (port 8050)" in wide
    assert "anyone who can reach that port sees the whole study" in (
        exposure_warning("192.0.2.7", 8050) or ""
    )


@pytest.mark.parametrize(("host", "warned"), [("0.0.0.0", True), ("127.0.0.1", False)])
def test_dashboard_command_warns_loudly_beyond_localhost(
    demo: DemoStudy, monkeypatch: pytest.MonkeyPatch, host: str, warned: bool
) -> None:
    served: dict = {}
    monkeypatch.setattr(dash.Dash, "run", lambda self, **kw: served.update(kw, app=self))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    result = CliRunner().invoke(
        main, ["dashboard", "--storage", demo.storage, "--host", host, "--port", str(port)]
    )

    assert result.exit_code == 0, result.output
    assert served["host"] == host and served["port"] == port
    assert ("WARNING: the dashboard listens on" in " ".join(result.stderr.split())) is warned
    client = served["app"].server.test_client()
    assert client.get("/", headers={"Host": f"localhost:{port}"}).status_code == 200
    assert client.get("/", headers={"Host": f"attacker.example:{port}"}).status_code == 400
