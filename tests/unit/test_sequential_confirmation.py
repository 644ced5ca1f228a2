"""Sequential confirmation (issue 25, item 4): rounds that stop once the decision is settled, the
coverage that leaves, and the processes a confirmed answer costs. The demo study
(tests/support/demo_study.py: trial 3 at 6x the baseline, trial 2 at 3x) is confirmed with fake
runners whose throughputs are set per round; nothing is trained."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console

from autotune.analysis import sequential
from autotune.analysis.attribution import Attribution
from autotune.analysis.head_to_head import Candidate, Confirmation
from autotune.config import RunSettings, TrialConfig
from autotune.measure import Estimate
from autotune.store.result import RunResult
from autotune.study import load_study
from autotune.views.terminal import attribution_table, confirmation_table
from tests.support.demo_study import build_demo_study, fake_runner

BASE = TrialConfig.baseline(32)
#: The demo's two candidates: trial 3 (bs=64) and trial 2 (bs=32), both bfloat16 with XLA.
WINNER = TrialConfig(batch_size=64, precision="mixed_bfloat16", jit_compile=True)
RUNNER_UP = TrialConfig(batch_size=32, precision="mixed_bfloat16", jit_compile=True)

#: factor(config, its n-th throughput run, from 1) -> what its fake samples/s are multiplied by.
Factor = Callable[[TrialConfig, int], float]


class Runner:
    """:func:`fake_runner`, its throughputs scaled by ``factor``; counts every run."""

    def __init__(self, factor: Factor = lambda config, n: 1.0) -> None:
        self.factor = factor
        self.calls: list[tuple[TrialConfig, RunSettings]] = []

    def __call__(
        self, reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
    ) -> RunResult:
        self.calls.append((config, settings))
        result = fake_runner(reference, config, settings, log_dir)
        if result.throughput is None:
            return result
        n = sum(1 for c, s in self.calls if c == config and s.measure_throughput)
        speed = result.throughput.median * self.factor(config, n)
        estimate = Estimate(median=speed, low=speed, high=speed, confidence=0.95, n=7)
        return dataclasses.replace(result, throughput=estimate)

    def curve_runs(self) -> list[int]:
        return sorted(c.batch_size for c, s in self.calls if s.curve)


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_study(tmp_path_factory.mktemp("demo")).folder


def confirm(demo_folder: Path, tmp_path: Path, runner: Runner, **plan: int) -> Confirmation:
    """The demo study (a fresh copy) confirmed with ``runner``."""
    import shutil

    shutil.copy(demo_folder / "study.db", tmp_path / "study.db")
    study = load_study(f"sqlite:///{tmp_path / 'study.db'}", runner=runner)
    confirmation = study.confirm(**plan)
    assert confirmation is not None and confirmation.complete
    return confirmation


def by_trial(confirmation: Confirmation) -> dict[int, Candidate]:
    return {c.trial: c for c in confirmation.candidates}


# --------------------------------------------------------------------------------------------
# The statistics of the sequential rule
# --------------------------------------------------------------------------------------------


def test_at_most_six_rounds_may_stop_at_five_and_say_so():
    assert sequential.first_look(6) == 5
    assert sequential.false_pass_bound(6, 5) == pytest.approx(2**-5)
    assert sequential.one_sided_coverage(6) == pytest.approx(1 - 2**-5)  # 96.9%
    assert sequential.one_sided_coverage(6, sequential=False) == pytest.approx(1 - 2**-6)
    # Fewer rounds than the first look allows decide at the last one only.
    assert sequential.first_look(4) == 4
    assert sequential.one_sided_coverage(4) == pytest.approx(1 - 2**-4)
    # Every maximum keeps the target, however many looks it has.
    assert all(sequential.one_sided_coverage(r) >= 0.95 for r in range(5, 31))


def test_the_bound_holds_for_a_candidate_no_faster_than_the_baseline():
    # Ratios symmetric around 1, fed round by round until the verdict is settled.
    rng = random.Random(25)
    passed = 0
    for _ in range(20_000):
        ratios: list[float] = []
        while not ratios or sequential.open_verdict(ratios, 6):
            ratios.append(rng.lognormvariate(0.0, 0.1))
        passed += sequential.passes(ratios, 6)
    assert passed / 20_000 == pytest.approx(2**-5, abs=0.005)
    assert passed / 20_000 <= sequential.false_pass_bound(6, 5) + 0.005


def test_a_ratio_at_or_below_one_settles_six_rounds_but_not_ten():
    assert not sequential.can_pass([1.3, 1.0], 6)  # [min, max] can no longer clear 1
    assert sequential.can_pass([1.3, 1.0], 10)  # 10 rounds allow one ratio <= 1 (x_(2) > 1)
    assert sequential.passes([1.2] * 5, 6) and not sequential.passes([1.2] * 4, 6)
    assert sequential.median_bounds([1.0, 2.0, 3.0], 5, running=True) == (1.0, 3.0)
    assert sequential.median_bounds([1.0, 2.0, 3.0], 5, running=False) == (2.0, 2.0)


def test_a_marginal_winner_of_ten_rounds_runs_until_it_passes():
    ratios = [1.1, 0.98, 1.1, 1.12, 1.05, 1.08, 1.06, 1.09, 1.07]
    base = [1000.0] * 10

    def after(n: int) -> Confirmation:
        c = Candidate(1, RUNNER_UP, tuple(1000 * r for r in ratios[:n]), {0: 0.1, 1: 0.1, 2: 0.1})
        return Confirmation(10, (0, 1, 2), BASE, tuple(base[:n]), (c,), attribution_done=True)

    assert all(after(n).active() == (1,) for n in range(1, 9))  # one dip: 5-8 rounds cannot pass
    assert after(9).active() == () and after(9).rounds_done
    best = after(9).recommended(1.5)
    assert best is not None and best.ratio is not None and best.ratio.n == 9


# --------------------------------------------------------------------------------------------
# Confirmations run with fake runners
# --------------------------------------------------------------------------------------------


def test_a_clear_winner_stops_early_with_fewer_processes(demo_folder, tmp_path):
    runner = Runner()

    confirmation = confirm(demo_folder, tmp_path, runner, top=3, rounds=6)

    assert confirmation.completed_rounds == 5  # every ratio above 1 at the first look, ranked apart
    assert [len(c.samples_per_second) for c in confirmation.candidates] == [5, 5]
    assert runner.curve_runs() == [64, 64]  # trial 2 is slower: its curves could change nothing
    # 5 x (2 candidates + baseline) + 2 curves + 5 x (winner + 2 reversions: the third, the
    # batch size, is trial 2, measured in the same rounds), all counted; fixed rounds took
    # 6 x 3 + 4 + 6 x 4 = 46
    assert confirmation.processes == len(runner.calls) == 15 + 2 + 15
    best = confirmation.recommended(1.5)
    assert best is not None and best.candidate.trial == 3
    assert "5 of at most 6 rounds head to head; faster beyond noise at 96.9% one-sided" in (
        confirmation.summary(1.5)
    )


def test_a_marginal_winner_runs_all_rounds(demo_folder, tmp_path):
    # Trial 2 as fast as trial 3 (0.1% slower, both +/- 2% per round): which one is faster
    # stays open to the last round.
    def close(config: TrialConfig, n: int) -> float:
        wobble = 1.02 if n % 2 else 0.98
        if config == RUNNER_UP:
            return 1.998 * wobble
        return wobble if config == WINNER else 1.0

    runner = Runner(close)

    confirmation = confirm(demo_folder, tmp_path, runner, top=3, rounds=6)

    assert confirmation.completed_rounds == 6
    assert [len(c.samples_per_second) for c in confirmation.candidates] == [6, 6]
    best = confirmation.recommended(1.5)
    assert best is not None and best.candidate.trial == 3
    assert "6 rounds head to head" in confirmation.summary(1.5)


def test_a_candidate_that_can_no_longer_win_is_dropped(demo_folder, tmp_path):
    # Trial 2 slower than the baseline in round 2: it can never be faster beyond noise.
    def dips(config: TrialConfig, n: int) -> float:
        return 0.3 if config == RUNNER_UP and n == 2 else 1.0

    runner = Runner(dips)

    confirmation = confirm(demo_folder, tmp_path, runner, top=3, rounds=6)

    assert len(by_trial(confirmation)[2].samples_per_second) == 2
    assert runner.curve_runs() == [64, 64]  # no curve for a candidate that cannot win
    verdict = confirmation.verdict(by_trial(confirmation)[2], 1.5)
    assert verdict.text == "not faster beyond noise (stopped after 2 of 6)"
    assert not verdict.eligible
    assert confirmation.completed_rounds == 5  # trial 3 goes on to its first look
    best = confirmation.recommended(1.5)
    assert best is not None and best.candidate.trial == 3


def test_nothing_faster_stops_after_one_round(demo_folder, tmp_path):
    runner = Runner(lambda config, n: 0.1 if config in (WINNER, RUNNER_UP) else 1.0)

    confirmation = confirm(demo_folder, tmp_path, runner, top=3, rounds=6)

    assert confirmation.completed_rounds == 1
    # trial 3's seed curves first (its search fidelity 1.2 lies within the seeds' noise of the
    # tolerance 1.5), then one round; no curve after it, no attribution
    assert confirmation.processes == len(runner.calls) == 2 + 3
    assert [s.seed for c, s in runner.calls[:2] if s.curve and c == WINNER] == [1, 2]
    assert confirmation.recommended(1.5) is None
    assert confirmation.summary(1.5) == (
        "no configuration beat the baseline beyond noise (2 candidate(s), 1 of at most 6 "
        "rounds head to head); keep the baseline"
    )


def test_a_setting_within_noise_is_attributed_in_one_round(demo_folder, tmp_path):
    # XLA does nothing for trial 3 here: reverting it is as fast in the first round.
    def no_xla(config: TrialConfig, n: int) -> float:
        keeps = config.batch_size == 64 and config.precision == "mixed_bfloat16"
        return 1.5 if keeps and not config.jit_compile else 1.0

    runner = Runner(no_xla)

    confirmation = confirm(demo_folder, tmp_path, runner, top=1, rounds=6)

    attribution = confirmation.attribution
    assert attribution is not None and attribution.rounds == 6
    assert {s: len(v) for s, v in attribution.reverted_samples_per_second.items()} == {
        "batch_size": 5, "precision": 5, "jit_compile": 1,
    }  # fmt: skip
    assert attribution.within_noise() == ("jit_compile",)
    minimal = confirmation.minimal
    assert minimal is not None and not minimal.config.jit_compile
    assert len(minimal.samples_per_second) == 5  # confirmed against the baseline, sequentially
    best = confirmation.recommended(1.5)
    assert best is not None and best.candidate is minimal
    # 5 x 2 rounds, 2 curves, 5 + 5 + 5 + 1 attribution runs, 5 x 2 minimal rounds and its
    # 3 curves (XLA changes the curve)
    assert confirmation.processes == len(runner.calls) == 10 + 2 + 16 + 10 + 3


# --------------------------------------------------------------------------------------------
# Confirmations stored before (format 1) still load and render
# --------------------------------------------------------------------------------------------


def format_1() -> dict:
    """A confirmation as format 1 stored it: 6 fixed rounds of every candidate."""
    base = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0]
    fidelity = {"0": 0.4, "1": 0.5, "2": 0.6}
    return {
        "format": 1,
        "rounds": 6,
        "seeds": [0, 1, 2],
        "baseline_config": BASE.to_dict(),
        "baseline_samples_per_second": base,
        "candidates": [
            {
                "trial": 3,
                "config": WINNER.to_dict(),
                "samples_per_second": [2 * b for b in base],
                "fidelity": fidelity,
                "failure": None,
            },
            {
                "trial": 2,
                "config": RUNNER_UP.to_dict(),
                "samples_per_second": [0.9 * b for b in base[:5]] + [1100.0],
                "fidelity": fidelity,
                "failure": None,
            },
        ],
        "attribution": {
            "trial": 3,
            "settings": ["batch_size", "precision", "jit_compile"],
            "winner_samples_per_second": [2000.0] * 6,
            "reverted_samples_per_second": {
                "batch_size": [1000.0] * 6,
                "precision": [1000.0] * 6,
                "jit_compile": [1300.0] * 6,
            },
            "failed": [],
        },
        "minimal": None,
        "minimal_baseline_samples_per_second": [],
        "attribution_done": True,
    }


def test_a_format_1_confirmation_loads_and_renders_as_before():
    confirmation = Confirmation.from_dict(format_1())

    assert not confirmation.sequential and confirmation.processes is None
    assert confirmation.attribution is not None and confirmation.attribution.rounds is None
    assert confirmation.complete and confirmation.rounds_done
    # counted from its measurements: 6 x 3 rounds, 4 curves, 6 x 4 attribution runs
    assert confirmation.process_count == 18 + 4 + 24
    assert [v.text for v in confirmation.verdicts(1.5)] == [
        "faster beyond noise",
        "within noise of the baseline",
    ]
    assert confirmation.summary(1.5).startswith(
        "trial 3: 2.00x the baseline (95% CI 2.00-2.00, 6 rounds head to head; faster beyond "
        "noise at 98.4% one-sided)"
    )
    console = Console(width=200, record=True)
    console.print(confirmation_table(confirmation, 1.5))
    table = attribution_table(confirmation)
    assert table is not None
    console.print(table)
    shown = console.export_text()
    assert (
        "Confirmation: 6 of at most 6 rounds head to head, seeds [0, 1, 2]; 46 processes" in shown
    )
    assert shown.count("carries the speed-up: kept") == 3
    again = Confirmation.from_dict(confirmation.to_dict())
    assert again == confirmation  # stored again, it stays a format-1 confirmation
    assert Attribution.from_dict(format_1()["attribution"]) == confirmation.attribution
