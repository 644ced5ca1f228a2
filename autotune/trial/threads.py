"""A trial's CPU thread counts: TensorFlow's intra-op and inter-op pools.

TensorFlow fixes its thread pools when it first runs anything, so the trial process sets them
(:func:`set_threads`) before it loads the experiment, whose module may already run TensorFlow
ops. 0 leaves TensorFlow's default (one thread per usable core). The training pipeline's own
tf.data pool (``private_threadpool_size``) is set where the pipeline is built
(:func:`autotune.trial.pipeline.prepare_training`). :func:`thread_settings` reads back what took
effect, for the trial's effective settings.
"""

from __future__ import annotations

import tensorflow as tf

from autotune.config import TrialConfig
from autotune.exceptions import ConfigError


def set_threads(config: TrialConfig) -> None:
    """Sets TensorFlow's intra- and inter-op thread counts that ``config`` asks for (those not
    0); ConfigError when TensorFlow already runs with other counts."""
    try:
        if config.intra_op_threads:
            tf.config.threading.set_intra_op_parallelism_threads(config.intra_op_threads)
        if config.inter_op_threads:
            tf.config.threading.set_inter_op_parallelism_threads(config.inter_op_threads)
    except RuntimeError as error:  # "cannot be modified after initialization"
        raise ConfigError(
            f"TensorFlow's thread counts are set when it first runs: {config.describe()} asks for "
            f"intra_op_threads={config.intra_op_threads}, "
            f"inter_op_threads={config.inter_op_threads}, but TensorFlow is running already "
            f"({error}). Set them before anything else uses TensorFlow"
        ) from error


def thread_settings() -> dict[str, int]:
    """The intra- and inter-op thread counts in effect (0: TensorFlow's default)."""
    return {
        "intra_op_threads": int(tf.config.threading.get_intra_op_parallelism_threads()),
        "inter_op_threads": int(tf.config.threading.get_inter_op_parallelism_threads()),
    }


__all__ = ["set_threads", "thread_settings"]
