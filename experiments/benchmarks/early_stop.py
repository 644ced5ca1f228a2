"""Does the study's early stop recognise a hopeless configuration in its warm-up?

Measures the float32 baseline of an experiment, then a slow configuration (mixed_float16 without
XLA, very slow on CPUs without fast float16) twice, each in a fresh trial process: once run to the
end and once with the baseline's lower confidence bound as the early-stop threshold, at
``--steps-per-execution`` training steps per call (the baseline runs one, as a study's does: the
stop must decide by steps, not calls, so 64 steps per call stop after one call). Reports the
throughputs, the warm-up steps and windows each ran and the wall time saved. Results are appended
to results/early_stop.md with the machine, date and command.

    python experiments/benchmarks/early_stop.py [EXPERIMENT] [--batch-size 64]
        [--steps-per-execution 1]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from pathlib import Path

from autotune import RunSettings, TrialConfig
from autotune.hardware import hardware, versions
from autotune.store.result import RunResult
from autotune.trial.isolation import run_isolated

HERE = Path(__file__).resolve().parent
DEFAULT_EXPERIMENT = "tabular_mlp"  # bundled: autotune/bundled/tabular_mlp.py


def phases(result: RunResult) -> str:
    """'7 (1.2 s) | 6 (3.0 s)': warm-up steps and timed windows, with their seconds."""
    warmup, windows = result.phase_seconds["warmup"], result.phase_seconds["windows"]
    return (
        f"{result.warmup_steps} ({warmup:.1f} s) | "
        f"{len(result.window_samples_per_second)} ({windows:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", nargs="?", default=DEFAULT_EXPERIMENT)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps-per-execution", type=int, default=1)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "early_stop.md")
    args = parser.parse_args()

    settings = RunSettings(curve=False)
    baseline = run_isolated(args.experiment, TrialConfig(batch_size=args.batch_size), settings)
    assert baseline.throughput is not None
    steps = args.steps_per_execution
    slow = TrialConfig(
        batch_size=args.batch_size, precision="mixed_float16", steps_per_execution=steps
    )
    calls = f", {steps} steps per call" if steps != 1 else ""

    started = time.perf_counter()
    full = run_isolated(args.experiment, slow, settings)
    full_seconds = time.perf_counter() - started
    started = time.perf_counter()
    stopped = run_isolated(
        args.experiment,
        slow,
        settings.replace(stop_below_samples_per_second=baseline.throughput.low),
    )
    stopped_seconds = time.perf_counter() - started
    assert full.throughput is not None and stopped.throughput is not None

    facts = hardware()
    ratio = baseline.throughput.median / full.throughput.median
    lines = [
        f"## {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC: {Path(args.experiment).name}, "
        f"batch {args.batch_size}{calls}",
        "",
        f"- machine: {facts['cpu']}, {facts['logical_cores']} logical cores, "
        f"CPU features {facts['cpu_features']}, GPUs: {facts['gpus'] or 'none'}",
        f"- versions: {versions()}",
        f"- command: `python {' '.join(sys.argv)}`",
        f"- load average at the end (1/5/15 min): {os.getloadavg()}",
        "",
        "| configuration | median samples/s (95% CI) | warm-up steps (s) | windows (s) "
        "| trial wall time |",
        "|---|---:|---:|---:|---:|",
        f"| float32 baseline | {baseline.throughput.median:,.0f} "
        f"({baseline.throughput.low:,.0f}-{baseline.throughput.high:,.0f}) | {phases(baseline)} | "
        f"{baseline.phase_seconds['total']:.1f} s (in process) |",
        f"| mixed_float16, no XLA{calls}, run to the end | {full.throughput.median:,.0f} | "
        f"{phases(full)} | {full_seconds:.1f} s |",
        f"| mixed_float16, no XLA{calls}, early stop | {stopped.throughput.median:,.0f} | "
        f"{phases(stopped)} | {stopped_seconds:.1f} s |",
        "",
        f"Baseline / mixed_float16 throughput: **{ratio:.1f}x**. Early stop: "
        f"{stopped.stopped_early or 'did not stop'}; wall time saved "
        f"{full_seconds - stopped_seconds:.1f} s of {full_seconds:.1f} s.",
        "",
    ]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    with args.output.open("a", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
