"""Anchors: the baseline re-measured during the search (autotune.study.anchor,
autotune.store.anchors, autotune.views.drift), with a fake machine that runs everything twice as
fast halfway through a study. No TensorFlow."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner
from optuna.trial import TrialState
from rich.console import Console
from rich.progress import Progress

from autotune.cli.commands import RunProgress, main
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ConfigError, TrialFailure
from autotune.measure import Estimate, slower_than_baseline, summarize
from autotune.store.anchors import ANCHOR_PREFIX, Anchor, Anchors, read_anchors
from autotune.store.records import load_records
from autotune.store.result import RunResult
from autotune.store.schema import BASELINE_KEY
from autotune.study import Study, anchor, confirming
from autotune.study import start as start_module
from autotune.study.anchor import Every
from autotune.views.drift import drift_facts, drift_lines
from autotune.views.report.header import header_info
from tests.support.demo_study import fake_study
from tests.support.fake_trials import TOLERANCE, fake_result

optuna.logging.set_verbosity(optuna.logging.WARNING)


def params(precision="float32", jit_compile=False, batch_size=32) -> dict:
    return {"precision": precision, "jit_compile": jit_compile, "batch_size": batch_size}


def is_anchor(settings: RunSettings) -> bool:
    """An anchor: a throughput run with no early stop and no curve (a baseline seed has one)."""
    return (
        settings.measure_throughput
        and not settings.curve
        and settings.stop_below_samples_per_second is None
    )


class DriftingRunner:
    """The fake world (:func:`fake_result`), on a machine that runs every configuration, the
    baseline included, ``factor`` times as fast once ``after`` trials have run."""

    def __init__(self, after: int, factor: float = 2.0, fail_anchors: bool = False) -> None:
        self.after = after
        self.factor = factor
        self.fail_anchors = fail_anchors
        self.trials: list[tuple[TrialConfig, RunSettings]] = []
        self.anchors: list[TrialConfig] = []

    def __call__(self, reference, config, settings, log_dir) -> RunResult:
        factor = self.factor if len(self.trials) >= self.after else 1.0
        if is_anchor(settings):
            self.anchors.append(config)
            if self.fail_anchors:
                raise TrialFailure("signal", "the anchor's process died")
        elif settings.stop_below_samples_per_second is not None:
            self.trials.append((config, settings))
        result = fake_result(config, settings.replace(stop_below_samples_per_second=None))
        if result.throughput is None:
            return result
        windows = [w * factor for w in result.window_samples_per_second]
        throughput = summarize(windows)
        stopped = slower_than_baseline(throughput, settings.stop_below_samples_per_second)
        return dataclasses.replace(
            result,
            throughput=throughput,
            window_samples_per_second=windows,
            stopped_early=stopped,
            curve=[] if stopped else result.curve,
        )


#: The scripted trials: four on the machine as the baseline found it, four on it twice as fast.
#: Native samples/s (fake world): 2000, 2000, 500, 10 | 750, 1500, 4000, 30.
TRIALS = [
    params("mixed_bfloat16", False, 32),  # 0: 2.0x, feasible: the answer
    params("float32", False, 64),  # 1: 2.0x
    params("float32", False, 16),  # 2: 0.5x: stopped against the (slow) anchor
    params("mixed_float16", False, 32),  # 3: stopped
    params("float32", True, 16),  # 4: 1500 raw, 0.75x: stopped against the fast anchor only
    params("float32", True, 32),  # 5: 3000 raw, faster than trial 0 raw, but 1.5x
    params("float32", False, 128),  # 6: 8000 raw, 4.0x, infeasible
    params("mixed_float16", True, 64),  # 7: stopped
]


EVERY_TWO = Every(trials=2)


def drifting_study(tmp_path: Path, runner, every: Every | None = EVERY_TWO) -> Study:
    study = fake_study(tmp_path, runner)
    study.anchor_every = every
    for trial in TRIALS:
        study.optuna.enqueue_trial(trial)
    return study


@pytest.fixture
def drifted(tmp_path: Path) -> tuple[Study, DriftingRunner]:
    runner = DriftingRunner(after=4)
    study = drifting_study(tmp_path, runner)
    study.optimize(n_trials=len(TRIALS))
    return study, runner


def test_anchors_run_every_few_trials_and_are_no_trials(drifted) -> None:
    study, runner = drifted

    # Before trials 2, 4 and 6 (two trials since the last one each time), none after the last.
    assert runner.anchors == [study.baseline_config] * 3
    assert len(study.optuna.trials) == len(TRIALS) == study.finished_count()
    assert [c for c, _ in runner.trials] == [TrialConfig.from_dict(t) for t in TRIALS]
    anchors = load_records(study.storage_url).anchors
    assert [a.throughput.median for a in anchors.measured] == pytest.approx([1000, 2000, 2000])
    assert all(k.startswith(ANCHOR_PREFIX) for k in (a.key for a in anchors.runs))
    assert all(a.ended is not None and a.ended >= a.started for a in anchors.runs)


def test_the_early_stop_uses_the_latest_anchor(drifted) -> None:
    study, runner = drifted
    anchors = anchor.stored(study.optuna).measured
    start_low = study.baseline()["runs"]["0"]["throughput"]["low"]
    thresholds = [s.stop_below_samples_per_second for _, s in runner.trials]

    assert thresholds[:2] == [start_low] * 2
    assert thresholds[2:4] == [anchors[0].throughput.low] * 2
    assert thresholds[4:6] == [anchors[1].throughput.low] * 2
    assert thresholds[6:] == [anchors[2].throughput.low] * 2
    assert anchors[1].throughput.low == pytest.approx(2 * start_low, rel=0.01)
    # 1500 samples/s would pass the start's baseline (997) but not the baseline measured now.
    trial = study.optuna.trials[4]
    assert trial.state == TrialState.PRUNED
    assert "confidently below the baseline's 1994 samples/s" in trial.user_attrs["pruned_reason"]
    assert trial.constraints["speed"] == pytest.approx(anchors[1].throughput.low / 1500 - 1)


def test_speed_ups_and_the_answer_are_against_the_nearest_anchor(drifted) -> None:
    study, _ = drifted
    records = load_records(study.storage_url)

    assert records.speedup(records.trial(0)) == pytest.approx(2.0)
    assert records.trial(5).throughput.median == pytest.approx(3000)
    assert records.speedup(records.trial(5)) == pytest.approx(1.5)
    assert records.recipe(records.trial(6)).speedup == pytest.approx(4.0)
    # the recipe names the baseline it was compared with: the one measured nearest its time
    assert records.recipe(records.trial(6)).baseline_throughput["median"] == pytest.approx(2000)
    assert records.recipe(None).baseline_throughput["median"] == pytest.approx(1000)
    # Raw samples/s would pick trial 5 (3000 > 2000); against the baseline of its time it is
    # slower than trial 0.
    best = study.best()
    assert best.trial == 0
    assert best.speedup == pytest.approx(2.0)


def test_a_machine_that_slows_down_keeps_the_later_faster_trials_on_the_front(
    tmp_path: Path,
) -> None:
    runner = DriftingRunner(after=4, factor=0.5)  # half as fast from trial 4 on
    study = drifting_study(tmp_path, runner)
    study.optimize(n_trials=len(TRIALS))
    records = load_records(study.storage_url)
    later = records.trial(5)  # float32 + XLA: the baseline's curve, 1500 samples/s natively

    # 750 samples/s raw: slower than the start's baseline (1000), 1.5x the baseline measured
    # next to it (500). The front and the confirmation's candidates judge it by the latter.
    assert later.throughput.median == pytest.approx(750)
    assert records.speedup(later) == pytest.approx(1.5)
    assert later.number in [r.number for r in records.pareto()]
    candidates = [r.number for r in confirming.candidates_of(records, top=3)]
    assert 5 in candidates
    assert candidates[0] == 0  # by speed-up, not raw samples/s: trial 0 (2000 raw, 2.0x) first


def test_the_structured_start_compares_against_the_nearest_anchor(drifted) -> None:
    study, _ = drifted
    measured = {c: speed for c, speed, _ in start_module._measured(study.optuna)}

    assert measured[TrialConfig.from_dict(TRIALS[0])] == pytest.approx(2000)
    assert measured[TrialConfig.from_dict(TRIALS[5])] == pytest.approx(1500)  # 3000 raw
    centre_speed = 1000.0  # the start's baseline
    best = start_module.best_measured(centre_speed, start_module._measured(study.optuna), TOLERANCE)
    assert best == TrialConfig.from_dict(TRIALS[0])


def test_status_and_report_show_the_drift_and_warn(drifted) -> None:
    study, _ = drifted
    records = load_records(study.storage_url)
    drift = records.anchors.drift()

    assert drift is not None and drift.ratio == pytest.approx(2.0) and drift.beyond_noise
    facts = dict(drift_facts(records))
    assert "2.00x the start's 1,000 samples/s" in facts["baseline drift"]
    assert "beyond the noise" in facts["baseline drift"]
    assert "not comparable" in facts["warning"]
    header = header_info(records).facts
    assert ("baseline drift", facts["baseline drift"]) in header
    assert ("warning", facts["warning"]) in header
    done = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["status", "--storage", study.storage_url], catch_exceptions=False
    )
    assert done.exit_code == 0, done.output
    assert "baseline drift: the baseline now runs 2,000 samples/s" in done.output
    assert "warning: the baseline changed beyond the noise" in done.output
    shown = CliRunner().invoke(main, ["status", "--storage", study.storage_url, "--json"])
    as_json = json.loads(shown.output)
    assert [a["throughput"]["median"] for a in as_json["anchors"]] == pytest.approx(
        [1000, 2000, 2000]
    )
    assert as_json["drift"] == {"ratio": pytest.approx(2.0), "beyond_noise": True, "anchors": 3}


def test_run_prints_each_anchor_once_before_the_trial_after_it(tmp_path: Path) -> None:
    study = drifting_study(tmp_path, DriftingRunner(after=4))
    console = Console(record=True, width=200)
    with Progress(console=console) as progress:
        view = RunProgress(progress, study, len(TRIALS), top=0, rounds=2)
        study.add_listener(view.on_trial_end)
        study.optimize(n_trials=len(TRIALS))

    lines = [
        line for line in console.export_text().splitlines() if line.startswith(("anchor", "trial"))
    ]
    anchors = [i for i, line in enumerate(lines) if line.startswith("anchor")]
    assert anchors == [2, 5, 8]  # before trials 2, 4 and 6, one line each
    assert "anchor: the baseline runs 1,000 samples/s" in lines[2]
    assert "1.00x the start's 1,000: within the noise" in lines[2]
    assert "2.00x the start's 1,000: beyond the noise" in lines[5]


def test_no_drift_is_within_the_noise_and_warns_of_nothing(tmp_path: Path) -> None:
    study = drifting_study(tmp_path, DriftingRunner(after=100))
    study.optimize(n_trials=len(TRIALS))
    records = load_records(study.storage_url)

    facts = dict(drift_facts(records))
    assert "within the noise" in facts["baseline drift"]
    assert "warning" not in facts
    assert records.speedup(records.trial(5)) == pytest.approx(1.5)
    assert study.best().trial == 0


def test_a_failed_anchor_is_stored_and_the_study_goes_on(tmp_path: Path) -> None:
    runner = DriftingRunner(after=100, fail_anchors=True)
    study = drifting_study(tmp_path, runner)
    study.optimize(n_trials=len(TRIALS))
    records = load_records(study.storage_url)

    assert study.finished_count() == len(TRIALS)
    assert len(records.anchors.runs) == 3 and not records.anchors.measured
    assert all("signal" in (a.error or "") for a in records.anchors.runs)
    start_low = study.baseline()["runs"]["0"]["throughput"]["low"]
    assert {s.stop_below_samples_per_second for _, s in runner.trials} == {start_low}
    assert drift_lines(records) == [
        "baseline drift: 3 anchor(s) run, none measured (last: signal: the anchor's process died)"
    ]


def test_a_study_without_anchors_reads_and_runs_as_before(tmp_path: Path) -> None:
    runner = DriftingRunner(after=4)
    study = drifting_study(tmp_path, runner, every=None)
    study.optimize(n_trials=len(TRIALS))
    # As a study stored before anchors existed: no anchors, no time of the baseline.
    stored = dict(study.optuna.user_attrs[BASELINE_KEY])
    del stored["measured_at"]
    study.optuna.set_user_attr(BASELINE_KEY, stored)
    records = load_records(study.storage_url)

    assert runner.anchors == [] and records.anchors.runs == ()
    start_low = study.baseline()["runs"]["0"]["throughput"]["low"]
    assert {s.stop_below_samples_per_second for _, s in runner.trials} == {start_low}
    # Everything against the start's baseline: trial 5's 3000 raw samples/s is 3.0x.
    assert records.speedup(records.trial(5)) == pytest.approx(3.0)
    assert study.optuna.trials[4].state == TrialState.COMPLETE  # 1500 passes 997
    assert drift_lines(records) == []
    assert not [k for k, _ in header_info(records).facts if k == "baseline drift"]


def anchors_at(*medians_and_times: tuple[float, float], baseline_at: float | None) -> Anchors:
    def estimate(median: float) -> Estimate:
        return Estimate(median, median * 0.99, median * 1.01, 0.95, 7)

    runs = tuple(Anchor(f"{ANCHOR_PREFIX}{t}", t, t + 1, estimate(m)) for m, t in medians_and_times)
    return Anchors(estimate(1000.0), baseline_at, runs)


def test_the_reference_is_the_anchor_nearest_in_time() -> None:
    anchors = anchors_at((1500.0, 100.0), (2000.0, 200.0), baseline_at=0.0)

    assert [anchors.at(t).median for t in (10.0, 60.0, 140.0, 160.0, 900.0)] == [
        1000.0,
        1500.0,
        1500.0,
        2000.0,
        2000.0,
    ]
    assert anchors.at(None).median == 1000.0
    assert anchors.latest().median == 2000.0
    assert anchors.at_start_speed(3000.0, 190.0) == pytest.approx(1500.0)
    # A baseline of unknown time (stored before anchors) is the reference until the first.
    unknown = anchors_at((1500.0, 100.0), baseline_at=None)
    assert [unknown.at(t).median for t in (5.0, 99.0, 101.0)] == [1000.0, 1000.0, 1500.0]


def test_unreadable_anchors_are_left_out() -> None:
    good = Anchor(f"{ANCHOR_PREFIX}1", 1.0, 2.0, Estimate(5.0, 4.0, 6.0, 0.95, 7)).to_dict()
    attrs = {
        f"{ANCHOR_PREFIX}1": good,
        f"{ANCHOR_PREFIX}2": "not an anchor",
        f"{ANCHOR_PREFIX}3": {"started": "soon"},
        f"{ANCHOR_PREFIX}4": {"started": 3.0, "throughput": {"median": 0, "low": 0}},
        "autotune_other": good,
    }

    assert [a.key for a in read_anchors(attrs).runs] == [f"{ANCHOR_PREFIX}1"]
    assert read_anchors(attrs).baseline is None


@pytest.mark.parametrize(
    ("trials", "seconds", "message"),
    [
        (0, 600.0, "trials must be an integer >= 1. Received: 0"),
        (True, 600.0, "Received: True"),
        (5, 0.0, "seconds must be a number > 0. Received: 0.0"),
        (5, float("nan"), "Received: nan"),
    ],
)
def test_bad_anchor_intervals_are_refused(trials, seconds, message) -> None:
    with pytest.raises(ConfigError, match=message):
        Every(trials=trials, seconds=seconds)


def test_an_anchor_is_due_after_its_trials_or_its_seconds(tmp_path: Path) -> None:
    study = drifting_study(tmp_path, DriftingRunner(after=100), every=None)
    study.optimize(n_trials=1)
    now = anchor.stored(study.optuna).baseline_at
    assert now is not None

    assert not anchor.due(study.optuna, Every(trials=2, seconds=600.0), now + 1)
    assert anchor.due(study.optuna, Every(trials=1, seconds=600.0), now + 1)
    assert anchor.due(study.optuna, Every(trials=2, seconds=600.0), now + 601)


def test_an_anchor_running_on_another_worker_is_not_started_again(tmp_path: Path) -> None:
    study = drifting_study(tmp_path, DriftingRunner(after=100), every=None)
    study.optimize(n_trials=2)
    every = Every(trials=1, seconds=600.0)
    assert anchor.due(study.optuna, every, time.time())

    # another worker's anchor, stored as running (no end, no throughput yet)
    started = time.time()
    key = f"{ANCHOR_PREFIX}{started:.3f}:elsewhere:1"
    study.optuna.set_user_attr(key, Anchor(key, started, None, None).to_dict())

    assert not anchor.due(study.optuna, every, started + 1)
    assert anchor.stored(study.optuna).latest() == anchor.stored(study.optuna).baseline
