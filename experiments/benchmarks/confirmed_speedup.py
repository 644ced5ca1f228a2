"""Speed found, side by side: the confirmed recommendation against the baseline and against the
practitioner's checklist configuration, for each bundled experiment, in one run.

For each experiment: a study (``--space``, ``--trials``, profiling off) into a fresh SQLite file
under ``--work``, its confirmation (the study's own, :mod:`autotune.analysis.head_to_head`), then a
final head-to-head of three arms in fresh processes, interleaved round by round: the confirmed
recommendation (the baseline itself when nothing beat it), the checklist configuration for this
machine (:mod:`autotune.study.checklist`) and the baseline. Ratios are paired by round, with the
order-statistic interval of :func:`autotune.measure.summarize`; the checklist's fidelity is
measured over the baseline's seeds, as the confirmation measures a candidate's. Results are
appended to results/confirmed_speedup.md with the machine, date, versions and command.

    python experiments/benchmarks/confirmed_speedup.py [--trials 10] [--space cpu] [--rounds 6]
"""

from __future__ import annotations

import argparse
import datetime as dt
import shlex
import statistics
import sys
import time
from pathlib import Path

from autotune import Study, TrialConfig
from autotune.analysis.head_to_head import paired_ratio, ratio_text
from autotune.fidelity import fidelity_distance
from autotune.hardware import hardware, versions
from autotune.measure import summarize
from autotune.store.records import load_records
from autotune.study.checklist import checklist_config
from autotune.study.confirming import curve_settings, speed_settings
from autotune.trial.isolation import run_isolated

HERE = Path(__file__).resolve().parent
EXPERIMENTS = ("digits_cnn", "tabular_mlp", "transformer")  # bundled: autotune/bundled/


def head_to_head(
    study: Study, arms: dict[str, TrialConfig], rounds: int, logs: Path
) -> dict[str, list[float]]:
    """Median samples/s of each arm in each round, the arms run in order within a round."""
    settings = speed_settings(study.settings)
    speeds: dict[str, list[float]] = {name: [] for name in arms}
    for number in range(1, rounds + 1):
        for name, config in arms.items():
            result = run_isolated(
                study.reference, config, settings, log_dir=logs / f"round_{number}_{name}"
            )
            assert result.throughput is not None
            speeds[name].append(result.throughput.median)
    return speeds


def seed_fidelity(study: Study, config: TrialConfig, logs: Path) -> list[float]:
    """``config``'s fidelity with each baseline seed (its curve trained with that seed against
    the baseline's curve of the same seed), as the confirmation judges a candidate."""
    records = load_records(study.storage_url, study.name)
    floor = records.baseline.noise_floor
    assert floor is not None
    values = []
    for seed, reference in sorted(records.baseline.seed_curves.items()):
        result = run_isolated(
            study.reference,
            config,
            curve_settings(study.settings, seed),
            log_dir=logs / f"seed_{seed}",
        )
        values.append(
            fidelity_distance(
                [(p.samples, p.val_loss) for p in result.curve],
                [(p.samples, p.val_loss) for p in reference],
                floor,
            )
        )
    return values


def one_experiment(experiment: str, args: argparse.Namespace) -> list[str]:
    """One bundled experiment (its short name) end to end: the lines of its results section."""
    work = args.work / experiment
    work.mkdir(parents=True, exist_ok=True)
    storage = f"sqlite:///{work / 'study.db'}"
    started = time.perf_counter()
    study = Study(experiment, args.space, storage, seed=args.seed, profile_mode="off")
    study.optimize(n_trials=args.trials)
    searched = time.perf_counter() - started
    confirmation = study.confirm(rounds=args.rounds)
    confirmed = time.perf_counter() - started - searched
    recipe = study.best()
    base = study.baseline_config
    checklist = checklist_config(study.experiment.base_batch_size, hardware())
    arms = {"recommended": recipe.config, "checklist": checklist, "baseline": base}
    speeds = head_to_head(study, arms, args.rounds, work / "head_to_head")
    checklist_fidelity = seed_fidelity(study, checklist, work / "checklist_curves")
    total = time.perf_counter() - started
    lines = [
        f"### {experiment}",
        "",
        f"- study: {args.trials} trials of the `{args.space}` space, {searched:.0f} s; "
        f"confirmation {confirmed:.0f} s; whole experiment {total:.0f} s",
        f"- confirmed answer: {confirmation.summary(study.tolerance) if confirmation else '-'}",
        f"- recommended: `{recipe.config.describe()}`"
        + (" (the baseline: nothing beat it beyond noise)" if recipe.is_baseline else ""),
        f"- checklist: `{checklist.describe()}`, fidelity "
        f"{statistics.fmean(checklist_fidelity):.2f} over seeds (range "
        f"{min(checklist_fidelity):.2f}-{max(checklist_fidelity):.2f}; tolerance "
        f"{study.tolerance:g})",
        "",
        "| arm | samples/s (median, CI) per round | ratio to baseline | ratio to checklist |",
        "|---|---|---|---|",
    ]
    for name in arms:
        speed = summarize(speeds[name])
        to_base = ratio_text(paired_ratio(speeds[name], speeds["baseline"]))
        to_checklist = ratio_text(paired_ratio(speeds[name], speeds["checklist"]))
        lines.append(
            f"| {name} | {speed.median:,.0f} ({speed.low:,.0f}-{speed.high:,.0f}) | "
            f"{to_base} | {to_checklist} |"
        )
    if confirmation is not None and confirmation.attribution is not None:
        attribution = confirmation.attribution
        lines += ["", f"Trial {attribution.trial}'s speed-up: {attribution.describe()}."]
    if confirmation is not None and confirmation.candidates:
        lines += ["", "Confirmation of the search's candidates:", ""]
        lines += ["| trial | configuration | speed-up (CI) | fidelity (range) | verdict |"]
        lines += ["|---|---|---|---|---|"]
        for verdict in confirmation.verdicts(study.tolerance):
            fidelity = (
                f"{verdict.fidelity_mean:.2f} ({verdict.fidelity_low:.2f}-"
                f"{verdict.fidelity_high:.2f})"
                if verdict.fidelity_mean is not None
                else "-"
            )
            lines.append(
                f"| {verdict.candidate.trial} | `{verdict.candidate.config.describe()}` | "
                f"{ratio_text(verdict.ratio)} | {fidelity} | {verdict.text} |"
            )
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", nargs="*", default=list(EXPERIMENTS))
    parser.add_argument("--space", default="cpu")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("benchmark_runs/confirmed_speedup"))
    parser.add_argument("--output", type=Path, default=HERE / "results" / "confirmed_speedup.md")
    args = parser.parse_args()

    facts = hardware()
    lines = [
        f"## {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
        "",
        f"- machine: {facts['cpu']}, {facts['logical_cores']} logical cores, "
        f"CPU features {facts['cpu_features']}, GPUs: {facts['gpus'] or 'none'}",
        f"- versions: {', '.join(f'{k} {v}' for k, v in sorted(versions().items()))}",
        f"- command: `{shlex.join([Path(sys.executable).name, *sys.argv])}`",
        "",
    ]
    for name in args.experiments:
        lines += one_experiment(name, args)
        print("\n".join(lines[-30:]), flush=True)
    with args.output.open("a", encoding="utf-8") as results:
        results.write("\n".join(lines) + "\n")
    print(f"appended to {args.output}")


if __name__ == "__main__":
    main()
