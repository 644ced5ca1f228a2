"""The storage contract: what an autotune study writes into its Optuna storage, under which keys.

The study writes these keys and the records read them; both import them from here, so neither
imports the other's internals. A stored trial reads as the one row type, :class:`TrialRow`
(:func:`row_of`), and the stored baseline as a :class:`BaselineRecord` (:func:`baseline_of`). No
TensorFlow here.

Study user attributes:

- ``autotune_identity`` (:data:`IDENTITY_KEY`): what a study refuses to mix on resume
  (experiment, space digest, measurement digest, objectives, tolerance, hardware fingerprint,
  TensorFlow and Keras versions).
- ``autotune_info`` (:data:`INFO_KEY`): provenance (experiment reference, space, measurement
  settings, hardware, versions, creation time).
- ``autotune_baseline`` (:data:`BASELINE_KEY`): ``{"config", "runs": {seed: RunResult dict},
  "noise_floor", "measured_at"}`` (anchors beside it: :mod:`autotune.store.anchors`).
- ``autotune_baseline_summary`` (:data:`BASELINE_SUMMARY_KEY`): a short digest of the baseline
  for Optuna's own tools (optuna-dashboard shows user attributes).
- ``autotune_mismatches_allowed`` (:data:`MISMATCHES_KEY`): resumes allowed despite a different
  identity, each ``{"when", "differences"}``.
- ``autotune_confirmation`` (:data:`CONFIRMATION_KEY`): the head-to-head confirmation of the
  top candidates against the baseline (:meth:`autotune.analysis.head_to_head.Confirmation.to_dict`).
- ``autotune_profile:<n>`` (:data:`PROFILE_RERUN_PREFIX`): trial n's Pareto profiling re-run,
  ``{"profile", "profile_error", "input_ablation", "recompilation", "log_dir"}``.
- ``autotune_target_trials`` (:data:`TARGET_KEY`): the finished trials the study runs towards.
- ``autotune_start``, ``autotune_start_combined``, ``autotune_start_refined``
  (:data:`START_KEY`, :data:`COMBINED_KEY`, :data:`REFINED_KEY`): the structured start.

Trial user attributes: the keys named ``*_ATTR`` below.

:mod:`autotune.store.writer` is the one module that writes them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from optuna.distributions import distribution_to_json
from optuna.trial import FrozenTrial, TrialState

from autotune.config import TrialConfig
from autotune.fidelity import NoiseFloor
from autotune.measure import Estimate
from autotune.store.damage import stored_as
from autotune.store.objectives import DEFAULT_OBJECTIVES, MIB, peak_memory_bytes
from autotune.store.profile_facts import (
    ProfileFacts,
    estimate_of,
    profile_fields,
    rerun_for,
    step_ms_of,
)
from autotune.store.result import CurvePoint
from autotune.store.warm_start import origin_of

#: The default objectives, in Optuna's order (``memory`` may follow:
#: :mod:`autotune.store.objectives`).
OBJECTIVES = DEFAULT_OBJECTIVES
#: The baseline's seeds: seed 0 is measured and compared with; all three give the noise floor.
BASELINE_SEEDS = (0, 1, 2)

IDENTITY_KEY = "autotune_identity"
INFO_KEY = "autotune_info"
BASELINE_KEY = "autotune_baseline"
MISMATCHES_KEY = "autotune_mismatches_allowed"
CONFIRMATION_KEY = "autotune_confirmation"
#: The finished trials the study runs towards (the last ``optimize(n_trials)``), which
#: ``autotune worker`` reads when it joins.
TARGET_KEY = "autotune_target_trials"
PROFILE_RERUN_PREFIX = "autotune_profile:"
#: A short digest of the baseline for Optuna's own tools
#: (:func:`autotune.study.optuna_tools.baseline_summary`).
BASELINE_SUMMARY_KEY = "autotune_baseline_summary"
#: The structured start's configurations (a list of dicts; :mod:`autotune.study.start`).
START_KEY = "autotune_start"
#: The start's combination (a config dict, or None: nothing to combine).
COMBINED_KEY = "autotune_start_combined"
#: The best configurations the start's local search searched around, in order.
REFINED_KEY = "autotune_start_refined"

#: The trial's configuration (:meth:`autotune.config.TrialConfig.to_dict`).
CONFIG_ATTR = "config"
#: Its samples/s estimate (:meth:`autotune.measure.Estimate.to_dict`).
THROUGHPUT_ATTR = "throughput"
#: Its fidelity distance (noise-floor units, one-sided: the objective).
FIDELITY_ATTR = "fidelity"
#: Its symmetric fidelity distance (noise-floor units; a better curve counts too), shown beside.
FIDELITY_SYMMETRIC_ATTR = "fidelity_symmetric"
#: Its RunResult dict without the configuration.
RESULT_ATTR = "result"
#: ``{"kind", "message", "log_tail"}`` of a failed trial; None while it runs.
FAILURE_ATTR = "failure"
#: Why the trial was pruned.
PRUNED_REASON_ATTR = "pruned_reason"
#: The number of the earlier trial whose measurement a duplicate configuration reuses.
DUPLICATE_OF_ATTR = "duplicate_of"
#: Whose curve a trial was scored with when it differs from it in pipeline settings alone.
CURVE_FROM_ATTR = "curve_from"
#: ``{"host", "pid", "started", "fingerprint", "cpus", "device"}`` of the worker process running
#: the trial (:func:`autotune.study.recovery.this_worker`).
WORKER_ATTR = "worker"
#: The trial's log folder.
LOG_DIR_ATTR = "log_dir"
#: When the trial's worker last said it was alive (seconds since the epoch), on storages without
#: Optuna's heartbeat (:class:`autotune.study.recovery.KeepAlive`).
ALIVE_ATTR = "alive_at"

#: The failure kind of a trial whose worker stopped while it ran; such a trial is retried.
INTERRUPTED = "interrupted"
INTERRUPTED_FAILURE = {
    "kind": INTERRUPTED,
    "message": "the trial's worker stopped while it ran (killed, lost heartbeat or Ctrl-C)",
    "log_tail": "",
}


_NUMBER = (int, float)


def _curve(points: Iterable[dict[str, Any]] | None) -> tuple[CurvePoint, ...]:
    stored_as(points, (list, tuple), "curve", "a list")
    for point in points or ():
        stored_as(point, dict, "curve", "a list of JSON objects")
    return tuple(
        CurvePoint(
            samples=int(p["samples"]),
            val_loss=float(p["val_loss"]),
            loss_scale=None if p.get("loss_scale") is None else float(p["loss_scale"]),
            skipped_steps=None if p.get("skipped_steps") is None else int(p["skipped_steps"]),
        )
        for p in points or ()
    )


def _optional_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _as_dict(value: Any) -> dict[str, Any]:
    return dict(stored_as(value, dict, "value", "a JSON object") or {})


def _as_stored(value: Any) -> Any:
    return stored_as(value, _NUMBER, "value", "a number")


#: The metadata key of a :class:`RunFacts` field read from the stored RunResult field of its name.
_READ = "read_from_result"


def _read(reader: Callable[[Any], Any]) -> dict[str, Any]:
    return {_READ: reader}


@dataclass(frozen=True, kw_only=True)
class RunFacts(ProfileFacts):
    """What a stored run (a trial's, the baseline's seed 0) measured, read from its stored
    :class:`autotune.store.result.RunResult` dict: the one declaration of the result fields a
    :class:`TrialRow` and a :class:`BaselineRecord` carry. Each field marked with a reader is the
    RunResult field of the same name as it is read back (:func:`run_facts`); a run without a
    stored result reads as the defaults.

    Attributes:
        curve: the validation curve (empty when none was trained).
        effective: the settings that took effect (dtype policy, jit_compile, learning rate, ...).
        learning_rate: the learning rate the run trained with (from ``effective``).
        compile_seconds: first step time minus a steady step time (seconds).
        steady_step_seconds: median step time at the end of warm-up (seconds).
        final_metrics: validation metrics at the last checkpoint.
        peak_host_bytes, peak_device_bytes: peak memory of the run (bytes).
        hardware, versions: where and with what the run ran.

    The step-time breakdown, input verdict, profile and recompilation check are the
    :class:`ProfileFacts` fields (:func:`autotune.store.profile_facts.profile_fields`).
    """

    curve: tuple[CurvePoint, ...] = field(default=(), metadata=_read(_curve))
    effective: dict[str, Any] = field(default_factory=dict, metadata=_read(_as_dict))
    learning_rate: float | None = None
    compile_seconds: float | None = field(default=None, metadata=_read(_optional_float))
    steady_step_seconds: float | None = field(default=None, metadata=_read(_optional_float))
    final_metrics: dict[str, float] = field(default_factory=dict, metadata=_read(_as_dict))
    peak_host_bytes: int | None = field(default=None, metadata=_read(_as_stored))
    peak_device_bytes: int | None = field(default=None, metadata=_read(_as_stored))
    hardware: dict[str, Any] = field(default_factory=dict, metadata=_read(_as_dict))
    versions: dict[str, str] = field(default_factory=dict, metadata=_read(_as_dict))

    @property
    def peak_memory_mib(self) -> float | None:
        """The run's peak memory (MiB): the memory objective's measurement
        (:func:`autotune.store.objectives.peak_memory_bytes`)."""
        return _mib(peak_memory_bytes(self.peak_host_bytes, self.peak_device_bytes))


#: The :class:`RunFacts` fields read from the stored RunResult field of the same name.
RESULT_FIELDS = tuple(f.name for f in dataclasses.fields(RunFacts) if _READ in f.metadata)


def run_facts(
    result: Mapping[str, Any],
    config: TrialConfig | None,
    rerun: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The :class:`RunFacts` fields (with the :class:`ProfileFacts` ones) of a stored RunResult
    dict of ``config``, its Pareto re-run ``rerun`` merged into the profile facts."""
    stored_as(result, dict, RESULT_ATTR, "a JSON object")
    values = {}
    for item in dataclasses.fields(RunFacts):
        if _READ in item.metadata:
            try:
                values[item.name] = item.metadata[_READ](result.get(item.name))
            except (TypeError, ValueError, KeyError) as error:
                raise ValueError(f"{RESULT_ATTR}.{item.name}: {error}") from error
    values["learning_rate"] = _optional_float(values["effective"].get("learning_rate"))
    return values | profile_fields(result, config, rerun)


@dataclass(frozen=True)
class BaselineRecord(RunFacts):
    """The experiment's float32, no-XLA baseline as the study measured it.

    Attributes:
        config: the baseline configuration (None before the first baseline run is stored).
        throughput: seed 0's samples/s estimate (None until measured).
        seed_curves: every stored seed's validation curve, by seed.
        noise_floor: the seed-to-seed curve distance (None until all seeds ran).
        log_dir: where the baseline runs' logs were kept (derived from the trials' log folders,
            else the study's default log folder; None when unknown).

    What seed 0 measured (its curve, the one trials are compared with, its effective settings,
    learning rate, compile and step times, peak memory, hardware, versions, step-time
    breakdown, input verdict, profile and recompilation check) are the :class:`RunFacts`
    fields.
    """

    config: TrialConfig | None
    throughput: Estimate | None
    seed_curves: dict[int, tuple[CurvePoint, ...]]
    noise_floor: NoiseFloor | None
    log_dir: str | None = None

    @property
    def measured(self) -> bool:
        """Whether throughput and noise floor are both stored (trials can be scored)."""
        return self.throughput is not None and self.noise_floor is not None

    @property
    def step_ms(self) -> float | None:
        """Milliseconds per training step over the timed windows: batch size / median
        throughput."""
        return step_ms_of(self.config, self.throughput)


@dataclass(frozen=True)
class TrialRow(RunFacts):
    """One trial as plain data.

    Attributes:
        number: Optuna trial number.
        state: "complete", "pruned", "failed", "running" or "waiting".
        config: the configuration (None if the trial failed before drawing one).
        throughput: samples/s estimate with its confidence interval, when measured.
        fidelity: one-sided fidelity distance (1.0 = worse by as much as a seed re-run
            differs), when measured: the objective.
        fidelity_symmetric: the symmetric fidelity distance (a better curve counts too), when
            measured (None in studies stored before fidelity definition 2).
        feasible: fidelity within the study's tolerance (None without a fidelity).
        failure_kind: the failure's kind for failed trials (oom, nan, interrupted, ...).
        reason: why the trial was pruned or failed.
        duplicate_of: the trial whose measurement this one reuses.
        log_dir: the trial's log folder.
        log_tail: the end of a failed trial's log.
        params: the Optuna parameters as drawn.
        distributions: each parameter's Optuna distribution as JSON.
        started, completed: ISO 8601 times (None when not reached).
        user_attrs: everything stored with the trial (see :mod:`autotune.store.schema`).

    What the trial measured (its curve, effective settings, learning rate, compile and step
    times, final metrics, peak memory, hardware, versions, step-time breakdown, input verdict,
    profile and recompilation check) are the :class:`RunFacts` fields, read from its stored
    result.
    """

    number: int
    state: str
    config: TrialConfig | None
    throughput: Estimate | None
    fidelity: float | None
    feasible: bool | None
    fidelity_symmetric: float | None = None
    failure_kind: str | None = None
    reason: str | None = None
    duplicate_of: int | None = None
    log_dir: str | None = None
    log_tail: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    distributions: dict[str, str] = field(default_factory=dict)
    started: str | None = None
    completed: str | None = None
    user_attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def counts(self) -> bool:
        """Whether the trial counts as finished (interrupted ones are retried instead)."""
        return self.state in ("complete", "pruned") or (
            self.state == "failed" and self.failure_kind != INTERRUPTED
        )

    @property
    def warm_from(self) -> tuple[int, str] | None:
        """(earlier trial, description) when a warm start proposed this trial
        (:mod:`autotune.store.warm_start`); None otherwise."""
        return origin_of(self.user_attrs)

    @property
    def scored(self) -> bool:
        """Complete with both objectives: a point of the throughput/fidelity plane."""
        return (
            self.state == "complete" and self.throughput is not None and self.fidelity is not None
        )

    @property
    def step_ms(self) -> float | None:
        """Milliseconds per training step over the timed windows: batch size / median
        throughput."""
        return step_ms_of(self.config, self.throughput)

    @property
    def label(self) -> str:
        """'trial 7: bs=64 mixed_bfloat16 xla ...'."""
        return f"trial {self.number}: {self.config.describe() if self.config else '-'}"


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="microseconds") if value is not None else None


_STATES = {
    TrialState.COMPLETE: "complete",
    TrialState.PRUNED: "pruned",
    TrialState.FAIL: "failed",
    TrialState.RUNNING: "running",
    TrialState.WAITING: "waiting",
}


def failure_of(trial: FrozenTrial) -> dict[str, Any] | None:
    """A failed trial's failure record. One without autotune's record never finished its
    objective: its worker was killed, lost its heartbeat or was stopped by Ctrl-C; it is
    retried, not counted."""
    if trial.state != TrialState.FAIL:
        return None
    return trial.user_attrs.get(FAILURE_ATTR) or INTERRUPTED_FAILURE


def _feasible(trial: FrozenTrial) -> bool | None:
    constraints = trial.constraints
    return all(v <= 0 for v in constraints.values()) if constraints else None


#: The trial user attributes a row reads, with the type each must have when stored.
_TRIAL_ATTRS: tuple[tuple[str, type | tuple[type, ...], str], ...] = (
    *((key, dict, "a JSON object") for key in (CONFIG_ATTR, RESULT_ATTR, THROUGHPUT_ATTR)),
    *((key, _NUMBER, "a number") for key in (FIDELITY_ATTR, FIDELITY_SYMMETRIC_ATTR)),
    (FAILURE_ATTR, dict, "a JSON object"),
    *((key, str, "a string") for key in (PRUNED_REASON_ATTR, LOG_DIR_ATTR)),
    (DUPLICATE_OF_ATTR, int, "an integer"),
)


def row_of(trial: FrozenTrial, reruns: Mapping[int, Mapping[str, Any]] | None = None) -> TrialRow:
    """A :class:`TrialRow` from an Optuna trial stored by an autotune study, with its Pareto
    re-run from ``reruns`` (by trial number; see :func:`profile_reruns`) merged in. A duplicate
    of an earlier trial takes that trial's re-run."""
    attrs = trial.user_attrs
    for key, kind, what in _TRIAL_ATTRS:
        stored_as(attrs.get(key), kind, key, what)
    config = TrialConfig.from_dict(attrs[CONFIG_ATTR]) if attrs.get(CONFIG_ATTR) else None
    result: dict[str, Any] = attrs.get(RESULT_ATTR) or {}
    failure = failure_of(trial)
    stored_as((failure or {}).get("kind"), str, f"{FAILURE_ATTR}.kind", "a string")
    reason = attrs.get(PRUNED_REASON_ATTR) if trial.state == TrialState.PRUNED else None
    duplicate_of = attrs.get(DUPLICATE_OF_ATTR)
    return TrialRow(
        number=trial.number,
        state=_STATES[trial.state],
        config=config,
        throughput=estimate_of(attrs.get(THROUGHPUT_ATTR)),
        fidelity=attrs.get(FIDELITY_ATTR),
        feasible=_feasible(trial),
        fidelity_symmetric=attrs.get(FIDELITY_SYMMETRIC_ATTR),
        failure_kind=failure["kind"] if failure else None,
        reason=failure["message"] if failure else reason,
        duplicate_of=duplicate_of,
        log_dir=attrs.get(LOG_DIR_ATTR),
        log_tail=str((failure or {}).get("log_tail") or ""),
        params=dict(trial.params),
        distributions={k: distribution_to_json(d) for k, d in trial.distributions.items()},
        started=_iso(trial.datetime_start),
        completed=_iso(trial.datetime_complete),
        user_attrs=dict(attrs),
        **run_facts(result, config, rerun_for(trial.number, duplicate_of, reruns)),
    )


def _mib(size: int | None) -> float | None:
    return None if size is None else size / MIB


def baseline_of(stored: dict[str, Any], log_dir: str | None = None) -> BaselineRecord:
    """A :class:`BaselineRecord` from the study's ``autotune_baseline`` user attribute;
    ValueError (or TypeError) naming the key when a stored value has the wrong type."""
    stored_as(stored, dict, BASELINE_KEY, "a JSON object")
    runs: dict[str, Any] = stored_as(stored.get("runs"), dict, "runs", "a JSON object") or {}
    for seed, run in runs.items():
        stored_as(run, dict, f"runs.{seed}", "a JSON object")
    main: dict[str, Any] = runs.get(str(BASELINE_SEEDS[0])) or {}
    config = stored.get("config") or main.get("config")
    stored_as(config, dict, "config", "a JSON object")
    stored_as(main.get("throughput"), dict, "runs.0.throughput", "a JSON object")
    floor = stored_as(stored.get("noise_floor"), dict, "noise_floor", "a JSON object")
    return BaselineRecord(
        config=TrialConfig.from_dict(config, source="stored baseline config") if config else None,
        throughput=Estimate(**main["throughput"]) if main.get("throughput") else None,
        seed_curves={int(seed): _curve(run.get("curve")) for seed, run in sorted(runs.items())},
        noise_floor=(NoiseFloor.from_dict(floor) if floor else None),
        log_dir=log_dir,
        **run_facts(main, TrialConfig.from_dict(config) if config else None),
    )


def profile_reruns(study_attrs: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """The Pareto re-runs stored in a study's user attributes, by trial number."""
    reruns: dict[int, dict[str, Any]] = {}
    for key, value in study_attrs.items():
        number = key[len(PROFILE_RERUN_PREFIX) :]
        if key.startswith(PROFILE_RERUN_PREFIX) and number.isdigit() and isinstance(value, dict):
            reruns[int(number)] = value
    return reruns


__all__ = [
    "ALIVE_ATTR",
    "BASELINE_KEY",
    "BASELINE_SEEDS",
    "BASELINE_SUMMARY_KEY",
    "COMBINED_KEY",
    "CONFIG_ATTR",
    "CONFIRMATION_KEY",
    "CURVE_FROM_ATTR",
    "DUPLICATE_OF_ATTR",
    "FAILURE_ATTR",
    "FIDELITY_ATTR",
    "IDENTITY_KEY",
    "INFO_KEY",
    "INTERRUPTED",
    "INTERRUPTED_FAILURE",
    "LOG_DIR_ATTR",
    "MISMATCHES_KEY",
    "OBJECTIVES",
    "PROFILE_RERUN_PREFIX",
    "PRUNED_REASON_ATTR",
    "REFINED_KEY",
    "RESULT_ATTR",
    "START_KEY",
    "TARGET_KEY",
    "THROUGHPUT_ATTR",
    "WORKER_ATTR",
    "BaselineRecord",
    "RunFacts",
    "TrialRow",
    "baseline_of",
    "failure_of",
    "profile_reruns",
    "row_of",
    "run_facts",
]
