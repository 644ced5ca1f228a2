"""What a stored study recommends, and with which figures: the one rule behind ``autotune best``
(and ``export``), the box at the end of ``autotune run``, ``status``, the report's header and the
dashboard.

After a complete confirmation (:mod:`autotune.analysis.head_to_head`) the recommendation is the
confirmed winner (or its minimal recipe, or the baseline) and its speed-up is the confirmation's
paired ratio: the median of the per-round ratios with its interval. The throughputs shown beside
it are the medians (samples/s) of the same rounds, the candidate's and the baseline's, so the
three figures come from one measurement. A search-phase throughput is never set against the
baseline measured at the study's start once a confirmation has re-measured both: on a shared
machine that baseline drifts, and the ratio of the two means nothing. Without a complete
confirmation (or when the confirmed winner is over the memory limit) the figures are the
search's, and every text says so ("search phase, unconfirmed"). No TensorFlow here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from autotune.analysis.head_to_head import Confirmation, Verdict, ratio_text
from autotune.config import TrialConfig
from autotune.measure import Estimate, format_throughput, summarize
from autotune.recipe import Recipe
from autotune.store.schema import TrialRow
from autotune.store.throughput_only import throughput_only_text

if TYPE_CHECKING:  # records imports this module: its best() is recommend()'s recipe
    from autotune.store.records import StudyRecords

#: How a figure that no confirmation produced is marked.
UNCONFIRMED = "search phase, unconfirmed"


@dataclass(frozen=True)
class SpeedFigures:
    """The speed-up a recommendation claims and the throughputs (samples/s) that produced it.

    Attributes:
        throughput: the recommended configuration's samples/s: the median of its confirmation
            rounds when confirmed, else its search-phase measurement.
        baseline: the baseline's samples/s the speed-up is over: the median of the same
            confirmation rounds when confirmed, else the baseline measured at the study's start.
        speedup: the speed-up (1.0 for the baseline itself); confirmed: the median of the
            per-round ratios, which may differ a little from ``throughput / baseline``.
        ratio: the confirmed paired ratio with its interval; None when unconfirmed.
        rounds: the confirmation rounds the figures come from; None for search-phase figures.
        max_rounds: the rounds a sequential confirmation could have run (it stops once the
            decision cannot change); None when not stored.
        processes: the fresh processes the confirmation ran; None when not stored.
        is_baseline: whether the recommendation is the baseline configuration.
    """

    throughput: Estimate | None
    baseline: Estimate | None
    speedup: float | None
    ratio: Estimate | None = None
    rounds: int | None = None
    is_baseline: bool = False
    max_rounds: int | None = None
    processes: int | None = None

    @property
    def confirmed(self) -> bool:
        """Whether the figures come from a confirmation's head-to-head rounds."""
        return self.rounds is not None

    def speedup_text(self) -> str:
        """'2.40x (95% CI 2.31-2.52), confirmed over 6 rounds head to head',
        '6.00x (search phase, unconfirmed)' or '1.00x (the baseline itself)'."""
        if self.is_baseline:
            return "1.00x (the baseline itself)"
        if self.ratio is not None and self.rounds is not None:
            rounds = (
                f"{self.rounds} of at most {self.max_rounds}"
                if self.max_rounds is not None and self.max_rounds > self.rounds
                else f"{self.rounds}"
            )
            processes = f", {self.processes} processes" if self.processes is not None else ""
            return (
                f"{ratio_text(self.ratio)}, confirmed over {rounds} rounds head to head{processes}"
            )
        if self.speedup is None:
            return "not measured"
        return f"{self.speedup:.2f}x ({UNCONFIRMED})"

    def throughput_text(self) -> str:
        """The recommended configuration's samples/s and where they were measured."""
        where = (
            f"median of the confirmation's {self.rounds} rounds"
            if self.rounds is not None
            else UNCONFIRMED
            if not self.is_baseline
            else "measured at the study's start"
        )
        return f"{format_throughput(self.throughput)}: {where}"

    def baseline_text(self) -> str:
        """The baseline's samples/s the speed-up is over and where they were measured."""
        where = "the same rounds" if self.rounds is not None else "measured at the study's start"
        return f"{format_throughput(self.baseline)}: {where}"


def within_memory(row: TrialRow, max_memory_mib: float | None) -> bool:
    """Whether ``row``'s peak memory is within ``max_memory_mib`` (MiB); True without a limit,
    False with one when its memory was not measured."""
    if max_memory_mib is None:
        return True
    return row.peak_memory_mib is not None and row.peak_memory_mib <= max_memory_mib


def _estimate(data: Any) -> Estimate | None:
    return Estimate(**data) if isinstance(data, dict) and data else None


def figures_of(recipe: Recipe) -> SpeedFigures:
    """The figures a recipe carries (see :func:`recommend`): confirmed when its confirmation
    holds rounds of the baseline; the paired ratio when it holds one."""
    confirmation = recipe.confirmation or {}
    ratio = _estimate(confirmation.get("ratio"))
    measured = bool(confirmation.get("baseline_samples_per_second"))
    stored_rounds = confirmation.get("completed_rounds", confirmation.get("rounds"))
    rounds = int(stored_rounds) if measured and stored_rounds is not None else None
    processes = confirmation.get("processes")
    return SpeedFigures(
        throughput=_estimate(recipe.throughput),
        baseline=_estimate(recipe.baseline_throughput),
        speedup=ratio.median if ratio is not None else recipe.speedup,
        ratio=ratio,
        rounds=rounds if ratio is not None or recipe.is_baseline else None,
        is_baseline=recipe.is_baseline,
        max_rounds=int(confirmation["rounds"]) if "rounds" in confirmation else None,
        processes=int(processes) if isinstance(processes, int) else None,
    )


@dataclass(frozen=True)
class Recommendation:
    """What a study recommends at a fidelity tolerance (and peak-memory limit).

    Attributes:
        recipe: the recommended recipe (as ``autotune best --json`` prints it).
        figures: its speed-up and the throughputs that produced it.
        tolerance: the largest fidelity distance accepted (noise-floor units).
        max_memory_mib: the peak-memory limit (MiB), or None.
        text: one sentence for people, naming the figures and whether they are confirmed.
    """

    recipe: Recipe
    figures: SpeedFigures
    tolerance: float
    max_memory_mib: float | None
    text: str

    @property
    def number(self) -> int | None:
        """The recommended trial; None when the baseline stays the recommendation."""
        return self.recipe.trial

    @property
    def confirmed(self) -> bool:
        return self.figures.confirmed


def recommend(
    records: StudyRecords, max_fidelity: float | None = None, max_memory_mib: float | None = None
) -> Recommendation:
    """The recommendation within ``max_fidelity`` (default: the study's tolerance) and, with
    ``max_memory_mib``, within that peak memory (MiB): memory enters as a limit, never as a
    weight against speed.

    After a complete confirmation: the fastest confirmed candidate whose speed-up interval lies
    above 1 and whose mean fidelity over its seeds is within the limit (its minimal recipe when
    that is confirmed too), or the baseline, saying no configuration beat it beyond noise; its
    throughputs are the confirmation rounds' medians. Before one, or when the confirmed winner's
    peak memory exceeds ``max_memory_mib``: the trial :meth:`StudyRecords.fastest_within` the
    limits, unconfirmed, or the baseline when no trial beats it. ValueError when the study has
    no baseline yet.
    """
    limit = records.tolerance if max_fidelity is None else max_fidelity
    confirmation = records.confirmation
    complete = confirmation is not None and confirmation.complete
    if confirmation is not None and complete:
        confirmed = _confirmed(records, confirmation, limit)
        if confirmed.trial is None or within_memory(records.trial(confirmed.trial), max_memory_mib):
            return _recommendation(records, confirmed, limit, max_memory_mib)
    best = records.fastest_within(limit, max_memory_mib)
    memory = "" if max_memory_mib is None else f" and peak memory <= {max_memory_mib:g} MiB"
    if best is not None:
        recipe = records.recipe(best, limit)
        if complete:
            recipe = dataclasses.replace(
                recipe,
                note=f"{recipe.note}; unconfirmed: the confirmed winner needs more memory "
                f"than {max_memory_mib:g} MiB",
            )
        return _recommendation(records, recipe, limit, max_memory_mib)
    within = len(records.within(limit, max_memory_mib))
    recipe = dataclasses.replace(
        records.recipe(None),
        note=f"no trial was faster than the baseline with fidelity <= {limit:g}{memory} "
        f"({within} within the limit); keep the baseline configuration",
    )
    return _recommendation(records, recipe, limit, max_memory_mib)


def _rounds_estimate(samples_per_second: tuple[float, ...]) -> dict[str, Any] | None:
    return summarize(samples_per_second).to_dict() if samples_per_second else None


def _confirmed(records: StudyRecords, confirmation: Confirmation, limit: float) -> Recipe:
    """The confirmed recipe: the winner's (or its minimal recipe, or the baseline's) with the
    confirmation's paired ratio as its speed-up and its rounds' medians as its throughputs."""
    details: dict[str, Any] = {
        "rounds": confirmation.rounds,
        "completed_rounds": confirmation.completed_rounds,
        "sequential": confirmation.sequential,
        "one_sided_coverage": confirmation.one_sided_coverage,
        "processes": confirmation.process_count,
        "seeds": list(confirmation.seeds),
        "baseline_samples_per_second": list(confirmation.baseline_samples_per_second),
        "candidates": [v.to_dict() for v in confirmation.verdicts(limit)],
        "answer": confirmation.summary(limit),
    }
    winner = confirmation.recommended(limit)
    if winner is None or winner.ratio is None:
        base = records.recipe(None)
        measured = _rounds_estimate(confirmation.baseline_samples_per_second)
        return dataclasses.replace(
            base,
            throughput=measured or base.throughput,
            baseline_throughput=measured or base.baseline_throughput,
            note=f"confirmed: {confirmation.summary(limit)}",
            confirmation=details,
        )
    details.update(ratio=winner.ratio.to_dict(), fidelity_seeds=winner.to_dict()["fidelity"])
    attribution = confirmation.attribution
    if attribution is not None and attribution.trial == winner.candidate.trial:
        details["attribution"] = attribution.rows()
        details["minimal"] = winner.candidate is confirmation.minimal
    row = records.trial(winner.candidate.trial)
    recipe = records.recipe(row, limit)
    details["search_throughput"] = recipe.throughput
    details["search_baseline_throughput"] = recipe.baseline_throughput
    if winner.candidate is confirmation.minimal:
        recipe = _minimal(records, recipe, winner.candidate.config)
    return dataclasses.replace(
        recipe,
        throughput=_rounds_estimate(winner.candidate.samples_per_second),
        baseline_throughput=_rounds_estimate(_baseline_rounds(confirmation, winner)),
        speedup=winner.ratio.median,
        fidelity=winner.fidelity_mean,
        note=f"confirmed: {confirmation.summary(limit)}",
        confirmation=details,
    )


def _baseline_rounds(confirmation: Confirmation, winner: Verdict) -> tuple[float, ...]:
    """The baseline's samples/s in the rounds ``winner`` was paired with."""
    if winner.candidate is confirmation.minimal:
        return confirmation.minimal_baseline_samples_per_second
    rounds = len(winner.candidate.samples_per_second)
    return tuple(confirmation.baseline_for(winner.candidate)[:rounds])


def _minimal(records: StudyRecords, recipe: Recipe, config: TrialConfig) -> Recipe:
    """``recipe`` (the winner's) for its minimal ``config``: the baseline's learning rate
    when the batch size went back to the baseline's, and no effective settings when the
    precision or XLA did (those were observed for the winner's configuration)."""
    base = records.baseline.config
    learning_rate = recipe.learning_rate
    if base is not None and config.batch_size == base.batch_size:
        learning_rate = records.baseline.learning_rate
    numerics = (config.precision, config.jit_compile)
    same = numerics == (recipe.config.precision, recipe.config.jit_compile)
    return dataclasses.replace(
        recipe,
        config=config,
        learning_rate=learning_rate,
        effective=recipe.effective if same else {},
    )


def _recommendation(
    records: StudyRecords, recipe: Recipe, limit: float, max_memory_mib: float | None
) -> Recommendation:
    figures = figures_of(recipe)
    text = _sentence(records, recipe, figures, limit, max_memory_mib)
    if records.throughput_only is not None:  # every screen says the fidelity check is blind
        mark = throughput_only_text(records.throughput_only)
        recipe = dataclasses.replace(recipe, note=f"{recipe.note}; {mark}")
        text = f"{text} {mark[0].upper()}{mark[1:]}."
    return Recommendation(recipe, figures, limit, max_memory_mib, text)


def _sentence(
    records: StudyRecords,
    recipe: Recipe,
    figures: SpeedFigures,
    limit: float,
    max_memory_mib: float | None,
) -> str:
    """One sentence: what to use, its speed-up and the throughputs behind it."""
    described = recipe.config.describe()
    if recipe.is_baseline:
        if figures.confirmed and figures.baseline is not None:
            return (
                f"Keep the baseline ({described}, {figures.baseline.median:,.0f} samples/s over "
                f"the confirmation's {figures.rounds} rounds): "
                f"{recipe.note.removesuffix('; keep the baseline')}."
            )
        memory = "" if max_memory_mib is None else f" and peak memory <= {max_memory_mib:g} MiB"
        within = len(records.within(limit, max_memory_mib))
        return (
            f"Keep the baseline ({described}, {format_throughput(figures.baseline)}): no trial "
            f"is faster than the baseline with fidelity <= {limit:.2f}{memory} ({within} "
            "trial(s) within it)."
        )
    row = records.trial(recipe.trial) if recipe.trial is not None else None
    peak = ""
    if max_memory_mib is not None and row is not None and row.peak_memory_mib is not None:
        peak = f", peak memory {row.peak_memory_mib:,.0f} <= {max_memory_mib:g} MiB"
    fidelity = "-" if recipe.fidelity is None else f"{recipe.fidelity:.2f}"
    confirmation = recipe.confirmation or {}
    what = f"Trial {recipe.trial}" + (" (minimal recipe)" if confirmation.get("minimal") else "")
    if figures.confirmed and figures.throughput is not None and figures.baseline is not None:
        return (
            f"{what}: {described}: {figures.speedup_text()}: "
            f"{figures.throughput.median:,.0f} against the baseline's "
            f"{figures.baseline.median:,.0f} samples/s (medians of the same rounds), "
            f"fidelity {fidelity} <= {limit:.2f} over seeds {confirmation.get('seeds')}{peak}."
        )
    speedup = "-" if figures.speedup is None else f"{figures.speedup:.2f}x"
    base = "-" if figures.baseline is None else f"{figures.baseline.median:,.0f}"
    why = UNCONFIRMED
    confirmation_done = records.confirmation is not None and records.confirmation.complete
    if confirmation_done and max_memory_mib is not None:
        why += f": the confirmed winner needs more than {max_memory_mib:g} MiB"
    return (
        f"{what}: {described}: {format_throughput(figures.throughput)}, {speedup} the "
        f"baseline's {base} samples/s, fidelity {fidelity} <= {limit:.2f}{peak} ({why})."
    )


__all__ = [
    "UNCONFIRMED",
    "Recommendation",
    "SpeedFigures",
    "figures_of",
    "recommend",
    "within_memory",
]
