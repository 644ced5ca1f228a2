"""The one rule of what a study recommends and with which figures
(:mod:`autotune.store.recommendation`), on the demo study's records with hand-made
confirmations: noisy rounds, a minimal recipe paired with its own baseline rounds, a confirmed
baseline and a confirmed winner over the memory limit. Nothing is run."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from autotune.analysis.attribution import Attribution
from autotune.analysis.head_to_head import Candidate, Confirmation, paired_ratio
from autotune.store.recommendation import UNCONFIRMED, figures_of, recommend
from autotune.store.records import StudyRecords
from autotune.views.report import header_info, recommendation_info

SEEDS = (0, 1, 2)
#: The baseline's samples/s in six confirmation rounds: not the 1,000 of the study's start.
BASELINE_ROUNDS = (2400.0, 2600.0, 2500.0, 2300.0, 2700.0, 2450.0)
#: Trial 3's samples/s in the same rounds (its search measured 6,000).
WINNER_ROUNDS = (5000.0, 5900.0, 5600.0, 5200.0, 6100.0, 5400.0)


def confirmed(records: StudyRecords, **changes: object) -> StudyRecords:
    """``records`` with a complete confirmation of trial 3 (fidelity 1.2 on every seed)."""
    winner = records.trial(3)
    assert winner.config is not None and records.baseline.config is not None
    confirmation = Confirmation(
        rounds=len(BASELINE_ROUNDS),
        seeds=SEEDS,
        baseline_config=records.baseline.config,
        baseline_samples_per_second=BASELINE_ROUNDS,
        candidates=(Candidate(3, winner.config, WINNER_ROUNDS, dict.fromkeys(SEEDS, 1.2)),),
        attribution_done=True,
    )
    return dataclasses.replace(records, confirmation=dataclasses.replace(confirmation, **changes))


def test_a_confirmed_winner_carries_the_rounds_figures_not_the_searchs(
    records: StudyRecords,
) -> None:
    study = confirmed(records)
    ratio = paired_ratio(WINNER_ROUNDS, BASELINE_ROUNDS)

    chosen = recommend(study)

    assert chosen.number == 3 and chosen.confirmed
    figures = chosen.figures
    assert figures.speedup == pytest.approx(ratio.median) == chosen.recipe.speedup
    assert figures.ratio == ratio and figures.rounds == len(BASELINE_ROUNDS)
    assert figures.throughput is not None and figures.baseline is not None
    assert figures.throughput.median == statistics.median(WINNER_ROUNDS)
    assert figures.baseline.median == statistics.median(BASELINE_ROUNDS)
    assert figures.baseline.n == len(BASELINE_ROUNDS)
    # the recipe carries the same figures, and the search's only as provenance
    assert chosen.recipe.throughput == figures.throughput.to_dict()
    assert chosen.recipe.baseline_throughput == figures.baseline.to_dict()
    details = chosen.recipe.confirmation
    assert details is not None
    row = records.trial(3)
    assert row.throughput is not None and records.baseline.throughput is not None
    assert details["search_throughput"]["median"] == row.throughput.median
    assert details["search_baseline_throughput"]["median"] == records.baseline.throughput.median
    assert figures_of(chosen.recipe) == figures
    assert f"{ratio.median:.2f}x" in chosen.text and UNCONFIRMED not in chosen.text
    assert f"{figures.baseline.median:,.0f} samples/s (medians of the same rounds)" in chosen.text


def test_records_best_the_report_header_and_recommendation_info_are_recommend(
    records: StudyRecords,
) -> None:
    for study in (records, confirmed(records)):
        chosen = recommend(study)
        best = study.best()
        assert dataclasses.replace(best, created="") == dataclasses.replace(
            chosen.recipe, created=""
        )
        assert dict(header_info(study).facts)["recommendation"] == chosen.text
        info = recommendation_info(study, study.tolerance)
        assert (info.number, info.text) == (chosen.number, chosen.text)


def test_an_unconfirmed_recommendation_says_its_figures_are_the_searchs(
    records: StudyRecords,
) -> None:
    chosen = recommend(records)
    row = records.trial(3)
    assert row.throughput is not None and records.baseline.throughput is not None

    assert chosen.number == 3 and not chosen.confirmed
    assert chosen.recipe.confirmation is None
    assert chosen.figures.ratio is None and chosen.figures.rounds is None
    assert chosen.figures.speedup == pytest.approx(
        row.throughput.median / records.baseline.throughput.median
    )
    assert chosen.figures.speedup_text().endswith(f"({UNCONFIRMED})")
    assert chosen.figures.baseline_text().endswith("measured at the study's start")
    assert chosen.text.endswith(f"({UNCONFIRMED}).")


def test_a_minimal_recipe_is_paired_with_its_own_baseline_rounds(records: StudyRecords) -> None:
    winner = records.trial(3)
    assert winner.config is not None
    minimal_config = dataclasses.replace(winner.config, batch_size=32)
    minimal_rounds = (2900.0, 3100.0, 3000.0, 2950.0, 3050.0, 3000.0)
    minimal_baseline = (2000.0, 2100.0, 1900.0, 2000.0, 2050.0, 1950.0)
    attribution = Attribution(
        trial=3,
        settings=("batch_size", "precision", "jit_compile"),
        winner_samples_per_second=WINNER_ROUNDS,
        reverted_samples_per_second={
            "batch_size": WINNER_ROUNDS,  # within noise: goes back to the baseline's value
            "precision": tuple(v / 2 for v in WINNER_ROUNDS),
            "jit_compile": tuple(v / 1.5 for v in WINNER_ROUNDS),
        },
    )
    study = confirmed(
        records,
        attribution=attribution,
        minimal=Candidate(3, minimal_config, minimal_rounds, dict.fromkeys(SEEDS, 0.3)),
        minimal_baseline_samples_per_second=minimal_baseline,
    )

    chosen = recommend(study)

    assert chosen.recipe.config == minimal_config
    assert chosen.figures.throughput is not None and chosen.figures.baseline is not None
    assert chosen.figures.throughput.median == statistics.median(minimal_rounds)
    assert chosen.figures.baseline.median == statistics.median(minimal_baseline)
    assert chosen.figures.speedup == pytest.approx(
        paired_ratio(minimal_rounds, minimal_baseline).median
    )
    assert chosen.text.startswith("Trial 3 (minimal recipe): bs=32 mixed_bfloat16 xla")


def test_a_confirmed_baseline_shows_the_rounds_baseline(records: StudyRecords) -> None:
    study = confirmed(records, candidates=(), baseline_samples_per_second=())  # no rounds
    slower = confirmed(
        records,
        candidates=(
            Candidate(
                3,
                records.trial(3).config,  # type: ignore[arg-type]
                tuple(v * 1.02 for v in BASELINE_ROUNDS[:3]) + BASELINE_ROUNDS[3:],
                dict.fromkeys(SEEDS, 1.2),
            ),
        ),
    )

    within_noise = recommend(slower)
    nothing = recommend(study)

    assert within_noise.number is None and within_noise.confirmed
    assert within_noise.figures.speedup_text() == "1.00x (the baseline itself)"
    assert within_noise.figures.baseline is not None
    assert within_noise.figures.baseline.median == statistics.median(BASELINE_ROUNDS)
    assert within_noise.text.startswith("Keep the baseline (bs=32 float32")
    assert "samples/s over the confirmation's 6 rounds): confirmed: no configuration" in (
        within_noise.text
    )
    assert nothing.number is None and not nothing.confirmed  # the start's figure, said so
    assert nothing.figures.baseline_text().endswith("measured at the study's start")


def test_a_confirmed_winner_over_the_memory_limit_leaves_an_unconfirmed_recommendation(
    records: StudyRecords,
) -> None:
    study = confirmed(records)
    peaks = {r.number: r.peak_memory_mib for r in records.trials if r.peak_memory_mib}
    assert peaks[3] > peaks[2]
    limit = (peaks[3] + peaks[2]) / 2

    chosen = recommend(study, max_memory_mib=limit)

    assert chosen.number == 2 and not chosen.confirmed
    assert chosen.text.endswith(
        f"({UNCONFIRMED}: the confirmed winner needs more than {limit:g} MiB)."
    )
