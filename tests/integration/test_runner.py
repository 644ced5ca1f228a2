"""In-process tests of autotune.trial.runner.run_trial and
autotune.trial.pipeline.training_pipeline on the tiny fixture experiments. The dtype policy is
process-global, so every test starts and ends with the float32 policy (see ``float32_policy``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import pytest

from autotune import (
    Experiment,
    ExperimentError,
    RunResult,
    RunSettings,
    TrialConfig,
    TrialFailure,
)
from autotune.bundled import load_experiment
from autotune.trial.model import ensure_float32_head
from autotune.trial.pipeline import training_pipeline
from autotune.trial.runner import run_trial

pytestmark = [
    pytest.mark.slow,  # imports TensorFlow and trains
    pytest.mark.usefixtures("float32_policy"),
]


def _run(reference: str, config: TrialConfig, settings: RunSettings) -> RunResult:
    try:
        return run_trial(load_experiment(reference), config, settings)
    finally:
        keras.config.set_dtype_policy("float32")


@pytest.fixture(scope="module")
def float32_result(tiny_ref: Callable[..., str], settings: RunSettings) -> RunResult:
    return _run(tiny_ref(), TrialConfig(batch_size=32), settings)


def _curve(result: RunResult) -> list[tuple[int, float]]:
    return [(point.samples, point.val_loss) for point in result.curve]


# --- run_trial --------------------------------------------------------------------------------


def test_float32_throughput(float32_result: RunResult, settings: RunSettings) -> None:
    throughput = float32_result.throughput
    assert throughput is not None
    assert throughput.median > 0
    assert throughput.low <= throughput.median <= throughput.high
    assert throughput.n == settings.windows
    assert len(float32_result.window_samples_per_second) == settings.windows
    assert all(w > 0 for w in float32_result.window_samples_per_second)
    assert float32_result.warmup_steps >= settings.warmup_min_steps
    assert float32_result.steps_per_window >= settings.min_window_steps
    assert float32_result.steady_step_seconds > 0
    assert float32_result.stopped_early is None


def test_float32_curve(float32_result: RunResult, settings: RunSettings) -> None:
    samples = [point.samples for point in float32_result.curve]
    assert len(samples) == settings.checkpoints
    assert samples == sorted(set(samples))  # strictly increasing
    assert samples[-1] == pytest.approx(settings.curve_samples, abs=32)
    assert all(point.samples % 32 == 0 for point in float32_result.curve)
    assert all(math.isfinite(point.val_loss) for point in float32_result.curve)
    assert float32_result.curve[-1].val_loss < float32_result.curve[0].val_loss  # it learns
    assert float32_result.final_metrics["loss"] == float32_result.curve[-1].val_loss
    assert "accuracy" in float32_result.final_metrics


def test_float32_effective_settings(float32_result: RunResult) -> None:
    effective = float32_result.effective
    assert effective["dtype_policy"] == "float32"
    assert effective["compute_dtype"] == "float32"
    assert effective["jit_compile_requested"] is False
    assert effective["jit_compile"] is False
    assert effective["loss_scaling"] is False
    assert effective["output_dtype_found"] == "float32"
    assert effective["head_fixed"] is False
    assert effective["head_fix"] is None
    assert effective["learning_rate"] == pytest.approx(1e-2)
    pipeline = effective["pipeline"]
    assert pipeline["drop_remainder"] is True
    assert pipeline["batch_size"] == 32
    assert pipeline["shuffle_buffer"] == 512  # 1024 asked, capped at the dataset's size
    assert pipeline["num_parallel_calls"] == "autotune"
    assert pipeline["train_examples"] == 512
    assert set(float32_result.phase_seconds) >= {"setup", "warmup", "windows", "curve", "total"}
    assert float32_result.peak_host_bytes > 0
    assert float32_result.peak_device_bytes is None  # no GPU here


def test_float32_result_round_trips_json(float32_result: RunResult) -> None:
    assert RunResult.from_json(float32_result.to_json()) == float32_result


@pytest.mark.parametrize(
    ("precision", "compute_dtype", "loss_scaling"),
    [("mixed_bfloat16", "bfloat16", False), ("mixed_float16", "float16", True)],
)
def test_mixed_precision_fixes_the_head(
    tiny_ref: Callable[..., str],
    settings: RunSettings,
    precision: str,
    compute_dtype: str,
    loss_scaling: bool,
) -> None:
    result = _run(tiny_ref(), TrialConfig(batch_size=32, precision=precision), settings)
    effective = result.effective
    assert effective["dtype_policy"] == precision
    assert effective["compute_dtype"] == compute_dtype
    assert effective["variable_dtype"] == "float32"
    assert effective["output_dtype_found"] == compute_dtype
    assert effective["head_fixed"] is True
    assert effective["head_fix"] == "last_layer"
    assert effective["loss_scaling"] is loss_scaling
    assert result.throughput is not None and result.throughput.median > 0
    assert len(result.curve) == settings.checkpoints
    assert all(math.isfinite(point.val_loss) for point in result.curve)
    # under loss scaling each checkpoint records the scale and the steps skipped so far
    scales = [point.loss_scale for point in result.curve]
    skipped = [point.skipped_steps for point in result.curve]
    if loss_scaling:
        assert all(scale is not None and scale >= 1.0 for scale in scales), scales
        assert all(s is not None and s >= 0 for s in skipped) and skipped == sorted(skipped)
        assert RunResult.from_json(result.to_json()).curve == result.curve
    else:
        assert scales == [None] * len(scales) and skipped == [None] * len(skipped)


def test_jit_compile_is_recorded(tiny_ref: Callable[..., str], settings: RunSettings) -> None:
    result = _run(tiny_ref(), TrialConfig(batch_size=32, jit_compile=True), settings)
    assert result.effective["jit_compile_requested"] is True
    assert result.effective["jit_compile"] is True
    assert result.throughput is not None and result.throughput.median > 0
    assert len(result.curve) == settings.checkpoints


def test_subclassed_model_gets_the_cast_head_fix(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    config = TrialConfig(batch_size=32, precision="mixed_bfloat16")
    result = _run(tiny_ref("tiny_subclassed"), config, settings)
    assert result.effective["output_dtype_found"] == "bfloat16"
    assert result.effective["head_fixed"] is True
    assert result.effective["head_fix"] == "cast"
    assert result.effective["pipeline"]["num_parallel_calls"] is None  # no preprocess
    assert len(result.curve) == settings.checkpoints
    assert all(math.isfinite(point.val_loss) for point in result.curve)


def test_cast_head_fix_leaves_the_last_tracked_layer_in_the_mixed_policy(
    tiny_ref: Callable[..., str],
) -> None:
    keras.config.set_dtype_policy("mixed_bfloat16")
    experiment = load_experiment(tiny_ref("tiny_subclassed"))
    model = experiment.model()
    x = np.zeros((4, 16), "float32")
    model(x)
    wrapped, info = ensure_float32_head(model, x)
    assert info["head_fix"] == "cast"
    assert keras.backend.standardize_dtype(wrapped(x).dtype) == "float32"
    # Setting the last tracked layer (here the hidden one) to float32 did not fix the outputs,
    # so it must be left in the trial's policy, not silently run in float32.
    assert model.body.dtype_policy.name == "mixed_bfloat16"
    assert model.head.dtype_policy.name == "mixed_bfloat16"


def test_same_seed_and_config_give_an_identical_curve(
    tiny_ref: Callable[..., str], settings: RunSettings, float32_result: RunResult
) -> None:
    again = _run(tiny_ref(), TrialConfig(batch_size=32), settings)
    assert _curve(again) == _curve(float32_result)
    other_seed = _run(
        tiny_ref(), TrialConfig(batch_size=32), settings.replace(seed=1, measure_throughput=False)
    )
    assert _curve(other_seed) != _curve(float32_result)


def test_pipeline_settings_do_not_change_the_curve(
    tiny_ref: Callable[..., str], settings: RunSettings, float32_result: RunResult
) -> None:
    """The study trains one curve per learning configuration and scores pipeline-only twins
    with it (autotune.study.prediction.learning_twin): prefetch and map parallelism must not
    change what the model learns."""
    for prefetch, parallel in ((0, 1), (2, 4), (1, "autotune")):
        config = TrialConfig(batch_size=32, prefetch=prefetch, num_parallel_calls=parallel)
        twin = _run(tiny_ref(), config, settings.replace(measure_throughput=False))
        samples, losses = zip(*_curve(twin), strict=True)
        base_samples, base_losses = zip(*_curve(float32_result), strict=True)
        assert samples == base_samples
        assert losses == pytest.approx(base_losses, rel=1e-6), (prefetch, parallel)


def test_steps_per_execution_runs_several_steps_per_call_and_learns_the_same_curve(
    tiny_ref: Callable[..., str], settings: RunSettings, float32_result: RunResult
) -> None:
    config = TrialConfig(batch_size=32, steps_per_execution=8)

    result = _run(tiny_ref(), config, settings)

    assert result.effective["steps_per_execution"] == 8
    assert result.throughput is not None and result.throughput.median > 0
    # A window holds whole calls of 8 steps (at least min_window_steps steps in all); its
    # samples/s counts every step's batch.
    assert result.steps_per_window * 8 >= settings.min_window_steps
    # The curve trains one step per call: the same checkpoints and losses as one step per call.
    samples, losses = zip(*_curve(result), strict=True)
    base_samples, base_losses = zip(*_curve(float32_result), strict=True)
    assert samples == base_samples
    assert losses == pytest.approx(base_losses, rel=1e-5)


def test_curve_without_throughput(
    tiny_ref: Callable[..., str], settings: RunSettings, float32_result: RunResult
) -> None:
    result = _run(
        tiny_ref(), TrialConfig(batch_size=32), settings.replace(measure_throughput=False)
    )
    assert result.throughput is None
    assert result.window_samples_per_second == []
    assert result.warmup_steps == 0
    assert "warmup" not in result.phase_seconds
    # The curve restarts from the initial weights, so warm-up and timed windows do not change it.
    assert _curve(result) == _curve(float32_result)


@pytest.mark.parametrize(("steps_per_execution", "calls"), [(1, 4), (64, 2)])
def test_a_hopeless_configuration_stops_three_steps_into_its_warm_up(
    tiny_ref: Callable[..., str], settings: RunSettings, steps_per_execution: int, calls: int
) -> None:
    """Against a baseline 1e12 samples/s fast, the trial is hopeless from its first steps: it
    stops in warm-up once three training steps ran after the compiling call (three calls of one
    step, or one call of 64: issue 25), with the throughput those calls measured, and costs
    seconds beyond its compile time (issue 11: 100x slower costs <= 10 s + compile)."""
    config = TrialConfig(batch_size=32, steps_per_execution=steps_per_execution)
    result = _run(tiny_ref(), config, settings.replace(stop_below_samples_per_second=1e12))
    assert result.stopped_early is not None
    assert result.stopped_early.startswith("hopeless in warm-up")
    assert result.warmup_steps == calls
    assert result.window_samples_per_second == []
    assert result.throughput is not None and result.throughput.n == calls - 1
    assert result.curve == [] and result.final_metrics == {}
    assert "curve" not in result.phase_seconds and result.phase_seconds["windows"] < 1.0
    assert result.phase_seconds["warmup"] < 10.0 + result.compile_seconds


def test_two_step_warmup_is_the_shortest_that_measures(tiny_ref: Callable[..., str]) -> None:
    settings = RunSettings(
        warmup_min_steps=1, warmup_max_steps=2, windows=1, checkpoints=1, curve_samples=64
    )
    result = _run(tiny_ref(), TrialConfig(batch_size=32), settings)
    assert result.throughput is not None
    assert result.warmup_steps == 2


def test_failures_in_process(faulty_ref: Callable[[str], str], settings: RunSettings) -> None:
    with pytest.raises(TrialFailure) as failure:
        _run(faulty_ref("nan"), TrialConfig(batch_size=32), settings)
    assert failure.value.kind == "nan"
    with pytest.raises(TrialFailure) as failure:
        _run(faulty_ref("xla"), TrialConfig(batch_size=32, jit_compile=True), settings)
    assert failure.value.kind == "xla_compile"
    with pytest.raises(ExperimentError, match="returned None"):
        _run(faulty_ref("returns_none"), TrialConfig(batch_size=32), settings)
    with pytest.raises(ExperimentError, match=r"output shape \[\(32, 3\)\].*\(32, 10\)"):
        _run(faulty_ref("shape_mismatch"), TrialConfig(batch_size=32), settings)


# --- training_pipeline ------------------------------------------------------------------------


def _batches(experiment: Experiment, config: TrialConfig, count: int, seed: int = 0) -> list[Any]:
    dataset, _ = training_pipeline(experiment, config, seed)
    return [(x.numpy(), y.numpy()) for x, y in dataset.take(count)]


def test_prefetch_zero_also_turns_off_tf_data_prefetch_injection(
    tiny_ref: Callable[..., str],
) -> None:
    tiny = load_experiment(tiny_ref())
    none, _ = training_pipeline(tiny, TrialConfig(batch_size=8, prefetch=0), seed=0)
    some, _ = training_pipeline(tiny, TrialConfig(batch_size=8, prefetch=2), seed=0)

    assert none.options().experimental_optimization.inject_prefetch is False
    assert some.options().experimental_optimization.inject_prefetch is None  # tf.data's default


def test_pipeline_reports_its_settings(tiny_ref: Callable[..., str]) -> None:
    tiny = load_experiment(tiny_ref())
    config = TrialConfig(batch_size=48, shuffle_buffer=10_000, prefetch=2, num_parallel_calls=3)
    _, reported = training_pipeline(tiny, config, seed=0)
    assert reported.to_dict() == {
        "batch_size": 48,
        "drop_remainder": True,
        "shuffle_buffer": 512,  # capped at the dataset's size
        "num_parallel_calls": 3,
        "prefetch": 2,
        "train_examples": 512,
        "padded": False,  # fixed-shape examples: plain batch, not padded_batch
        "private_threadpool_size": 0,  # tf.data's shared pool
        "unbatched_from": None,  # given as examples
    }
    _, reported = training_pipeline(tiny, TrialConfig(batch_size=48, shuffle_buffer=100), seed=0)
    assert reported.shuffle_buffer == 100
    assert reported.num_parallel_calls == "autotune"

    plain = load_experiment(tiny_ref("tiny_subclassed"))
    _, reported = training_pipeline(plain, TrialConfig(batch_size=48, num_parallel_calls=3), 0)
    assert reported.num_parallel_calls is None  # nothing to map without a preprocess function


def test_every_batch_is_full(tiny_ref: Callable[..., str]) -> None:
    tiny = load_experiment(tiny_ref())
    batches = _batches(tiny, TrialConfig(batch_size=48), count=40)  # 1920 examples: 3.75 epochs
    assert len(batches) == 40
    for x, y in batches:
        assert x.shape == (48, 16)
        assert y.shape == (48,)


def test_seeded_preprocess_gives_the_same_data_at_any_parallelism(
    tiny_ref: Callable[..., str],
) -> None:
    tiny = load_experiment(tiny_ref())
    serial = _batches(tiny, TrialConfig(batch_size=32, num_parallel_calls=1), count=20)
    parallel = _batches(tiny, TrialConfig(batch_size=32, num_parallel_calls=4), count=20)
    for (x1, y1), (x4, y4) in zip(serial, parallel, strict=True):
        np.testing.assert_array_equal(x1, x4)
        np.testing.assert_array_equal(y1, y4)

    # The preprocess function ran (the data is jittered) and its seed follows the trial's seed.
    unshuffled = _batches(tiny, TrialConfig(batch_size=32, shuffle_buffer=1), count=1)[0][0]
    raw = tiny.train_data()[0][:32]
    assert not np.array_equal(unshuffled, raw)
    np.testing.assert_allclose(unshuffled, raw, atol=0.5)
    reseeded = _batches(tiny, TrialConfig(batch_size=32, shuffle_buffer=1), count=1, seed=1)[0][0]
    assert not np.array_equal(unshuffled, reseeded)


def test_thread_counts_take_effect_in_the_trial_process(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    from autotune.trial.isolation import run_isolated

    config = TrialConfig(
        batch_size=32, intra_op_threads=1, inter_op_threads=1, private_threadpool_size=2
    )

    result = run_isolated(tiny_ref(), config, settings.replace(curve=False))

    assert result.effective["intra_op_threads"] == 1
    assert result.effective["inter_op_threads"] == 1
    assert result.effective["pipeline"]["private_threadpool_size"] == 2
    assert result.throughput is not None and result.throughput.median > 0


def test_default_thread_counts_leave_tensorflow_its_own(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    result = _run(tiny_ref(), TrialConfig(batch_size=32), settings.replace(curve=False))

    assert result.effective["intra_op_threads"] == 0
    assert result.effective["pipeline"]["private_threadpool_size"] == 0
