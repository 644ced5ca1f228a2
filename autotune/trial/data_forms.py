"""Data as users have it, turned into the unbatched (x, y) examples a trial's pipeline batches.

A trial batches the data itself (its batch size is a setting), so it needs examples, not
batches. Users often hold batches: ``keras.utils.image_dataset_from_directory`` and
``tf.data.experimental.make_csv_dataset`` return batched datasets, and a
``keras.utils.PyDataset`` yields batches by index. :func:`to_examples` accepts:

- an unbatched ``tf.data.Dataset`` of (x, y) pairs (as is);
- a batched one (a ``batch``, ``padded_batch`` or ``ragged_batch`` not undone by a later
  ``unbatch``, wherever in the chain): unbatched, and said so (:attr:`Examples.unbatched_from`);
- a ``keras.utils.PyDataset`` of known length: its batches read in index order through
  ``tf.data.Dataset.from_generator``, then unbatched;
- a pair of arrays ``(x, y)`` with examples along the first axis;

and refuses anything else with what it received and what to give instead. A batching done inside
a function (``group_by_window``, ``bucket_by_sequence_length``) cannot be seen: unbatch such a
dataset yourself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from autotune.exceptions import ExperimentError

#: tf.data's dataset classes that batch their input (their names, without a leading "_").
BATCHING = frozenset(
    {"BatchDataset", "ParallelBatchDataset", "PaddedBatchDataset", "DenseToRaggedDataset"}
)
#: ... and the one that undoes it.
UNBATCHING = "UnbatchDataset"
#: What to give instead, said in every refusal.
ACCEPTED = (
    "a tf.data.Dataset of (x, y) pairs (unbatched or batched), a keras.utils.PyDataset of "
    "known length, or a pair of arrays (x, y)"
)


@dataclass(frozen=True)
class Examples:
    """A dataset of unbatched (x, y) examples and what autotune did to get it: None (given
    so), "batched dataset" or "PyDataset" (unbatched by autotune)."""

    dataset: tf.data.Dataset
    unbatched_from: str | None = None


def is_batched(dataset: tf.data.Dataset) -> bool:
    """Whether ``dataset`` yields batches: some batching dataset in its chain of inputs is not
    undone by an ``unbatch`` after it (read from tf.data's dataset objects)."""
    name = type(dataset).__name__.lstrip("_")
    if name == UNBATCHING:
        return False
    if name in BATCHING:
        return True
    return any(is_batched(source) for source in dataset._inputs())


def _spec_of(batch: Any) -> Any:
    """The ``tf.TensorSpec`` of each array of one batch, its leading (batch) axis any size."""

    def spec(leaf: Any) -> tf.TensorSpec:
        array = np.asarray(leaf)
        return tf.TensorSpec((None, *array.shape[1:]), tf.as_dtype(array.dtype))

    return keras.tree.map_structure(spec, batch)


def _from_py_dataset(data: keras.utils.PyDataset, where: str) -> tf.data.Dataset:
    """The batches of ``data`` in index order, as a (batched) ``tf.data.Dataset``."""
    batches = data.num_batches
    if batches is None:
        raise ExperimentError(
            f"{where} is a keras.utils.PyDataset of unknown length (num_batches is None): define "
            "__len__ (the number of batches) so autotune can read it in order, or give "
            f"{ACCEPTED}. Received: {type(data).__name__}"
        )
    first = data[0]
    if not isinstance(first, tuple) or len(first) < 2:
        raise ExperimentError(
            f"{where}: a keras.utils.PyDataset must return (x, y) batches from __getitem__. "
            f"Received: {type(first).__name__}"
        )
    structure = tuple(first[:2])

    def generate() -> Any:
        for index in range(batches):
            yield tuple(data[index][:2])

    return tf.data.Dataset.from_generator(generate, output_signature=_spec_of(structure))


def _made(data: Any, where: str) -> Any:
    """What ``data`` is, once a zero-argument factory has been called."""
    if isinstance(data, (tf.data.Dataset, keras.utils.PyDataset)) or not callable(data):
        return data
    made = data()
    if made is None:
        raise ExperimentError(f"{where}() returned None; it must return {ACCEPTED}")
    return made


def to_examples(data: Any, where: str) -> Examples:
    """``data`` (see the module docstring, or a zero-argument function returning it) as
    unbatched (x, y) examples; ExperimentError starting with ``where`` otherwise."""
    made = _made(data, where)
    unbatched_from = None
    if isinstance(made, keras.utils.PyDataset):
        dataset, unbatched_from = _from_py_dataset(made, where).unbatch(), "PyDataset"
    elif isinstance(made, tf.data.Dataset):
        dataset = made
        if is_batched(dataset):
            dataset, unbatched_from = dataset.unbatch(), "batched dataset"
    elif isinstance(made, tuple) and len(made) == 2:
        dataset = tf.data.Dataset.from_tensor_slices(made)
    else:
        raise ExperimentError(f"{where} must give {ACCEPTED}. Received: {type(made).__name__}")
    spec = dataset.element_spec
    if not isinstance(spec, tuple) or len(spec) < 2:
        raise ExperimentError(
            f"{where} must yield (x, y) pairs, e.g. tf.data.Dataset.from_tensor_slices((x, y)). "
            f"Received element spec: {spec}"
        )
    return Examples(dataset, unbatched_from)


__all__ = ["ACCEPTED", "BATCHING", "Examples", "is_batched", "to_examples"]
