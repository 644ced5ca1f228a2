"""A study's structured start: an engineer's first probes, their combination, a local search.

A study's first trials are not random draws but the probes a careful engineer makes first: the
baseline's one-factor neighbours, each changing one setting of the float32, no-XLA baseline
(every other precision the space holds, at the base batch size; XLA on; the batch size doubled
and quadrupled, rounded to the space; the most steps per execution the space allows; the JAX
backend, with the ``jax.jit`` it trains through, where the space holds it), and the
practitioner's checklist configuration for the machine (:mod:`autotune.study.checklist`); then, once
they are measured, their combination: each probed setting at the value that ran fastest within
the fidelity tolerance (the baseline's value where no probe beat the baseline), as an engineer
combines the changes that helped (:func:`combined_config`; a combination on the JAX backend
compiles with the ``jax.jit`` JAX needs). Where the space searches the learning-rate rule
(:mod:`autotune.lr_rules`), a probe or the combination at a larger batch that ran faster than
the baseline but drifted over the tolerance is tried again under each other rule the space holds,
before anything else; and a faster mixed-precision one that drifted where float32 at the same
batch did not, with the layers the practice names kept in float32 (:mod:`autotune.study.rescues`,
:mod:`autotune.float32_layers`). Then a short local search from the best configuration
measured so far: its one-factor neighbours (:func:`neighbours`), tried one at a time until one
is faster within the tolerance, which becomes the next centre while rounds remain (at most
:data:`REFINE_ROUNDS` centres, stored as :data:`REFINED_KEY`). The settings interact: bfloat16
can lose at the base batch size and win at a large one, and the JAX backend and XLA are
alternatives, not additions, so a combination of main effects can miss the answer by one
setting, or fail as a whole, and the neighbours of the best look there. Why: each probe answers
one question
(does this precision, XLA, a larger batch help here?), so the sampler starts from measured main
effects instead of from a handful of random points that may all sit in one trap; and a factor
whose probe is confidently bad (``mixed_float16`` on a CPU without fast float16, tens of times
slower) is stopped in seconds and stored with a violated constraint
(:mod:`autotune.study.scoring`), which the sampler then ranks below every feasible trial, so
configurations sharing it become unlikely. A probe outside the space is moved to the nearest
value the space holds; one the space cannot express (a precision it does not search) is left
out. The start is stored with the study (:data:`START_KEY`), so a resumed study finishes it and
one made with ``start="random"`` never gets one. A study started warm measures an earlier
study's answer and front before all of it (:mod:`autotune.study.warm_start`). No TensorFlow
here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune import float32_layers, settings
from autotune.analysis.attribution import changed_settings
from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.space import (
    IntRange,
    Parameter,
    SearchSpace,
    inactive_parameters,
    space_values,
)
from autotune.store import writer
from autotune.store.anchors import epoch
from autotune.store.schema import COMBINED_KEY, CONFIG_ATTR, REFINED_KEY, START_KEY
from autotune.store.warm_start import warm_start_of
from autotune.study import anchor, baseline
from autotune.study import rescues as rescue
from autotune.study.checklist import checklist_config

START_MODES = ("structured", "random")
#: Batch-size multiples of the base a structured start probes.
BATCH_FACTORS = (2, 4)
#: The settings a one-factor probe changes, in the order they are probed: those the settings table
#: ranks (:attr:`autotune.settings.Setting.probe`; read from it when a start is built).
FACTORS = settings.probed()
#: How many best configurations the start's local search probes the neighbours of.
REFINE_ROUNDS = 1


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


def _in_space(
    space: SearchSpace,
    wanted: Mapping[str, Any],
    base: Mapping[str, Any],
    base_batch_size: int | None = None,
) -> dict:
    """``wanted`` with each value the space searches snapped to it (else ``base``'s); on the
    JAX backend ``jit_compile`` is true, and at ``base_batch_size`` the learning-rate rule the
    experiment's, as :meth:`SearchSpace.sample` makes them."""
    snapped = {
        key: _snap(space.parameters.get(key), value, base[key]) for key, value in wanted.items()
    }
    return snapped | inactive_parameters(snapped, base_batch_size)


def centre_of(space: SearchSpace, base_batch_size: int) -> TrialConfig:
    """The configuration the probes change one setting of: the baseline, moved into the space
    where the space does not hold it."""
    baseline = TrialConfig.baseline(base_batch_size).to_dict()
    return TrialConfig.from_dict(_in_space(space, baseline, baseline, base_batch_size))


def moved_into(space: SearchSpace, config: TrialConfig, base_batch_size: int) -> TrialConfig:
    """``config`` as ``space`` holds it: each value the space searches snapped to it (the
    nearest number it holds), each setting it does not search at the baseline's value."""
    centre = centre_of(space, base_batch_size).to_dict()
    return TrialConfig.from_dict(_in_space(space, config.to_dict(), centre, base_batch_size))


def _probe_values(
    name: str, parameter: Parameter, centre: Mapping[str, Any], base_batch_size: int
) -> list[Any]:
    """The values a start's one-factor probes give setting ``name``: the batch size times
    :data:`BATCH_FACTORS`; a true or false setting toggled (XLA on); a number at the most the
    space allows (steps per execution); each other choice (precision, backend)."""
    if name == "batch_size":
        return [base_batch_size * f for f in BATCH_FACTORS]
    if settings.setting(name).kind is bool:
        return [not centre[name]]
    if settings.setting(name).kind is int:
        return [parameter.high if isinstance(parameter, IntRange) else max(parameter.values)]
    return list(space_values(parameter))


def structured_start(
    space: SearchSpace, base_batch_size: int, hardware: Mapping[str, Any]
) -> list[TrialConfig]:
    """The structured start's configurations for ``space``, in the order they run (see the
    module docstring); never the baseline itself, never twice the same."""
    baseline = TrialConfig.baseline(base_batch_size).to_dict()
    centre = centre_of(space, base_batch_size).to_dict()
    probes: list[dict[str, Any]] = [centre]
    for name in settings.probed():
        parameter = space.parameters.get(name)
        if parameter is not None:
            values = _probe_values(name, parameter, centre, base_batch_size)
            probes += [{**centre, name: v} for v in values if v != centre[name]]
    probes.append(checklist_config(base_batch_size, hardware).to_dict())
    configs: list[TrialConfig] = []
    for probe in probes:
        config = TrialConfig.from_dict(_in_space(space, probe, centre, base_batch_size))
        if config.to_dict() != baseline and config not in configs:
            configs.append(config)
    return configs


def neighbours(
    space: SearchSpace, config: TrialConfig, base_batch_size: int | None = None
) -> list[TrialConfig]:
    """``config``'s one-factor neighbours that the space holds, in the order the start tries
    them: each other precision; XLA toggled (on TensorFlow); the batch size doubled and halved
    (rounded to the space); each other value of steps per execution (for a range: its ends);
    each other backend (to JAX with ``jax.jit``; to TensorFlow keeping the XLA setting)."""
    centre = config.to_dict()
    changes: list[dict[str, Any]] = []
    for name in settings.probed():
        parameter = space.parameters.get(name)
        if parameter is None or name in inactive_parameters(centre):
            continue
        if name == "batch_size":
            values: list[Any] = [config.batch_size * 2, max(config.batch_size // 2, 1)]
        elif settings.setting(name).kind is bool:
            values = [not centre[name]]
        elif isinstance(parameter, IntRange):
            values = [parameter.low, parameter.high]
        else:
            values = list(parameter.values)
        changes += [{name: v} for v in values if v != centre[name]]
    found: list[TrialConfig] = []
    for change in changes:
        wanted = {**centre, **change}
        neighbour = TrialConfig.from_dict(_in_space(space, wanted, centre, base_batch_size))
        if neighbour != config and neighbour not in found:
            found.append(neighbour)
    return found


def space_params(space: SearchSpace, config: TrialConfig) -> dict[str, Any]:
    """The Optuna parameters that make :meth:`SearchSpace.sample` return ``config``, without
    those its configuration does not draw (:func:`inactive_parameters`: ``jit_compile`` on the
    JAX backend, ``float32_layers`` under float32, ``lr_rule`` at the base batch size)."""
    values = config.to_dict()
    inactive = inactive_parameters(values)
    drawn = [k for k in space.parameters if k not in inactive]
    rule = space.parameters.get("lr_rule")
    if rule is not None and config.lr_rule not in space_values(rule):
        drawn.remove("lr_rule")  # the experiment's rule at the base batch size: not drawn there
    return {key: values[key] for key in drawn}


def record_start(study: optuna.Study, configs: Sequence[TrialConfig]) -> None:
    """Stores the start's configurations with a new study (an empty list for a random start)."""
    writer.write_start(study, configs)


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
        if len(changed) != 1 or changed[0] not in settings.probed() or fidelity > tolerance:
            continue
        if throughput > max(centre_throughput, best.get(changed[0], (0.0, None))[0]):
            best[changed[0]] = (throughput, getattr(config, changed[0]))
    if len(best) < 2:
        return None
    combined = centre.to_dict() | {k: v for k, (_, v) in best.items()}
    return TrialConfig.from_dict(combined | inactive_parameters(combined))


def _tried(study: optuna.Study) -> set[TrialConfig]:
    return {
        TrialConfig.from_dict(t.user_attrs[CONFIG_ATTR])
        for t in study.get_trials(deepcopy=False)
        if t.user_attrs.get(CONFIG_ATTR) is not None
    }


def _measured(study: optuna.Study) -> list[tuple[TrialConfig, float, float]]:
    """(config, samples/s, fidelity) of the study's complete trials, each samples/s scaled to
    the start baseline's conditions by the anchor nearest in time to the trial's start
    (:meth:`~autotune.store.anchors.Anchors.at_start_speed`; as measured without anchors), so
    probes measured before and after a drift compare with the baseline and each other."""
    anchors = anchor.stored(study)
    return [
        (
            TrialConfig.from_dict(t.user_attrs[CONFIG_ATTR]),
            anchors.at_start_speed(t.values[0], epoch(t.datetime_start)),
            t.values[1],
        )
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if t.user_attrs.get(CONFIG_ATTR) is not None
    ]


def _centre_and_speed(
    study: optuna.Study, space: SearchSpace, measured: Sequence[tuple[TrialConfig, float, float]]
) -> tuple[TrialConfig, float]:
    """The probes' centre and its samples/s: the baseline's, or where the space does not hold
    the baseline, that of its nearest configuration (probed first; inf until it is)."""
    baseline_config = TrialConfig.from_dict(baseline.stored(study)["config"])
    centre = centre_of(space, baseline_config.batch_size)
    if centre == baseline_config:
        return centre, baseline.reference(study)[0].median
    return centre, max((t for c, t, _ in measured if c == centre), default=float("inf"))


def _combine(study: optuna.Study, space: SearchSpace, tolerance: float) -> TrialConfig | None:
    """The combination of the finished start (see :func:`combined_config`)."""
    measured = _measured(study)
    centre, speed = _centre_and_speed(study, space, measured)
    return combined_config(centre, speed, measured, tolerance)


def best_measured(
    centre_speed: float, measured: Sequence[tuple[TrialConfig, float, float]], tolerance: float
) -> TrialConfig | None:
    """The fastest configuration of ``measured`` ((config, samples/s, fidelity)) within the
    fidelity ``tolerance``; None unless it beats ``centre_speed`` (samples/s)."""
    feasible = [(speed, config) for config, speed, fidelity in measured if fidelity <= tolerance]
    if not feasible:
        return None
    speed, config = max(feasible, key=lambda pair: pair[0])
    return config if speed > centre_speed else None


def _rescue(
    study: optuna.Study,
    space: SearchSpace,
    tolerance: float,
    starts: Sequence[TrialConfig],
    tried: set[TrialConfig],
) -> TrialConfig | None:
    """The next untried rescue (:mod:`autotune.study.rescues`: a learning-rate rule, then
    float32 layers) of the start's probes and their combination, or None."""
    measured = _measured(study)
    _, centre_speed = _centre_and_speed(study, space, measured)
    stored = study.user_attrs.get(COMBINED_KEY)
    where = f"study user attribute {COMBINED_KEY}"
    combined = [TrialConfig.from_dict(stored, where)] if stored else []
    candidates = [*starts, *combined]
    stored_baseline = baseline.stored(study)
    base = TrialConfig.from_dict(stored_baseline["config"])
    effective = [  # what the baseline's runs recorded: the experiment's rule, the model's layers
        run.get("effective") or {}
        for run in (stored_baseline.get("runs") or {}).values()
        if isinstance(run, dict)
    ]
    scalings = {e.get("lr_scaling") for e in effective} - {None}
    scaling = next(iter(scalings)) if len(scalings) == 1 else None
    counts = next((c for c in map(float32_layers.available, effective) if c is not None), None)
    rescues = [
        *rescue.rule_rescues(
            space, candidates, measured, centre_speed, tolerance, base.batch_size, scaling
        ),
        *rescue.island_rescues(space, candidates, measured, centre_speed, tolerance, base, counts),
    ]
    return next((c for c in rescues if c not in tried), None)


def _refine(
    study: optuna.Study, space: SearchSpace, tolerance: float, tried: set[TrialConfig]
) -> TrialConfig | None:
    """The start's local search (see the module docstring): the next neighbour of the best
    configuration measured so far that is neither in ``tried`` nor the baseline. A new best
    becomes one of the :data:`REFINE_ROUNDS` centres searched around (stored as
    :data:`REFINED_KEY`). None when there is none (no configuration beats the centre, the rounds
    are spent, or every neighbour was tried)."""
    measured = _measured(study)
    _, centre_speed = _centre_and_speed(study, space, measured)
    best = best_measured(centre_speed, measured, tolerance)
    if best is None:
        return None
    refined = [
        TrialConfig.from_dict(stored, f"study user attribute {REFINED_KEY}")
        for stored in study.user_attrs.get(REFINED_KEY) or []
    ]
    if best not in refined:
        if len(refined) >= REFINE_ROUNDS:
            return None
        writer.write_refined(study, [*refined, best])
    elif best != refined[-1]:
        return None  # searched around already, and left for a better one since
    baseline_config = TrialConfig.from_dict(baseline.stored(study)["config"])
    around = neighbours(space, best, baseline_config.batch_size)
    untried = (n for n in around if n not in tried and n != baseline_config)
    return next(untried, None)


def _enqueue_warm(
    study: optuna.Study, space: SearchSpace, tried: set[TrialConfig]
) -> TrialConfig | None:
    """Enqueues the warm start's first proposal no trial has tried (in any state), with where
    it came from on the trial (:mod:`autotune.study.warm_start`); None when there is none or
    the study started cold."""
    warm = warm_start_of(study.user_attrs)
    if warm is None:
        return None
    for proposal in warm.proposals:
        if proposal.config not in tried:
            origin = proposal.origin(warm.study)
            writer.enqueue_warm(study, space_params(space, proposal.config), origin)
            return proposal.config
    return None


def enqueue_next(study: optuna.Study, space: SearchSpace, tolerance: float) -> TrialConfig | None:
    """Enqueues the next configuration of the structured start that no trial has tried (in any
    state): a warm start's proposals first (:mod:`autotune.study.warm_start`), the stored
    probes in order, then, once none is waiting or running, their combination (stored as
    :data:`COMBINED_KEY`), then, once that is measured, the neighbours of the best
    configuration so far (:func:`_refine`). Returns it; None once the start is done
    or while trials enqueued by someone else wait."""
    active = study.get_trials(deepcopy=False, states=(TrialState.WAITING, TrialState.RUNNING))
    if any(t.state == TrialState.WAITING for t in active):
        return None  # enqueued already (by this or by the caller): let them run first
    tried = _tried(study)
    warm = _enqueue_warm(study, space, tried)
    if warm is not None:
        return warm
    starts = [
        TrialConfig.from_dict(stored, f"study user attribute {START_KEY}")
        for stored in study.user_attrs.get(START_KEY) or []
    ]
    pending = [c for c in starts if c not in tried]
    if pending:
        study.enqueue_trial(space_params(space, pending[0]))
        return pending[0]
    if not starts or active:
        return None
    rescue = _rescue(study, space, tolerance, starts, tried)
    if rescue is not None:
        study.enqueue_trial(space_params(space, rescue))
        return rescue
    if COMBINED_KEY not in study.user_attrs:
        combined = _combine(study, space, tolerance)
        writer.write_combined(study, combined)
        if combined is not None and combined not in tried:
            study.enqueue_trial(space_params(space, combined))
            return combined
    neighbour = _refine(study, space, tolerance, tried)
    if neighbour is not None:
        study.enqueue_trial(space_params(space, neighbour))
    return neighbour


__all__ = [
    "BATCH_FACTORS",
    "COMBINED_KEY",
    "FACTORS",
    "REFINED_KEY",
    "REFINE_ROUNDS",
    "START_KEY",
    "START_MODES",
    "best_measured",
    "centre_of",
    "check_start",
    "combined_config",
    "enqueue_next",
    "moved_into",
    "neighbours",
    "record_start",
    "space_params",
    "structured_start",
]
