"""autotune.store.writer: the one module that writes a study's storage, and what it writes reads
back through autotune.store.records (the stored keys and JSON shapes are the schema's, unchanged,
so studies stored before the writer still read)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

import autotune
from autotune.analysis.head_to_head import Candidate, Confirmation
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import TrialFailure
from autotune.fidelity import NoiseFloor
from autotune.store import writer
from autotune.store.profile_facts import ProfileFacts
from autotune.store.records import StudyRecords, read_records
from autotune.store.result import CurvePoint, RunResult
from autotune.store.schema import (
    ALIVE_ATTR,
    BASELINE_KEY,
    BASELINE_SUMMARY_KEY,
    COMBINED_KEY,
    CONFIG_ATTR,
    CURVE_FROM_ATTR,
    IDENTITY_KEY,
    INFO_KEY,
    INTERRUPTED,
    PROFILE_RERUN_PREFIX,
    REFINED_KEY,
    RESULT_ATTR,
    RESULT_FIELDS,
    START_KEY,
    TARGET_KEY,
    WORKER_ATTR,
    RunFacts,
    baseline_of,
    row_of,
)
from tests.support.fake_trials import fake_result, profiled_result

PACKAGE = Path(autotune.__file__).resolve().parent
WRITER = PACKAGE / "store" / "writer.py"
#: The calls that write a study's or a trial's user attributes (Optuna's study, trial and
#: storage methods).
WRITES = ("set_user_attr", "set_trial_user_attr", "set_study_user_attr")
#: The store's layer: the writer imports core modules and store/ alone.
NOT_BELOW = ("autotune.study", "autotune.trial", "autotune.views", "autotune.cli")

CONFIG = TrialConfig(batch_size=64, precision="mixed_bfloat16", jit_compile=True)
IDENTITY = {"experiment": "demo", "tolerance": 1.5, "objectives": ["throughput", "fidelity"]}
INFO = {"experiment_reference": "demo.py:experiment", "created": "2026-12-04T21:00:00+00:00"}


# --------------------------------------------------------------------------------------------
# One writer
# --------------------------------------------------------------------------------------------


def _writes(path: Path) -> list[str]:
    """Where ``path`` writes user attributes: each call of :data:`WRITES` and each assignment
    into a ``user_attrs`` mapping, as 'file:line name'."""
    found = []
    where = path.relative_to(PACKAGE.parent)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        call = node.func if isinstance(node, ast.Call) else None
        if isinstance(call, ast.Attribute) and call.attr in WRITES:
            found.append(f"{where}:{node.lineno} {call.attr}")
        for target in node.targets if isinstance(node, ast.Assign) else []:
            into = target.value if isinstance(target, ast.Subscript) else None
            if isinstance(into, ast.Attribute) and into.attr == "user_attrs":
                found.append(f"{where}:{node.lineno} user_attrs[...]")
    return found


def test_only_the_writer_writes_user_attributes() -> None:
    elsewhere = [
        where for path in sorted(PACKAGE.rglob("*.py")) if path != WRITER for where in _writes(path)
    ]

    assert not elsewhere, "user attributes written outside autotune/store/writer.py:\n" + "\n".join(
        elsewhere
    )
    assert _writes(WRITER)  # the check sees the writer's own writes


def test_the_writer_imports_nothing_above_the_store() -> None:
    nodes = list(ast.walk(ast.parse(WRITER.read_text(encoding="utf-8"))))
    imported = [n.module for n in nodes if isinstance(n, ast.ImportFrom) and n.module]
    imported += [a.name for n in nodes if isinstance(n, ast.Import) for a in n.names]

    assert "autotune.store.schema" in imported
    assert not [m for m in imported if m.startswith(NOT_BELOW)], imported


# --------------------------------------------------------------------------------------------
# One result type
# --------------------------------------------------------------------------------------------


def test_the_row_fields_read_from_a_result_are_result_fields() -> None:
    result_fields = {f.name for f in dataclasses.fields(RunResult)}

    assert set(RESULT_FIELDS) <= result_fields
    assert {"curve", "effective", "compile_seconds", "peak_host_bytes"} <= set(RESULT_FIELDS)
    # the others: derived from ``effective``, or a profile fact (read with the Pareto re-run)
    others = {f.name for f in dataclasses.fields(RunFacts)} - set(RESULT_FIELDS)
    assert others == {"learning_rate"} | {f.name for f in dataclasses.fields(ProfileFacts)}


def test_a_result_without_its_config_is_its_dict_less_the_config() -> None:
    result = profiled_result(CONFIG, RunSettings(profile_dir="/logs/trial_1"))

    full = result.to_dict()
    bare = result.to_dict(with_config=False)

    assert "config" not in bare
    assert full.pop("config") == CONFIG.to_dict()
    assert bare == full and list(bare) == list(full)
    assert RunResult.from_dict(result.to_dict()) == result


# --------------------------------------------------------------------------------------------
# Round trips: written by the writer, read by the records
# --------------------------------------------------------------------------------------------


def _study() -> optuna.Study:
    study = optuna.create_study(
        study_name="written",
        directions=["maximize", "minimize"],
        sampler=optuna.samplers.RandomSampler(),
    )
    writer.write_identity(study, IDENTITY, INFO)
    return study


def _records(study: optuna.Study) -> StudyRecords:
    return read_records(study._storage, "memory://", study.study_name)


def test_a_scored_trial_reads_back_as_its_result() -> None:
    study = _study()
    result = profiled_result(CONFIG, RunSettings(profile_dir="/logs/trial_0"))
    trial = study.ask()
    writer.mark_running(trial, {"host": "here", "pid": 1})
    writer.write_config(trial, CONFIG)
    writer.write_log_dir(trial, "/logs/trial_0")
    writer.write_result(trial, result)
    writer.write_fidelity(trial, 0.4, 0.6)
    writer.write_curve_from(trial, "trial 3")
    study.tell(trial, [result.throughput.median if result.throughput else 0.0, 0.4])

    stored = study.trials[0].user_attrs
    row = _records(study).trial(0)

    assert stored[RESULT_ATTR] == result.to_dict(with_config=False)
    assert stored[CONFIG_ATTR] == CONFIG.to_dict()
    assert stored[WORKER_ATTR] == {"host": "here", "pid": 1}
    assert stored[CURVE_FROM_ATTR] == "trial 3"
    assert row.state == "complete" and row.config == CONFIG
    assert row.throughput == result.throughput
    assert (row.fidelity, row.fidelity_symmetric) == (0.4, 0.6)
    assert row.log_dir == "/logs/trial_0" and row.failure_kind is None
    assert row.curve == tuple(result.curve)
    assert row.effective == result.effective
    assert row.learning_rate == result.effective["learning_rate"]
    assert row.compile_seconds == result.compile_seconds
    assert row.steady_step_seconds == result.steady_step_seconds
    assert row.final_metrics == result.final_metrics
    assert (row.peak_host_bytes, row.peak_device_bytes) == (
        result.peak_host_bytes,
        result.peak_device_bytes,
    )
    assert (row.hardware, row.versions) == (result.hardware, result.versions)
    assert result.profile is not None and row.profile == result.profile.to_dict()
    assert row.profile_source == "trial"


def test_a_failed_a_pruned_and_an_interrupted_trial_read_back() -> None:
    study = _study()
    failed, pruned, stopped = study.ask(), study.ask(), study.ask()
    writer.write_failure(failed, TrialFailure("oom", "out of memory", "the log's end"))
    writer.write_pruned_reason(pruned, "slower than the baseline")
    writer.mark_interrupted(stopped)
    study.tell(failed, state=TrialState.FAIL)
    study.tell(pruned, state=TrialState.PRUNED)
    study.tell(stopped, state=TrialState.FAIL)

    rows = _records(study).trials

    assert (rows[0].failure_kind, rows[0].reason, rows[0].log_tail) == (
        "oom",
        "out of memory",
        "the log's end",
    )
    assert (rows[1].state, rows[1].reason) == ("pruned", "slower than the baseline")
    assert rows[2].failure_kind == INTERRUPTED and not rows[2].counts


def test_a_duplicate_reads_back_with_the_measurement_it_reuses() -> None:
    study = _study()
    result = fake_result(CONFIG, RunSettings())
    first = study.ask()
    writer.write_config(first, CONFIG)
    writer.write_result(first, result)
    writer.write_fidelity(first, 0.2, 0.3)
    study.tell(first, [1.0, 0.2])
    again = study.ask()
    writer.write_config(again, CONFIG)
    writer.write_duplicate_of(again, 0)
    writer.copy_measurement(again, study.trials[0])
    study.tell(again, [1.0, 0.2])

    original, duplicate = _records(study).trials

    assert duplicate.duplicate_of == 0
    assert {key: duplicate.user_attrs[key] for key in writer.MEASUREMENT_ATTRS} == {
        key: original.user_attrs[key] for key in writer.MEASUREMENT_ATTRS
    }
    assert duplicate.throughput == original.throughput == result.throughput
    assert duplicate.curve == original.curve == tuple(result.curve)


def test_the_baseline_reads_back_as_its_seed_zero_result() -> None:
    study = _study()
    runs = {
        str(seed): fake_result(CONFIG, RunSettings(seed=seed, measure_throughput=seed == 0))
        for seed in (0, 1, 2)
    }
    floor = NoiseFloor(value=0.01, measured=0.01, pairs=(0.01, 0.012, 0.008))
    baseline = {
        "runs": {seed: run.to_dict() for seed, run in runs.items()},
        "config": CONFIG.to_dict(),
        "noise_floor": floor.to_dict(),
    }
    writer.write_baseline(study, baseline)
    writer.write_baseline_summary(study, {"what": "the baseline"})

    record = _records(study).baseline
    main = runs["0"]

    assert study.user_attrs[BASELINE_KEY] == baseline
    assert study.user_attrs[BASELINE_SUMMARY_KEY] == {"what": "the baseline"}
    assert record == baseline_of(baseline)
    assert record.config == CONFIG and record.throughput == main.throughput
    assert record.noise_floor == floor
    assert record.curve == tuple(main.curve)
    assert record.seed_curves == {seed: tuple(runs[str(seed)].curve) for seed in (0, 1, 2)}
    assert (record.effective, record.compile_seconds) == (main.effective, main.compile_seconds)
    assert record.learning_rate == main.effective["learning_rate"]
    assert (record.hardware, record.versions) == (main.hardware, main.versions)
    assert record.peak_host_bytes == main.peak_host_bytes
    assert record.final_metrics == main.final_metrics


def test_the_study_attributes_read_back() -> None:
    study = _study()
    confirmation = Confirmation(
        2, (0, 1), TrialConfig(batch_size=32), (900.0,), (Candidate(0, CONFIG, (1800.0,)),)
    )
    rerun = {
        "log_dir": "/logs/trial_0",
        "profile": None,
        "profile_error": "no",
        "input_ablation": None,
        "recompilation": None,
    }
    mismatch = {"when": "2026-12-04T21:00:00+00:00", "differences": ["space: stored a, now b"]}
    writer.write_mismatches(study, [mismatch])
    writer.write_confirmation(study, confirmation)
    writer.write_profile_rerun(study, 0, rerun)
    writer.write_target(study, 12)
    writer.write_start(study, [CONFIG])
    writer.write_combined(study, None)
    writer.write_refined(study, [CONFIG])
    trial = study.ask()
    writer.write_config(trial, CONFIG)
    study.tell(trial, state=TrialState.FAIL)

    records = _records(study)
    attrs = study.user_attrs

    assert (attrs[IDENTITY_KEY], attrs[INFO_KEY]) == (IDENTITY, INFO)
    assert records.identity == IDENTITY and records.info == INFO
    assert records.tolerance == IDENTITY["tolerance"]
    assert records.mismatches_allowed == (mismatch,)
    assert records.confirmation == confirmation
    assert attrs[f"{PROFILE_RERUN_PREFIX}0"] == rerun
    assert records.trial(0).profile_error == "no"
    assert attrs[TARGET_KEY] == 12
    assert attrs[START_KEY] == [CONFIG.to_dict()] == attrs[REFINED_KEY]
    assert attrs[COMBINED_KEY] is None


def test_the_heartbeat_and_an_orphan_are_written_through_the_storage() -> None:
    study = _study()
    trial = study.ask()
    writer.write_alive(study._storage, trial._trial_id, 1234.5)
    writer.mark_orphan_interrupted(study._storage, trial._trial_id)
    study.tell(trial, state=TrialState.FAIL)

    stored = study.trials[0]

    assert stored.user_attrs[ALIVE_ATTR] == 1234.5
    assert row_of(stored).failure_kind == INTERRUPTED


def test_a_retry_starts_without_its_failure() -> None:
    study = _study()
    trial = study.ask()
    writer.mark_interrupted(trial)
    study.tell(trial, state=TrialState.FAIL)
    frozen = study.trials[0]

    writer.clear_failure_for_retry(frozen)

    assert frozen.user_attrs["failure"] is None


@pytest.mark.parametrize("curve", [[], [CurvePoint(100, 0.5), CurvePoint(200, 0.4)]])
def test_a_stored_curve_reads_back_as_points(curve: list[CurvePoint]) -> None:
    study = _study()
    result = dataclasses.replace(fake_result(CONFIG, RunSettings()), curve=curve)
    trial = study.ask()
    writer.write_config(trial, CONFIG)
    writer.write_result(trial, result)
    study.tell(trial, state=TrialState.PRUNED)

    assert _records(study).trial(0).curve == tuple(curve)
