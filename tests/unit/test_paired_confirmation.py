"""Paired confirmation rounds (issue 25, item 4): a candidate that shares what a process fixes
with the baseline is timed beside it in one process per round, and its ratios use the baseline
speeds measured beside it. The demo study (tests/support/demo_study.py: trial 3 at 6x the
baseline, trial 2 at 3x) is confirmed with fake runners; nothing is trained."""

from __future__ import annotations

import dataclasses
import shutil
import statistics
from collections.abc import Sequence
from pathlib import Path

import pytest

import autotune.study.study
from autotune.analysis.head_to_head import Candidate, Confirmation
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import TrialFailure
from autotune.measure import Estimate
from autotune.store.result import RunResult
from autotune.study import load_study, runners
from autotune.views.terminal import attribution_table, confirmation_table
from tests.support.demo_study import build_demo_study, fake_runner

BASE = TrialConfig.baseline(32)
WINNER = TrialConfig(batch_size=64, precision="mixed_bfloat16", jit_compile=True)  # trial 3
RUNNER_UP = TrialConfig(batch_size=32, precision="mixed_bfloat16", jit_compile=True)  # trial 2


def _scaled(result: RunResult, factor: float) -> RunResult:
    assert result.throughput is not None
    speed = result.throughput.median * factor
    return dataclasses.replace(result, throughput=Estimate(speed, speed, speed, 0.95, 7))


class Runners:
    """A fake runner and pair runner: every run recorded; the baseline timed beside a candidate
    runs at ``beside[candidate]`` times its own speed (a pair that sees its own baseline), the
    winner timed beside a reversion in an attribution round at ``winner_beside[reversion]``."""

    def __init__(
        self,
        beside: dict[TrialConfig, float] | None = None,
        winner_beside: dict[TrialConfig, float] | None = None,
    ) -> None:
        self.beside = beside or {}
        self.winner_beside = winner_beside or {}
        self.alone: list[TrialConfig] = []
        self.pairs: list[tuple[TrialConfig, ...]] = []
        self.fail_pairs_of: set[TrialConfig] = set()
        self.fail_groups = False  # a process of more than two models fails (out of memory)
        self.scales: dict[TrialConfig, list[float]] = {}  # a config's speed, run by run
        self._runs_of: dict[TrialConfig, int] = {}

    def _fake(
        self, reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
    ) -> RunResult:
        result = fake_runner(reference, config, settings, log_dir)
        scales = self.scales.get(config)
        if not scales or not settings.measure_throughput:
            return result
        k = self._runs_of[config] = self._runs_of.get(config, -1) + 1
        return _scaled(result, scales[k % len(scales)])

    def run(
        self, reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
    ) -> RunResult:
        if settings.measure_throughput:
            self.alone.append(config)
        return self._fake(reference, config, settings, log_dir)

    def pair(
        self,
        reference: str,
        configs: Sequence[TrialConfig],
        settings: RunSettings,
        log_dir: Path | None,
    ) -> list[RunResult]:
        """Their results in order: one of them is the reference (the baseline, else the
        winner), set up first or last; the process fails when any other is in
        ``fail_pairs_of``."""
        self.pairs.append(tuple(configs))
        own = BASE if BASE in configs else WINNER
        others = [c for c in configs if c != own]
        if set(others) & self.fail_pairs_of:
            raise TrialFailure("exception", "the fake pair failed")
        if self.fail_groups and len(configs) > 2:
            raise TrialFailure("oom", "the fake group ran out of memory")
        scales = self.beside if own == BASE else self.winner_beside
        factor = statistics.median(scales.get(c, 1) for c in others)  # one process for all
        return [
            _scaled(self._fake(reference, c, settings, log_dir), factor if c == own else 1)
            for c in configs
        ]

    def throughput_runs(self) -> int:
        return len(self.alone) + len(self.pairs)


@pytest.fixture(scope="module")
def demo_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_study(tmp_path_factory.mktemp("demo")).folder


def _study(demo_folder: Path, tmp_path: Path, fakes: Runners, paired: bool = True):  # type: ignore[no-untyped-def]
    shutil.copy(demo_folder / "study.db", tmp_path / "study.db")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    return load_study(url, runner=fakes.run, pair_runner=fakes.pair if paired else None)


def _confirm(demo_folder: Path, tmp_path: Path, fakes: Runners, **kwargs: object) -> Confirmation:
    study = _study(demo_folder, tmp_path, fakes)
    confirmation = study.confirm(top=3, rounds=6, **kwargs)
    assert confirmation is not None and confirmation.complete
    return confirmation


def _by_trial(confirmation: Confirmation) -> dict[int, Candidate]:
    return {c.trial: c for c in confirmation.candidates}


def test_a_paired_round_is_one_process_per_candidate_and_no_baseline_process(
    demo_folder: Path, tmp_path: Path
) -> None:
    fakes = Runners()

    confirmation = _confirm(demo_folder, tmp_path, fakes)

    rounds = confirmation.completed_rounds
    assert rounds == 5  # a clear winner: the first look
    # one process per round for both candidates and the baseline; who goes first alternates
    odd, even = (WINNER, RUNNER_UP, BASE), (BASE, RUNNER_UP, WINNER)
    assert fakes.pairs[:rounds] == [odd, even, odd, even, odd]
    assert BASE not in fakes.alone  # no round ran the baseline alone
    for candidate in confirmation.candidates:
        assert candidate.paired_rounds == len(candidate.samples_per_second) == rounds
        assert len(candidate.baseline_samples_per_second) == rounds
    assert "5 of at most 6 rounds head to head in one process each" in confirmation.summary(1.5)
    assert confirmation.paired
    title = confirmation_table(confirmation, 1.5).title
    assert str(title).startswith("Confirmation: 5 of at most 6 rounds head to head in one process")
    # Every process counted: the rounds' pairs, the curves, the attribution's processes and the
    # minimal recipe's (paired too) against 5 x 3 + ... unpaired.
    assert confirmation.processes == fakes.throughput_runs() + 2  # + the winner's two curves


def test_each_candidates_ratio_uses_the_baseline_measured_beside_it(
    demo_folder: Path, tmp_path: Path
) -> None:
    # The round's process of both candidates fails, so each is timed again beside the
    # baseline in a process of its own; the baseline beside trial 2 runs half as fast as beside
    # trial 3 (a process that slows both): trial 2's ratio must use that, not the other's.
    fakes = Runners(beside={RUNNER_UP: 0.5})
    fakes.fail_groups = True
    lines: list[str] = []

    confirmation = _confirm(demo_folder, tmp_path, fakes, on_progress=lines.append)

    first_round = [(WINNER, RUNNER_UP, BASE), (WINNER, BASE), (RUNNER_UP, BASE)]
    assert fakes.pairs[:3] == first_round  # the group, then each candidate on its own
    assert next(line for line in lines if line.startswith("round 1/6")) == (
        "round 1/6: 2 configurations beside the reference in one process failed (oom): each is "
        "timed again beside it in a process of its own"
    )
    assert all(c.failure is None for c in confirmation.candidates)

    runner_up = _by_trial(confirmation)[2]
    winner = _by_trial(confirmation)[3]
    assert statistics.median(confirmation.ratios(runner_up)) == pytest.approx(
        2 * statistics.median(confirmation.ratios(winner)) * 3 / 6, rel=0.02
    )  # 3x over a baseline at half speed: 6x, as fast as the winner over its own
    assert runner_up.baseline_samples_per_second == pytest.approx(
        [b / 2 for b in winner.baseline_samples_per_second], rel=0.02
    )
    # The round's baseline is the median of the speeds measured beside its candidates.
    first = [runner_up.baseline_samples_per_second[0], winner.baseline_samples_per_second[0]]
    assert confirmation.baseline_samples_per_second[0] == pytest.approx(statistics.median(first))
    verdict = confirmation.verdict(runner_up, 1.5)
    assert verdict.ratio is not None and verdict.ratio.median == pytest.approx(6.0, rel=0.02)


def test_a_candidate_on_other_thread_pools_runs_alone_beside_a_baseline_process(
    demo_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Trial 2 cannot share a process with the baseline: it runs alone and the round runs the
    # baseline alone for it; trial 3 is still paired.
    differs = TrialConfig.process_differences

    def fixed(self: TrialConfig, other: TrialConfig) -> list[str]:
        if self == RUNNER_UP:
            return ["intra_op_threads: 1 vs 0"]
        return differs(self, other)

    monkeypatch.setattr(TrialConfig, "process_differences", fixed)
    fakes = Runners(beside={WINNER: 0.8})

    confirmation = _confirm(demo_folder, tmp_path, fakes)

    rounds = confirmation.completed_rounds
    runner_up, winner = _by_trial(confirmation)[2], _by_trial(confirmation)[3]
    assert fakes.alone[: 2 * rounds] == [RUNNER_UP, BASE] * rounds
    assert runner_up.paired_rounds == 0 and winner.paired_rounds == rounds
    # trial 2 pairs with the round's baseline process, which is the round's baseline
    assert runner_up.baseline_samples_per_second == confirmation.baseline_samples_per_second
    assert winner.baseline_samples_per_second == pytest.approx(
        [0.8 * b for b in confirmation.baseline_samples_per_second], rel=0.02
    )
    assert "in one process each" in confirmation.summary(1.5)  # the winner, trial 3, paired


def test_unpaired_runs_todays_fresh_processes(demo_folder: Path, tmp_path: Path) -> None:
    fakes = Runners()

    confirmation = _confirm(demo_folder, tmp_path, fakes, paired=False)

    assert fakes.pairs == []
    rounds = confirmation.completed_rounds
    assert fakes.alone[: 3 * rounds] == [WINNER, RUNNER_UP, BASE] * rounds
    assert all(c.paired_rounds == 0 for c in confirmation.candidates)
    assert not confirmation.paired
    assert "in one process each" not in confirmation.summary(1.5)


def test_a_round_whose_pairs_all_fail_still_measures_the_baseline(
    demo_folder: Path, tmp_path: Path
) -> None:
    fakes = Runners()
    fakes.fail_pairs_of = {WINNER, RUNNER_UP}

    confirmation = _confirm(demo_folder, tmp_path, fakes)

    assert confirmation.completed_rounds == 1  # the round ends: no candidate left
    assert fakes.alone == [BASE]  # its baseline ran alone: the round has a baseline speed
    assert all(c.failure is not None for c in confirmation.candidates)
    assert confirmation.recommended(1.5) is None


def test_one_candidate_failing_in_the_rounds_process_never_drops_the_other(
    demo_folder: Path, tmp_path: Path
) -> None:
    fakes = Runners()
    fakes.fail_pairs_of = {WINNER}  # any process with trial 3's configuration fails

    study = _study(demo_folder, tmp_path, fakes)
    confirmation = study.confirm(top=3, rounds=6)

    assert confirmation is not None
    # round 1: the process of both fails, each is timed again beside the baseline on its own
    assert fakes.pairs[:3] == [(WINNER, RUNNER_UP, BASE), (WINNER, BASE), (RUNNER_UP, BASE)]
    winner, runner_up = _by_trial(confirmation)[3], _by_trial(confirmation)[2]
    assert winner.failure is not None and "the fake pair failed" in winner.failure
    assert runner_up.failure is None
    assert runner_up.paired_rounds == len(runner_up.samples_per_second) > 1
    assert fakes.pairs[3] == (BASE, RUNNER_UP)  # round 2: trial 2 alone beside the baseline


def test_a_format_2_confirmation_resumes_paired_with_its_rounds_kept() -> None:
    # Stored before format 3: two rounds paired with the rounds' baseline processes.
    stored = {
        "format": 2,
        "rounds": 6,
        "seeds": [0, 1, 2],
        "baseline_config": BASE.to_dict(),
        "baseline_samples_per_second": [100.0, 200.0],
        "candidates": [
            {"trial": 3, "config": WINNER.to_dict(), "samples_per_second": [600.0, 1200.0]}
        ],
        "sequential": True,
        "processes": 4,
    }
    old = Confirmation.from_dict(stored)
    (candidate,) = old.candidates
    assert candidate.baseline_samples_per_second == ()
    assert old.ratios(candidate) == [6.0, 6.0]
    assert old.verdict(candidate, 1.5).text == "faster so far (more rounds needed)"

    # A third round, paired, as the confirmer stores it: the stored rounds' baselines first.
    resumed = dataclasses.replace(
        old,
        baseline_samples_per_second=(100.0, 200.0, 50.0),
        candidates=(
            dataclasses.replace(
                candidate,
                samples_per_second=(600.0, 1200.0, 150.0),
                baseline_samples_per_second=(100.0, 200.0, 50.0),
                paired_rounds=1,
            ),
        ),
    )
    again = Confirmation.from_dict(resumed.to_dict())
    assert again == resumed
    assert again.ratios(again.candidates[0]) == [6.0, 6.0, 3.0]


def test_a_resumed_format_2_confirmation_backfills_the_rounds_baselines(
    demo_folder: Path, tmp_path: Path
) -> None:
    fakes = Runners(beside={WINNER: 0.5, RUNNER_UP: 0.5})
    study = _study(demo_folder, tmp_path, fakes, paired=False)
    first = study.confirm(top=3, rounds=6)
    assert first is not None
    # The same rounds as a format-2 confirmation stored them, cut after round 2.
    cut = dataclasses.replace(
        first,
        baseline_samples_per_second=first.baseline_samples_per_second[:2],
        candidates=tuple(
            Candidate(c.trial, c.config, c.samples_per_second[:2], {0: c.fidelity[0]})
            for c in first.candidates
        ),
        attribution=None,
        minimal=None,
        minimal_baseline_samples_per_second=(),
        attribution_done=False,
    )
    from autotune.store import writer

    writer.write_confirmation(study.optuna, cut)
    resumed_study = _study_same(tmp_path, fakes)

    confirmation = resumed_study.confirm(top=3, rounds=6)

    assert confirmation is not None
    winner = _by_trial(confirmation)[3]
    shared = confirmation.baseline_samples_per_second
    assert winner.baseline_samples_per_second[:2] == shared[:2]  # the stored rounds', kept
    assert winner.baseline_samples_per_second[2] == pytest.approx(shared[2])  # paired from 3 on
    assert winner.paired_rounds == len(winner.samples_per_second) - 2
    rounds = len(winner.samples_per_second)
    assert f"{rounds} of at most 6 rounds head to head, {rounds - 2} of them in one process" in (
        confirmation.summary(1.5)
    )


def _study_same(tmp_path: Path, fakes: Runners):  # type: ignore[no-untyped-def]
    return load_study(
        f"sqlite:///{tmp_path / 'study.db'}", runner=fakes.run, pair_runner=fakes.pair
    )


def test_the_default_runner_pairs_and_another_does_not(
    demo_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(demo_folder / "study.db", tmp_path / "study.db")
    url = f"sqlite:///{tmp_path / 'study.db'}"
    assert load_study(url).pair_runner is runners.isolated_pair_runner
    assert load_study(url, runner=fake_runner).pair_runner is None
    # a test that stands a fake in for the default runner gets no real pair runner either
    monkeypatch.setattr(autotune.study.study, "isolated_runner", fake_runner)
    assert load_study(url).pair_runner is None


def test_the_pair_runner_times_as_many_window_pairs_as_the_settings_have_windows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import autotune.trial.isolation as isolation

    seen: dict[str, object] = {}

    def fake_side_by_side(reference, configs, settings, *, pairs, log_dir, prestart):  # type: ignore[no-untyped-def]
        seen.update(
            pairs=pairs, log_dir=log_dir, limit=settings.time_limit_seconds, prestart=prestart
        )
        return tuple(f"result of {c.batch_size}" for c in configs)

    monkeypatch.setattr(isolation, "run_isolated_side_by_side", fake_side_by_side)
    settings = RunSettings(windows=5, time_limit_seconds=90)
    pair = runners.isolated_pair_runner("digits_cnn", [WINNER, BASE], settings, Path("/tmp/logs"))
    assert pair == ("result of 64", "result of 32")
    # two models set up, warmed up and timed: twice a run's time limit
    # the round takes a process started ahead and starts the next one
    assert seen == {"pairs": 5, "log_dir": Path("/tmp/logs"), "limit": 180, "prestart": True}
    three = runners.isolated_pair_runner("digits_cnn", [WINNER, RUNNER_UP, BASE], settings, None)
    assert len(three) == 3 and seen["limit"] == 270  # three models: three times
    runners.isolated_pair_runner("digits_cnn", [WINNER, BASE], RunSettings(windows=1), None)
    assert seen["pairs"] == 2  # a pair runner needs two pairs at least


@pytest.mark.parametrize(("flag", "paired"), [(None, True), ("--confirm-unpaired", False)])
def test_run_confirms_paired_unless_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flag: str | None, paired: bool
) -> None:
    from click.testing import CliRunner

    from autotune.cli import main
    from tests.support.demo_study import write_experiment

    fakes = Runners()
    run = fakes.run  # one object: the study compares its runner with the real one
    # the fakes stand in for the real runners: the study pairs as with the real ones
    monkeypatch.setattr(autotune.study.study, "isolated_runner", run)
    monkeypatch.setattr(runners, "isolated_runner", run)
    monkeypatch.setattr(runners, "isolated_pair_runner", fakes.pair)
    monkeypatch.chdir(tmp_path)
    args = [
        "run", write_experiment(tmp_path), "--space", "quick", "--trials", "4",
        "--storage", f"sqlite:///{tmp_path / 'study.db'}", "--profile", "off",
        "--confirm-top", "1", "--confirm-rounds", "2", *([flag] if flag else []),
    ]  # fmt: skip

    done = CliRunner(env={"COLUMNS": "200"}).invoke(main, args, catch_exceptions=False)

    assert done.exit_code == 0, done.output
    assert bool(fakes.pairs) is paired
    if paired:
        assert "the baseline beside it" in done.output


# --------------------------------------------------------------------- attribution, paired
# Trial 3 differs from the baseline in batch_size, precision and jit_compile; reverting its
# batch size gives trial 2's configuration.
WITHOUT_BATCH = RUNNER_UP
WITHOUT_XLA = dataclasses.replace(WINNER, jit_compile=False)


def test_attribution_times_each_reversion_beside_the_winner_and_no_winner_alone(
    demo_folder: Path, tmp_path: Path
) -> None:
    fakes = Runners()

    confirmation = _confirm(demo_folder, tmp_path, fakes)

    attribution = confirmation.attribution
    assert attribution is not None
    assert attribution.paired == ("precision", "jit_compile")
    # Reverting the batch size gives trial 2, measured beside the winner in every round of the
    # confirmation: those rounds are its attribution, and it is not run again.
    assert attribution.known == ("batch_size",)
    winner, runner_up = _by_trial(confirmation)[3], _by_trial(confirmation)[2]
    n = len(runner_up.samples_per_second)
    assert attribution.reverted_samples_per_second["batch_size"] == runner_up.samples_per_second
    assert attribution.winner_for("batch_size") == winner.samples_per_second[:n]
    assert attribution.carries("batch_size")  # 3x against 6x in every round
    assert WINNER not in fakes.alone  # no round ran the winner alone
    beside_winner = [p for p in fakes.pairs if BASE not in p]
    assert beside_winner and all(WINNER in p and WITHOUT_BATCH not in p for p in beside_winner)
    # one process per round: round 1 sets up the reversions first, round 2 the winner first
    without_precision = dataclasses.replace(WINNER, precision="float32")
    assert beside_winner[0] == (without_precision, WITHOUT_XLA, WINNER)
    assert beside_winner[1] == (WINNER, WITHOUT_XLA, without_precision)
    for setting in attribution.paired:
        runs = attribution.reverted_samples_per_second[setting]
        assert len(attribution.winner_for(setting)) == len(runs)
    # a round's winner speed: the median of those timed beside its reversions
    first = [attribution.winner_for(s)[0] for s in attribution.paired]
    assert attribution.winner_samples_per_second[0] == pytest.approx(statistics.median(first))
    table = attribution_table(confirmation)
    assert table is not None
    assert "beside the winner in one process; batch_size from the confirmation's rounds" in str(
        table.title
    )


def test_a_reversion_is_compared_with_the_winner_timed_beside_it(
    demo_folder: Path, tmp_path: Path
) -> None:
    # Every process of more than two models fails, so each reversion is timed beside the
    # winner in a process of its own; the winner beside the XLA reversion runs at a quarter of
    # its speed (a process slower for both): that reversion's ratio must use it, not the
    # round's winner speed.
    fakes = Runners(winner_beside={WITHOUT_XLA: 0.25})
    fakes.fail_groups = True
    lines: list[str] = []

    confirmation = _confirm(demo_folder, tmp_path, fakes, on_progress=lines.append)

    assert any(line.startswith("attribution round 1: 2 configurations beside") for line in lines)

    attribution = confirmation.attribution
    assert attribution is not None
    ratio = attribution.ratio("jit_compile")
    assert ratio is not None
    alone = {c: fake_runner("x", c, RunSettings(), None).throughput for c in (WINNER, WITHOUT_XLA)}
    without, with_xla = (alone[c].median for c in (WITHOUT_XLA, WINNER))  # type: ignore[union-attr]
    assert ratio.median == pytest.approx(without / (with_xla * 0.25), rel=0.02)


def test_a_reversion_on_other_thread_pools_runs_alone_against_a_winner_process(
    demo_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    differs = TrialConfig.process_differences

    def fixed(self: TrialConfig, other: TrialConfig) -> list[str]:
        if WITHOUT_XLA in (self, other) and BASE not in (self, other):
            return ["intra_op_threads: 1 vs 0"]
        return differs(self, other)

    monkeypatch.setattr(TrialConfig, "process_differences", fixed)
    fakes = Runners()

    confirmation = _confirm(demo_folder, tmp_path, fakes)

    attribution = confirmation.attribution
    assert attribution is not None
    assert "jit_compile" not in attribution.paired and "precision" in attribution.paired
    rounds = len(attribution.reverted_samples_per_second["jit_compile"])
    assert fakes.alone.count(WINNER) == rounds  # one winner process per round it ran alone
    assert fakes.alone.count(WITHOUT_XLA) == rounds
    # it is compared with its round's winner process, which is the round's winner speed
    winners = attribution.winner_samples_per_second[:rounds]
    assert attribution.winner_for("jit_compile") == winners
    table = attribution_table(confirmation)
    assert table is not None
    assert "precision beside the winner in one process" in str(table.title)


def test_an_attribution_stored_before_pairing_reads_and_round_trips() -> None:
    from autotune.analysis.attribution import Attribution

    old = Attribution.from_dict(
        {
            "trial": 3,
            "settings": ["batch_size", "precision"],
            "winner_samples_per_second": [600.0, 600.0],
            "reverted_samples_per_second": {"batch_size": [590.0, 610.0], "precision": [200.0]},
            "failed": [],
            "rounds": 6,
            "drifts": {},
        }
    )
    assert old.paired == () and old.winner_for("precision") == (600.0, 600.0)
    ratio = old.ratio("precision")
    assert ratio is not None and ratio.median == pytest.approx(200 / 600)
    paired = dataclasses.replace(
        old,
        winner_beside={"batch_size": (600.0, 600.0, 300.0)},
        reverted_samples_per_second={"batch_size": (590.0, 610.0, 290.0), "precision": (200.0,)},
        paired=("batch_size",),
    )
    assert Attribution.from_dict(paired.to_dict()) == paired


def test_a_minimal_recipe_that_is_a_candidate_reuses_its_rounds(
    demo_folder: Path, tmp_path: Path
) -> None:
    # Trial 2 (the winner with the baseline's batch size) runs at 5.4x, then 6.15x, by turns,
    # against the winner's 6x: in the confirmation's rounds it is slower (median 5.4x), yet
    # one round at least as fast leaves batch_size within noise, so the minimal recipe is trial
    # 2's configuration, measured head to head with the baseline in the same rounds already.
    fakes = Runners()
    fakes.scales = {RUNNER_UP: [1.8, 2.05]}

    confirmation = _confirm(demo_folder, tmp_path, fakes)

    runner_up = _by_trial(confirmation)[2]
    minimal = confirmation.minimal
    assert minimal is not None and minimal.config == RUNNER_UP
    assert minimal.trial == 3  # the winner's recipe, minimal
    assert minimal.samples_per_second == runner_up.samples_per_second
    assert confirmation.minimal_baseline_samples_per_second == tuple(
        confirmation.baseline_for(runner_up)[: len(runner_up.samples_per_second)]
    )
    assert minimal.fidelity[0] == runner_up.fidelity[0]  # its curve, then its seeds'
    assert set(minimal.fidelity) == {0, 1, 2}
    with_base = [p for p in fakes.pairs if RUNNER_UP in p and BASE in p]
    assert len(with_base) == len(runner_up.samples_per_second)  # no minimal rounds of its own
    best = confirmation.recommended(1.5)
    assert best is not None and best.candidate is minimal
    assert "minimal recipe" in confirmation.summary(1.5)


def test_a_known_reversion_in_another_process_is_scored_over_each_ones_own_baseline(
    demo_folder: Path, tmp_path: Path
) -> None:
    # The rounds' group processes fail, so trial 2 and the winner each ran beside a baseline of
    # their own, trial 2's at 0.6 of the speed: trial 2's 3x samples/s is 5x its baseline,
    # against the winner's 6x. Its batch-size reversion must compare those (5/6), not the raw
    # speeds (3/6).
    fakes = Runners(beside={RUNNER_UP: 0.6})
    fakes.fail_groups = True

    confirmation = _confirm(demo_folder, tmp_path, fakes)

    attribution = confirmation.attribution
    assert attribution is not None and attribution.trial == 3
    assert attribution.known == ("batch_size",)
    ratio = attribution.ratio("batch_size")
    assert ratio is not None and ratio.median == pytest.approx(5 / 6, rel=0.02)


def test_run_counts_a_round_by_its_measured_models_not_by_a_failed_groups_note(
    demo_folder: Path, tmp_path: Path
) -> None:
    from rich.console import Console
    from rich.progress import Progress

    from autotune.cli.commands import RunProgress

    fakes = Runners()
    fakes.fail_groups = True
    study = _study(demo_folder, tmp_path, fakes)
    console = Console(record=True, width=200)
    with Progress(console=console) as progress:
        view = RunProgress(progress, study, 0, top=3, rounds=6, paired=True)
        view.confirm_task = progress.add_task("confirmation", total=12)
        study.confirm(top=3, rounds=6, on_progress=view.on_confirm_progress)
        completed = progress.tasks[view.confirm_task].completed

    lines = console.export_text().splitlines()
    rounds = [line for line in lines if line.startswith("confirm round")]
    notes = [line for line in rounds if "in one process failed" in line]
    measured = [line for line in rounds if "samples/s" in line]
    assert len(notes) == 5 and len(measured) == 10  # 5 rounds of 2 candidates
    assert completed == len(measured)
