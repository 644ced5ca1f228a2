"""The Keras backend head to head: the same configuration on TensorFlow and on JAX, per bundled
experiment.

For each experiment and each precision and batch size of ``CASES``, the configuration on
TensorFlow with XLA (``jit_compile``) and on JAX (``jax.jit``, XLA too) run in fresh processes,
interleaved round by round (``--rounds``) together with the baseline (TensorFlow, float32, no XLA),
with the study's measurement (the ``keras3`` space's windows; no curve, ablation or profile).
Reported per case: the median samples/s over rounds on each backend, the ratio JAX / TensorFlow
paired by round and each one's ratio to the baseline (medians with the order-statistic interval
of :func:`autotune.measure.summarize`). Needs JAX (``pip install -e '.[jax]'``). Results are
appended to results/backends.md with the machine, date, versions and command.

    python experiments/benchmarks/backends.py [EXPERIMENT ...] [--rounds 3]
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
#: (precision, batch size as a multiple of the experiment's base batch size)
CASES = (("float32", 1), ("mixed_bfloat16", 1), ("float32", 4), ("mixed_bfloat16", 4))
BASELINE = "baseline"


def configs(base: int) -> dict[str, TrialConfig]:
    """The baseline, then each case on TensorFlow with XLA and on JAX, by label."""
    runs = {BASELINE: TrialConfig.baseline(base)}
    for precision, factor in CASES:
        for backend in ("tensorflow", "jax"):
            config = TrialConfig(
                batch_size=base * factor, precision=precision, jit_compile=True, backend=backend
            )
            runs[f"{backend} {precision} bs={base * factor}"] = config
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="*", default=list(EXPERIMENTS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune_backends"))
    args = parser.parse_args()
    settings = speed_settings(resolve_space("keras3").run_settings())
    for name in args.experiments:  # one results entry per experiment, as soon as it is measured
        reference = experiment_reference(name)
        base = load_experiment(reference).base_batch_size
        runs = configs(base)
        speeds: dict[str, list[float]] = {label: [] for label in runs}
        for number in range(1, args.rounds + 1):
            for index, (label, config) in enumerate(runs.items()):
                folder = args.work / name / f"round_{number}_run_{index}"
                result = run_isolated(reference, config, settings, log_dir=folder)
                assert result.throughput is not None, label
                speeds[label].append(result.throughput.median)
        lines = [
            f"### {name}",
            "",
            f"Baseline: TensorFlow, float32, no XLA, batch size {base}: "
            f"{statistics.median(speeds[BASELINE]):,.0f} samples/s. {args.rounds} interleaved "
            "rounds of fresh processes; ratios paired by round (median, order-statistic "
            "interval).",
            "",
            "| precision | batch | TensorFlow + XLA (samples/s) | JAX (samples/s) "
            "| JAX / TensorFlow | TensorFlow + XLA / baseline | JAX / baseline |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for precision, factor in CASES:
            tf_speeds = speeds[f"tensorflow {precision} bs={base * factor}"]
            jax_speeds = speeds[f"jax {precision} bs={base * factor}"]
            lines.append(
                f"| {precision} | {base * factor} | {statistics.median(tf_speeds):,.0f} "
                f"| {statistics.median(jax_speeds):,.0f} "
                f"| {ratio_text(paired_ratio(jax_speeds, tf_speeds))} "
                f"| {ratio_text(paired_ratio(tf_speeds, speeds[BASELINE]))} "
                f"| {ratio_text(paired_ratio(jax_speeds, speeds[BASELINE]))} |"
            )
        append_results(HERE / "results" / "backends.md", [*lines, ""])


if __name__ == "__main__":
    main()
