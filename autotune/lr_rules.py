"""How the learning rate follows the batch size: the rules a trial trains with.

A larger batch takes fewer steps over the same examples, so practitioners raise the learning
rate with it, and warm it up so the first large steps do not throw the model off: "re-tune the
learning rate when you raise the batch size". Which rule keeps a model's curve is the model's
own business (linear scaling suits SGD on large image models, square root suits Adam more often,
some models want none), so a study can search it: the ``lr_rule`` setting
(:data:`autotune.settings.SETTINGS`) is one of :data:`LR_RULES`:

- ``experiment``: the experiment's own ``lr_scaling`` rule, no warm-up (the default);
- ``linear``, ``sqrt``, ``none``: ``base_rate * b / b0``, ``base_rate * sqrt(b / b0)``, or the
  base rate at every batch size ``b`` (``b0``: the experiment's base batch size);
- ``linear_warmup``, ``sqrt_warmup``: that rate, reached by a linear warm-up over the first
  :data:`WARMUP_SHARE` of the run's optimizer steps.

At the base batch size every rule without a warm-up gives the same rate: a study never draws the
rule there (:func:`autotune.space.inactive_parameters`). No TensorFlow here; the trial's
schedule object is :mod:`autotune.trial.lr_schedule`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

LrScaling = Literal["linear", "sqrt", "none"]
LR_SCALINGS: tuple[str, ...] = get_args(LrScaling)
LrRule = Literal["experiment", "linear", "sqrt", "none", "linear_warmup", "sqrt_warmup"]
LR_RULES: tuple[str, ...] = get_args(LrRule)
#: The share of a run's optimizer steps a ``*_warmup`` rule warms the learning rate up over.
WARMUP_SHARE = 0.1
_WARMUP_SUFFIX = "_warmup"


def scaled_rate(base_rate: float, base_batch_size: int, batch_size: int, scaling: str) -> float:
    """The learning rate at ``batch_size`` under ``scaling`` (one of :data:`LR_SCALINGS`), from
    ``base_rate`` at ``base_batch_size``."""
    ratio = batch_size / base_batch_size
    if scaling == "linear":
        return float(base_rate * ratio)
    if scaling == "sqrt":
        return float(base_rate * math.sqrt(ratio))
    if scaling == "none":
        return float(base_rate)
    raise ValueError(f"lr scaling must be one of {list(LR_SCALINGS)}. Received: {scaling!r}")


def has_warmup(rule: str) -> bool:
    """Whether the ``lr_rule`` ``rule`` warms the learning rate up."""
    return rule.endswith(_WARMUP_SUFFIX)


def warmup_steps(samples: int, batch_size: int) -> int:
    """Optimizer steps of a warm-up over the first :data:`WARMUP_SHARE` of a run of ``samples``
    training examples at ``batch_size`` (at least one)."""
    return max(1, math.ceil(WARMUP_SHARE * samples / batch_size))


@dataclass(frozen=True)
class LearningRate:
    """The learning rate a run trains with.

    Attributes:
        rule: the ``lr_rule`` asked for (one of :data:`LR_RULES`).
        scaling: how the rate followed the batch size (one of :data:`LR_SCALINGS`): the rule's,
            or the experiment's for ``experiment``.
        rate: the rate after the warm-up (the rate at every step without one).
        warmup_steps: optimizer steps over which the rate rises linearly to ``rate``; 0: none.
    """

    rule: str
    scaling: str
    rate: float
    warmup_steps: int = 0

    def at_step(self, step: int) -> float:
        """The rate of optimizer step ``step`` (0 first): ``rate * (step + 1) / warmup_steps``
        during the warm-up, ``rate`` after it."""
        if step < self.warmup_steps:
            return self.rate * (step + 1) / self.warmup_steps
        return self.rate

    def to_dict(self) -> dict[str, Any]:
        """The effective-settings entries: ``learning_rate``, ``lr_rule``, ``lr_scaling``,
        ``lr_warmup_steps``."""
        return {
            "learning_rate": self.rate,
            "lr_rule": self.rule,
            "lr_scaling": self.scaling,
            "lr_warmup_steps": self.warmup_steps,
        }


def rate_text(rate: float, effective: Mapping[str, Any]) -> str:
    """``rate`` for people, with how it followed the batch size where the run's ``effective``
    settings record it: "0.04 (linear, warmed up over 10 steps)"."""
    details = []
    if isinstance(effective.get("lr_scaling"), str):
        details.append(str(effective["lr_scaling"]))
    steps = effective.get("lr_warmup_steps")
    if isinstance(steps, int) and not isinstance(steps, bool) and steps > 0:
        details.append(f"warmed up over {steps} step{'s' if steps != 1 else ''}")
    return f"{rate:g} ({', '.join(details)})" if details else f"{rate:g}"


def learning_rate(
    rule: str,
    *,
    experiment_scaling: str,
    base_rate: float,
    base_batch_size: int,
    batch_size: int,
    samples: int,
) -> LearningRate:
    """The learning rate of a run of ``samples`` training examples at ``batch_size`` under
    ``rule`` (see the module docstring); ``experiment_scaling`` is the experiment's own rule."""
    if rule not in LR_RULES:
        raise ValueError(f"lr_rule must be one of {list(LR_RULES)}. Received: {rule!r}")
    warmup = has_warmup(rule)
    scaling = experiment_scaling if rule == "experiment" else rule.removesuffix(_WARMUP_SUFFIX)
    rate = scaled_rate(base_rate, base_batch_size, batch_size, scaling)
    steps = warmup_steps(samples, batch_size) if warmup else 0
    return LearningRate(rule, scaling, rate, steps)


__all__ = [
    "LR_RULES",
    "LR_SCALINGS",
    "WARMUP_SHARE",
    "LearningRate",
    "LrRule",
    "LrScaling",
    "has_warmup",
    "learning_rate",
    "rate_text",
    "scaled_rate",
    "warmup_steps",
]
