"""A stored study as JSON for scripts: what ``autotune status --json`` and ``autotune run
--json`` print (``best --json`` prints the recommendation alone, ``trial --json`` one run).

Schema :data:`SCHEMA` (a new name when a field changes meaning or goes away; fields may be
added). Every field is always present, null when not known yet::

    {
      "schema": "autotune.study/1",
      "study": str, "storage": str, "experiment": str, "experiment_reference": str,
      "tolerance": float,                      # fidelity tolerance (noise-floor units)
      "objectives": [str],                     # throughput, fidelity[, memory]
      "fidelity_definition": str | null,       # autotune.fidelity.DEFINITION it was scored with
      "throughput_only": str | null,           # why the fidelity check cannot see, if accepted
      "warm_start": {storage, study, proposals, differences} | null,  # the earlier study
      "baseline": {
        "config": {setting: value} | null,     # one key per setting: config_schema()
        "throughput": {median, low, high, confidence, n} | null,   # samples/s
        "noise_floor": {value, measured, pairs, loss_floor} | null,
        "peak_memory_mib": float | null        # seed 0's (the device's on a GPU)
      },
      "finished": int,                         # trials that count towards --trials
      "counts": {state: int},                  # complete, pruned, failed, running, waiting
      "trials": [{
        "number": int, "state": str, "config": {...} | null,
        "throughput": {...} | null,            # samples/s
        "fidelity": float | null,              # one-sided (the objective)
        "fidelity_symmetric": float | null,
        "peak_memory_mib": float | null,       # the memory objective's measurement
        "feasible": bool | null, "failure_kind": str | null, "reason": str | null,
        "duplicate_of": int | null, "log_dir": str | null,
        "warm_from": int | null                # the earlier study's trial it was proposed from
      }],
      "pareto_front": [int],                   # feasible Pareto trials, fastest first
      "anchors": [{started, ended, throughput, error}],   # the baseline re-measured (samples/s)
      "drift": {ratio, beyond_noise, anchors} | null,      # the latest anchor / the start's
      "confirmation": {..., "answer": str} | null,   # Confirmation.to_dict() and its answer
      "recommendation": {...} | null           # what best --json prints (Recipe.to_dict())
    }

A configuration (``config``) holds one key per setting of :data:`autotune.settings.SETTINGS`;
:func:`config_schema` is its JSON Schema, with each setting's type, values, default and help.
No TensorFlow here, and nothing from the experiment runs: it reads the storage's records.
"""

from __future__ import annotations

from typing import Any

from autotune import settings
from autotune.store.records import StudyRecords, TrialRow

SCHEMA = "autotune.study/1"


def config_schema() -> dict[str, Any]:
    """The JSON Schema of a ``config`` (the baseline's and each trial's)."""
    return settings.json_schema()


def _trial(row: TrialRow) -> dict[str, Any]:
    return {
        "number": row.number,
        "state": row.state,
        "config": row.config.to_dict() if row.config else None,
        "throughput": row.throughput.to_dict() if row.throughput else None,
        "fidelity": row.fidelity,
        "fidelity_symmetric": row.fidelity_symmetric,
        "peak_memory_mib": row.peak_memory_mib,
        "feasible": row.feasible,
        "failure_kind": row.failure_kind,
        "reason": row.reason,
        "duplicate_of": row.duplicate_of,
        "log_dir": row.log_dir,
        "warm_from": row.warm_from[0] if row.warm_from else None,
    }


def _drift(records: StudyRecords) -> dict[str, Any] | None:
    drift = records.anchors.drift()
    if drift is None:
        return None
    return {"ratio": drift.ratio, "beyond_noise": drift.beyond_noise, "anchors": drift.anchors}


def study_json(records: StudyRecords) -> dict[str, Any]:
    """The study in :data:`SCHEMA` (see the module's docstring)."""
    baseline = records.baseline
    confirmation = records.confirmation
    confirmed = None
    if confirmation is not None:
        confirmed = {**confirmation.to_dict(), "answer": confirmation.summary(records.tolerance)}
    return {
        "schema": SCHEMA,
        "study": records.study_name,
        "storage": records.storage,
        "experiment": records.experiment,
        "experiment_reference": records.experiment_reference,
        "tolerance": records.tolerance,
        "objectives": list(records.metric_names),
        "fidelity_definition": records.identity.get("fidelity"),
        "throughput_only": records.throughput_only,
        "warm_start": records.warm_start.to_dict() if records.warm_start else None,
        "baseline": {
            "config": baseline.config.to_dict() if baseline.config else None,
            "throughput": baseline.throughput.to_dict() if baseline.throughput else None,
            "noise_floor": baseline.noise_floor.to_dict() if baseline.noise_floor else None,
            "peak_memory_mib": baseline.peak_memory_mib,
        },
        "finished": records.finished_count(),
        "counts": records.counts(),
        "trials": [_trial(row) for row in records.trials],
        "pareto_front": [row.number for row in records.pareto()],
        "anchors": [anchor.to_dict() for anchor in records.anchors.runs],
        "drift": _drift(records),
        "confirmation": confirmed,
        "recommendation": records.best().to_dict() if baseline.config else None,
    }


__all__ = ["SCHEMA", "config_schema", "study_json"]
