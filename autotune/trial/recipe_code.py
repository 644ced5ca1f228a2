"""A recipe as code: a short, commented Python module of plain Keras and tf.data that reproduces
the recipe's training settings without autotune installed (``autotune export --format python``,
:func:`python_snippet`).

The module sets what a trial set, as the trial set it: the Keras backend, TensorFlow's thread
counts and the dtype policy (``set_up``, before the model is built), the learning rate for the
batch size with its warm-up (``learning_rate``), the output and the recipe's float32 layers kept
in float32 (``keep_float32``), the ``model.compile`` settings (``COMPILE``) and the input
pipeline (``pipeline``). Its values come from the recipe's configuration and what took effect in
its trial, and its code is the trial's written out (beside :mod:`autotune.trial.applied`, which
reproduces a recipe with the trial's own code). No TensorFlow here.
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from autotune.config import AUTOTUNE
from autotune.float32_layers import LAYER_CLASSES, kinds
from autotune.lr_rules import rate_text
from autotune.recipe import Recipe
from autotune.trial.compile_settings import compile_settings


def _py(value: Any) -> str:
    """``value`` as Python source, strings in double quotes (as the module's own code)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_py(k)}: {_py(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _text(value: object) -> str:
    """Stored text (an experiment's name, a CPU's) made safe inside the module's docstring:
    backslashes and quotes escaped, so it can neither end the docstring nor be read as an
    escape."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"')


def _tf_value(value: int | str) -> str:
    return "tf.data.AUTOTUNE" if value == AUTOTUNE else repr(value)


def _measured_line(recipe: Recipe) -> str:
    """Where and how well the recipe was measured, for the module's docstring."""
    where = _text(recipe.hardware.get("cpu") or "an unrecorded machine")
    gpus = recipe.hardware.get("gpus")
    if isinstance(gpus, list) and gpus:
        where += f" with {_text(', '.join(str(g) for g in gpus))}"
    if recipe.is_baseline:
        return f"Measured on {where}: the float32/no-XLA baseline (nothing beat it beyond noise)."
    speed = f"{recipe.speedup:.2f}x the float32/no-XLA baseline" if recipe.speedup else "untimed"
    fidelity = "" if recipe.fidelity is None else f", fidelity {recipe.fidelity:.2f}"
    return f"Measured on {where}: {speed}{fidelity} (tolerance {recipe.tolerance:g})."


def _kept_classes(value: str) -> list[str]:
    return [f"keras.layers.{name}" for kind in kinds(value) for name in LAYER_CLASSES[kind]]


def _header(recipe: Recipe) -> list[str]:
    config = recipe.config
    trial = "the baseline" if recipe.trial is None else f"trial {recipe.trial}"
    source = f"study {_py(recipe.study)}, {trial}"
    return [
        *textwrap.wrap(
            f'"""Training settings autotune measured for {_text(recipe.experiment)} ({source}): '
            f"{config.describe()}.",
            width=96,
            break_on_hyphens=False,
            break_long_words=False,  # never inside an escape
        ),
        "",
        _measured_line(recipe),
        "Plain Keras and tf.data: autotune need not be installed. In your training code:",
        "",
        "    set_up()  # first: before TensorFlow runs anything and before the model is built",
        "    train = pipeline(examples)  # unbatched (x, y) examples",
        "    model = keep_float32(build_model(), next(iter(train))[0])",
        "    model.compile(optimizer=keras.optimizers.Adam(learning_rate()), loss=..., **COMPILE)",
        *(
            [
                "    step = train_function(model, train_step)  # your own step, as measured",
                "    iterator = iter(train)",
                "    for _ in range(calls):  # each runs COMPILE['steps_per_execution'] steps",
                "        loss = step(iterator)",
            ]
            if recipe.effective.get("train_step") == "experiment"
            else ["    model.fit(train, steps_per_epoch=EXAMPLES // BATCH_SIZE, epochs=...)"]
        ),
        '"""',
        "",
        "import inspect",
        "import os",
        "",
        f'os.environ["KERAS_BACKEND"] = {_py(config.backend)}  # before Keras is imported',
        "",
        "import keras  # noqa: E402",
        "import tensorflow as tf  # noqa: E402",
        "",
    ]


def _settings(recipe: Recipe) -> list[str]:
    config, effective = recipe.config, recipe.effective
    rate = recipe.learning_rate
    rate_note = (
        f"for BATCH_SIZE: {rate_text(rate, effective)}" if rate is not None else "set your own"
    )
    pipeline = effective.get("pipeline")
    padded = bool(isinstance(pipeline, dict) and pipeline.get("padded"))
    kept = _kept_classes(config.float32_layers)
    layers = ["FLOAT32_LAYERS = ()"]
    if kept:
        layers = ["FLOAT32_LAYERS = (", *(f"    {name}," for name in kept), ")"]
    warmup = effective.get("lr_warmup_steps") or 0
    compile_kwargs = compile_settings(config)
    return [
        f"BATCH_SIZE = {config.batch_size}  # drop_remainder=True: one batch shape for XLA",
        f"PRECISION = {_py(config.precision)}  # the Keras dtype policy",
        f"LEARNING_RATE = {rate!r}  # {rate_note}",
        f"WARMUP_STEPS = {int(warmup)}  # optimizer steps of a linear warm-up (0: none)",
        "# model.compile settings (auto_scale_loss: Keras's loss scaling under mixed_float16):",
        f"COMPILE = {_py(compile_kwargs)}",
        f"SHUFFLE_BUFFER = {config.shuffle_buffer}  # examples (capped at the data's size)",
        f"NUM_PARALLEL_CALLS = {_tf_value(config.num_parallel_calls)}  # of the preprocess map",
        f"PREFETCH = {_tf_value(config.prefetch)}  # batches (0: none at all)",
        f"INTRA_OP_THREADS = {config.intra_op_threads}  # 0: TensorFlow's default",
        f"INTER_OP_THREADS = {config.inter_op_threads}  # 0: TensorFlow's default",
        f"PRIVATE_THREADPOOL_SIZE = {config.private_threadpool_size}  # 0: tf.data's shared pool",
        f"PADDED = {padded}  # examples of varying shape, padded per batch",
        "# Kept in float32 under a mixed policy besides the output "
        f"(float32_layers={_py(config.float32_layers)}):",
        *layers,
        "",
    ]


_FUNCTIONS = '''

def set_up():
    """TensorFlow's thread counts (before it runs anything), then the dtype policy (before the
    model is built: its layers take the policy they are built under)."""
    if INTRA_OP_THREADS:
        tf.config.threading.set_intra_op_parallelism_threads(INTRA_OP_THREADS)
    if INTER_OP_THREADS:
        tf.config.threading.set_inter_op_parallelism_threads(INTER_OP_THREADS)
    keras.config.set_dtype_policy(PRECISION)


class LinearWarmup(keras.optimizers.schedules.LearningRateSchedule):
    """rate * min(1, (step + 1) / warmup_steps) at optimizer step `step` (0 first)."""

    def __init__(self, rate, warmup_steps):
        super().__init__()
        self.rate, self.warmup_steps = float(rate), int(warmup_steps)

    def __call__(self, step):
        done = (keras.ops.cast(step, "float32") + 1.0) / float(self.warmup_steps)
        return self.rate * keras.ops.minimum(1.0, done)

    def get_config(self):
        return {"rate": self.rate, "warmup_steps": self.warmup_steps}


def learning_rate():
    """What to give the optimizer: the rate for BATCH_SIZE, or a schedule warming up to it."""
    return LinearWarmup(LEARNING_RATE, WARMUP_STEPS) if WARMUP_STEPS else LEARNING_RATE


class Float32Outputs(keras.Model):
    """A model whose last layer is not its output layer, with its outputs cast to float32."""

    def __init__(self, inner):
        super().__init__(name=f"{inner.name}_float32_output")
        self.inner = inner

    def call(self, inputs, training=None):
        outputs = self.inner(inputs, training=training)
        return keras.tree.map_structure(lambda t: keras.ops.cast(t, "float32"), outputs)


def _all_float32(model, inputs):
    outputs = keras.tree.flatten(model(inputs, training=False))
    return all(keras.backend.standardize_dtype(t.dtype) == "float32" for t in outputs)


def keep_float32(model, inputs):
    """Under a mixed policy, the FLOAT32_LAYERS (with the layers inside them) and the output in
    float32, as the trial kept them; `inputs` is one batch of model inputs. Returns the model
    to train (the same one, or it wrapped so its outputs are cast)."""
    for layer in model._flatten_layers(include_self=False):  # Keras's walk over nested layers
        if isinstance(layer, FLOAT32_LAYERS):
            for inner in layer._flatten_layers(include_self=True):
                inner.dtype_policy = "float32"
    if _all_float32(model, inputs):
        return model
    if model.layers:
        last, policy = model.layers[-1], model.layers[-1].dtype_policy
        last.dtype_policy = "float32"  # the output layer computes its activation in float32
        if _all_float32(model, inputs):
            return model
        last.dtype_policy = policy  # not the output layer after all
    return Float32Outputs(model)


def pipeline(examples, preprocess=None, seed=0):
    """The measured training stream over unbatched (x, y) `examples`: shuffle -> repeat ->
    map(preprocess) -> batch(drop_remainder=True) -> prefetch. It repeats forever: give
    model.fit a steps_per_epoch. A `preprocess(x, y, seed=...)` gets a per-example stateless
    seed (for tf.image.stateless_random_*), the same at any parallelism."""
    size = int(examples.cardinality())
    buffer = min(SHUFFLE_BUFFER, size) if size > 0 else SHUFFLE_BUFFER
    dataset = examples.shuffle(buffer, seed=seed) if buffer > 1 else examples
    dataset = dataset.repeat()
    if preprocess is not None and "seed" in inspect.signature(preprocess).parameters:
        seeds = tf.data.Dataset.random(seed=seed).batch(2, drop_remainder=True)
        dataset = tf.data.Dataset.zip((dataset, seeds)).map(
            lambda example, pair: preprocess(*example, seed=pair),
            num_parallel_calls=NUM_PARALLEL_CALLS,
            deterministic=True,
        )
    elif preprocess is not None:
        dataset = dataset.map(preprocess, num_parallel_calls=NUM_PARALLEL_CALLS, deterministic=True)
    if PADDED:  # examples of varying shape: each batch padded to its longest
        dataset = dataset.padded_batch(BATCH_SIZE, drop_remainder=True)
    else:
        dataset = dataset.batch(BATCH_SIZE, drop_remainder=True)
    options = tf.data.Options()
    if PREFETCH == 0:
        options.experimental_optimization.inject_prefetch = False  # no prefetch at all
    else:
        dataset = dataset.prefetch(PREFETCH)
    if PRIVATE_THREADPOOL_SIZE:
        options.threading.private_threadpool_size = PRIVATE_THREADPOOL_SIZE
    return dataset.with_options(options)
'''


_CUSTOM_STEP = '''

def train_function(model, step):
    """Your `step(model, optimizer, batch) -> loss` compiled as the trial compiled it: one call
    runs COMPILE["steps_per_execution"] steps from an iterator over `pipeline(...)`, with XLA as
    COMPILE["jit_compile"] says, and returns the last loss. Compile the model first (COMPILE's
    auto_scale_loss makes its optimizer a LossScaleOptimizer under mixed_float16)."""

    @tf.function(jit_compile=COMPILE["jit_compile"])  # XLA compiles the step, as Keras does
    def one_step(batch):
        return step(model, model.optimizer, batch)

    @tf.function  # reading the iterator stays outside XLA
    def run(iterator):
        loss = one_step(next(iterator))
        for _ in tf.range(COMPILE["steps_per_execution"] - 1):
            loss = one_step(next(iterator))
        return loss

    return run
'''


def python_snippet(recipe: Recipe) -> str:
    """The recipe as a Python module of plain Keras and tf.data (see the module docstring);
    for an experiment with its own training step, with ``train_function(model, step)``, which
    compiles it as the trial did."""
    custom = recipe.effective.get("train_step") == "experiment"
    code = "\n".join([*_header(recipe), *_settings(recipe)]) + _FUNCTIONS
    return code + _CUSTOM_STEP if custom else code


__all__ = ["python_snippet"]
