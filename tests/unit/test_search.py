"""How a study proposes configurations: the structured start, its combination, stopped trials
ranked as dominated, and the sampler that does not repeat itself (autotune.study.start,
autotune.study.search, autotune.study.scoring). No TensorFlow."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.trial import TrialState

from autotune import hardware
from autotune.bundled import resolve_space
from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.space import IntRange, SearchSpace, choices
from autotune.study import Study
from autotune.study import start as start_module
from autotune.study.scoring import MIN_SHORTFALL, speed_shortfall
from autotune.study.search import FreshProposals, default_sampler
from autotune.study.start import (
    COMBINED_KEY,
    REFINED_KEY,
    START_KEY,
    best_measured,
    centre_of,
    combined_config,
    neighbours,
    structured_start,
)
from tests.support import fake_trials
from tests.support.demo_study import write_experiment
from tests.support.fake_trials import BASE_BATCH, SPACE, TOLERANCE, RecordingRunner

optuna.logging.set_verbosity(optuna.logging.WARNING)

AMX_CPU = {"gpus": [], "cpu_features": ["amx_bf16", "avx512f"]}
PLAIN_CPU = {"gpus": [], "cpu_features": ["avx2"]}
GPU = {"gpus": ["NVIDIA H100"], "cpu_features": []}


def config(precision="float32", jit_compile=False, batch_size=BASE_BATCH, **rest) -> TrialConfig:
    return TrialConfig(batch_size=batch_size, precision=precision, jit_compile=jit_compile, **rest)


def described(configs) -> list[str]:
    return [f"{c.precision} {'xla' if c.jit_compile else '-'} {c.batch_size}" for c in configs]


# --------------------------------------------------------------------------------------------
# The structured start's probes
# --------------------------------------------------------------------------------------------


def test_start_probes_one_factor_at_a_time_then_the_checklist() -> None:
    start = structured_start(SPACE, BASE_BATCH, AMX_CPU)

    assert described(start) == [
        "mixed_bfloat16 - 32",  # each other precision at the base batch size
        "mixed_float16 - 32",
        "float32 xla 32",  # XLA on
        "float32 - 64",  # batch x2, x4
        "float32 - 128",
        "mixed_bfloat16 xla 64",  # the checklist configuration for an AMX CPU
    ]
    assert TrialConfig.baseline(BASE_BATCH) not in start  # measured as the baseline already


def test_start_checklist_follows_the_hardware_and_is_not_repeated() -> None:
    plain = structured_start(SPACE, BASE_BATCH, PLAIN_CPU)
    gpu = structured_start(SPACE, BASE_BATCH, GPU)

    assert described(plain)[-1] == "float32 xla 64"
    assert described(gpu)[-1] == "mixed_float16 xla 64"
    assert len(set(plain)) == len(plain)


def test_start_moves_probes_into_the_space_and_leaves_out_what_it_cannot_express() -> None:
    space = SearchSpace(
        "narrow",
        {
            "precision": choices("float32", "mixed_bfloat16"),
            "batch_size": IntRange(64, 200, 8),
            "prefetch": choices(1, 2),
        },
    )

    start = structured_start(space, BASE_BATCH, GPU)

    # The centre is the baseline moved into the space (batch 32 -> 64, prefetch -> 1).
    assert centre_of(space, BASE_BATCH) == config(batch_size=64, prefetch=1)
    assert start[0] == config(batch_size=64, prefetch=1)
    # XLA is not searched (stays off); x4 of 32 is 128; mixed_float16 is not in the space, so
    # the GPU checklist keeps float32; its batch 64 and prefetch 'autotune' snap to the space.
    assert described(start) == ["float32 - 64", "mixed_bfloat16 - 64", "float32 - 128"]
    assert all(c.prefetch == 1 for c in start)


def test_start_probes_the_most_steps_per_execution_a_space_allows() -> None:
    space = SearchSpace(
        "steps", {"batch_size": choices(32, 64), "steps_per_execution": choices(1, 4, 16)}
    )

    start = structured_start(space, BASE_BATCH, PLAIN_CPU)

    assert config(steps_per_execution=16) in start
    assert combined_config(
        CENTRE,
        1000.0,
        [(config(steps_per_execution=16), 1300.0, 0.0), (config(batch_size=64), 1500.0, 0.5)],
        TOLERANCE,
    ) == config(batch_size=64, steps_per_execution=16)


def test_every_start_configuration_is_in_its_space() -> None:
    for name in ("quick", "cpu", "gpu", "input", "keras3"):
        space = resolve_space(name)
        for base in (16, 32, 100):
            for probe in structured_start(space, base, AMX_CPU):
                values = probe.to_dict()
                for key, parameter in space.parameters.items():
                    if isinstance(parameter, IntRange):
                        assert parameter.low <= values[key] <= parameter.high, (name, key)
                        assert values[key] % parameter.multiple_of == 0, (name, key)
                    else:
                        assert values[key] in parameter.values, (name, key, values[key])


# --------------------------------------------------------------------------------------------
# The combination of the probes that helped
# --------------------------------------------------------------------------------------------

CENTRE = config()


def test_combination_takes_each_factors_fastest_feasible_probe() -> None:
    measured = [
        (config("mixed_bfloat16"), 1100.0, 0.2),
        (config("mixed_float16"), 900.0, 0.1),  # slower than the centre
        (config(jit_compile=True), 950.0, 0.0),  # slower
        (config(batch_size=64), 1500.0, 0.5),
        (config(batch_size=128), 2500.0, 2.0),  # fastest, but over the tolerance
        (config("mixed_bfloat16", True, 64), 3000.0, 0.1),  # two factors: not a probe
    ]

    combined = combined_config(CENTRE, 1000.0, measured, TOLERANCE)

    assert combined == config("mixed_bfloat16", False, 64)


def test_no_combination_with_fewer_than_two_improved_factors() -> None:
    one = [(config(batch_size=64), 1500.0, 0.5), (config(jit_compile=True), 900.0, 0.0)]
    other_pipeline = [
        (config("mixed_bfloat16", prefetch=2), 1100.0, 0.0),  # also changes the pipeline
        (config(batch_size=64), 1500.0, 0.5),
    ]

    assert combined_config(CENTRE, 1000.0, one, TOLERANCE) is None
    assert combined_config(CENTRE, 1000.0, other_pipeline, TOLERANCE) is None
    assert combined_config(CENTRE, 1000.0, [], TOLERANCE) is None


# --------------------------------------------------------------------------------------------
# The local search around the best configuration
# --------------------------------------------------------------------------------------------


def test_neighbours_change_one_factor_in_the_start_order() -> None:
    best = config("mixed_bfloat16", True, 64)

    assert described(neighbours(SPACE, best)) == [
        "float32 xla 64",  # each other precision
        "mixed_float16 xla 64",
        "mixed_bfloat16 - 64",  # XLA toggled
        "mixed_bfloat16 xla 128",  # batch x2, /2
        "mixed_bfloat16 xla 32",
    ]
    # At the space's edge the doubled batch snaps back to the config itself: left out.
    assert described(neighbours(SPACE, config(batch_size=512))) == [
        "mixed_bfloat16 - 512",
        "mixed_float16 - 512",
        "float32 xla 512",
        "float32 - 256",
    ]


def test_neighbours_of_steps_ranges_and_backends() -> None:
    space = SearchSpace(
        "keras3-like",
        {
            "backend": choices("tensorflow", "jax"),
            "jit_compile": choices(False, True),
            "batch_size": choices(32, 64),
            "steps_per_execution": IntRange(1, 64, 1),
        },
    )
    on_jax = config(jit_compile=True, backend="jax", steps_per_execution=8)

    found = neighbours(space, on_jax)

    # No XLA toggle on JAX (jax.jit is how it runs); a range offers its ends; the other backend
    # keeps the compiled step, so TensorFlow runs with XLA.
    assert [(c.backend, c.jit_compile, c.batch_size, c.steps_per_execution) for c in found] == [
        ("jax", True, 64, 8),
        ("jax", True, 32, 1),
        ("jax", True, 32, 64),
        ("tensorflow", True, 32, 8),
    ]
    to_jax = neighbours(space, config())[-1]
    assert (to_jax.backend, to_jax.jit_compile) == ("jax", True)


def test_best_measured_is_the_fastest_feasible_and_must_beat_the_centre() -> None:
    measured = [
        (config("mixed_bfloat16"), 1500.0, 0.2),
        (config(batch_size=128), 2500.0, 2.0),  # fastest, but over the tolerance
        (config(batch_size=64), 1200.0, 0.5),
    ]

    assert best_measured(1000.0, measured, TOLERANCE) == config("mixed_bfloat16")
    assert best_measured(1600.0, measured, TOLERANCE) is None
    assert best_measured(1000.0, [], TOLERANCE) is None


# --------------------------------------------------------------------------------------------
# The start in a study
# --------------------------------------------------------------------------------------------


Runner = RecordingRunner  # the fake world's trials, recording each trial's configuration


@pytest.fixture
def experiment_ref(tmp_path: Path) -> str:
    return write_experiment(tmp_path)


def make(tmp_path: Path, reference: str, runner, **kwargs) -> Study:
    return Study(
        reference, SPACE, f"sqlite:///{tmp_path / 's.db'}", runner=runner, seed=0, **kwargs
    )


def test_a_new_study_runs_its_start_then_the_combination(
    tmp_path, experiment_ref, monkeypatch
) -> None:
    facts = {**hardware.hardware(), **PLAIN_CPU}
    monkeypatch.setattr(hardware, "hardware", lambda: facts)  # checklist: float32 xla 64
    runner = Runner()
    study = make(tmp_path, experiment_ref, runner)
    start = [TrialConfig.from_dict(c) for c in study.optuna.user_attrs[START_KEY]]

    study.optimize(n_trials=len(start) + 2)

    assert runner.trials[: len(start)] == start
    # In the fake world bfloat16, XLA and batch 64 are each faster than the baseline within the
    # tolerance (batch 128 is faster still, but over it): the combination takes all three.
    combined = TrialConfig.from_dict(study.optuna.user_attrs[COMBINED_KEY])
    assert combined == config("mixed_bfloat16", True, 64)
    assert runner.trials[len(start)] == combined
    # The stopped float16 probe is ranked as dominated: pruned with a violated constraint.
    slow = next(t for t in study.optuna.trials if t.params["precision"] == "mixed_float16")
    assert slow.state == TrialState.PRUNED and slow.constraints["speed"] > 1


@pytest.fixture
def amx_cpu(monkeypatch) -> None:
    """An AMX CPU's facts: its checklist configuration (bfloat16, XLA, batch 64) is the fake
    world's combination, which so runs once, as a probe."""
    facts = {**hardware.hardware(), **AMX_CPU}
    monkeypatch.setattr(hardware, "hardware", lambda: facts)


def start_and_combination(study: Study) -> list[TrialConfig]:
    """The configurations the start ran before its local search, once each."""
    start = [TrialConfig.from_dict(c) for c in study.optuna.user_attrs[START_KEY]]
    combined = TrialConfig.from_dict(study.optuna.user_attrs[COMBINED_KEY])
    return list(dict.fromkeys([*start, combined]))


def test_after_the_combination_the_start_tries_the_neighbours_of_the_best(
    tmp_path, experiment_ref, amx_cpu
) -> None:
    runner = Runner()
    study = make(tmp_path, experiment_ref, runner)
    study.optimize(n_trials=len(study.optuna.user_attrs[START_KEY]) + 1)
    before = start_and_combination(study)
    best = before[-1]  # the combination: bfloat16, XLA, batch 64, the fastest feasible

    study.optimize(n_trials=len(before) + 6)

    assert study.optuna.user_attrs[REFINED_KEY] == [best.to_dict()]
    untried = [n for n in neighbours(SPACE, best) if n not in before]
    assert runner.trials[len(before) : len(before) + len(untried)] == untried
    # None of them beats it (float32 is slower, batch 128 over the tolerance): the local search
    # ends there and the sampler goes on with configurations nobody tried.
    assert len(set(runner.trials)) == len(runner.trials)


def test_the_local_search_moves_to_a_faster_neighbour_while_rounds_remain(
    tmp_path, experiment_ref, amx_cpu, monkeypatch
) -> None:
    plain = fake_trials.speed_of

    def float32_xla_wins(c: TrialConfig) -> float:  # a trap for main effects: two factors
        faster = c.precision == "float32" and c.jit_compile and c.batch_size == 64
        return plain(c) * (3.0 if faster else 1.0)

    monkeypatch.setattr(fake_trials, "speed_of", float32_xla_wins)
    monkeypatch.setattr(start_module, "REFINE_ROUNDS", 2)
    runner = Runner()
    study = make(tmp_path, experiment_ref, runner)
    study.optimize(n_trials=len(study.optuna.user_attrs[START_KEY]) + 1)
    before = start_and_combination(study)
    combined, winner = before[-1], config("float32", True, 64)

    study.optimize(n_trials=len(before) + 12)

    # The first neighbour of the combination is the winner: the search moves at once and
    # probes the winner's neighbours next; the combination's other neighbours are never run.
    assert neighbours(SPACE, combined)[0] == winner
    assert study.optuna.user_attrs[REFINED_KEY] == [combined.to_dict(), winner.to_dict()]
    untried = [n for n in neighbours(SPACE, winner) if n not in [*before, winner]]
    after = len(before) + 1
    assert runner.trials[len(before)] == winner
    assert runner.trials[after : after + len(untried)] == untried


def test_the_local_search_stops_when_its_rounds_are_spent(
    tmp_path, experiment_ref, amx_cpu, monkeypatch
) -> None:
    plain = fake_trials.speed_of
    monkeypatch.setattr(
        fake_trials,
        "speed_of",
        lambda c: plain(c) * (3.0 if c == config("float32", True, 64) else 1.0),
    )
    runner = Runner()
    study = make(tmp_path, experiment_ref, runner)  # one round (REFINE_ROUNDS)
    study.optimize(n_trials=len(study.optuna.user_attrs[START_KEY]) + 1)
    before = start_and_combination(study)

    study.optimize(n_trials=len(before) + 8)

    assert start_module.REFINE_ROUNDS == 1
    assert study.optuna.user_attrs[REFINED_KEY] == [before[-1].to_dict()]
    assert runner.trials[len(before)] == config("float32", True, 64)
    # Nothing is enqueued after it: the winner's own neighbours are left to the sampler.
    later = [t for t in study.optuna.trials if t.params and t.number > len(before)]
    assert len(later) == 7
    assert not any("fixed_params" in t.system_attrs for t in later)


def test_a_resumed_study_goes_on_with_the_neighbours_it_had_not_tried(
    tmp_path, experiment_ref, amx_cpu
) -> None:
    first = Runner()
    study = make(tmp_path, experiment_ref, first)
    start = len(study.optuna.user_attrs[START_KEY])
    study.optimize(n_trials=start + 2)  # the start (the combination in it) and two neighbours
    second = Runner()
    resumed = make(tmp_path, experiment_ref, second)

    resumed.optimize(n_trials=start + 4)

    before = start_and_combination(resumed)
    untried = [n for n in neighbours(SPACE, before[-1]) if n not in before]
    assert first.trials[len(before) :] == untried[:2]
    assert second.trials == untried[2:4]


def test_a_resumed_study_finishes_its_start(tmp_path, experiment_ref) -> None:
    first = Runner()
    make(tmp_path, experiment_ref, first).optimize(n_trials=2)
    second = Runner()
    study = make(tmp_path, experiment_ref, second)

    study.optimize(n_trials=5)

    start = [TrialConfig.from_dict(c) for c in study.optuna.user_attrs[START_KEY]]
    assert first.trials == start[:2]
    assert second.trials == start[2:5]


def test_a_random_start_stores_no_probes_and_enqueued_trials_run_first(
    tmp_path, experiment_ref
) -> None:
    runner = Runner()
    study = make(tmp_path, experiment_ref, runner, start="random")
    mine = {"precision": "float32", "jit_compile": False, "batch_size": 512}
    study.optuna.enqueue_trial(mine)

    study.optimize(n_trials=2)

    assert study.optuna.user_attrs[START_KEY] == []
    assert runner.trials[0] == TrialConfig(**mine)


def test_a_caller_enqueued_trial_runs_before_the_start(tmp_path, experiment_ref) -> None:
    runner = Runner()
    study = make(tmp_path, experiment_ref, runner)
    mine = {"precision": "float32", "jit_compile": False, "batch_size": 512}
    study.optuna.enqueue_trial(mine)

    study.optimize(n_trials=2)

    start = [TrialConfig.from_dict(c) for c in study.optuna.user_attrs[START_KEY]]
    assert runner.trials == [TrialConfig(**mine), start[0]]


def test_an_unknown_start_is_refused(tmp_path, experiment_ref) -> None:
    with pytest.raises(ConfigError, match=r"start.*'structured', 'random'.*'grid'"):
        make(tmp_path, experiment_ref, Runner(), start="grid")


# --------------------------------------------------------------------------------------------
# Stopped trials, to the sampler
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("throughput", "expected"),
    [(500.0, 1.0), (10.0, 99.0), (999.9, MIN_SHORTFALL), (2000.0, MIN_SHORTFALL), (0.0, 1e6)],
)
def test_speed_shortfall_is_always_violated_and_grows_with_slowness(throughput, expected):
    assert speed_shortfall(throughput, 1000.0) == pytest.approx(expected, rel=1e-3)


# --------------------------------------------------------------------------------------------
# FreshProposals: no configuration proposed twice
# --------------------------------------------------------------------------------------------


class Favourite(optuna.samplers.BaseSampler):
    """A sampler that always proposes the same configuration."""

    def infer_relative_search_space(self, study, trial):
        return {
            "precision": CategoricalDistribution(["float32", "mixed_bfloat16"]),
            "batch_size": IntDistribution(16, 64, step=16),
        }

    def sample_relative(self, study, trial, search_space):
        return {"precision": "float32", "batch_size": 32}

    def sample_independent(self, study, trial, name, distribution):
        raise AssertionError("every parameter is sampled relative")


def run_favourite(trials: int, seed: int = 0) -> list[tuple]:
    study = optuna.create_study(sampler=FreshProposals(Favourite(), seed))

    def objective(trial):
        trial.suggest_categorical("precision", ["float32", "mixed_bfloat16"])
        trial.suggest_int("batch_size", 16, 64, step=16)
        return 0.0

    study.optimize(objective, n_trials=trials)
    return [(t.params["precision"], t.params["batch_size"]) for t in study.trials]


def test_a_repeated_proposal_becomes_an_untried_neighbour_then_anything_untried() -> None:
    proposed = run_favourite(8)

    assert proposed[0] == ("float32", 32)
    # Neighbours one step away first: the other precision, batch 16 and 48 ...
    assert set(proposed[1:4]) == {("mixed_bfloat16", 32), ("float32", 16), ("float32", 48)}
    # ... then the rest of the space, until every one of its 8 configurations is tried.
    assert len(set(proposed)) == 8


def test_a_space_with_nothing_untried_gets_the_proposal_as_it_is() -> None:
    proposed = run_favourite(9)

    assert len(set(proposed)) == 8
    assert proposed[8] == ("float32", 32)


def test_untried_draws_depend_on_the_seed_only() -> None:
    assert run_favourite(6, seed=1) == run_favourite(6, seed=1)
    assert any(run_favourite(6, seed=s) != run_favourite(6, seed=1) for s in range(2, 6))


class JaxFavourite(optuna.samplers.BaseSampler):
    """Proposes JAX at batch 32 with ``jit_compile`` false: a parameter JAX does not draw."""

    def infer_relative_search_space(self, study, trial):
        return {
            "backend": CategoricalDistribution(["tensorflow", "jax"]),
            "jit_compile": CategoricalDistribution([False, True]),
            "batch_size": IntDistribution(16, 32, step=16),
        }

    def sample_relative(self, study, trial, search_space):
        return {"backend": "jax", "jit_compile": False, "batch_size": 32}

    def sample_independent(self, study, trial, name, distribution):
        raise AssertionError("every parameter is sampled relative")


def test_a_proposal_differing_only_in_what_jax_does_not_draw_is_a_repeat() -> None:
    space = SearchSpace(
        "backends",
        {"backend": choices("tensorflow", "jax"), "jit_compile": choices(False, True)},
    )
    study = optuna.create_study(sampler=FreshProposals(JaxFavourite(), 0))

    def objective(trial):
        # As SearchSpace.sample draws: on JAX, jit_compile is not suggested (it is true).
        space.sample(trial, BASE_BATCH)
        trial.suggest_int("batch_size", 16, 32, step=16)
        return 0.0

    study.optimize(objective, n_trials=4)

    keys = [
        (t.params["backend"], t.params.get("jit_compile", True), t.params["batch_size"])
        for t in study.trials
    ]
    assert "jit_compile" not in study.trials[0].params
    # JAX at batch 32 (with jax.jit) once; the repeats become untried neighbours, never the
    # same configuration with a jit_compile that JAX ignores.
    assert len(set(keys)) == 4
    assert keys[0] == ("jax", True, 32)


def test_the_default_sampler_is_tpe_behind_fresh_proposals() -> None:
    sampler = default_sampler(3)

    assert isinstance(sampler, FreshProposals)
    assert isinstance(sampler.sampler, optuna.samplers.TPESampler)


def test_a_study_of_a_tiny_space_measures_each_configuration_once(tmp_path, experiment_ref) -> None:
    runner = Runner()
    space = SearchSpace(
        "tiny", {"precision": choices("float32", "mixed_bfloat16"), "batch_size": choices(32, 64)}
    )
    study = Study(experiment_ref, space, f"sqlite:///{tmp_path / 's.db'}", runner=runner, seed=0)

    study.optimize(n_trials=10)

    keys = [json.dumps(c.to_dict(), sort_keys=True) for c in runner.trials]
    assert len(keys) == len(set(keys)) == 3  # the whole space but the baseline itself
    assert study.finished_count() == 3  # then the study stops: nothing left to measure
