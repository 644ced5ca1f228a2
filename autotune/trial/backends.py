"""What differs between the Keras backends a trial runs on: TensorFlow and JAX.

The trial process sets ``KERAS_BACKEND`` before Keras is imported (:mod:`autotune.trial.
isolation`); :func:`check_backend` then checks that Keras loaded the backend the trial asked
for. The rest are the few places where the backends need their own calls: the profiler and its
step markers, the device memory peak and the devices. The input pipeline is tf.data on both (a
JAX trial reads it as numpy arrays), so TensorFlow is imported either way; JAX only on JAX.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import keras
import tensorflow as tf

from autotune.config import TrialConfig
from autotune.exceptions import ConfigError


def loaded_backend() -> str:
    """The backend Keras runs on in this process."""
    return str(keras.backend.backend())


def check_backend(config: TrialConfig, *, recipe: bool = False) -> None:
    """ConfigError when Keras runs on another backend than ``config`` asks for, naming both
    (Keras reads ``KERAS_BACKEND`` once, when first imported): in a trial, something set Keras'
    backend before the trial could (an earlier import, the experiment's module); with
    ``recipe``, the user's process runs another backend than the recipe was measured on."""
    loaded = loaded_backend()
    if loaded == config.backend:
        return
    if recipe:
        raise ConfigError(
            f"the recipe was measured on the Keras backend {config.backend!r}, but Keras runs "
            f"on {loaded!r} here: set KERAS_BACKEND={config.backend} before anything imports "
            "keras, or use a recipe measured on this backend"
        )
    raise ConfigError(
        f"{config.describe()} asks for the Keras backend {config.backend!r}, but Keras "
        f"runs on {loaded!r} in this process (KERAS_BACKEND is read once, when Keras is "
        "first imported: set it before anything imports keras)"
    )


def is_jax() -> bool:
    return loaded_backend() == "jax"


def start_profiler(log_dir: str) -> str | None:
    """Starts this backend's profiler writing into ``log_dir`` (TensorBoard's profile layout,
    read with XProf); the reason when it cannot start, else None."""
    if is_jax():
        import jax

        try:
            jax.profiler.start_trace(log_dir)
        except RuntimeError as error:  # a trace runs already
            return f"the profiler could not start: {error}"
        return None
    try:
        tf.profiler.experimental.start(log_dir)
    except tf.errors.OpError as error:  # another profiler session runs in this process
        return f"the profiler could not start: {error.message}"
    return None


def stop_profiler() -> None:
    if is_jax():
        import jax

        jax.profiler.stop_trace()
    else:
        tf.profiler.experimental.stop()


def step_marker(step: int) -> contextlib.AbstractContextManager[Any]:
    """A profiler step marker around one training step (XProf's per-step times)."""
    if is_jax():
        import jax

        return jax.profiler.StepTraceAnnotation("train", step_num=step)
    return tf.profiler.experimental.Trace("train", step_num=step, _r=1)


def _jax_gpus() -> Iterator[Any]:
    import jax

    yield from (d for d in jax.devices() if d.platform == "gpu")


def peak_device_bytes() -> int | None:
    """Peak bytes the allocator of this process's GPUs held, summed; None without a GPU."""
    if is_jax():
        peaks = [int((d.memory_stats() or {}).get("peak_bytes_in_use", 0)) for d in _jax_gpus()]
        return sum(peaks) if peaks else None
    gpus = tf.config.list_logical_devices("GPU")
    if not gpus:
        return None
    return int(sum(tf.config.experimental.get_memory_info(g.name)["peak"] for g in gpus))


def devices() -> list[str]:
    """The devices the model trains on, as the backend names them."""
    if is_jax():
        import jax

        return [str(d) for d in jax.devices()]
    return [d.name for d in tf.config.list_logical_devices()]


def library_facts() -> dict[str, Any]:
    """What a result records of the libraries it ran on: CUDA and cuDNN versions of the
    TensorFlow build, the devices and Keras' backend."""
    build = tf.sysconfig.get_build_info()
    return {
        "cuda": str(build.get("cuda_version", "")),
        "cudnn": str(build.get("cudnn_version", "")),
        "devices": devices(),
        "keras_backend": loaded_backend(),
    }


__all__ = [
    "check_backend",
    "devices",
    "is_jax",
    "library_facts",
    "loaded_backend",
    "peak_device_bytes",
    "start_profiler",
    "step_marker",
    "stop_profiler",
]
