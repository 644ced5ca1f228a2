"""How a study proposes configurations after its structured start (:mod:`autotune.study.start`).

Optuna's multivariate TPE by default (:func:`default_sampler`), wrapped in
:class:`FreshProposals`: in the small, discrete spaces a study searches, TPE proposes its
current favourite again and again (a third of the trials of a 30-trial replay on the tabular
MLP's grid were repeats); a repeat costs a trial and measures nothing new. The wrapper turns a
repeated proposal into an untried one-factor neighbour of it (where TPE thinks the good region
is), or an untried random configuration when every neighbour was tried, and TPE's random
start-up draws into untried ones; either way it avoids, where it can, values whose every trial
was stopped as slower than the baseline. "Tried" is per configuration: a proposal that differs
from a trial only in a parameter its configuration does not draw (``jit_compile`` on the JAX
backend) is a repeat. Any Optuna sampler can be given instead, unwrapped
(the replay benchmark compares NSGA-II, GP and random search).
No TensorFlow here.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import FrozenTrial, TrialState

from autotune.space import inactive_parameters
from autotune.store.objectives import DEFAULT_OBJECTIVES, directions
from autotune.store.storage import quiet_experimental
from autotune.study.checks import MAX_SEED
from autotune.study.scoring import SPEED_CONSTRAINT

#: Random trials TPE draws before it models (the structured start's trials count among them).
STARTUP_TRIALS = 5


def create(
    storage: optuna.storages.BaseStorage,
    name: str,
    seed: int,
    sampler: optuna.samplers.BaseSampler | None = None,
    known: Sequence[Mapping[str, Any]] = (),
    objectives: Sequence[str] = DEFAULT_OBJECTIVES,
) -> tuple[optuna.Study, bool]:
    """The Optuna study ``name`` (created with ``objectives``, or loaded with its own) with
    ``sampler`` or the default one, and whether it is new. The default sampler's seed is offset
    by the trials stored, so a resumed study does not replay its earlier draws; ``known`` as in
    :class:`FreshProposals`."""
    try:
        stored = len(optuna.load_study(study_name=name, storage=storage).trials)
        is_new = False
    except KeyError:
        stored, is_new = 0, True
    sampler = sampler or default_sampler((seed + stored) % (MAX_SEED + 1), known)
    with quiet_experimental():
        study = optuna.create_study(
            storage=storage,
            study_name=name,
            directions=directions(objectives),
            sampler=sampler,
            load_if_exists=True,
        )
    return study, is_new


def default_sampler(
    seed: int, known: Sequence[Mapping[str, Any]] = ()
) -> optuna.samplers.BaseSampler:
    """Multivariate, grouped TPE (it ranks trials with a violated constraint after the feasible
    ones: Optuna 5 reads the constraints each trial stores), proposing only untried
    configurations (:class:`FreshProposals`; ``known`` as there)."""
    with quiet_experimental():
        tpe = optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=STARTUP_TRIALS, multivariate=True, group=True
        )
    return FreshProposals(tpe, seed, known)


#: States of the trials whose configuration counts as tried (a running one is being measured).
TRIED_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)
#: Random draws :class:`FreshProposals` makes for an untried configuration before it gives up.
RANDOM_DRAWS = 200


def _params_key(params: Mapping[str, Any]) -> str:
    return json.dumps({k: params[k] for k in sorted(params)}, default=str)


def _config_key(params: Mapping[str, Any], space: Iterable[str]) -> str:
    """``params``'s values of the ``space`` parameters it draws: two proposals that differ only
    in a parameter their configuration does not draw (``jit_compile`` on JAX) are one."""
    inactive = inactive_parameters(params)
    return _params_key({k: params[k] for k in space if k not in inactive})


def _covers(params: Mapping[str, Any], space: Iterable[str]) -> bool:
    """Whether ``params`` holds every ``space`` parameter its configuration draws."""
    inactive = inactive_parameters(params)
    return all(k in params for k in space if k not in inactive)


class FreshProposals(optuna.samplers.BaseSampler):
    """``sampler``, except that a configuration it proposes again (one tried by a complete,
    pruned, failed or running trial) is replaced by an untried one-factor neighbour of it, drawn
    at random with ``seed``, else by an untried random configuration; it is left as proposed
    when the space holds no untried configuration. Where the wrapped sampler proposes nothing
    as a whole (TPE's random start-up trials draw each parameter on its own), an untried
    configuration is drawn at random instead. A replacement avoids, where it can, the values
    whose every trial was stopped as slower than the baseline (a violated ``speed``
    constraint). ``known`` lists parameters measured outside the study's trials (the
    baseline's)."""

    def __init__(
        self,
        sampler: optuna.samplers.BaseSampler,
        seed: int | None = None,
        known: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self.sampler = sampler
        self.known = [dict(params) for params in known]
        self._rng = random.Random(seed)

    def infer_relative_search_space(
        self, study: optuna.Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self.sampler.infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        params = self.sampler.sample_relative(study, trial, search_space)
        if not search_space or (params and set(params) != set(search_space)):
            return params
        trials = [
            t
            for t in study.get_trials(deepcopy=False, states=TRIED_STATES)
            if t.number != trial.number and _covers(t.params, search_space)
        ]
        tried = {_config_key(t.params, search_space) for t in trials} | {
            _config_key(known, search_space) for known in self.known if _covers(known, search_space)
        }
        if params and _config_key(params, search_space) not in tried:
            return params
        slow = _slow_values(trials, search_space)
        if not params:  # the sampler draws them one by one (TPE's random start-up trials)
            return self._random_untried(search_space, tried, slow) or {}
        return self._untried(params, search_space, tried, slow) or params

    def _untried(
        self,
        params: dict[str, Any],
        space: Mapping[str, BaseDistribution],
        tried: set[str],
        slow: set[tuple[str, str]],
    ) -> dict[str, Any] | None:
        neighbours = [
            candidate
            for name, distribution in space.items()
            for value in _near(distribution, params[name])
            if _config_key(candidate := {**params, name: value}, space) not in tried
        ]
        if neighbours:
            return self._rng.choice(_least_slow(neighbours, slow))
        return self._random_untried(space, tried, slow)

    def _random_untried(
        self, space: Mapping[str, BaseDistribution], tried: set[str], slow: set[tuple[str, str]]
    ) -> dict[str, Any] | None:
        draws = [
            {name: _draw(d, self._rng) for name, d in space.items()} for _ in range(RANDOM_DRAWS)
        ]
        untried = [c for c in draws if _config_key(c, space) not in tried]
        return _least_slow(untried, slow)[0] if untried else None

    def sample_independent(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        return self.sampler.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        self.sampler.before_trial(study, trial)

    def after_trial(
        self,
        study: optuna.Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self.sampler.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self.sampler.reseed_rng()
        self._rng.seed()


def _value_key(name: str, value: Any) -> tuple[str, str]:
    return name, json.dumps(value, default=str)


def _slow_values(trials: Sequence[FrozenTrial], space: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(parameter, value) pairs every finished trial with which was stopped as slower than the
    baseline (a violated ``speed`` constraint): ``mixed_float16`` after its probe, on a CPU."""
    all_slow: dict[tuple[str, str], bool] = {}
    for trial in trials:
        if trial.state not in (TrialState.COMPLETE, TrialState.PRUNED):
            continue
        stopped = trial.constraints.get(SPEED_CONSTRAINT, 0.0) > 0
        for name in space:
            if name not in trial.params:  # not drawn for this configuration
                continue
            key = _value_key(name, trial.params[name])
            all_slow[key] = all_slow.get(key, True) and stopped
    return {key for key, slow in all_slow.items() if slow}


def _least_slow(
    candidates: Sequence[dict[str, Any]], slow: set[tuple[str, str]]
) -> list[dict[str, Any]]:
    """The candidates with the fewest known-slow values, in their order."""
    counts = [sum(_value_key(k, v) in slow for k, v in c.items()) for c in candidates]
    return [c for c, n in zip(candidates, counts, strict=True) if n == min(counts)]


def _near(distribution: BaseDistribution, value: Any) -> list[Any]:
    """The values one step from ``value``: every other choice; the integers a step away."""
    if isinstance(distribution, CategoricalDistribution):
        return [
            c for c in distribution.choices if _params_key({"v": c}) != _params_key({"v": value})
        ]
    if isinstance(distribution, IntDistribution) and not distribution.log:
        step = distribution.step
        return [
            v for v in (value - step, value + step) if distribution.low <= v <= distribution.high
        ]
    return []


def _draw(distribution: BaseDistribution, rng: random.Random) -> Any:
    if isinstance(distribution, CategoricalDistribution):
        return rng.choice(distribution.choices)
    if isinstance(distribution, IntDistribution):
        step = 1 if distribution.log else distribution.step
        return distribution.low + step * rng.randrange(
            (distribution.high - distribution.low) // step + 1
        )
    raise TypeError(f"no untried draw for {distribution!r}")


__all__ = [
    "RANDOM_DRAWS",
    "STARTUP_TRIALS",
    "TRIED_STATES",
    "FreshProposals",
    "create",
    "default_sampler",
]
