"""Replaying searches against a measured grid (autotune.study.replay), and what the replay proves
about the study's search: stopped trials steer the sampler away, not towards. No TensorFlow."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import autotune.study.scoring as scoring
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ConfigError, TrialFailure
from autotune.store.schema import TrialRow
from autotune.study.replay import (
    Grid,
    GridEntry,
    ReplayedTrial,
    TableRunner,
    check_predictions,
    hypervolume,
    hypervolume_fraction,
    replay,
    seconds_to,
    trials_to_target,
)
from tests.support.demo_study import write_experiment
from tests.support.replay_grid import (
    MEASURED_SECONDS,
    STOPPED_SECONDS,
    feasible,
    slow,
    slow_third_grid,
)

BUDGET = 20
SEEDS = range(5)


@pytest.fixture(scope="module")
def grid() -> Grid:
    return slow_third_grid()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> str:
    return write_experiment(tmp_path_factory.mktemp("experiment"))


# --------------------------------------------------------------------------------------------
# Hypervolume and the grid's own scores
# --------------------------------------------------------------------------------------------


def test_hypervolume_of_one_point_is_its_rectangle_beyond_the_reference() -> None:
    assert hypervolume([(3000.0, 0.5)], (1000.0, 1.5)) == pytest.approx(2000.0)


def test_hypervolume_of_a_staircase_counts_each_area_once() -> None:
    points = [(3000.0, 1.0), (2000.0, 0.5), (2500.0, 1.2)]  # the last is dominated

    # 2000 x 0.5 (the fast point) + 1000 x 0.5 (what the slower, closer one adds).
    assert hypervolume(points, (1000.0, 1.5)) == pytest.approx(1000.0 + 500.0)
    assert hypervolume(points, (1000.0, 1.5)) == hypervolume(points[:2], (1000.0, 1.5))


def test_points_not_beyond_the_reference_add_nothing() -> None:
    assert hypervolume([(900.0, 0.1), (3000.0, 1.5), (3000.0, 2.0)], (1000.0, 1.5)) == 0.0


def test_the_grid_scores_its_entries_as_the_study_would(grid: Grid) -> None:
    scores = grid.scores()

    stopped = [e.config for e in grid.entries if e.state == "pruned"]
    assert all(slow(c) for c in stopped if c.batch_size > 16) and len(stopped) == 12 + 2
    assert len(scores) == 36 - len(stopped) - 1  # and not the baseline's own configuration
    feasible_keys = {k for k, (_, f) in scores.items() if f <= 1.5}
    assert feasible_keys == {
        json.dumps(e.config.to_dict(), sort_keys=True) for e in grid.entries if feasible(e.config)
    }
    assert grid.best_feasible(1.5) == pytest.approx(32000.0)  # bfloat16, batch 512


# --------------------------------------------------------------------------------------------
# The grid file and the table runner
# --------------------------------------------------------------------------------------------


def test_a_grid_file_round_trips(grid: Grid, tmp_path: Path) -> None:
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(grid.to_dict()), encoding="utf-8")

    again = Grid.load(path)

    assert again.space.to_dict() == grid.space.to_dict()
    assert again.scores() == grid.scores()
    assert [e.config for e in again.entries] == [e.config for e in grid.entries]
    assert [e.state for e in again.entries] == [e.state for e in grid.entries]


def test_a_bad_grid_file_names_the_file_and_the_problem(tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "something/9"}), encoding="utf-8")

    with pytest.raises(ConfigError, match=r"none\.json' cannot be read: No such file"):
        Grid.load(missing)
    with pytest.raises(ConfigError, match=r"broken\.json.*not valid JSON"):
        Grid.load(broken)
    listed = tmp_path / "listed.json"
    listed.write_text("[1]", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"listed\.json' must hold a JSON object"):
        Grid.load(listed)
    with pytest.raises(ConfigError, match=r"other.json: schema must be .*something/9"):
        Grid.load(other)


def test_the_table_runner_answers_baseline_seeds_trials_and_failures(grid: Grid) -> None:
    runner = TableRunner(grid)
    baseline = grid.baseline_config
    bf16 = TrialConfig(batch_size=128, precision="mixed_bfloat16")
    trial = RunSettings(seed=0, stop_below_samples_per_second=900.0)

    seed_1 = runner("fake", baseline, RunSettings(seed=1, measure_throughput=False), None)
    measured = runner("fake", bf16, trial, None)

    assert seed_1.curve[0].val_loss == pytest.approx(
        grid.baseline["runs"]["1"]["curve"][0]["val_loss"]
    )
    assert measured == grid.entry(bf16).result
    assert runner.calls == [(bf16, MEASURED_SECONDS)]  # baseline runs are not trials
    failing = Grid(
        grid.experiment,
        grid.space,
        grid.baseline,
        (GridEntry(bf16, "failed", 3.0, failure={"kind": "oom", "message": "no memory"}),),
    )
    with pytest.raises(TrialFailure, match="no memory"):
        TableRunner(failing)("fake", bf16, trial, None)
    with pytest.raises(ConfigError, match="has no bs=16"):
        TableRunner(failing)("fake", TrialConfig(batch_size=16), trial, None)


# --------------------------------------------------------------------------------------------
# Replays
# --------------------------------------------------------------------------------------------


def test_a_replay_costs_what_the_trials_cost_live(grid: Grid, reference: str) -> None:
    trials = replay(grid, "random", 0, 8, reference=reference)

    assert len(trials) == 8
    for trial in trials:
        live = STOPPED_SECONDS if trial.row.state == "pruned" else MEASURED_SECONDS
        assert trial.measured
        assert live <= trial.cost_seconds < live + 2.0  # + the tuner's own time
    assert seconds_to(trials, 3) == pytest.approx(sum(t.cost_seconds for t in trials[:3]))


def test_a_warm_replay_measures_the_earlier_answer_first(
    grid: Grid, reference: str, tmp_path: Path
) -> None:
    target = 0.95 * grid.best_feasible(1.5)
    earlier = replay(grid, "autotune", 0, BUDGET, reference=reference, work=tmp_path / "a")
    answer = next(t.row for t in earlier if (t.feasible_throughput or 0.0) >= target)
    source = f"sqlite:///{tmp_path / 'a' / 'replay.db'}:replay-0"

    cold = replay(grid, "autotune", 1, BUDGET, reference=reference)
    warm = replay(grid, "autotune", 1, BUDGET, reference=reference, warm_start=source)

    # The earlier study's answer is measured again first (costing what it costs live) and
    # reaches the target at once; the cold search of the same seed needs the structured start.
    assert warm[0].row.config == answer.config and warm[0].measured
    assert warm[0].row.warm_from is not None
    assert warm[0].cost_seconds >= MEASURED_SECONDS
    assert trials_to_target(warm, target) == 1
    assert trials_to_target(cold, target) > 1


def test_a_replay_is_the_same_for_the_same_seed(grid: Grid, reference: str) -> None:
    first = replay(grid, "autotune", 3, 10, reference=reference)
    again = replay(grid, "autotune", 3, 10, reference=reference)

    assert [t.row.config for t in first] == [t.row.config for t in again]


def test_reaching_the_target_needs_a_feasible_trial_that_fast(grid: Grid, reference: str) -> None:
    trials = replay(grid, "autotune", 0, BUDGET, reference=reference)
    reached = trials_to_target(trials, 0.95 * grid.best_feasible(1.5))

    assert reached is not None
    hit = trials[reached - 1].row
    assert feasible(hit.config) and hit.config.batch_size == 512
    assert not any(
        t.row.config.batch_size == 512 and feasible(t.row.config) for t in trials[: reached - 1]
    )
    assert hypervolume_fraction(trials, grid, BUDGET) == pytest.approx(1.0)
    assert trials_to_target(trials, 1e9) is None


def slow_proposals(grid: Grid, reference: str, strategy: str) -> list[int]:
    return [
        sum(slow(t.row.config) for t in replay(grid, strategy, seed, BUDGET, reference=reference))
        for seed in SEEDS
    ]


def test_the_slow_third_stays_rarely_proposed_even_while_nothing_is_feasible(
    grid: Grid, reference: str, monkeypatch
) -> None:
    """A third of the grid is 100x slower and no trial of the structured start is feasible: the
    stopped float16 probe must steer the sampler away from float16, not towards it."""
    ours = slow_proposals(grid, reference, "autotune")
    # The same search with stopped trials pruned as before, without their speed constraint:
    # Optuna's TPE then ties them with pruned trials, and the tie can be its "good" group.
    monkeypatch.setattr(
        scoring, "prune_slower", lambda trial, reason, *_: scoring.prune(trial, reason)
    )
    tied = slow_proposals(grid, reference, "autotune")

    assert max(ours) <= 4, ours  # of 20 proposals; random search averages 6.7
    assert sum(tied) > sum(ours) + len(SEEDS), (tied, ours)


# --------------------------------------------------------------------------------------------
# Fidelity predictions, checked against the grid
# --------------------------------------------------------------------------------------------


def test_a_replay_skips_what_its_trials_rule_out_and_the_grid_agrees(
    grid: Grid, reference: str
) -> None:
    """float32 drifts at every batch size but the base one in this grid: once a larger float32
    batch is measured infeasible, still larger ones are skipped, and the grid says rightly."""
    on = [
        check_predictions(replay(grid, "random", s, BUDGET, reference=reference), grid)
        for s in SEEDS
    ]
    off = [
        check_predictions(
            replay(grid, "random", s, BUDGET, reference=reference, predict_fidelity=False), grid
        )
        for s in SEEDS
    ]  # fmt: skip

    assert sum(c.predicted for c in on) > 0
    assert all(c.wrong == 0 and c.unverified == 0 for c in on), on
    assert all(c.ruled_out_run == 0 for c in on), on  # the study applies the same rule
    assert all(c.predicted == 0 for c in off), off
    assert sum(c.ruled_out_run for c in off) > 0, off  # spent on what was already known


def _row(number: int, config: TrialConfig, state: str, fidelity: float | None, **attrs) -> TrialRow:
    return TrialRow(
        number=number, state=state, config=config, throughput=None, fidelity=fidelity,
        feasible=None if fidelity is None else fidelity <= 1.5, user_attrs=attrs,
    )  # fmt: skip


def test_a_prediction_the_grid_measured_feasible_counts_as_wrong(grid: Grid) -> None:
    feasible_config = TrialConfig(batch_size=256, precision="mixed_bfloat16")
    stopped_config = TrialConfig(batch_size=256, precision="mixed_float16")
    assert feasible(feasible_config) and grid.entry(stopped_config).state == "pruned"
    trials = [
        ReplayedTrial(_row(0, feasible_config, "pruned", None, predicted_from=[-1]), False, 0.0),
        ReplayedTrial(_row(1, stopped_config, "pruned", None, predicted_from=[0]), False, 0.0),
    ]

    check = check_predictions(trials, grid)

    assert (check.proposals, check.predicted, check.wrong, check.unverified) == (2, 2, 1, 1)


def test_a_trial_run_after_its_rule_out_was_measured_counts_as_spent(grid: Grid) -> None:
    """Trial 0 (float32, batch 128) is over the tolerance beyond the noise, above the baseline's
    0 at batch 32: trial 1 (float32, batch 256) was already ruled out when it ran."""
    drifted, larger = TrialConfig(batch_size=128), TrialConfig(batch_size=256)
    other_family = TrialConfig(batch_size=512, jit_compile=True)  # XLA: another curve
    trials = [
        ReplayedTrial(_row(0, drifted, "complete", 40.0), True, 10.0),
        ReplayedTrial(_row(1, larger, "complete", 45.0), True, 10.0),
        ReplayedTrial(_row(2, other_family, "complete", 40.0), True, 10.0),
    ]

    check = check_predictions(trials, grid)

    assert (check.predicted, check.ruled_out_run) == (0, 1)
