"""Search strategies replayed against measured grids: trials and wall time to the best speed.

For each bundled experiment a grid of 24 configurations (precision x XLA x batch size; 72 where
steps per execution 1 and 64 and the Keras backend are crossed in, see ``search_grid.py``) is
measured once, live, by an autotune study, and cached under ``data/search_grid/``. Then each
strategy of :data:`autotune.study.replay.STRATEGIES` searches the grid's space ``--seeds`` times
with a budget of ``--budget`` trials, every trial answered from the table
(:func:`autotune.study.replay.replay`): the study's own set-up (structured start, its TPE, stopped
trials ranked as dominated), Optuna's default TPE, NSGA-II (population 8), GP and random search,
the last four on a random start, all with the study's early stops, duplicate reuse and scoring. A
replayed trial costs its live wall time in the grid study.

Reported per experiment and strategy, over the seeds:

- trials to 95% of the grid's best feasible throughput (median and worst; a search that never
  gets there counts as budget + 1, shown as ">budget");
- the live wall time (seconds) to get there, median and worst;
- the hypervolume after 5, 10, 20 and 30 trials as a fraction of the grid's, from the reference
  point (baseline samples/s, tolerance 1.5): only feasible trials faster than the baseline count;
- the share of the live wall time spent in trials stopped early: until the target was reached
  (median over seeds; the whole budget for a search that never reached it), and over all the
  trials (a budget larger than the grid ends by measuring every trap in it);
- the fidelity prediction (:mod:`autotune.study.fidelity_prediction`) checked against the grid
  (:func:`autotune.study.replay.check_predictions`): the share of the proposals skipped as
  predicted infeasible, how many of those the grid measured feasible (wrong), and the share of
  proposals run although the trials before them already ruled them out;
- the tuner's own time per trial (the replay's time: sampler, storage, scoring).

The study's own set-up is replayed twice: as it is ("autotune") and with the fidelity prediction
off ("autotune, no prediction": every proposal run, the method before it), on the same seeds.

Random search, Optuna's default TPE (10 random start-up trials) and NSGA-II (a random first
generation) draw the same first configurations for the same seed, so their early figures agree.
GP needs PyTorch (``pip install torch --index-url https://download.pytorch.org/whl/cpu``);
without it its row says so.

Results are appended to results/search_replay.md with the machine, date, versions and command.

    python experiments/benchmarks/search_replay.py [EXPERIMENT ...] [--reuse-grid]
        [--seeds 20] [--budget 30]

Without ``--reuse-grid`` every grid is measured afresh (about 4 minutes each for the digits CNN
and the tabular MLP, 15 for the transformer, on a 2-core CPU); with it, a cached grid is reused
and only a missing one is measured.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from provenance import append_results  # type: ignore[import-not-found]
from search_grid import grid_file, measure_grid  # type: ignore[import-not-found]

from autotune.study.replay import (
    STRATEGIES,
    Grid,
    ReplayedTrial,
    check_predictions,
    hypervolume_fraction,
    replay,
    seconds_to,
    trials_to_target,
)

HERE = Path(__file__).resolve().parent
EXPERIMENTS = ("digits_cnn", "tabular_mlp", "transformer")
TOLERANCE = 1.5
TARGET = 0.95
CHECKPOINTS = (5, 10, 20, 30)
#: The study's own strategy with the fidelity prediction off: the method before it.
NO_PREDICTION = "autotune, no prediction"


def _quantiles(values: Sequence[float]) -> tuple[float, float]:
    return statistics.median(values), max(values)


def _count(value: float, budget: int) -> str:
    return f">{budget}" if value > budget else f"{value:g}"


def reach(
    searches: Sequence[Sequence[ReplayedTrial]], target: float, budget: int
) -> tuple[list[int | None], list[str]]:
    """Each search's trials to ``target`` samples/s (None: never within ``budget``) and the
    table's four cells: trials to it, median and worst (">budget" for never), and the live
    seconds to it, median and worst (inf for never)."""
    reached = [trials_to_target(s, target) for s in searches]
    counts = [r if r is not None else budget + 1 for r in reached]
    walls = [
        seconds_to(s, r) if r is not None else float("inf")
        for s, r in zip(searches, reached, strict=True)
    ]
    median_count, worst_count = _quantiles(counts)
    median_wall, worst_wall = _quantiles(walls)
    cells = [_count(median_count, budget), _count(worst_count, budget)]
    return reached, [*cells, f"{median_wall:.0f}", f"{worst_wall:.0f}"]


def volume_cell(searches: Sequence[Sequence[ReplayedTrial]], grid: Grid, count: int) -> str:
    """The median over ``searches`` of the hypervolume fraction after ``count`` trials."""
    fractions = [hypervolume_fraction(s, grid, count, TOLERANCE) for s in searches]
    known = [f for f in fractions if f is not None]
    return f"{statistics.median(known):.2f}" if known else "n/a"


def strategy_row(
    name: str, grid: Grid, searches: list[list[ReplayedTrial]], budget: int, seconds: float
) -> str:
    """One table row: a strategy's figures over its searches."""
    target = TARGET * grid.best_feasible(TOLERANCE)
    reached, cells = reach(searches, target, budget)
    volumes = [volume_cell(searches, grid, checkpoint) for checkpoint in CHECKPOINTS]
    to_target = [
        _stopped_share(s[: r if r is not None else budget])
        for s, r in zip(searches, reached, strict=True)
    ]
    trials = sum(len(s) for s in searches)
    checks = [check_predictions(s, grid, TOLERANCE) for s in searches]
    predicted = sum(c.predicted for c in checks)
    wrong = sum(c.wrong for c in checks)
    unverified = sum(c.unverified for c in checks)
    unchecked = f", {unverified} unverified" if unverified else ""
    spent = sum(c.ruled_out_run for c in checks)
    return (
        f"| {name} | {' | '.join(cells)} | {' | '.join(volumes)} | "
        f"{100 * statistics.median(to_target):.0f}% | "
        f"{100 * _stopped_share([t for s in searches for t in s]):.0f}% | "
        f"{100 * predicted / trials:.0f}% ({wrong} wrong{unchecked}) | "
        f"{100 * spent / trials:.0f}% | {1e3 * seconds / trials:.0f} ms |"
    )


def _stopped_share(trials: Sequence[ReplayedTrial]) -> float:
    """The share of ``trials``' live cost spent in trials stopped early."""
    total = sum(t.cost_seconds for t in trials)
    return sum(t.cost_seconds for t in trials if t.row.state == "pruned") / total if total else 0.0


def grid_summary(grid: Grid) -> list[str]:
    scores = grid.scores()
    best = grid.best_feasible(TOLERANCE)
    baseline = grid.baseline_throughput.median
    feasible = sum(f <= TOLERANCE for _, f in scores.values())
    stopped = [e for e in grid.entries if e.state == "pruned"]
    near = sum(t >= TARGET * best and f <= TOLERANCE for t, f in scores.values())
    return [
        f"grid measured {grid.info.get('measured', '?')}: {len(grid.entries)} configurations, "
        f"{feasible} feasible, {len(stopped)} stopped early, "
        f"{sum(e.state == 'failed' for e in grid.entries)} failed; baseline "
        f"{baseline:,.0f} samples/s; best feasible {best:,.0f} samples/s "
        f"({best / baseline:.2f}x); {near} configuration(s) within 95% of it; a full measured "
        f"trial costs {statistics.median(e.wall_seconds for e in grid.entries):.1f} s "
        "(median, live)."
    ]


def one_experiment(
    experiment: str, seeds: int, budget: int, strategies: Sequence[str], reuse: bool, work: Path
) -> list[str]:
    path = grid_file(experiment)
    if not (reuse and path.exists()):
        measure_grid(experiment, work / "grids")
    grid = Grid.load(path)
    lines = [f"### {experiment}", "", *grid_summary(grid), ""]
    lines += [
        "| strategy | trials to 95%: median | worst | seconds to 95%: median | worst | "
        + " | ".join(f"HV@{c}" for c in CHECKPOINTS)
        + " | stopped share to 95% | stopped share, all | skipped as predicted "
        "| run though ruled out | tuner per trial |",
        "| --- | ---: | ---: | ---: | ---: | "
        + " | ".join("---:" for _ in CHECKPOINTS)
        + " | ---: | ---: | ---: | ---: | ---: |",
    ]
    arms = [(name, name, True) for name in strategies]
    if "autotune" in strategies:
        arms.insert(strategies.index("autotune") + 1, (NO_PREDICTION, "autotune", False))
    for label, name, predict in arms:
        started = time.monotonic()
        try:
            searches = [
                replay(grid, name, seed, budget, predict_fidelity=predict) for seed in range(seeds)
            ]
        except ImportError as missing:
            lines.append(f"| {label} | not run: {missing} |")
            continue
        lines.append(strategy_row(label, grid, searches, budget, time.monotonic() - started))
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="*", default=list(EXPERIMENTS))
    parser.add_argument("--reuse-grid", action="store_true", help="reuse cached grids")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=30)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune_search_replay"))
    args = parser.parse_args()
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    sections = [
        f"Replay: {args.seeds} seeds x {args.budget} trials per strategy; target 95% of the "
        "grid's best feasible samples/s (tolerance 1.5); hypervolume (HV@n, median over seeds) "
        "from the reference point (baseline samples/s, fidelity 1.5) as a fraction of the "
        "grid's; seconds are live wall time of the trials run (process start included, the "
        "baseline's runs not), from the grid study.",
        "",
    ]
    for experiment in args.experiments:
        sections += one_experiment(
            experiment, args.seeds, args.budget, strategies, args.reuse_grid, args.work
        )
    append_results(HERE / "results" / "search_replay.md", sections)


if __name__ == "__main__":
    main()
