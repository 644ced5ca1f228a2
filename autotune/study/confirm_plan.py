"""What a confirmation measures: its plan checked, its candidates chosen, the settings of its
throughput and curve runs, and the stored confirmation resumed or a new one begun (running it is
:mod:`autotune.study.confirming`). No TensorFlow here."""

from __future__ import annotations

from collections.abc import Sequence

from autotune.analysis.head_to_head import Candidate, Confirmation
from autotune.config import RunSettings
from autotune.exceptions import ConfigError, StudyError
from autotune.store.records import StudyRecords, TrialRow, within_memory
from autotune.store.schema import BASELINE_SEEDS


def check_plan(top: object, rounds: object, extra_seeds: Sequence[int]) -> tuple[int, ...]:
    """The curve seeds of a confirmation of ``top`` candidates over ``rounds`` rounds (seed 0
    and ``extra_seeds``); ConfigError naming the argument that cannot be."""
    if not isinstance(top, int) or isinstance(top, bool) or top < 0:
        raise ConfigError(f"must be an integer >= 0. Received: {top!r}", argument="top")
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 2:
        raise ConfigError(f"must be an integer >= 2. Received: {rounds!r}", argument="rounds")
    seeds = (BASELINE_SEEDS[0], *extra_seeds)
    if len(set(seeds)) != len(seeds) or not set(seeds) <= set(BASELINE_SEEDS):
        raise ConfigError(
            f"must be baseline seeds other than {BASELINE_SEEDS[0]} "
            f"({list(BASELINE_SEEDS[1:])}), each once. Received: {list(extra_seeds)!r}",
            argument="extra_seeds",
        )
    return seeds


def candidates_of(
    records: StudyRecords, top: int, max_memory_mib: float | None = None
) -> list[TrialRow]:
    """The ``top`` fastest feasible Pareto trials faster than the baseline measured nearest in
    time to them (duplicates left out; with ``max_memory_mib``, only those whose peak memory is
    within it, MiB), the largest speed-up first (the same order as samples/s without anchors).
    On three objectives the front also holds slower trials that need less memory than the
    baseline: a confirmation of speed-ups leaves them out."""
    ratios = {r.number: records.speedup(r) or 0.0 for r in records.trials}
    front = [
        r
        for r in records.pareto()
        if r.config is not None
        and r.duplicate_of is None
        and ratios[r.number] > 1.0
        and within_memory(r, max_memory_mib)
    ]
    return sorted(front, key=lambda r: (-ratios[r.number], r.number))[:top]


def speed_settings(settings: RunSettings) -> RunSettings:
    """Throughput only: the search's windows, no curve, ablation, profile or early stop."""
    return settings.replace(
        curve=False, input_ablation=False, profile_dir=None, stop_below_samples_per_second=None
    )


def curve_settings(settings: RunSettings, seed: int) -> RunSettings:
    """The fidelity curve alone, trained with ``seed``."""
    return settings.replace(
        seed=seed,
        measure_throughput=False,
        curve=True,
        input_ablation=False,
        profile_dir=None,
        stop_below_samples_per_second=None,
    )


def start(
    records: StudyRecords,
    top: int,
    rounds: int,
    seeds: Sequence[int],
    max_memory_mib: float | None = None,
) -> Confirmation:
    """The stored confirmation when it is of the same candidates, rounds and seeds; else a new
    one (the search found other candidates since, or other rounds were asked for)."""
    if records.baseline.config is None:
        raise StudyError("a confirmation needs the baseline; run the study first")
    trials = candidates_of(records, top, max_memory_mib)
    stored = records.confirmation
    numbers = [r.number for r in trials]
    if stored is not None and stored.same_plan(numbers, rounds, seeds):
        return stored
    candidates = tuple(
        Candidate(
            trial=r.number,
            config=r.config,
            fidelity={seeds[0]: r.fidelity} if r.fidelity is not None else {},
        )
        for r in trials
        if r.config is not None
    )
    return Confirmation(
        rounds,
        tuple(seeds),
        records.baseline.config,
        (),
        candidates,
        curve_tolerance=records.tolerance,
        processes=0,
    )


__all__ = ["candidates_of", "check_plan", "curve_settings", "speed_settings", "start"]
