"""What does profiling cost, and what does it say? Runs each configuration in pairs of fresh trial
processes, one with the TensorBoard profiler on and one without, alternating, and reports the
trial's wall time with and without profiling, the profiled window's slowdown against the timed
windows, XProf's step-time breakdown and both input-boundness verdicts (XProf and ablation).
Results are appended to results/profiling.md with the machine, date and command.

    python experiments/benchmarks/profiling.py --pairs 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
from pathlib import Path

from provenance import provenance_lines

from autotune import RunSettings, TrialConfig
from autotune.store.result import RunResult
from autotune.trial.isolation import run_isolated

HERE = Path(__file__).resolve().parent

#: (label, bundled experiment, trial config as JSON)
CASES = [
    ("digits CNN, defaults", "digits_cnn", '{"batch_size": 32}'),
    (
        "digits CNN, parallel=1 prefetch=0",
        "digits_cnn",
        '{"batch_size": 32, "num_parallel_calls": 1, "prefetch": 0}',
    ),
    ("transformer, defaults", "transformer", '{"batch_size": 32}'),
]


def _breakdown(result: RunResult) -> str:
    profile = result.profile
    if profile is None:
        return f"no profile: {result.profile_error}"
    parts = ", ".join(
        f"{name} {ms:.2f}" for name, ms in profile.breakdown_ms.items() if ms >= 0.005
    )
    return f"{profile.step_ms:.2f} ms/step ({parts})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--output", type=Path, default=HERE / "results" / "profiling.md")
    args = parser.parse_args()

    settings = RunSettings(curve=False)
    rows = []
    for label, reference, config_json in CASES:
        config = TrialConfig.from_json(config_json, source=label)
        plain: list[RunResult] = []
        profiled: list[RunResult] = []
        for _ in range(args.pairs):
            with tempfile.TemporaryDirectory() as folder:
                plain.append(run_isolated(reference, config, settings))
                profiled.append(
                    run_isolated(reference, config, settings.replace(profile_dir=folder))
                )
        last = profiled[-1]
        assert last.profile is not None, last.profile_error
        assert last.input_ablation is not None and last.throughput is not None
        total_plain = statistics.median(r.phase_seconds["total"] for r in plain)
        total_profiled = statistics.median(r.phase_seconds["total"] for r in profiled)
        capture = statistics.median(r.phase_seconds["profile"] for r in profiled)
        slowdowns = [
            r.profile.slowdown(r.throughput.median)
            for r in profiled
            if r.profile is not None and r.throughput is not None
        ]
        rows.append(
            (
                label,
                f"`{reference}` `{config_json}`",
                f"{statistics.median(r.throughput.median for r in plain if r.throughput):,.0f}",
                f"{statistics.median(r.throughput.median for r in profiled if r.throughput):,.0f}",
                f"{total_plain:.1f} / {total_profiled:.1f} (+{total_profiled - total_plain:.1f})",
                f"{capture:.2f}",
                f"{statistics.median(s for s in slowdowns if s is not None):.0%}",
                _breakdown(last),
                f"{last.profile.verdict} ({last.profile.input_fraction:.0%})",
                f"{last.input_ablation.verdict} ({last.input_ablation.input_fraction:.0%})",
            )
        )
        print(" | ".join(rows[-1]), flush=True)

    lines = [
        f"## {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC: profiling cost and verdicts",
        "",
        *provenance_lines(),
        f"- method: {args.pairs} pairs of fresh trial processes per row (without, then with the "
        "profiler; no curve), medians over the pairs; breakdown and verdicts from the last "
        "profiled run. The profiled window runs after the timed windows, so the throughput "
        "columns are both measured without the profiler.",
        "",
        "| case | experiment and config | samples/s (plain) | samples/s (profiled trial) | "
        "trial seconds plain / profiled | profile phase s | profiled-window slowdown | "
        "XProf breakdown | XProf verdict | ablation verdict |",
        "|---|---|---:|---:|---:|---:|---:|---|---|---|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
    ]
    with open(args.output, "a", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    print(f"appended to {args.output}")


if __name__ == "__main__":
    main()
