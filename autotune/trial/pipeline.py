"""Builds the tf.data input pipeline of a trial from its :class:`TrialConfig`.

Training: shuffle(buffer) -> repeat -> map(preprocess, num_parallel_calls) ->
batch(batch_size, drop_remainder=True) -> prefetch. ``drop_remainder`` gives XLA one fixed batch
shape; repeating before batching means every batch is full and an epoch boundary never yields a
short one. Examples of varying shape (sequences of any length) are padded to the longest in their
batch, so batches still vary in shape: XLA then recompiles for each new one, which the runner
flags (the dynamic-shape trap). The map is deterministic, so a seed gives the same example order
whatever the parallelism, which keeps validation curves comparable across trials.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import keras
import tensorflow as tf

from autotune.config import AUTOTUNE, TrialConfig
from autotune.experiment import Data, Experiment
from autotune.trial.data_forms import Examples, to_examples


@dataclass(frozen=True)
class PipelineSettings:
    """The input-pipeline settings that took effect.

    ``shuffle_buffer`` is capped at the number of training examples when that is known;
    ``num_parallel_calls`` is None when there is no preprocessing function to map; ``padded``
    says examples had dimensions of unknown size and each batch was padded to its longest;
    ``unbatched_from`` says the data came batched and autotune unbatched it ("batched dataset",
    "PyDataset"; None: it came as examples).
    """

    batch_size: int
    drop_remainder: bool
    shuffle_buffer: int
    num_parallel_calls: int | str | None
    prefetch: int | str
    train_examples: int | None
    padded: bool = False
    private_threadpool_size: int = 0
    unbatched_from: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tf_value(value: int | str) -> int:
    return tf.data.AUTOTUNE if value == AUTOTUNE else int(value)


def load_data(data: Data, what: str, experiment: Experiment) -> Examples:
    """Turns an experiment's data (a factory or an (x, y) pair of arrays) into unbatched
    examples (:func:`autotune.trial.data_forms.to_examples`: batched data is unbatched)."""
    return to_examples(data, f"Experiment {experiment.name!r}: {what}")


def dynamic_dimensions(dataset: tf.data.Dataset) -> list[str]:
    """The dimensions of unknown size in ``dataset``'s elements, named like ``x[1]`` or
    ``x['tokens'][1]`` (x, y and sample_weight are the element's parts; a tensor of unknown rank
    counts as ``[0]``)."""
    spec = dataset.element_spec
    parts = spec if isinstance(spec, tuple) else (spec,)
    part_names = ("x", "y", "sample_weight")
    names: list[str] = []
    for index, part in enumerate(parts):
        part_name = part_names[index] if index < len(part_names) else f"element[{index}]"
        for path, leaf in keras.tree.flatten_with_path(part):
            dims = leaf.shape.as_list() if leaf.shape.rank is not None else [None]
            where = "".join(f"[{key!r}]" for key in path)
            names.extend(
                f"{part_name}{where}[{axis}]" for axis, size in enumerate(dims) if size is None
            )
    return names


def has_dynamic_shape(dataset: tf.data.Dataset) -> bool:
    """Whether some component of ``dataset``'s elements has a dimension of unknown size."""
    return bool(dynamic_dimensions(dataset))


def batched(dataset: tf.data.Dataset, batch_size: int, drop_remainder: bool) -> tf.data.Dataset:
    """``batch``, or ``padded_batch`` (each batch padded to its longest example) when examples
    vary in shape."""
    if has_dynamic_shape(dataset):
        return dataset.padded_batch(batch_size, drop_remainder=drop_remainder)
    return dataset.batch(batch_size, drop_remainder=drop_remainder)


def cardinality(dataset: tf.data.Dataset) -> int | None:
    """Number of examples in ``dataset``, or None when infinite or unknown."""
    count = int(dataset.cardinality().numpy())
    return count if count >= 0 else None


def takes_seed(function: Callable[..., Any]) -> bool:
    """Whether a preprocessing function takes a ``seed`` keyword (for stateless random ops)."""
    try:
        return "seed" in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _map_preprocess(
    dataset: tf.data.Dataset, preprocess: Callable[..., Any], parallel: int, seed: int
) -> tf.data.Dataset:
    """Maps ``preprocess`` over (x, y) pairs, in order whatever the parallelism.

    A function with a ``seed`` keyword gets a distinct stateless seed (an int64 tensor of shape
    [2]) per example, drawn from ``seed``, so random augmentation with
    ``tf.image.stateless_random_*`` gives the same data for the same seed at any
    ``num_parallel_calls``; stateful random ops (``tf.image.random_*``) cannot.
    """
    if not takes_seed(preprocess):
        return dataset.map(preprocess, num_parallel_calls=parallel, deterministic=True)
    seeds = tf.data.Dataset.random(seed=seed).batch(2, drop_remainder=True)
    return tf.data.Dataset.zip((dataset, seeds)).map(
        lambda example, pair: preprocess(*example, seed=pair),
        num_parallel_calls=parallel,
        deterministic=True,
    )


def _without_injected_prefetch(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """``dataset`` with tf.data's own prefetch injection turned off: by default tf.data appends a
    prefetch to a pipeline that ends synchronously, so prefetch=0 would silently become one."""
    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    return dataset.with_options(options)


def prepare_training(
    dataset: tf.data.Dataset,
    config: TrialConfig,
    preprocess: Callable[..., Any] | None,
    seed: int,
    unbatched_from: str | None = None,
) -> tuple[tf.data.Dataset, PipelineSettings]:
    """The infinite, batched training stream over ``dataset`` (unbatched examples; from
    ``unbatched_from`` when autotune unbatched them) and the settings that took effect."""
    examples = cardinality(dataset)
    buffer = min(config.shuffle_buffer, examples) if examples else config.shuffle_buffer
    if buffer > 1:
        dataset = dataset.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.repeat()
    parallel: int | str | None = None
    if preprocess is not None:
        parallel = config.num_parallel_calls
        dataset = _map_preprocess(dataset, preprocess, _tf_value(parallel), seed)
    padded = has_dynamic_shape(dataset)
    dataset = batched(dataset, config.batch_size, drop_remainder=True)
    if config.prefetch == 0:
        dataset = _without_injected_prefetch(dataset)
    else:
        dataset = dataset.prefetch(_tf_value(config.prefetch))
    if config.private_threadpool_size:  # the pipeline's own pool, not TensorFlow's shared one
        options = tf.data.Options()
        options.threading.private_threadpool_size = config.private_threadpool_size
        dataset = dataset.with_options(options)
    settings = PipelineSettings(
        batch_size=config.batch_size,
        drop_remainder=True,
        shuffle_buffer=buffer,
        num_parallel_calls=parallel,
        prefetch=config.prefetch,
        train_examples=examples,
        padded=padded,
        private_threadpool_size=int(dataset.options().threading.private_threadpool_size or 0),
        unbatched_from=unbatched_from,
    )
    return dataset, settings


def training_pipeline(
    experiment: Experiment, config: TrialConfig, seed: int
) -> tuple[tf.data.Dataset, PipelineSettings]:
    """The training stream of a trial of ``experiment`` and the settings that took effect."""
    examples = load_data(experiment.train_data, "train_data", experiment)
    return prepare_training(
        examples.dataset, config, experiment.preprocess, seed, examples.unbatched_from
    )


def validation_pipeline(experiment: Experiment) -> tf.data.Dataset:
    """The validation set, batched at the experiment's base batch size whatever the trial's.

    Every trial evaluates the same examples in the same batches, so validation losses differ only
    by what training learned and by the precision of the forward pass. A set of unknown size
    (data autotune unbatched) is counted once, filling the cache, so evaluation knows its end.
    """
    dataset = load_data(experiment.validation_data, "validation_data", experiment).dataset
    if experiment.validation_preprocess is not None:
        dataset = dataset.map(
            experiment.validation_preprocess,
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
    batches = batched(dataset, experiment.base_batch_size, drop_remainder=False).cache()
    if cardinality(batches) is None:  # unbatched by autotune, or filtered: count it once
        count = int(batches.reduce(0, lambda n, _: n + 1))  # fills the cache on the way
        batches = batches.apply(tf.data.experimental.assert_cardinality(count))
    return batches.prefetch(tf.data.AUTOTUNE)
