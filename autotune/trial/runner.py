"""One trial, in-process: the only place that trains.

:func:`run_trial` sets the dtype policy before the model is built, keeps the output layer in
float32 under mixed precision, compiles with the trial's ``jit_compile``, warms up until step times
stop falling, times whole-step windows (samples/s), then restores the initial weights and trains a
fixed sample budget with validation loss at fixed checkpoints (the fidelity curve), on the
Keras backend the trial asks for (TensorFlow or JAX, set before Keras was imported). Between the
timed windows and the curve, and outside both, it may profile one more window under the
TensorBoard profiler (steps wrapped in step markers, read with XProf) and time the same steps fed
one cached batch (:mod:`autotune.trial.ablation`). Call it in a fresh process (see
:mod:`autotune.trial.isolation`): the dtype policy and XLA's caches are process state.
"""

from __future__ import annotations

import dataclasses
import math
import resource
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import keras
import tensorflow as tf

from autotune import hardware
from autotune.analysis.loss_scale import loss_scale_collapse
from autotune.analysis.profile import ProfileError, ProfileSummary, analyse
from autotune.analysis.recompilation import Recompilation, detect
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import (
    ConfigError,
    ExperimentError,
    TrialFailure,
    failure_kind,
)
from autotune.experiment import Experiment
from autotune.fidelity import checkpoint_steps
from autotune.lr_rules import has_warmup
from autotune.measure import (
    Estimate,
    InputAblation,
    slower_than_baseline,
    steps_per_window,
    summarize,
    whole_calls,
)
from autotune.store.result import CurvePoint, RunResult
from autotune.trial import backends
from autotune.trial.ablation import input_ablation
from autotune.trial.custom_step import install_train_step, step_source
from autotune.trial.lr_schedule import optimizer_learning_rate
from autotune.trial.model import (
    compile_model,
    effective_settings,
    model_with_float32_head,
    one_step_per_call,
)
from autotune.trial.pipeline import (
    dynamic_dimensions,
    training_pipeline,
    validation_pipeline,
)
from autotune.trial.trainer import Stopwatch, Trainer, timed_window
from autotune.trial.warm_up import WarmUp, warm_up

LEAD_IN_WINDOWS = 1  #: untimed windows before a paired window that follows the other model's


@contextmanager
def _timed(phases: dict[str, float], phase: str) -> Iterator[None]:
    """Records the seconds the block takes as ``phases[phase]``, once the block finishes."""
    clock = Stopwatch()
    yield
    phases[phase] = clock.seconds()


@dataclass(frozen=True)
class _Setup:
    """A compiled model ready to train, its data, its state at the start and what took effect."""

    model: keras.Model
    train_data: tf.data.Dataset
    validation_data: tf.data.Dataset
    train_examples: int | None
    state: list[Any]
    initial: list[Any]
    effective: dict[str, Any]


@dataclass
class _Windows:
    """The timed windows: each one's samples/s, steps per window, each step's seconds, the
    throughput estimate (samples/s) and why timing stopped early, if it did."""

    samples_per_second: list[float] = field(default_factory=list)
    steps: int = 0
    step_seconds: list[float] = field(default_factory=list)
    throughput: Estimate | None = None
    stopped_early: str | None = None


@dataclass
class _Speed:
    """What the throughput phases measure; the defaults stand for the phases that do not run."""

    warmup: WarmUp = field(default_factory=WarmUp)
    windows: _Windows = field(default_factory=_Windows)
    recompilation: Recompilation | None = None
    profile: ProfileSummary | None = None
    profile_error: str | None = None
    ablation: InputAblation | None = None


@dataclass(frozen=True)
class _Curve:
    """The validation curve's points and the metrics of its last evaluation."""

    points: list[CurvePoint] = field(default_factory=list)
    final_metrics: dict[str, float] = field(default_factory=dict)


def _snapshot(variables: list[Any]) -> list[Any]:
    return [v.numpy() for v in variables]


def _restore(variables: list[Any], values: list[Any]) -> None:
    for variable, value in zip(variables, values, strict=True):
        variable.assign(value)


def _set_up(experiment: Experiment, config: TrialConfig, settings: RunSettings) -> _Setup:
    """Sets the dtype policy (before the model is built) and the seed, builds the data and the
    compiled model, and snapshots the model's and optimizer's initial state."""
    keras.config.set_dtype_policy(config.precision)
    keras.utils.set_random_seed(settings.seed)
    train_data, pipeline_settings = training_pipeline(experiment, config, settings.seed)
    validation_data = validation_pipeline(experiment)
    model, head = model_with_float32_head(experiment, train_data, config.float32_layers)
    samples = 0  # the curve's budget, which only a warm-up needs (its share of the steps)
    if has_warmup(config.lr_rule):
        samples = _curve_samples(experiment, settings, pipeline_settings.train_examples)
    learning = experiment.learning_rate_of(config.lr_rule, config.batch_size, samples)
    rate = optimizer_learning_rate(learning)
    loss_scaling = compile_model(experiment, config, model, rate)
    if experiment.train_step is not None:
        install_train_step(model, experiment.train_step, experiment)
    state = list(model.variables) + list(model.optimizer.variables)
    initial = _snapshot(state)
    effective = effective_settings(config, model, learning, loss_scaling, pipeline_settings, head)
    effective["train_step"] = step_source(model, experiment)
    return _Setup(
        model,
        train_data,
        validation_data,
        pipeline_settings.train_examples,
        state,
        initial,
        effective,
    )


def run_trial(
    experiment: Experiment,
    config: TrialConfig,
    settings: RunSettings,
    on_untimed: Callable[[], None] | None = None,
) -> RunResult:
    """Measures one configuration of ``experiment`` in this process.

    Phases, in order, each one's wall time (seconds) in ``phase_seconds``: setup; with
    ``measure_throughput``, warm-up and timed windows; then, unless the windows stopped early,
    the profiled window, the input ablation and the validation curve. ``on_untimed`` is called
    once nothing more is timed (before the curve, which trains on a fixed budget whatever else
    runs on the machine, or before the result is written when no curve follows): the parent
    may then start the next trial's process (:mod:`autotune.trial.isolation`).

    Raises:
        ExperimentError: the experiment's model or data are unusable (a configuration error).
        TrialFailure: the loss became NaN (kind "nan"), or XLA could not compile (kind
            "xla_compile"). Other exceptions propagate; the trial process classifies them.
    """
    trial = Stopwatch()
    phases: dict[str, float] = {}
    with _timed(phases, "setup"):
        setup = _set_up(experiment, config, settings)
    speed = _Speed()
    if settings.measure_throughput:
        model = setup.model
        trainer = Trainer(model, setup.train_data, xla_compiles=bool(model.jit_compile))
        with _timed(phases, "warmup"):
            speed.warmup = warmup = _warm_up(trainer, config, settings)
        with _timed(phases, "windows"):
            if warmup.stopped:  # stopped in warm-up: no window is timed
                warmup_rates = summarize(warmup.samples_per_second)
                windows = _Windows(throughput=warmup_rates, stopped_early=warmup.stopped)
            else:
                windows = _time_windows(trainer, config, settings, warmup)
            speed.windows = windows
        speed.recompilation = _recompilation(setup, speed)
        if settings.profile_dir is not None and windows.stopped_early is None:
            with _timed(phases, "profile"):
                speed.profile, speed.profile_error = _profile_window(
                    trainer, config, Path(settings.profile_dir), settings, windows.steps
                )
        trainer.sync()  # a JAX trainer's state back into the model, for the next trainer
        throughput = windows.throughput
        if settings.input_ablation and windows.stopped_early is None and throughput is not None:
            with _timed(phases, "ablation"):
                speed.ablation = input_ablation(
                    setup.model, setup.train_data, trainer, config, settings, windows.steps,
                    throughput.median,
                )  # fmt: skip
    if on_untimed is not None:
        on_untimed()  # nothing more is timed: the curve trains on a fixed budget
    curve = _Curve()
    if settings.curve and speed.windows.stopped_early is None:
        with _timed(phases, "curve"):
            curve = _train_curve(experiment, config, settings, setup)
    phases["total"] = trial.seconds()
    return _result(config, setup, speed, curve, phases)


def run_side_by_side(
    experiment: Experiment,
    configs: Sequence[TrialConfig],
    settings: RunSettings,
    pairs: int,
) -> tuple[RunResult, ...]:
    """Times ``configs`` (two or more) side by side in this process, throughput only; their
    results in the same order.

    Each is set up (its dtype policy set before its model is built), compiled and warmed up
    once, in order; then ``pairs`` rounds of timed windows, one window each, in order and in
    reverse by turns (A B C, C B A, ...; ABBA for two), so a machine that speeds up or slows
    down moves all alike, no one holds a place, and window i of the results'
    ``window_samples_per_second`` were timed next to each other (samples/s); a window after
    another model's has an untimed lead-in (:data:`LEAD_IN_WINDOWS`), so it times neither the
    other's pipeline refilling nor its own prefetched batches. No curve, profile, ablation or
    early stop. All must share what a process fixes: ConfigError naming the settings that
    differ otherwise.
    """
    if len(configs) < 2:
        raise ConfigError(f"side by side needs two configurations at least. Received: {configs}")
    for other in configs[1:]:
        differences = configs[0].process_differences(other)
        if differences:
            raise ConfigError(
                f"{configs[0].describe()} and {other.describe()} cannot be timed in one "
                f"process: it fixes {'; '.join(differences)}"
            )
    if pairs < 2:
        raise ConfigError(f"paired windows need at least 2 pairs. Received: {pairs}")
    settings = settings.replace(stop_below_samples_per_second=None, curve=False)
    trial = Stopwatch()
    phases: list[dict[str, float]] = [{} for _ in configs]
    setups, trainers, speeds = [], [], []
    for config, phase in zip(configs, phases, strict=True):
        with _timed(phase, "setup"):
            setup = _set_up(experiment, config, settings)
        trainer = Trainer(setup.model, setup.train_data, xla_compiles=bool(setup.model.jit_compile))
        with _timed(phase, "warmup"):
            warmup = _warm_up(trainer, config, settings)
        steps = _window_calls(config, settings, warmup)
        setups.append(setup)
        trainers.append(trainer)
        speeds.append(_Speed(warmup=warmup, windows=_Windows(steps=steps)))
    clock, lead_in, previous = Stopwatch(), 0.0, -1
    order = list(range(len(configs)))
    for index in range(pairs):
        for k in order if index % 2 == 0 else order[::-1]:
            windows = speeds[k].windows
            if k != previous:  # the other's pipeline refills, this one's buffer drains: untimed
                lead_clock = Stopwatch()
                trainers[k].run(windows.steps * LEAD_IN_WINDOWS, "paired lead-in")
                lead_in, previous = lead_in + lead_clock.seconds(), k
            windows.samples_per_second.append(
                timed_window(
                    trainers[k],
                    windows.steps,
                    configs[k].samples_per_call,
                    "paired window",
                    windows.step_seconds,
                )
            )
            trainers[k].sync()  # a JAX trainer's state back into its model, for the others
    results = []
    for k, config in enumerate(configs):
        speeds[k].windows.throughput = summarize(speeds[k].windows.samples_per_second)
        speeds[k].recompilation = _recompilation(setups[k], speeds[k])
        phases[k]["paired windows"] = clock.seconds() - lead_in
        phases[k]["paired lead-in"] = lead_in
        phases[k]["total"] = trial.seconds()
        results.append(_result(config, setups[k], speeds[k], _Curve(), phases[k]))
    return tuple(results)


def _warm_up(trainer: Trainer, config: TrialConfig, settings: RunSettings) -> WarmUp:
    """The trial's warm-up (:func:`autotune.trial.warm_up.warm_up`), one call of the training
    function at a time: one training step, or ``steps_per_execution`` of them."""

    def run_call() -> float:
        clock = Stopwatch()
        trainer.run(1, "warm-up")
        return clock.seconds()

    return warm_up(run_call, settings, config.samples_per_call, config.steps_per_execution)


def _window_calls(config: TrialConfig, settings: RunSettings, warmup: WarmUp) -> int:
    """Calls per timed window: about ``window_seconds`` at the steady call time, at least
    ``min_window_steps`` training steps."""
    fewest_calls = whole_calls(settings.min_window_steps, config.steps_per_execution)
    return steps_per_window(warmup.steady_step_seconds, settings.window_seconds, fewest_calls)


def _time_windows(
    trainer: Trainer, config: TrialConfig, settings: RunSettings, warmup: WarmUp
) -> _Windows:
    """Times up to ``settings.windows`` windows of whole calls (about ``window_seconds`` each at
    the steady call time, at least ``min_window_steps`` training steps), each in samples/s;
    stops early when :func:`slower_than_baseline` says so."""
    windows = _Windows(steps=_window_calls(config, settings, warmup))
    for _ in range(settings.windows):
        windows.samples_per_second.append(
            timed_window(
                trainer,
                windows.steps,
                config.samples_per_call,
                "timed window",
                windows.step_seconds,
            )
        )
        windows.throughput = summarize(windows.samples_per_second)
        windows.stopped_early = slower_than_baseline(
            windows.throughput, settings.stop_below_samples_per_second
        )
        if windows.stopped_early is not None:
            break
    return windows


def _recompilation(setup: _Setup, speed: _Speed) -> Recompilation:
    """Whether XLA recompiled while the windows were timed, from their step times (seconds)."""
    return detect(
        speed.windows.step_seconds,
        speed.warmup.compile_seconds,
        bool(setup.model.jit_compile),
        dynamic_dimensions(setup.train_data),
    )


def _profile_window(
    trainer: Trainer, config: TrialConfig, log_dir: Path, settings: RunSettings, window_steps: int
) -> tuple[ProfileSummary | None, str | None]:
    """Profiles up to ``profile_steps`` (at most one timed window's) training steps, each in a
    step marker, into ``log_dir`` and reads the profile with XProf. Returns the summary, or None
    and why there is none: a profile that cannot be captured or read costs the trial its
    breakdown, never its measurements."""
    steps = min(window_steps, settings.profile_steps)
    clock = Stopwatch()
    not_started = backends.start_profiler(str(log_dir))
    if not_started is not None:
        return None, not_started
    try:
        samples_per_second = timed_window(
            trainer, steps, config.samples_per_call, "profiled window", step_markers=True
        )
    finally:
        backends.stop_profiler()
    try:
        summary = analyse(log_dir)
    except ProfileError as error:
        return None, str(error)
    return summary.with_capture(clock.seconds(), samples_per_second), None


def _result(
    config: TrialConfig, setup: _Setup, speed: _Speed, curve: _Curve, phases: dict[str, float]
) -> RunResult:
    """The trial's result, with this process's peak memory (bytes), hardware and versions."""
    return RunResult(
        config=config,
        effective=setup.effective,
        throughput=speed.windows.throughput,
        window_samples_per_second=speed.windows.samples_per_second,
        steps_per_window=speed.windows.steps,
        warmup_steps=speed.warmup.steps,
        compile_seconds=speed.warmup.compile_seconds,
        steady_step_seconds=speed.warmup.steady_step_seconds,
        curve=curve.points,
        final_metrics=curve.final_metrics,
        stopped_early=speed.windows.stopped_early,
        input_ablation=speed.ablation,
        profile=speed.profile,
        profile_error=speed.profile_error,
        recompilation=speed.recompilation,
        peak_host_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        peak_device_bytes=backends.peak_device_bytes(),
        phase_seconds=phases,
        hardware={**hardware.hardware(), **backends.library_facts()},
        versions=hardware.versions(),
    )


def _curve_samples(
    experiment: Experiment, settings: RunSettings, train_examples: int | None
) -> int:
    """The curve's budget (training examples): the run settings', else the experiment's, else
    one pass over the training data; ExperimentError when none is known."""
    samples = settings.curve_samples or experiment.curve_samples or train_examples
    if samples is None:
        raise ExperimentError(
            f"Experiment {experiment.name!r}: the training data's size is unknown, so set "
            "curve_samples (training examples in the fidelity curve run)"
        )
    return samples


def _train_curve(
    experiment: Experiment, config: TrialConfig, settings: RunSettings, setup: _Setup
) -> _Curve:
    """Trains from the initial weights on a fixed sample budget; validation loss at checkpoints."""
    samples = _curve_samples(experiment, settings, setup.train_examples)
    model = setup.model
    _restore(setup.state, setup.initial)
    model.reset_metrics()
    one_step_per_call(model)  # checkpoints at the same samples whatever steps_per_execution
    keras.utils.set_random_seed(settings.seed)
    train_data, _ = training_pipeline(experiment, config, settings.seed)
    trainer = Trainer(
        model, train_data, xla_compiles=bool(model.jit_compile) and not settings.measure_throughput
    )
    curve: list[CurvePoint] = []
    metrics: dict[str, float] = {}
    scaler = model.optimizer
    if not isinstance(scaler, keras.optimizers.LossScaleOptimizer):
        scaler = None  # no loss scaling: nothing to record
    applied_at_start = int(scaler.iterations) if scaler is not None else 0
    for step in checkpoint_steps(samples, config.batch_size, settings.checkpoints):
        trainer.run(step - trainer.steps, "curve")
        trainer.sync()  # evaluation reads the model's variables
        metrics = {
            name: float(value)
            for name, value in model.evaluate(
                setup.validation_data, verbose=0, return_dict=True
            ).items()
        }
        if not math.isfinite(metrics["loss"]):
            raise TrialFailure(
                "nan", f"validation loss became {metrics['loss']} after {step} curve steps"
            )
        point = CurvePoint(samples=step * config.batch_size, val_loss=metrics["loss"])
        if scaler is not None:  # the optimizer applies only the steps with finite gradients
            skipped = trainer.steps - (int(scaler.iterations) - applied_at_start)
            scale = float(keras.ops.convert_to_numpy(scaler.dynamic_scale))
            point = dataclasses.replace(point, loss_scale=scale, skipped_steps=skipped)
        curve.append(point)
    scales = [p.loss_scale for p in curve if p.loss_scale is not None]
    skipped = curve[-1].skipped_steps if curve and curve[-1].skipped_steps else 0
    collapse = loss_scale_collapse(scales, skipped, trainer.steps)
    if collapse is not None:
        raise TrialFailure("loss_scale", collapse)
    return _Curve(curve, metrics)


def classify_exception(error: BaseException, config: TrialConfig) -> TrialFailure:
    """Turns an exception raised by a trial into a :class:`TrialFailure` of the right kind (see
    :func:`autotune.exceptions.failure_kind`: out of memory first, so XLA's ``RESOURCE_EXHAUSTED``
    is ``oom`` even when it comes as a compilation error)."""
    if isinstance(error, TrialFailure):
        return error
    message = f"{type(error).__name__}: {error}".strip()
    return TrialFailure(failure_kind(error, jit_compile=config.jit_compile), message)
