"""The one writer of an autotune study's storage: every study and trial user attribute.

:mod:`autotune.store.schema` names the keys and their JSON shapes, :mod:`autotune.store.records`
reads them back; this module is the only one that writes them (a unit test holds the package to
it), one function per thing stored. The study's orchestration (:mod:`autotune.study`) decides
what and when; the functions here decide only how it is stored. No TensorFlow here.

Study attributes take the :class:`optuna.Study`; trial attributes the running
:class:`optuna.Trial`, except the two that a study writes on a trial it does not run (its
worker's heartbeat and a dead worker's interruption), which take the storage and the trial's id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from autotune.analysis.head_to_head import Confirmation
from autotune.config import TrialConfig
from autotune.exceptions import TrialFailure
from autotune.store.predicted import PREDICTED_FROM_ATTR, PREDICTION_OFF_KEY
from autotune.store.result import RunResult
from autotune.store.schema import (
    ALIVE_ATTR,
    BASELINE_KEY,
    BASELINE_SUMMARY_KEY,
    COMBINED_KEY,
    CONFIG_ATTR,
    CONFIRMATION_KEY,
    CURVE_FROM_ATTR,
    DUPLICATE_OF_ATTR,
    FAILURE_ATTR,
    FIDELITY_ATTR,
    FIDELITY_SYMMETRIC_ATTR,
    IDENTITY_KEY,
    INFO_KEY,
    INTERRUPTED_FAILURE,
    LOG_DIR_ATTR,
    MISMATCHES_KEY,
    PROFILE_RERUN_PREFIX,
    PRUNED_REASON_ATTR,
    REFINED_KEY,
    RESULT_ATTR,
    START_KEY,
    TARGET_KEY,
    THROUGHPUT_ATTR,
    WORKER_ATTR,
)
from autotune.store.throughput_only import THROUGHPUT_ONLY_KEY
from autotune.store.warm_start import WARM_START_ATTR, WARM_START_KEY, WarmStart

#: The trial attributes that hold a measurement, copied whole to a duplicate that reuses it.
MEASUREMENT_ATTRS = (THROUGHPUT_ATTR, FIDELITY_ATTR, FIDELITY_SYMMETRIC_ATTR, RESULT_ATTR)

# ------------------------------------------------------------------------- study attributes


def write_fidelity_prediction(study: optuna.Study, enabled: bool) -> None:
    """Stores whether the study skips proposals predicted infeasible
    (:data:`~autotune.store.predicted.PREDICTION_OFF_KEY`; on unless stored off)."""
    study.set_user_attr(PREDICTION_OFF_KEY, not enabled)


def write_throughput_only(study: optuna.Study, reason: str) -> None:
    """Stores that the study is accepted as throughput only, and why its fidelity check cannot
    see (:data:`~autotune.store.throughput_only.THROUGHPUT_ONLY_KEY`)."""
    study.set_user_attr(THROUGHPUT_ONLY_KEY, reason)


def write_identity(
    study: optuna.Study, identity: Mapping[str, Any], info: Mapping[str, Any]
) -> None:
    """Stores a new study's identity (:data:`~autotune.store.schema.IDENTITY_KEY`), then its
    provenance (:data:`~autotune.store.schema.INFO_KEY`)."""
    study.set_user_attr(IDENTITY_KEY, dict(identity))
    study.set_user_attr(INFO_KEY, dict(info))


def write_mismatches(study: optuna.Study, allowed: Sequence[Mapping[str, Any]]) -> None:
    """Stores the resumes allowed despite a different identity, each ``{"when",
    "differences"}`` (:data:`~autotune.store.schema.MISMATCHES_KEY`)."""
    study.set_user_attr(MISMATCHES_KEY, [dict(entry) for entry in allowed])


def write_baseline(study: optuna.Study, baseline: Mapping[str, Any]) -> None:
    """Stores the baseline ``{"config", "runs": {seed: RunResult dict}, "noise_floor"}``
    (:data:`~autotune.store.schema.BASELINE_KEY`)."""
    study.set_user_attr(BASELINE_KEY, dict(baseline))


def write_baseline_summary(study: optuna.Study, summary: Mapping[str, Any] | None) -> None:
    """Stores the baseline's digest for Optuna's tools
    (:data:`~autotune.store.schema.BASELINE_SUMMARY_KEY`)."""
    study.set_user_attr(BASELINE_SUMMARY_KEY, None if summary is None else dict(summary))


def write_target(study: optuna.Study, n_trials: int) -> None:
    """Stores the finished trials the study runs towards
    (:data:`~autotune.store.schema.TARGET_KEY`)."""
    study.set_user_attr(TARGET_KEY, n_trials)


def write_start(study: optuna.Study, configs: Sequence[TrialConfig]) -> None:
    """Stores the structured start's configurations (:data:`~autotune.store.schema.START_KEY`;
    an empty list for a random start)."""
    study.set_user_attr(START_KEY, [config.to_dict() for config in configs])


def write_warm_start(study: optuna.Study, warm: WarmStart) -> None:
    """Stores where a warm study's first proposals came from
    (:data:`~autotune.store.warm_start.WARM_START_KEY`)."""
    study.set_user_attr(WARM_START_KEY, warm.to_dict())


def enqueue_warm(study: optuna.Study, params: Mapping[str, Any], origin: Mapping[str, Any]) -> None:
    """Enqueues a warm start's proposal with where it came from
    (:data:`~autotune.store.warm_start.WARM_START_ATTR`) on the trial."""
    study.enqueue_trial(dict(params), user_attrs={WARM_START_ATTR: dict(origin)})


def write_combined(study: optuna.Study, combined: TrialConfig | None) -> None:
    """Stores the start's combination, None when there was nothing to combine
    (:data:`~autotune.store.schema.COMBINED_KEY`)."""
    study.set_user_attr(COMBINED_KEY, combined.to_dict() if combined else None)


def write_refined(study: optuna.Study, centres: Sequence[TrialConfig]) -> None:
    """Stores the configurations the start's local search searched around, in order
    (:data:`~autotune.store.schema.REFINED_KEY`)."""
    study.set_user_attr(REFINED_KEY, [config.to_dict() for config in centres])


def write_confirmation(study: optuna.Study, confirmation: Confirmation) -> None:
    """Stores the head-to-head confirmation as it stands
    (:data:`~autotune.store.schema.CONFIRMATION_KEY`)."""
    study.set_user_attr(CONFIRMATION_KEY, confirmation.to_dict())


def write_anchor(study: optuna.Study, key: str, anchor: Mapping[str, Any]) -> None:
    """Stores one anchor of the baseline whole, under its own ``key``
    (:data:`autotune.store.anchors.ANCHOR_PREFIX`)."""
    study.set_user_attr(key, dict(anchor))


def profile_rerun_key(number: int) -> str:
    """The study attribute of trial ``number``'s Pareto profiling re-run."""
    return f"{PROFILE_RERUN_PREFIX}{number}"


def write_profile_rerun(study: optuna.Study, number: int, entry: Mapping[str, Any]) -> None:
    """Stores trial ``number``'s Pareto profiling re-run ``{"log_dir", "profile",
    "profile_error", "input_ablation", "recompilation"}``
    (:data:`~autotune.store.schema.PROFILE_RERUN_PREFIX`)."""
    study.set_user_attr(profile_rerun_key(number), dict(entry))


# ------------------------------------------------------------------------- trial attributes


def mark_running(trial: optuna.Trial, worker: Mapping[str, Any]) -> None:
    """Records the worker running ``trial`` (first: a trial without one is failed as orphaned
    after a grace period) and that it has not failed (yet)."""
    trial.set_user_attr(WORKER_ATTR, dict(worker))
    trial.set_user_attr(FAILURE_ATTR, None)


def write_config(trial: optuna.Trial, config: TrialConfig) -> None:
    """Stores the trial's configuration (:data:`~autotune.store.schema.CONFIG_ATTR`)."""
    trial.set_user_attr(CONFIG_ATTR, config.to_dict())


def write_log_dir(trial: optuna.Trial, log_dir: str) -> None:
    """Stores the trial's log folder (:data:`~autotune.store.schema.LOG_DIR_ATTR`)."""
    trial.set_user_attr(LOG_DIR_ATTR, log_dir)


def write_result(trial: optuna.Trial, result: RunResult) -> None:
    """Stores what the trial measured: its RunResult without the configuration (stored on its
    own, :func:`write_config`) and, when measured, its samples/s estimate."""
    trial.set_user_attr(RESULT_ATTR, result.to_dict(with_config=False))
    if result.throughput is not None:
        trial.set_user_attr(THROUGHPUT_ATTR, result.throughput.to_dict())


def write_fidelity(trial: optuna.Trial, one_sided: float, symmetric: float) -> None:
    """Stores the trial's fidelity distances: the one-sided objective and the symmetric one."""
    trial.set_user_attr(FIDELITY_ATTR, one_sided)
    trial.set_user_attr(FIDELITY_SYMMETRIC_ATTR, symmetric)


def write_pruned_reason(trial: optuna.Trial, reason: str) -> None:
    """Stores why the trial is pruned (:data:`~autotune.store.schema.PRUNED_REASON_ATTR`)."""
    trial.set_user_attr(PRUNED_REASON_ATTR, reason)


def write_predicted_from(trial: optuna.Trial, numbers: Sequence[int]) -> None:
    """Stores the trials (numbers; -1: the baseline) a trial skipped as predicted infeasible was
    predicted from (:data:`~autotune.store.predicted.PREDICTED_FROM_ATTR`)."""
    trial.set_user_attr(PREDICTED_FROM_ATTR, [int(n) for n in numbers])


def write_curve_from(trial: optuna.Trial, source: str) -> None:
    """Stores whose curve the trial is scored with
    (:data:`~autotune.store.schema.CURVE_FROM_ATTR`)."""
    trial.set_user_attr(CURVE_FROM_ATTR, source)


def write_failure(trial: optuna.Trial, failure: TrialFailure) -> None:
    """Stores how the trial failed ``{"kind", "message", "log_tail"}``
    (:data:`~autotune.store.schema.FAILURE_ATTR`)."""
    trial.set_user_attr(FAILURE_ATTR, failure.to_dict())


def mark_interrupted(trial: optuna.Trial) -> None:
    """Stores the trial as interrupted (Ctrl-C, SIGTERM): it is retried, not counted."""
    trial.set_user_attr(FAILURE_ATTR, INTERRUPTED_FAILURE)


def write_duplicate_of(trial: optuna.Trial, number: int) -> None:
    """Stores the earlier trial whose measurement ``trial`` reuses."""
    trial.set_user_attr(DUPLICATE_OF_ATTR, number)


def copy_measurement(trial: optuna.Trial, source: FrozenTrial) -> None:
    """Stores ``source``'s measurement (:data:`MEASUREMENT_ATTRS`) on ``trial`` as it is."""
    for key in MEASUREMENT_ATTRS:
        trial.set_user_attr(key, source.user_attrs.get(key))


def clear_failure_for_retry(trial: FrozenTrial) -> None:
    """Clears the failure record of an interrupted ``trial`` about to be queued again (Optuna's
    retry copies its user attributes): the retry starts without it."""
    trial.user_attrs[FAILURE_ATTR] = None


def write_alive(storage: optuna.storages.BaseStorage, trial_id: int, when: float) -> None:
    """Stores when the worker running trial ``trial_id`` was last alive (seconds since the
    epoch; :data:`~autotune.store.schema.ALIVE_ATTR`)."""
    storage.set_trial_user_attr(trial_id, ALIVE_ATTR, when)


def mark_orphan_interrupted(storage: optuna.storages.BaseStorage, trial_id: int) -> None:
    """Stores trial ``trial_id``, whose worker is gone, as interrupted (it is then failed)."""
    storage.set_trial_user_attr(trial_id, FAILURE_ATTR, INTERRUPTED_FAILURE)


__all__ = [
    "MEASUREMENT_ATTRS",
    "clear_failure_for_retry",
    "copy_measurement",
    "enqueue_warm",
    "mark_interrupted",
    "mark_orphan_interrupted",
    "mark_running",
    "profile_rerun_key",
    "write_alive",
    "write_baseline",
    "write_baseline_summary",
    "write_combined",
    "write_config",
    "write_confirmation",
    "write_curve_from",
    "write_duplicate_of",
    "write_failure",
    "write_fidelity",
    "write_fidelity_prediction",
    "write_identity",
    "write_log_dir",
    "write_mismatches",
    "write_predicted_from",
    "write_pruned_reason",
    "write_refined",
    "write_result",
    "write_start",
    "write_target",
    "write_throughput_only",
    "write_warm_start",
]
