"""The Pareto trials' recipes (the report's table, ``autotune export``'s JSON) and the
recommendation at a fidelity tolerance (noise-floor units), by the one rule of
:mod:`autotune.store.recommendation`. Throughput in samples/s."""

from __future__ import annotations

import json
from typing import NamedTuple

from autotune.measure import format_throughput
from autotune.recipe import Recipe
from autotune.store.recommendation import recommend
from autotune.store.records import StudyRecords, TrialRow


class RecipeRow(NamedTuple):
    """One Pareto trial in the report's table.

    Attributes:
        number: trial number.
        description: the configuration in one line.
        throughput: the search phase's median samples/s with its CI, as text.
        speedup: that median / the baseline's measured at the study's start (None before the
            baseline is measured): a search-phase figure, never a confirmed one.
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
        text: one sentence for people: the speed-up and the throughputs behind it, confirmed
            (the confirmation's rounds) or said to be from the search phase, unconfirmed.
        recipe: the recommended recipe, as ``autotune best --json`` prints it (None before the
            baseline is measured).
    """

    tolerance: float
    number: int | None
    text: str
    recipe: Recipe | None = None


def recommendation_info(
    records: StudyRecords, tolerance: float, max_memory_mib: float | None = None
) -> Recommendation:
    """What ``autotune best`` recommends with fidelity <= ``tolerance`` (and, with
    ``max_memory_mib``, a peak memory within it, MiB), with its figures: the rule of
    :func:`autotune.store.recommendation.recommend`. Memory is a limit, never a weight."""
    baseline = records.baseline
    if baseline.throughput is None or baseline.config is None:
        return Recommendation(tolerance, None, "The baseline has not been measured yet.")
    chosen = recommend(records, tolerance, max_memory_mib)
    return Recommendation(tolerance, chosen.number, chosen.text, chosen.recipe)
