"""Unit tests for autotune.study with a fake runner: the baseline and its noise floor, trial
scoring, pruning, OOM prediction, duplicates, failures, identity checks, resume and results.

Nothing is trained: the fake runner makes a RunResult from the configuration, so these tests
neither import TensorFlow nor start processes (except one process that exits at once, for a
dead worker's pid). That importing the study imports no TensorFlow is checked in
test_import_boundaries.py.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import optuna
import psutil
import pytest
from optuna.study import StudyDirection
from optuna.trial import TrialState
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy.engine import Engine

import autotune
import autotune.study.recovery
from autotune.cli import error_message
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ConfigError, TrialFailure
from autotune.fidelity import MIN_NOISE_FLOOR
from autotune.space import IntRange, SearchSpace, choices
from autotune.store.log_folders import default_log_root
from autotune.store.records import TrialRow
from autotune.store.result import RunResult
from autotune.store.schema import (
    BASELINE_KEY,
    CONFIRMATION_KEY,
    CURVE_FROM_ATTR,
    IDENTITY_KEY,
    INFO_KEY,
    MISMATCHES_KEY,
    OBJECTIVES,
)
from autotune.store.storage import open_storage
from autotune.study import Study, StudyError, load_study
from autotune.views.terminal import trial_line
from tests.support.fake_trials import (
    BASE_BATCH,
    BASE_SPEED,
    EXPERIMENT_SOURCE,
    FLOOR,
    SPACE,
    TOLERANCE,
    fake_result,
    fidelity_of,
    speed_of,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)


# --------------------------------------------------------------------------------------------
# The fake world: throughput and loss curves as functions of the configuration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    reference: str
    config: TrialConfig
    settings: RunSettings
    log_dir: Path | None


class FakeRunner:
    """A TrialRunner that records its calls.

    Args:
        oom_at: raise TrialFailure('oom') for batch sizes >= this.
        fail: predicate (config, settings) -> raise TrialFailure('exception').
        make: replaces fake_result.
    """

    def __init__(self, oom_at=None, fail=None, make=fake_result):
        self.calls: list[Call] = []
        self.oom_at = oom_at
        self.fail = fail
        self.make = make

    def __call__(self, reference, config, settings, log_dir):
        self.calls.append(Call(reference, config, settings, log_dir))
        if self.fail is not None and self.fail(config, settings):
            raise TrialFailure("exception", "the fake runner failed", "last lines of the log")
        if self.oom_at is not None and config.batch_size >= self.oom_at:
            raise TrialFailure("oom", f"out of memory at batch_size={config.batch_size}")
        return self.make(config, settings)

    @property
    def trial_calls(self) -> list[Call]:
        """Calls for trials (the baseline runs have no stop threshold)."""
        return [c for c in self.calls if c.settings.stop_below_samples_per_second is not None]


def is_trial(config, settings):
    return settings.stop_below_samples_per_second is not None


def params(precision="float32", jit_compile=False, batch_size=32):
    return {"precision": precision, "jit_compile": jit_compile, "batch_size": batch_size}


# Configurations with known scores (noise floor 0.04/3, tolerance 1.5):
A = params("float32", False, 64)  # 2000 samples/s, fidelity 0.9: dominated by C
B = params("float32", False, 256)  # 8000 samples/s, fidelity 2.7: infeasible
C = params("mixed_bfloat16", True, 32)  # 3000 samples/s, fidelity 0.3
D = params("mixed_bfloat16", True, 64)  # 6000 samples/s, fidelity 1.2
SLOW = params("mixed_float16", False, 32)  # 10 samples/s: stopped early


def enqueue(study: Study, *configs: dict) -> None:
    for config in configs:
        study.optuna.enqueue_trial(config)


def records_by_number(study: Study) -> dict[int, TrialRow]:
    return {r.number: r for r in study.records()}


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


# --------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def experiment_ref(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("experiments").resolve() / "fake_experiment.py"
    path.write_text(EXPERIMENT_SOURCE, encoding="utf-8")
    return f"{path}:fake"


@pytest.fixture(scope="session")
def empty_database(tmp_path_factory) -> Path:
    """An SQLite file with Optuna's tables and no study: copying it is much faster than letting
    every test create the schema."""
    path = tmp_path_factory.mktemp("template") / "empty.db"
    open_storage(f"sqlite:///{path}")
    return path


def _fast_sqlite(dbapi_connection, connection_record):
    """No fsync on commit: these databases live for one test, durability does not matter."""
    if not isinstance(dbapi_connection, sqlite3.Connection):
        return
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=OFF")
    cursor.close()


@pytest.fixture(autouse=True)
def fast_sqlite():
    sqlalchemy_event.listen(Engine, "connect", _fast_sqlite)
    yield
    sqlalchemy_event.remove(Engine, "connect", _fast_sqlite)


@pytest.fixture
def storage(tmp_path, empty_database) -> str:
    shutil.copy(empty_database, tmp_path / "s.db")
    return f"sqlite:///{tmp_path}/s.db"


@pytest.fixture
def make_study(storage, experiment_ref):
    """``make_study(runner=None, space=SPACE, **kwargs)``: a Study on this test's storage."""

    def make(runner=None, space=SPACE, **kwargs):
        kwargs.setdefault("seed", 0)
        kwargs.setdefault("start", "random")  # the structured start has tests of its own
        return Study(experiment_ref, space, storage, runner=runner or FakeRunner(), **kwargs)

    return make


# --------------------------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------------------------


def test_new_study_stores_objectives_identity_and_info(make_study, experiment_ref, storage):
    study = make_study()

    assert study.name == "fake-fake"
    assert study.reference == experiment_ref
    assert study.optuna.metric_names == ["throughput", "fidelity"]
    assert list(OBJECTIVES) == ["throughput", "fidelity"]
    assert study.optuna.directions == [StudyDirection.MAXIMIZE, StudyDirection.MINIMIZE]
    identity = study.optuna.user_attrs[IDENTITY_KEY]
    assert identity["experiment"] == "fake"
    assert identity["space"] == SPACE.digest()
    assert identity["tolerance"] == TOLERANCE
    assert identity["objectives"] == ["throughput:maximize", "fidelity:minimize"]
    info = study.optuna.user_attrs[INFO_KEY]
    assert info["experiment_reference"] == experiment_ref
    assert info["space"] == SPACE.to_dict()
    assert info["space_source"] == "<python>"
    assert study.log_root == default_log_root(storage, "fake-fake")
    assert study.log_root.parent == Path(storage[len("sqlite:///") :]).resolve().parent / (
        "autotune_logs"
    )
    assert study.optuna.trials == []


def test_settings_take_the_space_measure_overrides(make_study):
    space = SearchSpace("m", SPACE.parameters, {"windows": 9})

    study = make_study(space=space, settings=RunSettings(checkpoints=3, windows=4))

    assert study.settings == RunSettings(checkpoints=3, windows=9)


def test_study_accepts_an_experiment_object(storage, experiment_ref):
    from autotune.bundled import load_experiment

    experiment = load_experiment(experiment_ref)

    study = Study(experiment, SPACE, storage, runner=FakeRunner())

    assert study.experiment is experiment
    assert study.reference == experiment_ref
    assert study.name == "fake-fake"


@pytest.mark.parametrize("tolerance", [0, -1.0, True, "1.5", None, math.nan, math.inf])
def test_bad_tolerance(make_study, storage, tolerance):
    with pytest.raises(ConfigError) as info:
        make_study(tolerance=tolerance)

    assert info.value.argument == "tolerance"
    assert error_message(info.value) == (
        f"--tolerance must be a finite number > 0. Received: {tolerance!r}"
    )
    assert optuna.get_all_study_summaries(open_storage(storage)) == []


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, True])
def test_bad_seed_is_refused_before_the_study_is_stored(make_study, storage, seed):
    with pytest.raises(ConfigError) as info:
        make_study(seed=seed)

    assert error_message(info.value) == (
        f"--seed must be an integer in [0, 4294967295]. Received: {seed!r}"
    )
    assert optuna.get_all_study_summaries(open_storage(storage)) == []


def test_the_largest_seed_resumes_without_overflowing_numpy(make_study):
    make_study(seed=2**32 - 1).ensure_baseline()
    make_study(seed=2**32 - 1).optimize(n_trials=1)  # offset by the stored trials, wrapped


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("x" * 513, "--study must be at most 512 characters (Optuna's limit). Received 513"),
        ("", "--study must be a non-empty string. Received: ''"),
        ("  ", "--study must be a non-empty string"),
        ("a\nb", "--study must not contain control characters. Received: 'a\\nb'"),
    ],
)
def test_bad_study_name_is_refused_before_the_study_is_stored(make_study, storage, name, expected):
    with pytest.raises(ConfigError) as info:
        make_study(study_name=name)

    assert error_message(info.value).startswith(expected)
    assert len(error_message(info.value)) < 200
    assert optuna.get_all_study_summaries(open_storage(storage)) == []


def test_a_512_character_study_name_works(make_study):
    assert make_study(study_name="x" * 512).name == "x" * 512


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"n_trials": -1}, "n_trials must be an integer >= 0"),
        ({"n_trials": 1.5}, "n_trials must be an integer >= 0"),
        ({}, "give n_trials or timeout"),
    ],
)
def test_bad_optimize_arguments(make_study, arguments, message):
    runner = FakeRunner()
    study = make_study(runner)

    with pytest.raises(ConfigError, match=message):
        study.optimize(**arguments)

    assert runner.calls == []


# --------------------------------------------------------------------------------------------
# Baseline
# --------------------------------------------------------------------------------------------


def test_baseline_runs_three_seeds_before_any_trial(make_study, experiment_ref):
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, A, C)

    study.optimize(n_trials=2)

    baseline = TrialConfig.baseline(BASE_BATCH)
    first = runner.calls[:3]
    assert [c.config for c in first] == [baseline] * 3
    assert [c.settings.seed for c in first] == [0, 1, 2]
    assert [c.settings.measure_throughput for c in first] == [True, False, False]
    assert all(c.settings.curve for c in first)
    assert all(c.settings.stop_below_samples_per_second is None for c in first)
    assert [c.log_dir for c in first] == [
        study.log_root / f"baseline_seed_{seed}" for seed in (0, 1, 2)
    ]
    assert all(c.reference == experiment_ref for c in runner.calls)
    assert len(runner.calls) == 5
    assert len(study.optuna.trials) == 2  # the baseline is not an Optuna trial


def test_baseline_is_stored_with_its_noise_floor(make_study):
    study = make_study()
    assert study.baseline() == {"runs": {}}

    study.optimize(n_trials=0)

    baseline = study.baseline()
    assert baseline == study.optuna.user_attrs[BASELINE_KEY]
    assert baseline["config"] == TrialConfig.baseline(BASE_BATCH).to_dict()
    assert set(baseline["runs"]) == {"0", "1", "2"}
    main = baseline["runs"]["0"]
    assert main["throughput"]["median"] == pytest.approx(BASE_SPEED)
    assert main["throughput"]["low"] == pytest.approx(BASE_SPEED * 0.997)
    assert baseline["runs"]["1"]["throughput"] is None
    assert baseline["runs"]["2"]["throughput"] is None
    assert len(baseline["runs"]["2"]["curve"]) == RunSettings().checkpoints
    floor = baseline["noise_floor"]
    assert floor["pairs"] == pytest.approx([0.01, 0.01, 0.02], rel=0.02)  # losses floored
    assert floor["loss_floor"] > 0
    assert floor["measured"] == pytest.approx(FLOOR)
    assert floor["value"] == pytest.approx(FLOOR)
    assert study.optuna.trials == []


def test_ensure_baseline_reports_each_run_and_is_idempotent(make_study):
    runner = FakeRunner()
    study = make_study(runner)
    seen = []

    study.ensure_baseline(on_run=lambda seed, result: seen.append((seed, result.config)))
    study.ensure_baseline(on_run=lambda seed, result: seen.append((seed, result.config)))

    baseline = TrialConfig.baseline(BASE_BATCH)
    assert seen == [(0, baseline), (1, baseline), (2, baseline)]
    assert len(runner.calls) == 3


def test_identical_seed_curves_clamp_the_noise_floor(make_study):
    def same_curve_for_every_seed(config, settings):
        return fake_result(config, settings.replace(seed=0))

    study = make_study(FakeRunner(make=same_curve_for_every_seed))

    study.ensure_baseline()

    floor = study.baseline()["noise_floor"]
    assert floor["measured"] == 0.0
    assert floor["value"] == MIN_NOISE_FLOOR


def test_failing_baseline_raises_study_error(make_study):
    runner = FakeRunner(fail=lambda config, settings: True)
    study = make_study(runner)

    with pytest.raises(StudyError) as info:
        study.optimize(n_trials=3)

    message = str(info.value)
    assert "the baseline (seed 0) failed (exception): the fake runner failed" in message
    assert "needs a working baseline" in message
    assert str(study.log_root / "baseline_seed_0" / "trial.log") in message
    assert "last lines of the log" in message
    assert isinstance(info.value.__cause__, TrialFailure)
    assert len(runner.calls) == 1
    assert study.optuna.trials == []


def test_baseline_resumes_from_the_seed_that_failed(make_study):
    flaky = FakeRunner(fail=lambda config, settings: settings.seed == 1)
    with pytest.raises(StudyError, match=r"the baseline \(seed 1\) failed"):
        make_study(flaky).optimize(n_trials=1)

    runner = FakeRunner()
    study = make_study(runner)
    assert set(study.baseline()["runs"]) == {"0"}
    assert "noise_floor" not in study.baseline()

    study.optimize(n_trials=0)

    assert [c.settings.seed for c in runner.calls] == [1, 2]
    assert "noise_floor" in study.baseline()


# --------------------------------------------------------------------------------------------
# Trials: counting, scoring, constraint
# --------------------------------------------------------------------------------------------


def test_optimize_ends_with_exactly_n_finished_trials(make_study):
    runner = FakeRunner(oom_at=512)
    study = make_study(runner)

    study.optimize(n_trials=12)

    records = study.records()
    assert study.finished_count() == 12
    assert len(records) == 12  # the baseline runs are not trials
    assert all(r.counts for r in records)
    assert all(r.config is not None for r in records)
    assert {r.state for r in records} <= {"complete", "pruned", "failed"}
    assert "complete" in {r.state for r in records}
    measured = [
        r
        for r in records
        if r.duplicate_of is None and not (r.reason or "").startswith("predicted out of memory")
    ]
    assert [c.config for c in runner.trial_calls] == [r.config for r in measured]


def test_trial_settings_use_seed_zero_and_the_baseline_low_as_stop_threshold(make_study):
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, A)

    study.optimize(n_trials=1)

    call = runner.calls[-1]
    baseline_low = study.baseline()["runs"]["0"]["throughput"]["low"]
    assert call.config == TrialConfig(**A)
    assert call.settings.seed == 0
    assert call.settings.measure_throughput is True
    assert call.settings.curve is True
    assert call.settings.stop_below_samples_per_second == baseline_low
    assert call.log_dir == study.log_root / "trial_0"
    record = study.records()[0]
    assert record.user_attrs["log_dir"] == str(study.log_root / "trial_0")
    assert record.user_attrs["worker"]["host"] == socket.gethostname()


def test_completed_trials_have_values_fidelity_and_constraint(make_study):
    study = make_study()
    enqueue(study, A, B, C, D)

    study.optimize(n_trials=4)

    trials = study.optuna.trials
    records = study.records()
    for trial, record, config in zip(trials, records, (A, B, C, D), strict=True):
        expected_config = TrialConfig(**config)
        fidelity = fidelity_of(expected_config)
        assert trial.state == TrialState.COMPLETE
        assert record.state == "complete"
        assert record.config == expected_config
        assert trial.values[0] == pytest.approx(speed_of(expected_config))
        assert trial.values[1] == pytest.approx(fidelity)
        assert record.throughput.median == pytest.approx(speed_of(expected_config))
        assert record.fidelity == pytest.approx(fidelity)
        # by name, and again as the list optuna-dashboard reads (autotune.study.optuna_tools)
        violation = pytest.approx(fidelity - TOLERANCE)
        assert trial.constraints == {"fidelity": violation, "0": violation}
        assert record.feasible is (fidelity <= TOLERANCE)
        assert "config" not in record.user_attrs["result"]
        assert record.user_attrs["result"]["effective"]["dtype_policy"] == config["precision"]
        assert record.reason is None
        assert record.failure_kind is None
        assert record.duplicate_of is None
    assert [r.feasible for r in records] == [True, False, True, True]


def test_pareto_front_excludes_infeasible_trials_fastest_first(make_study):
    study = make_study()
    enqueue(study, A, B, C, D)
    study.optimize(n_trials=4)

    front = study.pareto_front()

    # B is the fastest but infeasible; A is dominated by C; D and C trade speed for fidelity.
    assert [r.number for r in front] == [3, 2]
    assert all(r.feasible for r in front)
    assert 1 not in [t.number for t in study.optuna.best_trials]


def test_tolerance_decides_feasibility(make_study):
    study = make_study(tolerance=3.0)
    enqueue(study, A, B, C, D)
    study.optimize(n_trials=4)

    assert [r.number for r in study.pareto_front()] == [1, 3, 2]
    assert study.best().trial == 1


def test_listeners_get_every_finished_trial(make_study):
    study = make_study(FakeRunner(oom_at=256))
    seen: list[TrialRow] = []
    study.add_listener(seen.append)
    enqueue(study, A, SLOW, B)

    study.optimize(n_trials=3)

    assert [(r.number, r.state) for r in seen] == [(0, "complete"), (1, "pruned"), (2, "failed")]


def test_unscorable_curve_fails_the_trial(make_study):
    def no_curve_for_trials(config, settings):
        result = fake_result(config, settings)
        if settings.stop_below_samples_per_second is None:
            return result
        return RunResult(config, result.effective, result.throughput, curve=[])

    study = make_study(FakeRunner(make=no_curve_for_trials))
    enqueue(study, A)

    study.optimize(n_trials=1)

    record = study.records()[0]
    assert record.state == "failed"
    assert record.failure_kind == "exception"
    assert "fidelity cannot be computed: trial curve is empty" in record.reason


def test_trial_without_throughput_is_pruned(make_study):
    def unmeasured(config, settings):
        if is_trial(config, settings):
            settings = settings.replace(measure_throughput=False)
        return fake_result(config, settings)

    study = make_study(FakeRunner(make=unmeasured))
    enqueue(study, A)

    study.optimize(n_trials=1)

    record = study.records()[0]
    assert record.state == "pruned"
    assert record.reason == "throughput was not measured"


# --------------------------------------------------------------------------------------------
# Pruning: slow configurations and predicted OOM
# --------------------------------------------------------------------------------------------


def test_slow_configuration_is_pruned_against_the_baseline(make_study):
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, SLOW)

    study.optimize(n_trials=1)

    trial = study.optuna.trials[0]
    record = study.records()[0]
    assert trial.state == TrialState.PRUNED
    assert trial.values is None
    assert record.state == "pruned"
    assert "baseline" in record.reason
    assert "confidently below the baseline's 997 samples/s" in record.reason
    assert record.throughput.median == pytest.approx(10.0)
    assert record.fidelity is None
    # Ranked by the sampler as what it is: a violated speed constraint, the baseline's lower
    # bound over its samples/s, minus one (both formats: the named one and the list).
    low = study.baseline()["runs"]["0"]["throughput"]["low"]
    assert trial.constraints == pytest.approx({"speed": low / 10.0 - 1, "0": low / 10.0 - 1})
    assert record.feasible is False
    assert record.counts
    assert runner.trial_calls[0].config == TrialConfig(**SLOW)
    assert study.finished_count() == 1


def test_oom_fails_and_larger_batches_are_predicted_out_of_memory(make_study):
    runner = FakeRunner(oom_at=256)
    study = make_study(runner)
    oom_256 = params("float32", False, 256)
    larger = params("float32", False, 512)
    other_jit = params("float32", True, 512)
    smaller = params("float32", False, 128)
    other_precision = params("mixed_bfloat16", False, 256)
    enqueue(study, oom_256, larger, other_jit, smaller, other_precision, oom_256)

    study.optimize(n_trials=6)

    records = study.records()
    assert [r.state for r in records] == [
        "failed",
        "pruned",
        "failed",
        "complete",
        "failed",
        "pruned",
    ]
    assert records[0].failure_kind == "oom"
    assert records[0].reason == "out of memory at batch_size=256"
    assert records[0].user_attrs["failure"]["kind"] == "oom"
    assert records[1].reason == (
        "predicted out of memory: trial 0 ran out of memory at batch_size=256 with the same "
        "precision and jit_compile"
    )
    assert records[1].failure_kind is None
    # Ranked by the sampler as infeasible, not as a tie of pruned trials.
    assert study.optuna.trials[1].constraints == {"memory": 1.0, "0": 1.0}
    assert records[1].feasible is False
    assert records[5].reason.startswith("predicted out of memory: trial 0")
    assert records[2].failure_kind == "oom"
    assert records[4].failure_kind == "oom"
    # The runner never saw the predicted ones.
    assert [c.config for c in runner.trial_calls] == [
        TrialConfig(**oom_256),
        TrialConfig(**other_jit),
        TrialConfig(**smaller),
        TrialConfig(**other_precision),
    ]
    assert study.finished_count() == 6


# --------------------------------------------------------------------------------------------
# Duplicates
# --------------------------------------------------------------------------------------------


def test_duplicate_configuration_is_not_measured_again(make_study):
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, D, D)

    study.optimize(n_trials=2)

    first, second = study.optuna.trials
    records = study.records()
    assert [c.config for c in runner.trial_calls] == [TrialConfig(**D)]
    assert second.state == TrialState.COMPLETE
    assert records[1].duplicate_of == 0
    assert second.values == first.values
    assert second.constraints == first.constraints
    for key in ("throughput", "fidelity", "result"):
        assert second.user_attrs[key] == first.user_attrs[key]
    assert [r.number for r in study.pareto_front()] == [0]
    assert study.best().trial == 0
    assert study.finished_count() == 2


def test_duplicate_of_a_pruned_configuration_is_pruned_without_running(make_study):
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, SLOW, SLOW)

    study.optimize(n_trials=2)

    records = study.records()
    assert len(runner.trial_calls) == 1
    assert records[1].state == "pruned"
    assert records[1].duplicate_of == 0
    assert records[1].reason == f"same configuration as trial 0: {records[0].reason}"
    first, second = study.optuna.trials
    assert second.constraints == first.constraints and first.constraints["speed"] > 0


PIPELINE_SPACE = SearchSpace(
    "pipeline",
    {
        "batch_size": choices(32, 64),
        "prefetch": choices("autotune", 2),
        "num_parallel_calls": choices("autotune", 1),
        "shuffle_buffer": choices(1024, 256),
        "steps_per_execution": choices(1, 8),
    },
)


def pipeline_params(batch_size=64, prefetch="autotune", parallel="autotune", shuffle=1024, steps=1):
    return {
        "batch_size": batch_size,
        "prefetch": prefetch,
        "num_parallel_calls": parallel,
        "shuffle_buffer": shuffle,
        "steps_per_execution": steps,
    }


def test_a_pipeline_only_twin_reuses_the_curve_instead_of_training_it(make_study):
    runner = FakeRunner()
    study = make_study(runner, space=PIPELINE_SPACE)
    first, twin = pipeline_params(), pipeline_params(prefetch=2, parallel=1)
    steps = pipeline_params(steps=8)  # the curve trains one step per call whatever this is
    enqueue(study, first, twin, steps)

    study.optimize(n_trials=3)

    assert [c.settings.curve for c in runner.trial_calls] == [True, False, False]
    assert study.records()[2].user_attrs[CURVE_FROM_ATTR] == "trial 0"
    records = study.records()
    assert records[1].duplicate_of is None  # measured: its own throughput
    assert records[1].fidelity == pytest.approx(records[0].fidelity)
    assert records[1].fidelity_symmetric == pytest.approx(records[0].fidelity_symmetric)
    assert records[1].curve == records[0].curve
    assert records[1].user_attrs[CURVE_FROM_ATTR] == "trial 0"
    assert "curve of trial 0: same but for the pipeline" in trial_line(records[1])
    assert CURVE_FROM_ATTR not in records[0].user_attrs


def test_a_pipeline_only_twin_of_the_baseline_scores_its_curve(make_study):
    runner = FakeRunner()
    study = make_study(runner, space=PIPELINE_SPACE)
    enqueue(study, pipeline_params(batch_size=BASE_BATCH, parallel=1))

    study.optimize(n_trials=1)

    (record,) = study.records()
    assert [c.settings.curve for c in runner.trial_calls] == [False]
    assert record.fidelity == 0.0  # the baseline's own seed-0 curve
    assert record.user_attrs[CURVE_FROM_ATTR] == "the baseline (seed 0)"


def test_a_different_shuffle_buffer_or_batch_size_trains_its_own_curve(make_study):
    runner = FakeRunner()
    study = make_study(runner, space=PIPELINE_SPACE)
    enqueue(
        study, pipeline_params(), pipeline_params(shuffle=256), pipeline_params(32, shuffle=256)
    )

    study.optimize(n_trials=3)

    assert [c.settings.curve for c in runner.trial_calls] == [True, True, True]
    assert all(CURVE_FROM_ATTR not in r.user_attrs for r in study.records())


def test_failed_configuration_is_tried_again(make_study):
    runner = FakeRunner(fail=lambda config, settings: is_trial(config, settings))
    study = make_study(runner)
    enqueue(study, A, A)

    study.optimize(n_trials=2)

    assert len(runner.trial_calls) == 2
    assert [r.duplicate_of for r in study.records()] == [None, None]


def test_small_space_stops_when_every_configuration_was_measured(make_study):
    runner = FakeRunner()
    space = SearchSpace("two", {"shuffle_buffer": choices(256, 4096)})
    study = make_study(runner, space=space)

    study.optimize(n_trials=10)

    measured = {r.config.shuffle_buffer for r in study.records()}
    assert measured == {256, 4096}
    assert study.finished_count() < 10
    assert len(runner.trial_calls) == 2


# --------------------------------------------------------------------------------------------
# Failures
# --------------------------------------------------------------------------------------------


def test_consecutive_failures_stop_the_study(make_study):
    runner = FakeRunner(fail=is_trial)
    study = make_study(runner, max_consecutive_failures=3)

    with pytest.raises(StudyError) as info:
        study.optimize(n_trials=10)

    message = str(info.value)
    assert "3 trials in a row failed" in message
    assert "last: trial 2, exception: the fake runner failed" in message
    assert "autotune trial" in message
    records = study.records()
    assert [r.state for r in records] == ["failed"] * 3
    assert [r.failure_kind for r in records] == ["exception"] * 3
    assert records[0].user_attrs["failure"]["log_tail"] == "last lines of the log"


def test_failures_not_in_a_row_do_not_stop_the_study(make_study):
    def batch_64_fails(config, settings):
        return is_trial(config, settings) and config.batch_size == 64

    study = make_study(FakeRunner(fail=batch_64_fails), max_consecutive_failures=2)
    enqueue(
        study,
        params("float32", False, 64),
        C,
        params("float32", True, 64),
        params("float32", False, 128),
        params("mixed_bfloat16", False, 64),
    )

    study.optimize(n_trials=5)

    assert [r.state for r in study.records()] == [
        "failed",
        "complete",
        "failed",
        "complete",
        "failed",
    ]


# --------------------------------------------------------------------------------------------
# Resume
# --------------------------------------------------------------------------------------------


def test_optimize_again_with_the_same_n_runs_nothing(make_study):
    runner = FakeRunner(oom_at=512)
    study = make_study(runner)
    study.optimize(n_trials=6)
    calls = len(runner.calls)
    values = {t.number: t.values for t in study.optuna.trials}

    study.optimize(n_trials=6)
    make_study(runner).optimize(n_trials=6)

    assert len(runner.calls) == calls
    assert len(study.optuna.trials) == 6
    assert {t.number: t.values for t in study.optuna.trials} == values


def test_optimize_with_a_larger_n_completes_only_the_remainder(make_study):
    runner = FakeRunner(oom_at=512)
    make_study(runner).optimize(n_trials=5)
    first_calls = len(runner.trial_calls)
    values = {t.number: t.values for t in make_study(runner).optuna.trials}

    study = make_study(runner)
    study.optimize(n_trials=9)

    assert study.finished_count() == 9
    assert len(study.optuna.trials) == 9
    assert len(runner.trial_calls) - first_calls <= 4
    # the baseline's seeds, then trials only (anchors, throughput-only baseline runs, aside)
    runs = [c for c in runner.calls if c.settings.curve or c.settings.stop_below_samples_per_second]
    assert [c.settings.stop_below_samples_per_second for c in runs[:3]] == [None] * 3
    assert all(c.settings.stop_below_samples_per_second for c in runs[3:])  # no rerun
    assert {t.number: t.values for t in study.optuna.trials if t.number < 5} == values


def make_orphan(study: Study, config_params: dict, worker: dict) -> int:
    """A RUNNING trial with ``config_params``, as a worker killed mid-trial leaves it."""
    study.optuna.enqueue_trial(config_params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # heartbeats are meant for optimize()
        trial = study.optuna.ask()
    config = study.space.sample(trial, BASE_BATCH)
    trial.set_user_attr("config", config.to_dict())
    trial.set_user_attr("failure", None)
    trial.set_user_attr("worker", worker)
    return trial.number


def test_resume_fails_an_orphan_and_retries_it_once(make_study):
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, A, B, C)
    study.optimize(n_trials=3)
    values = {t.number: t.values for t in study.optuna.trials}
    orphan_params = params("mixed_bfloat16", False, 128)
    dead = {"host": socket.gethostname(), "pid": dead_pid(), "started": 0}
    orphan_number = make_orphan(study, orphan_params, dead)
    calls_before = len(runner.trial_calls)

    resumed = make_study(runner)
    resumed.optimize(n_trials=5)

    records = records_by_number(resumed)
    orphan = records[orphan_number]
    assert orphan.state == "failed"
    assert orphan.failure_kind == "interrupted"
    assert not orphan.counts
    retries = [
        t for t in resumed.optuna.trials if t.system_attrs.get("failed_trial") == orphan_number
    ]
    assert len(retries) == 1
    retry = retries[0]
    assert retry.params == orphan_params
    assert retry.state == TrialState.COMPLETE
    assert records[retry.number].config == TrialConfig(**orphan_params)
    assert records[retry.number].failure_kind is None
    assert records[retry.number].user_attrs["worker"]["pid"] == psutil.Process().pid
    new_configs = [c.config for c in runner.trial_calls[calls_before:]]
    assert new_configs[0] == TrialConfig(**orphan_params)
    assert new_configs.count(TrialConfig(**orphan_params)) == 1
    assert {n: resumed.optuna.trials[n].values for n in values} == values
    assert resumed.finished_count() == 5
    assert len(resumed.optuna.trials) == 6  # 5 counted + the interrupted one

    # A second resume does not retry it again.
    again = make_study(runner)
    again.optimize(n_trials=5)
    assert len(again.optuna.trials) == 6


def test_resume_leaves_running_trials_of_live_or_remote_workers(make_study):
    runner = FakeRunner()
    study = make_study(runner)
    me = psutil.Process()
    live = make_orphan(
        study,
        A,
        {"host": socket.gethostname(), "pid": me.pid, "started": me.create_time()},
    )
    remote = make_orphan(study, C, {"host": "another-host.invalid", "pid": 1, "started": 0})

    # Their trials may still finish: they count towards the target, so the study runs only two
    # more of four, then waits for them (until its timeout here).
    study.optimize(n_trials=4, timeout=2)

    records = records_by_number(study)
    assert records[live].state == "running"
    assert records[remote].state == "running"
    assert not records[live].counts
    assert study.finished_count() == 2
    assert len(records) == 4


def test_reused_pid_with_another_start_time_counts_as_dead(make_study):
    study = make_study()
    me = psutil.Process()
    # This process's pid, but a start time that is not this process's: the worker is gone.
    orphan = make_orphan(
        study, A, {"host": socket.gethostname(), "pid": me.pid, "started": me.create_time() - 60}
    )

    study.optimize(n_trials=1)

    assert records_by_number(study)[orphan].failure_kind == "interrupted"


# Optuna's own stale-trial path (optuna/storages/_heartbeat.py, fail_stale_trials) sets a stale
# trial to FAIL and then calls the storage's callback with the finished trial, which Optuna no
# longer lets anyone change.
def test_heartbeat_stale_callback_queues_a_retry_of_the_failed_trial(make_study):
    study = make_study()
    number = make_orphan(study, A, {"host": "another-host.invalid", "pid": 1, "started": 0})
    trial_id = study.optuna.trials[number]._trial_id
    callback = study._storage.get_heartbeat_stale_trial_callback()

    # What fail_stale_trials does with a stale trial:
    assert study._storage.set_trial_state_values(trial_id, state=TrialState.FAIL)
    callback(study.optuna, copy.deepcopy(study._storage.get_trial(trial_id)))

    assert not records_by_number(study)[number].counts  # its retry counts instead
    waiting = study.optuna.get_trials(states=(TrialState.WAITING,))
    assert [t.params for t in waiting] == [A]


# Ctrl-C (KeyboardInterrupt) during a trial: Optuna records the trial as FAIL and re-raises; the
# trial has no autotune failure record, so it is interrupted, retried and not counted.
def test_trial_interrupted_by_ctrl_c_is_retried_on_resume(make_study):
    study = make_study(FakeRunner(make=interrupt_trials))
    enqueue(study, D)
    with pytest.raises(KeyboardInterrupt):
        study.optimize(n_trials=1)

    interrupted = study.records()[0]
    assert interrupted.state == "failed"
    assert interrupted.failure_kind == "interrupted"
    assert not interrupted.counts
    assert study.finished_count() == 0

    runner = FakeRunner()
    resumed = make_study(runner)
    resumed.optimize(n_trials=1)

    assert [c.config for c in runner.trial_calls] == [TrialConfig(**D)]
    retry = resumed.optuna.trials[1]
    assert retry.system_attrs["failed_trial"] == 0
    assert retry.state == TrialState.COMPLETE
    assert resumed.finished_count() == 1
    assert len(resumed.optuna.trials) == 2


def interrupt_trials(config, settings):
    if is_trial(config, settings):
        raise KeyboardInterrupt
    return fake_result(config, settings)


def test_a_retry_interrupted_again_is_not_retried(make_study):
    study = make_study(FakeRunner(make=interrupt_trials))
    enqueue(study, D)
    with pytest.raises(KeyboardInterrupt):
        study.optimize(n_trials=1)
    with pytest.raises(KeyboardInterrupt):
        make_study(FakeRunner(make=interrupt_trials)).optimize(n_trials=1)  # the retry

    runner = FakeRunner()
    resumed = make_study(runner)
    enqueue(resumed, C)
    resumed.optimize(n_trials=1)

    records = resumed.records()
    assert [(r.state, r.failure_kind) for r in records] == [
        ("failed", "interrupted"),
        ("failed", "interrupted"),
        ("complete", None),
    ]
    assert resumed.optuna.trials[1].system_attrs["retry_history"] == [0]
    assert [c.config for c in runner.trial_calls] == [TrialConfig(**C)]
    assert resumed.finished_count() == 1


def test_a_config_error_from_the_runner_is_recorded_and_stops_the_study(make_study):
    def broken_experiment(config, settings):
        if is_trial(config, settings):
            raise ConfigError("the experiment's model() returned None")
        return fake_result(config, settings)

    study = make_study(FakeRunner(make=broken_experiment))
    enqueue(study, A, C)

    with pytest.raises(ConfigError, match="returned None"):
        study.optimize(n_trials=2)

    records = study.records()
    assert [r.state for r in records] == ["failed", "waiting"]  # C never ran
    assert records[0].failure_kind == "exception"
    assert records[0].reason == "the experiment's model() returned None"
    assert records[0].counts


# --------------------------------------------------------------------------------------------
# Identity
# --------------------------------------------------------------------------------------------


def test_reopening_with_the_same_settings_is_fine(make_study):
    make_study()

    study = make_study(seed=7)

    assert MISMATCHES_KEY not in study.optuna.user_attrs


def test_reopening_with_another_tolerance_is_refused(make_study, storage):
    make_study()

    with pytest.raises(ConfigError) as info:
        make_study(tolerance=2.0)

    message = error_message(info.value)
    assert f"study 'fake-fake' in {storage!r} was made with different settings" in message
    assert "tolerance: stored 1.5, now 2.0" in message
    assert "--allow-mismatch" in message
    assert "allow_mismatch" in str(info.value) and "--" not in str(info.value)
    assert "space:" not in message


def test_reopening_with_another_space_is_refused(make_study):
    make_study()
    bigger = SearchSpace("fake", {**SPACE.parameters, "shuffle_buffer": choices(64, 1024)})

    with pytest.raises(ConfigError) as info:
        make_study(space=bigger)

    message = str(info.value)
    assert f"space: stored {SPACE.digest()!r}, now {bigger.digest()!r}" in message
    assert "tolerance" not in message


def test_reopening_with_another_space_measure_is_refused(make_study):
    make_study()

    with pytest.raises(ConfigError, match="space: stored"):
        make_study(space=SearchSpace("fake", SPACE.parameters, {"windows": 3}))


def test_allow_mismatch_opens_and_records_the_differences(make_study):
    first = make_study()
    enqueue(first, A)
    first.optimize(n_trials=1)

    study = make_study(tolerance=2.0, allow_mismatch=True)

    assert study.tolerance == 2.0
    allowed = study.optuna.user_attrs[MISMATCHES_KEY]
    assert len(allowed) == 1
    assert allowed[0]["differences"] == ["tolerance: stored 1.5, now 2.0"]
    assert study.optuna.user_attrs[IDENTITY_KEY]["tolerance"] == 1.5  # the record stays
    assert study.finished_count() == 1


# --------------------------------------------------------------------------------------------
# Results: best() and load_study()
# --------------------------------------------------------------------------------------------


def test_best_is_the_fastest_feasible_trial_faster_than_the_baseline(
    make_study, storage, experiment_ref
):
    study = make_study()
    enqueue(study, A, B, C, D)
    study.optimize(n_trials=4)

    recipe = study.best()

    assert recipe.trial == 3
    assert not recipe.is_baseline
    assert recipe.config == TrialConfig(**D)
    assert recipe.speedup == pytest.approx(6.0)
    assert recipe.speedup > 1
    assert recipe.fidelity == pytest.approx(fidelity_of(TrialConfig(**D)))
    assert recipe.tolerance == TOLERANCE
    assert recipe.throughput["median"] == pytest.approx(6000.0)
    assert recipe.baseline_throughput["median"] == pytest.approx(BASE_SPEED)
    assert recipe.learning_rate == pytest.approx(0.02)
    assert recipe.effective["dtype_policy"] == "mixed_bfloat16"
    assert recipe.hardware == {"cpu": "fake cpu"}
    assert recipe.versions == {"keras": "0.0-fake"}
    assert recipe.experiment == experiment_ref
    assert recipe.study == "fake-fake"
    assert recipe.storage == storage
    assert "6.00x the baseline's throughput with fidelity 1.20" in recipe.note
    assert recipe.created


def test_best_with_a_fidelity_limit(make_study):
    study = make_study()
    enqueue(study, A, B, C, D)
    study.optimize(n_trials=4)

    assert study.best(max_fidelity=1.0).trial == 2
    assert study.best(max_fidelity=3.0).trial == 1
    assert "limit 3" in study.best(max_fidelity=3.0).note


def test_best_is_the_baseline_when_every_trial_is_slower(make_study):
    space = SearchSpace("same", {"shuffle_buffer": choices(256, 4096)})
    study = make_study(space=space)
    study.optimize(n_trials=2)
    assert [r.state for r in study.records()] == ["complete", "complete"]

    recipe = study.best()

    assert recipe.is_baseline
    assert recipe.trial is None
    assert recipe.config == TrialConfig.baseline(BASE_BATCH)
    assert recipe.speedup == 1.0
    assert recipe.fidelity == 0.0
    assert recipe.throughput == study.baseline()["runs"]["0"]["throughput"]
    assert recipe.learning_rate == pytest.approx(0.01)
    assert "no trial was faster than the baseline" in recipe.note
    assert "(2 within the limit)" in recipe.note


def test_best_is_the_baseline_when_every_trial_is_pruned(make_study):
    space = SearchSpace("slow", {"precision": choices("mixed_float16")})
    study = make_study(space=space)
    study.optimize(n_trials=1)

    recipe = study.best()

    assert recipe.is_baseline
    assert "no trial was faster than the baseline with fidelity <= 1.5 (0 within" in recipe.note


def test_best_is_the_baseline_when_the_only_faster_trial_is_infeasible(make_study):
    study = make_study()
    enqueue(study, B)
    study.optimize(n_trials=1)

    assert study.best().is_baseline
    assert study.pareto_front() == []
    assert study.best(max_fidelity=3.0).trial == 0


def test_load_study_reopens_the_only_study(make_study, storage, experiment_ref):
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, A, B, C, D)
    study.optimize(n_trials=4)
    calls = len(runner.calls)

    loaded = load_study(storage, runner=runner)

    assert loaded.name == study.name
    assert loaded.reference == experiment_ref
    assert loaded.tolerance == study.tolerance
    assert loaded.space.digest() == SPACE.digest()
    assert loaded.space.parameters == SPACE.parameters
    assert [r.number for r in loaded.pareto_front()] == [3, 2]
    assert loaded.best().trial == 3
    assert loaded.best().speedup == pytest.approx(6.0)
    assert loaded.finished_count() == 4
    assert MISMATCHES_KEY not in loaded.optuna.user_attrs
    loaded.optimize(n_trials=4)
    assert len(runner.calls) == calls


def test_load_study_keeps_a_stored_tolerance(make_study, storage):
    make_study(tolerance=3.0).optimize(n_trials=0)

    assert load_study(storage).tolerance == 3.0


def test_load_study_by_name_among_several(storage, experiment_ref):
    Study(experiment_ref, SPACE, storage, "one", runner=FakeRunner())
    Study(experiment_ref, SPACE, storage, "two", runner=FakeRunner(), tolerance=2.0)

    assert load_study(storage, "two").tolerance == 2.0
    with pytest.raises(ConfigError) as info:
        load_study(storage)
    assert "--study is needed" in error_message(info.value)
    assert "'one'" in str(info.value) and "'two'" in str(info.value)


def test_load_study_with_an_unknown_name_lists_the_names(make_study, storage):
    make_study()

    with pytest.raises(ConfigError) as info:
        load_study(storage, "nope")

    message = error_message(info.value)
    assert f"--study 'nope' is not in {storage!r}" in message
    assert "'fake-fake'" in message


def test_load_study_of_a_missing_database(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_study(f"sqlite:///{tmp_path}/absent.db")


def test_load_study_of_a_study_autotune_did_not_make(storage):
    optuna.create_study(storage=storage, study_name="plain")

    with pytest.raises(ConfigError) as info:
        load_study(storage)
    assert info.value.argument == "study_name"
    assert re.search(r"--study 'plain' .* was not made by autotune", error_message(info.value))


def test_load_study_of_a_toml_space(tmp_path, storage, experiment_ref):
    path = tmp_path / "mine.toml"
    path.write_text(
        'name = "mine"\n[parameters]\nbatch_size = { low = 32, high = 128, multiple_of = 16 }\n'
        "[measure]\nwindows = 6\n"
    )
    study = Study(experiment_ref, path, storage, runner=FakeRunner(), seed=0)
    study.optimize(n_trials=2)

    loaded = load_study(storage, runner=FakeRunner())

    assert loaded.space.source == str(path)
    assert loaded.space.parameters == {"batch_size": IntRange(32, 128, 16)}
    assert loaded.settings.windows == 6
    assert loaded.space.digest() == study.space.digest()


# --------------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------------


def test_the_same_seed_draws_the_same_configurations(tmp_path, empty_database, experiment_ref):
    drawn = []
    for name in ("a", "b"):
        shutil.copy(empty_database, tmp_path / f"{name}.db")
        study = Study(
            experiment_ref, SPACE, f"sqlite:///{tmp_path}/{name}.db", runner=FakeRunner(), seed=0
        )
        study.optimize(n_trials=7)
        drawn.append([r.config for r in study.records()])

    assert drawn[0] == drawn[1]


def test_different_measurement_settings_are_refused(make_study):
    make_study()
    with pytest.raises(ConfigError, match="measurement"):
        make_study(settings=RunSettings(windows=3))


def test_a_running_trial_that_never_recorded_its_worker_is_failed_and_retried(
    make_study, monkeypatch
):
    study = make_study()
    study.optuna.enqueue_trial(A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        orphan = study.optuna.ask()  # created, then the worker died before its first line
    monkeypatch.setattr(autotune.study.recovery, "UNRECORDED_WORKER_SECONDS", 0.0)

    study.optimize(n_trials=1)

    records = records_by_number(study)
    assert records[orphan.number].failure_kind == "interrupted"
    retries = [
        t for t in study.optuna.trials if t.system_attrs.get("failed_trial") == orphan.number
    ]
    assert len(retries) == 1 and retries[0].params == A


def test_a_young_running_trial_without_a_worker_record_is_left_alone(make_study):
    study = make_study()
    study.optuna.enqueue_trial(A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        young = study.optuna.ask()  # another worker's trial, a moment before its record

    study.optimize(n_trials=2, timeout=2)  # one trial; then the young one fills the target

    assert records_by_number(study)[young.number].state == "running"
    assert study.finished_count() == 1


# --------------------------------------------------------------------------------------------
# Profiling modes: every trial, a re-run of the Pareto front, or never
# --------------------------------------------------------------------------------------------


def profiled_result(config, settings):
    """fake_result, with a profile read from ``settings.profile_dir`` when one is asked for."""
    from autotune.analysis.profile import ProfileSummary

    result = fake_result(config, settings)
    if settings.profile_dir is None or not settings.measure_throughput:
        return result
    profile = ProfileSummary(
        log_dir=settings.profile_dir,
        steps=10,
        step_ms=4.0,
        breakdown_ms={
            "input": 1.0,
            "host_compute": 3.0,
            "device_compute": 0.0,
            "compile": 0.0,
            "other": 0.0,
        },
        input_fraction=0.25,
        verdict="highly input-bound",
        device_type="CPU_ONLY",
    )
    return dataclasses.replace(result, profile=profile)


def test_profile_all_profiles_every_trial_and_the_measured_baseline_into_its_log_folder(
    make_study,
):
    runner = FakeRunner(make=profiled_result)
    study = make_study(runner=runner)
    enqueue(study, A, C)

    study.optimize(n_trials=2)

    baseline = [c for c in runner.calls if c.settings.stop_below_samples_per_second is None]
    assert baseline[0].settings.profile_dir == str(study.log_root / "baseline_seed_0")
    for number, call in enumerate(runner.trial_calls):
        assert call.settings.profile_dir == str(study.log_root / f"trial_{number}")
        stored = records_by_number(study)[number].user_attrs["result"]["profile"]
        assert stored["log_dir"] == call.settings.profile_dir
        assert stored["verdict"] == "highly input-bound"
    assert Path(runner.trial_calls[0].settings.profile_dir).is_absolute()


def test_profile_off_never_asks_for_a_profile(make_study):
    runner = FakeRunner(make=profiled_result)
    study = make_study(runner=runner, profile_mode="off")
    enqueue(study, A, C)

    study.optimize(n_trials=2)

    assert runner.calls and all(c.settings.profile_dir is None for c in runner.calls)
    assert not any(key.startswith("autotune_profile:") for key in study.optuna.user_attrs)


def test_profile_pareto_reruns_each_front_trial_once_without_its_curve(make_study):
    runner = FakeRunner(make=profiled_result)
    study = make_study(runner=runner, profile_mode="pareto")
    enqueue(study, A, C, D)
    seen: list[int] = []
    study.on_profile(lambda number, entry: seen.append(number))

    study.optimize(n_trials=3)

    front = [r.number for r in study.pareto_front()]
    assert front and sorted(seen) == sorted(front)
    reruns = [c for c in runner.calls if c.settings.profile_dir is not None]
    assert len(reruns) == len(front)
    for call in reruns:
        number = int(Path(call.settings.profile_dir).name.removeprefix("trial_"))
        assert number in front
        assert not call.settings.curve and call.settings.measure_throughput
        assert call.log_dir == study.log_root / f"trial_{number}" / "rerun"
        entry = study.optuna.user_attrs[f"autotune_profile:{number}"]
        assert entry["profile"]["log_dir"] == call.settings.profile_dir
        assert entry["log_dir"] == call.settings.profile_dir
    # the trials themselves were measured without the profiler
    assert all(c.settings.profile_dir is None for c in runner.trial_calls)

    calls = len(runner.calls)
    study.optimize(n_trials=3)  # nothing left to run or profile
    assert len(runner.calls) == calls


def test_a_failing_profile_rerun_is_stored_and_the_study_goes_on(make_study):
    runner = FakeRunner(
        make=profiled_result, fail=lambda config, settings: settings.profile_dir is not None
    )
    study = make_study(runner=runner, profile_mode="pareto")
    enqueue(study, C)

    study.optimize(n_trials=1)

    entry = study.optuna.user_attrs["autotune_profile:0"]
    assert entry["profile_error"].startswith("the profiling re-run failed (exception)")
    assert "the fake runner failed" in entry["profile_error"]
    assert records_by_number(study)[0].state == "complete"


def test_profile_mode_is_checked_and_is_not_part_of_the_identity(make_study):
    with pytest.raises(ConfigError, match=r"profile must be one of all, pareto, off.*'sometimes'"):
        make_study(profile_mode="sometimes")
    first = make_study(profile_mode="off")
    enqueue(first, A)
    first.optimize(n_trials=1)

    resumed = make_study(profile_mode="all")  # no mismatch: profiling never changes a measurement

    assert resumed.optuna.user_attrs[IDENTITY_KEY] == first.optuna.user_attrs[IDENTITY_KEY]


# --------------------------------------------------------------------------------------------
# Confirmation: the top candidates re-measured head to head, stored, never repeated
# --------------------------------------------------------------------------------------------


def speed_calls(runner: FakeRunner) -> list[Call]:
    return [c for c in runner.calls if c.settings.measure_throughput and not c.settings.curve]


def curve_calls(runner: FakeRunner) -> list[Call]:
    return [c for c in runner.calls if c.settings.curve and not c.settings.measure_throughput]


def test_confirmation_interleaves_rounds_and_recommends_the_confirmed_winner(make_study):
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, A, B, C, D)
    study.optimize(n_trials=4)
    runner.calls.clear()
    lines: list[str] = []

    confirmation = study.confirm(top=3, rounds=4, on_progress=lines.append)

    assert confirmation is not None and confirmation.complete
    assert [c.trial for c in confirmation.candidates] == [3, 2]  # the feasible front, fastest first
    order = [(c.config.batch_size, c.config.precision) for c in speed_calls(runner)]
    one_round = [(64, "mixed_bfloat16"), (32, "mixed_bfloat16"), (32, "float32")]
    # A B base, A B base, ...; then the winner D alone and with each setting reverted in turn
    # (precision, XLA: the last keeps bs=64 bf16), four rounds of it; its batch size reverted
    # is trial 2, whose rounds beside it are that reversion's
    assert order[:12] == one_round * 4
    winner_and_reverted = [(64, "mixed_bfloat16"), (64, "float32"), (64, "mixed_bfloat16")]
    assert order[12:] == winner_and_reverted * 4
    assert all(c.settings.input_ablation is False for c in speed_calls(runner))
    # only the faster candidate's curves: within the tolerance, it wins whatever trial 2's give
    assert sorted((c.config.batch_size, c.settings.seed) for c in curve_calls(runner)) == [
        (64, 1), (64, 2),
    ]  # fmt: skip
    # trial 3's search fidelity (1.2) lies within the seeds' noise of the tolerance: its seeds
    # are curved before the first round
    assert [line.split(":")[0] for line in lines[:2]] == ["trial 3 seed 1", "trial 3 seed 2"]
    assert lines[2:5] == [
        "round 1/4: trial 3 6,000 samples/s",
        "round 1/4: trial 2 3,000 samples/s",
        "round 1/4: baseline 1,000 samples/s",
    ]
    stored = study.optuna.user_attrs[CONFIRMATION_KEY]
    assert stored["baseline_samples_per_second"] == [1000.0] * 4
    recipe = study.best()
    assert recipe.trial == 3 and recipe.speedup == pytest.approx(6.0)
    assert recipe.fidelity == pytest.approx(1.2, rel=1e-3)  # losses floored: within 0.1%
    assert recipe.note.startswith("confirmed: trial 3: 6.00x the baseline (88% CI 6.00-6.00")
    assert recipe.confirmation is not None
    assert recipe.confirmation["ratio"]["median"] == pytest.approx(6.0)
    assert recipe.confirmation["rounds"] == 4
    assert [c["verdict"] for c in recipe.confirmation["candidates"]] == [
        "faster beyond noise",
        "faster beyond noise; not curved (a faster candidate won)",
    ]


def test_a_confirmation_done_is_not_repeated_on_resume(make_study):
    study = make_study(FakeRunner())
    enqueue(study, A, B, C, D)
    study.optimize(n_trials=4)
    make_study(FakeRunner()).confirm(rounds=4)

    resumed = FakeRunner()
    confirmation = make_study(resumed).confirm(rounds=4)

    assert confirmation is not None and confirmation.complete
    assert resumed.calls == []  # nothing is measured twice
    assert make_study().best().confirmation is not None
    again = FakeRunner()
    make_study(again).confirm(rounds=5)  # another plan: a new confirmation
    assert len(speed_calls(again)) == 5 * 3 + 5 * 3  # rounds, then the attribution rounds


def test_an_interrupted_confirmation_resumes_with_the_next_round(make_study):
    class Interrupt(Exception):
        pass

    study = make_study(FakeRunner())
    enqueue(study, A, B, C, D)
    study.optimize(n_trials=4)
    seen = {"n": 0}

    def interrupt_in_round_three(config, settings):
        seen["n"] += 1
        if seen["n"] == 2 + 2 * 3 + 1:  # trial 3's two seed curves first, then two rounds
            raise Interrupt("the machine went down")
        return fake_result(config, settings)

    with pytest.raises(Interrupt):
        make_study(FakeRunner(make=interrupt_in_round_three)).confirm(rounds=4)
    assert len(make_study().optuna.user_attrs[CONFIRMATION_KEY]["baseline_samples_per_second"]) == 2

    resumed = FakeRunner()
    make_study(resumed).confirm(rounds=4)

    assert len(speed_calls(resumed)) == 2 * 3 + 4 * 3  # rounds 3 and 4 only, then attribution
    assert len(curve_calls(resumed)) == 0  # the winner's two extra seeds: stored before


def test_a_failing_candidate_drops_out_with_its_failure(make_study):
    study = make_study(FakeRunner())
    enqueue(study, A, B, C, D)
    study.optimize(n_trials=4)
    runner = FakeRunner(
        fail=lambda config, settings: config.batch_size == 64 and not settings.curve
    )

    confirmation = make_study(runner).confirm(rounds=3)

    assert confirmation is not None
    verdicts = {v.candidate.trial: v.text for v in confirmation.verdicts(1.5)}
    assert verdicts[3].startswith("failed: exception: the fake runner failed")
    assert verdicts[2] == "faster beyond noise"
    assert make_study().best().trial == 2


def test_no_feasible_candidate_confirms_nothing_and_keeps_the_baseline(make_study):
    study = make_study(FakeRunner())
    enqueue(study, B)
    study.optimize(n_trials=1)

    confirmation = study.confirm()

    assert confirmation is not None and confirmation.candidates == ()
    assert study.best().is_baseline


def test_a_failed_baseline_run_stops_the_confirmation(make_study):
    study = make_study(FakeRunner())
    enqueue(study, C)
    study.optimize(n_trials=1)
    runner = FakeRunner(
        fail=lambda config, settings: config.batch_size == 32 and config.precision == "float32"
    )

    with pytest.raises(StudyError, match="the baseline's confirmation run failed in round 1/6"):
        make_study(runner).confirm()


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"top": -1}, "--confirm-top must be an integer >= 0. Received: -1"),
        ({"rounds": 1}, "--confirm-rounds must be an integer >= 2. Received: 1"),
        ({"extra_seeds": (0,)}, "extra_seeds must be baseline seeds other than 0"),
        ({"extra_seeds": (7,)}, "extra_seeds must be baseline seeds other than 0"),
    ],
)
def test_bad_confirmation_arguments_are_refused(make_study, kwargs, expected):
    with pytest.raises(ConfigError) as info:
        make_study().confirm(**kwargs)

    assert error_message(info.value).startswith(expected)


def test_top_zero_confirms_nothing(make_study):
    runner = FakeRunner()
    assert make_study(runner).confirm(top=0) is None
    assert runner.calls == []


def test_settings_within_noise_go_back_to_the_baseline_in_a_confirmed_minimal_recipe(make_study):
    pipeline = SearchSpace(
        "fake",
        {
            **SPACE.parameters,
            "prefetch": choices("autotune", 1),
            "num_parallel_calls": choices("autotune", 2),
        },
    )
    study = make_study(space=pipeline)
    # D with pipeline settings that do nothing in the fake world (speed depends on batch size,
    # precision and XLA only): a random draw would have told users to set them.
    enqueue(study, {**D, "prefetch": 1, "num_parallel_calls": 2})
    study.optimize(n_trials=1)
    runner = FakeRunner()

    confirmation = make_study(runner, space=pipeline).confirm(top=1, rounds=4)

    assert confirmation is not None and confirmation.complete
    attribution = confirmation.attribution
    assert attribution is not None
    assert attribution.settings == (
        "batch_size", "precision", "jit_compile", "prefetch", "num_parallel_calls",
    )  # fmt: skip
    assert attribution.within_noise() == ("prefetch", "num_parallel_calls")
    assert attribution.describe() == (
        "carried by batch_size, precision, jit_compile; within noise: prefetch, num_parallel_calls"
    )
    minimal = confirmation.minimal
    assert minimal is not None
    assert (minimal.config.prefetch, minimal.config.num_parallel_calls) == ("autotune", "autotune")
    assert minimal.fidelity == confirmation.candidates[0].fidelity  # the same curve: not retrained
    assert len(confirmation.minimal_baseline_samples_per_second) == 4
    best = confirmation.recommended(1.5)
    assert best is not None and best.candidate is minimal
    recipe = make_study(space=pipeline).best()
    assert recipe.trial == 0
    assert recipe.config == minimal.config
    assert recipe.confirmation is not None and recipe.confirmation["minimal"] is True
    carries = {row["setting"]: row["carries"] for row in recipe.confirmation["attribution"]}
    assert carries == {
        "batch_size": True, "precision": True, "jit_compile": True,
        "prefetch": False, "num_parallel_calls": False,
    }  # fmt: skip
    assert "with prefetch, num_parallel_calls at the baseline's value (minimal recipe)" in (
        recipe.note
    )
    again = FakeRunner()
    make_study(again, space=pipeline).confirm(top=1, rounds=4)
    assert again.calls == []


def test_a_winner_that_differs_in_one_setting_needs_no_attribution(make_study):
    study = make_study()
    enqueue(study, params("float32", False, 64))  # A: bs=64 only, 2000 samples/s
    study.optimize(n_trials=1)
    runner = FakeRunner()

    confirmation = make_study(runner).confirm(top=1, rounds=3)

    assert confirmation is not None and confirmation.complete
    assert confirmation.attribution is None and confirmation.minimal is None
    assert len(speed_calls(runner)) == 3 * 2
