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
