"""Float32 islands: the layers a mixed-precision trial keeps in float32, besides its output.

Under ``mixed_float16`` or ``mixed_bfloat16`` a few layers lose what the model learns before the
rest do. The practice names them: "cast a specific layer with dtype=float32 on the layer that is
losing precision; normalisation layers and attention logits are the usual suspects". The
``float32_layers`` setting (:data:`autotune.settings.SETTINGS`) is one of
:data:`FLOAT32_LAYERS`:

- ``none``: only the output is float32 (every mixed trial keeps its output so);
- ``norms``: every normalisation layer too (:data:`KINDS` ``"norms"``: batch, layer, group,
  RMS and unit normalisation);
- ``norms+attention``: and every attention layer, with its projections, logits and softmax
  (what ``dtype="float32"`` on the layer gives).

A layer kept in float32 computes in float32 and hands float32 on; the next layer casts back to
the mixed compute dtype. Under ``float32`` every layer is float32 already: a study never draws
the setting there (:func:`autotune.space.inactive_parameters`). A trial records the layers it
changed and how many of each kind the model has (:data:`CHANGED_KEY`, :data:`AVAILABLE_KEY` in
its effective settings), so the structured start tries only values that change something
(:func:`changes_more`). No TensorFlow here; the trial's part is
:mod:`autotune.trial.layer_policies`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

Float32Layers = Literal["none", "norms", "norms+attention"]
FLOAT32_LAYERS: tuple[str, ...] = get_args(Float32Layers)
#: The kinds of layer each value keeps in float32, in the order they are added.
KINDS: dict[str, tuple[str, ...]] = {
    "none": (),
    "norms": ("norms",),
    "norms+attention": ("norms", "attention"),
}
#: The Keras layer classes of each kind, by their name in ``keras.layers`` (subclasses count).
LAYER_CLASSES: dict[str, tuple[str, ...]] = {
    "norms": (
        "BatchNormalization",
        "LayerNormalization",
        "GroupNormalization",
        "RMSNormalization",
        "UnitNormalization",
    ),
    "attention": ("MultiHeadAttention", "GroupQueryAttention", "Attention", "AdditiveAttention"),
}
#: Effective-settings key: the names of the layers a trial set to float32 (its output aside).
CHANGED_KEY = "float32_layers_changed"
#: Effective-settings key: how many layers of each kind the model has, {"norms": 3, ...}.
AVAILABLE_KEY = "float32_layers_available"


def kinds(value: str) -> tuple[str, ...]:
    """The kinds of layer the ``float32_layers`` value ``value`` keeps in float32."""
    if value not in KINDS:
        raise ValueError(
            f"float32_layers must be one of {list(FLOAT32_LAYERS)}. Received: {value!r}"
        )
    return KINDS[value]


def available(effective: Mapping[str, Any]) -> dict[str, int] | None:
    """How many layers of each kind a run's ``effective`` settings say its model has; None
    where they do not say (a run recorded before float32 layers were)."""
    counts = effective.get(AVAILABLE_KEY)
    if not isinstance(counts, Mapping):
        return None
    return {str(kind): int(n) for kind, n in counts.items() if isinstance(n, int)}


def changes_more(value: str, than: str, counts: Mapping[str, int] | None) -> bool:
    """Whether ``value`` keeps more layers in float32 than ``than`` on a model with ``counts``
    layers of each kind (:func:`available`; None: unknown, so it may)."""
    added = [kind for kind in kinds(value) if kind not in kinds(than)]
    if counts is None:
        return bool(added)
    return any(counts.get(kind, 0) > 0 for kind in added)


#: How many layer names :func:`layers_text` shows before "and N more".
SHOWN_NAMES = 3


def layers_text(effective: Mapping[str, Any]) -> str | None:
    """The layers a run kept in float32, for people ("2 layers: layer_norm, layer_norm_1";
    "7 layers: norm, norm_1, norm_2 and 4 more"); None where it kept none or does not say."""
    changed = effective.get(CHANGED_KEY)
    if not isinstance(changed, list) or not changed:
        return None
    names = ", ".join(str(name) for name in changed[:SHOWN_NAMES])
    more = len(changed) - SHOWN_NAMES
    return f"{len(changed)} layer{'s' if len(changed) != 1 else ''}: {names}" + (
        f" and {more} more" if more > 0 else ""
    )


__all__ = [
    "AVAILABLE_KEY",
    "CHANGED_KEY",
    "FLOAT32_LAYERS",
    "KINDS",
    "LAYER_CLASSES",
    "SHOWN_NAMES",
    "Float32Layers",
    "available",
    "changes_more",
    "kinds",
    "layers_text",
]
