"""A measured grid for replay tests, built from the fake trial model: a third of it 100x slower.

The space is the fake studies' :data:`~tests.support.fake_trials.SPACE` (3 precisions x XLA x 6
batch sizes = 36 configurations). ``mixed_float16`` runs at 1/100 of the others
(:func:`~tests.support.fake_trials.speed_of`) and every one of its 12 configurations is stopped
early against the baseline. Only ``mixed_bfloat16`` without XLA at batch size 128 or more
learns like the baseline (feasible); everything else drifts far from it, so none of the
structured start's probes is feasible. Live costs: 10 s a measured trial, 5 s a stopped one.
No TensorFlow.
"""

from __future__ import annotations

import itertools

from autotune.config import RunSettings, TrialConfig
from autotune.store.result import RunResult
from autotune.study.replay import Grid, GridEntry
from tests.support.fake_trials import BASE_BATCH, SEED_OFFSETS, SPACE, fake_curve, fake_result

#: The log-loss offset of a configuration that learns differently (fidelity far over 1.5).
DRIFT = 0.06
MEASURED_SECONDS, STOPPED_SECONDS = 10.0, 5.0


def feasible(config: TrialConfig) -> bool:
    return (
        config.precision == "mixed_bfloat16"
        and not config.jit_compile
        and (config.batch_size >= 128)
    )


def slow(config: TrialConfig) -> bool:
    return config.precision == "mixed_float16"


def _baseline() -> dict:
    config = TrialConfig.baseline(BASE_BATCH)
    runs = {}
    for seed in (0, 1, 2):
        settings = RunSettings(seed=seed, measure_throughput=seed == 0, curve=True)
        runs[str(seed)] = fake_result(config, settings).to_dict()
    from autotune.fidelity import noise_floor

    curves = [[(p.samples, p.val_loss) for p in fake_curve(SEED_OFFSETS[s])] for s in (0, 1, 2)]
    return {"config": config.to_dict(), "runs": runs, "noise_floor": noise_floor(curves).to_dict()}


def _entry(config: TrialConfig, baseline_low: float) -> GridEntry:
    settings = RunSettings(seed=0, stop_below_samples_per_second=baseline_low)
    result = fake_result(config, settings)
    if result.stopped_early is not None:
        return GridEntry(config, "pruned", STOPPED_SECONDS, result)
    offset = 0.0 if feasible(config) else DRIFT
    curved = RunResult.from_dict(
        {**result.to_dict(), "curve": [p.__dict__ for p in fake_curve(offset)]}
    )
    return GridEntry(config, "complete", MEASURED_SECONDS, curved)


def slow_third_grid() -> Grid:
    baseline = _baseline()
    low = baseline["runs"]["0"]["throughput"]["low"]
    parameters = SPACE.parameters
    entries = tuple(
        _entry(TrialConfig(batch_size=b, precision=p, jit_compile=x), low)
        for p, x, b in itertools.product(
            parameters["precision"].values,  # type: ignore[union-attr]
            parameters["jit_compile"].values,  # type: ignore[union-attr]
            parameters["batch_size"].values,  # type: ignore[union-attr]
        )
    )
    return Grid("fake", SPACE, baseline, entries)
