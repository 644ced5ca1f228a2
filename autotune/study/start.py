"""A study's structured start: the probes a careful engineer makes first, then their combination.

A study's first trials are not random draws but the probes a careful engineer makes first: the
baseline's one-factor neighbours, each changing one setting of the float32, no-XLA baseline
(every other precision the space holds, at the base batch size; XLA on; the batch size doubled
and quadrupled, rounded to the space; the most steps per execution the space allows; the JAX
backend, with the ``jax.jit`` it trains through, where the space holds it), and the
practitioner's checklist configuration for the machine (:mod:`autotune.checklist`); then, once
they are measured, their combination: each probed setting at the value that ran fastest within
the fidelity tolerance (the baseline's value where no probe beat the baseline), as an engineer
combines the changes that helped (:func:`combined_config`; a combination on the JAX backend
compiles with the ``jax.jit`` JAX needs). Why: each probe answers one question
(does this precision, XLA, a larger batch help here?), so the sampler starts from measured main
effects instead of from a handful of random points that may all sit in one trap; and a factor
whose probe is confidently bad (``mixed_float16`` on a CPU without fast float16, tens of times
slower) is stopped in seconds and stored with a violated constraint
(:mod:`autotune.study.scoring`), which the sampler then ranks below every feasible trial, so
configurations sharing it become unlikely. A probe outside the space is moved to the nearest
value the space holds; one the space cannot express (a precision it does not search) is left
out. The start is stored with the study (:data:`START_KEY`), so a resumed study finishes it and
one made with ``start="random"`` never gets one. No TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune.attribution import changed_settings
from autotune.checklist import checklist_config
from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.schema import CONFIG_ATTR
from autotune.space import Choice, IntRange, Parameter, SearchSpace
from autotune.study import baseline

START_MODES = ("structured", "random")
#: The study user attribute holding the structured start's configurations (a list of dicts).
START_KEY = "autotune_start"
#: The study user attribute holding the start's combination (None: nothing to combine).
COMBINED_KEY = "autotune_start_combined"
#: Batch-size multiples of the base a structured start probes.
BATCH_FACTORS = (2, 4)
#: The settings a one-factor probe changes.
FACTORS = ("precision", "jit_compile", "batch_size", "steps_per_execution", "backend")


def check_start(start: str) -> str:
    if start not in START_MODES:
        raise ConfigError(
            f"must be one of {list(START_MODES)}. Received: {start!r}", argument="start"
        )
    return start


def _fits(parameter: Parameter, value: Any) -> bool:
    if isinstance(parameter, IntRange):
        return (
            isinstance(value, int)
            and not isinstance(value, bool)
            and parameter.low <= value <= parameter.high
            and value % parameter.multiple_of == 0
        )
    return any(value == v and type(value) is type(v) for v in parameter.values)


def _snap(parameter: Parameter | None, value: Any, fallback: Any) -> Any:
    """``value`` if the parameter can take it; for a number, the nearest value it holds; else
    ``fallback`` if it can take that, else its first value. ``fallback`` where the space does
    not search the parameter (a study keeps the baseline's value there)."""
    if parameter is None:
        return fallback
    if _fits(parameter, value):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if isinstance(parameter, IntRange):
            step = parameter.multiple_of
            return min(max(round(value / step) * step, parameter.low), parameter.high)
        numbers = [v for v in parameter.values if isinstance(v, int) and not isinstance(v, bool)]
        if numbers:
            return min(numbers, key=lambda v: (abs(v - value), v))
    if _fits(parameter, fallback):
        return fallback
    return parameter.low if isinstance(parameter, IntRange) else parameter.values[0]


def _in_space(space: SearchSpace, wanted: Mapping[str, Any], base: Mapping[str, Any]) -> dict:
    """``wanted`` with each value the space searches snapped to it (else ``base``'s); on the
    JAX backend ``jit_compile`` is true, as :meth:`SearchSpace.sample` makes it."""
    snapped = {
        key: _snap(space.parameters.get(key), value, base[key]) for key, value in wanted.items()
    }
    if snapped.get("backend") == "jax":
        snapped["jit_compile"] = True
    return snapped


def centre_of(space: SearchSpace, base_batch_size: int) -> TrialConfig:
    """The configuration the probes change one setting of: the baseline, moved into the space
    where the space does not hold it."""
    baseline = TrialConfig.baseline(base_batch_size).to_dict()
    return TrialConfig.from_dict(_in_space(space, baseline, baseline))


def structured_start(
    space: SearchSpace, base_batch_size: int, hardware: Mapping[str, Any]
) -> list[TrialConfig]:
    """The structured start's configurations for ``space``, in the order they run (see the
    module docstring); never the baseline itself, never twice the same."""
    baseline = TrialConfig.baseline(base_batch_size).to_dict()
    centre = centre_of(space, base_batch_size).to_dict()
    probes: list[dict[str, Any]] = [centre]
    precision = space.parameters.get("precision")
    if isinstance(precision, Choice):
        probes += [{**centre, "precision": p} for p in precision.values if p != centre["precision"]]
    probes.append({**centre, "jit_compile": True})
    probes += [{**centre, "batch_size": base_batch_size * f} for f in BATCH_FACTORS]
    steps = space.parameters.get("steps_per_execution")
    if steps is not None:  # the most steps per call the space allows
        most = steps.high if isinstance(steps, IntRange) else max(steps.values)
        probes.append({**centre, "steps_per_execution": most})
    backend = space.parameters.get("backend")
    if isinstance(backend, Choice):
        probes += [{**centre, "backend": b} for b in backend.values if b != centre["backend"]]
    probes.append(checklist_config(base_batch_size, hardware).to_dict())
    configs: list[TrialConfig] = []
    for probe in probes:
        config = TrialConfig.from_dict(_in_space(space, probe, centre))
        if config.to_dict() != baseline and config not in configs:
            configs.append(config)
    return configs


def space_params(space: SearchSpace, config: TrialConfig) -> dict[str, Any]:
    """The Optuna parameters that make :meth:`SearchSpace.sample` return ``config`` (on the JAX
    backend without ``jit_compile``, which is not drawn there)."""
    values = config.to_dict()
    drawn = [k for k in space.parameters if not (k == "jit_compile" and config.backend == "jax")]
    return {key: values[key] for key in drawn}


def record_start(study: optuna.Study, configs: Sequence[TrialConfig]) -> None:
    """Stores the start's configurations with a new study (an empty list for a random start)."""
    study.set_user_attr(START_KEY, [c.to_dict() for c in configs])


def combined_config(
    centre: TrialConfig,
    centre_throughput: float,
    measured: Sequence[tuple[TrialConfig, float, float]],
    tolerance: float,
) -> TrialConfig | None:
    """The start's combination: ``centre`` with each factor set to the value of its fastest
    feasible one-factor probe. ``measured`` holds (config, samples/s, fidelity) of complete
    trials; a probe counts when it differs from ``centre`` in that factor alone, has fidelity
    <= ``tolerance`` and beats ``centre_throughput`` (samples/s). None when fewer than two
    factors improved (a single winner was measured already)."""
    best: dict[str, tuple[float, Any]] = {}
    for config, throughput, fidelity in measured:
        changed = changed_settings(config, centre)
        if len(changed) != 1 or changed[0] not in FACTORS or fidelity > tolerance:
            continue
        if throughput > max(centre_throughput, best.get(changed[0], (0.0, None))[0]):
            best[changed[0]] = (throughput, getattr(config, changed[0]))
    if len(best) < 2:
        return None
    combined = centre.to_dict() | {k: v for k, (_, v) in best.items()}
    if combined["backend"] == "jax":
        combined["jit_compile"] = True
    return TrialConfig.from_dict(combined)


def _tried(study: optuna.Study) -> set[TrialConfig]:
    return {
        TrialConfig.from_dict(t.user_attrs[CONFIG_ATTR])
        for t in study.get_trials(deepcopy=False)
        if t.user_attrs.get(CONFIG_ATTR) is not None
    }


def _combine(study: optuna.Study, space: SearchSpace, tolerance: float) -> TrialConfig | None:
    """The combination of the finished start (see :func:`combined_config`)."""
    measured = [
        (TrialConfig.from_dict(t.user_attrs[CONFIG_ATTR]), t.values[0], t.values[1])
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if t.user_attrs.get(CONFIG_ATTR) is not None
    ]
    baseline_config = TrialConfig.from_dict(baseline.stored(study)["config"])
    centre = centre_of(space, baseline_config.batch_size)
    if centre == baseline_config:
        speed = baseline.reference(study)[0].median
    else:  # the space does not hold the baseline: its nearest configuration was probed first
        speed = max((t for c, t, _ in measured if c == centre), default=float("inf"))
    return combined_config(centre, speed, measured, tolerance)


def enqueue_next(study: optuna.Study, space: SearchSpace, tolerance: float) -> TrialConfig | None:
    """Enqueues the next configuration of the structured start that no trial has tried (in any
    state): the stored probes in order, then, once none is waiting or running, their
    combination (stored as :data:`COMBINED_KEY`). Returns it; None once the start is done or
    while trials enqueued by someone else wait."""
    active = study.get_trials(deepcopy=False, states=(TrialState.WAITING, TrialState.RUNNING))
    if any(t.state == TrialState.WAITING for t in active):
        return None  # enqueued already (by this or by the caller): let them run first
    tried = _tried(study)
    starts = [
        TrialConfig.from_dict(stored, f"study user attribute {START_KEY}")
        for stored in study.user_attrs.get(START_KEY) or []
    ]
    pending = [c for c in starts if c not in tried]
    if pending:
        study.enqueue_trial(space_params(space, pending[0]))
        return pending[0]
    if not starts or COMBINED_KEY in study.user_attrs or active:
        return None
    combined = _combine(study, space, tolerance)
    study.set_user_attr(COMBINED_KEY, combined.to_dict() if combined else None)
    if combined is None or combined in tried:
        return None
    study.enqueue_trial(space_params(space, combined))
    return combined


__all__ = [
    "BATCH_FACTORS",
    "COMBINED_KEY",
    "FACTORS",
    "START_KEY",
    "START_MODES",
    "centre_of",
    "check_start",
    "combined_config",
    "enqueue_next",
    "record_start",
    "space_params",
    "structured_start",
]
