"""Trials on Keras' JAX backend (``TrialConfig.backend="jax"``), each in a fresh process that
sets ``KERAS_BACKEND`` before Keras is imported: measured, profiled and trained like a
TensorFlow trial from the same tf.data pipeline, and a JAX recipe refused where Keras runs on
TensorFlow. Needs JAX (``pip install -e '.[test,jax]'``): skipped without it, failed in CI."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from autotune import hardware
from autotune.analysis.profile import xspace_files
from autotune.config import RunSettings, TrialConfig
from autotune.recipe import Recipe
from autotune.store.result import RunResult
from autotune.trial.isolation import run_isolated
from tests.support.jax_backend import require_jax

pytestmark = pytest.mark.slow  # trains in fresh processes

JAX = TrialConfig(batch_size=32, backend="jax", jit_compile=True)


@pytest.fixture(autouse=True)
def jax_installed() -> None:
    require_jax()


@pytest.fixture(scope="module")
def jax_result(
    tiny_ref: Callable[..., str], settings: RunSettings, tmp_path_factory: pytest.TempPathFactory
) -> RunResult:
    """A JAX trial with every phase: warm-up, windows, a profiled window, the ablation, the
    curve."""
    require_jax()
    profile_dir = tmp_path_factory.mktemp("jax_profile") / "trial_0"
    return run_isolated(tiny_ref(), JAX, settings.replace(profile_dir=str(profile_dir)))


def _curve(result: RunResult) -> list[tuple[int, float]]:
    return [(point.samples, point.val_loss) for point in result.curve]


def test_a_jax_trial_trains_on_jax_with_jax_jit_and_is_measured(
    jax_result: RunResult, settings: RunSettings
) -> None:
    assert jax_result.effective["backend"] == "jax"
    assert jax_result.hardware["keras_backend"] == "jax"
    assert jax_result.effective["jit_compile"] is True
    assert jax_result.versions["jax"]
    assert jax_result.throughput is not None and jax_result.throughput.median > 0
    assert len(jax_result.window_samples_per_second) == settings.windows
    assert jax_result.compile_seconds >= 0
    assert jax_result.input_ablation is not None
    curve = _curve(jax_result)
    assert len(curve) == settings.checkpoints
    assert all(math.isfinite(loss) for _, loss in curve)
    assert curve[-1][1] < curve[0][1]  # it learns
    assert jax_result.config.describe().startswith("bs=32 float32 jax.jit ")


def test_a_jax_trial_is_profiled_into_tensorboard_s_layout(jax_result: RunResult) -> None:
    profile = jax_result.profile
    assert profile is not None, jax_result.profile_error
    profile_dir = Path(profile.log_dir)
    files = xspace_files(profile_dir)  # jax.profiler writes where tensorboard --logdir finds it
    assert files and files[0].parent.parent == profile_dir / "plugins" / "profile"
    assert profile.steps >= 2  # XProf reads the step markers (jax.profiler.StepTraceAnnotation)
    assert profile.step_ms > 0


def test_steps_per_execution_on_jax_learns_the_same_curve(
    tiny_ref: Callable[..., str], settings: RunSettings, jax_result: RunResult
) -> None:
    config = TrialConfig(batch_size=32, backend="jax", jit_compile=True, steps_per_execution=4)

    result = run_isolated(tiny_ref(), config, settings.replace(input_ablation=False))

    assert result.effective["steps_per_execution"] == 4
    assert result.throughput is not None and result.throughput.median > 0
    samples, losses = zip(*_curve(result), strict=True)
    jax_samples, jax_losses = zip(*_curve(jax_result), strict=True)
    assert samples == jax_samples
    assert losses == pytest.approx(jax_losses, rel=1e-5)


def test_mixed_bfloat16_on_jax_keeps_a_float32_head(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    config = TrialConfig(batch_size=32, backend="jax", jit_compile=True, precision="mixed_bfloat16")

    result = run_isolated(tiny_ref(), config, settings.replace(input_ablation=False))

    assert result.effective["dtype_policy"] == "mixed_bfloat16"
    assert result.effective["compute_dtype"] == "bfloat16"
    assert result.effective["head_fixed"] is True
    assert all(math.isfinite(loss) for _, loss in _curve(result))


def _recipe(tmp_path: Path) -> Path:
    recipe = Recipe(
        config=JAX,
        learning_rate=1e-3,
        throughput=None,
        baseline_throughput=None,
        speedup=None,
        fidelity=None,
        tolerance=1.5,
        experiment="tiny.py",
        study="tiny-keras3",
        storage="sqlite:///autotune.db",
        trial=1,
        hardware=dict(hardware.hardware()),
    )
    return recipe.save(tmp_path / "recipe.json")


def _apply_in(backend: str, path: Path) -> subprocess.CompletedProcess[str]:
    code = f"import autotune, keras\nautotune.apply({str(path)!r})\nprint(keras.backend.backend())"
    env = {**os.environ, "KERAS_BACKEND": backend}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_a_jax_recipe_applies_on_jax_and_is_refused_on_tensorflow(tmp_path: Path) -> None:
    path = _recipe(tmp_path)

    on_jax = _apply_in("jax", path)
    on_tensorflow = _apply_in("tensorflow", path)

    assert on_jax.returncode == 0, on_jax.stderr
    assert on_jax.stdout.split()[-1] == "jax"
    assert on_tensorflow.returncode != 0
    assert "measured on the Keras backend 'jax'" in on_tensorflow.stderr
    assert "Keras runs on 'tensorflow' here" in on_tensorflow.stderr
