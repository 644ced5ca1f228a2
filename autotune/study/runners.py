"""How a study runs its configurations: the runner types and the real runners, each a fresh
trial process (:mod:`autotune.trial.isolation`). No TensorFlow here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from autotune.config import RunSettings, TrialConfig
from autotune.store.result import RunResult

#: Runs one trial: (experiment reference, config, settings, log folder) -> RunResult.
TrialRunner = Callable[[str, TrialConfig, RunSettings, Path | None], RunResult]
#: Times configurations side by side in one process, throughput only: (experiment reference,
#: configurations in the order they are set up and timed, settings, log folder) -> their
#: results in that order. A confirmation times a round's candidates beside the baseline with it.
PairRunner = Callable[[str, Sequence[TrialConfig], RunSettings, Path | None], Sequence[RunResult]]


def isolated_runner(
    reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
) -> RunResult:
    """The real runner: a fresh process, started ahead once the run before had nothing more to
    time, when it can be."""
    from autotune.trial.isolation import run_isolated

    return run_isolated(reference, config, settings, log_dir=log_dir, prestart=True)


def isolated_pair_runner(
    reference: str,
    configs: Sequence[TrialConfig],
    settings: RunSettings,
    log_dir: Path | None,
) -> tuple[RunResult, ...]:
    """The real pair runner: one fresh process timing ``configs`` in windows taken in turn, as
    many rounds as ``settings`` has windows (at least 2), under the settings' time limit once
    per configuration (it sets up, warms up and times each); it takes a process started ahead,
    and starts the next one once its last window is timed."""
    from autotune.trial.isolation import run_isolated_side_by_side

    pairs = max(2, settings.windows)
    limit = settings.replace(time_limit_seconds=len(configs) * settings.time_limit_seconds)
    return run_isolated_side_by_side(
        reference, configs, limit, pairs=pairs, log_dir=log_dir, prestart=True
    )


__all__ = ["PairRunner", "TrialRunner", "isolated_pair_runner", "isolated_runner"]
