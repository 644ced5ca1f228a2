"""The study's TensorBoard view, written as it runs (:mod:`autotune.study.tensorboard_log`).

``tensorboard --logdir <the study's log folder>`` then shows the baseline seeds and every
measured trial side by side: curves, the HParams table and the profiles. The view is a
convenience: a failure to write it warns and never stops a study or fails a trial.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

from autotune.config import TrialConfig
from autotune.space import SearchSpace
from autotune.store.result import RunResult
from autotune.study import tensorboard_log


def _safely(what: str, write: Callable[[], None]) -> None:
    try:
        write()
    except (OSError, ValueError) as error:
        warnings.warn(f"TensorBoard: {what} not written: {error}", RuntimeWarning, stacklevel=3)


def _speed(result: RunResult) -> float | None:
    return result.throughput.median if result.throughput is not None else None


def study_config(log_root: Path, space: SearchSpace, baseline_config: TrialConfig) -> None:
    """The HParams experiment (searched settings and metrics), in the study's log folder."""
    _safely(
        f"the study's HParams configuration in {log_root}",
        lambda: tensorboard_log.write_study_config(log_root, space, baseline_config),
    )


def baseline_run(folder: Path, seed: int, result: RunResult) -> None:
    """The baseline's run with ``seed`` (its curve; its throughput for seed 0)."""
    _safely(
        f"baseline seed {seed} in {folder}",
        lambda: tensorboard_log.write_baseline(
            folder, seed, result.config, _speed(result), result.curve
        ),
    )


def trial_run(folder: Path, number: int, result: RunResult, fidelity: float | None) -> None:
    """Trial ``number``'s run: its settings, throughput (samples/s), fidelity and curve (a trial
    stopped early has no fidelity and no curve)."""
    _safely(
        f"trial {number} in {folder}",
        lambda: tensorboard_log.write_trial(
            folder, number, result.config, _speed(result), fidelity, result.curve
        ),
    )


__all__ = ["baseline_run", "study_config", "trial_run"]
