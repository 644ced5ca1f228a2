"""A stored study read into plain rows for reports and the dashboard. No plotting, no TensorFlow.

:func:`load_records` opens an Optuna storage, reads the study that autotune wrote there (its
identity, the baseline runs with their seed curves and noise floor, every trial) and returns a
frozen :class:`StudyRecords`. Nothing here loads the experiment file, so a report can be made on a
machine that cannot run the study. Units: throughput in samples/s, times in seconds unless a name
ends in ``_ms``, fidelity in units of the baseline's seed noise floor (1.0 = as different as a
re-run with another seed).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.distributions import distribution_to_json
from optuna.trial import FrozenTrial, TrialState

from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.fidelity import NoiseFloor
from autotune.measure import Estimate, InputAblation
from autotune.profile import BREAKDOWN_COMPONENTS, input_verdict
from autotune.recipe import Recipe
from autotune.result import CurvePoint
from autotune.schema import (
    BASELINE_KEY,
    BASELINE_SEEDS,
    CONFIG_ATTR,
    DUPLICATE_OF_ATTR,
    FAILURE_ATTR,
    FIDELITY_ATTR,
    IDENTITY_KEY,
    INFO_KEY,
    INTERRUPTED,
    INTERRUPTED_FAILURE,
    LOG_DIR_ATTR,
    MISMATCHES_KEY,
    OBJECTIVES,
    PROFILE_RERUN_PREFIX,
    PRUNED_REASON_ATTR,
    RESULT_ATTR,
    THROUGHPUT_ATTR,
)
from autotune.storage import open_storage, pick_study_name, quiet_experimental, sqlite_path

#: Components of a step-time breakdown, in drawing order (milliseconds per step). A profiled
#: run has XProf's input, host_compute, device_compute, compile and other; a run with only an
#: input ablation has input and compute.
STEP_BREAKDOWN_COMPONENTS = (
    "input",
    "host_compute",
    "device_compute",
    "compute",
    "compile",
    "other",
)
#: Where a run's profile came from: its own measurement or a profiling re-run.
PROFILE_SOURCES = ("trial", "rerun")


def _curve(points: Iterable[dict[str, Any]] | None) -> tuple[CurvePoint, ...]:
    return tuple(
        CurvePoint(samples=int(p["samples"]), val_loss=float(p["val_loss"])) for p in points or ()
    )


def _optional_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True, kw_only=True)
class ProfileFacts:
    """What a run's profile, input ablation and recompilation check say (see
    :func:`profile_fields`); the baseline and every trial row carry them.

    Attributes:
        breakdown: step-time breakdown in milliseconds per :data:`STEP_BREAKDOWN_COMPONENTS`
            key (see :func:`step_breakdown`): XProf's proportions scaled to the timed step time
            when the run was profiled, else the input ablation's input and compute; None when
            neither was measured.
        verdict: the input verdict (:meth:`autotune.profile.Verdict.to_dict`: verdict,
            input_fraction, source "xprof" or "ablation", why); None when neither was measured.
        profile: the profile as XProf read it (:meth:`autotune.profile.ProfileSummary.to_dict`),
            from the run or its Pareto re-run; None when not profiled.
        input_ablation: the input ablation (:meth:`autotune.measure.InputAblation.to_dict`).
        profile_source: "trial" when the run profiled itself, "rerun" when the profile came
            from the study's Pareto re-run (``autotune_profile:<n>``), None without a profile.
        profile_log_dir: the profile's TensorBoard folder (``tensorboard --logdir`` shows it).
        profile_error: why a profile that was asked for is missing.
        recompilation: XLA recompilation seen in the timed windows
            (:meth:`autotune.recompilation.Recompilation.to_dict`, with "flagged" and
            "message"); None when not checked.
    """

    breakdown: dict[str, float] | None = None
    verdict: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    input_ablation: dict[str, Any] | None = None
    profile_source: str | None = None
    profile_log_dir: str | None = None
    profile_error: str | None = None
    recompilation: dict[str, Any] | None = None

    @property
    def verdict_text(self) -> str:
        """'highly input-bound 37% (ablation; xprof 3%)', or "" when not measured."""
        return verdict_text(self.verdict, self.profile, self.input_ablation)

    @property
    def recompiled(self) -> bool:
        """Whether XLA recompiled during the timed windows."""
        return bool(self.recompilation and self.recompilation.get("flagged"))


@dataclass(frozen=True)
class BaselineRecord(ProfileFacts):
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

    Seed 0's step-time breakdown, input verdict, profile and recompilation check are the
    :class:`ProfileFacts` fields.
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
class TrialRow(ProfileFacts):
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
        user_attrs: everything stored with the trial (see :mod:`autotune.schema`).

    The step-time breakdown, input verdict, profile and recompilation check are the
    :class:`ProfileFacts` fields.
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
    user_attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def counts(self) -> bool:
        """Whether the trial counts as finished (interrupted ones are retried instead)."""
        return self.state in ("complete", "pruned") or (
            self.state == "failed" and self.failure_kind != INTERRUPTED
        )

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
    leaving out duplicates of an earlier trial.

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

    def within(self, max_fidelity: float) -> list[TrialRow]:
        """The scored trials with fidelity <= ``max_fidelity``, duplicates of an earlier trial
        left out: what ``autotune best`` and the report count as "within the limit"."""
        return [
            r
            for r in self.trials
            if r.scored
            and r.duplicate_of is None
            and r.fidelity is not None
            and r.fidelity <= max_fidelity
        ]

    def fastest_within(self, max_fidelity: float) -> TrialRow | None:
        """The fastest trial :meth:`within` ``max_fidelity`` whose median throughput beats the
        baseline's (the rule of ``Study.best``); None when there is none."""
        if self.baseline.throughput is None:
            return None
        floor = self.baseline.throughput.median
        faster = [
            r
            for r in self.within(max_fidelity)
            if r.throughput is not None and r.throughput.median > floor
        ]
        if not faster:
            return None
        return max(faster, key=lambda r: (r.throughput.median if r.throughput else 0, -r.number))

    def best(self, max_fidelity: float | None = None) -> Recipe:
        """The recipe of the trial :meth:`fastest_within` ``max_fidelity`` (default: the study's
        tolerance); the baseline's, with a note saying so, when no trial beats it."""
        limit = self.tolerance if max_fidelity is None else max_fidelity
        best = self.fastest_within(limit)
        if best is not None:
            return self.recipe(best, limit)
        return dataclasses.replace(
            self.recipe(None),
            note=f"no trial was faster than the baseline with fidelity <= {limit:g} "
            f"({len(self.within(limit))} within the limit); keep the baseline configuration",
        )

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


def step_breakdown(
    result: Mapping[str, Any], config: TrialConfig | None
) -> dict[str, float] | None:
    """A stored result's step time split into parts (milliseconds per step); None when it has
    neither a profile nor an input ablation.

    With a profile, XProf's :data:`autotune.profile.BREAKDOWN_COMPONENTS` (input, host_compute,
    device_compute, compile, other) scaled so they sum to the timed step time (batch size /
    median throughput): the profiler slows the profiled window down (by 20-50% on the digits
    CNN on a CPU), so only its proportions are kept. Without a throughput they stay as
    profiled. Without a profile, the input ablation's input and compute.
    """
    profile = result.get("profile")
    breakdown: Mapping[str, Any] = (profile or {}).get("breakdown_ms") or {}
    parts = {k: float(breakdown.get(k) or 0.0) for k in BREAKDOWN_COMPONENTS}
    total = sum(parts.values())
    if total > 0:
        step_ms = _step_ms(config, _estimate(result.get("throughput")))
        scale = 1.0 if step_ms is None else step_ms / total
        return {k: v * scale for k, v in parts.items()}
    ablation = result.get("input_ablation")
    if not ablation or config is None:
        return None
    return InputAblation.from_dict(dict(ablation)).step_milliseconds(config.batch_size)


def breakdown_source(breakdown: Mapping[str, float] | None) -> str | None:
    """Where a :func:`step_breakdown` came from: "xprof", "ablation" or None."""
    if not breakdown:
        return None
    return "ablation" if "compute" in breakdown else "xprof"


def _estimate(data: Any) -> Estimate | None:
    return Estimate(**data) if isinstance(data, dict) else None


def merge_profile_rerun(
    result: Mapping[str, Any], rerun: Mapping[str, Any] | None
) -> tuple[dict[str, Any], str | None]:
    """A stored result with its Pareto re-run (``autotune_profile:<n>``) merged in, and where
    its profile came from ("trial", "rerun" or None).

    A result with its own profile keeps it. Otherwise it takes the re-run's profile (or, when
    the re-run has none, its profile_error), and its input_ablation and recompilation where the
    result has none of its own. Throughput, fidelity and everything else stay the trial's.
    """
    merged = dict(result)
    if merged.get("profile"):
        return merged, "trial"
    if not rerun:
        return merged, None
    source = None
    if rerun.get("profile"):
        merged["profile"] = rerun["profile"]
        merged["profile_error"] = None
        source = "rerun"
    elif rerun.get("profile_error") and not merged.get("profile_error"):
        merged["profile_error"] = rerun["profile_error"]
    for part in ("input_ablation", "recompilation"):
        if not merged.get(part) and rerun.get(part):
            merged[part] = rerun[part]
    return merged, source


def profile_reruns(study_attrs: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """The Pareto re-runs stored in a study's user attributes, by trial number."""
    reruns: dict[int, dict[str, Any]] = {}
    for key, value in study_attrs.items():
        number = key[len(PROFILE_RERUN_PREFIX) :]
        if key.startswith(PROFILE_RERUN_PREFIX) and number.isdigit() and isinstance(value, dict):
            reruns[int(number)] = value
    return reruns


def verdict_text(
    verdict: Mapping[str, Any] | None,
    xprof: Mapping[str, Any] | None,
    ablation: Mapping[str, Any] | None,
) -> str:
    """'highly input-bound 37% (ablation; xprof 3%)': the verdict, its input share and source,
    then the other source's share when both were measured; "" without a verdict."""
    if not verdict:
        return ""
    source = str(verdict.get("source", ""))
    other = ablation if source == "xprof" else xprof
    other_name = "ablation" if source == "xprof" else "xprof"
    beside = ""
    if other and isinstance(other.get("input_fraction"), (int, float)):
        beside = f"; {other_name} {float(other['input_fraction']):.0%}"
    return f"{verdict['verdict']} {float(verdict['input_fraction']):.0%} ({source}{beside})"


def profile_fields(
    result: Mapping[str, Any], config: TrialConfig | None, rerun: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The :class:`ProfileFacts` fields of a :class:`TrialRow` or :class:`BaselineRecord` from a
    stored result and its Pareto re-run: breakdown, verdict, profile, input_ablation,
    profile_source, profile_log_dir, profile_error and recompilation."""
    merged, source = merge_profile_rerun(result, rerun)
    profile = merged.get("profile") or None
    ablation = merged.get("input_ablation") or None
    verdict = input_verdict(profile, ablation)
    log_dir = None
    if profile:
        log_dir = profile.get("log_dir") or (rerun or {}).get("log_dir")
    return {
        "breakdown": step_breakdown(merged, config),
        "verdict": verdict.to_dict() if verdict else None,
        "profile": dict(profile) if profile else None,
        "input_ablation": dict(ablation) if ablation else None,
        "profile_source": source,
        "profile_log_dir": str(log_dir) if log_dir else None,
        "profile_error": merged.get("profile_error") or None,
        "recompilation": dict(merged["recompilation"]) if merged.get("recompilation") else None,
    }


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") if value is not None else None


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


def row_of(trial: FrozenTrial, reruns: Mapping[int, Mapping[str, Any]] | None = None) -> TrialRow:
    """A :class:`TrialRow` from an Optuna trial stored by an autotune study, with its Pareto
    re-run from ``reruns`` (by trial number; see :func:`profile_reruns`) merged in. A duplicate
    of an earlier trial takes that trial's re-run."""
    attrs = trial.user_attrs
    config = TrialConfig.from_dict(attrs[CONFIG_ATTR]) if attrs.get(CONFIG_ATTR) else None
    result: dict[str, Any] = attrs.get(RESULT_ATTR) or {}
    failure = failure_of(trial)
    reason = attrs.get(PRUNED_REASON_ATTR) if trial.state == TrialState.PRUNED else None
    effective: dict[str, Any] = result.get("effective") or {}
    duplicate_of = attrs.get(DUPLICATE_OF_ATTR)
    return TrialRow(
        number=trial.number,
        state=_STATES[trial.state],
        config=config,
        throughput=_estimate(attrs.get(THROUGHPUT_ATTR)),
        fidelity=attrs.get(FIDELITY_ATTR),
        feasible=_feasible(trial),
        failure_kind=failure["kind"] if failure else None,
        reason=failure["message"] if failure else reason,
        duplicate_of=duplicate_of,
        curve=_curve(result.get("curve")),
        effective=effective,
        learning_rate=_optional_float(effective.get("learning_rate")),
        compile_seconds=_optional_float(result.get("compile_seconds")) if result else None,
        steady_step_seconds=_optional_float(result.get("steady_step_seconds")) if result else None,
        log_dir=attrs.get(LOG_DIR_ATTR),
        log_tail=str((failure or {}).get("log_tail") or ""),
        params=dict(trial.params),
        distributions={k: distribution_to_json(d) for k, d in trial.distributions.items()},
        started=_iso(trial.datetime_start),
        completed=_iso(trial.datetime_complete),
        final_metrics=dict(result.get("final_metrics") or {}),
        peak_host_bytes=result.get("peak_host_bytes"),
        peak_device_bytes=result.get("peak_device_bytes"),
        hardware=dict(result.get("hardware") or {}),
        versions=dict(result.get("versions") or {}),
        user_attrs=dict(attrs),
        **profile_fields(result, config, rerun_for(trial.number, duplicate_of, reruns)),
    )


def rerun_for(
    number: int, duplicate_of: int | None, reruns: Mapping[int, Mapping[str, Any]] | None
) -> Mapping[str, Any] | None:
    """Trial ``number``'s Pareto re-run in ``reruns``, else that of the trial it duplicates
    (``duplicate_of``)."""
    if not reruns:
        return None
    rerun = reruns.get(number)
    if rerun is None and duplicate_of is not None:
        rerun = reruns.get(duplicate_of)
    return rerun


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
        **profile_fields(main, TrialConfig.from_dict(config) if config else None),
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
    reruns = profile_reruns(attrs)
    trials = tuple(row_of(t, reruns) for t in study.get_trials(deepcopy=False))
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
        mismatches_allowed=tuple(attrs.get(MISMATCHES_KEY, [])),
        read_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )


def load_records(storage_url: str, study_name: str | None = None) -> StudyRecords:
    """Reads the study ``study_name`` (the storage's only study when None) from ``storage_url``.

    Raises ConfigError naming --storage or --study for a missing database or study.
    """
    storage = open_storage(storage_url, must_exist=True)
    return read_records(storage, storage_url, study_name)


__all__ = [
    "PROFILE_SOURCES",
    "STEP_BREAKDOWN_COMPONENTS",
    "BaselineRecord",
    "ProfileFacts",
    "StudyRecords",
    "TrialRow",
    "baseline_of",
    "breakdown_source",
    "failure_of",
    "load_records",
    "merge_profile_rerun",
    "pareto_front",
    "profile_fields",
    "profile_reruns",
    "read_records",
    "rerun_for",
    "row_of",
    "step_breakdown",
    "verdict_text",
]
