"""Benchmark: what keeping layers in float32 under mixed precision costs and keeps (issue 26
item 2).

Runs ``autotune run EXPERIMENT`` from a fresh folder on a space of float32 and ``--precision``
at the base batch size with every ``float32_layers`` value (written to the work folder as a space
file), enough trials to measure each value once. The structured start probes the mixed policy;
where it drifts, it retries it with the layers kept in float32 (``autotune.study.rescues``),
else the search draws the other values. For each trial: its configuration, the layers it kept in
float32, its throughput (samples/s, median and CI of its timed windows), its fidelity, and the
answer (``autotune best --json``). The cost in speed is then measured side by side: ``--rounds``
rounds, each a throughput-only ``autotune trial`` of every value in turn (fresh processes, the
order rotated each round), reported as each value's median samples/s over the rounds and its
ratio to the median without float32 layers.
A trial the study stopped early as slower than the baseline has no curve there; its fidelity is
then measured here, by one more ``autotune trial`` of its configuration (seed 0, the study's
curve settings) scored against the study's baseline and noise floor.
Results are appended to results/float32_layers.md with the machine, date, versions and command.

    python experiments/benchmarks/float32_layers.py [--experiments transformer ...]
        [--precision mixed_bfloat16] [--rounds 3] [--revision HEAD]
        [--work /tmp/autotune-float32-layers]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from provenance import append_results  # type: ignore[import-not-found]
from time_to_answer import (  # type: ignore[import-not-found]
    _autotune,
    answer_text,
    commit_of,
    run_arm,
    source_tree,
)

from autotune.config import TrialConfig
from autotune.fidelity import fidelity_distance
from autotune.float32_layers import FLOAT32_LAYERS, layers_text
from autotune.measure import format_throughput
from autotune.store.records import StudyRecords, load_records

HERE = Path(__file__).resolve().parent


def space_file(folder: Path, precision: str) -> Path:
    """float32 and ``precision`` with each ``float32_layers`` value, at the base batch size."""
    values = ", ".join(f'"{v}"' for v in FLOAT32_LAYERS)
    text = (
        f'name = "float32-layers"\ndescription = "float32 and {precision}, each float32_layers '
        f'value."\n\n[parameters]\nprecision = ["float32", "{precision}"]\n'
        f"float32_layers = [{values}]\n"
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "float32-layers.toml"
    path.write_text(text, encoding="utf-8")
    return path


def curve_fidelity(
    experiment: str, config: TrialConfig, records: StudyRecords, source: Path, folder: Path
) -> float | None:
    """The fidelity of one ``autotune trial`` of ``config`` (throughput not measured) against
    the study's baseline curve and noise floor; None when the trial fails."""
    baseline = records.baseline
    if baseline.noise_floor is None or not baseline.curve:
        return None
    run = _autotune(
        source, folder, "trial", experiment, "--config", json.dumps(config.to_dict()),
        "--curve-samples", str(baseline.curve[-1].samples), "--windows", "1", "--json",
    )  # fmt: skip
    answer = json.loads(run.stdout) if run.returncode == 0 and run.stdout.strip() else {}
    if answer.get("status") != "ok":
        return None
    curve = [(p["samples"], p["val_loss"]) for p in answer["result"]["curve"]]
    reference = [(p.samples, p.val_loss) for p in baseline.curve]
    return fidelity_distance(curve, reference, baseline.noise_floor)


def _throughput(experiment: str, config: TrialConfig, source: Path, folder: Path) -> float | None:
    """The median samples/s of one throughput-only ``autotune trial`` of ``config``."""
    run = _autotune(
        source, folder, "trial", experiment, "--config", json.dumps(config.to_dict()),
        "--no-curve", "--json",
    )  # fmt: skip
    answer = json.loads(run.stdout) if run.returncode == 0 and run.stdout.strip() else {}
    estimate = (
        (answer.get("result") or {}).get("throughput") if answer.get("status") == "ok" else None
    )
    return float(estimate["median"]) if estimate else None


def side_by_side(
    experiment: str, configs: list[TrialConfig], source: Path, args: argparse.Namespace
) -> dict[str, list[float]]:
    """samples/s of each config's ``float32_layers`` value over ``args.rounds`` rounds of fresh
    throughput-only trials, every value once per round, the order rotated each round."""
    folder = args.work / experiment / "side-by-side"
    folder.mkdir(parents=True, exist_ok=True)
    speeds: dict[str, list[float]] = {c.float32_layers: [] for c in configs}
    for round_ in range(args.rounds):
        shift = round_ % len(configs)
        for config in configs[shift:] + configs[:shift]:
            speed = _throughput(experiment, config, source, folder)
            if speed is not None:
                speeds[config.float32_layers].append(speed)
    return speeds


def one_experiment(experiment: str, source: Path, args: argparse.Namespace) -> list[str]:
    """``experiment``'s study on the space: its results section."""
    args.space = str(space_file(args.work, args.precision))
    run = run_arm("float32-layers", source, experiment, args)
    records = load_records(f"sqlite:///{args.work / experiment / 'float32-layers' / 'study.db'}")
    mixed = [r for r in records.trials if r.config and r.config.precision == args.precision]
    rows = []
    measured = sorted(
        (r for r in mixed if r.throughput is not None),
        key=lambda r: FLOAT32_LAYERS.index(r.config.float32_layers),
    )
    speeds = side_by_side(experiment, [r.config for r in measured], source, args)
    none = statistics.median(speeds["none"]) if speeds.get("none") else None
    for row in measured:
        rounds = speeds[row.config.float32_layers]
        median = statistics.median(rounds) if rounds else None
        side = "-" if median is None else f"{median:,.0f} ({min(rounds):,.0f}-{max(rounds):,.0f})"
        cost = "-" if median is None or none is None else f"{median / none:.2f}x"
        fidelity = "-" if row.fidelity is None else f"{row.fidelity:.2f}"
        if row.fidelity is None:  # stopped early in the study: its curve measured here
            folder = args.work / experiment / f"curve-{row.number}"
            folder.mkdir(parents=True, exist_ok=True)
            measured = curve_fidelity(experiment, row.config, records, source, folder)
            fidelity = "failed" if measured is None else f"{measured:.2f} (curve run here)"
        rows.append(
            f"| {row.number} | `{row.config.describe()}` | {layers_text(row.effective) or '-'} | "
            f"{format_throughput(row.throughput)} | {side} | {cost} | {fidelity} |"
        )
    baseline = records.baseline
    counts = baseline.effective.get("float32_layers_available")
    return [
        f"### {experiment}",
        "",
        f"{args.trials} trials, seed {args.seed}, profiling off, code of "
        f"{commit_of(args.revision)}; layers of the model (the baseline's record): {counts}; "
        f"baseline {format_throughput(baseline.throughput)}; tolerance {records.tolerance}; "
        f"wall {run.wall_seconds:,.0f} s.",
        "",
        "| trial | configuration | float32 layers | samples/s in the study (CI) | samples/s side "
        f"by side ({args.rounds} rounds: median, range) | vs. no float32 layers | fidelity |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: |",
        *rows,
        "",
        f"Answer: {answer_text(run.answer)}",
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", nargs="+", default=["transformer"])
    parser.add_argument("--precision", default="mixed_bfloat16")
    parser.add_argument("--trials", type=int, default=len(FLOAT32_LAYERS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--revision", default="HEAD", help="the commit whose code runs")
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune-float32-layers"))
    parser.add_argument("--output", type=Path, default=HERE / "results" / "float32_layers.md")
    args = parser.parse_args()
    args.revision = commit_of(args.revision)  # fixed now: HEAD moves while the arms run
    source = source_tree(args.revision, args.work)  # the working tree may change meanwhile
    for experiment in args.experiments:
        append_results(args.output, one_experiment(experiment, source, args))


if __name__ == "__main__":
    main()
