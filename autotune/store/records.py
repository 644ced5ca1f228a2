"""A stored study read into plain rows for reports and the dashboard. No plotting, no TensorFlow.

The row types (what a run measured, :class:`RunFacts`, read once for a trial's row and the
baseline) and the storage keys are :mod:`autotune.store.schema`'s, the profile facts
:mod:`autotune.store.profile_facts`'; both are re-exported here, so views import rows from one
place.

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import optuna

from autotune.analysis.head_to_head import Confirmation
from autotune.exceptions import ConfigError
from autotune.measure import Estimate
from autotune.recipe import Recipe
from autotune.store.anchors import Anchors, epoch, read_anchors
from autotune.store.damage import damaged_study, stored_as
from autotune.store.log_folders import default_log_root
from autotune.store.objectives import MEMORY
from autotune.store.profile_facts import (
    PROFILE_SOURCES,
    STEP_BREAKDOWN_COMPONENTS,
    ProfileFacts,
    breakdown_source,
    merge_profile_rerun,
    profile_fields,
    rerun_for,
    step_breakdown,
    verdict_text,
)
from autotune.store.recommendation import recommend, within_memory
from autotune.store.schema import (
    BASELINE_KEY,
    CONFIRMATION_KEY,
    IDENTITY_KEY,
    INFO_KEY,
    MISMATCHES_KEY,
    OBJECTIVES,
    BaselineRecord,
    RunFacts,
    TrialRow,
    baseline_of,
    failure_of,
    profile_reruns,
    row_of,
)
from autotune.store.storage import (
    STUDY_NAME,
    database_file,
    open_storage,
    pick_study_name,
    quiet_experimental,
)
from autotune.store.throughput_only import throughput_only_reason
from autotune.store.warm_start import WARM_START_KEY, WarmStart, warm_start_of

#: A point to minimise in every coordinate: (-samples/s, fidelity[, peak MiB]).
Costs = tuple[float, ...]


def _costs(speed: float, fidelity: float, memory: float | None, objectives: Sequence[str]) -> Costs:
    if MEMORY in objectives:
        return (-speed, fidelity, memory if memory is not None else math.inf)
    return (-speed, fidelity)


def _row_costs(row: TrialRow, objectives: Sequence[str]) -> Costs:
    speed = row.throughput.median if row.throughput else 0.0
    return _costs(speed, row.fidelity or 0.0, row.peak_memory_mib, objectives)


def _dominates(a: Costs, b: Costs) -> bool:
    """Whether ``a`` is at least as good as ``b`` in every objective and better in one."""
    return all(x <= y for x, y in zip(a, b, strict=True)) and a != b


def pareto_front(
    rows: Sequence[TrialRow],
    baseline_throughput: float | None = None,
    objectives: Sequence[str] = OBJECTIVES,
    baseline_memory_mib: float | None = None,
) -> list[TrialRow]:
    """The feasible scored trials that no other feasible scored trial dominates on
    ``objectives``, fastest first, leaving out duplicates of an earlier trial.

    The baseline (fidelity 0 by definition) dominates every trial that is not faster than it
    (and, with memory an objective, uses no less memory than its ``baseline_memory_mib``), so
    with ``baseline_throughput`` (samples/s) such trials are left out too: on two objectives
    nothing slower than the baseline is on the front; on three, a slower trial is only when it
    needs less memory than the baseline.
    """
    candidates = [r for r in rows if r.scored and r.feasible and r.duplicate_of is None]
    costs = {r.number: _row_costs(r, objectives) for r in candidates}
    front = [
        r
        for r in candidates
        if not any(_dominates(costs[o.number], costs[r.number]) for o in candidates)
    ]
    if baseline_throughput is not None:
        front = [
            r
            for r in front
            if not dominated_by_baseline(r, baseline_throughput, objectives, baseline_memory_mib)
        ]
    return sorted(front, key=lambda r: (-(r.throughput.median if r.throughput else 0), r.number))


def dominated_by_baseline(
    row: TrialRow,
    baseline_throughput: float,
    objectives: Sequence[str] = OBJECTIVES,
    baseline_memory_mib: float | None = None,
) -> bool:
    """Whether the baseline (``baseline_throughput`` samples/s, fidelity 0 by definition, and
    ``baseline_memory_mib`` MiB) dominates or equals the scored ``row`` on ``objectives``."""
    baseline = _costs(baseline_throughput, 0.0, baseline_memory_mib, objectives)
    cost = _row_costs(row, objectives)
    return _dominates(baseline, cost) or baseline == cost


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
        confirmation: the head-to-head confirmation of the top candidates, once one started.
        anchors: the baseline re-measured during the search; speed-ups are against the nearest.
        throughput_only: why the fidelity check cannot see, for a study accepted as throughput
            only (:mod:`autotune.store.throughput_only`); None otherwise.
        warm_start: where the first proposals came from, for a study started warm from an
            earlier one (:mod:`autotune.store.warm_start`); None for a cold start.
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
    confirmation: Confirmation | None = None
    anchors: Anchors = field(default_factory=Anchors)
    throughput_only: str | None = None
    warm_start: WarmStart | None = None

    @property
    def hardware(self) -> dict[str, Any]:
        hardware: dict[str, Any] = self.info.get("hardware") or self.baseline.hardware
        return hardware

    @property
    def versions(self) -> dict[str, str]:
        versions: dict[str, str] = self.info.get("versions") or self.baseline.versions
        return versions

    @property
    def has_memory(self) -> bool:
        """Whether peak memory is one of the study's objectives."""
        return MEMORY in self.metric_names

    def reference(self, row: TrialRow | None) -> Estimate | None:
        """The baseline's samples/s nearest in time to ``row``'s start (the start's for None)."""
        anchors = self.anchors if self.anchors.baseline else Anchors(self.baseline.throughput)
        return anchors.at(epoch(row.started) if row else None)

    def speedup(self, row: TrialRow) -> float | None:
        """``row``'s median samples/s over its :meth:`reference`'s; None without both."""
        reference = self.reference(row)
        return row.throughput.median / reference.median if row.throughput and reference else None

    def pareto(self) -> list[TrialRow]:
        """The Pareto front on the study's objectives, with the baseline taken into account
        (see :func:`pareto_front`): each trial against the baseline measured nearest in time to
        its start (:meth:`reference`), so a machine that slowed down after the study's start
        does not leave the later trials dominated by the start's faster baseline."""
        front = pareto_front(self.trials, None, self.metric_names)
        if self.baseline.throughput is None:
            return front
        memory = self.baseline.peak_memory_mib
        return [
            row
            for row in front
            if (reference := self.reference(row)) is not None
            and not dominated_by_baseline(row, reference.median, self.metric_names, memory)
        ]

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

    def finished_count(self) -> int:
        """Trials that count towards a study's ``n_trials`` (see :attr:`TrialRow.counts`)."""
        return sum(row.counts for row in self.trials)

    def within(self, max_fidelity: float, max_memory_mib: float | None = None) -> list[TrialRow]:
        """The scored trials with fidelity <= ``max_fidelity`` and, with ``max_memory_mib``, a
        measured peak memory within it (MiB), duplicates of an earlier trial left out: what
        ``autotune best`` and the report count as "within the limit"."""
        return [
            r
            for r in self.trials
            if r.scored
            and r.duplicate_of is None
            and r.fidelity is not None
            and r.fidelity <= max_fidelity
            and within_memory(r, max_memory_mib)
        ]

    def fastest_within(
        self, max_fidelity: float, max_memory_mib: float | None = None
    ) -> TrialRow | None:
        """The trial :meth:`within` the limits with the largest speed-up over the baseline
        measured nearest in time (:attr:`anchors`), when it beats it (the rule of
        ``Study.best``); None when there is none."""
        ratios = {r.number: self.speedup(r) or 0.0 for r in self.trials}
        faster = [r for r in self.within(max_fidelity, max_memory_mib) if ratios[r.number] > 1]
        return max(faster, key=lambda r: (ratios[r.number], -r.number), default=None)

    def best(
        self, max_fidelity: float | None = None, max_memory_mib: float | None = None
    ) -> Recipe:
        """The recommendation within ``max_fidelity`` (default: the study's tolerance) and,
        with ``max_memory_mib``, within that peak memory (MiB): the recipe of
        :func:`autotune.store.recommendation.recommend`, the one rule every view shows (after a
        complete confirmation the confirmed winner with the confirmation rounds' figures, before
        one the fastest trial within the limits, unconfirmed, or the baseline)."""
        return recommend(self, max_fidelity, max_memory_mib).recipe

    def recipe(self, row: TrialRow | None = None, max_fidelity: float | None = None) -> Recipe:
        """The recipe of ``row`` (the baseline's when None): its configuration, learning rate
        and provenance, as ``autotune export`` writes it and ``autotune.apply`` reads it. Its
        note compares the fidelity with ``max_fidelity`` (default: the study's tolerance)."""
        baseline = ref.to_dict() if (ref := self.reference(row)) else None  # nearest row's time
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
        speedup = self.speedup(row)
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
        f"the limit {limit:g}; 1.0 = worse by as much as a seed re-run)"
    )


def _baseline_log_dir(url: str, name: str, trials: Sequence[TrialRow]) -> str | None:
    for row in trials:
        if row.log_dir:
            return str(Path(row.log_dir).parent)
    if database_file(url) is None:
        return None
    return str(default_log_root(url, name))


def read_records(
    storage: optuna.storages.BaseStorage, url: str, study_name: str | None = None
) -> StudyRecords:
    """Reads a study from an open ``storage`` (``url`` is only used in messages and records).

    Only reads: the dashboard calls it every few seconds while another process writes.
    Raises ConfigError (argument "study_name") when the study is not there or was not made by
    autotune.
    """
    name = pick_study_name(storage, url, study_name)
    with quiet_experimental():
        study = optuna.load_study(
            study_name=name, storage=storage, sampler=optuna.samplers.RandomSampler()
        )
        metric_names = tuple(study.metric_names or OBJECTIVES)
    attrs = study.user_attrs
    identity: dict[str, Any] = attrs.get(IDENTITY_KEY) or {}
    if not identity:
        raise ConfigError(f"{name!r} in {url!r} was not made by autotune", argument=STUDY_NAME)
    with damaged_study(url, name, "its study attributes"):
        stored_as(identity, dict, IDENTITY_KEY, "a JSON object")
        info: dict[str, Any] = stored_as(attrs.get(INFO_KEY), dict, INFO_KEY, "a JSON object")
        info = info or {}
        for key in ("hardware", "versions"):
            stored_as(info.get(key), dict, f"{INFO_KEY}.{key}", "a JSON object")
        tolerance = float(
            stored_as(
                identity.get("tolerance"), (int, float), f"{IDENTITY_KEY}.tolerance", "a number"
            )
        )
        mismatches = stored_as(attrs.get(MISMATCHES_KEY), list, MISMATCHES_KEY, "a list") or []
    reruns = profile_reruns(attrs)
    rows = []
    for stored in study.get_trials(deepcopy=False):
        with damaged_study(url, name, f"trial {stored.number}"):
            rows.append(row_of(stored, reruns))
    trials = tuple(rows)
    with damaged_study(url, name, f"its baseline ({BASELINE_KEY!r})"):
        baseline = baseline_of(attrs.get(BASELINE_KEY) or {}, _baseline_log_dir(url, name, trials))
    with damaged_study(url, name, f"its warm start ({WARM_START_KEY!r})"):
        warm_start = warm_start_of(attrs)
    return StudyRecords(
        study_name=name,
        storage=url,
        tolerance=tolerance,
        experiment=str(identity.get("experiment", "")),
        experiment_reference=str(info.get("experiment_reference", "")),
        baseline=baseline,
        trials=trials,
        identity=dict(identity),
        info=dict(info),
        metric_names=metric_names,
        mismatches_allowed=tuple(mismatches),
        read_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        confirmation=_confirmation_of(attrs.get(CONFIRMATION_KEY)),
        anchors=read_anchors(attrs),
        throughput_only=throughput_only_reason(attrs),
        warm_start=warm_start,
    )


def _confirmation_of(data: Any) -> Confirmation | None:
    """The stored confirmation; None when there is none or it cannot be read (a newer format)."""
    if not isinstance(data, dict):
        return None
    try:
        return Confirmation.from_dict(data)
    except (KeyError, TypeError, ValueError):
        return None


def load_records(storage_url: str, study_name: str | None = None) -> StudyRecords:
    """Reads the study ``study_name`` (the storage's only study when None) from ``storage_url``.

    Raises ConfigError (argument "storage" or "study_name") for a missing database or study.
    """
    storage = open_storage(storage_url, must_exist=True, read_only=True)
    return read_records(storage, storage_url, study_name)


__all__ = [
    "PROFILE_SOURCES",
    "STEP_BREAKDOWN_COMPONENTS",
    "BaselineRecord",
    "ProfileFacts",
    "RunFacts",
    "StudyRecords",
    "TrialRow",
    "baseline_of",
    "breakdown_source",
    "dominated_by_baseline",
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
    "within_memory",
]
