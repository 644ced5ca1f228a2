"""Keeps a model's normalisation and attention layers in float32 under a mixed dtype policy, as
a trial's ``float32_layers`` setting asks (:mod:`autotune.float32_layers`)."""

from __future__ import annotations

from typing import Any

import keras

from autotune.float32_layers import AVAILABLE_KEY, CHANGED_KEY, kinds
from autotune.float32_layers import LAYER_CLASSES as CLASS_NAMES

#: The Keras layer classes of each kind (:data:`autotune.float32_layers.LAYER_CLASSES`).
LAYER_CLASSES: dict[str, tuple[type, ...]] = {
    kind: tuple(getattr(keras.layers, name) for name in names)
    for kind, names in CLASS_NAMES.items()
}


def _kind_of(layer: Any) -> str | None:
    return next((k for k, classes in LAYER_CLASSES.items() if isinstance(layer, classes)), None)


def _layers_by_kind(model: keras.Model) -> dict[str, list[Any]]:
    """The model's layers of each kind, outermost first; the layers inside an attention layer
    (its projections, its softmax) belong to it and are not listed on their own."""
    found: dict[str, list[Any]] = {kind: [] for kind in LAYER_CLASSES}
    inside: set[int] = set()
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if id(layer) in inside:
            continue
        kind = _kind_of(layer)
        if kind is None:
            continue
        found[kind].append(layer)
        inside.update(id(sub) for sub in layer._flatten_layers(include_self=False))
    return found


def _to_float32(layer: Any) -> bool:
    """Sets ``layer`` and every layer inside it to the float32 policy; whether any was not."""
    changed = False
    for each in layer._flatten_layers(include_self=True, recursive=True):
        if each.dtype_policy.compute_dtype != "float32":
            each.dtype_policy = "float32"
            changed = True
    return changed


def keep_float32(model: keras.Model, value: str) -> dict[str, Any]:
    """Sets the layers the ``float32_layers`` value ``value`` names to the float32 dtype policy
    (before the model is compiled; under float32 there is nothing to change). Returns what the
    trial records: ``{"float32_layers": value, CHANGED_KEY: [names of the layers changed],
    AVAILABLE_KEY: {kind: how many the model has}}``."""
    wanted = kinds(value)
    by_kind = _layers_by_kind(model)
    changed = [layer.name for kind in wanted for layer in by_kind[kind] if _to_float32(layer)]
    return {
        "float32_layers": value,
        CHANGED_KEY: changed,
        AVAILABLE_KEY: {kind: len(layers) for kind, layers in by_kind.items()},
    }


__all__ = ["LAYER_CLASSES", "keep_float32"]
