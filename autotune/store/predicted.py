"""The stored keys of a trial skipped as predicted infeasible, and reading them back.

A trial whose configuration the measured trials already rule out
(:mod:`autotune.study.fidelity_prediction`) is stored PRUNED with its reason
(:data:`~autotune.store.schema.PRUNED_REASON_ATTR`, "predicted infeasible: ...") and, under
:data:`PREDICTED_FROM_ATTR`, the trial numbers it was predicted from (a list of ints; -1 stands
for the baseline). It ran nothing: no throughput, no curve, no fidelity of its own. A study that
stores :data:`PREDICTION_OFF_KEY` true measures every proposal instead (the method before the
prediction, kept to compare against). No TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Trial attribute: the trials (numbers; -1: the baseline) a skipped trial was predicted from.
PREDICTED_FROM_ATTR = "predicted_from"
#: Study attribute: true turns the fidelity prediction off (every proposal is measured).
PREDICTION_OFF_KEY = "autotune_fidelity_prediction_off"
#: The number :data:`PREDICTED_FROM_ATTR` stores for the baseline.
BASELINE_NUMBER = -1


def predicted_from(user_attrs: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The trial numbers a trial skipped as predicted infeasible was predicted from (-1: the
    baseline); None for a trial that was not skipped so (a study stored before the prediction
    included)."""
    value = user_attrs.get(PREDICTED_FROM_ATTR)
    if not isinstance(value, list) or not all(isinstance(n, int) for n in value):
        return None
    return tuple(value)


def sources_text(numbers: Sequence[int]) -> str:
    """'trials 2, 5', 'trial 5', 'the baseline and trial 3' (-1: the baseline)."""
    trials = [str(n) for n in numbers if n != BASELINE_NUMBER]
    named = [f"trial{'s' if len(trials) > 1 else ''} {', '.join(trials)}"] if trials else []
    return " and ".join((["the baseline"] if BASELINE_NUMBER in numbers else []) + named)


__all__ = [
    "BASELINE_NUMBER",
    "PREDICTED_FROM_ATTR",
    "PREDICTION_OFF_KEY",
    "predicted_from",
    "sources_text",
]
