"""``Study.run``: the whole tuning in one call, baseline -> search -> confirmation, reported through
one callback protocol (:mod:`autotune.study.callbacks`).

``autotune run`` and ``experiments/tune_from_python.py`` are thin users of it: they build a
:class:`~autotune.study.study.Study`, pass their callbacks and show the outcome. The steps stay
the study's own public methods (:meth:`~autotune.study.study.Study.ensure_baseline`,
:meth:`~autotune.study.study.Study.optimize`, :meth:`~autotune.study.study.Study.confirm`), so a
caller that wants one step alone still has it. No TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from autotune.analysis.head_to_head import DEFAULT_ROUNDS, DEFAULT_TOP, EXTRA_SEEDS
from autotune.exceptions import ConfigError
from autotune.fidelity import NoiseFloor
from autotune.store.objectives import check_memory_limit
from autotune.store.records import TrialRow
from autotune.study import checks, claims, confirming
from autotune.study.callbacks import CallbackList, StudyCallback, StudyOutcome
from autotune.study.local_workers import LocalWorkers, set_target
from autotune.study.placement import Placement

if TYPE_CHECKING:
    from autotune.study.study import Study


class FinishedTrials:
    """The study's trials that finished since the last call (or since it was made), whichever
    worker ran them."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.seen = {row.number for row in study.records() if _finished(row)}

    def new(self) -> list[TrialRow]:
        rows = [r for r in self.study.records() if _finished(r) and r.number not in self.seen]
        self.seen.update(row.number for row in rows)
        return rows


def _finished(row: TrialRow) -> bool:
    # a trial enqueued before the run ("waiting") is reported when it ends, like any other
    return row.state not in ("running", "waiting")


def run(
    study: Study,
    n_trials: int | None = None,
    *,
    timeout: float | None = None,
    confirm_top: int = DEFAULT_TOP,
    confirm_rounds: int = DEFAULT_ROUNDS,
    confirm_paired: bool = True,
    max_memory_mib: float | None = None,
    local_workers: Sequence[Placement] = (),
    callbacks: Iterable[StudyCallback] = (),
) -> StudyOutcome:
    """Tunes the experiment end to end: the baseline and its noise floor, then trials until the
    study holds ``n_trials`` finished trials (baseline runs not counted) or ``timeout`` seconds
    have passed, then the ``confirm_top`` fastest feasible Pareto trials re-measured head to
    head with the baseline over ``confirm_rounds`` interleaved rounds; returns the front, the
    confirmation and the recommended recipe.

    Running it again resumes: stored baseline seeds, trials and confirmation rounds are kept
    and not run again (see :meth:`~autotune.study.study.Study.optimize` and
    :meth:`~autotune.study.study.Study.confirm`).

    Args:
        n_trials: finished trials the study should hold in the end (an integer >= 0); stored
            as the target of the study's workers.
        timeout: seconds after which no new trial starts (None: no limit).
        confirm_top: candidates to confirm (0: recommend unconfirmed; ``on_confirmation`` is
            then not called).
        confirm_rounds: interleaved head-to-head rounds at most (>= 2), in fresh processes.
        confirm_paired: time a round's candidates beside the baseline in one process where
            they share a backend and thread pools (False: each in a process of its own).
        max_memory_mib: largest peak memory (MiB) a confirmed or recommended configuration may
            use (None: no limit).
        local_workers: placements of more workers on this host, started as
            ``python -m autotune worker`` processes once the baseline is stored and waited for
            when the search ends (:class:`~autotune.study.local_workers.LocalWorkers`); they need
            a Journal file or PostgreSQL storage, and ``n_trials``.
        callbacks: :class:`~autotune.study.callbacks.StudyCallback` objects, called in the
            order given at each step (the order of the steps: :mod:`autotune.study.callbacks`).

    Raises:
        ConfigError: a bad argument (named, before anything runs), or local workers on a
            storage that holds one worker only.
        StudyError: the baseline failed, too many trials failed in a row, or another process
            runs trials on this SQLite study.
    """
    checks.check_budget(n_trials, timeout)
    confirming.check_plan(confirm_top, confirm_rounds, EXTRA_SEEDS)
    limit = check_memory_limit(max_memory_mib)
    placements = list(local_workers)
    claims.check_workers(study.storage_url, 1 + len(placements))
    if placements and n_trials is None:
        raise ConfigError(
            "local workers run towards a number of trials. Received: n_trials=None",
            argument="n_trials",
        )
    report = CallbackList(callbacks)
    if n_trials is not None:  # before the workers start: they run towards it
        set_target(study, n_trials)
    finished = FinishedTrials(study)
    study.ensure_baseline(on_run=report.on_baseline_run, on_wait=report.on_baseline_wait)
    report.on_baseline_end(NoiseFloor.from_dict(study.baseline()["noise_floor"]))
    with LocalWorkers(study, placements, study.seed) as local:  # after the baseline
        report.on_search_begin(study.finished_count(), n_trials)
        with _reporting(study, finished, report):
            study.optimize(n_trials=n_trials, timeout=timeout)
    for row in finished.new():  # the workers' last trials, once they have ended
        report.on_trial_end(row)
    for line in local.failures():
        report.on_worker_failure(line)
    front = study.pareto_front()
    report.on_front(front)
    confirmation = study.confirm(
        confirm_top,
        confirm_rounds,
        on_progress=report.on_confirm_progress,
        max_memory_mib=limit,
        paired=confirm_paired,
    )
    if confirmation is not None:
        report.on_confirmation(confirmation)
    outcome = StudyOutcome(tuple(front), confirmation, study.best(max_memory_mib=limit))
    report.on_run_end(outcome)
    return outcome


@contextmanager
def _reporting(study: Study, finished: FinishedTrials, report: StudyCallback) -> Iterator[None]:
    """While the search runs: each trial this process finishes reports every trial finished
    since (``on_trial_end``, any worker's), and Pareto re-run profiles go to ``on_profile``
    as well as to a listener set with :meth:`~autotune.study.study.Study.on_profile`."""
    previous = study._on_profile

    def on_trial(_row: TrialRow) -> None:
        for row in finished.new():
            report.on_trial_end(row)

    def on_profile(number: int, entry: dict[str, Any]) -> None:
        if previous is not None:
            previous(number, entry)
        report.on_profile(number, entry)

    study._listeners.append(on_trial)
    study._on_profile = on_profile
    try:
        yield
    finally:
        study._listeners.remove(on_trial)
        study._on_profile = previous


__all__ = ["FinishedTrials", "run"]
