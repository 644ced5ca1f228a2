"""Unit tests for autotune.views.report: every figure's data function on a stored fake study, the
drawings' key traces, the self-contained HTML file and the ``autotune report`` command."""

from __future__ import annotations

import dataclasses
import json
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

import autotune
from autotune.cli import error_message, main
from autotune.exceptions import ConfigError
from autotune.recipe import Recipe
from autotune.store.records import StudyRecords, load_records
from autotune.views.report import (
    ABLATION_NOTE,
    BASELINE_POINT,
    COMPONENT_LABELS,
    FIGURE_IDS,
    NOT_PROFILED_NOTE,
    PARETO_TRACE,
    SCALED_NOTE,
    UNPROFILED,
    breakdown_figure,
    breakdown_info,
    curves_figure,
    curves_info,
    header_info,
    history_figure,
    history_info,
    hypervolume_2d,
    importance_figure,
    importance_info,
    pareto_figure,
    pareto_info,
    pareto_table_info,
    parse_point_key,
    point_key,
    render_report,
    trace_uid,
    write_report,
)
from tests.support.demo_study import (
    DOMINATED,
    FAILED,
    INFEASIBLE,
    PARETO,
    PRUNED,
    REPEATS,
    TRIALS,
    DemoStudy,
    build_demo_study,
    params,
)
from tests.support.fake_trials import TOLERANCE, XPROF_INPUT

PACKAGE_PARENT = Path(autotune.__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def report_html(records: StudyRecords) -> str:
    return render_report(records)


def traces(figure) -> dict:
    """A figure's traces by uid."""
    return {trace.uid: trace for trace in figure.data}


def test_point_keys() -> None:
    assert point_key(None) == BASELINE_POINT == "baseline"
    assert point_key(7) == "trial:7"
    assert parse_point_key("trial:7") == 7
    assert parse_point_key("baseline") is None
    for bad in ("trial:", "trial:x", "7", 7, None):
        with pytest.raises(ValueError, match="Received"):
            parse_point_key(bad)


# --------------------------------------------------------------------------------------------
# (a) Pareto front
# --------------------------------------------------------------------------------------------


def test_pareto_info_separates_every_kind_of_trial(records: StudyRecords) -> None:
    info = pareto_info(records)

    assert info.tolerance == TOLERANCE
    assert [p.number for p in info.pareto] == PARETO
    assert [p.number for p in info.dominated] == DOMINATED
    assert [p.number for p in info.infeasible] == INFEASIBLE
    assert [p.number for p in info.pruned] == PRUNED
    assert [(t.number, t.what) for t in info.failed] == [(5, "oom"), (7, "exception")]
    assert [t.number for t in info.failed] == FAILED
    assert [(t.number, t.what) for t in info.not_plotted] == [
        (n, f"repeat of trial {twin}") for n, twin in REPEATS.items()
    ]
    assert info.running == 0


def test_pareto_points_are_feasible_and_non_dominated(records: StudyRecords) -> None:
    info = pareto_info(records)
    scored = [*info.pareto, *info.dominated, *info.infeasible]

    for point in info.pareto:
        assert point.fidelity is not None and point.fidelity <= info.tolerance
        assert not any(
            other.fidelity is not None
            and other.fidelity <= info.tolerance
            and other.throughput >= point.throughput
            and other.fidelity <= point.fidelity
            and (other.throughput, other.fidelity) != (point.throughput, point.fidelity)
            for other in scored
        )
    for point in info.infeasible:
        assert point.fidelity is not None and point.fidelity > info.tolerance


def test_pareto_point_values_and_hover(records: StudyRecords) -> None:
    info = pareto_info(records)
    fastest = info.pareto[0]
    row = records.trial(fastest.number)

    assert info.baseline is not None
    assert info.baseline.key == "baseline" and info.baseline.fidelity == 0.0
    assert info.baseline.throughput == pytest.approx(1000.0)
    assert info.baseline.low == records.baseline.throughput.low
    assert fastest.key == f"trial:{fastest.number}"
    assert (fastest.throughput, fastest.low, fastest.high) == (
        row.throughput.median,
        row.throughput.low,
        row.throughput.high,
    )
    assert fastest.fidelity == row.fidelity
    for line in ("batch_size = 64", "precision = mixed_bfloat16", "jit_compile = True"):
        assert line in fastest.hover
    assert "learning_rate = 0.02" in fastest.hover
    assert "prefetch = autotune" in fastest.hover
    assert info.pruned[0].fidelity is None
    assert "below the baseline" in info.pruned[0].hover


def test_pareto_figure(records: StudyRecords) -> None:
    info = pareto_info(records)

    figure = pareto_figure(info)

    by_uid = traces(figure)
    assert set(by_uid) == {PARETO_TRACE, "baseline", "dominated", "infeasible", "pruned"}
    front = by_uid[PARETO_TRACE]
    assert front.name == "Pareto front"
    assert len(front.x) == len(PARETO)
    assert sorted(front.customdata) == sorted(f"trial:{n}" for n in PARETO)
    assert list(front.error_y.array) == [
        pytest.approx(p.high - p.throughput) for p in sorted(info.pareto, key=lambda p: p.fidelity)
    ]
    assert by_uid["baseline"].marker.symbol == "star"
    assert by_uid["pruned"].xaxis == "x2"  # pruned trials sit in their own panel
    assert by_uid[PARETO_TRACE].xaxis in (None, "x")
    tolerance_lines = [s for s in figure.layout.shapes if s.type == "line"]
    assert [s.x0 for s in tolerance_lines] == [TOLERANCE]
    notes = " ".join(a.text for a in figure.layout.annotations)
    assert "failed trial 5 (oom)" in notes and "failed trial 7 (exception)" in notes
    assert "trial 6 not plotted (repeat of trial 2)" in notes


def test_pareto_figure_with_a_chosen_tolerance_and_nothing_measured(records: StudyRecords):
    chosen = pareto_figure(pareto_info(records), chosen_tolerance=0.7)
    empty = dataclasses.replace(
        records,
        trials=(),
        baseline=dataclasses.replace(records.baseline, throughput=None),
    )

    assert sorted(s.x0 for s in chosen.layout.shapes if s.type == "line") == [0.7, TOLERANCE]
    blank = pareto_figure(pareto_info(empty))
    assert len(traces(blank)[PARETO_TRACE].x) == 0
    assert any("nothing measured yet" in a.text for a in blank.layout.annotations)


# --------------------------------------------------------------------------------------------
# (b) curves
# --------------------------------------------------------------------------------------------


def test_curves_info_of_the_pareto_trials(records: StudyRecords) -> None:
    info = curves_info(records)
    seeds = records.baseline.seed_curves

    assert info.baseline is not None
    assert info.baseline.samples == [p.samples for p in records.baseline.curve]
    assert info.seeds == 3
    assert info.band_samples == [p.samples for p in seeds[0]]
    for index in range(len(info.band_samples)):
        losses = [seeds[s][index].val_loss for s in seeds]
        assert info.band_low[index] == min(losses)
        assert info.band_high[index] == max(losses)
        assert info.band_low[index] <= info.baseline.val_loss[index] <= info.band_high[index]
    assert [line.key for line in info.trials] == [f"trial:{n}" for n in PARETO]
    assert info.trials[0].val_loss == [p.val_loss for p in records.trial(PARETO[0]).curve]
    assert info.note is None


def test_curves_info_of_chosen_trials(records: StudyRecords) -> None:
    pruned = curves_info(records, PRUNED)
    none = curves_info(records, [])

    assert pruned.trials == []
    assert pruned.note is not None and f"trial {PRUNED[0]} has no validation curve" in pruned.note
    assert none.trials == [] and none.note is None and none.baseline is not None


def test_curves_figure(records: StudyRecords) -> None:
    figure = curves_figure(curves_info(records))

    by_uid = traces(figure)
    assert {"seed-band", "seed-band-high", "baseline", *(f"trial-{n}" for n in PARETO)} == set(
        by_uid
    )
    assert by_uid["seed-band"].fill == "tonexty"
    assert figure.layout.yaxis.type == "log"


# --------------------------------------------------------------------------------------------
# (c) step-time breakdown
# --------------------------------------------------------------------------------------------


def test_breakdown_info_without_profiles(records: StudyRecords) -> None:
    info = breakdown_info(records)

    assert [b.key for b in info.bars] == ["baseline", *(f"trial:{n}" for n in PARETO)]
    baseline, fastest = info.bars[0], info.bars[1]
    assert baseline.step_ms == pytest.approx(32.0)
    assert baseline.components == {UNPROFILED: baseline.step_ms}
    assert baseline.compile_seconds == pytest.approx(0.5)
    assert fastest.step_ms == pytest.approx(1e3 * 64 / 6000)
    assert fastest.compile_seconds == pytest.approx(2.5)
    assert not any(b.profiled for b in info.bars)
    assert info.components == [UNPROFILED]
    assert info.note == NOT_PROFILED_NOTE
    assert "profile breakdown not captured" in info.note


def test_breakdown_info_with_a_profile(records: StudyRecords) -> None:
    profile = {"other": 1.0, "input": 4.0, "compute": 5.0}
    profiled = dataclasses.replace(
        records,
        baseline=dataclasses.replace(records.baseline, breakdown=profile),
        trials=tuple(dataclasses.replace(r, breakdown=profile) for r in records.trials),
    )

    info = breakdown_info(profiled)

    assert info.components == ["input", "compute", "other"]
    assert all(b.profiled for b in info.bars)
    assert all(b.source == "ablation" for b in info.bars)
    assert list(info.bars[0].components) == ["input", "compute", "other"]
    assert info.note == ABLATION_NOTE


def test_breakdown_info_of_xprof_profiles(profiled: StudyRecords) -> None:
    info = breakdown_info(profiled)

    assert [b.key for b in info.bars] == ["baseline", *(f"trial:{n}" for n in PARETO)]
    assert info.components == ["input", "host_compute", "device_compute", "compile", "other"]
    assert info.note == SCALED_NOTE
    assert "scaled to the timed step time" in info.note
    for bar in info.bars:
        assert bar.source == "xprof" and bar.profiled and bar.profile_source == "trial"
        assert bar.step_ms is not None
        assert sum(bar.components.values()) == pytest.approx(bar.step_ms)
        assert bar.components["input"] == pytest.approx(XPROF_INPUT * bar.step_ms)
        assert bar.verdict == "highly input-bound 37% (ablation; xprof 3%)"
        assert bar.log_dir is not None
    baseline, fastest = info.bars[0], info.bars[1]
    assert baseline.log_dir is not None and baseline.log_dir.endswith("baseline_seed_0")
    assert fastest.log_dir is not None and fastest.log_dir.endswith(f"trial_{PARETO[0]}")
    assert not baseline.recompiled and fastest.recompiled  # XLA on in the Pareto trials


def test_breakdown_of_pareto_reruns_beside_ablations(reprofiled: StudyRecords) -> None:
    info = breakdown_info(reprofiled, [DOMINATED[0], PARETO[0]])

    baseline, dominated, rerun = info.bars
    assert (baseline.source, dominated.source, rerun.source) == ("ablation", "ablation", "xprof")
    assert rerun.profile_source == "rerun"
    assert dominated.verdict == "highly input-bound 37% (ablation)"
    assert info.components == [
        "input",
        "host_compute",
        "device_compute",
        "compute",
        "compile",
        "other",
    ]
    assert info.note == f"{SCALED_NOTE}; {ABLATION_NOTE}"


def test_breakdown_figure_of_profiles(profiled: StudyRecords, reprofiled: StudyRecords) -> None:
    figure = breakdown_figure(breakdown_info(profiled))
    mixed = breakdown_figure(breakdown_info(reprofiled, [DOMINATED[0], PARETO[0]]))

    by_uid = traces(figure)
    assert "profile breakdown not captured" not in figure.layout.title.text
    assert "scaled to the timed step time" in figure.layout.title.text
    host = by_uid[trace_uid("step-host_compute")]
    assert host.name == COMPONENT_LABELS["host_compute"] == "host compute"
    assert by_uid[trace_uid("step-input")].name == "input pipeline"
    hover = list(host.hovertext)
    assert len(hover) == 1 + len(PARETO)
    assert "input: highly input-bound 37% (ablation; xprof 3%)" in hover[1]
    assert "breakdown: XProf, scaled to the timed step" in hover[1]
    assert f"tensorboard --logdir {breakdown_info(profiled).bars[1].log_dir}" in hover[1]
    assert "XLA RECOMPILED" in hover[1] and "XLA RECOMPILED" not in hover[0]
    mixed_hover = list(traces(mixed)[trace_uid("step-compute")].hovertext)
    assert "breakdown: input ablation" in mixed_hover[1]
    assert "tensorboard" not in mixed_hover[1]
    assert "breakdown: XProf, Pareto re-run, scaled to the timed step" in mixed_hover[2]
    assert list(traces(mixed)[trace_uid("step-compute")].y)[2] is None


def test_breakdown_figure_says_when_nothing_was_profiled(records: StudyRecords) -> None:
    figure = breakdown_figure(breakdown_info(records))

    assert "profile breakdown not captured" in figure.layout.title.text
    by_uid = traces(figure)
    assert list(by_uid[trace_uid(f"step-{UNPROFILED}")].x) == [
        "baseline",
        *(f"trial {n}" for n in PARETO),
    ]
    assert list(by_uid["compile"].y) == pytest.approx([0.5, 2.5, 2.5])
    assert figure.layout.barmode == "stack"


# --------------------------------------------------------------------------------------------
# (d) importance and history
# --------------------------------------------------------------------------------------------


def test_importance_info_per_objective(records: StudyRecords) -> None:
    info = importance_info(records)

    assert info.note is None
    assert info.trials == 4  # complete and scored, the repeat left out
    assert list(info.importances) == ["throughput", "fidelity"]
    for values in info.importances.values():
        assert set(values) == {"precision", "jit_compile", "batch_size"}
        assert sum(values.values()) == pytest.approx(1.0)
        assert all(isinstance(v, float) for v in values.values())
    figure = importance_figure(info)
    assert set(traces(figure)) == {"importance-throughput", "importance-fidelity"}


@pytest.mark.parametrize("keep", [[], [0], [0, 6]])
def test_importance_needs_two_trials_with_differing_params(records, keep) -> None:
    few = dataclasses.replace(records, trials=tuple(records.trial(n) for n in keep))

    info = importance_info(few)

    assert info.importances == {}
    assert info.note is not None and "at least 2 complete trials" in info.note
    assert "at least 2 complete trials" in importance_figure(info).layout.annotations[-1].text


def test_importance_with_identical_params(tmp_path: Path) -> None:
    same = params("mixed_bfloat16", True, 32)
    demo = build_demo_study(tmp_path, trials=[same, params("mixed_bfloat16", True, 64)])
    records = load_records(demo.storage)
    twins = dataclasses.replace(
        records,
        trials=(records.trial(0), dataclasses.replace(records.trial(0), number=5)),
    )

    assert "differing parameters" in (importance_info(twins).note or "")


def test_history_hypervolume(records: StudyRecords) -> None:
    info = history_info(records)

    assert info.numbers == list(range(len(TRIALS)))
    assert info.reference == (0.0, TOLERANCE)
    assert info.baseline_hypervolume == pytest.approx(1000 * TOLERANCE)
    assert all(b >= a for a, b in zip(info.hypervolume, info.hypervolume[1:], strict=False))
    # baseline (1000, 0), trial 0 (2000, 0.9): 1000 * 1.5 + 1000 * 0.6
    assert info.hypervolume[0] == pytest.approx(2100.0, rel=1e-3)  # losses floored: within 0.1%
    # + trial 2 (3000, 0.3) and trial 3 (6000, 1.2); trial 1 is infeasible
    assert info.hypervolume[-1] == pytest.approx(1000 * 1.5 + 2000 * 1.2 + 3000 * 0.3, rel=1e-3)
    assert info.best_throughput[0] == pytest.approx(2000.0)
    assert info.best_throughput[-1] == pytest.approx(6000.0)
    figure = history_figure(info)
    assert list(traces(figure)["hypervolume"].y) == info.hypervolume


def test_hypervolume_2d_simple_cases() -> None:
    assert hypervolume_2d([], (0.0, 1.5)) == 0.0
    assert hypervolume_2d([(10.0, 0.5)], (0.0, 1.5)) == pytest.approx(10.0)
    assert hypervolume_2d([(10.0, 0.5), (5.0, 1.0)], (0.0, 1.5)) == pytest.approx(10.0)
    assert hypervolume_2d([(10.0, 2.0)], (0.0, 1.5)) == 0.0  # outside the reference
    assert hypervolume_2d([(10.0, 1.0), (20.0, 1.25)], (0.0, 1.5)) == pytest.approx(7.5)


def test_hypervolume_2d_agrees_with_optuna() -> None:
    np = pytest.importorskip("numpy")
    try:
        from optuna._hypervolume import compute_hypervolume
    except ImportError:  # a private helper; the simple cases above still hold
        pytest.skip("optuna._hypervolume.compute_hypervolume is not available")
    rng = random.Random(0)
    for _ in range(20):
        points = [(rng.uniform(1, 100), rng.uniform(0, 1.5)) for _ in range(rng.randint(1, 12))]
        losses = np.array([[-speed, fidelity] for speed, fidelity in points])

        expected = compute_hypervolume(losses, np.array([0.0, 1.5]))

        assert hypervolume_2d(points, (0.0, 1.5)) == pytest.approx(expected)


# --------------------------------------------------------------------------------------------
# (e) table and header
# --------------------------------------------------------------------------------------------


def test_pareto_table_rows_hold_loadable_recipes(records: StudyRecords, tmp_path: Path) -> None:
    rows = pareto_table_info(records)

    assert [r.number for r in rows] == PARETO
    first = rows[0]
    assert first.speedup == pytest.approx(6.0)
    assert first.fidelity == pytest.approx(1.2, rel=1e-3)
    assert "6,000 samples/s" in first.throughput
    assert json.loads(first.settings_json) == {
        "config": records.trial(PARETO[0]).config.to_dict(),
        "learning_rate": pytest.approx(0.02),
    }
    data = json.loads(first.recipe_json)
    assert data["config"] == records.trial(PARETO[0]).config.to_dict()
    assert data["learning_rate"] == pytest.approx(0.02)
    assert data["trial"] == PARETO[0]
    path = tmp_path / "recipe.json"
    path.write_text(first.recipe_json)
    assert Recipe.load(path).config == records.trial(PARETO[0]).config


def test_header_info(records: StudyRecords, demo: DemoStudy) -> None:
    header = header_info(records)
    facts = dict(header.facts)

    assert header.title == "autotune report: fake-fake"
    assert facts["study"] == "fake-fake"
    assert facts["experiment"] == f"fake ({demo.experiment_ref})"
    assert facts["fidelity tolerance"].startswith("1.5")
    assert "1,000 samples/s" in facts["baseline"]
    assert "optuna" in facts["versions"] and "python" in facts["versions"]
    assert "logical cores" in facts["hardware"]
    assert facts["trials"] == "5 complete, 2 failed, 1 pruned"
    assert facts["search space"] == "fake"
    assert facts["recommendation"].startswith(f"Trial {PARETO[0]}: bs=64 mixed_bfloat16 xla")


# --------------------------------------------------------------------------------------------
# The HTML file
# --------------------------------------------------------------------------------------------


def test_report_is_self_contained(report_html: str) -> None:
    assert report_html.startswith("<!DOCTYPE html>")
    assert report_html.count("plotly.js v") == 1  # the bundle's banner: embedded once
    assert "Plotly.newPlot" in report_html
    assert not re.search(r"<script[^>]*\ssrc=", report_html)
    assert not re.search(r"<link[^>]*\shref=", report_html)


def test_report_loads_nothing_from_the_network_by_default(report_html: str) -> None:
    # plotly.js itself mentions URLs (map tiles, its CDN) in strings; no element loads one
    assert not re.search(r"<(script|link|img|iframe)\b[^>]*\s(src|href)=", report_html)
    assert len(report_html) > 3_000_000  # plotly.js embedded: about 4.8 MB


def test_the_cdn_report_is_small_and_loads_plotly_js_from_the_cdn(
    records: StudyRecords, report_html: str
) -> None:
    small = render_report(records, plotly_js="cdn")

    scripts = re.findall(r"<script[^>]*\ssrc=\"([^\"]+)\"", small)
    assert len(scripts) == 1 and re.fullmatch(
        r"https://cdn\.plot\.ly/plotly-[\d.]+\.min\.js", scripts[0]
    )
    assert 'integrity="sha256-' in small
    assert "plotly.js v" not in small  # the bundle is not embedded
    assert len(small) < 200_000 < 3_000_000 < len(report_html)
    assert small.count('class="plotly-graph-div"') == 5 and "Plotly.newPlot" in small
    assert small.replace(scripts[0], "").count("<script") == report_html.count("<script")


def test_report_rejects_an_unknown_plotly_js_mode(records: StudyRecords, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        write_report(records, tmp_path / "r.html", plotly_js="offline")

    assert error_message(info.value) == (
        "--plotly-js must be one of ['inline', 'cdn']. Received: 'offline'"
    )
    assert not (tmp_path / "r.html").exists()


def test_report_has_one_div_per_figure(report_html: str) -> None:
    assert report_html.count('class="plotly-graph-div"') == len(FIGURE_IDS) == 5
    for figure_id in FIGURE_IDS:
        assert report_html.count(f'id="{figure_id}"') == 1
    assert report_html.index('id="pareto-figure"') < report_html.index('id="pareto-table"')
    assert f'"uid":"{PARETO_TRACE}"' in report_html


def test_report_header_and_table(report_html: str, records: StudyRecords) -> None:
    for text in ("autotune report: fake-fake", "fidelity tolerance", "1,000 samples/s"):
        assert text in report_html
    for number in PARETO:
        assert f'id="pareto-trial-{number}"' in report_html
    assert "&quot;learning_rate&quot;" in report_html  # the recipe JSON, escaped in a <pre>


def test_report_of_a_study_with_only_a_baseline(tmp_path: Path) -> None:
    demo = build_demo_study(tmp_path, trials=[])

    text = render_report(load_records(demo.storage))

    assert text.count('class="plotly-graph-div"') == 5
    assert "No Pareto trial yet" in text


def test_write_report(records: StudyRecords, tmp_path: Path) -> None:
    path = write_report(records, tmp_path / "r.html")

    assert path.read_text(encoding="utf-8").count('class="plotly-graph-div"') == 5
    with pytest.raises(ConfigError) as info:
        write_report(records, tmp_path / "missing" / "r.html")
    assert info.value.argument == "output"
    assert re.match(r"-o/--output: report file .* cannot be written", error_message(info.value))


# --------------------------------------------------------------------------------------------
# The command
# --------------------------------------------------------------------------------------------


def test_report_command(demo: DemoStudy, tmp_path: Path) -> None:
    output = tmp_path / "report.html"

    result = CliRunner().invoke(main, ["report", "--storage", demo.storage, "-o", str(output)])

    assert result.exit_code == 0, result.output
    assert f"wrote {output}" in result.output
    assert "2 on the Pareto front" in result.output
    assert output.read_text(encoding="utf-8").count('class="plotly-graph-div"') == 5


def test_report_command_plotly_js_cdn(demo: DemoStudy, tmp_path: Path) -> None:
    inline, cdn = tmp_path / "inline.html", tmp_path / "cdn.html"

    for output, extra in ((inline, []), (cdn, ["--plotly-js", "cdn"])):
        result = CliRunner().invoke(
            main, ["report", "--storage", demo.storage, "-o", str(output), *extra]
        )
        assert result.exit_code == 0, result.output

    assert cdn.stat().st_size < 200_000 < 3_000_000 < inline.stat().st_size
    assert '<script charset="utf-8" src="https://cdn.plot.ly/plotly-' in cdn.read_text("utf-8")
    assert not re.search(r"<script[^>]*\ssrc=", inline.read_text("utf-8"))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--plotly-js", "offline"], "'offline' is not one of 'inline', 'cdn'"),
        (["--study", "nope"], "--study 'nope' is not in"),
        (["--storage", "sqlite:///does/not/exist.db"], "--storage"),
    ],
)
def test_report_command_errors(demo: DemoStudy, tmp_path: Path, arguments, message) -> None:
    storage = [] if "--storage" in arguments else ["--storage", demo.storage]

    result = CliRunner().invoke(
        main, ["report", *storage, *arguments, "-o", str(tmp_path / "r.html")]
    )

    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "r.html").exists()


def test_data_functions_work_without_plotly(demo: DemoStudy) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["plotly"] = None  # as if Plotly were not installed
        from autotune.views import report
        from autotune.exceptions import ConfigError
        from autotune.store.records import load_records
        records = load_records({demo.storage!r})
        assert [p.number for p in report.pareto_info(records).pareto] == {PARETO!r}
        report.curves_info(records); report.breakdown_info(records)
        report.history_info(records); report.pareto_table_info(records)
        report.header_info(records)
        try:
            report.pareto_figure(report.pareto_info(records))
        except ConfigError as error:
            assert "pip install 'plotly>=6'" in str(error), error
        else:
            raise AssertionError("drawing without Plotly should fail")
        """
    )

    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PACKAGE_PARENT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert completed.returncode == 0, completed.stdout + completed.stderr
