"""A measured trial's scores: what is stored of its result, and its fidelity both ways.

The study's objective calls these; they hold no study state. No TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

import optuna

from autotune.exceptions import TrialFailure
from autotune.fidelity import NoiseFloor, fidelity_distance
from autotune.result import RunResult
from autotune.schema import FIDELITY_ATTR, FIDELITY_SYMMETRIC_ATTR, PRUNED_REASON_ATTR


def prune(trial: optuna.Trial, reason: str) -> NoReturn:
    """Records why and prunes the trial (raises optuna.TrialPruned)."""
    trial.set_user_attr(PRUNED_REASON_ATTR, reason)
    raise optuna.TrialPruned(reason)


def compact(result: RunResult) -> dict[str, Any]:
    """What a trial keeps of its RunResult in the storage (everything but the config, which is
    stored on its own)."""
    data = result.to_dict()
    data.pop("config", None)
    return data


def score_fidelity(
    trial: optuna.Trial,
    result: RunResult,
    baseline_curve: Sequence[tuple[float, float]],
    floor: NoiseFloor,
) -> float:
    """The trial's one-sided fidelity (the objective), stored with its symmetric one beside it
    (:data:`~autotune.schema.FIDELITY_SYMMETRIC_ATTR`). Raises TrialFailure ("exception") when
    the curve cannot be compared (empty, or a non-finite loss)."""
    curve = [(p.samples, p.val_loss) for p in result.curve]
    try:
        fidelity = fidelity_distance(curve, baseline_curve, floor)
        symmetric = fidelity_distance(curve, baseline_curve, floor, one_sided=False)
    except ValueError as error:
        raise TrialFailure("exception", f"fidelity cannot be computed: {error}") from error
    trial.set_user_attr(FIDELITY_ATTR, fidelity)
    trial.set_user_attr(FIDELITY_SYMMETRIC_ATTR, symmetric)
    return fidelity


__all__ = ["compact", "prune", "score_fidelity"]
