"""The Pareto trials' recipes (the report's table, ``autotune export``'s JSON) and the
recommendation rule at a fidelity tolerance (noise-floor units). Throughput in samples/s."""

from __future__ import annotations

import json
from typing import NamedTuple

from autotune.measure import format_throughput
from autotune.store.records import StudyRecords, TrialRow


class RecipeRow(NamedTuple):
    """One Pareto trial in the report's table.

    Attributes:
        number: trial number.
        description: the configuration in one line.
        throughput: median samples/s with its CI, as text.
        speedup: median throughput / the baseline's (None before the baseline is measured).
        fidelity: fidelity distance.
        settings_json: the configuration and learning rate, as indented JSON.
        recipe_json: the recipe ``autotune export`` would write for this trial (config,
            learning rate, provenance), as indented JSON.
        memory_mib: peak memory (MiB), in a study with the memory objective; else None.
    """

    number: int
    description: str
    throughput: str
    speedup: float | None
    fidelity: float | None
    settings_json: str
    recipe_json: str
    memory_mib: float | None = None


def recipe_json(records: StudyRecords, row: TrialRow | None) -> str:
    """The recipe of ``row`` (the baseline's when None) as JSON for ``autotune.apply``."""
    return json.dumps(records.recipe(row).to_dict(), indent=2, sort_keys=True)


def pareto_table_info(records: StudyRecords) -> list[RecipeRow]:
    """The Pareto trials, fastest first, with their recipes."""
    rows = []
    for row in records.pareto():
        recipe = records.recipe(row)
        rows.append(
            RecipeRow(
                number=row.number,
                description=row.config.describe() if row.config else "-",
                throughput=format_throughput(row.throughput),
                speedup=recipe.speedup,
                fidelity=row.fidelity,
                settings_json=json.dumps(
                    {"config": recipe.config.to_dict(), "learning_rate": recipe.learning_rate},
                    indent=2,
                ),
                recipe_json=json.dumps(recipe.to_dict(), indent=2, sort_keys=True),
                memory_mib=row.peak_memory_mib if records.has_memory else None,
            )
        )
    return rows


class Recommendation(NamedTuple):
    """What to use at a fidelity tolerance.

    Attributes:
        tolerance: the largest fidelity distance accepted (noise-floor units).
        number: the recommended trial; None when the baseline stays the recommendation.
        text: one sentence for people.
    """

    tolerance: float
    number: int | None
    text: str


def recommendation_info(
    records: StudyRecords, tolerance: float, max_memory_mib: float | None = None
) -> Recommendation:
    """The fastest complete trial with fidelity <= ``tolerance`` (and, with ``max_memory_mib``,
    a peak memory within it, MiB) that is faster than the baseline (``Study.best``'s rule), or
    the baseline, saying so. Memory is a limit, never a weight against speed."""
    baseline = records.baseline
    if baseline.throughput is None or baseline.config is None:
        return Recommendation(tolerance, None, "The baseline has not been measured yet.")
    best = records.fastest_within(tolerance, max_memory_mib)
    memory = "" if max_memory_mib is None else f" and peak memory <= {max_memory_mib:g} MiB"
    if best is None or best.throughput is None or best.config is None:
        within = len(records.within(tolerance, max_memory_mib))
        return Recommendation(
            tolerance,
            None,
            f"Keep the baseline ({baseline.config.describe()}, "
            f"{format_throughput(baseline.throughput)}): no trial is faster than the baseline "
            f"with fidelity <= {tolerance:.2f}{memory} ({within} trial(s) within it).",
        )
    speedup = best.throughput.median / baseline.throughput.median
    peak = (
        f", peak memory {best.peak_memory_mib:,.0f} <= {max_memory_mib:g} MiB"
        if max_memory_mib is not None and best.peak_memory_mib is not None
        else ""
    )
    return Recommendation(
        tolerance,
        best.number,
        f"Trial {best.number}: {best.config.describe()}: {format_throughput(best.throughput)}, "
        f"{speedup:.2f}x the baseline, fidelity {best.fidelity:.2f} <= {tolerance:.2f}{peak}.",
    )
