"""Benchmark: a candidate and the baseline timed in one process, against today's fresh processes.

A confirmation round today runs every candidate and the baseline each in a fresh process; the
paired ratio is candidate / baseline per round. The alternative
(:func:`autotune.trial.isolation.run_isolated_pair`) times both in one process, each compiled and
warmed up once, their windows alternating in ABBA order; a round's ratio is then the median of
its window pairs' ratios, and a round costs one process instead of two. Before a confirmation
may use it, it must be shown to measure the same thing:

- **A/A**: the baseline against itself. Fresh processes: the ratio of two baseline processes of
  the same round; one process: the baseline paired with a second copy of itself. Both should be
  1.00x; the interval of the one-process A/A should be no wider than the fresh processes'.
- **Agreement**: a real candidate (the practitioner's checklist configuration for this machine,
  :mod:`autotune.study.checklist`, moved to the baseline's thread pools and backend where it
  differs) against the baseline, both ways; the two ratios should agree within their intervals.

Each of ``--rounds`` rounds runs, in this order: baseline, baseline, candidate (fresh
processes), then one process of the baseline paired with itself and one of the candidate paired
with the baseline, ``--pairs`` window pairs each, so a drift of the machine reaches every arm
alike. Settings: the ``cpu`` space's measurement (7 windows of 0.5 s), throughput only. Reported
per experiment: each arm's median ratio with its order-statistic interval over the rounds, the
interval's width, the first round's one-process ratio over its window pairs alone (what a single
process gives), the one-process ratio as a confirmation scores a paired round (the candidate's
median samples/s over the median of the baseline's beside it,
:mod:`autotune.study.confirming`), and the processes each arm spent. Results are appended to
results/in_process.md with the machine, date, versions and command.

    python experiments/benchmarks/in_process.py [EXPERIMENT ...] [--rounds 6] [--pairs 7]
        [--work /tmp/autotune-in-process]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from provenance import append_results  # type: ignore[import-not-found]

from autotune import hardware
from autotune.analysis.head_to_head import paired_ratio
from autotune.bundled import load_experiment, resolve_space
from autotune.config import RunSettings, TrialConfig
from autotune.measure import Estimate, summarize
from autotune.settings import process_fixed
from autotune.store.result import RunResult
from autotune.study.checklist import checklist_config
from autotune.study.confirming import speed_settings
from autotune.trial.isolation import run_isolated, run_isolated_pair

HERE = Path(__file__).resolve().parent
EXPERIMENTS = ("digits_cnn", "tabular_mlp", "transformer")


def candidate_for(baseline: TrialConfig) -> TrialConfig:
    """The checklist configuration for this machine, on the baseline's backend and thread pools
    (what one process fixes)."""
    checklist = checklist_config(baseline.batch_size, hardware.hardware())
    fixed = {name: getattr(baseline, name) for name in process_fixed()}
    return dataclasses.replace(checklist, **fixed)


@dataclass(frozen=True)
class Round:
    """One round's measurements: samples/s of the three fresh processes (two of the baseline,
    one of the candidate), the window-pair ratios of the two paired processes, and the paired
    candidate's ratio as a confirmation scores it (its median samples/s over the median of the
    baseline's beside it)."""

    base_a: float
    base_b: float
    candidate: float
    aa_ratios: list[float]
    pair_ratios: list[float]
    pair_medians: float


def _ratios(first: RunResult, second: RunResult) -> list[float]:
    a, b = first.window_samples_per_second, second.window_samples_per_second
    return [x / y for x, y in zip(a, b, strict=True)]


def one_round(
    reference: str,
    baseline: TrialConfig,
    candidate: TrialConfig,
    settings: RunSettings,
    pairs: int,
    logs: Path,
) -> Round:
    """One round of every arm: three fresh processes, then two paired ones."""
    speeds = []
    for name, config in (("base_a", baseline), ("base_b", baseline), ("candidate", candidate)):
        result = run_isolated(reference, config, settings, log_dir=logs / name)
        assert result.throughput is not None
        speeds.append(result.throughput.median)
    aa = run_isolated_pair(
        reference, baseline, baseline, settings, pairs=pairs, log_dir=logs / "aa"
    )
    pair = run_isolated_pair(
        reference, candidate, baseline, settings, pairs=pairs, log_dir=logs / "pair"
    )
    base_a, base_b, cand = speeds
    mine, beside = (statistics.median(r.window_samples_per_second) for r in pair)
    return Round(base_a, base_b, cand, _ratios(*aa), _ratios(*pair), mine / beside)


def ratio_text(estimate: Estimate) -> str:
    """'1.234x (1.100-1.300, width 0.200)': a ratio's median, interval and its width."""
    return (
        f"{estimate.median:.3f}x ({estimate.low:.3f}-{estimate.high:.3f}, "
        f"width {estimate.high - estimate.low:.3f})"
    )


def one_experiment(name: str, rounds: int, pairs: int, work: Path) -> list[str]:
    experiment = load_experiment(name)
    reference = f"autotune.bundled.{name}:experiment"
    settings = speed_settings(resolve_space("cpu").run_settings())
    baseline = TrialConfig.baseline(experiment.base_batch_size)
    candidate = candidate_for(baseline)
    started = time.monotonic()
    rows = [
        one_round(reference, baseline, candidate, settings, pairs, work / name / f"round_{r}")
        for r in range(1, rounds + 1)
    ]

    base_a = [r.base_a for r in rows]
    fresh_aa = paired_ratio([r.base_b for r in rows], base_a)
    fresh = paired_ratio([r.candidate for r in rows], base_a)
    one_aa = summarize([statistics.median(r.aa_ratios) for r in rows])
    one = summarize([statistics.median(r.pair_ratios) for r in rows])
    scored = summarize([r.pair_medians for r in rows])
    single_aa, single = summarize(rows[0].aa_ratios), summarize(rows[0].pair_ratios)
    overlap = one.low <= fresh.high and fresh.low <= one.high
    narrower = "no wider" if _width(one_aa) <= _width(fresh_aa) else "WIDER"
    return [
        f"### {name}",
        "",
        f"baseline `{baseline.describe()}`; candidate `{candidate.describe()}`; {rounds} rounds, "
        f"{pairs} window pairs per paired process; {time.monotonic() - started:.0f} s.",
        "",
        "| measurement | A/A (baseline / baseline) | candidate / baseline | processes per round |",
        "| --- | --- | --- | ---: |",
        f"| fresh processes (today) | {ratio_text(fresh_aa)} | {ratio_text(fresh)} | 2 per ratio |",
        f"| one process per round | {ratio_text(one_aa)} | {ratio_text(one)} | 1 per ratio |",
        f"| one process, as a confirmation scores it (median / median) | - | {ratio_text(scored)} "
        "| 1 per ratio |",
        f"| one process, round 1 alone (window pairs) | {ratio_text(single_aa)} "
        f"| {ratio_text(single)} | - |",
        "",
        f"- A/A one-process interval {narrower} than the fresh processes' "
        f"({_width(one_aa):.3f} vs {_width(fresh_aa):.3f}); "
        f"candidate ratios {'overlap' if overlap else 'DO NOT overlap'} "
        f"({one.median:.3f}x vs {fresh.median:.3f}x, "
        f"{100 * (one.median / fresh.median - 1):+.1f}%).",
        f"- samples/s medians over rounds: baseline {statistics.median(base_a):,.0f}, "
        f"candidate {statistics.median(r.candidate for r in rows):,.0f} (fresh processes).",
        "",
    ]


def _width(estimate: Estimate) -> float:
    return estimate.high - estimate.low


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="*", default=list(EXPERIMENTS))
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune-in-process"))
    args = parser.parse_args()
    sections = [
        "One process per candidate against fresh processes (see the script's docstring): "
        "ratios are medians over rounds with the order-statistic interval; a one-process "
        "round's ratio is the median of its window pairs'.",
        "",
    ]
    for name in args.experiments:
        sections += one_experiment(name, args.rounds, args.pairs, args.work)
    append_results(HERE / "results" / "in_process.md", sections)


if __name__ == "__main__":
    main()
