"""How repeatable is one trial's throughput? Measures one configuration N times, each in a fresh
trial process, and reports the median throughput across runs, the spread across runs and each
run's own 95% CI half-width. Results are appended to results/repeatability.md with the machine,
date and command.

    python experiments/benchmarks/repeatability.py [EXPERIMENT] --config JSON --runs 5
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
from pathlib import Path

from provenance import provenance_lines

from autotune import RunSettings, TrialConfig
from autotune.trial.isolation import run_isolated

HERE = Path(__file__).resolve().parent
DEFAULT_EXPERIMENT = "digits_cnn"  # bundled: autotune/bundled/digits_cnn.py


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", nargs="?", default=DEFAULT_EXPERIMENT)
    parser.add_argument("--config", default='{"batch_size": 64}')
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "repeatability.md")
    args = parser.parse_args()

    config = TrialConfig.from_json(args.config, source="--config")
    settings = RunSettings(curve=False)
    rows = []
    for run in range(1, args.runs + 1):
        result = run_isolated(args.experiment, config, settings)
        estimate = result.throughput
        assert estimate is not None
        rows.append((run, estimate, result.compile_seconds, result.warmup_steps))
        print(
            f"run {run}: {estimate.median:,.0f} samples/s, CI half-width "
            f"{estimate.half_width:,.0f} ({estimate.relative_half_width:.1%})",
            flush=True,
        )
    medians = [estimate.median for _, estimate, _, _ in rows]
    overall = statistics.median(medians)
    spread = (max(medians) - min(medians)) / overall
    lines = [
        f"## {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC: {Path(args.experiment).name} "
        f"{config.describe()}",
        "",
        *provenance_lines(),
        f"- settings: {settings.windows} windows of ~{settings.window_seconds} s after warm-up",
        "",
        "| run | median samples/s | 95% CI | CI half-width | warm-up steps | compile s |",
        "|---:|---:|---|---:|---:|---:|",
    ]
    for run, estimate, compile_seconds, warmup in rows:
        lines.append(
            f"| {run} | {estimate.median:,.0f} | {estimate.low:,.0f}-{estimate.high:,.0f} | "
            f"{estimate.half_width:,.0f} ({estimate.relative_half_width:.1%}) | {warmup} | "
            f"{compile_seconds:.2f} |"
        )
    lines += [
        "",
        f"Median across runs: **{overall:,.0f} samples/s**; spread across runs (max-min)/median: "
        f"**{spread:.1%}**; median per-run CI half-width: "
        f"{statistics.median(e.relative_half_width for _, e, _, _ in rows):.1%}.",
        "",
    ]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with args.output.open("a", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
