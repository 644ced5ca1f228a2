"""The structured start's rescues: a faster configuration that drifted, tried again with the
practice's remedy for its drift.

A configuration faster than the baseline but over the fidelity tolerance is not the end of it.
Raised the batch size? "Re-tune the learning rate when you do": :func:`rule_rescues` tries it
under each other learning-rate rule the space holds (:mod:`autotune.lr_rules`). Lowered the
precision, where float32 at the same batch kept the curve? "Cast the layer that is losing
precision to float32": :func:`island_rescues` tries it with the normalisation and attention
layers kept in float32 (:mod:`autotune.float32_layers`). Both are pure functions of what was
measured; :mod:`autotune.study.start` enqueues them. No TensorFlow here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import cast

from autotune import settings
from autotune.config import TrialConfig
from autotune.float32_layers import Float32Layers, changes_more
from autotune.space import SearchSpace, space_values

#: (config, samples/s, fidelity) of a complete trial.
Measured = tuple[TrialConfig, float, float]
#: The settings a float32 twin may differ in: the numerics (its precision, its float32 layers
#: and XLA, which only reorders float arithmetic); every other learning setting is the same.
NUMERICS = ("precision", "float32_layers", "jit_compile")


def _drifting(
    candidates: Sequence[TrialConfig],
    measured: Sequence[Measured],
    centre_speed: float,
    tolerance: float,
) -> list[TrialConfig]:
    """The ``candidates`` measured over the fidelity ``tolerance`` and faster than
    ``centre_speed`` (samples/s), fastest first."""
    drifting = [
        (speed, config)
        for config, speed, fidelity in measured
        if config in candidates and fidelity > tolerance and speed > centre_speed
    ]
    return [config for _, config in sorted(drifting, key=lambda pair: -pair[0])]


def rule_rescues(
    space: SearchSpace,
    candidates: Sequence[TrialConfig],
    measured: Sequence[Measured],
    centre_speed: float,
    tolerance: float,
    base_batch_size: int,
    experiment_scaling: str | None = None,
) -> list[TrialConfig]:
    """The start's learning-rate rescues: each of ``candidates`` (the start's configurations)
    that ``measured`` ((config, samples/s, fidelity)) shows at a batch size other than
    ``base_batch_size`` with the experiment's rule, over the fidelity ``tolerance`` and faster
    than ``centre_speed`` (samples/s), fastest first, under each other rule the space holds:
    the practitioner's "re-tune the learning rate when you raise the batch size". The rule that
    is the experiment's own ``experiment_scaling`` ("sqrt" for an experiment that scales by
    square root) is left out: it trains the very curve that drifted."""
    parameter = space.parameters.get("lr_rule")
    if parameter is None:
        return []
    default = settings.setting("lr_rule").default
    return [
        dataclasses.replace(config, lr_rule=rule)
        for config in _drifting(candidates, measured, centre_speed, tolerance)
        if config.batch_size != base_batch_size and config.lr_rule == default
        for rule in space_values(parameter)
        if rule not in (default, experiment_scaling)
    ]


def _learning_twin(config: TrialConfig) -> tuple[object, ...]:
    """``config``'s learning settings other than its numerics (:data:`NUMERICS`)."""
    values = config.to_dict()
    return tuple(
        values[s.name] for s in settings.SETTINGS if s.changes_learning and s.name not in NUMERICS
    )


def _float32_keeps(
    config: TrialConfig, measured: Sequence[Measured], baseline: TrialConfig, tolerance: float
) -> bool:
    """Whether float32 kept the curve with ``config``'s other learning settings: the baseline
    (float32 by definition within the tolerance), or a measured float32 trial within it."""
    twin = _learning_twin(config)
    if _learning_twin(baseline) == twin and baseline.precision == "float32":
        return True
    return any(
        c.precision == "float32" and fidelity <= tolerance and _learning_twin(c) == twin
        for c, _, fidelity in measured
    )


def island_values(space: SearchSpace, counts: Mapping[str, int] | None) -> list[Float32Layers]:
    """The ``float32_layers`` values the space holds that change a model with ``counts``
    layers of each kind (None: unknown), each keeping more than the ones before it: on a
    model without attention, "norms+attention" is "norms" and left out."""
    parameter = space.parameters.get("float32_layers")
    if parameter is None:
        return []
    kept: list[str] = [settings.setting("float32_layers").default]
    for value in space_values(parameter):
        if all(changes_more(value, earlier, counts) for earlier in kept):
            kept.append(value)
    return [cast(Float32Layers, value) for value in kept[1:]]


def island_rescues(
    space: SearchSpace,
    candidates: Sequence[TrialConfig],
    measured: Sequence[Measured],
    centre_speed: float,
    tolerance: float,
    baseline: TrialConfig,
    counts: Mapping[str, int] | None = None,
) -> list[TrialConfig]:
    """The start's float32-layer rescues: each of ``candidates`` that ``measured`` shows under
    a mixed policy with no float32 layers, over the fidelity ``tolerance`` and faster than
    ``centre_speed`` (samples/s), where float32 with the same other learning settings kept
    the curve (the ``baseline``, or a measured float32 trial: the precision, not the batch,
    moved it), fastest first, with each of :func:`island_values` (``counts``: the model's
    layers of each kind, as the baseline recorded them)."""
    values = island_values(space, counts)
    default = settings.setting("float32_layers").default
    return [
        dataclasses.replace(config, float32_layers=value)
        for config in _drifting(candidates, measured, centre_speed, tolerance)
        if config.precision != "float32"
        and config.float32_layers == default
        and _float32_keeps(config, measured, baseline, tolerance)
        for value in values
    ]


__all__ = ["NUMERICS", "island_rescues", "island_values", "rule_rescues"]
