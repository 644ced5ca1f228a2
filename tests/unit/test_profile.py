"""Unit tests for autotune.analysis.profile: XProf's tools read into a step-time breakdown and a
verdict.

The two fixtures are real TensorBoard profiles (XSpace) that autotune's runner captured from tiny
Keras models on a CPU: ``compute_bound`` (a wide MLP, about 2% of each step waiting for input)
and ``slow_input`` (a pipeline sleeping 2 ms per example, about 97% waiting for input).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autotune.analysis.profile import (
    BREAKDOWN_COMPONENTS,
    CPU_ONLY,
    PROFILE_MODES,
    TOP_OPS,
    OpTime,
    ProfileError,
    ProfileSummary,
    analyse,
    check_mode,
    input_verdict,
    summarize_tools,
    xspace_files,
)
from autotune.exceptions import ConfigError
from autotune.measure import INPUT_BOUND_THRESHOLDS
from tests.support.profiles import SESSION, unpack_profile


@pytest.fixture(scope="module")
def compute_bound(tmp_path_factory: pytest.TempPathFactory) -> ProfileSummary:
    log_dir = tmp_path_factory.mktemp("compute_bound")
    unpack_profile("compute_bound", log_dir)
    return analyse(log_dir)


@pytest.fixture(scope="module")
def slow_input(tmp_path_factory: pytest.TempPathFactory) -> ProfileSummary:
    log_dir = tmp_path_factory.mktemp("slow_input")
    unpack_profile("slow_input", log_dir)
    return analyse(log_dir)


@pytest.fixture(params=["compute_bound", "slow_input"])
def real_profile(
    request: pytest.FixtureRequest, compute_bound: ProfileSummary, slow_input: ProfileSummary
) -> ProfileSummary:
    return {"compute_bound": compute_bound, "slow_input": slow_input}[request.param]


# --------------------------------------------------------------------------------------------
# Hand-made XProf-shaped JSON (DataTables as XProf serves them)
# --------------------------------------------------------------------------------------------

STEP_COLUMNS = (
    "stepnum",
    "deviceComputeTimeMs",
    "deviceToDeviceTimeMs",
    "deviceCollectivesTimeMs",
    "hostComputeTimeMs",
    "kernelLaunchTimeMs",
    "infeedTimeMs",
    "outfeedTimeMs",
    "compileTimeMs",
    "otherTimeMs",
    "tooltip",
    "stepTimeMs",
)


def data_table(
    columns: tuple[str, ...] | list[str],
    rows: list[dict[str, Any]],
    properties: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A DataTable dict with one row per mapping (missing columns are None)."""
    return {
        "cols": [{"id": column, "label": column, "type": "number"} for column in columns],
        "rows": [{"c": [{"v": row.get(column)} for column in columns]} for row in rows],
        "p": properties or {},
    }


def step_row(step_ms: float, **columns: float) -> dict[str, Any]:
    return {"stepnum": "train 1", "tooltip": "", "stepTimeMs": step_ms, **columns}


def pipeline_json(rows: list[dict[str, Any]], **properties: Any) -> list[dict[str, Any]]:
    """``input_pipeline_analyzer`` JSON: an empty first table (as XProf sends), then the steps."""
    props = {"hardware_type": CPU_ONLY, "input_conclusion": "Your program is NOT input-bound."}
    props.update(properties)
    return [{"cols": [], "rows": [], "p": {}}, data_table(STEP_COLUMNS, rows, props)]


def input_pipeline_with_fraction(fraction: float) -> list[dict[str, Any]]:
    """One step of 100 ms of which ``100 * fraction`` ms wait for input."""
    waiting = 100.0 * fraction
    return pipeline_json([step_row(100.0, infeedTimeMs=waiting, hostComputeTimeMs=100 - waiting)])


OP_COLUMNS = ("rank", "host_or_device", "type", "operation", "total_self_time")


def op_stats_json(ops: list[tuple[str, str, float]]) -> list[dict[str, Any]]:
    """``framework_op_stats`` JSON: a first table with IDLE, a last without (as XProf sends)."""
    rows = [
        {"host_or_device": "Host", "type": op_type, "operation": name, "total_self_time": us}
        for op_type, name, us in ops
    ]
    idle = {"host_or_device": "Host", "type": "IDLE", "operation": "IDLE", "total_self_time": 9e6}
    return [data_table(OP_COLUMNS, [idle, *rows]), data_table(OP_COLUMNS, rows)]


def summarize(
    input_pipeline: Any, op_stats: Any = None, overview: Any = None, log_dir: str = "logs/t1"
) -> ProfileSummary:
    return summarize_tools(log_dir, input_pipeline, op_stats or [], overview or [])


# --------------------------------------------------------------------------------------------
# analyse() on real profiles
# --------------------------------------------------------------------------------------------


def test_real_profiles_have_measured_steps(real_profile: ProfileSummary) -> None:
    assert real_profile.steps > 0
    assert real_profile.step_ms > 0


def test_real_profiles_have_every_breakdown_component_non_negative(
    real_profile: ProfileSummary,
) -> None:
    assert set(real_profile.breakdown_ms) == set(BREAKDOWN_COMPONENTS)
    assert all(ms >= 0 for ms in real_profile.breakdown_ms.values())


def test_real_profiles_breakdown_adds_up_to_the_step_time(real_profile: ProfileSummary) -> None:
    total = sum(real_profile.breakdown_ms.values())

    assert total == pytest.approx(real_profile.step_ms, rel=0.05)


def test_compute_bound_profile_is_not_input_bound(compute_bound: ProfileSummary) -> None:
    moderate, _high = INPUT_BOUND_THRESHOLDS

    assert compute_bound.verdict == "not input-bound"
    assert 0 <= compute_bound.input_fraction < moderate
    # a wide MLP on a CPU: the step is host compute
    assert compute_bound.breakdown_ms["host_compute"] > 0.5 * compute_bound.step_ms


def test_slow_input_profile_is_highly_input_bound(slow_input: ProfileSummary) -> None:
    _moderate, high = INPUT_BOUND_THRESHOLDS

    assert slow_input.verdict == "highly input-bound"
    assert high <= slow_input.input_fraction <= 1.0
    assert slow_input.input_fraction > 0.9  # 2 ms of sleep per example dominate the step


def test_real_profiles_input_fraction_is_input_time_over_step_time(
    real_profile: ProfileSummary,
) -> None:
    expected = real_profile.breakdown_ms["input"] / real_profile.step_ms

    assert real_profile.input_fraction == pytest.approx(expected)


def test_real_profiles_carry_xprofs_statement_about_input_boundness(
    real_profile: ProfileSummary,
) -> None:
    assert real_profile.statement
    assert "input-bound" in real_profile.statement


def test_slow_input_statement_says_highly_input_bound(slow_input: ProfileSummary) -> None:
    assert "HIGHLY input-bound" in slow_input.statement


def test_real_profiles_top_ops_are_sorted_by_self_time_with_fractions(
    real_profile: ProfileSummary,
) -> None:
    ops = real_profile.top_ops
    self_ms = [op.self_ms for op in ops]

    assert 0 < len(ops) <= TOP_OPS
    assert self_ms == sorted(self_ms, reverse=True)
    assert all(0.0 <= op.fraction <= 1.0 for op in ops)
    assert sum(op.fraction for op in ops) <= 1.0 + 1e-9
    assert all(op.name and op.type for op in ops)


def test_real_profiles_top_ops_leave_out_idle_time(real_profile: ProfileSummary) -> None:
    assert all(op.type != "IDLE" and op.name != "IDLE" for op in real_profile.top_ops)


def test_slow_input_top_ops_are_the_input_pipeline(slow_input: ProfileSummary) -> None:
    assert slow_input.top_ops[0].type == "Dataset"


def test_compute_bound_top_op_is_a_matmul(compute_bound: ProfileSummary) -> None:
    assert "MatMul" in compute_bound.top_ops[0].type


def test_real_profiles_were_taken_on_a_cpu_without_16_bit_figures(
    real_profile: ProfileSummary,
) -> None:
    assert real_profile.device_type == CPU_ONLY
    assert real_profile.sixteen_bit_fraction is None


def test_analyse_keeps_the_log_dir(tmp_path: Path) -> None:
    unpack_profile("compute_bound", tmp_path)

    assert analyse(tmp_path).log_dir == str(tmp_path)


def test_real_profile_summary_survives_a_json_round_trip(compute_bound: ProfileSummary) -> None:
    restored = ProfileSummary.from_dict(json.loads(json.dumps(compute_bound.to_dict())))

    assert restored == compute_bound


# --------------------------------------------------------------------------------------------
# Finding the profile, and the errors
# --------------------------------------------------------------------------------------------


def test_xspace_files_picks_the_newest_session(tmp_path: Path) -> None:
    older = unpack_profile("slow_input", tmp_path, session="2026_01_01_00_00_00")
    newer = unpack_profile("compute_bound", tmp_path, session="2026_01_02_00_00_00")

    assert xspace_files(tmp_path) == [newer]
    assert older not in xspace_files(tmp_path)


def test_analyse_reads_the_newest_session(tmp_path: Path) -> None:
    unpack_profile("slow_input", tmp_path, session="2026_01_01_00_00_00")
    unpack_profile("compute_bound", tmp_path, session="2026_01_02_00_00_00")

    assert analyse(tmp_path).verdict == "not input-bound"


def test_xspace_files_lists_every_host_of_the_session(tmp_path: Path) -> None:
    session = tmp_path / "plugins" / "profile" / SESSION
    session.mkdir(parents=True)
    for host in ("b", "a"):
        (session / f"{host}.xplane.pb").write_bytes(b"")
    (session / "notes.txt").write_text("not a profile")

    assert xspace_files(tmp_path) == [session / "a.xplane.pb", session / "b.xplane.pb"]


def test_xspace_files_skips_a_newer_session_without_xspace(tmp_path: Path) -> None:
    older = unpack_profile("slow_input", tmp_path, session="2026_01_01_00_00_00")
    (tmp_path / "plugins" / "profile" / "2026_01_02_00_00_00").mkdir()

    assert xspace_files(tmp_path) == [older]


def test_xspace_files_is_empty_without_a_profile_folder(tmp_path: Path) -> None:
    assert xspace_files(tmp_path) == []
    assert xspace_files(tmp_path / "missing") == []


def test_analyse_without_a_profile_raises_naming_the_folder(tmp_path: Path) -> None:
    (tmp_path / "plugins" / "profile" / SESSION).mkdir(parents=True)

    with pytest.raises(ProfileError, match="no profile") as error:
        analyse(tmp_path)

    assert str(tmp_path / "plugins" / "profile") in str(error.value)


def test_analyse_of_an_unreadable_xspace_raises_profile_error(tmp_path: Path) -> None:
    target = tmp_path / "plugins" / "profile" / SESSION / "host.xplane.pb"
    target.parent.mkdir(parents=True)
    target.write_bytes(bytes(range(256)) * 2)

    with pytest.raises(ProfileError):
        analyse(tmp_path)


def test_analyse_of_a_profile_without_steps_asks_for_step_markers(tmp_path: Path) -> None:
    target = tmp_path / "plugins" / "profile" / SESSION / "host.xplane.pb"
    target.parent.mkdir(parents=True)
    target.write_bytes(b"")  # an empty XSpace: XProf reads it, but measures no step

    with pytest.raises(ProfileError, match="step_num=n") as error:
        analyse(tmp_path)

    assert "markers" in str(error.value)


def test_step_table_without_rows_raises_asking_for_step_markers() -> None:
    with pytest.raises(ProfileError, match="No step time measured") as error:
        summarize(pipeline_json([]), log_dir="logs/unmarked")

    message = str(error.value)
    assert "logs/unmarked" in message
    assert "markers" in message
    assert "Trace('train', step_num=n, _r=1)" in message


def test_input_pipeline_without_a_step_table_raises_profile_error() -> None:
    with pytest.raises(ProfileError, match="markers"):
        summarize([{"cols": [], "rows": [], "p": {}}])


def test_rows_without_a_step_time_are_left_out() -> None:
    rows = [step_row(10.0, hostComputeTimeMs=10.0), {"stepnum": "train 2", "stepTimeMs": None}]

    summary = summarize(pipeline_json(rows))

    assert summary.steps == 1
    assert summary.step_ms == 10.0


# --------------------------------------------------------------------------------------------
# summarize_tools on hand-made JSON
# --------------------------------------------------------------------------------------------


def test_other_component_sums_other_launch_device_to_device_collectives_and_outfeed() -> None:
    row = step_row(
        100.0,
        infeedTimeMs=1.0,
        hostComputeTimeMs=2.0,
        deviceComputeTimeMs=3.0,
        compileTimeMs=4.0,
        otherTimeMs=10.0,
        kernelLaunchTimeMs=20.0,
        deviceToDeviceTimeMs=30.0,
        deviceCollectivesTimeMs=0.5,
        outfeedTimeMs=29.5,
    )

    summary = summarize(pipeline_json([row]))

    assert summary.breakdown_ms == {
        "input": 1.0,
        "host_compute": 2.0,
        "device_compute": 3.0,
        "compile": 4.0,
        "other": 90.0,
    }
    assert sum(summary.breakdown_ms.values()) == pytest.approx(summary.step_ms)


def test_breakdown_and_step_time_are_means_per_step() -> None:
    rows = [
        step_row(10.0, infeedTimeMs=1.0, hostComputeTimeMs=9.0),
        step_row(20.0, infeedTimeMs=3.0, hostComputeTimeMs=17.0),
        step_row(30.0, infeedTimeMs=5.0, hostComputeTimeMs=25.0),
    ]

    summary = summarize(pipeline_json(rows))

    assert summary.steps == 3
    assert summary.step_ms == pytest.approx(20.0)
    assert summary.breakdown_ms["input"] == pytest.approx(3.0)
    assert summary.breakdown_ms["host_compute"] == pytest.approx(17.0)
    assert summary.breakdown_ms["other"] == 0.0
    assert summary.input_fraction == pytest.approx(3.0 / 20.0)


def test_missing_component_cells_count_as_zero() -> None:
    summary = summarize(pipeline_json([step_row(5.0, hostComputeTimeMs=5.0)]))

    assert summary.breakdown_ms["input"] == 0.0
    assert summary.breakdown_ms["other"] == 0.0
    assert summary.input_fraction == 0.0
    assert summary.verdict == "not input-bound"


@pytest.mark.parametrize(
    ("fraction", "verdict"),
    [
        (0.0, "not input-bound"),
        (0.049, "not input-bound"),
        (0.05, "moderately input-bound"),
        (0.199, "moderately input-bound"),
        (0.20, "highly input-bound"),
        (0.9, "highly input-bound"),
    ],
)
def test_verdict_thresholds_are_5_and_20_percent(fraction: float, verdict: str) -> None:
    summary = summarize(input_pipeline_with_fraction(fraction))

    assert summary.input_fraction == pytest.approx(fraction)
    assert summary.verdict == verdict


def test_input_fraction_is_capped_at_one() -> None:
    summary = summarize(pipeline_json([step_row(10.0, infeedTimeMs=12.0)]))

    assert summary.input_fraction == 1.0
    assert summary.verdict == "highly input-bound"


def test_zero_step_time_gives_zero_input_fraction() -> None:
    summary = summarize(pipeline_json([step_row(0.0)]))

    assert summary.input_fraction == 0.0


def test_statement_and_device_type_come_from_the_step_table_properties() -> None:
    pipeline = pipeline_json(
        [step_row(10.0)], hardware_type="GPU", input_conclusion="Your program is NOT input-bound."
    )

    summary = summarize(pipeline, log_dir="logs/t7")

    assert summary.device_type == "GPU"
    assert summary.statement == "Your program is NOT input-bound."
    assert summary.log_dir == "logs/t7"


def test_step_table_may_come_alone_rather_than_in_a_list() -> None:
    table = pipeline_json([step_row(10.0, infeedTimeMs=5.0)])[1]

    summary = summarize(table)

    assert summary.input_fraction == pytest.approx(0.5)


def test_sixteen_bit_percent_of_the_overview_is_read_as_a_fraction() -> None:
    overview = [
        {"cols": [], "rows": [], "p": {"host_idle_time_percent": "0.0%"}},
        {"cols": [], "rows": [], "p": {"device_compute_16bit_percent": "42.5%"}},
    ]

    summary = summarize(pipeline_json([step_row(10.0)]), overview=overview)

    assert summary.sixteen_bit_fraction == pytest.approx(0.425)


@pytest.mark.parametrize("value", ["", None, "n/a"])
def test_sixteen_bit_fraction_is_none_without_a_number(value: str | None) -> None:
    overview = [{"cols": [], "rows": [], "p": {"device_compute_16bit_percent": value}}]

    summary = summarize(pipeline_json([step_row(10.0)]), overview=overview)

    assert summary.sixteen_bit_fraction is None


def test_top_ops_come_from_the_last_table_sorted_with_shares_of_all_self_time() -> None:
    ops = op_stats_json([("Add", "add", 1000.0), ("MatMul", "dense/MatMul", 3000.0)])

    summary = summarize(pipeline_json([step_row(10.0)]), op_stats=ops)

    assert summary.top_ops == [
        OpTime("dense/MatMul", "MatMul", "Host", self_ms=3.0, fraction=0.75),
        OpTime("add", "Add", "Host", self_ms=1.0, fraction=0.25),
    ]


def test_top_ops_keep_at_most_top_ops_with_fractions_of_the_whole() -> None:
    ops = op_stats_json([("Op", f"op{i}", 100.0) for i in range(TOP_OPS + 4)])

    summary = summarize(pipeline_json([step_row(10.0)]), op_stats=ops)

    assert len(summary.top_ops) == TOP_OPS
    assert all(op.fraction == pytest.approx(1 / (TOP_OPS + 4)) for op in summary.top_ops)


def test_top_ops_leave_out_idle_even_in_a_single_table() -> None:
    ops = op_stats_json([("MatMul", "dense/MatMul", 3000.0)])[0]  # the table with IDLE

    summary = summarize(pipeline_json([step_row(10.0)]), op_stats=ops)

    assert [op.type for op in summary.top_ops] == ["MatMul"]
    assert summary.top_ops[0].fraction == 1.0


def test_no_op_stats_give_no_top_ops() -> None:
    assert summarize(pipeline_json([step_row(10.0)])).top_ops == []


# --------------------------------------------------------------------------------------------
# ProfileSummary
# --------------------------------------------------------------------------------------------


def a_summary(**changes: Any) -> ProfileSummary:
    values: dict[str, Any] = {
        "log_dir": "logs/t3",
        "steps": 12,
        "step_ms": 40.0,
        "breakdown_ms": {name: 8.0 for name in BREAKDOWN_COMPONENTS},
        "input_fraction": 0.2,
        "verdict": "highly input-bound",
        "statement": "Your program is HIGHLY input-bound because 20.0% ...",
        "top_ops": [
            OpTime("Iterator::Root", "Dataset", "Host", 12.5, 0.5),
            OpTime("dense/MatMul", "MatMul", "Host", 6.25, 0.25),
        ],
        "sixteen_bit_fraction": 0.3,
        "device_type": "GPU",
    }
    values.update(changes)
    return ProfileSummary(**values)


def test_summary_round_trips_through_a_dict_with_top_ops() -> None:
    summary = a_summary().with_capture(3.5, 250.0)

    data = json.loads(json.dumps(summary.to_dict()))

    assert data["top_ops"][0] == {
        "name": "Iterator::Root",
        "type": "Dataset",
        "host_or_device": "Host",
        "self_ms": 12.5,
        "fraction": 0.5,
    }
    assert ProfileSummary.from_dict(data) == summary


def test_summary_from_dict_without_top_ops_has_none() -> None:
    data = a_summary().to_dict()
    del data["top_ops"]

    assert ProfileSummary.from_dict(data).top_ops == []


def test_to_dict_copies_the_breakdown() -> None:
    summary = a_summary()

    summary.to_dict()["breakdown_ms"]["input"] = 99.0

    assert summary.breakdown_ms["input"] == 8.0


def test_with_capture_sets_capture_time_and_throughput_on_a_copy() -> None:
    summary = a_summary()

    captured = summary.with_capture(2.5, 50.0)

    assert captured.capture_seconds == 2.5
    assert captured.profiled_samples_per_second == 50.0
    assert summary.capture_seconds == 0.0
    assert summary.profiled_samples_per_second is None
    assert captured.breakdown_ms == summary.breakdown_ms


def test_slowdown_compares_profiled_with_timed_throughput() -> None:
    summary = a_summary().with_capture(2.0, 50.0)

    assert summary.slowdown(100.0) == pytest.approx(0.5)
    assert summary.slowdown(50.0) == pytest.approx(0.0)


def test_slowdown_is_none_when_not_captured_or_nothing_timed() -> None:
    assert a_summary().slowdown(100.0) is None
    assert a_summary().with_capture(2.0, 50.0).slowdown(0.0) is None


# --------------------------------------------------------------------------------------------
# input_verdict
# --------------------------------------------------------------------------------------------


def stored_profile(device_type: str) -> dict[str, Any]:
    return a_summary(
        device_type=device_type, input_fraction=0.03, verdict="not input-bound"
    ).to_dict()


ABLATION = {"input_fraction": 0.4, "verdict": "highly input-bound"}


def test_on_a_cpu_the_ablation_decides() -> None:
    verdict = input_verdict(stored_profile(CPU_ONLY), ABLATION)

    assert verdict is not None
    assert verdict.source == "ablation"
    assert verdict.verdict == "highly input-bound"
    assert verdict.input_fraction == 0.4
    assert "CPU" in verdict.why


def test_with_an_accelerator_xprof_decides_over_the_ablation() -> None:
    verdict = input_verdict(stored_profile("GPU"), ABLATION)

    assert verdict is not None
    assert verdict.source == "xprof"
    assert verdict.verdict == "not input-bound"
    assert verdict.input_fraction == 0.03
    assert "accelerator" in verdict.why


@pytest.mark.parametrize("device_type", [CPU_ONLY, "GPU"])
def test_a_profile_alone_gives_xprofs_verdict(device_type: str) -> None:
    verdict = input_verdict(stored_profile(device_type), None)

    assert verdict is not None
    assert verdict.source == "xprof"
    assert verdict.verdict == "not input-bound"
    assert verdict.input_fraction == 0.03
    assert "XProf" in verdict.why


def test_an_ablation_alone_gives_the_ablations_verdict() -> None:
    verdict = input_verdict(None, ABLATION)

    assert verdict is not None
    assert verdict.source == "ablation"
    assert verdict.verdict == "highly input-bound"
    assert verdict.input_fraction == 0.4
    assert "no profile" in verdict.why


def test_no_profile_and_no_ablation_give_no_verdict() -> None:
    assert input_verdict(None, None) is None


def test_verdict_to_dict_names_its_source() -> None:
    verdict = input_verdict(None, ABLATION)

    assert verdict is not None
    assert verdict.to_dict() == {
        "verdict": "highly input-bound",
        "input_fraction": 0.4,
        "source": "ablation",
        "why": verdict.why,
    }


# --------------------------------------------------------------------------------------------
# check_mode
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", PROFILE_MODES)
def test_check_mode_accepts_every_profile_mode(mode: str) -> None:
    assert check_mode(mode) == mode


def test_profile_modes_are_all_pareto_and_off() -> None:
    assert PROFILE_MODES == ("all", "pareto", "off")


@pytest.mark.parametrize("mode", ["none", "ALL", "", None, True, 1])
def test_check_mode_rejects_other_values_naming_them(mode: object) -> None:
    with pytest.raises(ConfigError) as error:
        check_mode(mode, source="--profile")

    message = str(error.value)
    assert repr(mode) in message
    assert "--profile" in message
    assert "all, pareto, off" in message


def test_an_empty_ablation_counts_as_none_in_the_reason_too() -> None:
    cpu_profile = {"device_type": "CPU_ONLY", "verdict": "not input-bound", "input_fraction": 0.03}

    verdict = input_verdict(cpu_profile, {})

    assert verdict is not None and verdict.source == "xprof"
    assert "accelerator" not in verdict.why
