"""A multilayer perceptron on synthetic tabular data (scikit-learn's ``make_classification``: 32
features, 5 classes), with no preprocessing, so the input pipeline is trivial and the workload is
bound by compute and per-step overhead: batch size, XLA and precision are what move throughput."""

from __future__ import annotations

import numpy as np

from autotune import Experiment

TRAIN_EXAMPLES = 8_000
VALIDATION_EXAMPLES = 2_000
FEATURES = 32
CLASSES = 5


def _split() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    from sklearn.datasets import make_classification

    features, labels = make_classification(
        n_samples=TRAIN_EXAMPLES + VALIDATION_EXAMPLES,
        n_features=FEATURES,
        n_informative=16,
        n_redundant=8,
        n_classes=CLASSES,
        n_clusters_per_class=2,
        class_sep=1.0,
        flip_y=0.02,
        random_state=0,
    )
    x_train, x_val = features[:TRAIN_EXAMPLES], features[TRAIN_EXAMPLES:]
    mean, std = x_train.mean(axis=0), x_train.std(axis=0) + 1e-8  # training statistics only
    x_train = ((x_train - mean) / std).astype("float32")
    x_val = ((x_val - mean) / std).astype("float32")
    y_train = labels[:TRAIN_EXAMPLES].astype("int32")
    y_val = labels[TRAIN_EXAMPLES:].astype("int32")
    return (x_train, y_train), (x_val, y_val)


def train_data() -> tuple[np.ndarray, np.ndarray]:
    return _split()[0]


def validation_data() -> tuple[np.ndarray, np.ndarray]:
    return _split()[1]


def model():  # type: ignore[no-untyped-def]
    import keras

    return keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(CLASSES, activation="softmax"),
        ]
    )


def optimizer(learning_rate: float):  # type: ignore[no-untyped-def]
    import keras

    return keras.optimizers.Adam(learning_rate)


experiment = Experiment(
    name="tabular_mlp",
    description="256-256-128 MLP on synthetic 32-feature, 5-class tabular data.",
    model=model,
    train_data=train_data,
    validation_data=validation_data,
    loss="sparse_categorical_crossentropy",
    optimizer=optimizer,
    metrics=["accuracy"],
    base_batch_size=64,
    base_learning_rate=1e-3,
    lr_scaling="linear",
    curve_samples=TRAIN_EXAMPLES * 3,
)
