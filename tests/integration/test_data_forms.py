"""Data as users have it (docs/your-model.md, "Describing an experiment"): a batched tf.data
dataset and a keras.utils.PyDataset train the same curve as the same examples given unbatched,
the trial records that autotune unbatched them, and anything else is refused with what was
received and what to give instead. The tiny MLP on CPU."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

from autotune import TrialConfig
from autotune.bundled import load_experiment
from autotune.exceptions import ExperimentError
from autotune.experiment import Experiment
from autotune.trial.applied import AppliedRecipe
from autotune.trial.data_forms import is_batched, to_examples
from autotune.trial.runner import run_trial

TINY = load_experiment(f"{Path(__file__).parents[1] / 'fixtures' / 'experiments' / 'tiny.py'}:tiny")
TRAIN, VALIDATION = TINY.train_data(), TINY.validation_data()  # (x, y) arrays, 16 features

pytestmark = [
    pytest.mark.slow,  # imports TensorFlow and trains
    pytest.mark.usefixtures("float32_policy"),
]


class Batches(keras.utils.PyDataset):  # type: ignore[misc]
    """The tiny training arrays as batches of ``size``, by index (the last one short)."""

    def __init__(self, size: int, length: bool = True) -> None:
        super().__init__()
        self.x, self.y = TRAIN
        self.size, self.length = size, length

    def __len__(self) -> int:
        if not self.length:
            raise TypeError("no length")
        return math.ceil(len(self.x) / self.size)

    @property
    def num_batches(self) -> int | None:
        return len(self) if self.length else None

    def __getitem__(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        part = slice(index * self.size, (index + 1) * self.size)
        return self.x[part], self.y[part]


def batched_train() -> tf.data.Dataset:
    """The tiny training data as image_dataset_from_directory gives data: batched (a short last
    batch), mapped and prefetched after the batching."""
    examples = tf.data.Dataset.from_tensor_slices(TRAIN)
    return examples.batch(50).map(lambda x, y: (x, y)).prefetch(2)


@pytest.fixture(scope="module")
def tiny() -> Experiment:
    return dataclasses.replace(TINY, preprocess=None)


def test_batching_is_seen_wherever_it_is_in_the_chain() -> None:
    examples = tf.data.Dataset.range(10)
    assert not is_batched(examples)
    assert not is_batched(examples.map(lambda x: x * 2).prefetch(1))
    assert is_batched(examples.batch(4))
    assert is_batched(examples.padded_batch(4).prefetch(1))
    assert is_batched(examples.ragged_batch(4))
    assert is_batched(examples.batch(4, num_parallel_calls=2).map(lambda x: x).cache())
    assert not is_batched(examples.batch(4).unbatch().shuffle(3))
    assert is_batched(tf.data.Dataset.zip((examples.batch(2), examples.batch(2))))


@pytest.mark.parametrize(
    ("data", "source"),
    [(batched_train, "batched dataset"), (lambda: Batches(64), "PyDataset")],
    ids=["batched dataset", "PyDataset"],
)
def test_batched_data_trains_the_curve_of_its_examples_and_says_so(
    tiny, settings, data, source
) -> None:
    unshuffled = TrialConfig(batch_size=32, shuffle_buffer=1)  # the data's own order
    curve_settings = settings.replace(measure_throughput=False)
    given = run_trial(dataclasses.replace(tiny, train_data=data), unshuffled, curve_settings)
    examples = run_trial(tiny, unshuffled, curve_settings)

    assert given.effective["pipeline"]["unbatched_from"] == source
    assert examples.effective["pipeline"]["unbatched_from"] is None
    assert [p.val_loss for p in given.curve] == pytest.approx(
        [p.val_loss for p in examples.curve], rel=1e-5
    )


def test_batched_validation_data_is_rebatched_at_the_base_batch_size(tiny, settings) -> None:
    batched = dataclasses.replace(
        tiny, validation_data=lambda: tf.data.Dataset.from_tensor_slices(VALIDATION).batch(7)
    )  # fmt: skip
    curve_settings = settings.replace(measure_throughput=False)

    given = run_trial(batched, TrialConfig(batch_size=32), curve_settings)
    examples = run_trial(tiny, TrialConfig(batch_size=32), curve_settings)

    assert [p.val_loss for p in given.curve] == pytest.approx(
        [p.val_loss for p in examples.curve], rel=1e-5
    )


def test_the_recipe_pipeline_takes_batched_data_and_batches_it_at_the_recipe_size() -> None:
    applied = AppliedRecipe(TrialConfig(batch_size=96), 0.01)

    for data in (batched_train(), Batches(64)):
        x, y = next(iter(applied.pipeline(data)))
        assert tuple(x.shape) == (96, TRAIN[0].shape[1]) and tuple(y.shape) == (96,)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (lambda: Batches(64, length=False), r"PyDataset of unknown length \(num_batches is None"),
        (lambda: [1, 2, 3], r"must give a tf.data.Dataset of \(x, y\) pairs .* Received: list"),
        (lambda: (x for x in range(3)), r"must give .* Received: generator"),
        (
            lambda: tf.data.Dataset.range(5),
            r"must yield \(x, y\) pairs, e.g. tf.data.Dataset.from_tensor_slices",
        ),
    ],
    ids=["PyDataset without length", "list", "generator", "no labels"],
)
def test_other_data_is_refused_with_what_to_give_instead(data, message) -> None:
    with pytest.raises(ExperimentError, match=message):
        to_examples(data, "Experiment 'x': train_data")
