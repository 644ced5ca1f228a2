"""autotune.analysis.attribution: which of a winner's settings carry its speed-up (synthetic
rounds)."""

from __future__ import annotations

import pytest

from autotune.analysis.attribution import Attribution, changed_settings, reverted, same_curve
from autotune.config import TrialConfig

BASE = TrialConfig.baseline(32)
WINNER = TrialConfig(batch_size=256, precision="mixed_bfloat16", prefetch=1, num_parallel_calls=1)


def scaled(values, factors):
    return tuple(v * f for v, f in zip(values, factors, strict=True))


def test_changed_settings_and_reversions():
    assert changed_settings(WINNER, BASE) == (
        "batch_size", "precision", "prefetch", "num_parallel_calls",
    )  # fmt: skip
    assert reverted(WINNER, BASE, "prefetch", "num_parallel_calls") == TrialConfig(
        batch_size=256, precision="mixed_bfloat16"
    )
    assert same_curve(WINNER, reverted(WINNER, BASE, "prefetch"))
    assert not same_curve(WINNER, reverted(WINNER, BASE, "batch_size"))


def test_a_setting_carries_the_speed_up_when_reverting_it_is_slower_beyond_noise():
    winner = (2000.0, 2100.0, 1900.0, 2050.0, 1950.0, 2000.0)
    attribution = Attribution(
        trial=7,
        settings=("batch_size", "precision", "prefetch", "num_parallel_calls"),
        winner_samples_per_second=winner,
        reverted_samples_per_second={
            "batch_size": tuple(w * 0.5 for w in winner),
            "precision": scaled(winner, (0.8, 0.85, 0.9, 0.82, 0.88, 0.86)),
            "prefetch": scaled(winner, (1.02, 0.97, 1.01, 0.99, 1.03, 0.98)),
        },
        failed=("num_parallel_calls",),
    )

    assert attribution.ratio("batch_size").median == pytest.approx(0.5)
    assert attribution.carries("batch_size") and attribution.carries("precision")
    assert not attribution.carries("prefetch")  # its interval reaches 1: within noise
    assert attribution.carries("num_parallel_calls")  # failed without it: it stays
    assert attribution.within_noise() == ("prefetch",)
    assert attribution.minimal(WINNER, BASE) == reverted(WINNER, BASE, "prefetch")
    assert attribution.describe() == (
        "carried by batch_size, precision, num_parallel_calls; within noise: prefetch"
    )
    assert Attribution.from_dict(attribution.to_dict()) == attribution


def test_an_unmeasured_setting_carries_it():
    attribution = Attribution(7, ("prefetch",), (1.0, 1.0), {"prefetch": (1.0,)})

    assert attribution.ratio("prefetch") is None
    assert attribution.carries("prefetch")
    assert attribution.minimal(WINNER, BASE) == WINNER


def test_a_setting_whose_reversion_drifts_is_kept_without_being_timed():
    winner = TrialConfig(batch_size=128, lr_rule="linear_warmup", steps_per_execution=8)
    attribution = Attribution(
        trial=8,
        settings=("batch_size", "steps_per_execution", "lr_rule"),
        winner_samples_per_second=(2000.0, 2000.0),
        reverted_samples_per_second={
            "batch_size": (1000.0, 1000.0),
            "steps_per_execution": (2000.0, 2010.0),
        },
        rounds=6,
        drifts={"lr_rule": 4},  # trial 4: bs=128 under the experiment's rule, over the tolerance
    )

    assert attribution.carries("lr_rule") and attribution.ratio("lr_rule") is None
    assert "lr_rule" not in attribution.measuring()
    assert attribution.minimal(winner, BASE) == reverted(winner, BASE, "steps_per_execution")
    assert attribution.minimal(winner, BASE).lr_rule == "linear_warmup"
    assert attribution.describe() == (
        "carried by batch_size; kept for fidelity: lr_rule; within noise: steps_per_execution"
    )
    assert {r["setting"]: r["drifts_in_trial"] for r in attribution.rows()} == {
        "batch_size": None, "steps_per_execution": None, "lr_rule": 4,
    }  # fmt: skip
    assert Attribution.from_dict(attribution.to_dict()) == attribution
    stored_before = {k: v for k, v in attribution.to_dict().items() if k != "drifts"}
    assert Attribution.from_dict(stored_before).drifts == {}


def test_the_confirmation_finds_the_reversions_the_search_measured_drifting(tmp_path):
    from types import SimpleNamespace

    from autotune.study.confirming import Confirmer

    winner = TrialConfig(batch_size=128, lr_rule="linear_warmup", prefetch=2)
    rows = [
        SimpleNamespace(number=4, config=TrialConfig(batch_size=128, prefetch=1), fidelity=3.8),
        SimpleNamespace(number=5, config=TrialConfig(batch_size=32, lr_rule="sqrt"), fidelity=0.1),
        SimpleNamespace(number=6, config=None, fidelity=None),
    ]
    records = SimpleNamespace(trials=rows, tolerance=1.5)
    confirmer = Confirmer(None, records, lambda *a: None, tmp_path)  # type: ignore[arg-type]

    changed = changed_settings(winner, BASE)
    drifts = confirmer._drifting_reversions(winner, BASE, changed)

    # Reverting lr_rule trains trial 4's curve (prefetch does not change it): 3.8 > 1.5. The
    # batch size reverted trains an unmeasured curve; prefetch is curve-neutral.
    assert changed == ("batch_size", "prefetch", "lr_rule")
    assert drifts == {"lr_rule": 4}


def test_the_attribution_table_says_why_a_drifting_setting_is_kept():
    from types import SimpleNamespace

    from rich.console import Console

    from autotune.views.terminal import attribution_table

    attribution = Attribution(8, ("batch_size", "lr_rule"), (2000.0,), {"batch_size": (900.0,)},
                              rounds=6, drifts={"lr_rule": 4})  # fmt: skip
    out = Console(record=True, width=200)
    out.print(attribution_table(SimpleNamespace(attribution=attribution)))  # type: ignore[arg-type]

    assert "kept: without it the curve drifts (trial 4)" in out.export_text()
