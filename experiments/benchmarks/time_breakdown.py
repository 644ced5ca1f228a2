"""Where a study's search time goes, from what the study stored (no training).

For every measured trial of each study (duplicates, which reuse a measurement, are left out) the
trial process records its phases in seconds (``RunResult.phase_seconds``: setup, warm-up, timed
windows, profile, input ablation, curve); Optuna records when the trial started and completed.
So the search's wall time (first trial's start to last trial's completion) splits into:

- the phases inside the trial process, summed over trials;
- outside the phases during a trial: its wall time minus its in-process total (process start and
  imports, teardown, and in the study process the sampler, scoring and the storage writes);
- between trials: the rest (the study's loop and the storage).

It also reports the share of wall time spent in trials stopped early (pruned). Results are
appended to results/time_breakdown.md with the machine, date, versions and command.

    python experiments/benchmarks/time_breakdown.py STORAGE [STORAGE ...]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import optuna
from optuna.trial import FrozenTrial, TrialState
from provenance import append_results  # type: ignore[import-not-found]

from autotune.store.schema import DUPLICATE_OF_ATTR, RESULT_ATTR

HERE = Path(__file__).resolve().parent
PHASES = ("setup", "warmup", "windows", "profile", "ablation", "curve")
#: A trial's wall time outside its process's phases.
OUTSIDE = (
    "during a trial, outside its phases: process start, imports (TensorFlow), teardown, "
    "sampling, scoring"
)


def _wall(trial: FrozenTrial) -> float:
    assert trial.datetime_start is not None and trial.datetime_complete is not None
    return (trial.datetime_complete - trial.datetime_start).total_seconds()


def measured(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    """Finished trials that ran a trial process (not duplicates, not predicted OOM)."""
    return [
        t
        for t in trials
        if t.state in (TrialState.COMPLETE, TrialState.PRUNED)
        and t.datetime_complete is not None
        and t.user_attrs.get(DUPLICATE_OF_ATTR) is None
        and (t.user_attrs.get(RESULT_ATTR) or {}).get("phase_seconds")
    ]


def one_study(storage: str) -> list[str]:
    """The breakdown table of the only study in ``storage``."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    (name,) = optuna.get_all_study_names(storage)
    finished = [
        t for t in optuna.load_study(study_name=name, storage=storage).trials
        if t.datetime_complete is not None and t.datetime_start is not None
    ]  # fmt: skip
    runs = measured(finished)
    start = min(t.datetime_start for t in finished)  # type: ignore[type-var]
    end = max(t.datetime_complete for t in finished)  # type: ignore[type-var]
    wall = (end - start).total_seconds()  # type: ignore[operator]
    seconds = {phase: 0.0 for phase in PHASES}
    process = 0.0
    for trial in runs:
        phases = trial.user_attrs[RESULT_ATTR]["phase_seconds"]
        for phase in PHASES:
            seconds[phase] += float(phases.get(phase, 0.0))
        process += _wall(trial) - float(phases["total"])
    pruned = sum(_wall(t) for t in runs if t.state == TrialState.PRUNED)
    tuner = wall - sum(seconds.values()) - process
    rows = [
        *((f"in the trial process: {phase}", value) for phase, value in seconds.items()),
        (OUTSIDE, process),
        ("between trials (the loop, the storage)", tuner),
    ]
    lines = [
        f"### {name} (`{storage}`)",
        "",
        f"{len(finished)} finished trials, {len(runs)} measured in a trial process; search wall "
        f"time {wall:.1f} s (first trial's start to last trial's completion; the baseline runs "
        "and the confirmation are not in it).",
        "",
        "| where | seconds | share | per measured trial |",
        "| --- | ---: | ---: | ---: |",
        *(
            f"| {label} | {value:.1f} | {value / wall:.0%} | {value / max(len(runs), 1):.2f} s |"
            for label, value in rows
        ),
        "",
        f"Trials stopped early (pruned): {pruned:.1f} s, {pruned / wall:.0%} of the wall time.",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("storages", nargs="+", help="Optuna storage URLs of autotune studies")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "time_breakdown.md")
    args = parser.parse_args()
    sections: list[str] = []
    for storage in args.storages:
        sections += one_study(storage)
    append_results(args.output, sections)


if __name__ == "__main__":
    main()
