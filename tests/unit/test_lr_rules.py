"""autotune.lr_rules and the lr_rule setting: each rule's rate and warm-up per step, the rule not
drawn at the base batch size, and the structured start's rescue of a faster larger batch that
drifts (docs/studies.md, "The learning-rate rule")."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import optuna
import pytest

from autotune import settings
from autotune.config import TrialConfig
from autotune.exceptions import ConfigError
from autotune.experiment import Experiment
from autotune.lr_rules import LR_RULES, WARMUP_SHARE, has_warmup, learning_rate, warmup_steps
from autotune.space import IntRange, SearchSpace, choices, inactive_parameters
from autotune.store.schema import START_KEY
from autotune.study import Study
from autotune.study.rescues import rule_rescues
from autotune.study.start import space_params, structured_start
from tests.support.demo_study import write_experiment
from tests.support.fake_trials import BASE_BATCH, SPACE, TOLERANCE, drift_of, fake_result

RATE = 0.01


def rate(rule: str, batch_size: int, samples: int = 6400, scaling: str = "linear"):
    return learning_rate(
        rule,
        experiment_scaling=scaling,
        base_rate=RATE,
        base_batch_size=32,
        batch_size=batch_size,
        samples=samples,
    )


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("linear", RATE * 4),
        ("sqrt", RATE * 2),
        ("none", RATE),
        ("linear_warmup", RATE * 4),
        ("sqrt_warmup", RATE * 2),
        ("experiment", RATE * 2),  # the experiment's own rule: sqrt here
    ],
)
def test_each_rule_gives_its_documented_rate_at_four_times_the_base_batch(rule, expected):
    learning = rate(rule, 128, scaling="sqrt")

    assert learning.rate == pytest.approx(expected)
    assert learning.rule == rule
    assert learning.scaling == ("sqrt" if rule == "experiment" else rule.removesuffix("_warmup"))
    assert learning.warmup_steps == (0 if not has_warmup(rule) else math.ceil(0.1 * 6400 / 128))


def test_at_the_base_batch_every_rule_gives_the_base_rate():
    assert {rate(rule, 32).rate for rule in LR_RULES} == {RATE}


def test_a_warm_up_rises_linearly_over_its_share_of_the_steps_then_holds():
    learning = rate("linear_warmup", 64, samples=6400)  # 100 steps, a warm-up of 10
    assert WARMUP_SHARE == 0.1 and learning.warmup_steps == 10

    per_step = [learning.at_step(step) for step in range(12)]

    assert per_step[:10] == pytest.approx([RATE * 2 * (k + 1) / 10 for k in range(10)])
    assert per_step[9:] == pytest.approx([RATE * 2] * 3)


def test_a_rule_without_warm_up_has_the_same_rate_at_every_step():
    learning = rate("sqrt", 128)

    assert learning.warmup_steps == 0
    assert {learning.at_step(step) for step in (0, 1, 500)} == {learning.rate}
    assert learning.to_dict() == {
        "learning_rate": pytest.approx(RATE * 2),
        "lr_rule": "sqrt",
        "lr_scaling": "sqrt",
        "lr_warmup_steps": 0,
    }


def test_a_short_run_still_warms_up_over_one_step():
    assert warmup_steps(samples=10, batch_size=512) == 1


def test_an_unknown_rule_is_refused_by_name():
    with pytest.raises(ValueError, match=r"lr_rule must be one of .* Received: 'cosine'"):
        rate("cosine", 64)
    with pytest.raises(ConfigError, match=r"TrialConfig\.lr_rule must be one of"):
        TrialConfig(batch_size=64, lr_rule="cosine")  # type: ignore[arg-type]


def test_the_experiment_gives_the_rate_of_a_rule():
    experiment = Experiment(
        name="e",
        model=lambda: None,
        train_data=lambda: None,
        validation_data=lambda: None,
        loss="mse",
        optimizer=lambda rate: None,
        base_batch_size=32,
        base_learning_rate=RATE,
        lr_scaling="none",
    )

    assert experiment.learning_rate(128) == RATE
    assert experiment.learning_rate_of("experiment", 128, 6400).rate == RATE
    assert experiment.learning_rate_of("linear_warmup", 128, 6400).rate == pytest.approx(4 * RATE)


def test_lr_rule_changes_what_the_model_learns_and_is_never_probed_alone():
    lr_rule = settings.setting("lr_rule")

    assert lr_rule.changes_learning and lr_rule.default == "experiment"
    assert "lr_rule" not in settings.curve_neutral() and "lr_rule" not in settings.probed()
    assert TrialConfig.from_dict({"batch_size": 64}).lr_rule == "experiment"  # stored before


# ------------------------------------------------------------------ the search space
RULES = SearchSpace(
    "rules",
    {"batch_size": choices(32, 128), "lr_rule": choices("experiment", "sqrt", "sqrt_warmup")},
)


def test_the_rule_is_not_drawn_at_the_base_batch_size():
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    drawn: dict[int, set[str]] = {32: set(), 128: set()}
    for _ in range(40):
        trial = study.ask()
        config = RULES.sample(trial, 32)
        drawn[config.batch_size].add(config.lr_rule)
        assert ("lr_rule" in trial.params) == (config.batch_size != 32)
        study.tell(trial, 1.0)

    assert drawn == {32: {"experiment"}, 128: {"experiment", "sqrt", "sqrt_warmup"}}
    bf16 = {"precision": "mixed_bfloat16"}
    assert inactive_parameters({"batch_size": 32, **bf16}, 32) == {"lr_rule": "experiment"}
    assert inactive_parameters({"batch_size": 64, **bf16}, 32) == {}


def test_an_enqueued_base_batch_configuration_gives_no_rule_the_space_lacks():
    space = SearchSpace("s", {"batch_size": choices(32, 128), "lr_rule": choices("sqrt")})
    at_base = TrialConfig(batch_size=32)

    assert space_params(space, at_base) == {"batch_size": 32}
    assert space_params(space, TrialConfig(batch_size=128, lr_rule="sqrt")) == {
        "batch_size": 128,
        "lr_rule": "sqrt",
    }
    # The probes snap to a rule the space holds where one is drawn, never at the base batch.
    probes = structured_start(space, 32, {})
    assert {(c.batch_size, c.lr_rule) for c in probes} <= {(32, "experiment"), (128, "sqrt")}


# ------------------------------------------------------------------ the start's rescue
def test_a_faster_drifting_larger_batch_is_rescued_under_each_other_rule_fastest_first():
    fast, faster = TrialConfig(batch_size=128), TrialConfig(batch_size=256)
    feasible, slow = TrialConfig(batch_size=64), TrialConfig(batch_size=512)
    measured = [
        (fast, 3000.0, 2.0),
        (faster, 6000.0, 3.0),
        (feasible, 2000.0, 1.0),  # within the tolerance: nothing to rescue
        (slow, 900.0, 4.0),  # slower than the centre: not worth it
        (TrialConfig(batch_size=32), 1000.0, 5.0),  # the base batch: the rule changes nothing
    ]
    candidates = [c for c, *_ in measured]

    rescues = rule_rescues(RULES, candidates, measured, 1000.0, TOLERANCE, 32)

    assert [(c.batch_size, c.lr_rule) for c in rescues] == [
        (256, "sqrt"),
        (256, "sqrt_warmup"),
        (128, "sqrt"),
        (128, "sqrt_warmup"),
    ]
    assert rule_rescues(RULES, [fast], measured, 1000.0, TOLERANCE, 32)[0].batch_size == 128
    # The experiment's own rule (sqrt here) trains the curve that drifted: not retried.
    own = rule_rescues(RULES, [fast], measured, 1000.0, TOLERANCE, 32, experiment_scaling="sqrt")
    assert [c.lr_rule for c in own] == ["sqrt_warmup"]
    no_rules = SearchSpace("s", {"batch_size": choices(32, 128)})
    assert rule_rescues(no_rules, candidates, measured, 1000.0, TOLERANCE, 32) == []


def gentler(config: TrialConfig) -> float:
    """The fake world's drift, where any rule but the experiment's keeps a quarter of it."""
    return drift_of(config) * (0.25 if config.lr_rule != "experiment" else 1.0)


class RuleRunner:
    """Fake trials whose curves drift less under another learning-rate rule."""

    def __init__(self) -> None:
        self.trials: list[TrialConfig] = []

    def __call__(self, reference, config, run_settings, log_dir):
        if run_settings.stop_below_samples_per_second is not None:
            self.trials.append(config)
        result = fake_result(config, run_settings)
        scaling = "linear" if config.lr_rule == "experiment" else config.lr_rule.split("_")[0]
        result = dataclasses.replace(result, effective={**result.effective, "lr_scaling": scaling})
        if config.lr_rule == "experiment":
            return result
        shift = gentler(config) - drift_of(config)
        curve = [dataclasses.replace(p, val_loss=p.val_loss + shift) for p in result.curve]
        return dataclasses.replace(result, curve=curve)


def test_a_study_tries_the_rules_on_its_drifting_larger_batch_probe_right_after_the_probes(
    tmp_path: Path,
) -> None:
    space = SearchSpace(
        "rules",
        {**SPACE.parameters, "lr_rule": choices("experiment", "linear", "sqrt", "sqrt_warmup")},
    )
    runner = RuleRunner()
    study = Study(
        write_experiment(tmp_path),
        space,
        f"sqlite:///{tmp_path / 's.db'}",
        runner=runner,
        seed=0,
    )
    start = [TrialConfig.from_dict(c) for c in study.optuna.user_attrs[START_KEY]]

    study.optimize(n_trials=len(start) + 2)

    # Batch 128 (4x) is faster than the baseline but over the tolerance with the experiment's
    # linear rule (the fake world's drift); the next two trials are it under the other rules,
    # never under "linear": the baseline recorded that as the experiment's own, the same curve.
    drifting = TrialConfig(batch_size=4 * BASE_BATCH)
    assert drifting in start
    assert runner.trials[len(start) : len(start) + 2] == [
        dataclasses.replace(drifting, lr_rule="sqrt"),
        dataclasses.replace(drifting, lr_rule="sqrt_warmup"),
    ]
    rescued = [
        t
        for t in study.optuna.trials
        if t.params.get("lr_rule") in ("sqrt", "sqrt_warmup") and t.values is not None
    ]
    assert len(rescued) == 2 and all(t.values[1] <= TOLERANCE for t in rescued)
    assert all(t.params["batch_size"] == 128 for t in rescued)


def test_the_cpu_space_file_format_takes_the_rule(tmp_path: Path) -> None:
    from autotune.space import load_space

    path = tmp_path / "s.toml"
    path.write_text(
        'name = "s"\n[parameters]\nbatch_size = { low = 32, high = 128, multiple_of = 16 }\n'
        'lr_rule = ["experiment", "sqrt_warmup"]\n',
        encoding="utf-8",
    )
    space = load_space(path)
    assert space.parameters["lr_rule"] == choices("experiment", "sqrt_warmup")
    assert isinstance(space.parameters["batch_size"], IntRange)
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "s"\n[parameters]\nlr_rule = ["cosine"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"lr_rule.*must be one of"):
        load_space(bad)


def test_the_rate_is_shown_with_its_rule_and_warm_up():
    from autotune.lr_rules import rate_text

    assert rate_text(0.04, {"lr_scaling": "linear", "lr_warmup_steps": 10}) == (
        "0.04 (linear, warmed up over 10 steps)"
    )
    assert rate_text(0.02, {"lr_scaling": "sqrt", "lr_warmup_steps": 0}) == "0.02 (sqrt)"
    assert rate_text(0.01, {}) == "0.01"  # a run stored before the rule was recorded
