"""A small CNN on scikit-learn's handwritten digits (1,797 8x8 images, shipped with the package),
with random-shift augmentation in the input pipeline, so num_parallel_calls and prefetch matter."""

from __future__ import annotations

import numpy as np

from autotune import Experiment

VALIDATION_FRACTION = 0.2


def _split() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype("float32")[..., None]  # (1797, 8, 8, 1) in [0, 1]
    labels = digits.target.astype("int32")
    order = np.random.default_rng(0).permutation(len(labels))
    cut = int(len(labels) * (1 - VALIDATION_FRACTION))
    train, val = order[:cut], order[cut:]
    return (images[train], labels[train]), (images[val], labels[val])


def train_data() -> tuple[np.ndarray, np.ndarray]:
    return _split()[0]


def validation_data() -> tuple[np.ndarray, np.ndarray]:
    return _split()[1]


def augment(image, label, seed):  # type: ignore[no-untyped-def]
    """Pads to 10x10 and crops back to 8x8 at a random offset: a shift of up to one pixel.

    Stateless, with the per-example seed autotune passes, so a seed gives the same data at any
    num_parallel_calls and validation curves stay comparable across trials.
    """
    import tensorflow as tf

    padded = tf.pad(image, [[1, 1], [1, 1], [0, 0]])
    return tf.image.stateless_random_crop(padded, [8, 8, 1], seed=seed), label


def model():  # type: ignore[no-untyped-def]
    import keras

    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )


def optimizer(learning_rate: float):  # type: ignore[no-untyped-def]
    import keras

    return keras.optimizers.Adam(learning_rate)


experiment = Experiment(
    name="digits_cnn",
    description="Small CNN on scikit-learn's 8x8 digits with random-shift augmentation.",
    model=model,
    train_data=train_data,
    validation_data=validation_data,
    preprocess=augment,
    loss="sparse_categorical_crossentropy",
    optimizer=optimizer,
    metrics=["accuracy"],
    base_batch_size=32,
    base_learning_rate=1e-3,
    lr_scaling="sqrt",
    curve_samples=1437 * 3,
)
