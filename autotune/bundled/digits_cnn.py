"""A small CNN on scikit-learn's handwritten digits (1,797 8x8 images, shipped with the package),
with a slow augmentation in the input pipeline (rotate, shift and add noise at 32x32), so
num_parallel_calls and prefetch matter."""

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
    """Rotates (up to +/-11 degrees), shifts and adds pixel noise at 32x32, then shrinks back to
    8x8: the kind of per-example work that makes a real input pipeline slow, here about as costly
    as a training step, so num_parallel_calls and prefetch matter.

    Stateless, with the per-example seed autotune passes, so a seed gives the same data at any
    num_parallel_calls and validation curves stay comparable across trials.
    """
    import tensorflow as tf

    rotate_seed, shift_seed, noise_seed = tf.unstack(
        tf.random.experimental.stateless_split(seed, 3)
    )
    side = 32
    middle = (side - 1) / 2.0
    angle = tf.random.stateless_uniform([], rotate_seed, -0.2, 0.2)
    cos, sin = tf.cos(angle), tf.sin(angle)
    # output pixel (x, y) samples the input at the rotation of (x, y) about the middle
    rotation = tf.stack(
        [cos, -sin, middle * (1 - cos + sin), sin, cos, middle * (1 - sin - cos), 0.0, 0.0]
    )
    rotated = tf.raw_ops.ImageProjectiveTransformV3(
        images=tf.image.resize(image, [side, side])[None],
        transforms=rotation[None],
        output_shape=[side, side],
        fill_value=0.0,
        interpolation="BILINEAR",
        fill_mode="CONSTANT",
    )[0]
    padded = tf.pad(rotated, [[4, 4], [4, 4], [0, 0]])
    shifted = tf.image.stateless_random_crop(padded, [side, side, 1], seed=shift_seed)
    small = tf.image.resize(shifted, [8, 8], method="area")
    noisy = small + tf.random.stateless_normal(tf.shape(small), noise_seed, stddev=0.02)
    return tf.clip_by_value(noisy, 0.0, 1.0), label


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
    description=(
        "Small CNN on scikit-learn's 8x8 digits with a slow augmentation in tf.data: rotate, "
        "shift and add noise at 32x32, then shrink to 8x8."
    ),
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
