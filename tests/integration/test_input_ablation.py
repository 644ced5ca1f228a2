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
    result = run_isolated(tiny_ref("slow_input"), config, settings.replace(curve=False))

    ablation = result.input_ablation
    assert ablation is not None
    assert ablation.verdict == "highly input-bound"
    assert ablation.input_fraction >= 0.5  # 2 ms per example against a sub-millisecond step
    assert ablation.cached.median > 2 * ablation.pipeline.median
    assert ablation.pipeline.n == ablation.cached.n == settings.ablation_windows
    breakdown = ablation.step_milliseconds(config.batch_size)
    assert breakdown["input"] > breakdown["compute"] > 0
    assert "ablation" in result.phase_seconds


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
