"""A fake trial model shared by the unit tests: throughput and validation curves as simple,
known functions of a configuration, so study, records and report logic can be checked exactly
without TensorFlow."""

from __future__ import annotations

import dataclasses
import math

from autotune.analysis.profile import CPU_ONLY, OpTime, ProfileSummary
from autotune.analysis.recompilation import Recompilation
from autotune.config import RunSettings, TrialConfig
from autotune.fidelity import fidelity_distance, noise_floor
from autotune.measure import (
    Estimate,
    InputAblation,
    input_bound_verdict,
    slower_than_baseline,
    summarize,
)
from autotune.space import SearchSpace, choices
from autotune.store.result import CurvePoint, RunResult

BASE_BATCH = 32
BASE_SPEED = 1000.0
#: Log-loss offset of each baseline seed: pairs (0,1), (0,2), (1,2) differ by 0.01, 0.01, 0.02.
SEED_OFFSETS = {0: 0.0, 1: 0.01, 2: -0.01}


def fake_curve(offset: float, checkpoints: int = 6) -> list[CurvePoint]:
    """The fake validation curve: 2 exp(-0.1 i + offset) at 256 i samples, i = 1..checkpoints."""
    return [
        CurvePoint(samples=256 * i, val_loss=2.0 * math.exp(-0.1 * i + offset))
        for i in range(1, checkpoints + 1)
    ]


def _pairs(curve: list[CurvePoint]) -> list[tuple[float, float]]:
    return [(p.samples, p.val_loss) for p in curve]


#: The fake baseline's noise floor (pairs about 0.01, 0.01, 0.02 apart, losses floored).
NOISE = noise_floor([_pairs(fake_curve(SEED_OFFSETS[seed])) for seed in (0, 1, 2)])
FLOOR = NOISE.value
TOLERANCE = 1.5

#: The space the fake studies search.
SPACE = SearchSpace(
    "fake",
    {
        "precision": choices("float32", "mixed_bfloat16", "mixed_float16"),
        "jit_compile": choices(False, True),
        "batch_size": choices(16, 32, 64, 128, 256, 512),
    },
)

#: An experiment file for fake studies: nothing in it is ever built.
EXPERIMENT_SOURCE = """
from autotune import Experiment

fake = Experiment(
    name="fake",
    model=lambda: None,
    train_data=lambda: None,
    validation_data=lambda: None,
    loss="mse",
    optimizer=lambda learning_rate: None,
    base_batch_size=32,
    base_learning_rate=0.01,
)
"""


def speed_of(config: TrialConfig) -> float:
    """samples/s: proportional to batch size, x2 for bfloat16, /100 for float16, x1.5 for XLA."""
    speed = BASE_SPEED * config.batch_size / BASE_BATCH
    if config.precision == "mixed_bfloat16":
        speed *= 2
    if config.precision == "mixed_float16":
        speed *= 0.01
    if config.jit_compile:
        speed *= 1.5
    return speed


def drift_of(config: TrialConfig) -> float:
    """Constant log-loss offset from the baseline: bigger batches drift more; bfloat16 a bit."""
    drift = 0.012 * math.log2(config.batch_size / BASE_BATCH)
    if config.precision == "mixed_bfloat16":
        drift += 0.004
    return drift


def memory_of(config: TrialConfig) -> float:
    """Peak memory (MiB): 100 + 2 MiB per example of a float32 batch (1 MiB under mixed
    precision), +50 MiB for XLA's compiled program. XLA is faster at the same curve, so on
    throughput and fidelity alone it dominates the same configuration without it; with memory
    an objective, both are on the front."""
    per_example = 2.0 if config.precision == "float32" else 1.0
    return 100.0 + config.batch_size * per_example + (50.0 if config.jit_compile else 0.0)


def fidelity_of(config: TrialConfig, *, one_sided: bool = True) -> float:
    """The fidelity a fake trial of ``config`` scores (through :mod:`autotune.fidelity`)."""
    trial, baseline = fake_curve(drift_of(config)), fake_curve(SEED_OFFSETS[0])
    return fidelity_distance(_pairs(trial), _pairs(baseline), NOISE, one_sided=one_sided)


def fake_result(
    config: TrialConfig, settings: RunSettings, window_spread: float = 0.001
) -> RunResult:
    """What a trial of ``config`` measures: windows spread by ``window_spread`` (a fraction)
    around :func:`speed_of`, and a curve offset by :func:`drift_of` plus the seed's offset."""
    throughput = None
    windows: list[float] = []
    stopped = None
    if settings.measure_throughput:
        speed = speed_of(config)
        windows = [
            speed * (1 + window_spread * (k - settings.windows // 2))
            for k in range(settings.windows)
        ]
        throughput = summarize(windows)
        stopped = slower_than_baseline(throughput, settings.stop_below_samples_per_second)
    curve = []
    if settings.curve and stopped is None:
        offset = drift_of(config) + SEED_OFFSETS[settings.seed]
        curve = fake_curve(offset, settings.checkpoints)
    return RunResult(
        config=config,
        effective={
            "dtype_policy": config.precision,
            "learning_rate": 0.01 * config.batch_size / BASE_BATCH,
        },
        throughput=throughput,
        window_samples_per_second=windows,
        steps_per_window=10,
        compile_seconds=2.5 if config.jit_compile else 0.5,
        steady_step_seconds=config.batch_size / speed_of(config),
        curve=curve,
        stopped_early=stopped,
        hardware={"cpu": "fake cpu"},
        versions={"keras": "0.0-fake"},
        peak_host_bytes=int(memory_of(config) * 2**20),
    )


# --------------------------------------------------------------------------------------------
# Profiles, input ablations and recompilation checks of the fake trials
# --------------------------------------------------------------------------------------------

#: On the fake CPU the profiler's step markers see little waiting for input ...
XPROF_INPUT = 0.03
#: ... while the ablation (the step fed one cached batch) counts the cores input work takes.
ABLATION_INPUT = 0.37
#: The profiled window runs this many times slower than the timed windows.
PROFILER_SLOWDOWN = 2.0
#: The operations every fake profile lists, most self time first.
FAKE_OPS = (
    OpTime("model/dense/MatMul", "MatMul", "Host", 12.0, 0.5),
    OpTime("model/conv/Conv2D", "Conv2D", "Host", 6.0, 0.25),
    OpTime("IteratorGetNext", "IteratorGetNext", "Host", 3.0, 0.125),
    OpTime("model/dense/Relu", "Relu", "Host", 1.0, 0.04),
)
XPROF_STATEMENT = "Your program is NOT input-bound because only 3.0% of the step time is input."


def fake_profile(
    config: TrialConfig,
    log_dir: str,
    input_fraction: float = XPROF_INPUT,
    device_type: str = CPU_ONLY,
) -> ProfileSummary:
    """XProf's reading of a window :data:`PROFILER_SLOWDOWN` times slower than
    :func:`speed_of`: ``input_fraction`` of it input, then 90% host compute and 10% other of the
    rest on a CPU (10% host, 80% device, 10% other with an accelerator)."""
    step = PROFILER_SLOWDOWN * 1e3 * config.batch_size / speed_of(config)
    rest = step * (1 - input_fraction)
    cpu = device_type == CPU_ONLY
    breakdown = {
        "input": step * input_fraction,
        "host_compute": rest * (0.9 if cpu else 0.1),
        "device_compute": 0.0 if cpu else rest * 0.8,
        "compile": 0.0,
        "other": rest * 0.1,
    }
    return ProfileSummary(
        log_dir=log_dir,
        steps=10,
        step_ms=step,
        breakdown_ms=breakdown,
        input_fraction=input_fraction,
        verdict=input_bound_verdict(input_fraction),
        statement=XPROF_STATEMENT,
        top_ops=list(FAKE_OPS),
        sixteen_bit_fraction=None if cpu else 0.8,
        device_type=device_type,
        capture_seconds=4.0,
        profiled_samples_per_second=speed_of(config) / PROFILER_SLOWDOWN,
    )


def fake_ablation(throughput: Estimate, input_fraction: float = ABLATION_INPUT) -> InputAblation:
    """The ablation of a trial whose cached-batch steps are ``1 / (1 - input_fraction)`` times
    faster than its real pipeline."""
    factor = 1 / (1 - input_fraction)
    cached = Estimate(
        throughput.median * factor,
        throughput.low * factor,
        throughput.high * factor,
        throughput.confidence,
        throughput.n,
    )
    return InputAblation.of(throughput, cached)


def fake_recompilation(config: TrialConfig) -> Recompilation:
    """XLA recompiling three times with a dynamic dimension when ``jit_compile`` is on."""
    median = 1e3 * config.batch_size / speed_of(config)
    slow = [400.0, 420.0, 410.0] if config.jit_compile else []
    return Recompilation(
        jit_compile=config.jit_compile,
        dynamic_dims=["x[1]"],
        compile_like_steps=len(slow),
        timed_steps=30,
        median_step_ms=median,
        slowest_step_ms=max(slow, default=median),
        compile_ms=2000.0,
        slow_steps_ms=slow,
    )


def profiled_result(
    config: TrialConfig,
    settings: RunSettings,
    device_type: str = CPU_ONLY,
    window_spread: float = 0.001,
) -> RunResult:
    """:func:`fake_result` with an input ablation and a recompilation check when throughput was
    measured, and a profile in ``settings.profile_dir`` when one was asked for."""
    result = fake_result(config, settings, window_spread)
    if result.throughput is None or result.stopped_early:
        return result
    profile = None
    if settings.profile_dir is not None:
        profile = fake_profile(config, settings.profile_dir, device_type=device_type)
    return dataclasses.replace(
        result,
        input_ablation=fake_ablation(result.throughput),
        profile=profile,
        recompilation=fake_recompilation(config),
        phase_seconds={"windows": 3.0, **({"profile": 4.0} if profile else {})},
    )


class RecordingRunner:
    """A study's runner in the fake world (:func:`fake_result`) that records the configuration
    of each trial it runs (``trials``; baseline seeds and anchors, which run without an early
    stop, are not trials). Subclasses change the result in :meth:`result`."""

    def __init__(self) -> None:
        self.trials: list[TrialConfig] = []

    def __call__(self, reference, config, settings, log_dir):  # type: ignore[no-untyped-def]
        if settings.stop_below_samples_per_second is not None:
            self.trials.append(config)
        return self.result(config, settings)

    def result(self, config: TrialConfig, settings: RunSettings) -> RunResult:
        return fake_result(config, settings)
