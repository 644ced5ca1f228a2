"""What TensorFlow's thread counts and the pipeline's own tf.data pool do on each bundled
experiment, head to head.

For each experiment, the baseline configuration (float32, no XLA, base batch size; TensorFlow's
default threads) and the same configuration with each thread setting of ``CASES`` run in fresh
processes, interleaved round by round (``--rounds``), with the study's measurement (the ``cpu``
space's windows; no curve, ablation or profile). Reported per case: the median samples/s over
rounds and the ratio to the default threads, paired by round (median with the order-statistic
interval of :func:`autotune.measure.summarize`). Results are appended to results/threads.md
with the machine, date, versions and command.

    python experiments/benchmarks/threads.py [EXPERIMENT ...] [--rounds 3]
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
#: (label, thread settings); the first is the reference.
CASES = (
    ("default threads", {}),
    ("intra_op_threads=1", {"intra_op_threads": 1}),
    ("inter_op_threads=1", {"inter_op_threads": 1}),
    ("intra=1, inter=1", {"intra_op_threads": 1, "inter_op_threads": 1}),
    ("private_threadpool_size=1", {"private_threadpool_size": 1}),
    ("private_threadpool_size=2", {"private_threadpool_size": 2}),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="*", default=list(EXPERIMENTS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune_threads"))
    args = parser.parse_args()
    settings = speed_settings(resolve_space("cpu").run_settings())
    for name in args.experiments:  # one results entry per experiment, as soon as it is measured
        reference = experiment_reference(name)
        base = load_experiment(reference).base_batch_size
        configs = {label: TrialConfig(batch_size=base, **values) for label, values in CASES}
        speeds: dict[str, list[float]] = {label: [] for label in configs}
        for number in range(1, args.rounds + 1):
            for index, (label, config) in enumerate(configs.items()):
                folder = args.work / name / f"round_{number}_case_{index}"
                result = run_isolated(reference, config, settings, log_dir=folder)
                assert result.throughput is not None
                speeds[label].append(result.throughput.median)
        reference_label = CASES[0][0]
        lines = [
            f"### {name}",
            "",
            f"float32, no XLA, batch size {base}; {args.rounds} interleaved rounds of fresh "
            "processes; ratio to the default threads, paired by round (median, order-statistic "
            "interval).",
            "",
            "| threads | samples/s (median) | ratio to default |",
            "| --- | ---: | ---: |",
        ]
        for label, measured in speeds.items():
            ratio = paired_ratio(measured, speeds[reference_label])
            text = "1.00x" if label == reference_label else ratio_text(ratio)
            lines.append(f"| {label} | {statistics.median(measured):,.0f} | {text} |")
        append_results(HERE / "results" / "threads.md", [*lines, ""])


if __name__ == "__main__":
    main()
