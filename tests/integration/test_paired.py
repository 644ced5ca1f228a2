"""Configurations timed side by side in one process (autotune.trial.runner.run_side_by_side,
and through a trial process, autotune.trial.isolation.run_isolated_side_by_side): each keeps
its own dtype policy, XLA setting and batch, all are timed in windows taken in turn, throughput
only, and a group a process cannot hold is refused. The tiny MLP on CPU."""

from __future__ import annotations

from collections.abc import Callable

import keras
import pytest

from autotune import ConfigError, RunSettings, TrialConfig
from autotune.analysis.head_to_head import paired_ratio
from autotune.bundled import load_experiment
from autotune.trial.isolation import run_isolated_pair, run_isolated_side_by_side
from autotune.trial.runner import run_side_by_side
from autotune.trial.trainer import Trainer

pytestmark = [
    pytest.mark.slow,  # imports TensorFlow and trains
    pytest.mark.usefixtures("float32_policy"),
]
BASELINE = TrialConfig(batch_size=32)
CANDIDATE = TrialConfig(batch_size=64, precision="mixed_bfloat16", jit_compile=True)


def test_each_configuration_keeps_its_own_settings_and_is_timed_in_turn(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    try:
        candidate, baseline = run_side_by_side(
            load_experiment(tiny_ref()), (CANDIDATE, BASELINE), settings, pairs=4
        )
    finally:
        keras.config.set_dtype_policy("float32")

    # The baseline was built after the candidate (under float32, no XLA): neither took the
    # other's policy or compile settings.
    assert candidate.effective["dtype_policy"] == "mixed_bfloat16"
    assert candidate.effective["jit_compile"] is True
    assert baseline.effective["dtype_policy"] == "float32"
    assert baseline.effective["jit_compile"] is False
    assert (candidate.config, baseline.config) == (CANDIDATE, BASELINE)
    for result in (candidate, baseline):
        assert len(result.window_samples_per_second) == 4
        assert result.throughput is not None and result.throughput.n == 4
        assert all(w > 0 for w in result.window_samples_per_second)
        assert result.curve == [] and result.stopped_early is None
        assert result.warmup_steps > 0 and "paired windows" in result.phase_seconds
    ratio = paired_ratio(candidate.window_samples_per_second, baseline.window_samples_per_second)
    assert ratio.n == 4 and ratio.median > 0


@pytest.mark.parametrize(
    ("models", "order"),
    [
        (2, (0, 1, 1, 0, 0, 1, 1, 0)),  # ABBA
        (3, (0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0)),  # in order, then in reverse
    ],
)
def test_a_window_after_the_other_models_has_an_untimed_lead_in(
    tiny_ref: Callable[..., str],
    settings: RunSettings,
    monkeypatch: pytest.MonkeyPatch,
    models: int,
    order: tuple[int, ...],
) -> None:
    calls: list[tuple[int, str, int]] = []  # (trainer, phase, steps), in the order they ran
    trainers: list[Trainer] = []
    real_run = Trainer.run

    def recording_run(self: Trainer, steps: int, phase: str, *args: object, **kw: object) -> None:
        if self not in trainers:
            trainers.append(self)
        calls.append((trainers.index(self), phase, steps))
        real_run(self, steps, phase, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Trainer, "run", recording_run)
    first, *_ = run_side_by_side(
        load_experiment(tiny_ref()), (BASELINE,) * models, settings, pairs=4
    )

    paired = [c for c in calls if c[1] in ("paired lead-in", "paired window")]
    # A lead-in (as long as the window) at each change of model.
    expected: list[tuple[int, str]] = []
    for k in order:
        if not expected or expected[-1][0] != k:
            expected.append((k, "paired lead-in"))
        expected.append((k, "paired window"))
    assert [(k, phase) for k, phase, _ in paired] == expected
    window_steps = {k: steps for k, phase, steps in paired if phase == "paired window"}
    assert all(steps == window_steps[k] for k, _, steps in paired)
    assert len(first.window_samples_per_second) == 4  # lead-ins are not windows
    assert first.phase_seconds["paired lead-in"] > 0


def test_the_baseline_against_itself_is_about_even(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    first, second = run_side_by_side(load_experiment(tiny_ref()), (BASELINE, BASELINE), settings, 6)

    ratio = paired_ratio(first.window_samples_per_second, second.window_samples_per_second)
    # Two copies of one model in one process, windows alternating: no copy is favoured by far
    # (a loose bound: this machine is shared; the benchmark measures the interval).
    assert 0.5 < ratio.median < 2.0


@pytest.mark.parametrize(
    ("other", "named"),
    [
        (TrialConfig(batch_size=32, intra_op_threads=1), "intra_op_threads: 0 vs 1"),
        (TrialConfig(batch_size=32, backend="jax", jit_compile=True), "backend"),
    ],
)
def test_a_pair_one_process_cannot_hold_is_refused(
    tiny_ref: Callable[..., str], settings: RunSettings, other: TrialConfig, named: str
) -> None:
    with pytest.raises(ConfigError, match=f"cannot be timed in one process: it fixes {named}"):
        run_side_by_side(load_experiment(tiny_ref()), (BASELINE, other), settings, pairs=3)
    with pytest.raises(ConfigError, match="at least 2 pairs"):
        run_side_by_side(load_experiment(tiny_ref()), (BASELINE, BASELINE), settings, pairs=1)


def test_a_pair_runs_in_one_trial_process(
    tiny_ref: Callable[..., str], settings: RunSettings, tmp_path
) -> None:
    candidate, baseline = run_isolated_pair(
        tiny_ref(), CANDIDATE, BASELINE, settings, pairs=3, log_dir=tmp_path
    )

    assert candidate.config == CANDIDATE and baseline.config == BASELINE
    assert len(candidate.window_samples_per_second) == len(baseline.window_samples_per_second)
    assert candidate.effective["dtype_policy"] == "mixed_bfloat16"
    assert baseline.effective["dtype_policy"] == "float32"
    assert (tmp_path / "trial.log").is_file()
    # three in one process, each with its own settings, in the order given
    third = TrialConfig(batch_size=48, steps_per_execution=2)
    results = run_isolated_side_by_side(tiny_ref(), (BASELINE, CANDIDATE, third), settings, pairs=2)
    assert [r.config for r in results] == [BASELINE, CANDIDATE, third]
    assert [r.effective["dtype_policy"] for r in results] == [
        "float32", "mixed_bfloat16", "float32",
    ]  # fmt: skip
    assert all(len(r.window_samples_per_second) == 2 for r in results)
    with pytest.raises(ConfigError, match="cannot be timed in one process"):
        run_isolated_pair(
            tiny_ref(), BASELINE, TrialConfig(batch_size=32, inter_op_threads=1), settings, pairs=3
        )
