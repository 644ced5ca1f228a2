"""A stored study read into plain rows for reports and the dashboard. No plotting, no TensorFlow.

:func:`load_records` opens an Optuna storage, reads the study that autotune wrote there (its
identity, the baseline runs with their seed curves and noise floor, every trial) and returns a
frozen :class:`StudyRecords`. Nothing here loads the experiment file, so a report can be made on a
machine that cannot run the study. Units: throughput in samples/s, times in seconds unless a name
ends in ``_ms``, fidelity in units of the baseline's seed noise floor (1.0 = as different as a
re-run with another seed).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import distribution_to_json
from optuna.trial import FrozenTrial

from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.fidelity import NoiseFloor
from autotune.measure import Estimate, InputAblation
from autotune.recipe import Recipe
from autotune.result import CurvePoint
from autotune.storage import open_storage, pick_study_name, quiet_experimental, sqlite_path
from autotune.study import (
    BASELINE_KEY,
    BASELINE_SEEDS,
    IDENTITY_KEY,
    INFO_KEY,
    OBJECTIVES,
    record_of,
)

#: Components of a profiled step-time breakdown, in drawing order (milliseconds per step).
PROFILE_COMPONENTS = ("input", "compute", "compile", "other")


def _curve(points: Iterable[dict[str, Any]] | None) -> tuple[CurvePoint, ...]:
    return tuple(
        CurvePoint(samples=int(p["samples"]), val_loss=float(p["val_loss"])) for p in points or ()
    )


def _optional_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class BaselineRecord:
    """The experiment's float32, no-XLA baseline as the study measured it.

    Attributes:
        config: the baseline configuration (None before the first baseline run is stored).
        throughput: seed 0's samples/s estimate (None until measured).
        curve: seed 0's validation curve, the one trials are compared with.
        seed_curves: every stored seed's validation curve, by seed.
        noise_floor: the seed-to-seed curve distance (None until all seeds ran).
        effective: the settings that took effect for seed 0 (dtype policy, learning rate, ...).
        learning_rate: seed 0's learning rate.
        compile_seconds: seed 0's first step time minus a steady step time (seconds).
        steady_step_seconds: seed 0's median step time at the end of warm-up (seconds).
        log_dir: where the baseline runs' logs were kept (derived from the trials' log folders,
            else the study's default log folder; None when unknown).
        hardware, versions: where and with what seed 0 ran.
        profile: step-time breakdown in milliseconds per :data:`PROFILE_COMPONENTS` key (input
            and compute from the input ablation today); None when not measured.
    """

    config: TrialConfig | None
    throughput: Estimate | None
    curve: tuple[CurvePoint, ...]
    seed_curves: dict[int, tuple[CurvePoint, ...]]
    noise_floor: NoiseFloor | None
    effective: dict[str, Any] = field(default_factory=dict)
    learning_rate: float | None = None
    compile_seconds: float | None = None
    steady_step_seconds: float | None = None
    log_dir: str | None = None
    hardware: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    profile: dict[str, float] | None = None

    @property
    def measured(self) -> bool:
        """Whether throughput and noise floor are both stored (trials can be scored)."""
        return self.throughput is not None and self.noise_floor is not None

    @property
    def step_ms(self) -> float | None:
        """Milliseconds per training step over the timed windows: batch size / median
        throughput."""
        return _step_ms(self.config, self.throughput)


def _step_ms(config: TrialConfig | None, throughput: Estimate | None) -> float | None:
    if config is None or throughput is None or throughput.median <= 0:
        return None
    return 1e3 * config.batch_size / throughput.median


@dataclass(frozen=True)
class TrialRow:
    """One trial as plain data.

    Attributes:
        number: Optuna trial number.
        state: "complete", "pruned", "failed", "running" or "waiting".
        config: the configuration (None if the trial failed before drawing one).
        throughput: samples/s estimate with its confidence interval, when measured.
        fidelity: fidelity distance (1.0 = as different as a seed re-run), when measured.
        feasible: fidelity within the study's tolerance (None without a fidelity).
        failure_kind: the failure's kind for failed trials (oom, nan, interrupted, ...).
        reason: why the trial was pruned or failed.
        duplicate_of: the trial whose measurement this one reuses.
        curve: the validation curve (empty when none was trained).
        effective: the settings that took effect (dtype policy, jit_compile, learning rate, ...).
        learning_rate: the learning rate the trial trained with.
        compile_seconds: first step time minus a steady step time (seconds).
        steady_step_seconds: median step time at the end of warm-up (seconds).
        log_dir: the trial's log folder.
        log_tail: the end of a failed trial's log.
        params: the Optuna parameters as drawn.
        distributions: each parameter's Optuna distribution as JSON.
        started, completed: ISO 8601 times (None when not reached).
        final_metrics: validation metrics at the last checkpoint.
        peak_host_bytes, peak_device_bytes: peak memory of the trial (bytes).
        hardware, versions: where and with what the trial ran.
        profile: step-time breakdown in milliseconds per :data:`PROFILE_COMPONENTS` key (input
            and compute from the input ablation today); None when not measured.
    """

    number: int
    state: str
    config: TrialConfig | None
    throughput: Estimate | None
    fidelity: float | None
    feasible: bool | None
    failure_kind: str | None = None
    reason: str | None = None
    duplicate_of: int | None = None
    curve: tuple[CurvePoint, ...] = ()
    effective: dict[str, Any] = field(default_factory=dict)
    learning_rate: float | None = None
    compile_seconds: float | None = None
    steady_step_seconds: float | None = None
    log_dir: str | None = None
    log_tail: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    distributions: dict[str, str] = field(default_factory=dict)
    started: str | None = None
    completed: str | None = None
    final_metrics: dict[str, float] = field(default_factory=dict)
    peak_host_bytes: int | None = None
    peak_device_bytes: int | None = None
    hardware: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    profile: dict[str, float] | None = None

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
        return _step_ms(self.config, self.throughput)

    @property
    def label(self) -> str:
        """'trial 7: bs=64 mixed_bfloat16 xla ...'."""
        return f"trial {self.number}: {self.config.describe() if self.config else '-'}"


def _objectives(row: TrialRow) -> tuple[float, float]:
    """(throughput median, fidelity) of a scored row."""
    return (row.throughput.median if row.throughput else 0.0, row.fidelity or 0.0)


def _dominates(a: TrialRow, b: TrialRow) -> bool:
    """Whether ``a`` is at least as fast and as faithful as ``b`` and strictly better in one."""
    (speed_a, fidelity_a), (speed_b, fidelity_b) = _objectives(a), _objectives(b)
    at_least = speed_a >= speed_b and fidelity_a <= fidelity_b
    return at_least and (speed_a > speed_b or fidelity_a < fidelity_b)


def pareto_front(
    rows: Sequence[TrialRow], baseline_throughput: float | None = None
) -> list[TrialRow]:
    """The feasible scored trials that no other feasible scored trial dominates, fastest first,
    leaving out repeats of an earlier trial.

    The baseline (fidelity 0 by definition) dominates every trial that is not faster than it,
    so with ``baseline_throughput`` (samples/s) such trials are left out too: nothing slower
    than the baseline can be on the front.
    """
    candidates = [r for r in rows if r.scored and r.feasible and r.duplicate_of is None]
    front = [r for r in candidates if not any(_dominates(o, r) for o in candidates)]
    if baseline_throughput is not None:
        front = [r for r in front if r.throughput and r.throughput.median > baseline_throughput]
    return sorted(front, key=lambda r: (-(r.throughput.median if r.throughput else 0), r.number))


@dataclass(frozen=True)
class StudyRecords:
    """A stored study as plain data.

    Attributes:
        study_name: the Optuna study's name.
        storage: the storage URL it was read from.
        tolerance: largest fidelity distance a configuration may have (noise-floor units).
        experiment: the experiment's name.
        experiment_reference: how the study loads the experiment ("path.py:name").
        baseline: the baseline runs.
        trials: every trial, oldest first.
        identity: what the study refuses to mix (experiment, space digest, objectives,
            tolerance, hardware fingerprint, library versions).
        info: provenance: the space, measurement settings, hardware, versions, creation time.
        metric_names: the objectives' names as stored.
        mismatches_allowed: resumes that were allowed despite a different identity.
        read_at: when the records were read (ISO 8601, UTC).
    """

    study_name: str
    storage: str
    tolerance: float
    experiment: str
    experiment_reference: str
    baseline: BaselineRecord
    trials: tuple[TrialRow, ...]
    identity: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    metric_names: tuple[str, ...] = OBJECTIVES
    mismatches_allowed: tuple[dict[str, Any], ...] = ()
    read_at: str = ""

    @property
    def hardware(self) -> dict[str, Any]:
        hardware: dict[str, Any] = self.info.get("hardware") or self.baseline.hardware
        return hardware

    @property
    def versions(self) -> dict[str, str]:
        versions: dict[str, str] = self.info.get("versions") or self.baseline.versions
        return versions

    def pareto(self) -> list[TrialRow]:
        """The Pareto front with the baseline taken into account (see :func:`pareto_front`)."""
        baseline = self.baseline.throughput.median if self.baseline.throughput else None
        return pareto_front(self.trials, baseline)

    def trial(self, number: int) -> TrialRow:
        """The trial with this number; KeyError when there is none."""
        for row in self.trials:
            if row.number == number:
                return row
        raise KeyError(f"study {self.study_name!r} has no trial {number}")

    def counts(self) -> dict[str, int]:
        """Trials by state."""
        counts: dict[str, int] = {}
        for row in self.trials:
            counts[row.state] = counts.get(row.state, 0) + 1
        return counts

    def fastest_within(self, max_fidelity: float) -> TrialRow | None:
        """The fastest complete trial with fidelity <= ``max_fidelity`` whose median throughput
        beats the baseline's (the rule of ``Study.best``); None when there is none."""
        if self.baseline.throughput is None:
            return None
        floor = self.baseline.throughput.median
        faster = [
            r
            for r in self.trials
            if r.scored
            and r.duplicate_of is None
            and r.fidelity is not None
            and r.fidelity <= max_fidelity
            and r.throughput is not None
            and r.throughput.median > floor
        ]
        if not faster:
            return None
        return max(faster, key=lambda r: (r.throughput.median if r.throughput else 0, -r.number))

    def recipe(self, row: TrialRow | None = None, max_fidelity: float | None = None) -> Recipe:
        """The recipe of ``row`` (the baseline's when None): its configuration, learning rate
        and provenance, as ``autotune export`` writes it and ``autotune.apply`` reads it. Its
        note compares the fidelity with ``max_fidelity`` (default: the study's tolerance)."""
        baseline = self.baseline.throughput.to_dict() if self.baseline.throughput else None
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        common: dict[str, Any] = {
            "tolerance": self.tolerance,
            "experiment": self.experiment_reference,
            "study": self.study_name,
            "storage": self.storage,
            "baseline_throughput": baseline,
            "created": now,
        }
        if row is None:
            if self.baseline.config is None:
                raise ValueError(f"study {self.study_name!r} has no baseline stored yet")
            return Recipe(
                config=self.baseline.config,
                learning_rate=self.baseline.learning_rate,
                throughput=baseline,
                speedup=1.0,
                fidelity=0.0,
                trial=None,
                effective=self.baseline.effective,
                hardware=self.baseline.hardware,
                versions=self.baseline.versions,
                note="the baseline configuration (float32, no XLA, pipeline defaults)",
                **common,
            )
        if row.config is None:
            raise ValueError(f"trial {row.number} has no configuration (it failed before one)")
        speedup = None
        if row.throughput is not None and self.baseline.throughput is not None:
            speedup = row.throughput.median / self.baseline.throughput.median
        return Recipe(
            config=row.config,
            learning_rate=row.learning_rate,
            throughput=row.throughput.to_dict() if row.throughput else None,
            speedup=speedup,
            fidelity=row.fidelity,
            trial=row.number,
            effective=row.effective,
            hardware=row.hardware,
            versions=row.versions,
            note=_recipe_note(
                row, speedup, self.tolerance if max_fidelity is None else max_fidelity
            ),
            **common,
        )


def _recipe_note(row: TrialRow, speedup: float | None, limit: float) -> str:
    if row.state != "complete":
        why = f" ({row.reason})" if row.reason else ""
        return f"trial {row.number} is {row.state}{why}: not a recommendation"
    if speedup is None or row.fidelity is None:
        return f"trial {row.number} was not scored"
    within = "within" if row.fidelity <= limit else "over"
    return (
        f"{speedup:.2f}x the baseline's throughput with fidelity {row.fidelity:.2f} ({within} "
        f"the limit {limit:g}; 1.0 = as different as a seed re-run)"
    )


def step_breakdown(result: dict[str, Any], config: TrialConfig | None) -> dict[str, float] | None:
    """Step time split into input and compute (ms per step) from a stored result's input
    ablation; None when the trial has none."""
    ablation = result.get("input_ablation")
    if not ablation or config is None:
        return None
    return InputAblation.from_dict(ablation).step_milliseconds(config.batch_size)


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") if value is not None else None


def row_of(trial: FrozenTrial) -> TrialRow:
    """A :class:`TrialRow` from an Optuna trial stored by an autotune study."""
    record = record_of(trial)
    attrs = record.user_attrs
    result: dict[str, Any] = attrs.get("result") or {}
    failure: dict[str, Any] = attrs.get("failure") or {}
    effective: dict[str, Any] = result.get("effective") or {}
    return TrialRow(
        number=record.number,
        state=record.state,
        config=record.config,
        throughput=record.throughput,
        fidelity=record.fidelity,
        feasible=record.feasible,
        failure_kind=record.failure_kind,
        reason=record.reason,
        duplicate_of=record.duplicate_of,
        curve=_curve(result.get("curve")),
        effective=effective,
        learning_rate=_optional_float(effective.get("learning_rate")),
        compile_seconds=_optional_float(result.get("compile_seconds")) if result else None,
        steady_step_seconds=_optional_float(result.get("steady_step_seconds")) if result else None,
        log_dir=attrs.get("log_dir"),
        log_tail=str(failure.get("log_tail") or ""),
        params=dict(trial.params),
        distributions={k: distribution_to_json(d) for k, d in trial.distributions.items()},
        started=_iso(trial.datetime_start),
        completed=_iso(trial.datetime_complete),
        final_metrics=dict(result.get("final_metrics") or {}),
        peak_host_bytes=result.get("peak_host_bytes"),
        peak_device_bytes=result.get("peak_device_bytes"),
        hardware=dict(result.get("hardware") or {}),
        versions=dict(result.get("versions") or {}),
        profile=step_breakdown(result, record.config),
    )


def _baseline_log_dir(url: str, name: str, trials: Sequence[TrialRow]) -> str | None:
    for row in trials:
        if row.log_dir:
            return str(Path(row.log_dir).parent)
    database = sqlite_path(url)
    if database is None:
        return None
    return str(database.resolve().parent / "autotune_logs" / name)


def baseline_of(stored: dict[str, Any], log_dir: str | None = None) -> BaselineRecord:
    """A :class:`BaselineRecord` from the study's ``autotune_baseline`` user attribute."""
    runs: dict[str, Any] = stored.get("runs") or {}
    main: dict[str, Any] = runs.get(str(BASELINE_SEEDS[0])) or {}
    config = stored.get("config") or main.get("config")
    floor = stored.get("noise_floor")
    effective: dict[str, Any] = main.get("effective") or {}
    return BaselineRecord(
        config=TrialConfig.from_dict(config, source="stored baseline config") if config else None,
        throughput=Estimate(**main["throughput"]) if main.get("throughput") else None,
        curve=_curve(main.get("curve")),
        seed_curves={int(seed): _curve(run.get("curve")) for seed, run in sorted(runs.items())},
        noise_floor=(
            NoiseFloor(floor["value"], floor["measured"], tuple(floor["pairs"])) if floor else None
        ),
        effective=effective,
        learning_rate=_optional_float(effective.get("learning_rate")),
        compile_seconds=_optional_float(main.get("compile_seconds")) if main else None,
        steady_step_seconds=_optional_float(main.get("steady_step_seconds")) if main else None,
        log_dir=log_dir,
        hardware=dict(main.get("hardware") or {}),
        versions=dict(main.get("versions") or {}),
        profile=step_breakdown(main, TrialConfig.from_dict(config) if config else None),
    )


def read_records(
    storage: optuna.storages.BaseStorage, url: str, study_name: str | None = None
) -> StudyRecords:
    """Reads a study from an open ``storage`` (``url`` is only used in messages and records).

    Only reads: the dashboard calls it every few seconds while another process writes.
    Raises ConfigError naming --study when the study is not there or was not made by autotune.
    """
    name = pick_study_name(storage, url, study_name)
    with quiet_experimental():
        study = optuna.load_study(
            study_name=name, storage=storage, sampler=optuna.samplers.RandomSampler()
        )
        metric_names = tuple(study.metric_names or OBJECTIVES)
    attrs = study.user_attrs
    identity: dict[str, Any] = attrs.get(IDENTITY_KEY) or {}
    info: dict[str, Any] = attrs.get(INFO_KEY) or {}
    if not identity:
        raise ConfigError(f"--study {name!r} in {url!r} was not made by autotune")
    trials = tuple(row_of(t) for t in study.get_trials(deepcopy=False))
    return StudyRecords(
        study_name=name,
        storage=url,
        tolerance=float(identity["tolerance"]),
        experiment=str(identity.get("experiment", "")),
        experiment_reference=str(info.get("experiment_reference", "")),
        baseline=baseline_of(attrs.get(BASELINE_KEY) or {}, _baseline_log_dir(url, name, trials)),
        trials=trials,
        identity=dict(identity),
        info=dict(info),
        metric_names=metric_names,
        mismatches_allowed=tuple(attrs.get("autotune_mismatches_allowed", [])),
        read_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )


def load_records(storage_url: str, study_name: str | None = None) -> StudyRecords:
    """Reads the study ``study_name`` (the storage's only study when None) from ``storage_url``.

    Raises ConfigError naming --storage or --study for a missing database or study.
    """
    storage = open_storage(storage_url, must_exist=True)
    return read_records(storage, storage_url, study_name)


__all__ = [
    "PROFILE_COMPONENTS",
    "BaselineRecord",
    "StudyRecords",
    "TrialRow",
    "baseline_of",
    "load_records",
    "pareto_front",
    "read_records",
    "row_of",
]
