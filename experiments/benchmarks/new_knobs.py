"""The best confirmed speed-up with and without the new knobs (steps per execution, thread
counts), per bundled experiment, in one run.

For each experiment, two studies of the same budget: the ``cpu`` space, and the same space
without the new knobs (data/spaces/cpu_without_new_knobs.toml, the ``cpu`` space as it was
before them). Each study (``--trials``, profiling off, seed 0) is confirmed by its own
head-to-head confirmation (``--top`` candidates, ``--rounds`` interleaved rounds of fresh
processes against the baseline, fidelity over the baseline's seeds;
:mod:`autotune.analysis.head_to_head`). Reported per study: its confirmed answer (ratio to the
baseline with its interval, or "keep the baseline"), the recommended configuration and the study's
time. Results are appended to results/new_knobs.md with the machine, date, versions and command.

    python experiments/benchmarks/new_knobs.py [EXPERIMENT ...] [--trials 8] [--top 2] [--rounds 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from provenance import append_results  # type: ignore[import-not-found]

from autotune import Study

HERE = Path(__file__).resolve().parent
EXPERIMENTS = ("digits_cnn", "tabular_mlp", "transformer")
SPACES = (
    ("without the new knobs", HERE / "data" / "spaces" / "cpu_without_new_knobs.toml"),
    ("with the new knobs (cpu)", "cpu"),
)


def one_study(experiment: str, space: str | Path, args: argparse.Namespace, work: Path) -> str:
    """A row: the study's confirmed answer, its recommendation and its time."""
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    study = Study(experiment, space, f"sqlite:///{work / 'study.db'}", profile_mode="off")
    study.optimize(n_trials=args.trials)
    searched = time.perf_counter() - started
    confirmation = study.confirm(top=args.top, rounds=args.rounds)
    total = time.perf_counter() - started
    recipe = study.best()
    answer = confirmation.summary(study.tolerance) if confirmation else "-"
    shown = "the baseline" if recipe.is_baseline else f"`{recipe.config.describe()}`"
    return f"{answer} | {shown} | {searched:.0f} / {total:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="*", default=list(EXPERIMENTS))
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--top", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune_new_knobs"))
    args = parser.parse_args()
    for experiment in args.experiments:  # one results entry per experiment, as it is measured
        lines = [
            f"### {experiment}",
            "",
            f"{args.trials} trials per study, profiling off; confirmation of the top {args.top} "
            f"over {args.rounds} rounds.",
            "",
            "| space | confirmed answer | recommended | search / with confirmation (s) |",
            "| --- | --- | --- | --- |",
        ]
        for index, (label, space) in enumerate(SPACES):
            row = one_study(experiment, space, args, args.work / experiment / f"space_{index}")
            lines.append(f"| {label} | {row} |")
            print(lines[-1], flush=True)
        append_results(HERE / "results" / "new_knobs.md", [*lines, ""])


if __name__ == "__main__":
    main()
