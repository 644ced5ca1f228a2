"""A fidelity check that cannot see says so (autotune.analysis.curve_signal and the study's stop
before searching, autotune.study.baseline.check_curve_signal): a baseline that learns nothing
within the curve's budget stops the study, unless it is accepted as throughput only, which every
view then marks. No TensorFlow."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner

from autotune.analysis.curve_signal import curve_signal
from autotune.cli.commands import main
from autotune.exceptions import StudyError
from autotune.store.records import load_records
from autotune.store.result import CurvePoint, RunResult
from autotune.store.schema import BASELINE_KEY
from autotune.study import Study
from autotune.views.report.header import header_info
from autotune.views.study_json import study_json
from tests.support.demo_study import fake_study
from tests.support.fake_trials import SEED_OFFSETS, fake_curve, fake_result

optuna.logging.set_verbosity(optuna.logging.WARNING)

CHANCE = math.log(10.0)  # a 10-class model that learns nothing: 2.3026 at every checkpoint


def pairs(points: list[CurvePoint]) -> list[tuple[float, float]]:
    return [(p.samples, p.val_loss) for p in points]


def stuck_curve(seed: int, checkpoints: int = 6) -> list[CurvePoint]:
    """The chance loss, seeds apart by a few 1e-4, wobbling by less than that."""
    return [
        CurvePoint(samples=512 * i, val_loss=CHANCE + 3e-4 * seed + 1e-5 * (-1) ** i)
        for i in range(1, checkpoints + 1)
    ]


# --------------------------------------------------------------------------------------------
# The signal
# --------------------------------------------------------------------------------------------


def test_a_curve_at_the_chance_loss_cannot_show_drift() -> None:
    signal = curve_signal([pairs(stuck_curve(seed)) for seed in (0, 1, 2)])

    assert not signal.sees
    assert signal.movement < signal.spread == pytest.approx(6e-4)
    assert "2.303 at 512 samples, 2.303 at 3,072 (6 checkpoints)" in signal.describe()
    assert "differ by up to 0.0006" in signal.describe()


def test_a_learning_curve_sees_and_so_does_a_rising_one() -> None:
    falling = curve_signal([pairs(fake_curve(SEED_OFFSETS[s])) for s in (0, 1, 2)])
    rising = curve_signal(
        [[(n, 1.0 / loss) for n, loss in pairs(fake_curve(SEED_OFFSETS[s]))] for s in (0, 1, 2)]
    )

    assert falling.sees and falling.movement > 10 * falling.spread
    assert rising.sees and rising.mean_losses[-1] > rising.mean_losses[0]


def test_movement_within_the_spread_is_blind_and_beyond_it_is_not() -> None:
    """The boundary: the mean curve's range against the largest seed difference at a point."""
    spread = 0.01
    for movement, sees in ((0.5 * spread, False), (spread, False), (1.5 * spread, True)):
        curves = [
            [(100.0, 1.0 + movement + offset), (200.0, 1.0 + offset)]
            for offset in (0.0, spread / 2, spread)
        ]
        assert curve_signal(curves).sees is sees, movement


def test_one_checkpoint_is_not_judged_and_bad_input_is_refused() -> None:
    single = curve_signal([[(100.0, CHANCE)], [(100.0, CHANCE + 1e-3)]])

    assert not single.judged and single.sees
    with pytest.raises(ValueError, match="two seed curves"):
        curve_signal([[(100.0, 1.0)]])
    with pytest.raises(ValueError, match="one checkpoint"):
        curve_signal([[], []])


# --------------------------------------------------------------------------------------------
# The study stops before searching, or goes on marked throughput only
# --------------------------------------------------------------------------------------------


class StuckRunner:
    """The fake world, but the model never learns: every curve sits at the chance loss."""

    def __init__(self) -> None:
        self.trials = 0

    def __call__(self, reference, config, settings, log_dir) -> RunResult:
        result = fake_result(config, settings)
        if settings.stop_below_samples_per_second is not None:
            self.trials += 1
        if not result.curve:
            return result
        return dataclasses.replace(result, curve=stuck_curve(settings.seed, settings.checkpoints))


def stuck_study(tmp_path: Path, runner: StuckRunner, **kwargs) -> Study:
    return fake_study(tmp_path, runner, **kwargs)


def test_a_baseline_that_learns_nothing_stops_the_study_before_it_searches(
    tmp_path: Path,
) -> None:
    runner = StuckRunner()
    study = stuck_study(tmp_path, runner)

    with pytest.raises(StudyError) as raised:
        study.optimize(n_trials=3)

    message = str(raised.value)
    assert "the fidelity check cannot see" in message
    assert "2.303 at 512 samples" in message and "3,072 training examples" in message
    for fix in ("curve_samples", "checkpoints", "base_learning_rate", "--throughput-only"):
        assert fix in message, fix
    assert runner.trials == 0 and not study.optuna.get_trials()
    stored = study.optuna.user_attrs[BASELINE_KEY]
    assert set(stored["runs"]) == {"0", "1", "2"} and "noise_floor" in stored  # nothing lost
    assert load_records(study.storage_url).throughput_only is None


def test_accepted_as_throughput_only_it_searches_and_every_view_says_so(tmp_path: Path) -> None:
    runner = StuckRunner()
    with pytest.raises(StudyError):
        stuck_study(tmp_path, runner).optimize(n_trials=3)

    study = stuck_study(tmp_path, runner, throughput_only=True)
    study.optimize(n_trials=3)  # the stored baseline is reused: only the trials run
    again = stuck_study(tmp_path, runner)  # resumed without the flag: accepted once, kept
    again.optimize(n_trials=4)

    assert runner.trials == 4
    records = load_records(study.storage_url)
    assert records.throughput_only is not None and "2.303" in records.throughput_only
    mark = "throughput only: the fidelity check cannot see"
    recommendation = records.best()
    assert mark in recommendation.note
    assert mark in dict(header_info(records).facts)["warning"]
    assert study_json(records)["throughput_only"] == records.throughput_only
    assert mark in study_json(records)["recommendation"]["note"]

    status = CliRunner().invoke(main, ["status", "--storage", study.storage_url])
    best = CliRunner().invoke(main, ["best", "--storage", study.storage_url, "--json"])
    assert status.exit_code == 0 and best.exit_code == 0, status.output + best.output
    assert "warning: " + mark in " ".join(status.output.split())
    assert mark in json.loads(best.output)["note"]


def test_a_study_whose_baseline_learns_is_never_marked(tmp_path: Path) -> None:
    def learning(reference, config, settings, log_dir) -> RunResult:
        return fake_result(config, settings)

    study = fake_study(tmp_path, learning, throughput_only=True)
    study.optimize(n_trials=2)

    records = load_records(study.storage_url)
    assert records.throughput_only is None
    assert "throughput only" not in records.best().note
    assert "warning" not in dict(header_info(records).facts)
