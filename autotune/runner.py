"""One trial, in-process: the only place that trains.

:func:`run_trial` sets the dtype policy before the model is built, keeps the output layer in
float32 under mixed precision, compiles with the trial's ``jit_compile``, warms up until step times
stop falling, times whole-step windows (samples/s), then restores the initial weights and trains a
fixed sample budget with validation loss at fixed checkpoints (the fidelity curve). Between the
timed windows and the curve, and outside both, it may profile one more window under the
TensorBoard profiler (steps wrapped in step markers, read with XProf) and time the same steps fed
one cached batch (input ablation). Call it in a
fresh process (see :mod:`autotune.isolation`): the dtype policy and XLA's caches are process state.
"""

from __future__ import annotations

import math
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from autotune import hardware
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ExperimentError, TrialFailure
from autotune.experiment import Experiment
from autotune.measure import (
    Estimate,
    InputAblation,
    WarmupDetector,
    confidently_below,
    steps_per_window,
    summarize,
)
from autotune.pipeline import dynamic_dimensions, training_pipeline, validation_pipeline
from autotune.profile import ProfileError, ProfileSummary, analyse
from autotune.recompilation import Recompilation, detect
from autotune.result import CurvePoint, RunResult


class _Trainer:
    """Runs training steps of a compiled model from one iterator, checking the loss.

    With ``xla_compiles`` the first step is where XLA compiles the training step, so an error
    there is reported as an XLA compilation failure.
    """

    def __init__(self, model: keras.Model, dataset: tf.data.Dataset, xla_compiles: bool) -> None:
        self.model = model
        self.iterator = iter(dataset)
        self.xla_compiles = xla_compiles
        self.steps = 0
        model.make_train_function()
        self._step: Callable[[Any], dict[str, Any]] = model.train_function

    def run(
        self,
        steps: int,
        phase: str,
        step_seconds: list[float] | None = None,
        step_markers: bool = False,
    ) -> float:
        """Runs ``steps`` steps and returns the last loss, read back so all work is finished.

        Appends each step's wall time (seconds, as the host saw it) to ``step_seconds`` when
        given; with ``step_markers`` each step runs inside a profiler step marker, which gives
        XProf its per-step times.
        """
        logs: dict[str, Any] = {}
        for _ in range(steps):
            start = time.perf_counter()
            if self.xla_compiles and self.steps == 0:
                try:
                    logs = self._step(self.iterator)
                except tf.errors.OpError as error:
                    raise TrialFailure(
                        "xla_compile", f"XLA could not compile the training step: {error.message}"
                    ) from error
            elif step_markers:
                with tf.profiler.experimental.Trace("train", step_num=self.steps, _r=1):
                    logs = self._step(self.iterator)
            else:
                logs = self._step(self.iterator)
            if step_seconds is not None:
                step_seconds.append(time.perf_counter() - start)
            self.steps += 1
        loss = float(logs["loss"])
        if not math.isfinite(loss):
            raise TrialFailure("nan", f"training loss became {loss} by step {self.steps} ({phase})")
        return loss


def _dtype(tensor: Any) -> str:
    return str(keras.backend.standardize_dtype(tensor.dtype))


def _output_dtypes(model: keras.Model, x: Any) -> list[str]:
    return [_dtype(t) for t in tf.nest.flatten(model(x, training=False))]


class _Float32Output(keras.Model):
    """Wraps a model whose output layer cannot be set to float32, casting its outputs."""

    def __init__(self, inner: keras.Model) -> None:
        super().__init__(name=f"{inner.name}_float32_output")
        self.inner = inner

    def call(self, inputs: Any, training: bool | None = None) -> Any:
        outputs = self.inner(inputs, training=training)
        return tf.nest.map_structure(lambda t: keras.ops.cast(t, "float32"), outputs)


def ensure_float32_head(model: keras.Model, x: Any) -> tuple[keras.Model, dict[str, Any]]:
    """Makes the model's outputs float32 under a mixed policy; reports what it found and did.

    Returns the model to train and ``{"output_dtype_found", "head_fixed", "head_fix"}``, where
    ``head_fix`` is "last_layer" (the last layer's dtype policy set to float32, so its activation
    computes in float32) or "cast" (outputs cast to float32 by a wrapper).
    """
    found = _output_dtypes(model, x)
    info: dict[str, Any] = {
        "output_dtype_found": found[0] if len(set(found)) == 1 else found,
        "head_fixed": False,
        "head_fix": None,
    }
    if all(d == "float32" for d in found):
        return model, info
    layers = getattr(model, "layers", [])
    if layers:
        last, policy = layers[-1], layers[-1].dtype_policy
        last.dtype_policy = "float32"
        if all(d == "float32" for d in _output_dtypes(model, x)):
            info.update(head_fixed=True, head_fix="last_layer")
            return model, info
        last.dtype_policy = policy  # not the output layer after all: leave it as it was
    wrapped = _Float32Output(model)
    wrapped(x, training=False)
    info.update(head_fixed=True, head_fix="cast")
    return wrapped, info


def _build_model(experiment: Experiment) -> keras.Model:
    model = experiment.model()
    if model is None:
        raise ExperimentError(
            f"Experiment {experiment.name!r}: model() returned None; it must return a keras.Model"
        )
    if not isinstance(model, keras.Model):
        raise ExperimentError(
            f"Experiment {experiment.name!r}: model() must return a keras.Model. "
            f"Received: {type(model).__name__}"
        )
    return model


def _check_output_matches_labels(
    experiment: Experiment, model: keras.Model, x: Any, y: Any
) -> None:
    outputs = model(x, training=False)
    loss = (
        keras.losses.get(experiment.loss) if isinstance(experiment.loss, str) else experiment.loss
    )
    try:
        value = loss(y, outputs)
    except Exception as error:
        shapes = [tuple(t.shape) for t in tf.nest.flatten(outputs)]
        raise ExperimentError(
            f"Experiment {experiment.name!r}: the model's output shape {shapes} does not fit the "
            f"labels' shape {tuple(y.shape)} for loss {experiment.loss!r}: {error}"
        ) from error
    if value is None:
        raise ExperimentError(f"Experiment {experiment.name!r}: the loss returned None")


def _snapshot(variables: list[Any]) -> list[Any]:
    return [v.numpy() for v in variables]


def _restore(variables: list[Any], values: list[Any]) -> None:
    for variable, value in zip(variables, values, strict=True):
        variable.assign(value)


def _peak_device_bytes() -> int | None:
    gpus = tf.config.list_logical_devices("GPU")
    if not gpus:
        return None
    return int(sum(tf.config.experimental.get_memory_info(g.name)["peak"] for g in gpus))


def _library_facts() -> dict[str, Any]:
    build = tf.sysconfig.get_build_info()
    return {
        "cuda": str(build.get("cuda_version", "")),
        "cudnn": str(build.get("cudnn_version", "")),
        "devices": [d.name for d in tf.config.list_logical_devices()],
        "keras_backend": keras.backend.backend(),
    }


def run_trial(experiment: Experiment, config: TrialConfig, settings: RunSettings) -> RunResult:
    """Measures one configuration of ``experiment`` in this process.

    Raises:
        ExperimentError: the experiment's model or data are unusable (a configuration error).
        TrialFailure: the loss became NaN (kind "nan"), or XLA could not compile (kind
            "xla_compile"). Other exceptions propagate; the trial process classifies them.
    """
    started = time.perf_counter()
    phases: dict[str, float] = {}
    keras.config.set_dtype_policy(config.precision)
    keras.utils.set_random_seed(settings.seed)

    train_data, pipeline_settings = training_pipeline(experiment, config, settings.seed)
    validation_data = validation_pipeline(experiment)
    x, y = next(iter(train_data))[:2]
    model = _build_model(experiment)
    _check_output_matches_labels(experiment, model, x, y)
    model, head = ensure_float32_head(model, x)

    learning_rate = experiment.learning_rate(config.batch_size)
    optimizer = experiment.optimizer(learning_rate)
    if optimizer is None:
        raise ExperimentError(
            f"Experiment {experiment.name!r}: optimizer({learning_rate}) returned None; "
            "it must return a keras optimizer"
        )
    model.compile(
        optimizer=optimizer,
        loss=experiment.loss,
        metrics=list(experiment.metrics),
        jit_compile=config.jit_compile,
    )
    loss_scaling = isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    if config.precision == "mixed_float16" and not loss_scaling:
        raise ExperimentError(
            f"Experiment {experiment.name!r}: mixed_float16 needs loss scaling, but Keras did not "
            "wrap the optimizer in a LossScaleOptimizer"
        )
    model.optimizer.build(model.trainable_variables)
    state = list(model.variables) + list(model.optimizer.variables)
    initial = _snapshot(state)
    effective: dict[str, Any] = {
        "dtype_policy": keras.config.dtype_policy().name,
        "compute_dtype": keras.config.dtype_policy().compute_dtype,
        "variable_dtype": keras.config.dtype_policy().variable_dtype,
        "jit_compile_requested": config.jit_compile,
        "jit_compile": bool(model.jit_compile),
        "loss_scaling": loss_scaling,
        "learning_rate": learning_rate,
        "pipeline": pipeline_settings.to_dict(),
        **head,
    }
    phases["setup"] = time.perf_counter() - started

    throughput = None
    windows: list[float] = []
    window_steps = warmup_steps = 0
    compile_seconds = steady_seconds = 0.0
    stopped_early: str | None = None
    ablation: InputAblation | None = None
    recompilation: Recompilation | None = None
    profile: ProfileSummary | None = None
    profile_error: str | None = None
    if settings.measure_throughput:
        trainer = _Trainer(model, train_data, xla_compiles=bool(model.jit_compile))
        phase_start = time.perf_counter()
        detector = WarmupDetector(min_steps=settings.warmup_min_steps)
        while True:
            step_start = time.perf_counter()
            trainer.run(1, "warm-up")
            detector.add(time.perf_counter() - step_start)
            if detector.steady or trainer.steps >= settings.warmup_max_steps:
                break
            if (
                time.perf_counter() - phase_start > settings.warmup_max_seconds
                and trainer.steps >= 2
            ):
                break
        warmup_steps = trainer.steps
        steady_seconds = detector.steady_step_seconds
        compile_seconds = max(0.0, detector.step_seconds[0] - steady_seconds)
        phases["warmup"] = time.perf_counter() - phase_start

        window_steps = steps_per_window(
            steady_seconds, settings.window_seconds, settings.min_window_steps
        )
        phase_start = time.perf_counter()
        timed_steps: list[float] = []
        for _ in range(settings.windows):
            model.reset_metrics()
            window_start = time.perf_counter()
            trainer.run(window_steps, "timed window", step_seconds=timed_steps)
            elapsed = time.perf_counter() - window_start
            windows.append(window_steps * config.batch_size / elapsed)
            throughput = summarize(windows)
            threshold = settings.stop_below_samples_per_second
            if threshold is not None and confidently_below(throughput, threshold):
                stopped_early = (
                    f"throughput {throughput.median:.0f} samples/s (95% CI upper "
                    f"{throughput.high:.0f}) is confidently below the baseline's "
                    f"{threshold:.0f} samples/s after {len(windows)} window(s)"
                )
                break
        phases["windows"] = time.perf_counter() - phase_start
        recompilation = detect(
            timed_steps, compile_seconds, bool(model.jit_compile), dynamic_dimensions(train_data)
        )
        if settings.profile_dir is not None and stopped_early is None:
            phase_start = time.perf_counter()
            profile, profile_error = _profile_window(
                trainer,
                model,
                config,
                Path(settings.profile_dir),
                min(window_steps, settings.profile_steps),
            )
            phases["profile"] = time.perf_counter() - phase_start
        if settings.input_ablation and stopped_early is None and throughput is not None:
            phase_start = time.perf_counter()
            cached = _cached_batch_throughput(model, train_data, config, settings, window_steps)
            ablation = InputAblation.of(throughput, cached)
            phases["ablation"] = time.perf_counter() - phase_start

    curve: list[CurvePoint] = []
    final_metrics: dict[str, float] = {}
    if settings.curve and stopped_early is None:
        phase_start = time.perf_counter()
        curve, final_metrics = _train_curve(
            experiment,
            config,
            settings,
            model,
            state,
            initial,
            validation_data,
            pipeline_settings.train_examples,
        )
        phases["curve"] = time.perf_counter() - phase_start

    phases["total"] = time.perf_counter() - started
    return RunResult(
        config=config,
        effective=effective,
        throughput=throughput,
        window_samples_per_second=windows,
        steps_per_window=window_steps,
        warmup_steps=warmup_steps,
        compile_seconds=compile_seconds,
        steady_step_seconds=steady_seconds,
        curve=curve,
        final_metrics=final_metrics,
        stopped_early=stopped_early,
        input_ablation=ablation,
        profile=profile,
        profile_error=profile_error,
        recompilation=recompilation,
        peak_host_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        peak_device_bytes=_peak_device_bytes(),
        phase_seconds=phases,
        hardware={**hardware.hardware(), **_library_facts()},
        versions=hardware.versions(),
    )


def _profile_window(
    trainer: _Trainer, model: keras.Model, config: TrialConfig, log_dir: Path, steps: int
) -> tuple[ProfileSummary | None, str | None]:
    """Profiles ``steps`` training steps, each in a step marker, into ``log_dir`` and reads the
    profile with XProf. Returns the summary, or None and why there is none: a profile that
    cannot be captured or read costs the trial its breakdown, never its measurements."""
    started = time.perf_counter()
    try:
        tf.profiler.experimental.start(str(log_dir))
    except tf.errors.OpError as error:  # another profiler session runs in this process
        return None, f"the profiler could not start: {error.message}"
    try:
        model.reset_metrics()
        window_start = time.perf_counter()
        trainer.run(steps, "profiled window", step_markers=True)
        samples_per_second = steps * config.batch_size / (time.perf_counter() - window_start)
    finally:
        tf.profiler.experimental.stop()
    try:
        summary = analyse(log_dir)
    except ProfileError as error:
        return None, str(error)
    return summary.with_capture(time.perf_counter() - started, samples_per_second), None


def _cached_batch_throughput(
    model: keras.Model,
    train_data: tf.data.Dataset,
    config: TrialConfig,
    settings: RunSettings,
    window_steps: int,
) -> Estimate:
    """samples/s of the same training steps fed one cached batch, repeated: the speed the model
    would reach if the input pipeline cost nothing (same shapes, so nothing recompiles)."""
    trainer = _Trainer(model, train_data.take(1).cache().repeat(), xla_compiles=False)
    trainer.run(settings.warmup_min_steps, "input ablation warm-up")
    windows = []
    for _ in range(settings.ablation_windows):
        model.reset_metrics()
        window_start = time.perf_counter()
        trainer.run(window_steps, "input ablation")
        windows.append(window_steps * config.batch_size / (time.perf_counter() - window_start))
    return summarize(windows)


def checkpoint_steps(samples: int, batch_size: int, checkpoints: int) -> list[int]:
    """Cumulative step counts at which to evaluate: ``checkpoints`` evenly spaced points over
    ``samples`` training examples, at least one step apart."""
    steps: list[int] = []
    for k in range(1, checkpoints + 1):
        target = round(samples * k / checkpoints / batch_size)
        steps.append(max(target, steps[-1] + 1 if steps else 1))
    return steps


def _train_curve(
    experiment: Experiment,
    config: TrialConfig,
    settings: RunSettings,
    model: keras.Model,
    state: list[Any],
    initial: list[Any],
    validation_data: tf.data.Dataset,
    train_examples: int | None,
) -> tuple[list[CurvePoint], dict[str, float]]:
    """Trains from the initial weights on a fixed sample budget; validation loss at checkpoints."""
    samples = settings.curve_samples or experiment.curve_samples or train_examples
    if samples is None:
        raise ExperimentError(
            f"Experiment {experiment.name!r}: the training data's size is unknown, so set "
            "curve_samples (training examples in the fidelity curve run)"
        )
    _restore(state, initial)
    model.reset_metrics()
    keras.utils.set_random_seed(settings.seed)
    train_data, _ = training_pipeline(experiment, config, settings.seed)
    trainer = _Trainer(
        model, train_data, xla_compiles=bool(model.jit_compile) and not settings.measure_throughput
    )
    curve: list[CurvePoint] = []
    metrics: dict[str, float] = {}
    for step in checkpoint_steps(samples, config.batch_size, settings.checkpoints):
        trainer.run(step - trainer.steps, "curve")
        metrics = {
            name: float(value)
            for name, value in model.evaluate(validation_data, verbose=0, return_dict=True).items()
        }
        if not math.isfinite(metrics["loss"]):
            raise TrialFailure(
                "nan", f"validation loss became {metrics['loss']} after {step} curve steps"
            )
        curve.append(CurvePoint(samples=step * config.batch_size, val_loss=metrics["loss"]))
    return curve, metrics


def classify_exception(error: BaseException, config: TrialConfig) -> TrialFailure:
    """Turns an exception raised by a trial into a :class:`TrialFailure` of the right kind."""
    if isinstance(error, TrialFailure):
        return error
    message = f"{type(error).__name__}: {error}".strip()
    if isinstance(error, (MemoryError, tf.errors.ResourceExhaustedError)):
        return TrialFailure("oom", message)
    text = str(error).lower()
    if (
        config.jit_compile
        and isinstance(error, tf.errors.OpError)
        and ("xla" in text or "jit" in text or "compil" in text)
    ):
        return TrialFailure("xla_compile", message)
    return TrialFailure("exception", message)
