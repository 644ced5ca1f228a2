"""A fake trial model shared by the unit tests: throughput and validation curves as simple,
known functions of a configuration, so study, records and report logic can be checked exactly
without TensorFlow."""

from __future__ import annotations

import math

from autotune.config import RunSettings, TrialConfig
from autotune.measure import confidently_below, summarize
from autotune.result import CurvePoint, RunResult
from autotune.space import SearchSpace, choices

BASE_BATCH = 32
BASE_SPEED = 1000.0
#: Log-loss offset of each baseline seed: pairs (0,1), (0,2), (1,2) differ by 0.01, 0.01, 0.02.
SEED_OFFSETS = {0: 0.0, 1: 0.01, 2: -0.01}
FLOOR = (0.01 + 0.01 + 0.02) / 3
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


def fidelity_of(config: TrialConfig) -> float:
    return abs(drift_of(config)) / FLOOR


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
        threshold = settings.stop_below_samples_per_second
        if threshold is not None and confidently_below(throughput, threshold):
            stopped = (
                f"throughput {throughput.median:.0f} samples/s (95% CI upper "
                f"{throughput.high:.0f}) is confidently below the baseline's "
                f"{threshold:.0f} samples/s after {len(windows)} window(s)"
            )
    curve = []
    if settings.curve and stopped is None:
        offset = drift_of(config) + SEED_OFFSETS[settings.seed]
        curve = [
            CurvePoint(samples=256 * i, val_loss=2.0 * math.exp(-0.1 * i + offset))
            for i in range(1, settings.checkpoints + 1)
        ]
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
    )
