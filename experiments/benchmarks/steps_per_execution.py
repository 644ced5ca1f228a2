"""What ``steps_per_execution`` buys on each bundled experiment, head to head.

For each experiment, the baseline configuration (float32, no XLA, base batch size) and the same
configuration at each ``--steps`` value run in fresh processes, interleaved round by round
(``--rounds``), with the study's measurement (the ``cpu`` space's windows; no curve, ablation or
profile). Reported per value: the median samples/s over rounds and the ratio to one step per
call, paired by round (median with the order-statistic interval of
:func:`autotune.measure.summarize`). The same at the experiment's best batch size of the replay
grid (``--batch-factor``) shows whether the gain survives larger batches, where each step does
more work per call. Results are appended to results/steps_per_execution.md with the machine,
date, versions and command.

    python experiments/benchmarks/steps_per_execution.py [EXPERIMENT ...] [--steps 1,4,16,64]
        [--rounds 3] [--batch-factor 4]

(``--batch-factor 1``: the base batch size alone.)
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from provenance import append_results  # type: ignore[import-not-found]

from autotune import TrialConfig
from autotune.analysis.head_to_head import paired_ratio, ratio_text
from autotune.bundled import experiment_reference, load_experiment, resolve_space
from autotune.study.confirming import speed_settings
from autotune.trial.isolation import run_isolated

HERE = Path(__file__).resolve().parent
EXPERIMENTS = ("digits_cnn", "tabular_mlp", "transformer")


def head_to_head(
    reference: str, configs: dict[int, TrialConfig], rounds: int, logs: Path
) -> dict[int, list[float]]:
    """Median samples/s of each configuration in each round, in order within a round."""
    settings = speed_settings(resolve_space("cpu").run_settings())
    speeds: dict[int, list[float]] = {steps: [] for steps in configs}
    for number in range(1, rounds + 1):
        for steps, config in configs.items():
            result = run_isolated(
                reference, config, settings, log_dir=logs / f"round_{number}_steps_{steps}"
            )
            assert result.throughput is not None
            speeds[steps].append(result.throughput.median)
    return speeds


def one_batch_size(
    reference: str, batch_size: int, steps: list[int], rounds: int, logs: Path
) -> list[str]:
    configs = {s: TrialConfig(batch_size=batch_size, steps_per_execution=s) for s in steps}
    speeds = head_to_head(reference, configs, rounds, logs / f"bs_{batch_size}")
    lines = []
    for value, measured in speeds.items():
        ratio = paired_ratio(measured, speeds[steps[0]])
        lines.append(
            f"| {batch_size} | {value} | {statistics.median(measured):,.0f} | "
            f"{ratio_text(ratio) if value != steps[0] else '1.00x'} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="*", default=list(EXPERIMENTS))
    parser.add_argument("--steps", default="1,4,16,64")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-factor", type=int, default=4)
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune_steps_per_execution"))
    args = parser.parse_args()
    steps = [int(s) for s in args.steps.split(",")]
    for name in args.experiments:  # one results entry per experiment, as soon as it is measured
        reference = experiment_reference(name)
        base = load_experiment(reference).base_batch_size
        sections = [
            f"### {name}",
            "",
            f"float32, no XLA; {args.rounds} interleaved rounds of fresh processes; ratio to "
            f"{steps[0]} step(s) per call, paired by round (median, order-statistic interval).",
            "",
            "| batch size | steps per execution | samples/s (median) | ratio to 1 |",
            "| ---: | ---: | ---: | ---: |",
        ]
        for batch_size in sorted({base, base * args.batch_factor}):
            sections += one_batch_size(reference, batch_size, steps, args.rounds, args.work / name)
        append_results(HERE / "results" / "steps_per_execution.md", [*sections, ""])


if __name__ == "__main__":
    main()
