"""One callback protocol for every hook of :meth:`Study.run <autotune.study.study.Study.run>`.

Subclass :class:`StudyCallback` and override the ``on_*`` methods you need, as with Keras
callbacks (``keras.callbacks.Callback``); the others do nothing. :meth:`Study.run` calls them in
this order::

    on_baseline_wait()                    at most once, while another worker runs the baseline
    on_baseline_run(seed, result)         per baseline seed run now (none when it is stored)
    on_baseline_end(noise_floor)          once: the baseline and its noise floor are stored
    on_search_begin(finished, n_trials)   once, before the first trial
    on_trial_end(row)                     per finished trial, whichever worker ran it
    on_profile(number, entry)             per Pareto re-run profile ("pareto" profile mode)
    on_worker_failure(line)               per local worker that exited with an error
    on_front(front)                       once: the Pareto front after the search
    on_confirm_progress(line)             per step of the head-to-head confirmation
    on_confirmation(confirmation)         once, when candidates were confirmed (top > 0)
    on_run_end(outcome)                   once: the confirmation and the recommended recipe

Nothing here prints: the ``autotune`` command's callback draws its progress bar and lines
(:mod:`autotune.cli.commands`). No TensorFlow here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from autotune.analysis.head_to_head import Confirmation
from autotune.fidelity import NoiseFloor
from autotune.recipe import Recipe
from autotune.store.records import TrialRow
from autotune.store.result import RunResult


@dataclasses.dataclass(frozen=True)
class StudyOutcome:
    """What :meth:`Study.run` ends with.

    Attributes:
        front: the Pareto front after the search (feasible trials, fastest first).
        confirmation: the head-to-head confirmation of the top candidates, or None when none
            was asked for (``confirm_top=0``).
        recipe: the recommendation (:meth:`Study.best` within the run's ``max_memory_mib``):
            the confirmed winner, the fastest unconfirmed trial, or the baseline.
    """

    front: tuple[TrialRow, ...]
    confirmation: Confirmation | None
    recipe: Recipe


class StudyCallback:
    """The base class of :meth:`Study.run`'s callbacks: every method does nothing.

    Throughputs are in samples/s, memory in MiB, fidelity distances in units of the baseline's
    seed noise floor. A callback that raises stops the run as the error propagates (what is
    stored stays stored: running again resumes).
    """

    def on_baseline_wait(self) -> None:
        """Another worker holds the baseline claim: this run waits for its baseline, then reads
        it (called at most once)."""

    def on_baseline_run(self, seed: int, result: RunResult) -> None:
        """Baseline seed ``seed`` was run and stored: seed 0 with its throughput, the other
        seeds curve only. Not called for seeds stored before (a resumed study)."""

    def on_baseline_end(self, noise_floor: NoiseFloor) -> None:
        """The baseline is stored with its ``noise_floor`` (the spread between its seeds'
        curves), whether run now, earlier or by another worker."""

    def on_search_begin(self, finished: int, n_trials: int | None) -> None:
        """The search starts: ``finished`` trials already count towards ``n_trials`` (a resumed
        study), and the local workers, if any, have been started."""

    def on_trial_end(self, row: TrialRow) -> None:
        """Trial ``row.number`` finished (complete, pruned or failed), whichever worker ran it.
        Trials of other workers are seen when one of this process's trials ends, and at the end
        of the search; each trial is reported once, in trial-number order within a batch."""

    def on_profile(self, number: int, entry: dict[str, Any]) -> None:
        """The profiling re-run of Pareto trial ``number`` was stored (profile mode "pareto");
        ``entry`` holds its profile, or ``profile_error`` when the re-run failed."""

    def on_worker_failure(self, line: str) -> None:
        """A local worker exited with an error; ``line`` names it, its exit code, the last line
        of its log and the log file."""

    def on_front(self, front: list[TrialRow]) -> None:
        """The search ended; ``front`` is the study's Pareto front (feasible trials, fastest
        first; empty when no trial beat the baseline on both throughput and fidelity)."""

    def on_confirm_progress(self, line: str) -> None:
        """One step of the confirmation ended, as a line: ``"round 2/6: trial 3 6,000
        samples/s"``, ``"round 2/6: baseline 1,000 samples/s"``, ``"trial 3 seed 1: fidelity
        0.40"``, attribution and minimal-recipe rounds (lines that start ``"round "`` end one
        candidate's or the baseline's run of a head-to-head round)."""

    def on_confirmation(self, confirmation: Confirmation) -> None:
        """The confirmation is complete and stored (also when it was done before and is only
        read back)."""

    def on_run_end(self, outcome: StudyOutcome) -> None:
        """The run is done: its front, confirmation and recommended recipe."""


class CallbackList(StudyCallback):
    """Several callbacks called as one, in the order given."""

    def __init__(self, callbacks: Iterable[StudyCallback] = ()) -> None:
        self.callbacks = list(callbacks)

    def on_baseline_wait(self) -> None:
        for callback in self.callbacks:
            callback.on_baseline_wait()

    def on_baseline_run(self, seed: int, result: RunResult) -> None:
        for callback in self.callbacks:
            callback.on_baseline_run(seed, result)

    def on_baseline_end(self, noise_floor: NoiseFloor) -> None:
        for callback in self.callbacks:
            callback.on_baseline_end(noise_floor)

    def on_search_begin(self, finished: int, n_trials: int | None) -> None:
        for callback in self.callbacks:
            callback.on_search_begin(finished, n_trials)

    def on_trial_end(self, row: TrialRow) -> None:
        for callback in self.callbacks:
            callback.on_trial_end(row)

    def on_profile(self, number: int, entry: dict[str, Any]) -> None:
        for callback in self.callbacks:
            callback.on_profile(number, entry)

    def on_worker_failure(self, line: str) -> None:
        for callback in self.callbacks:
            callback.on_worker_failure(line)

    def on_front(self, front: list[TrialRow]) -> None:
        for callback in self.callbacks:
            callback.on_front(front)

    def on_confirm_progress(self, line: str) -> None:
        for callback in self.callbacks:
            callback.on_confirm_progress(line)

    def on_confirmation(self, confirmation: Confirmation) -> None:
        for callback in self.callbacks:
            callback.on_confirmation(confirmation)

    def on_run_end(self, outcome: StudyOutcome) -> None:
        for callback in self.callbacks:
            callback.on_run_end(outcome)


__all__ = ["CallbackList", "StudyCallback", "StudyOutcome"]
