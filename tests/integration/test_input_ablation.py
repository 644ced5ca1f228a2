"""Input-boundness by ablation, on pipelines made input-bound and compute-bound on purpose."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from autotune.config import RunSettings, TrialConfig
from autotune.trial.isolation import run_isolated

pytestmark = pytest.mark.slow


def test_a_slow_input_pipeline_is_highly_input_bound(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    config = TrialConfig(batch_size=32, num_parallel_calls=1, prefetch=0)
    # windows of ~0.5 s at ~64 ms a step: within their target, so every pair is timed
    settings = settings.replace(curve=False, window_seconds=0.5)
    result = run_isolated(tiny_ref("slow_input"), config, settings)

    ablation = result.input_ablation
    assert ablation is not None
    assert ablation.verdict == "highly input-bound"
    assert ablation.input_fraction >= 0.5  # 2 ms per example against a sub-millisecond step
    assert ablation.cached.median > 2 * ablation.pipeline.median
    assert ablation.pipeline.n == ablation.cached.n == settings.ablation_windows
    breakdown = ablation.step_milliseconds(config.batch_size)
    assert breakdown["input"] > breakdown["compute"] > 0
    assert "ablation" in result.phase_seconds


def test_windows_far_longer_than_their_target_are_ablated_in_one_pair(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    """Windows of whole steps: 3 steps of ~64 ms against a 10 ms target are ~20x longer, so
    the ablation times one pair of them, not three (at 64 steps a call of a large batch, a
    window is one call of many seconds)."""
    config = TrialConfig(batch_size=32, num_parallel_calls=1, prefetch=0)
    settings = settings.replace(curve=False, window_seconds=0.01, min_window_steps=3)
    result = run_isolated(tiny_ref("slow_input"), config, settings)

    ablation = result.input_ablation
    assert ablation is not None and result.steps_per_window == 3
    assert ablation.pipeline.n == ablation.cached.n == 1
    assert ablation.verdict == "highly input-bound"


def test_a_compute_bound_model_is_not_highly_input_bound(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    config = TrialConfig(batch_size=64)
    result = run_isolated(tiny_ref("compute_bound"), config, settings.replace(curve=False))

    assert result.input_ablation is not None
    assert result.input_ablation.input_fraction < 0.2


def test_ablation_off_measures_nothing_extra(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    result = run_isolated(
        tiny_ref(), TrialConfig(batch_size=32), settings.replace(curve=False, input_ablation=False)
    )

    assert result.input_ablation is None
    assert "ablation" not in result.phase_seconds
