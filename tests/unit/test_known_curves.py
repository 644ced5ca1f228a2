"""Curves the confirmation knows without training them (issue 25: skip what is already known).

A candidate that differs from the baseline only in settings that do not change what the model
learns (steps per execution, prefetch, map parallelism) trains the baseline's very curve with
every seed, and one that differs so from a candidate already curved trains that one's curve: the
confirmation takes those fidelities instead of starting a process per seed. Fake runners; nothing
is trained."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from autotune.analysis.head_to_head import Candidate, Confirmation
from autotune.config import RunSettings, TrialConfig
from autotune.measure import Estimate
from autotune.space import SearchSpace, choices
from autotune.store.result import RunResult
from tests.support.demo_study import fake_runner, fake_study

BASE = TrialConfig.baseline(32)
#: Only steps per execution differs from the baseline: the baseline's curve, 1.5x its speed.
CALLS = dataclasses.replace(BASE, steps_per_execution=64)
#: bfloat16 at the base batch: a curve of its own (the fake drifts it a little), 2x.
BF16 = TrialConfig(batch_size=32, precision="mixed_bfloat16")
#: bfloat16 with 64 steps per call: BF16's curve, 3x.
BF16_CALLS = dataclasses.replace(BF16, steps_per_execution=64)

SPACE = SearchSpace(
    "known-curves",
    {
        "precision": choices("float32", "mixed_bfloat16"),
        "batch_size": choices(32, 64),
        "steps_per_execution": choices(1, 64),
    },
)


class CountingRunner:
    """:func:`fake_runner`, 1.5x faster at 64 steps per call (the fake ignores the setting
    otherwise); records the configuration of every curve it trains."""

    def __init__(self) -> None:
        self.curves: list[tuple[TrialConfig, int]] = []

    def __call__(
        self, reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
    ) -> RunResult:
        if settings.curve:
            self.curves.append((config, settings.seed))
        result = fake_runner(reference, config, settings, log_dir)
        if result.throughput is None or config.steps_per_execution == 1:
            return result
        speed = result.throughput.median * 1.5
        return dataclasses.replace(result, throughput=Estimate(speed, speed, speed, 0.95, 7))


def test_a_candidate_that_trains_the_baselines_curve_is_judged_on_it_without_a_process(
    tmp_path: Path,
) -> None:
    runner = CountingRunner()
    study = fake_study(tmp_path, runner, SPACE)
    study.optuna.enqueue_trial(
        {"precision": "float32", "batch_size": 32, "steps_per_execution": 64}
    )
    study.optimize(n_trials=1)
    lines: list[str] = []
    runner.curves.clear()  # the baseline's seeds and the search's own curves

    confirmation = study.confirm(top=3, rounds=6, on_progress=lines.append)

    assert confirmation is not None and confirmation.complete
    (candidate,) = confirmation.candidates
    assert candidate.config == CALLS
    assert runner.curves == []  # no seed curve trained: it is the baseline's own
    assert candidate.fidelity == {0: 0.0, 1: 0.0, 2: 0.0}
    assert (
        "trial 0 seed 1: fidelity 0.00 (the curve of the baseline: they differ only in settings "
        "that do not change what the model learns)"
    ) in lines
    best = confirmation.recommended(study.tolerance)
    assert best is not None and best.candidate.trial == 0
    # every process counted is a throughput round: 5 rounds of the candidate and the baseline
    assert confirmation.processes == 2 * confirmation.completed_rounds


def test_a_candidate_with_its_own_curve_still_trains_it(tmp_path: Path) -> None:
    runner = CountingRunner()
    study = fake_study(tmp_path, runner, SPACE)
    study.optuna.enqueue_trial(
        {"precision": "mixed_bfloat16", "batch_size": 32, "steps_per_execution": 1}
    )
    study.optimize(n_trials=1)
    runner.curves.clear()

    confirmation = study.confirm(top=3, rounds=6)

    assert confirmation is not None and confirmation.complete
    assert runner.curves == [(BF16, 1), (BF16, 2)]
    (candidate,) = confirmation.candidates
    assert set(candidate.fidelity) == {0, 1, 2} and candidate.fidelity[1] > 0


def _candidate(trial: int, config: TrialConfig, fidelity: dict[int, float]) -> Candidate:
    return Candidate(trial, config, (3000.0,), fidelity)


@pytest.mark.parametrize(
    ("config", "known"),
    [
        (CALLS, ("the baseline", None)),  # the baseline's curve against itself
        (BF16_CALLS, ("trial 2", 0.7)),  # trial 2's curve, its fidelity for seed 1
        (dataclasses.replace(BF16, batch_size=64), None),  # a curve of its own
    ],
)
def test_the_curve_known_for_a_candidate(
    config: TrialConfig, known: tuple[str, float | None] | None
) -> None:
    curved = _candidate(2, BF16, {0: 0.4, 1: 0.7})
    asked = _candidate(5, config, {0: 0.4})
    confirmation = Confirmation(6, (0, 1, 2), BASE, (1000.0,), (asked, curved))

    assert confirmation.known_curve(asked, 1) == known
    # a seed no candidate of that curve has measured is not known from it
    from_baseline = ("the baseline", None) if config == CALLS else None
    assert confirmation.known_curve(asked, 2) == from_baseline
    # a candidate is never its own twin
    assert confirmation.known_curve(curved, 2) is None
