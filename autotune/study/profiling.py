"""Profiling re-runs of the Pareto front, for studies that profile nothing while they search
(``profile_mode="pareto"``).

Each front trial without a profile of its own is run once more with the profiler and without its
curve; what the profile says is stored in the study (``autotune_profile:<n>``,
:data:`autotune.store.schema.PROFILE_RERUN_PREFIX`). The trial's own throughput and fidelity stay as
first measured.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import optuna

from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import TrialFailure
from autotune.store import writer
from autotune.store.records import TrialRow
from autotune.store.result import RunResult
from autotune.store.schema import BASELINE_SEEDS

#: Runs one configuration: (config, settings, log folder) -> RunResult; raises TrialFailure.
ProfilingRunner = Callable[[TrialConfig, RunSettings, Path], RunResult]
#: Called with (trial number, stored entry) as each re-run is stored.
ProfileListener = Callable[[int, dict[str, Any]], None]

#: The parts of a re-run's RunResult that its stored entry keeps.
RERUN_PARTS = ("profile", "profile_error", "input_ablation", "recompilation")


def _entry(
    run: ProfilingRunner, config: TrialConfig, settings: RunSettings, log_dir: Path
) -> dict[str, Any]:
    entry: dict[str, Any] = {"log_dir": str(log_dir)}
    settings = settings.replace(
        seed=BASELINE_SEEDS[0],
        curve=False,
        stop_below_samples_per_second=None,
        profile_dir=str(log_dir),
    )
    try:
        rerun = run(config, settings, log_dir / "rerun")
    except TrialFailure as failure:
        entry["profile_error"] = f"the profiling re-run failed ({failure.kind}): {failure.message}"
        return entry
    data = rerun.to_dict()
    entry.update({part: data.get(part) for part in RERUN_PARTS})
    return entry


def profile_front(
    study: optuna.Study,
    front: Sequence[TrialRow],
    run: ProfilingRunner,
    settings: RunSettings,
    log_root: Path,
    on_profile: ProfileListener | None = None,
) -> dict[int, dict[str, Any]]:
    """Re-runs each trial of ``front`` that has neither a profile of its own nor a stored
    re-run, with ``settings`` but profiling into ``log_root/trial_<n>`` (its log in
    ``rerun/`` there), seed 0 and without its curve. A re-run that fails is stored with its
    failure and not retried; it never stops the study.

    Returns the stored entries by trial number.
    """
    stored: dict[int, dict[str, Any]] = {}
    attrs = study.user_attrs
    for row in front:
        key = writer.profile_rerun_key(row.number)
        if row.config is None or row.profile_source == "trial" or key in attrs:
            continue
        entry = _entry(run, row.config, settings, log_root / f"trial_{row.number}")
        writer.write_profile_rerun(study, row.number, entry)
        stored[row.number] = entry
        if on_profile is not None:
            on_profile(row.number, entry)
    return stored


__all__ = ["RERUN_PARTS", "ProfileListener", "ProfilingRunner", "profile_front"]
