"""Benchmark: what keeping layers in float32 under mixed precision costs and keeps (issue 26
item 2).

Runs ``autotune run EXPERIMENT`` from a fresh folder on a space of float32 and ``--precision``
at the base batch size with every ``float32_layers`` value (written to the work folder as a space
file), enough trials to measure each value once. The structured start probes the mixed policy;
where it drifts, it retries it with the layers kept in float32 (``autotune.study.rescues``),
else the search draws the other values. For each trial: its configuration, the layers it kept in
float32, its throughput (samples/s, median and CI of its timed windows), the ratio to the mixed
trial without float32 layers (the cost), its fidelity, and the answer (``autotune best --json``).
A trial the study stopped early as slower than the baseline has no curve there; its fidelity is
then measured here, by one more ``autotune trial`` of its configuration (seed 0, the study's
curve settings) scored against the study's baseline and noise floor.
Results are appended to results/float32_layers.md with the machine, date, versions and command.

    python experiments/benchmarks/float32_layers.py [--experiments transformer ...]
        [--precision mixed_bfloat16] [--revision HEAD] [--work /tmp/autotune-float32-layers]
"""

from __future__ import annotations

import argparse
import json
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


def one_experiment(experiment: str, source: Path, args: argparse.Namespace) -> list[str]:
    """``experiment``'s study on the space: its results section."""
    args.space = str(space_file(args.work, args.precision))
    run = run_arm("float32-layers", source, experiment, args)
    records = load_records(f"sqlite:///{args.work / experiment / 'float32-layers' / 'study.db'}")
    mixed = [r for r in records.trials if r.config and r.config.precision == args.precision]
    plain = next(
        (r for r in mixed if r.config and r.config.float32_layers == "none" and r.throughput),
        None,
    )
    rows = []
    for row in sorted(mixed, key=lambda r: FLOAT32_LAYERS.index(r.config.float32_layers)):
        if row.throughput is None:
            continue
        cost = (
            f"{row.throughput.median / plain.throughput.median:.2f}x"
            if plain is not None and plain.throughput is not None
            else "-"
        )
        fidelity = "-" if row.fidelity is None else f"{row.fidelity:.2f}"
        if row.fidelity is None:  # stopped early in the study: its curve measured here
            folder = args.work / experiment / f"curve-{row.number}"
            folder.mkdir(parents=True, exist_ok=True)
            measured = curve_fidelity(experiment, row.config, records, source, folder)
            fidelity = "failed" if measured is None else f"{measured:.2f} (curve run here)"
        rows.append(
            f"| {row.number} | `{row.config.describe()}` | {layers_text(row.effective) or '-'} | "
            f"{format_throughput(row.throughput)} | {cost} | {fidelity} |"
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
        "| trial | configuration | float32 layers | samples/s (CI) | vs. no float32 layers "
        "| fidelity |",
        "| ---: | --- | --- | ---: | ---: | ---: |",
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
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--revision", default="HEAD", help="the commit whose code runs")
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune-float32-layers"))
    parser.add_argument("--output", type=Path, default=HERE / "results" / "float32_layers.md")
    args = parser.parse_args()
    source = source_tree(args.revision, args.work)  # the working tree may change meanwhile
    for experiment in args.experiments:
        append_results(args.output, one_experiment(experiment, source, args))


if __name__ == "__main__":
    main()
