"""autotune.float32_layers and the float32_layers setting: what each value keeps, the setting not
drawn under float32, and the structured start's rescue of a faster mixed-precision configuration
that drifts where float32 does not (docs/studies.md, "Float32 layers")."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import optuna
import pytest

from autotune.config import TrialConfig
from autotune.float32_layers import (
    AVAILABLE_KEY,
    CHANGED_KEY,
    FLOAT32_LAYERS,
    available,
    changes_more,
    kinds,
    layers_text,
)
from autotune.space import SearchSpace, choices, inactive_parameters
from autotune.store.schema import START_KEY
from autotune.study import Study
from autotune.study.rescues import island_rescues, island_values
from autotune.study.start import space_params
from tests.support.demo_study import write_experiment
from tests.support.fake_trials import BASE_BATCH, SPACE, TOLERANCE, fake_result
from tests.support.recipes import recipe_for

ISLANDS = SearchSpace(
    "islands",
    {
        "precision": choices("float32", "mixed_bfloat16"),
        "batch_size": choices(32, 128),
        "float32_layers": choices(*FLOAT32_LAYERS),
    },
)
BF16 = TrialConfig(batch_size=32, precision="mixed_bfloat16")
NO_ATTENTION = {"norms": 2, "attention": 0}


def test_each_value_keeps_its_kinds_and_more_than_the_one_before() -> None:
    assert [kinds(v) for v in FLOAT32_LAYERS] == [(), ("norms",), ("norms", "attention")]
    assert changes_more("norms", "none", NO_ATTENTION)
    assert not changes_more("norms+attention", "norms", NO_ATTENTION)  # no attention to keep
    assert changes_more("norms+attention", "none", {"norms": 0, "attention": 1})
    assert not changes_more("norms", "none", {"norms": 0, "attention": 1})
    assert changes_more("norms+attention", "norms", None)  # unknown model: it may
    assert not changes_more("none", "norms", None)
    with pytest.raises(ValueError, match=r"float32_layers must be one of .*'everything'"):
        kinds("everything")


def test_a_run_says_what_it_kept_and_what_its_model_has() -> None:
    effective = {CHANGED_KEY: ["layer_norm", "mha"], AVAILABLE_KEY: {"norms": 1, "attention": 1}}
    assert layers_text(effective) == "2 layers: layer_norm, mha"
    many = {CHANGED_KEY: [f"norm_{i}" for i in range(7)]}
    assert layers_text(many) == "7 layers: norm_0, norm_1, norm_2 and 4 more"
    assert layers_text({CHANGED_KEY: ["norm"]}) == "1 layer: norm"
    assert layers_text({CHANGED_KEY: []}) is None
    assert layers_text({}) is None
    assert available(effective) == {"norms": 1, "attention": 1}
    assert available({}) is None  # recorded before float32 layers were


def test_the_setting_is_not_drawn_under_float32() -> None:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    drawn: dict[str, set[str]] = {"float32": set(), "mixed_bfloat16": set()}
    for _ in range(40):
        trial = study.ask()
        config = ISLANDS.sample(trial, 32)
        drawn[config.precision].add(config.float32_layers)
        assert ("float32_layers" in trial.params) == (config.precision != "float32")
        study.tell(trial, 1.0)

    assert drawn == {"float32": {"none"}, "mixed_bfloat16": set(FLOAT32_LAYERS)}
    assert inactive_parameters({"precision": "float32"}) == {"float32_layers": "none"}
    assert inactive_parameters({}) == {"float32_layers": "none"}  # precision not drawn: float32
    assert inactive_parameters({"precision": "mixed_float16"}) == {}
    # An enqueued float32 configuration gives no float32_layers, which it does not draw.
    assert "float32_layers" not in space_params(ISLANDS, TrialConfig(batch_size=32))
    assert space_params(ISLANDS, dataclasses.replace(BF16, float32_layers="norms")) == {
        "precision": "mixed_bfloat16",
        "batch_size": 32,
        "float32_layers": "norms",
    }


def test_only_values_that_change_the_model_are_tried() -> None:
    assert island_values(ISLANDS, None) == ["norms", "norms+attention"]
    assert island_values(ISLANDS, NO_ATTENTION) == ["norms"]
    assert island_values(ISLANDS, {"norms": 0, "attention": 3}) == ["norms+attention"]
    assert island_values(ISLANDS, {"norms": 0, "attention": 0}) == []
    assert island_values(SPACE, None) == []  # the space does not search it


def test_a_faster_mixed_configuration_that_drifts_where_float32_does_not_is_rescued() -> None:
    baseline = TrialConfig(batch_size=32)
    large_f32 = TrialConfig(batch_size=128)
    large_bf16 = dataclasses.replace(large_f32, precision="mixed_bfloat16")
    measured = [
        (BF16, 2000.0, 3.0),  # drifts; float32 at batch 32 is the baseline: rescued
        (large_f32, 4000.0, 2.5),  # float32 drifts at batch 128 ...
        (large_bf16, 8000.0, 3.5),  # ... so its bfloat16 twin's drift is the batch's: not
    ]
    candidates = [c for c, *_ in measured]

    rescues = island_rescues(ISLANDS, candidates, measured, 1000.0, TOLERANCE, baseline)

    assert rescues == [
        dataclasses.replace(BF16, float32_layers="norms"),
        dataclasses.replace(BF16, float32_layers="norms+attention"),
    ]
    assert island_rescues(
        ISLANDS, candidates, measured, 1000.0, TOLERANCE, baseline, NO_ATTENTION
    ) == [dataclasses.replace(BF16, float32_layers="norms")]
    # Slower than the centre, within the tolerance, or not a start's configuration: none.
    assert island_rescues(ISLANDS, candidates, measured, 2500.0, TOLERANCE, baseline) == []
    assert island_rescues(ISLANDS, candidates, measured, 1000.0, 3.6, baseline) == []
    assert island_rescues(ISLANDS, [large_f32], measured, 1000.0, TOLERANCE, baseline) == []
    # A measured float32 trial within the tolerance counts as a twin too (XLA aside).
    feasible_f32 = dataclasses.replace(large_f32, jit_compile=True)
    measured[1] = (feasible_f32, 4000.0, 1.0)
    rescued = island_rescues(ISLANDS, candidates, measured, 1000.0, TOLERANCE, baseline)
    assert dataclasses.replace(large_bf16, float32_layers="norms") in rescued


#: The fake model's layers: two normalisation layers, no attention.
LAYERS = {AVAILABLE_KEY: NO_ATTENTION}


class IslandRunner:
    """Fake trials whose bfloat16 curves drift unless the normalisation layers stay float32."""

    def __init__(self) -> None:
        self.trials: list[TrialConfig] = []

    def __call__(self, reference, config, run_settings, log_dir):
        if run_settings.stop_below_samples_per_second is not None:
            self.trials.append(config)
        result = fake_result(config, run_settings)
        kept = ["norm_1", "norm_2"] if config.float32_layers != "none" else []
        effective = {**result.effective, **LAYERS, CHANGED_KEY: kept}
        result = dataclasses.replace(result, effective=effective)
        if config.precision == "float32" or kept:
            return result
        curve = [dataclasses.replace(p, val_loss=p.val_loss * 1.08) for p in result.curve]
        return dataclasses.replace(result, curve=curve)


def test_a_study_keeps_the_norms_of_its_drifting_bfloat16_probe_right_after_the_probes(
    tmp_path: Path,
) -> None:
    space = SearchSpace("islands", {**SPACE.parameters, "float32_layers": choices(*FLOAT32_LAYERS)})
    runner = IslandRunner()
    study = Study(
        write_experiment(tmp_path),
        space,
        f"sqlite:///{tmp_path / 's.db'}",
        runner=runner,
        seed=0,
    )
    start = [TrialConfig.from_dict(c) for c in study.optuna.user_attrs[START_KEY]]

    study.optimize(n_trials=len(start) + 1)

    # bfloat16 is twice as fast but over the tolerance, where float32 (the baseline) is not:
    # the next trial keeps the norms of a drifting bfloat16 probe in float32 (the fastest: the
    # base batch, or the checklist's where this machine's checklist is bfloat16), and never
    # tries "norms+attention", which the baseline recorded would change nothing more.
    assert TrialConfig(batch_size=BASE_BATCH, precision="mixed_bfloat16") in start
    rescue = runner.trials[len(start)]
    drifting = dataclasses.replace(rescue, float32_layers="none")
    assert rescue.float32_layers == "norms" and drifting.precision == "mixed_bfloat16"
    assert drifting in start
    assert all(c.float32_layers != "norms+attention" for c in runner.trials)
    by_config = {TrialConfig.from_dict(t.user_attrs["config"]): t for t in study.optuna.trials}
    assert by_config[drifting].values[1] > TOLERANCE
    assert by_config[rescue].values[1] <= TOLERANCE


def test_the_trial_and_the_recipe_show_the_layers_kept() -> None:
    from rich.console import Console

    from autotune.config import RunSettings
    from autotune.views.terminal import show_recipe, show_result

    config = dataclasses.replace(BF16, float32_layers="norms")
    result = fake_result(config, RunSettings())
    kept = {CHANGED_KEY: ["norm_1", "norm_2"], **LAYERS}
    result = dataclasses.replace(result, effective={**result.effective, **kept})
    out = Console(record=True, width=200)
    show_result(out, result)
    recipe = recipe_for(config, trial=3, experiment="x.py:x", effective=result.effective)
    show_recipe(out, recipe)
    text = out.export_text()

    rows = [line for line in text.splitlines() if "float32 layers" in line]
    assert len(rows) == 2 and all("2 layers: norm_1, norm_2" in row for row in rows)
    assert "float32_layers" in text and "norms" in text  # the recipe's config row
