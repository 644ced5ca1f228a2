"""Peak memory as an optional third objective: parsing, scoring, the three-objective front, the
memory limit of the recommendation, and the views (report, dashboard, JSON), with the fake
runner (tests/support/fake_trials.py: XLA is faster at the same curve but needs 50 MiB more)."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner

from autotune.cli import main
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ConfigError
from autotune.store.objectives import check_memory_limit, parse_objectives, peak_memory_bytes
from autotune.store.records import load_records, pareto_front
from autotune.study import Study
from autotune.views.report import MEMORY_FIGURE_ID, MEMORY_FRONT_TRACE, memory_info, render_report
from autotune.views.study_json import study_json
from tests.support.demo_study import write_experiment
from tests.support.fake_trials import SPACE, memory_of
from tests.support.memory_study import (
    FLOAT32,
    MEMORY,
    NO_XLA,
    REPEAT,
    TRIALS,
    XLA,
    fake_runner,
    run_study,
)


@pytest.fixture(scope="module")
def memory_study(tmp_path_factory: pytest.TempPathFactory) -> Study:
    return run_study(tmp_path_factory.mktemp("memory"), MEMORY)


def test_objectives_parse_in_stored_order_and_refuse_what_a_study_cannot_have() -> None:
    assert parse_objectives(None) is None
    assert parse_objectives("memory, fidelity,throughput") == ("throughput", "fidelity", "memory")
    assert parse_objectives(["throughput", "fidelity"]) == ("throughput", "fidelity")
    for bad, problem in [
        ("throughput,fidelity,speed", "unknown objective(s) 'speed'"),
        ("throughput,fidelity,fidelity", "repeated"),
        ("throughput,memory", "throughput and fidelity are always objectives"),
    ]:
        with pytest.raises(ConfigError) as raised:
            parse_objectives(bad)
        assert str(raised.value).startswith("objectives ")
        assert problem in str(raised.value) and repr(bad) in str(raised.value)


def test_memory_limit_and_measurement() -> None:
    assert check_memory_limit(None) is None
    assert check_memory_limit(512) == 512.0
    for bad in (0, -1, float("inf"), float("nan"), "2GiB", True):
        with pytest.raises(ConfigError, match="max_memory_mib must be a number of MiB > 0"):
            check_memory_limit(bad)  # type: ignore[arg-type]
    assert peak_memory_bytes(1000, None) == 1000
    assert peak_memory_bytes(1000, 300) == 300  # the device's peak, on a GPU
    assert peak_memory_bytes(0, None) is None  # a result stored before memory was measured


def test_a_three_objective_study_stores_peak_memory_as_its_third_value(
    memory_study: Study,
) -> None:
    trials = memory_study.optuna.get_trials()
    assert [d.name for d in memory_study.optuna.directions] == ["MAXIMIZE", "MINIMIZE", "MINIMIZE"]
    assert memory_study.optuna.metric_names == ["throughput", "fidelity", "memory"]
    for trial, config in zip(trials, TRIALS, strict=True):
        assert len(trial.values) == 3
        assert trial.values[2] == pytest.approx(memory_of(TrialConfig(**config)))
    assert trials[REPEAT].values == trials[XLA].values  # a repeat reuses all three
    assert memory_study.optuna.user_attrs["autotune_identity"]["objectives"] == [
        "throughput:maximize",
        "fidelity:minimize",
        "memory:minimize",
    ]


def test_the_front_on_three_objectives_keeps_a_slower_configuration_that_needs_less_memory(
    memory_study: Study, tmp_path: Path
) -> None:
    three = memory_study.pareto_front()
    assert [r.number for r in three] == [XLA, NO_XLA]  # fastest first
    two = run_study(tmp_path / "two", None)
    assert [r.number for r in two.pareto_front()] == [XLA]  # XLA: faster, same curve
    rows = two.records()
    assert [r.number for r in pareto_front(rows, 1000.0, MEMORY.split(","), 164.0)] == [XLA, NO_XLA]


def test_the_baseline_bounds_the_three_objective_front() -> None:
    slower_leaner = _row(0, speed=900.0, memory=100.0)
    slower_heavier = _row(1, speed=900.0, memory=300.0)
    faster = _row(2, speed=2000.0, memory=300.0)
    front = pareto_front([slower_leaner, slower_heavier, faster], 1000.0, MEMORY.split(","), 164.0)
    assert [r.number for r in front] == [2, 0]  # the baseline dominates only the slower, heavier


def _row(number: int, speed: float, memory: float):  # type: ignore[no-untyped-def]
    from autotune.measure import Estimate
    from autotune.store.records import TrialRow

    return TrialRow(
        number=number,
        state="complete",
        config=TrialConfig(batch_size=32),
        throughput=Estimate(median=speed, low=speed, high=speed, confidence=0.95, n=7),
        fidelity=0.5,
        feasible=True,
        peak_host_bytes=int(memory * 2**20),
    )


def test_memory_enters_the_recommendation_as_a_limit(memory_study: Study) -> None:
    assert memory_study.best().trial == XLA  # the fastest: memory is not a weight
    lean = memory_study.best(max_memory_mib=200)
    assert lean.trial == NO_XLA
    assert memory_study.best(max_memory_mib=250).trial == XLA
    none = memory_study.best(max_memory_mib=150)
    assert none.trial is None and "peak memory <= 150 MiB" in none.note
    with pytest.raises(ConfigError, match="max_memory_mib"):
        memory_study.best(max_memory_mib=0)


def test_a_confirmation_within_a_memory_limit_confirms_only_the_trials_within_it(
    tmp_path: Path,
) -> None:
    study = run_study(tmp_path, MEMORY)
    confirmation = study.confirm(top=2, rounds=2, max_memory_mib=200)
    assert confirmation is not None
    assert [c.trial for c in confirmation.candidates] == [NO_XLA]
    recipe = study.best(max_memory_mib=200)
    assert recipe.trial == NO_XLA and recipe.note.startswith("confirmed")
    # the confirmed winner is over a tighter limit: the rule falls back, unconfirmed
    assert study.best(max_memory_mib=150).trial is None


def test_a_stored_study_keeps_its_objectives(memory_study: Study, tmp_path: Path) -> None:
    storage = memory_study.storage_url
    reference = memory_study.reference
    resumed = Study(reference, SPACE, storage, runner=fake_runner, profile_mode="off")
    assert resumed.objectives == ("throughput", "fidelity", "memory")
    with pytest.raises(ConfigError) as raised:
        Study(reference, SPACE, storage, runner=fake_runner, objectives="throughput,fidelity")
    message = str(raised.value)
    assert message.startswith("objectives cannot change the objectives of the stored study")
    assert "made with throughput,fidelity,memory" in message
    assert "Received: throughput,fidelity" in message


def test_the_views_show_the_memory_projection(memory_study: Study) -> None:
    records = load_records(memory_study.storage_url, memory_study.name)
    assert records.has_memory
    info = memory_info(records)
    assert info.baseline is not None and info.baseline.memory_mib == pytest.approx(164.0)
    assert [p.key for p in info.pareto] == [f"trial:{NO_XLA}", f"trial:{XLA}"]  # least memory
    assert info.feasible == [] and [p.key for p in info.infeasible] == [f"trial:{FLOAT32}"]
    page = render_report(records, plotly_js="cdn")
    assert f'id="{MEMORY_FIGURE_ID}"' in page and MEMORY_FRONT_TRACE in page
    assert "<th>peak memory</th>" in page and "214 MiB" in page
    data = study_json(records)
    assert data["objectives"] == ["throughput", "fidelity", "memory"]
    assert data["trials"][XLA]["peak_memory_mib"] == pytest.approx(214.0)
    assert data["baseline"]["peak_memory_mib"] == pytest.approx(164.0)


def test_a_two_objective_report_has_no_memory_view(tmp_path: Path) -> None:
    study = run_study(tmp_path, None, TRIALS[:1])
    records = load_records(study.storage_url, study.name)
    page = render_report(records, plotly_js="cdn")
    assert MEMORY_FIGURE_ID not in page and "peak memory" not in page


def test_the_dashboard_draws_the_memory_view(memory_study: Study) -> None:
    pytest.importorskip("dash")
    from autotune.views.dashboard import Dashboard

    dashboard = Dashboard(memory_study.storage_url, memory_study.name)
    figure = dashboard.memory()
    front = next(t for t in figure.data if t.uid == MEMORY_FRONT_TRACE)
    assert list(front.customdata) == [f"trial:{NO_XLA}", f"trial:{XLA}"]
    assert "peak memory 164 MiB" in front.hovertext[0]
    layout = dashboard.layout()
    assert layout["memory-view"].style == {}  # shown
    assert layout["memory-graph"].figure.data[0].uid  # and drawn


def test_the_dashboard_recommends_within_a_typed_memory_limit(memory_study: Study) -> None:
    pytest.importorskip("dash")
    from autotune.views.dashboard import Dashboard

    dashboard = Dashboard(memory_study.storage_url, memory_study.name)
    tolerance = dashboard.records.tolerance
    assert dashboard.recommend(tolerance).startswith(f"Trial {XLA}:")
    lean = dashboard.recommend(tolerance, None, 200)
    assert lean.startswith(f"Trial {NO_XLA}:") and "peak memory 164 <= 200 MiB" in lean
    none = dashboard.recommend(tolerance, None, 150)
    assert none.startswith("Keep the baseline") and "and peak memory <= 150 MiB" in none
    for no_limit in (None, "", "abc", 0, -5, True, float("inf")):  # an empty or odd box
        assert dashboard.memory_limit(no_limit) is None
        assert dashboard.recommend(tolerance, None, no_limit).startswith(f"Trial {XLA}:")
    assert dashboard.memory_limit("200") == 200.0
    drawn = dashboard.memory(None, 200)
    assert [shape.x0 for shape in drawn.layout.shapes] == [200]
    assert drawn.layout.annotations[-1].text == "limit 200 MiB"
    assert not dashboard.memory(None, None).layout.shapes


def test_a_click_in_the_memory_view_selects_its_trial(memory_study: Study) -> None:
    pytest.importorskip("dash")
    from autotune.views.dashboard import MEMORY_GRAPH, PARETO_GRAPH, Dashboard

    dashboard = Dashboard(memory_study.storage_url, memory_study.name)
    on_pareto = {"points": [{"customdata": f"trial:{XLA}"}]}
    on_memory = {"points": [{"customdata": f"trial:{NO_XLA}"}]}
    assert dashboard.clicked(on_pareto, on_memory, MEMORY_GRAPH) is on_memory
    assert dashboard.clicked(on_pareto, on_memory, PARETO_GRAPH) is on_pareto
    title, _, _, recipe = dashboard.select(dashboard.clicked(on_pareto, on_memory, MEMORY_GRAPH))
    assert title.startswith(f"trial {NO_XLA} ") and json.loads(recipe)["trial"] == NO_XLA


def test_a_two_objective_dashboard_hides_the_memory_view_and_ignores_a_limit(
    tmp_path: Path,
) -> None:
    pytest.importorskip("dash")
    from autotune.views.dashboard import Dashboard

    study = run_study(tmp_path, None)
    dashboard = Dashboard(study.storage_url, study.name)
    assert dashboard.layout()["memory-view"].style == {"display": "none"}
    assert dashboard.memory_limit(150) is None
    tolerance = dashboard.records.tolerance
    assert dashboard.recommend(tolerance, None, 150) == dashboard.recommend(tolerance)


def test_a_missing_peak_fails_the_trial_not_the_study(tmp_path: Path) -> None:
    def no_peak(reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None):  # type: ignore[no-untyped-def]
        result = fake_runner(reference, config, settings, log_dir)
        if settings.measure_throughput and settings.seed == 0 and config.batch_size == 64:
            import dataclasses

            return dataclasses.replace(result, peak_host_bytes=0)
        return result

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = Study(
        write_experiment(tmp_path),
        SPACE,
        f"sqlite:///{tmp_path / 'study.db'}",
        runner=no_peak,
        profile_mode="off",
        objectives=MEMORY,
    )
    study.optuna.enqueue_trial(TRIALS[0])
    study.optimize(n_trials=1)
    (row,) = study.records()
    assert row.state == "failed" and row.failure_kind == "exception"
    assert "no peak was measured" in (row.reason or "")


def test_the_cli_takes_objectives_and_a_memory_limit(memory_study: Study, tmp_path: Path) -> None:
    runner = CliRunner()
    bad = runner.invoke(main, ["run", "--objectives", "speed", "--storage", "sqlite:///x.db"])
    assert bad.exit_code == 2
    assert "--objectives unknown objective(s) 'speed'" in bad.output
    best = runner.invoke(
        main,
        ["best", "--storage", memory_study.storage_url, "--max-memory", "200", "--json"],
    )
    assert best.exit_code == 0, best.output
    assert json.loads(best.stdout)["trial"] == NO_XLA
    zero = runner.invoke(main, ["best", "--storage", memory_study.storage_url, "--max-memory", "0"])
    assert zero.exit_code == 2 and "--max-memory" in zero.output


def test_the_terminal_shows_peak_memory_in_a_memory_study(memory_study: Study) -> None:
    from rich.console import Console

    from autotune.views.terminal import trial_line, trials_table

    rows = load_records(memory_study.storage_url, memory_study.name).trials
    assert "peak 214 MiB" in trial_line(rows[XLA], memory=True)
    assert "peak" not in trial_line(rows[XLA])
    console = Console(width=200, record=True)
    console.print(trials_table(list(rows), "Trials", 200, memory=True))
    table = console.export_text()
    assert "peak memory" in table and "164 MiB" in table and "356 MiB" in table
    status = CliRunner().invoke(main, ["status", "--storage", memory_study.storage_url])
    assert status.exit_code == 0, status.output
    assert "peak memory" in status.output


def test_a_two_objective_status_has_no_memory_column(tmp_path: Path) -> None:
    study = run_study(tmp_path, None, TRIALS[:1])
    status = CliRunner().invoke(main, ["status", "--storage", study.storage_url])
    assert status.exit_code == 0, status.output
    assert "peak memory" not in status.output


def test_parameter_importance_covers_the_memory_objective(memory_study: Study) -> None:
    from autotune.views.report import importance_info

    info = importance_info(load_records(memory_study.storage_url, memory_study.name))
    assert list(info.importances) == ["throughput", "fidelity", "memory"], info.note
    assert sum(info.importances["memory"].values()) == pytest.approx(1.0)
    assert info.trials == 3  # the repeat left out
