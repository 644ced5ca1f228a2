"""Seed curves in the confirmation (issue 25: skip what is already known, measure no candidate
that cannot win).

A candidate that differs from the baseline only in settings that do not change what the model
learns (steps per execution, prefetch, map parallelism) trains the baseline's very curve with
every seed, and one that differs so from a candidate already curved trains that one's curve: the
confirmation takes those fidelities instead of starting a process per seed. A candidate whose
search fidelity lies within the seeds' noise of the tolerance has its seeds curved before the
first round, and one over the tolerance on them is timed in no round. Fake runners; nothing is
trained."""

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


# --------------------------------------------------------------------------------------------
# Seed curves first for a candidate near the tolerance
# --------------------------------------------------------------------------------------------

#: The demo study's candidates (tests/support/demo_study.py): trial 3 (6x, search fidelity 1.2,
#: within the seeds' noise of the tolerance 1.5) and trial 2 (3x, fidelity 0.3).
WINNER = TrialConfig(batch_size=64, precision="mixed_bfloat16", jit_compile=True)
RUNNER_UP = TrialConfig(batch_size=32, precision="mixed_bfloat16", jit_compile=True)


class DriftingSeeds:
    """:func:`fake_runner` whose curves of ``drifting`` with seeds 1 and 2 lie 10% above the
    baseline's (over the tolerance); records every run as (config, curve seed or None)."""

    def __init__(self, *drifting: TrialConfig) -> None:
        self.drifting = drifting
        self.runs: list[tuple[TrialConfig, int | None]] = []

    def __call__(
        self, reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
    ) -> RunResult:
        self.runs.append((config, settings.seed if settings.curve else None))
        result = fake_runner(reference, config, settings, log_dir)
        if config in self.drifting and settings.curve and settings.seed in (1, 2):
            curve = [dataclasses.replace(p, val_loss=p.val_loss * 1.1) for p in result.curve]
            return dataclasses.replace(result, curve=curve)
        return result


def _demo_confirmation(
    tmp_path: Path, runner: DriftingSeeds, top: int = 3
) -> tuple[Confirmation, list[str]]:
    from autotune.study import load_study
    from tests.support.demo_study import build_demo_study

    demo = build_demo_study(tmp_path / "demo")
    study = load_study(demo.storage, runner=runner)
    runner.runs.clear()
    lines: list[str] = []
    confirmation = study.confirm(top=top, rounds=6, on_progress=lines.append)
    assert confirmation is not None and confirmation.complete
    return confirmation, lines


def test_a_candidate_near_the_tolerance_is_curved_first_and_dropped_before_any_round(
    tmp_path: Path,
) -> None:
    runner = DriftingSeeds(WINNER)

    confirmation, lines = _demo_confirmation(tmp_path, runner)

    assert runner.runs[:2] == [(WINNER, 1), (WINNER, 2)]  # before the first round
    winner, runner_up = (next(c for c in confirmation.candidates if c.trial == t) for t in (3, 2))
    assert winner.samples_per_second == ()  # no round timed it: it cannot win
    assert all(config != WINNER for config, seed in runner.runs if seed is None)
    assert confirmation.verdict(winner, 1.5).text == "over the fidelity tolerance 1.5"
    best = confirmation.recommended(1.5)
    assert best is not None and best.candidate.trial == 2
    assert len(runner_up.samples_per_second) == confirmation.completed_rounds == 5
    # trial 2's 0.3 is not near: with the demo's margin 1.5 its seeds could at most bring its
    # mean to (0.3 + 1.8 + 1.8) / 3 = 1.3, within the tolerance, so its curves follow the rounds
    assert [line.split(":")[0] for line in lines[:3]] == [
        "trial 3 seed 1", "trial 3 seed 2", "round 1/6",
    ]  # fmt: skip
    heads = [line.split(":")[0] for line in lines]
    assert heads.index("trial 2 seed 1") > heads.index("round 5/6")  # the winner's, after them
    assert (RUNNER_UP, 1) in runner.runs and (RUNNER_UP, 2) in runner.runs


def test_no_round_runs_when_every_candidate_is_out_before_it(tmp_path: Path) -> None:
    runner = DriftingSeeds(WINNER)

    confirmation, _ = _demo_confirmation(tmp_path, runner, top=1)

    assert runner.runs == [(WINNER, 1), (WINNER, 2)]
    assert confirmation.completed_rounds == 0 and confirmation.processes == 2
    assert confirmation.recommended(1.5) is None
    assert confirmation.summary(1.5).startswith("no candidate could win (1 candidate(s)")


def test_a_stored_confirmation_without_rounds_is_complete_when_no_candidate_is_left() -> None:
    over = {0: 1.2, 1: 2.4, 2: 2.4}
    candidates = (Candidate(3, WINNER, (), over), Candidate(2, RUNNER_UP, (), {0: 1.4, 1: 2, 2: 2}))
    confirmation = Confirmation(
        6, (0, 1, 2), BASE, (), candidates, attribution_done=True, curve_tolerance=1.5
    )

    assert confirmation.first_curve(1.0) is None and confirmation.active() == ()
    assert confirmation.rounds_done and confirmation.complete
    assert confirmation.recommended(1.5) is None
    assert confirmation.summary(1.5) == (
        "no candidate could win (2 candidate(s), each over the fidelity tolerance on its seeds "
        "or failed before the first round); keep the baseline"
    )
    assert Confirmation.from_dict(confirmation.to_dict()) == confirmation


@pytest.mark.parametrize(
    ("search_fidelity", "first"),
    [
        # tolerance 1.5, margin 1.0: seeds 1 and 2 could be up to 1.0 above seed 0's fidelity
        (0.9, (3, 1)),  # a mean up to (0.9 + 1.9 + 1.9) / 3 = 1.57: over, its seeds first
        (0.8, None),  # a mean up to 1.47: within the tolerance whatever the seeds, rounds decide
        (0.1, None),
    ],
)
def test_only_a_candidate_whose_seed_mean_could_be_over_the_tolerance_is_curved_first(
    search_fidelity: float, first: tuple[int, int] | None
) -> None:
    fastest = Candidate(3, WINNER, (), {0: search_fidelity})
    confirmation = Confirmation(
        6, (0, 1, 2), BASE, (), (fastest, Candidate(2, RUNNER_UP, (), {0: 0.2})),
        curve_tolerance=1.5,
    )  # fmt: skip

    assert confirmation.first_curve(1.0) == first
    # once a round ran, the rounds decide which curves are trained
    begun = dataclasses.replace(
        confirmation,
        baseline_samples_per_second=(1000.0,),
        candidates=tuple(dataclasses.replace(c, samples_per_second=(3000.0,))
                         for c in confirmation.candidates),
    )  # fmt: skip
    assert begun.first_curve(1.0) is None


def test_a_comfortable_candidate_first_does_not_spare_the_near_ones_their_curves() -> None:
    # the digits CNN's case: the search ranked a curve-neutral candidate (fidelity 0) first, the
    # rounds then found two near the tolerance faster, and their seeds put both over it
    comfortable = Candidate(5, WINNER, (), {0: 0.0})
    near = Candidate(14, RUNNER_UP, (), {0: 1.38})
    nearer = Candidate(8, RUNNER_UP, (), {0: 1.32, 1: 1.93})
    confirmation = Confirmation(
        6, (0, 1, 2), BASE, (), (comfortable, near, nearer), curve_tolerance=1.5
    )

    assert confirmation.first_curve(1.33) == (14, 1)
    near = dataclasses.replace(near, fidelity={0: 1.38, 1: 1.93, 2: 2.59})
    confirmation = dataclasses.replace(confirmation, candidates=(comfortable, near, nearer))
    assert confirmation.first_curve(1.33) == (8, 2)
    nearer = dataclasses.replace(nearer, fidelity={0: 1.32, 1: 1.93, 2: 2.52})
    confirmation = dataclasses.replace(confirmation, candidates=(comfortable, near, nearer))
    assert confirmation.first_curve(1.33) is None
    assert confirmation.active() == (5,)  # the rounds time the one that can win, alone


def test_a_candidate_over_the_tolerance_on_its_seeds_hands_the_first_curves_on() -> None:
    out = Candidate(3, WINNER, (), {0: 1.2, 1: 2.0, 2: 2.2})
    near = Candidate(2, RUNNER_UP, (), {0: 1.2, 1: 1.3})  # a mean up to (1.2 + 1.3 + 2.2) / 3
    confirmation = Confirmation(6, (0, 1, 2), BASE, (), (out, near), curve_tolerance=1.5)

    assert confirmation.over_tolerance(out) and not confirmation.over_tolerance(near)
    assert confirmation.first_curve(1.0) == (2, 2)
    assert confirmation.active() == (2,)  # the one over the tolerance is timed in no round


def test_a_minimal_recipe_over_the_tolerance_on_its_seeds_is_timed_in_no_round() -> None:
    from autotune.study.confirming import Confirmer

    dropped = Candidate(3, WINNER, (), {0: 1.2, 1: 2.0, 2: 2.2})  # a candidate dropped before
    confirmation = Confirmation(6, (0, 1, 2), BASE, (), (dropped,), curve_tolerance=1.5)

    assert not Confirmer._measuring_minimal(confirmation, dropped)
    within = dataclasses.replace(dropped, fidelity={0: 1.2, 1: 1.0, 2: 1.1})
    assert Confirmer._measuring_minimal(confirmation, within)
