"""What a trial's outcome is known to be before it runs: a duplicate of a measured configuration,
or an out-of-memory failure predicted by a smaller batch size that already ran out of memory."""

from __future__ import annotations

import optuna
from optuna.trial import FrozenTrial, TrialState

from autotune.config import TrialConfig
from autotune.schema import CONFIG_ATTR, FAILURE_ATTR


def measured_duplicate(study: optuna.Study, number: int, config: TrialConfig) -> FrozenTrial | None:
    """A finished trial (complete or pruned) other than ``number`` that already measured
    ``config``: trial ``number`` duplicates it and reuses its measurement."""
    wanted = config.to_dict()
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
        if trial.number != number and trial.user_attrs.get(CONFIG_ATTR) == wanted:
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


def predicted_oom_reason(trial: FrozenTrial) -> str:
    """Why a configuration is pruned without running, given the trial that ran out of memory."""
    return (
        f"predicted out of memory: trial {trial.number} ran out of memory at batch_size="
        f"{trial.user_attrs[CONFIG_ATTR]['batch_size']} with the same precision and jit_compile"
    )


__all__ = ["measured_duplicate", "out_of_memory_at_most", "predicted_oom_reason"]
