"""Input-boundness by ablation: a trial's real input pipeline against the same training steps fed
one cached batch, repeated (``take(1).cache().repeat()``), timed in alternating windows. The
speed the model would reach if its input cost nothing, measured where a profile cannot see it (on
a CPU, input work slows the step without the step waiting). Only the trial process uses this
module (it imports TensorFlow through the trainer).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from autotune.config import RunSettings, TrialConfig
from autotune.measure import InputAblation, ablation_pairs, summarize, whole_calls
from autotune.trial.trainer import Trainer, timed_window


def input_ablation(
    model: keras.Model,
    train_data: tf.data.Dataset,
    trainer: Trainer,
    config: TrialConfig,
    settings: RunSettings,
    steps: int,
    samples_per_second: float,
) -> InputAblation:
    """The real pipeline (``trainer``, the trial's own, already warm and synced) against
    ``model`` fed one cached batch of ``train_data``, repeated: same shapes, so nothing
    recompiles.

    The two alternate, one window of ``steps`` calls each, so a machine that slows down or
    speeds up mid-trial (a shared host, a CPU's clock) moves both alike instead of reading as
    input cost; both are in samples/s. ``ablation_windows`` pairs, fewer where the trial's
    windows (``steps`` calls at ``samples_per_second``) are far longer than ``window_seconds``
    (:func:`autotune.measure.ablation_pairs`). The cached pipeline warms up on
    ``warmup_min_steps`` training steps in whole calls (one at 64 steps per execution: the first
    fills its cache)."""
    cached = Trainer(model, train_data.take(1).cache().repeat(), xla_compiles=False)
    cached.run(
        whole_calls(settings.warmup_min_steps, config.steps_per_execution),
        "input ablation warm-up",
    )
    cached.sync()
    window_seconds = steps * config.samples_per_call / samples_per_second
    pairs = ablation_pairs(settings.ablation_windows, settings.window_seconds, window_seconds)
    pipeline_windows: list[float] = []
    cached_windows: list[float] = []
    for _ in range(pairs):
        for runner, windows in ((trainer, pipeline_windows), (cached, cached_windows)):
            windows.append(timed_window(runner, steps, config.samples_per_call, "input ablation"))
            runner.sync()  # a JAX trainer's state back into the model, for the other one
    return InputAblation.of(summarize(pipeline_windows), summarize(cached_windows))


__all__ = ["input_ablation"]
