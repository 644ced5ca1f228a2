"""What a trial's outcome is known to be before it runs: a duplicate of a measured configuration,
an out-of-memory failure predicted by a smaller batch size that already ran out of memory, or its
validation curve, already trained by a configuration that differs from it in pipeline settings
alone (:func:`learning_twin`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from autotune.analysis.attribution import same_curve
from autotune.config import TrialConfig
from autotune.store.schema import (
    BASELINE_KEY,
    BASELINE_SEEDS,
    CONFIG_ATTR,
    FAILURE_ATTR,
    RESULT_ATTR,
)


@dataclass(frozen=True)
class CurveTwin:
    """A stored curve (``[{"samples", "val_loss"}, ...]``) of the same learning settings and
    where it comes from ("trial 4", "the baseline (seed 0)")."""

    source: str
    curve: list[dict[str, Any]]


def measured_duplicate(study: optuna.Study, number: int, config: TrialConfig) -> FrozenTrial | None:
    """A finished trial (complete or pruned) other than ``number`` that already measured
    ``config``: trial ``number`` duplicates it and reuses its measurement. Stored configurations
    are read as :class:`TrialConfig` (one stored before a field existed has its default)."""
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
        stored = trial.user_attrs.get(CONFIG_ATTR)
        if trial.number != number and stored and TrialConfig.from_dict(stored) == config:
            return trial
    return None


def out_of_memory_at_most(study: optuna.Study, config: TrialConfig) -> FrozenTrial | None:
    """A failed trial that ran out of memory at a batch size <= config's, with the same
    precision and jit_compile."""
    for trial in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        failure = trial.user_attrs.get(FAILURE_ATTR) or {}
        other = trial.user_attrs.get(CONFIG_ATTR)
        if failure.get("kind") != "oom" or not other:
            continue
        if (
            other["precision"] == config.precision
            and other["jit_compile"] == config.jit_compile
            and other["batch_size"] <= config.batch_size
        ):
            return trial
    return None


def learning_twin(study: optuna.Study, number: int, config: TrialConfig) -> CurveTwin | None:
    """The baseline's seed-0 curve, or a complete trial's other than ``number``, trained with
    the trials' seed and settings that train the same curve as ``config``'s (they differ only in
    settings the table marks as not changing what the model learns:
    :attr:`autotune.settings.Setting.changes_learning`); None when there is none. A trial then
    skips its own curve and is scored with this."""
    baseline = study.user_attrs.get(BASELINE_KEY) or {}
    seed_0 = (baseline.get("runs") or {}).get(str(BASELINE_SEEDS[0])) or {}
    baseline_config = baseline.get("config")
    if (
        baseline_config
        and seed_0.get("curve")
        and same_curve(TrialConfig.from_dict(baseline_config), config)
    ):
        return CurveTwin(f"the baseline (seed {BASELINE_SEEDS[0]})", seed_0["curve"])
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        other = trial.user_attrs.get(CONFIG_ATTR)
        curve = (trial.user_attrs.get(RESULT_ATTR) or {}).get("curve")
        if (
            trial.number != number
            and other
            and curve
            and same_curve(TrialConfig.from_dict(other), config)
        ):
            return CurveTwin(f"trial {trial.number}", curve)
    return None


def predicted_oom_reason(trial: FrozenTrial) -> str:
    """Why a configuration is pruned without running, given the trial that ran out of memory."""
    return (
        f"predicted out of memory: trial {trial.number} ran out of memory at batch_size="
        f"{trial.user_attrs[CONFIG_ATTR]['batch_size']} with the same precision and jit_compile"
    )


__all__ = [
    "CurveTwin",
    "learning_twin",
    "measured_duplicate",
    "out_of_memory_at_most",
    "predicted_oom_reason",
]
