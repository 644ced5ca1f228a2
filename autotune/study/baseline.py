"""The baseline and its noise floor, stored in the study
(:data:`autotune.store.schema.BASELINE_KEY`).

The baseline is the experiment's float32, no-XLA configuration at its base batch size, run with
each of :data:`autotune.store.schema.BASELINE_SEEDS`: seed 0 with throughput (trials are compared
with its speed and its curve), the others curve only. The mean distance between the seeds' curves is
the noise floor that fidelity is measured in. A short digest of it is stored beside, for Optuna's
own tools (:data:`autotune.store.schema.BASELINE_SUMMARY_KEY`). A baseline whose curve does not
move beyond its seeds' spread stops the study before it searches, unless the user accepts a
throughput-only study (:func:`check_curve_signal`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna

from autotune.analysis.curve_signal import curve_signal
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ConfigError, StudyError, TrialFailure
from autotune.fidelity import NoiseFloor, noise_floor
from autotune.measure import Estimate
from autotune.store import writer
from autotune.store.result import RunResult
from autotune.store.schema import BASELINE_KEY, BASELINE_SEEDS, BASELINE_SUMMARY_KEY, baseline_of
from autotune.store.throughput_only import throughput_only_reason
from autotune.study import board
from autotune.study.optuna_tools import baseline_summary

#: Runs the baseline with one seed: seed -> RunResult; raises StudyError when it fails.
SeedRunner = Callable[[int], RunResult]
#: A validation curve as (samples seen, validation loss) pairs.
Curve = list[tuple[float, float]]


def run_seed(
    run: Callable[[TrialConfig, RunSettings, Path], RunResult],
    config: TrialConfig,
    settings: RunSettings,
    seed: int,
    log_dir: Path,
) -> RunResult:
    """Runs the baseline ``config`` with ``seed`` (throughput measured for seed 0 only, always
    a curve, never stopped early) and writes it to the TensorBoard view; a failure stops the
    study with its log."""
    settings = settings.replace(
        seed=seed,
        measure_throughput=seed == BASELINE_SEEDS[0],
        curve=True,
        stop_below_samples_per_second=None,
    )
    try:
        result = run(config, settings, log_dir)
    except TrialFailure as failure:
        raise StudyError(
            f"the baseline (seed {seed}) failed ({failure.kind}): {failure.message}; "
            f"a study needs a working baseline. Its log: {log_dir / 'trial.log'}\n"
            f"{failure.log_tail}"
        ) from failure
    board.baseline_run(log_dir, seed, result)
    return result


def stored(study: optuna.Study) -> dict[str, Any]:
    """The stored baseline: config, per-seed results, noise floor (``{"runs": {}}`` before it
    runs); ConfigError naming the study and the key when it is stored with the wrong type
    (a damaged study: nothing is run or written)."""
    value = study.user_attrs.get(BASELINE_KEY) or {"runs": {}}
    try:
        baseline_of(value)
    except (TypeError, ValueError, KeyError, AttributeError) as error:
        raise ConfigError(
            f"study {study.study_name!r} is damaged: in its baseline ({BASELINE_KEY!r}), "
            f"{error} (a stored value of the wrong type); autotune does not read or write it. "
            "Restore the storage from a copy, or start a new study",
            argument="storage",
        ) from error
    return dict(value)


def curve_of(result: dict[str, Any]) -> Curve:
    """A stored RunResult's validation curve."""
    return [(p["samples"], p["val_loss"]) for p in result["curve"]]


def ensure(
    study: optuna.Study,
    config: dict[str, Any],
    run: SeedRunner,
    on_run: Callable[[int, RunResult], None] | None = None,
) -> None:
    """Runs the baseline seeds not stored yet with ``run`` and stores the noise floor, then the
    baseline's digest for Optuna's tools (also in a study stored before the digest existed).
    Each run is stored as soon as it ends, so a crash loses at most the run in progress."""
    baseline = stored(study)
    runs: dict[str, Any] = dict(baseline.get("runs", {}))
    for seed in BASELINE_SEEDS:
        if str(seed) in runs:
            continue
        if seed == BASELINE_SEEDS[0]:  # when the throughput was measured (the first anchor's)
            baseline["measured_at"] = time.time()
        result = run(seed)
        runs[str(seed)] = result.to_dict()
        baseline["runs"] = runs
        baseline["config"] = config
        writer.write_baseline(study, baseline)
        if on_run is not None:
            on_run(seed, result)
    if "noise_floor" not in baseline:
        curves = [curve_of(runs[str(seed)]) for seed in BASELINE_SEEDS]
        baseline["noise_floor"] = noise_floor(curves).to_dict()
        writer.write_baseline(study, baseline)
    summary = baseline_summary(baseline_of(baseline))
    if summary is not None and study.user_attrs.get(BASELINE_SUMMARY_KEY) != summary:
        writer.write_baseline_summary(study, summary)


def check_curve_signal(study: optuna.Study, accept: bool) -> None:
    """Stops a study whose fidelity check cannot see: the stored baseline's seed curves do not
    move beyond their spread (:mod:`autotune.analysis.curve_signal`), so every trial whose loss
    does not rise would read as feasible. With ``accept`` (or accepted before) the study goes on
    as throughput only, stored so every view marks it. The baseline stays stored either way."""
    if throughput_only_reason(study.user_attrs) is not None:
        return
    runs = stored(study).get("runs", {})
    if any(str(seed) not in runs for seed in BASELINE_SEEDS):
        return
    signal = curve_signal([curve_of(runs[str(seed)]) for seed in BASELINE_SEEDS])
    if signal.sees:
        return
    if accept:
        writer.write_throughput_only(study, signal.describe())
        return
    raise StudyError(
        f"the fidelity check cannot see on this model: the baseline's validation curve does not "
        f"move beyond its seeds' spread ({signal.describe()}). The model learns nothing "
        f"measurable within the curve's {signal.samples[-1]:,.0f} training examples, so every "
        "trial whose loss does not rise would score as feasible, however it trains. Give the "
        "curve something to learn: more examples (curve_samples in the space's [measure] table), "
        "checkpoints where the loss still falls (checkpoints), or a learning rate at which the "
        "model learns within the budget (the experiment's base_learning_rate); or accept a "
        "study of throughput alone (--throughput-only; Study(..., throughput_only=True)), which "
        "every view then marks. The baseline is stored and is not run again."
    )


def reference(study: optuna.Study) -> tuple[Estimate, Curve, NoiseFloor]:
    """What a trial is scored against: seed 0's throughput (samples/s) and curve, and the noise
    floor."""
    baseline = stored(study)
    main = baseline["runs"][str(BASELINE_SEEDS[0])]
    floor = baseline["noise_floor"]
    return (
        Estimate(**main["throughput"]),
        curve_of(main),
        NoiseFloor.from_dict(floor),
    )


__all__ = [
    "Curve",
    "SeedRunner",
    "check_curve_signal",
    "curve_of",
    "ensure",
    "reference",
    "run_seed",
    "stored",
]
