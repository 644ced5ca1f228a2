"""How a study runs its configurations: the runner types and the real runners, each a fresh
trial process (:mod:`autotune.trial.isolation`). No TensorFlow here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from autotune.config import RunSettings, TrialConfig
from autotune.store.result import RunResult

#: Runs one trial: (experiment reference, config, settings, log folder) -> RunResult.
TrialRunner = Callable[[str, TrialConfig, RunSettings, Path | None], RunResult]
#: Times a candidate beside the baseline in one process, throughput only: (experiment reference,
#: candidate, baseline, settings, log folder) -> (candidate's result, baseline's).
PairRunner = Callable[
    [str, TrialConfig, TrialConfig, RunSettings, Path | None], tuple[RunResult, RunResult]
]


def isolated_runner(
    reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
) -> RunResult:
    """The real runner: a fresh process, started ahead during a curve when it can be."""
    from autotune.trial.isolation import run_isolated

    return run_isolated(reference, config, settings, log_dir=log_dir, prestart=True)


def isolated_pair_runner(
    reference: str,
    candidate: TrialConfig,
    baseline: TrialConfig,
    settings: RunSettings,
    log_dir: Path | None,
) -> tuple[RunResult, RunResult]:
    """The real pair runner: one fresh process timing ``candidate`` and ``baseline`` in
    alternating windows, as many pairs as ``settings`` has windows (at least 2), under twice
    the settings' time limit (it sets up, warms up and times two models)."""
    from autotune.trial.isolation import run_isolated_pair

    pairs = max(2, settings.windows)
    limit = settings.replace(time_limit_seconds=2 * settings.time_limit_seconds)
    return run_isolated_pair(reference, candidate, baseline, limit, pairs=pairs, log_dir=log_dir)


__all__ = ["PairRunner", "TrialRunner", "isolated_pair_runner", "isolated_runner"]
