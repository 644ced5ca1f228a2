"""A proposal's fidelity predicted from what was measured (autotune.study.fidelity_prediction):
one the measured trials rule out is skipped, never run, recorded as infeasible; and on the
bundled measured grids no study history ever skips a configuration that is feasible. No
TensorFlow."""

from __future__ import annotations

import itertools
from collections import defaultdict
from pathlib import Path

import pytest
from optuna.trial import TrialState

from autotune.config import RunSettings, TrialConfig
from autotune.fidelity import NoiseFloor
from autotune.space import SearchSpace, choices
from autotune.store import writer
from autotune.store.predicted import BASELINE_NUMBER, predicted_from
from autotune.store.result import RunResult
from autotune.study import Study
from autotune.study.fidelity_prediction import (
    MIN_NOISE_MARGIN,
    Measured,
    noise_margin,
    predict,
    same_but_batch,
)
from autotune.study.replay import Grid, _key
from autotune.views.report.pareto import pareto_info
from autotune.views.terminal import trial_line
from tests.support.demo_study import fake_study
from tests.support.fake_trials import NOISE, TOLERANCE, fake_result, fidelity_of

GRIDS = Path(__file__).resolve().parents[2] / "experiments" / "benchmarks" / "data" / "search_grid"
MARGIN = 1.5


def config(batch: int, precision: str = "float32", **others) -> TrialConfig:
    return TrialConfig(batch_size=batch, precision=precision, **others)  # type: ignore[arg-type]


BASELINE = Measured(BASELINE_NUMBER, config(32), 0.0)


# --------------------------------------------------------------------------------------------
# The rules
# --------------------------------------------------------------------------------------------


def test_a_larger_batch_than_one_infeasible_beyond_the_noise_is_predicted_infeasible() -> None:
    measured = [BASELINE, Measured(2, config(64), 0.9), Measured(5, config(128), 3.6)]

    prediction = predict(measured, config(256, steps_per_execution=8), TOLERANCE, MARGIN)

    assert prediction is not None
    assert prediction.evidence.number == 5
    assert prediction.rise_from is not None and prediction.rise_from.number == 2
    assert prediction.numbers == (2, 5)
    assert prediction.violation == pytest.approx(3.6 - TOLERANCE)
    assert prediction.reason() == (
        "predicted infeasible: at the same learning settings fidelity rose with batch size, "
        "from trial 2 (batch_size=64, fidelity 0.90) to trial 5 (batch_size=128, fidelity "
        "3.60), over the tolerance 1.5 by more than the noise (1.50); a larger batch learns "
        "further off; predicted from trials 2, 5"
    )


def test_the_baseline_shows_the_rise_of_its_own_family() -> None:
    prediction = predict([BASELINE, Measured(3, config(128), 3.6)], config(512), 1.5, MARGIN)

    assert prediction is not None and prediction.numbers == (BASELINE_NUMBER, 3)
    assert prediction.reason().endswith("predicted from the baseline and trial 3")


ONE = [BASELINE, Measured(1, config(128), 3.6)]
BF16 = [Measured(1, config(128, "mixed_bfloat16"), 3.6)]
FEASIBLE_TWIN = [*ONE, Measured(2, config(512), 1.2)]
FALLING = [BASELINE, *(Measured(n, config(b), f) for n, b, f in [(1, 64, 4.0), (2, 128, 2.0)])]


@pytest.mark.parametrize(
    ("why", "measured", "proposal"),
    [
        ("within the noise", [BASELINE, Measured(1, config(128), 2.9)], config(256)),
        ("a smaller batch", ONE, config(64)),
        ("another precision", ONE, config(256, "mixed_bfloat16")),
        ("another XLA", ONE, config(256, jit_compile=True)),
        ("no rise measured", BF16, config(256, "mixed_bfloat16")),
        ("fidelity measured falling with batch size", FALLING, config(512)),
        ("its curve measured feasible", FEASIBLE_TWIN, config(512, steps_per_execution=64)),
    ],
)  # fmt: skip
def test_what_the_measured_trials_do_not_rule_out_is_not_predicted(
    why: str, measured: list[Measured], proposal: TrialConfig
) -> None:
    assert predict(measured, proposal, TOLERANCE, MARGIN) is None, why


def test_the_same_curve_over_the_tolerance_is_predicted_even_within_the_noise() -> None:
    # Steps per execution does not change what the model learns: the proposal would be scored
    # with trial 4's very curve, so its fidelity is 1.8 exactly.
    measured = [BASELINE, Measured(4, config(128), 1.8)]

    prediction = predict(measured, config(128, steps_per_execution=64), TOLERANCE, MARGIN)

    assert prediction is not None and prediction.rise_from is None
    assert prediction.numbers == (4,)
    assert prediction.reason() == (
        "predicted infeasible: trial 4 (batch_size=128, fidelity 1.80) trained the same curve "
        "(the same learning settings), over the tolerance 1.5; predicted from trial 4"
    )


def test_thread_pools_join_the_family_but_never_without_the_noise_margin() -> None:
    """Thread pools change a curve at a seed's noise level: a larger batch with other pools is
    ruled out by the rise like any other, and the same batch with other pools only beyond the
    noise (never by the same-curve rule)."""
    larger = predict(ONE, config(352, intra_op_threads=4, steps_per_execution=64), 1.5, MARGIN)
    hair = [BASELINE, Measured(4, config(128), 1.8)]
    beyond = [BASELINE, Measured(4, config(128), 3.6)]
    pools = config(128, intra_op_threads=2, inter_op_threads=1, private_threadpool_size=2)

    assert larger is not None and larger.numbers == (BASELINE_NUMBER, 1)
    assert predict(hair, pools, TOLERANCE, MARGIN) is None  # 1.8: within the noise of 1.5
    same_batch = predict(beyond, pools, TOLERANCE, MARGIN)
    assert same_batch is not None and same_batch.rise_from is None
    assert same_batch.reason() == (
        "predicted infeasible: trial 4 (batch_size=128, fidelity 3.60) learned with the same "
        "settings but for thread pools (a difference at the level of a seed re-run), over the "
        "tolerance 1.5 by more than the noise (1.50); predicted from trial 4"
    )
    # and a twin of the proposal's curve still decides exactly, before any pool difference
    twin = [*beyond, Measured(6, config(128, steps_per_execution=4), 1.2)]
    assert predict(twin, config(128, steps_per_execution=64), TOLERANCE, MARGIN) is None


def test_the_noise_margin_is_the_largest_seed_pair_in_floors_at_least_one() -> None:
    assert noise_margin(NOISE) == pytest.approx(max(NOISE.pairs) / NOISE.value)
    assert noise_margin(NoiseFloor(0.1, 0.1, (0.05, 0.06, 0.09))) == MIN_NOISE_MARGIN
    assert noise_margin(NoiseFloor(0.1, 0.1, ())) == MIN_NOISE_MARGIN


# --------------------------------------------------------------------------------------------
# In a study: skipped, never run, recorded infeasible, shown as predicted
# --------------------------------------------------------------------------------------------

SPACE = SearchSpace(
    "predict",
    {
        "precision": choices("float32", "mixed_bfloat16"),
        "jit_compile": choices(False, True),
        "batch_size": choices(32, 64, 128, 256, 512, 1024),
        "steps_per_execution": choices(1, 64),
    },
)


class Runner:
    """The fake trial model (fidelity rises with batch size: 0.9 at 64, 2.7 at 256, 3.6 at
    512); records the configurations it ran as trials."""

    def __init__(self) -> None:
        self.trials: list[TrialConfig] = []

    def __call__(self, reference, config, settings: RunSettings, log_dir) -> RunResult:
        if settings.stop_below_samples_per_second is not None:
            self.trials.append(config)
        return fake_result(config, settings)


def params(batch: int, precision: str = "float32", jit: bool = False, steps: int = 1) -> dict:
    return {
        "precision": precision,
        "jit_compile": jit,
        "batch_size": batch,
        "steps_per_execution": steps,
    }


def make_study(tmp_path: Path, runner: Runner) -> Study:
    return fake_study(tmp_path, runner, SPACE)


def test_a_larger_batch_than_a_measured_infeasible_one_is_skipped_and_never_run(
    tmp_path: Path,
) -> None:
    assert fidelity_of(config(512)) > TOLERANCE + noise_margin(NOISE)  # beyond the noise
    assert TOLERANCE < fidelity_of(config(256)) < TOLERANCE + noise_margin(NOISE)  # within it
    runner = Runner()
    study = make_study(tmp_path, runner)
    proposals = [
        params(64),  # 0: 0.9, feasible
        params(512),  # 1: 3.6, infeasible beyond the noise
        params(1024),  # 2: predicted from trials 0, 1
        params(1024, jit=True),  # 3: XLA learns differently here: run
        params(1024, "mixed_bfloat16"),  # 4: another precision: run
        params(256),  # 5: a smaller batch: run (2.7, infeasible within the noise)
        params(256, steps=64),  # 6: trial 5's curve: predicted from trial 5
        params(128),  # 7: nothing rules it out: run
    ]
    for proposal in proposals:
        study.optuna.enqueue_trial(proposal)

    study.optimize(n_trials=len(proposals))

    rows = study.records()
    skipped = [r.number for r in rows if predicted_from(r.user_attrs) is not None]
    assert skipped == [2, 6]
    assert [r.state for r in rows] == ["complete", "complete", "pruned", *["complete"] * 3,
                                       "pruned", "complete"]  # fmt: skip
    ran = [TrialConfig.from_dict({**p, "batch_size": p["batch_size"]}) for p in proposals]
    assert runner.trials == [ran[n] for n in (0, 1, 3, 4, 5, 7)]
    two, six = rows[2], rows[6]
    assert predicted_from(two.user_attrs) == (0, 1)
    assert two.reason is not None and two.reason.startswith("predicted infeasible: ")
    assert two.reason.endswith("predicted from trials 0, 1")
    assert predicted_from(six.user_attrs) == (5,)
    assert six.reason is not None and six.reason.endswith("predicted from trial 5")
    # Nothing measured: no throughput, no fidelity; infeasible to the sampler by trial 1's
    # measured fidelity over the tolerance (a lower bound of its own).
    assert two.throughput is None and two.fidelity is None and two.feasible is False
    violation = rows[1].fidelity - TOLERANCE
    constraints = study.optuna.trials[2].constraints
    assert constraints == pytest.approx({"fidelity": violation, "0": violation})
    assert study.optuna.trials[2].state == TrialState.PRUNED
    # It counts towards n_trials, as a trial predicted out of memory does.
    assert study.finished_count() == len(proposals)
    # Shown as predicted, not as stopped slower; never a candidate or a Pareto point.
    line = trial_line(two)
    assert "skipped, not run" in line and "predicted infeasible" in line
    assert "pruned" not in line and "slower" not in line
    info = pareto_info(study._stored())
    assert [(t.number, t.what) for t in info.not_plotted] == [
        (2, "predicted infeasible from trials 0, 1"),
        (6, "predicted infeasible from trial 5"),
    ]
    assert {2, 6}.isdisjoint(r.number for r in study.pareto_front())


def test_with_the_prediction_off_every_proposal_is_run(tmp_path: Path) -> None:
    runner = Runner()
    study = make_study(tmp_path, runner)
    writer.write_fidelity_prediction(study.optuna, enabled=False)
    for proposal in (params(64), params(512), params(1024)):
        study.optuna.enqueue_trial(proposal)

    study.optimize(n_trials=3)

    assert len(runner.trials) == 3
    assert all(predicted_from(r.user_attrs) is None for r in study.records())


# --------------------------------------------------------------------------------------------
# The bundled grids: no history of a study ever skips a feasible configuration
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["digits_cnn", "tabular_mlp", "transformer"])
def test_no_study_history_on_a_bundled_grid_skips_a_feasible_configuration(name: str) -> None:
    """What a study has measured of a grid, at any time, is the baseline and some of the grid's
    complete configurations (fidelity as the grid measured it). A prediction for a proposal
    reads only the measured configurations of the proposal's family (its learning settings but
    for the batch size), so every subset of each family, the baseline beside it, is every
    history there can be. For each, every configuration of the family predicted infeasible
    must be one the grid measured infeasible (or stopped early, without a fidelity)."""
    grid = Grid.load(GRIDS / f"{name}.json")
    margin = noise_margin(NoiseFloor.from_dict(grid.baseline["noise_floor"]))
    scores = grid.scores()
    baseline = Measured(BASELINE_NUMBER, grid.baseline_config, 0.0)
    families: dict[TrialConfig, list[TrialConfig]] = defaultdict(list)
    for entry in grid.entries:
        key = next((k for k in families if same_but_batch(k, entry.config)), entry.config)
        families[key].append(entry.config)
    wrong, predicted, by_rise, could_rise = [], 0, 0, False
    for members in families.values():
        largest = max(c.batch_size for c in members)
        could_rise |= any(
            c.batch_size < largest and scores[_key(c)][1] > TOLERANCE + margin
            for c in members
            if _key(c) in scores
        )
        measured = [
            Measured(n, c, scores[_key(c)][1]) for n, c in enumerate(members) if _key(c) in scores
        ]
        for size in range(len(measured) + 1):
            for known in itertools.combinations(measured, size):
                for proposal in members:
                    prediction = predict([baseline, *known], proposal, TOLERANCE, margin)
                    if prediction is None:
                        continue
                    predicted += 1
                    by_rise += prediction.rise_from is not None
                    score = scores.get(_key(proposal))
                    if score is not None and score[1] <= TOLERANCE:
                        wrong.append((proposal.describe(), [m.describe() for m in known]))
    assert not wrong, wrong
    assert predicted > by_rise  # the same curve: other steps per execution, or itself
    # A larger batch is predicted where a smaller one was infeasible beyond the noise (not on
    # the tabular MLP, whose only infeasible batch is its largest, 2.1-2.5 within the noise).
    assert (by_rise > 0) == could_rise
