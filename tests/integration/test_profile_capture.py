"""Profiled trials with real TensorFlow: a TensorBoard profile captured and read with XProf, the
XProf and ablation verdicts on pipelines made input-bound and compute-bound on purpose, the
dynamic-shape trap on a ragged-shape experiment, and no logs when profiling is off."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from autotune.analysis.profile import BREAKDOWN_COMPONENTS, analyse, xspace_files
from autotune.config import RunSettings, TrialConfig
from autotune.trial.isolation import run_isolated

pytestmark = pytest.mark.slow


def test_a_profiled_trial_keeps_a_tensorboard_profile_that_xprof_reads(
    tiny_ref: Callable[..., str], settings: RunSettings, tmp_path: Path
) -> None:
    profile_dir = tmp_path / "trial_0"
    result = run_isolated(
        tiny_ref("compute_bound"),
        TrialConfig(batch_size=32),
        settings.replace(curve=False, profile_dir=str(profile_dir)),
        log_dir=profile_dir,
    )

    profile = result.profile
    assert profile is not None, result.profile_error
    assert result.profile_error is None
    assert profile.log_dir == str(profile_dir)
    files = xspace_files(profile_dir)  # where tensorboard --logdir tmp_path finds run trial_0
    assert files and files[0].parent.parent == profile_dir / "plugins" / "profile"
    assert profile.steps >= 2
    assert set(profile.breakdown_ms) == set(BREAKDOWN_COMPONENTS)
    assert sum(profile.breakdown_ms.values()) == pytest.approx(profile.step_ms, rel=0.1)
    assert profile.breakdown_ms["host_compute"] > profile.breakdown_ms["input"]
    assert profile.device_type == "CPU_ONLY" and profile.sixteen_bit_fraction is None
    assert profile.top_ops and profile.top_ops[0].self_ms > 0
    assert "input-bound" in profile.statement
    # the profile is read again, the same, from the folder alone
    assert analyse(profile_dir).breakdown_ms == profile.breakdown_ms
    # profiling is its own phase, after the timed windows: the throughput is the windows'
    assert "profile" in result.phase_seconds
    assert profile.capture_seconds > 0 and profile.profiled_samples_per_second
    assert len(result.window_samples_per_second) == settings.windows


def test_xprof_and_the_ablation_call_a_slow_pipeline_highly_input_bound(
    tiny_ref: Callable[..., str], settings: RunSettings, tmp_path: Path
) -> None:
    result = run_isolated(
        tiny_ref("slow_input"),
        TrialConfig(batch_size=32, num_parallel_calls=1, prefetch=0),
        settings.replace(curve=False, profile_dir=str(tmp_path)),
    )

    assert result.profile is not None, result.profile_error
    assert result.profile.verdict == "highly input-bound"
    assert result.profile.breakdown_ms["input"] > result.profile.breakdown_ms["host_compute"]
    assert result.input_ablation is not None
    assert result.input_ablation.verdict == "highly input-bound"


def test_xprof_calls_a_compute_bound_model_not_highly_input_bound(
    tiny_ref: Callable[..., str], settings: RunSettings, tmp_path: Path
) -> None:
    result = run_isolated(
        tiny_ref("compute_bound"),
        TrialConfig(batch_size=64),
        settings.replace(curve=False, profile_dir=str(tmp_path)),
    )

    assert result.profile is not None, result.profile_error
    assert result.profile.input_fraction < 0.2


def test_xla_recompiling_on_ragged_batches_is_flagged(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    ragged = settings.replace(curve=False, input_ablation=False, window_seconds=0.2)
    with_xla = run_isolated(
        tiny_ref("ragged"), TrialConfig(batch_size=16, jit_compile=True), ragged
    )
    without = run_isolated(tiny_ref("ragged"), TrialConfig(batch_size=16), ragged)

    assert with_xla.effective["pipeline"]["padded"] is True
    flagged = with_xla.recompilation
    assert flagged is not None and flagged.flagged, flagged
    assert flagged.dynamic_dims == ["x[1]"]
    assert flagged.compile_like_steps >= 2
    assert "pad or bucket" in flagged.message
    assert without.recompilation is not None and not without.recompilation.flagged
    assert without.recompilation.dynamic_dims == ["x[1]"]


def test_fixed_shapes_with_xla_are_not_flagged(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    result = run_isolated(
        tiny_ref(),
        TrialConfig(batch_size=32, jit_compile=True),
        settings.replace(curve=False, input_ablation=False),
    )

    assert result.recompilation is not None
    assert result.recompilation.jit_compile and not result.recompilation.flagged
    assert result.recompilation.dynamic_dims == []
    assert result.effective["pipeline"]["padded"] is False


def test_profiling_off_leaves_no_profile(
    tiny_ref: Callable[..., str], settings: RunSettings, tmp_path: Path
) -> None:
    result = run_isolated(
        tiny_ref(), TrialConfig(batch_size=32), settings.replace(curve=False), log_dir=tmp_path
    )

    assert result.profile is None and result.profile_error is None
    assert "profile" not in result.phase_seconds
    assert [p.name for p in tmp_path.iterdir()] == ["trial.log"]
