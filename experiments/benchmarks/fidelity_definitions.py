"""Fidelity before and after definition 2 (losses floored, one-sided), on stored studies.

Definition 1 compared plain log ratios of validation losses, both ways; definition 2 floors
every loss at the baseline seeds' mean absolute difference and counts only checkpoints where
the trial is worse (:mod:`autotune.fidelity`). This benchmark re-scores every trial curve of the
given studies under both, from what the studies stored (no training), and adds one synthetic
case: a baseline whose validation loss falls to 1e-4, the situation definition 2 is for.

    python experiments/benchmarks/fidelity_definitions.py [STORAGE ...]

STORAGE defaults to the studies of the confirmed-speedup benchmark
(``benchmark_runs/confirmed_speedup/<experiment>/study.db``) and the README's main job
(``autotune.db``), those that exist. Results are appended to results/fidelity_definitions.md
with the machine, date, versions and command.
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Sequence
from pathlib import Path

from provenance import append_results  # type: ignore[import-not-found]

from autotune.fidelity import (
    MIN_NOISE_FLOOR,
    Curve,
    NoiseFloor,
    curve_distance,
    fidelity_distance,
    noise_floor,
)
from autotune.store.records import load_records

HERE = Path(__file__).resolve().parent
DEFAULT_WORK = Path("benchmark_runs/confirmed_speedup")
EXPERIMENTS = ("digits_cnn", "tabular_mlp", "transformer")


def floor_1(seeds: Sequence[Curve]) -> float:
    """The noise floor as definition 1 measured it: mean plain |log ratio| between seed pairs."""
    pairs = [curve_distance(a, b) for a, b in itertools.combinations(seeds, 2)]
    return sum(pairs) / len(pairs)


def definition_1(trial: Curve, baseline: Curve, floor: float) -> float:
    """The fidelity as definition 1 scored it: mean plain |log ratio| over its noise floor."""
    return curve_distance(trial, baseline) / max(floor, MIN_NOISE_FLOOR)


def _points(curve: Sequence[object]) -> list[tuple[float, float]]:
    return [(p.samples, p.val_loss) for p in curve]  # type: ignore[attr-defined]


def _row(label: str, old: float, floor: NoiseFloor, trial: Curve, base: Curve, tol: float) -> str:
    new = fidelity_distance(trial, base, floor)
    symmetric = fidelity_distance(trial, base, floor, one_sided=False)
    verdict = f"{'ok' if old <= tol else 'over'} -> {'ok' if new <= tol else 'over'}"
    return f"| {label} | {old:.2f} | {new:.2f} | {symmetric:.2f} | {verdict} |"


TABLE_HEAD = [
    "| trial | definition 1 | definition 2 (one-sided) | definition 2 symmetric | within tolerance"
    " |",
    "| --- | --- | --- | --- | --- |",
]


def one_study(storage: str) -> list[str]:
    """The noise floor and every scored trial of the study in ``storage``, both definitions."""
    records = load_records(storage)
    seeds = [_points(c) for _, c in sorted(records.baseline.seed_curves.items())]
    floor, old_floor = noise_floor(seeds), floor_1(seeds)
    lines = [
        f"### {records.study_name} (`{storage}`, tolerance {records.tolerance:g})",
        "",
        f"- noise floor, definition 1: {old_floor:.4f} mean |log ratio|",
        f"- noise floor, definition 2: {floor.describe()}",
        "",
        *TABLE_HEAD,
    ]
    base = seeds[0]
    changed = 0
    scored = [t for t in records.trials if t.curve and t.config is not None]
    for trial in scored:
        curve = _points(trial.curve)
        old = definition_1(curve, base, old_floor)
        new = fidelity_distance(curve, base, floor)
        changed += (old <= records.tolerance) != (new <= records.tolerance)
        label = f"{trial.number}: `{trial.config.describe()}`"  # type: ignore[union-attr]
        lines.append(_row(label, old, floor, curve, base, records.tolerance))
    lines += ["", f"{changed} of {len(scored)} trials change verdict.", ""]
    return lines


def _decaying(rate: float, end: float, factor: float = 1.0) -> list[tuple[float, float]]:
    """A loss falling from 0.62 towards ``end``: factor 0.62 exp(-rate s) + end, every 4,000
    samples up to 24,000 (0.125 at the first checkpoint, 1.4e-4 at the last for the baseline)."""
    return [(s, factor * 0.62 * math.exp(-rate * s) + end) for s in range(4000, 28000, 4000)]


def near_zero_case() -> list[str]:
    """A synthetic baseline whose loss falls to about 1e-4: three seeds 1.5% apart early and
    ending at 1.0e-4, 1.5e-4 and 0.7e-4, and four trials: the same curve ending at 3e-6 (it
    learned faster), the same ending at 3e-4 (three times the baseline's tail, twice the seeds'
    spread there), and curves that learn 10% and 25% slower (real drift)."""
    seeds = [
        _decaying(4e-4, 1.0e-4),
        _decaying(4e-4, 1.5e-4, factor=1.015),
        _decaying(4e-4, 0.7e-4, factor=0.985),
    ]
    floor, old_floor = noise_floor(seeds), floor_1(seeds)
    trials = {
        "ends at 3e-6 (learned faster)": _decaying(4e-4, 3e-6),
        "ends at 3e-4": _decaying(4e-4, 3e-4),
        "learns 10% slower": _decaying(3.6e-4, 1e-4),
        "learns 25% slower": _decaying(3e-4, 1e-4),
    }
    lines = [
        "### synthetic: the baseline's validation loss falls to 1e-4",
        "",
        f"- noise floor, definition 2: {floor.describe()}",
        "",
        *TABLE_HEAD,
    ]
    for label, curve in trials.items():
        old = definition_1(curve, seeds[0], old_floor)
        lines.append(_row(label, old, floor, curve, seeds[0], 1.5))
    return [*lines, ""]


def default_storages() -> list[str]:
    paths = [DEFAULT_WORK / name / "study.db" for name in EXPERIMENTS] + [Path("autotune.db")]
    return [f"sqlite:///{p}" for p in paths if p.exists()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("storages", nargs="*", help="Optuna storage URLs of autotune studies")
    parser.add_argument("--output", type=Path, default=HERE / "results" / "fidelity_definitions.md")
    args = parser.parse_args()
    storages = args.storages or default_storages()
    sections: list[str] = []
    for storage in storages:
        sections += one_study(storage)
    append_results(args.output, [*sections, *near_zero_case()])


if __name__ == "__main__":
    main()
