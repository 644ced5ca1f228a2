"""Unit tests for autotune.store.records: a stored study (made with a fake runner) read into plain
rows without loading the experiment, Plotly or TensorFlow (the last two checked, in a fresh
process, by test_import_boundaries.py)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import optuna
import pytest

from autotune.cli import error_message
from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.measure import Estimate
from autotune.recipe import Recipe
from autotune.store.log_folders import default_log_root
from autotune.store.records import (
    STEP_BREAKDOWN_COMPONENTS,
    StudyRecords,
    TrialRow,
    breakdown_source,
    load_records,
    merge_profile_rerun,
    pareto_front,
    profile_fields,
    profile_reruns,
    read_records,
    step_breakdown,
    verdict_text,
)
from autotune.store.schema import PROFILE_RERUN_PREFIX
from autotune.store.storage import open_storage
from autotune.study import Study, load_study
from tests.support.demo_study import (
    DOMINATED,
    FAILED,
    INFEASIBLE,
    PARETO,
    PRUNED,
    REPEATS,
    SPACE,
    TRIALS,
    DemoStudy,
    build_demo_study,
    failing_rerun_runner,
    fake_runner,
    write_experiment,
)
from tests.support.fake_trials import (
    ABLATION_INPUT,
    BASE_SPEED,
    FLOOR,
    PROFILER_SLOWDOWN,
    TOLERANCE,
    XPROF_INPUT,
    fake_ablation,
    fake_profile,
    fidelity_of,
)

# --------------------------------------------------------------------------------------------
# The study and its baseline
# --------------------------------------------------------------------------------------------


def test_study_facts(records: StudyRecords, demo: DemoStudy) -> None:
    assert records.study_name == "fake-fake" == demo.name
    assert records.storage == demo.storage
    assert records.tolerance == TOLERANCE
    assert records.experiment == "fake"
    assert records.experiment_reference == demo.experiment_ref
    assert records.metric_names == ("throughput", "fidelity")
    assert records.identity["space"] == SPACE.digest()
    assert records.info["space"]["name"] == "fake"
    assert "cpu" in records.hardware
    assert "optuna" in records.versions
    assert records.mismatches_allowed == ()
    assert records.read_at.endswith("+00:00")
    assert records.counts() == {"complete": 5, "pruned": 1, "failed": 2}


def test_baseline(records: StudyRecords, demo: DemoStudy) -> None:
    baseline = records.baseline

    assert baseline.config == TrialConfig.baseline(32)
    assert baseline.throughput is not None
    assert baseline.throughput.median == pytest.approx(BASE_SPEED)
    assert baseline.throughput.low < BASE_SPEED < baseline.throughput.high
    assert baseline.measured
    assert sorted(baseline.seed_curves) == [0, 1, 2]
    assert baseline.curve == baseline.seed_curves[0]
    assert len(baseline.curve) == 6
    assert baseline.seed_curves[1][0].val_loss > baseline.curve[0].val_loss
    assert baseline.noise_floor is not None
    assert baseline.noise_floor.value == pytest.approx(FLOOR)
    # the seeds' log offsets, a little under them with the losses floored
    assert baseline.noise_floor.pairs == pytest.approx((0.01, 0.01, 0.02), rel=0.02)
    assert baseline.learning_rate == pytest.approx(0.01)
    assert baseline.compile_seconds == pytest.approx(0.5)
    assert baseline.steady_step_seconds == pytest.approx(0.032)
    assert baseline.step_ms == pytest.approx(32.0)
    assert baseline.log_dir == str(default_log_root(demo.storage, "fake-fake"))
    assert Path(baseline.log_dir).parent == demo.folder.resolve() / "autotune_logs"
    assert baseline.breakdown is None


# --------------------------------------------------------------------------------------------
# Trials
# --------------------------------------------------------------------------------------------


def test_one_row_per_trial_in_order(records: StudyRecords) -> None:
    assert [r.number for r in records.trials] == list(range(len(TRIALS)))
    assert [r.config.to_dict() if r.config else None for r in records.trials] == [
        {**TrialConfig(batch_size=32).to_dict(), **params} for params in TRIALS
    ]


def test_complete_rows(records: StudyRecords) -> None:
    for number in [*PARETO, *DOMINATED, *INFEASIBLE]:
        row = records.trial(number)
        assert row.state == "complete"
        assert row.scored
        assert row.config is not None and row.throughput is not None
        assert row.fidelity == pytest.approx(fidelity_of(row.config))
        assert row.feasible is (row.fidelity <= TOLERANCE)
        assert len(row.curve) == 6
        assert row.learning_rate == pytest.approx(0.01 * row.config.batch_size / 32)
        assert row.effective["dtype_policy"] == row.config.precision
        assert row.compile_seconds == pytest.approx(2.5 if row.config.jit_compile else 0.5)
        assert row.step_ms == pytest.approx(1e3 * row.config.batch_size / row.throughput.median)
        assert row.log_dir is not None and row.log_dir.endswith(f"trial_{number}")
        assert row.started is not None and row.completed is not None
        assert row.hardware == {"cpu": "fake cpu"}
        assert row.breakdown is None
        assert row.failure_kind is None and row.reason is None
    assert records.trial(INFEASIBLE[0]).feasible is False


def test_pruned_row_has_throughput_and_reason_but_no_curve(records: StudyRecords) -> None:
    row = records.trial(PRUNED[0])

    assert row.state == "pruned"
    assert row.throughput is not None and row.throughput.median == pytest.approx(10.0)
    assert row.fidelity is None
    assert row.feasible is False  # its speed constraint: far slower than the baseline
    assert row.curve == ()
    assert row.reason is not None and "below the baseline" in row.reason
    assert not row.scored


def test_failed_rows_have_kind_reason_and_log_tail(records: StudyRecords) -> None:
    oom, broken = (records.trial(n) for n in FAILED)

    assert (oom.state, oom.failure_kind) == ("failed", "oom")
    assert oom.reason == "out of memory at batch_size=512"
    assert (broken.state, broken.failure_kind) == ("failed", "exception")
    assert broken.log_tail == "last lines of the log"
    for row in (oom, broken):
        assert row.throughput is None and row.fidelity is None and row.curve == ()
        assert row.compile_seconds is None and row.steady_step_seconds is None


def test_repeat_row_points_to_its_twin(records: StudyRecords) -> None:
    (number, twin), *_ = REPEATS.items()
    row = records.trial(number)

    assert row.duplicate_of == twin
    assert row.state == "complete"
    assert row.fidelity == records.trial(twin).fidelity


def test_params_and_distributions_are_plain(records: StudyRecords) -> None:
    row = records.trial(0)

    assert row.params == {"precision": "float32", "jit_compile": False, "batch_size": 64}
    assert set(row.distributions) == set(row.params)
    assert all(json.loads(text)["name"] for text in row.distributions.values())


def test_unknown_trial(records: StudyRecords) -> None:
    with pytest.raises(KeyError, match="no trial 99"):
        records.trial(99)


# --------------------------------------------------------------------------------------------
# Pareto front, best within a tolerance, recipes: the study's own rules
# --------------------------------------------------------------------------------------------


def test_pareto_matches_the_study(records: StudyRecords, demo: DemoStudy) -> None:
    study = load_study(demo.storage)

    assert [r.number for r in records.pareto()] == PARETO
    assert [r.number for r in records.pareto()] == [r.number for r in study.pareto_front()]


def row(number: int, speed: float | None, fidelity: float | None, **changes: object) -> TrialRow:
    estimate = Estimate(speed, speed, speed, 0.95, 7) if speed is not None else None
    values: dict = {
        "number": number,
        "state": "complete" if fidelity is not None else "pruned",
        "config": TrialConfig(batch_size=32),
        "throughput": estimate,
        "fidelity": fidelity,
        "feasible": None if fidelity is None else fidelity <= 1.5,
    }
    values.update(changes)
    return TrialRow(**values)


def test_pareto_front_rules() -> None:
    rows = [
        row(0, 100.0, 0.5),  # dominated by 1
        row(1, 200.0, 0.5),
        row(2, 300.0, 1.0),
        row(3, 300.0, 1.0),  # ties with 2: both non-dominated
        row(4, 900.0, 2.0),  # infeasible
        row(5, 800.0, None),  # pruned
        row(6, 200.0, 0.5, duplicate_of=1),  # a repeat
        row(7, None, None, state="failed"),
        row(8, 150.0, 0.1),
    ]

    assert [r.number for r in pareto_front(rows)] == [2, 3, 1, 8]
    assert pareto_front([]) == []


@pytest.mark.parametrize("limit", [0.1, 0.5, 1.0, 1.5, 3.0])
def test_fastest_within_matches_study_best(
    records: StudyRecords, demo: DemoStudy, limit: float
) -> None:
    best = load_study(demo.storage).best(max_fidelity=limit)

    found = records.fastest_within(limit)

    assert (found.number if found else None) == best.trial


def test_recipe_of_a_trial_matches_the_study(records: StudyRecords, demo: DemoStudy, tmp_path):
    study_recipe = load_study(demo.storage).best()

    recipe = records.recipe(records.trial(PARETO[0]))

    assert recipe.trial == study_recipe.trial == PARETO[0]
    assert recipe.config == study_recipe.config
    assert recipe.learning_rate == pytest.approx(study_recipe.learning_rate)
    assert recipe.speedup == pytest.approx(study_recipe.speedup)
    assert recipe.fidelity == pytest.approx(study_recipe.fidelity)
    assert recipe.throughput == study_recipe.throughput
    assert recipe.baseline_throughput == study_recipe.baseline_throughput
    assert recipe.experiment == demo.experiment_ref
    assert "within the limit 1.5" in recipe.note
    assert Recipe.load(recipe.save(tmp_path / "r.json")) == recipe


def test_recipe_of_the_baseline_and_of_a_pruned_trial(records: StudyRecords) -> None:
    baseline = records.recipe(None)
    pruned = records.recipe(records.trial(PRUNED[0]))

    assert baseline.is_baseline
    assert baseline.config == TrialConfig.baseline(32)
    assert baseline.learning_rate == pytest.approx(0.01)
    assert baseline.speedup == 1.0 and baseline.fidelity == 0.0
    assert pruned.trial == PRUNED[0]
    assert "not a recommendation" in pruned.note


# --------------------------------------------------------------------------------------------
# Reading: partial studies, errors, no experiment
# --------------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")
def test_a_study_before_its_baseline(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    study = Study(write_experiment(tmp_path), SPACE, storage, runner=fake_runner)
    study.optuna.ask()  # a trial someone is running right now

    records = load_records(storage)

    assert records.baseline.config is None
    assert records.baseline.throughput is None and not records.baseline.measured
    assert records.baseline.seed_curves == {} and records.baseline.noise_floor is None
    assert [(r.number, r.state, r.config) for r in records.trials] == [(0, "running", None)]
    assert records.pareto() == []
    assert records.fastest_within(10.0) is None
    with pytest.raises(ValueError, match="no baseline"):
        records.recipe(None)


def test_reading_does_not_load_the_experiment(tmp_path: Path) -> None:
    demo = build_demo_study(tmp_path, trials=TRIALS[:1])
    Path(demo.experiment_ref.rsplit(":", 1)[0]).unlink()

    records = load_records(demo.storage, demo.name)

    assert [r.number for r in records.trials] == [0]


def test_missing_database_names_storage(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'nothing.db'}"

    with pytest.raises(ConfigError) as info:
        load_records(url)
    assert re.search(r"--storage: database file .* does not exist", error_message(info.value))


def test_unknown_study_names_study(demo: DemoStudy) -> None:
    with pytest.raises(ConfigError) as info:
        load_records(demo.storage, "nope")
    assert re.search(r"--study 'nope' is not in .*fake-fake", error_message(info.value))


def test_several_studies_need_a_name(tmp_path: Path) -> None:
    demo = build_demo_study(tmp_path, trials=TRIALS[:1])
    Study(demo.experiment_ref, SPACE, demo.storage, "other", runner=fake_runner)

    with pytest.raises(ConfigError) as info:
        load_records(demo.storage)
    assert "--study is needed" in error_message(info.value)
    assert load_records(demo.storage, "other").trials == ()


def test_a_study_autotune_did_not_make(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'plain.db'}"
    optuna.create_study(storage=open_storage(url), study_name="plain")

    with pytest.raises(ConfigError, match=r"'plain' .* was not made by autotune"):
        load_records(url)


def test_read_records_reuses_an_open_storage(demo: DemoStudy) -> None:
    storage = open_storage(demo.storage, must_exist=True)

    first = read_records(storage, demo.storage)
    second = read_records(storage, demo.storage, demo.name)

    assert [dataclasses.replace(r) for r in first.trials] == list(second.trials)


def test_the_baseline_dominates_every_trial_not_faster_than_it() -> None:
    from autotune.measure import Estimate
    from autotune.store.records import TrialRow, pareto_front

    def row(number: int, rate: float, fidelity: float) -> TrialRow:
        return TrialRow(
            number=number,
            state="complete",
            config=TrialConfig(batch_size=32),
            throughput=Estimate(rate, rate, rate, 0.97, 7),
            fidelity=fidelity,
            feasible=True,
        )

    slower_but_faithful, faster = row(0, 900.0, 0.1), row(1, 1500.0, 1.2)

    assert [r.number for r in pareto_front([slower_but_faithful, faster])] == [1, 0]
    assert [r.number for r in pareto_front([slower_but_faithful, faster], 1000.0)] == [1]


def test_step_breakdown_comes_from_the_input_ablation() -> None:
    from autotune.measure import Estimate, InputAblation
    from autotune.store.records import step_breakdown

    def estimate(median: float) -> Estimate:
        return Estimate(median, median, median, 0.97, 7)

    ablation = InputAblation.of(estimate(500.0), estimate(1000.0))
    config = TrialConfig(batch_size=50)

    assert step_breakdown({"input_ablation": ablation.to_dict()}, config) == pytest.approx(
        {"input": 50.0, "compute": 50.0}
    )
    assert step_breakdown({}, config) is None


# --------------------------------------------------------------------------------------------
# Profiles: the XProf breakdown scaled to the timed step, verdicts, Pareto re-runs
# --------------------------------------------------------------------------------------------


def estimate(median: float) -> Estimate:
    return Estimate(median, median * 0.99, median * 1.01, 0.97, 7)


def xprof_dict(input_ms: float = 10.0, device_type: str = "CPU_ONLY", **changes: object) -> dict:
    """A stored profile of a 50 ms profiled step: input, 30 ms host, 10 ms other."""
    other = 50.0 - input_ms - 30.0
    data: dict = {
        "log_dir": "/logs/trial_7",
        "steps": 10,
        "step_ms": 50.0,
        "breakdown_ms": {
            "input": input_ms,
            "host_compute": 30.0,
            "device_compute": 0.0,
            "compile": 0.0,
            "other": other,
        },
        "input_fraction": input_ms / 50.0,
        "verdict": "highly input-bound" if input_ms >= 10 else "not input-bound",
        "statement": "XProf says so.",
        "top_ops": [],
        "sixteen_bit_fraction": None,
        "device_type": device_type,
        "capture_seconds": 3.0,
        "profiled_samples_per_second": 1000.0,
    }
    data.update(changes)
    return data


ABLATION = fake_ablation(estimate(2000.0), 0.5).to_dict()


def test_step_breakdown_scales_xprof_to_the_timed_step() -> None:
    config = TrialConfig(batch_size=50)  # 2000 samples/s: 25 ms per timed step
    result = {"profile": xprof_dict(), "throughput": estimate(2000.0).to_dict()}

    breakdown = step_breakdown(result, config)

    assert breakdown == pytest.approx(
        {"input": 5.0, "host_compute": 15.0, "device_compute": 0.0, "compile": 0.0, "other": 5.0}
    )
    assert list(breakdown or {}) == [k for k in STEP_BREAKDOWN_COMPONENTS if k != "compute"]
    assert breakdown_source(breakdown) == "xprof"


def test_step_breakdown_prefers_xprof_and_falls_back_to_the_ablation() -> None:
    config = TrialConfig(batch_size=50)
    both = {"profile": xprof_dict(), "input_ablation": ABLATION}
    empty = {"profile": xprof_dict(breakdown_ms={}), "input_ablation": ABLATION}

    unscaled = step_breakdown(both, config)  # no throughput stored: as profiled
    from_ablation = step_breakdown(empty, config)

    assert unscaled is not None and unscaled["input"] == pytest.approx(10.0)
    assert sum(unscaled.values()) == pytest.approx(50.0)
    assert from_ablation == pytest.approx({"input": 12.5, "compute": 12.5})
    assert breakdown_source(from_ablation) == "ablation"
    assert breakdown_source(None) is None
    assert step_breakdown({"profile": None, "input_ablation": None}, config) is None


def test_verdict_on_a_cpu_is_the_ablation_with_xprof_beside_it() -> None:
    config = TrialConfig(batch_size=50)
    result = {"profile": xprof_dict(input_ms=1.0), "input_ablation": ABLATION}

    fields = profile_fields(result, config)

    assert fields["verdict"]["source"] == "ablation"
    assert fields["verdict"]["input_fraction"] == pytest.approx(0.5)
    assert verdict_text(fields["verdict"], fields["profile"], fields["input_ablation"]) == (
        "highly input-bound 50% (ablation; xprof 2%)"
    )
    assert fields["profile_source"] == "trial"
    assert fields["profile_log_dir"] == "/logs/trial_7"


def test_verdict_with_an_accelerator_is_xprofs_with_the_ablation_beside_it() -> None:
    result = {"profile": xprof_dict(input_ms=1.0, device_type="GPU"), "input_ablation": ABLATION}

    fields = profile_fields(result, TrialConfig(batch_size=50))

    assert fields["verdict"]["source"] == "xprof"
    assert verdict_text(fields["verdict"], fields["profile"], fields["input_ablation"]) == (
        "not input-bound 2% (xprof; ablation 50%)"
    )


def test_verdict_from_one_source_alone_and_from_none() -> None:
    alone = profile_fields({"input_ablation": ABLATION}, TrialConfig(batch_size=50))
    nothing = profile_fields({}, TrialConfig(batch_size=50))

    assert verdict_text(alone["verdict"], alone["profile"], alone["input_ablation"]) == (
        "highly input-bound 50% (ablation)"
    )
    assert alone["profile_source"] is None and alone["profile_log_dir"] is None
    assert nothing == {
        "breakdown": None,
        "verdict": None,
        "profile": None,
        "input_ablation": None,
        "profile_source": None,
        "profile_log_dir": None,
        "profile_error": None,
        "recompilation": None,
    }
    assert verdict_text(None, None, None) == ""


RECOMPILED = {"flagged": True, "message": "XLA recompiled"}
RERUN = {
    "profile": xprof_dict(log_dir="/logs/rerun_7"),
    "profile_error": None,
    "input_ablation": ABLATION,
    "recompilation": RECOMPILED,
    "log_dir": "/logs/rerun_7",
}


def test_a_trial_without_a_profile_takes_its_reruns() -> None:
    own = {"profile": None, "profile_error": None, "input_ablation": None, "throughput": {}}

    merged, source = merge_profile_rerun(own, RERUN)

    assert source == "rerun"
    assert merged["profile"]["log_dir"] == "/logs/rerun_7"
    assert merged["input_ablation"] == ABLATION
    assert merged["recompilation"] == RECOMPILED
    assert merged["throughput"] == {}
    assert own["profile"] is None  # not changed in place


def test_a_trials_own_profile_and_ablation_win_over_its_rerun() -> None:
    ablation = fake_ablation(estimate(2000.0), 0.1).to_dict()
    profiled = {"profile": xprof_dict(log_dir="/logs/own"), "input_ablation": ablation}
    unprofiled = {"profile": None, "input_ablation": ablation}

    kept, kept_source = merge_profile_rerun(profiled, RERUN)
    taken, taken_source = merge_profile_rerun(unprofiled, RERUN)

    assert (kept_source, kept["profile"]["log_dir"]) == ("trial", "/logs/own")
    assert (taken_source, taken["profile"]["log_dir"]) == ("rerun", "/logs/rerun_7")
    assert taken["input_ablation"] == ablation
    assert merge_profile_rerun(unprofiled, None) == (unprofiled, None)


def test_a_failed_rerun_gives_its_error() -> None:
    failed = {"log_dir": "/logs/trial_7", "profile_error": "the profiling re-run failed (oom)"}

    fields = profile_fields({"input_ablation": ABLATION}, TrialConfig(batch_size=50), failed)

    assert fields["profile_source"] is None and fields["profile"] is None
    assert fields["profile_error"] == "the profiling re-run failed (oom)"
    assert fields["profile_log_dir"] is None
    assert fields["verdict"]["source"] == "ablation"


def test_profile_reruns_reads_only_the_prefixed_attributes() -> None:
    attrs = {
        f"{PROFILE_RERUN_PREFIX}3": RERUN,
        f"{PROFILE_RERUN_PREFIX}12": {"profile_error": "x"},
        f"{PROFILE_RERUN_PREFIX}x": RERUN,
        "autotune_baseline": {},
    }

    assert PROFILE_RERUN_PREFIX == "autotune_profile:"
    assert profile_reruns(attrs) == {3: RERUN, 12: {"profile_error": "x"}}


def test_profiled_rows(profiled: StudyRecords) -> None:
    for number in [*PARETO, *DOMINATED, *INFEASIBLE]:
        row = profiled.trial(number)
        assert row.config is not None and row.step_ms is not None
        assert row.profile_source == "trial"
        assert row.profile is not None and row.profile["device_type"] == "CPU_ONLY"
        assert row.profile["step_ms"] == pytest.approx(PROFILER_SLOWDOWN * row.step_ms)
        assert row.breakdown is not None
        assert sum(row.breakdown.values()) == pytest.approx(row.step_ms)
        assert row.breakdown["input"] == pytest.approx(XPROF_INPUT * row.step_ms)
        assert row.breakdown["host_compute"] == pytest.approx(0.9 * 0.97 * row.step_ms)
        assert row.verdict is not None and row.verdict["source"] == "ablation"
        assert row.verdict["input_fraction"] == pytest.approx(ABLATION_INPUT)
        assert row.verdict_text == "highly input-bound 37% (ablation; xprof 3%)"
        assert row.profile_log_dir == row.log_dir
        assert row.recompiled is row.config.jit_compile
        assert row.recompilation is not None
        assert ("XLA recompiled" in row.recompilation["message"]) is row.config.jit_compile
    baseline = profiled.baseline
    assert baseline.profile_source == "trial" and baseline.profile is not None
    assert baseline.breakdown is not None
    assert sum(baseline.breakdown.values()) == pytest.approx(32.0)
    assert baseline.verdict_text == "highly input-bound 37% (ablation; xprof 3%)"
    assert baseline.profile_log_dir == str(Path(baseline.log_dir or "") / "baseline_seed_0")


def test_pareto_reruns_are_merged_into_their_trials(reprofiled: StudyRecords) -> None:
    for number in PARETO:
        row = reprofiled.trial(number)
        assert row.profile_source == "rerun"
        assert row.profile_log_dir == row.log_dir
        assert row.verdict_text == "highly input-bound 37% (ablation; xprof 3%)"
        assert breakdown_source(row.breakdown) == "xprof"
        assert sum((row.breakdown or {}).values()) == pytest.approx(row.step_ms)
    (repeat, twin), *_ = REPEATS.items()
    assert reprofiled.trial(repeat).profile_source == "rerun"
    assert reprofiled.trial(repeat).profile == reprofiled.trial(twin).profile
    for number in DOMINATED + INFEASIBLE:
        row = reprofiled.trial(number)
        assert row.profile_source is None and row.profile is None and row.profile_log_dir is None
        assert row.verdict_text == "highly input-bound 37% (ablation)"
        assert breakdown_source(row.breakdown) == "ablation"
    assert reprofiled.baseline.profile is None


def test_a_failed_pareto_rerun_is_read_as_a_profile_error(tmp_path: Path) -> None:
    demo = build_demo_study(tmp_path, runner=failing_rerun_runner, profile_mode="pareto")

    records = load_records(demo.storage)

    for number in PARETO:
        row = records.trial(number)
        assert row.profile_source is None and row.profile is None
        assert row.profile_error == (
            "the profiling re-run failed (oom): out of memory while profiling"
        )
        assert row.verdict_text == "highly input-bound 37% (ablation)"
    assert records.trial(DOMINATED[0]).profile_error is None


def test_unprofiled_rows_have_no_profile_facts(records: StudyRecords) -> None:
    for row in records.trials:
        assert (row.verdict, row.profile, row.profile_source, row.recompilation) == (
            None,
            None,
            None,
            None,
        )
        assert row.verdict_text == "" and not row.recompiled


def test_fake_profile_is_consistent() -> None:
    config = TrialConfig(batch_size=32)
    profile = fake_profile(config, "/logs")

    assert sum(profile.breakdown_ms.values()) == pytest.approx(profile.step_ms)
    assert profile.slowdown(BASE_SPEED) == pytest.approx(1 - 1 / PROFILER_SLOWDOWN)
