"""Whether a worker starts another trial: the study's target, counted with the trials other
workers are running, and whether the space is measured already. No TensorFlow here."""

from __future__ import annotations

from typing import Literal

from autotune.config import TrialConfig
from autotune.space import SearchSpace
from autotune.store.records import StudyRecords
from autotune.study.start import centre_of

#: run: start a trial; wait: the trials running elsewhere fill the target, but one of them may
#: still fail as interrupted and need a retry; done: nothing is left to run.
Turn = Literal["run", "wait", "done"]


def exhausted(records: StudyRecords, space: SearchSpace, baseline_config: TrialConfig) -> bool:
    """Whether every configuration of the space was measured (the baseline's included)."""
    measured = {r.config for r in records.trials if r.config is not None and r.counts}
    if centre_of(space, baseline_config.batch_size) == baseline_config:  # in the space
        measured.add(baseline_config)
    return len(measured) >= space.size()


def next_turn(
    records: StudyRecords,
    n_trials: int | None,
    space: SearchSpace,
    baseline_config: TrialConfig,
) -> Turn:
    """What a worker does next, read from the study as it is now (``n_trials`` None: no
    target, run until the space is measured)."""
    if exhausted(records, space, baseline_config):
        return "done"
    if n_trials is None:
        return "run"
    finished = records.finished_count()
    if finished >= n_trials:
        return "done"
    running = records.counts().get("running", 0)
    return "wait" if finished + running >= n_trials else "run"


__all__ = ["Turn", "exhausted", "next_turn"]
