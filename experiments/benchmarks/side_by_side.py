"""Benchmark: a confirmation round as one process for all its models, against one per candidate.

Since d18e0c0 a confirmation round times all its candidates and the baseline in one process
(:func:`autotune.trial.isolation.run_isolated_side_by_side`: each set up and warmed up once, one
window each in turn, in order then in reverse). A candidate there shares the process with other
models, not only with the baseline; that must not move its ratio. Each of ``--rounds`` rounds
runs, in the order a confirmation uses (candidates first in odd rounds, the baseline first and
the candidates reversed in even ones):

- **group**: one process of the candidate, a second copy of the baseline (the A/A: it stands in
  for another candidate and should score 1.00x) and the baseline;
- **pair**: one process of the candidate and the baseline, as a round with one candidate;
- with ``--fresh``, **fresh**: the candidate and the baseline each in a fresh process of its
  own (``--confirm-unpaired``), the ratio candidate / baseline of the round.

Each ratio is scored as a confirmation scores it: a model's median samples/s over the median of
the baseline's in the same process. Reported per experiment: the group's A/A and candidate
ratios and the pair's candidate ratio, medians over rounds with the order-statistic interval,
and whether group and pair agree (their intervals overlap). The candidate is the practitioner's
checklist configuration on the baseline's thread pools and backend
(:func:`in_process.candidate_for`). Settings: the ``cpu`` space's measurement, throughput only.
Results are appended to results/side_by_side.md with the machine, date, versions and command.

    python experiments/benchmarks/side_by_side.py [EXPERIMENT ...] [--rounds 6] [--fresh]
        [--work /tmp/autotune-side-by-side]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from in_process import candidate_for, ratio_text  # type: ignore[import-not-found]
from provenance import append_results  # type: ignore[import-not-found]

from autotune.bundled import load_experiment, resolve_space
from autotune.config import RunSettings, TrialConfig
from autotune.measure import summarize
from autotune.study.confirm_runs import speed_of
from autotune.study.confirming import speed_settings
from autotune.study.runners import isolated_pair_runner, isolated_runner

HERE = Path(__file__).resolve().parent
EXPERIMENTS = ("digits_cnn", "tabular_mlp", "transformer")


def _speeds(
    reference: str,
    configs: Sequence[TrialConfig],
    settings: RunSettings,
    number: int,
    folder: Path,
) -> list[float]:
    """Median samples/s of ``configs`` timed in one process in round ``number``, in the order
    given; set up and timed reversed in even rounds, as a confirmation does."""
    order = list(configs) if number % 2 else list(reversed(configs))
    speeds = [speed_of(r) for r in isolated_pair_runner(reference, order, settings, folder)]
    return speeds if number % 2 else speeds[::-1]


def _fresh(reference: str, config: TrialConfig, settings: RunSettings, folder: Path) -> float:
    return speed_of(isolated_runner(reference, config, settings, folder))


def one_experiment(name: str, rounds: int, work: Path, fresh: bool = False) -> list[str]:
    experiment = load_experiment(name)
    reference = f"autotune.bundled.{name}:experiment"
    settings = speed_settings(resolve_space("cpu").run_settings())
    baseline = TrialConfig.baseline(experiment.base_batch_size)
    candidate = candidate_for(baseline)
    started = time.monotonic()
    aa, grouped, paired, apart = [], [], [], []
    seconds = {"group": 0.0, "pair": 0.0, "fresh": 0.0}
    for number in range(1, rounds + 1):
        folder = work / name / f"round_{number}"
        clock = time.monotonic()
        mine, copy, base = _speeds(
            reference, (candidate, baseline, baseline), settings, number, folder / "group"
        )
        seconds["group"] += time.monotonic() - clock
        clock = time.monotonic()
        alone, beside = _speeds(reference, (candidate, baseline), settings, number, folder / "pair")
        seconds["pair"] += time.monotonic() - clock
        if fresh:
            clock = time.monotonic()
            speed = _fresh(reference, candidate, settings, folder / "fresh_candidate")
            apart.append(speed / _fresh(reference, baseline, settings, folder / "fresh_base"))
            seconds["fresh"] += (time.monotonic() - clock) / 2
        aa.append(copy / base)
        grouped.append(mine / base)
        paired.append(alone / beside)
    group_aa, group, pair = summarize(aa), summarize(grouped), summarize(paired)
    overlap = group.low <= pair.high and pair.low <= group.high
    return [
        f"### {name}",
        "",
        f"baseline `{baseline.describe()}`; candidate `{candidate.describe()}`; {rounds} rounds; "
        f"{time.monotonic() - started:.0f} s.",
        "",
        "| one process of | A/A (baseline copy / baseline) | candidate / baseline | s each |",
        "| --- | --- | --- | ---: |",
        f"| candidate, baseline copy, baseline | {ratio_text(group_aa)} | {ratio_text(group)} "
        f"| {seconds['group'] / rounds:.1f} |",
        f"| candidate, baseline | - | {ratio_text(pair)} | {seconds['pair'] / rounds:.1f} |",
        *(
            [
                f"| each alone (fresh) | - | {ratio_text(summarize(apart))} | "
                f"{seconds['fresh'] / rounds:.1f} |"
            ]
            if apart
            else []
        ),
        "",
        f"- candidate ratios {'overlap' if overlap else 'DO NOT overlap'} "
        f"({group.median:.3f}x in the group vs {pair.median:.3f}x in the pair, "
        f"{100 * (group.median / pair.median - 1):+.1f}%); the group's A/A median "
        f"{group_aa.median:.3f}x.",
        f"- per-round ratios: group A/A {', '.join(f'{r:.3f}' for r in aa)}; group "
        f"{', '.join(f'{r:.3f}' for r in grouped)}; pair {', '.join(f'{r:.3f}' for r in paired)}"
        + (f"; fresh {', '.join(f'{r:.3f}' for r in apart)}." if apart else "."),
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="*", default=list(EXPERIMENTS))
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--fresh", action="store_true", help="also each in a fresh process")
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune-side-by-side"))
    args = parser.parse_args()
    sections = [
        "One process for a round's models against one per candidate (see the script's "
        "docstring): ratios are medians over rounds with the order-statistic interval, each "
        "round's ratio a model's median samples/s over the baseline's in the same process.",
        "",
    ]
    for name in args.experiments:
        sections += one_experiment(name, args.rounds, args.work, args.fresh)
    append_results(HERE / "results" / "side_by_side.md", sections)


if __name__ == "__main__":
    main()
