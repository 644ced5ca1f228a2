"""A measured trial's scores: what is stored of its result, its fidelity both ways, and what a
trial stopped early tells the sampler.

A trial stopped early (slower than the baseline) or pruned as predicted out of memory is stored
PRUNED with a violated constraint: ``speed`` (:func:`speed_shortfall`) or ``memory``. Optuna's
TPE sampler ranks PRUNED trials without intermediate values as one tie, and with few feasible
trials the earliest of them can land in its "good" group (``_split_trials`` in
``optuna/samplers/_tpe/sampler.py``); a trial with a violated constraint is ranked with the
infeasible ones instead, by how much it violates, after every feasible trial. The study's
records still read it as pruned, with its reason. The objective calls these; they hold no study
state. No TensorFlow here.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Sequence
from typing import NoReturn

import optuna
from optuna.trial import FrozenTrial, TrialState

from autotune.exceptions import ConfigError, TrialFailure
from autotune.fidelity import NoiseFloor, fidelity_distance
from autotune.store import writer
from autotune.store.objectives import FIDELITY, MEMORY, MIB, THROUGHPUT, peak_memory_bytes
from autotune.store.result import CurvePoint, RunResult
from autotune.store.schema import PRUNED_REASON_ATTR
from autotune.study.optuna_tools import copy_constraints, set_constraints
from autotune.study.prediction import CurveTwin

#: The constraint of a trial stopped as slower than the baseline (:func:`speed_shortfall`).
SPEED_CONSTRAINT = "speed"
#: The ``memory`` constraint of a trial pruned as predicted out of memory (violated: > 0).
PREDICTED_OOM_VIOLATION = 1.0
#: Bounds of the ``speed`` constraint: always violated, never infinite (JSON has no infinity).
MIN_SHORTFALL, MAX_SHORTFALL = 1e-3, 1e6


def prune(trial: optuna.Trial, reason: str) -> NoReturn:
    """Records why and prunes the trial (raises optuna.TrialPruned)."""
    writer.write_pruned_reason(trial, reason)
    raise optuna.TrialPruned(reason)


def speed_shortfall(throughput: float, baseline_low: float) -> float:
    """The ``speed`` constraint of a trial stopped as slower than the baseline: how many times
    slower than the baseline's lower bound it ran, minus one (0.5: the bound is 1.5x its
    samples/s; 37: 38x slower). At least :data:`MIN_SHORTFALL`, so it always reads as violated,
    and on the scale of a fidelity violation for a trial a few times slower."""
    if not throughput > 0:
        return MAX_SHORTFALL
    return min(max(baseline_low / throughput - 1.0, MIN_SHORTFALL), MAX_SHORTFALL)


def prune_slower(
    trial: optuna.Trial, reason: str, throughput: float | None, baseline_low: float
) -> NoReturn:
    """Prunes a trial stopped early, with its ``speed`` constraint when its throughput
    (samples/s) was measured."""
    if throughput is not None:
        set_constraints(trial, {SPEED_CONSTRAINT: speed_shortfall(throughput, baseline_low)})
    prune(trial, reason)


def prune_predicted_oom(trial: optuna.Trial, reason: str) -> NoReturn:
    """Prunes a configuration predicted to run out of memory, with a violated ``memory``
    constraint."""
    set_constraints(trial, {"memory": PREDICTED_OOM_VIOLATION})
    prune(trial, reason)


def with_twin_curve(trial: optuna.Trial, result: RunResult, twin: CurveTwin | None) -> RunResult:
    """``result`` with ``twin``'s curve (its configuration differs in pipeline settings alone,
    so it learns the same curve; see :func:`autotune.study.prediction.learning_twin`), the
    source stored as :data:`~autotune.store.schema.CURVE_FROM_ATTR`; ``result`` itself without a
    twin or when it stopped before its curve."""
    if twin is None or result.stopped_early is not None or result.throughput is None:
        return result
    writer.write_curve_from(trial, twin.source)
    return dataclasses.replace(result, curve=[CurvePoint(**point) for point in twin.curve])


@contextlib.contextmanager
def failure_recorded(trial: optuna.Trial) -> Iterator[None]:
    """Records how a trial's run failed before the error propagates: a TrialFailure with its
    kind, a ConfigError (the experiment is broken; the study then stops) as an "exception",
    Ctrl-C or SIGTERM as interrupted (the trial process is already stopped)."""
    try:
        yield
    except TrialFailure as failure:
        writer.write_failure(trial, failure)
        raise
    except ConfigError as error:
        writer.write_failure(trial, TrialFailure("exception", str(error)))
        raise
    except KeyboardInterrupt:
        writer.mark_interrupted(trial)
        raise


def score_fidelity(
    trial: optuna.Trial,
    result: RunResult,
    baseline_curve: Sequence[tuple[float, float]],
    floor: NoiseFloor,
) -> float:
    """The trial's one-sided fidelity (the objective), stored with its symmetric one beside it
    (:data:`~autotune.store.schema.FIDELITY_SYMMETRIC_ATTR`). Raises TrialFailure ("exception") when
    the curve cannot be compared (empty, or a non-finite loss)."""
    curve = [(p.samples, p.val_loss) for p in result.curve]
    try:
        fidelity = fidelity_distance(curve, baseline_curve, floor)
        symmetric = fidelity_distance(curve, baseline_curve, floor, one_sided=False)
    except ValueError as error:
        raise TrialFailure("exception", f"fidelity cannot be computed: {error}") from error
    writer.write_fidelity(trial, fidelity, symmetric)
    return fidelity


def objective_values(
    result: RunResult, fidelity: float, objectives: Sequence[str]
) -> tuple[float, ...]:
    """A scored trial's values for ``objectives``: median samples/s, fidelity and, when
    ``memory`` is one, peak memory (MiB; the device's on a GPU, else the trial process's).
    Raises TrialFailure ("exception") when memory is an objective and was not measured."""
    if result.throughput is None:  # such a trial is pruned before it is scored
        raise TrialFailure("exception", "a trial without a throughput cannot be scored")
    values = {THROUGHPUT: result.throughput.median, FIDELITY: fidelity}
    if MEMORY in objectives:
        peak = peak_memory_bytes(result.peak_host_bytes, result.peak_device_bytes)
        if peak is None:
            raise TrialFailure("exception", "memory is an objective, but no peak was measured")
        values[MEMORY] = peak / MIB
    return tuple(values[name] for name in objectives)


def reuse(trial: optuna.Trial, duplicate: FrozenTrial) -> tuple[float, ...]:
    """Trial ``trial`` duplicates the measured ``duplicate``: its measurement is reused (a
    pruned one is pruned again, with the reason)."""
    writer.write_duplicate_of(trial, duplicate.number)
    copy_constraints(duplicate, trial)
    if duplicate.state == TrialState.PRUNED:
        earlier = duplicate.user_attrs.get(PRUNED_REASON_ATTR)
        prune(trial, f"same configuration as trial {duplicate.number}: {earlier}")
    writer.copy_measurement(trial, duplicate)
    return tuple(duplicate.values)


__all__ = [
    "PREDICTED_OOM_VIOLATION",
    "SPEED_CONSTRAINT",
    "failure_recorded",
    "objective_values",
    "prune",
    "prune_predicted_oom",
    "prune_slower",
    "reuse",
    "score_fidelity",
    "speed_shortfall",
    "with_twin_curve",
]
