"""A small transformer encoder classifier on synthetic token sequences (vocabulary 1,000, length
64, made with a fixed numpy seed): the label is which of four token buckets is most common in the
first half of the sequence, while the second half favours a distractor bucket. Two pre-norm encoder
blocks of 4-head self-attention and a feed-forward layer with layer norms, dropout and residual
adds, so a step is many small kernels and elementwise ops: compute and op-overhead bound, where XLA
fusion and reduced precision help; the input pipeline (in-memory int32 tokens) is trivial."""

from __future__ import annotations

import numpy as np

from autotune import Experiment

VOCABULARY = 1_000
SEQUENCE_LENGTH = 64
BUCKETS = 4  # token t is in bucket t // (VOCABULARY // BUCKETS); the label is one bucket
SHARE_LOW, SHARE_HIGH = 0.2, 0.5  # share of a half drawn from its favoured bucket
TRAIN_EXAMPLES = 3_000
VALIDATION_EXAMPLES = 600
EMBEDDING = 64
HEADS = 4
KEY_DIM = 32
FEED_FORWARD = 128
BLOCKS = 2
DROPOUT = 0.1


def _sequences(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Uniform tokens; in each half of a sequence a random share (20-50%) is replaced by tokens of
    one random bucket. The label is the most common bucket in the first half, so the second half
    is a distractor and the model has to use positions, which it learns over a couple of epochs.
    """
    width = VOCABULARY // BUCKETS
    half = SEQUENCE_LENGTH // 2
    tokens = rng.integers(0, VOCABULARY, size=(count, SEQUENCE_LENGTH))
    for part in (slice(0, half), slice(half, SEQUENCE_LENGTH)):
        favoured = rng.integers(0, BUCKETS, size=(count, 1))
        share = rng.uniform(SHARE_LOW, SHARE_HIGH, size=(count, 1))
        biased = favoured * width + rng.integers(0, width, size=(count, half))
        replace = rng.random((count, half)) < share
        tokens[:, part] = np.where(replace, biased, tokens[:, part])
    buckets = tokens[:, :half] // width
    counts = np.stack([(buckets == b).sum(axis=1) for b in range(BUCKETS)], axis=1)
    return tokens.astype("int32"), counts.argmax(axis=1).astype("int32")


def _split() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    return _sequences(TRAIN_EXAMPLES, rng), _sequences(VALIDATION_EXAMPLES, rng)


def train_data() -> tuple[np.ndarray, np.ndarray]:
    return _split()[0]


def validation_data() -> tuple[np.ndarray, np.ndarray]:
    return _split()[1]


def model():  # type: ignore[no-untyped-def]
    import keras

    class PositionEmbedding(keras.layers.Layer):
        """Adds a learned embedding of each position to the token embeddings."""

        def build(self, input_shape):  # type: ignore[no-untyped-def]
            self.positions = self.add_weight(
                shape=(input_shape[-2], input_shape[-1]), initializer="random_normal", name="pos"
            )

        def call(self, inputs):  # type: ignore[no-untyped-def]
            return inputs + keras.ops.cast(self.positions, inputs.dtype)

    tokens = keras.Input((SEQUENCE_LENGTH,), dtype="int32")
    x = keras.layers.Embedding(VOCABULARY, EMBEDDING)(tokens)
    x = PositionEmbedding()(x)
    for _ in range(BLOCKS):  # pre-norm blocks: stable at lr 1e-3 without warm-up
        normed = keras.layers.LayerNormalization(epsilon=1e-6)(x)
        x = x + keras.layers.MultiHeadAttention(HEADS, KEY_DIM, dropout=DROPOUT)(normed, normed)
        normed = keras.layers.LayerNormalization(epsilon=1e-6)(x)
        hidden = keras.layers.Dense(FEED_FORWARD, activation="gelu")(normed)
        x = x + keras.layers.Dropout(DROPOUT)(keras.layers.Dense(EMBEDDING)(hidden))
    x = keras.layers.LayerNormalization(epsilon=1e-6)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    outputs = keras.layers.Dense(BUCKETS, activation="softmax")(x)
    return keras.Model(tokens, outputs)


def optimizer(learning_rate: float):  # type: ignore[no-untyped-def]
    import keras

    return keras.optimizers.AdamW(learning_rate, weight_decay=1e-4, beta_2=0.98, clipnorm=1.0)


experiment = Experiment(
    name="transformer",
    description="Two-block transformer encoder classifying synthetic token sequences.",
    model=model,
    train_data=train_data,
    validation_data=validation_data,
    loss="sparse_categorical_crossentropy",
    optimizer=optimizer,
    metrics=["accuracy"],
    base_batch_size=32,
    base_learning_rate=1e-3,
    lr_scaling="sqrt",
    curve_samples=TRAIN_EXAMPLES * 2,
)
