"""What Optuna's own tools (optuna-dashboard, ``optuna.visualization``) read of an autotune study.

**Constraints.** Optuna 5's :meth:`optuna.Trial.set_constraint` stores each constraint under the
trial system attribute ``constraints:<name>``; optuna-dashboard (0.21) reads only ``constraints``,
a list of floats, the format Optuna's samplers write for a ``constraints_func``. A study stored
with ``set_constraint`` alone is listed there with ``constraints: []`` for every trial, and every
trial is drawn as feasible. :func:`set_constraints` stores both: Optuna and autotune's records
read the named constraint, the dashboard reads the list. ``FrozenTrial.constraints`` reads both
formats, so an autotune trial's constraints read ``{"fidelity": c, "0": c}``: one constraint,
listed twice. "Feasible" (every value <= 0) and ``study.best_trials`` are as before; a sum of
violations (what TPE ranks infeasible trials by) doubles, for every new trial alike, so the
order is kept except against infeasible trials stored before this module. Trials stored
before this module show no constraints in the dashboard; a finished trial cannot be given system
attributes afterwards, and read-only commands never write to the storage.

optuna-dashboard 0.21 still computes its "Best Trials" card from the values alone, ignoring
constraints (optuna/optuna-dashboard#772); its Pareto-front plot uses the stored constraints and
marks only feasible trials as best.

**The baseline.** The baseline is not an Optuna trial (every trial a study stores counts towards
``n_trials`` and takes part in the search). Its full record is the study user attribute
``autotune_baseline`` (:data:`autotune.store.schema.BASELINE_KEY`), too long for the dashboard to
show whole; :func:`baseline_summary` is a short readable digest of it, stored as the study user
attribute :data:`~autotune.store.schema.BASELINE_SUMMARY_KEY` (see
:func:`autotune.study.baseline.ensure`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from autotune.measure import format_throughput
from autotune.store.schema import BASELINE_SUMMARY_KEY, BaselineRecord

#: The trial system attribute optuna-dashboard reads constraints from (a list of floats; its
#: ``optuna_dashboard._serializer.CONSTRAINTS_KEY`` and Optuna's ``_CONSTRAINTS_KEY``).
DASHBOARD_CONSTRAINTS_KEY = "constraints"
#: The prefix of the trial system attributes ``Trial.set_constraint`` writes (one per name).
NAMED_CONSTRAINT_PREFIX = f"{DASHBOARD_CONSTRAINTS_KEY}:"


def set_constraints(trial: optuna.Trial, constraints: Mapping[str, float]) -> None:
    """Stores ``constraints`` (name -> value; feasible when every value is <= 0) with
    :meth:`optuna.Trial.set_constraint` and, in the same order, as the list optuna-dashboard
    reads. Call it once per trial. Raises TypeError or ValueError, storing nothing, for a value
    that is not a number or is NaN (Optuna's rule)."""
    values: dict[str, float] = {}
    for name, value in constraints.items():
        try:
            values[name] = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"constraint {name!r} must be a float. Received: {value!r}") from None
        if math.isnan(values[name]):
            raise ValueError(f"constraint {name!r} must not be NaN. Received: {value!r}")
    for name, value in values.items():
        trial.set_constraint(name, value)
    # Optuna 5 has no public setter for a trial's system attributes; its samplers write this
    # list through the storage the same way.
    trial.storage.set_trial_system_attr(
        trial._trial_id, DASHBOARD_CONSTRAINTS_KEY, list(values.values())
    )


def named_constraints(trial: FrozenTrial) -> dict[str, float]:
    """The constraints ``trial`` stored by name (``set_constraint``), without the list
    optuna-dashboard reads; a trial with only the list (a ``constraints_func``) gives
    Optuna's reading of it."""
    named = {
        key[len(NAMED_CONSTRAINT_PREFIX) :]: float(value)
        for key, value in trial.system_attrs.items()
        if key.startswith(NAMED_CONSTRAINT_PREFIX)
    }
    return named or dict(trial.constraints)


def copy_constraints(source: FrozenTrial, trial: optuna.Trial) -> None:
    """Stores ``source``'s constraints on ``trial`` (a duplicate reusing its measurement), in
    both formats (:func:`set_constraints`)."""
    constraints = named_constraints(source)
    if constraints:
        set_constraints(trial, constraints)


def baseline_summary(baseline: BaselineRecord) -> dict[str, Any] | None:
    """A short, readable digest of the stored baseline for the study's user attributes
    (optuna-dashboard shows each as JSON, cut at 1024 characters); None until seed 0's throughput
    and the noise floor are both stored."""
    if baseline.throughput is None or baseline.noise_floor is None or baseline.config is None:
        return None
    return {
        "what": (
            "the experiment's float32, no-XLA configuration every trial is compared with; "
            "not an Optuna trial, so Optuna's best trials leave it out, though it dominates "
            "every trial that is not faster (its fidelity is 0 by definition)"
        ),
        "config": baseline.config.describe(),
        "throughput": format_throughput(baseline.throughput),
        "samples_per_second": round(baseline.throughput.median, 1),
        "fidelity": 0.0,
        "noise_floor": float(f"{baseline.noise_floor.value:.4g}"),
        "seeds": sorted(baseline.seed_curves),
        "full_record": "study user attribute autotune_baseline",
    }


__all__ = [
    "BASELINE_SUMMARY_KEY",
    "DASHBOARD_CONSTRAINTS_KEY",
    "NAMED_CONSTRAINT_PREFIX",
    "baseline_summary",
    "copy_constraints",
    "named_constraints",
    "set_constraints",
]
