"""Benchmark: a study started warm from an earlier study of a neighbouring grid, replayed.

A warm start (``autotune run --warm-start STORAGE[:STUDY]``, :mod:`autotune.study.warm_start`)
proposes an earlier study's answer and Pareto front first, measured again. This benchmark asks
what that buys when the earlier study searched something close to, but not the same as, the new
one. For each bundled experiment's measured grid (``data/search_grid/``, see
``search_replay.py``) and each neighbouring grid of it:

- "smaller batches": the grid without its largest batch size (an earlier study of a smaller
  batch-size range);
- "one step per call": the grid with ``steps_per_execution`` 1 only (an earlier space without
  that knob), where the grid crosses it in;

an earlier study (autotune's own strategy, ``--earlier-budget`` trials) searches the neighbour;
then a new study of ``--budget`` trials searches the whole grid twice, on the same seed: cold,
and warm from that earlier study. Every trial is answered from the table
(:func:`autotune.study.replay.replay`) and costs its live wall time in the grid study; the
earlier study's own trials are not counted (it ran before).

Reported per grid and neighbour, over ``--seeds`` seeds: trials and seconds to 95% of the whole
grid's best feasible samples/s, median and worst (a search that never gets there counts as
budget + 1, shown as ">budget", and infinite seconds); the share of seeds whose first warm trial
(the earlier answer) reaches the target; the hypervolume after 5 and 10 trials (median, as a
fraction of the grid's). Results are appended to results/warm_start.md with the machine, date,
versions and command.

    python experiments/benchmarks/warm_start.py [EXPERIMENT ...] [--seeds 20] [--budget 30]
        [--earlier-budget 15] [--work /tmp/autotune-warm-start]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
from collections.abc import Sequence
from pathlib import Path

from provenance import append_results  # type: ignore[import-not-found]
from search_grid import grid_file  # type: ignore[import-not-found]
from search_replay import (  # type: ignore[import-not-found]
    EXPERIMENTS,
    TARGET,
    TOLERANCE,
    reach,
    volume_cell,
)

from autotune.space import Choice, SearchSpace
from autotune.study.replay import (
    Grid,
    ReplayedTrial,
    replay,
)

HERE = Path(__file__).resolve().parent
STRATEGY = "autotune"


def restricted(grid: Grid, name: str, values: Sequence[object], label: str) -> Grid:
    """``grid`` with parameter ``name`` limited to ``values``: its space and its entries."""
    parameters = {**grid.space.parameters, name: Choice(tuple(values))}
    space = SearchSpace(f"{grid.space.name}-{label}", parameters, dict(grid.space.measure))
    entries = tuple(e for e in grid.entries if getattr(e.config, name) in values)
    return Grid(grid.experiment, space, grid.baseline, entries, grid.info)


def neighbours(grid: Grid) -> dict[str, Grid]:
    """The neighbouring grids an earlier study may have searched (see the module docstring)."""
    found = {}
    batch = grid.space.parameters["batch_size"]
    assert isinstance(batch, Choice)
    smaller = sorted(v for v in batch.values if isinstance(v, int))[:-1]
    found["smaller batches"] = restricted(grid, "batch_size", smaller, "smaller-batches")
    if "steps_per_execution" in grid.space.parameters:
        found["one step per call"] = restricted(grid, "steps_per_execution", [1], "one-step")
    return found


def _answer_first(search: list[ReplayedTrial], target: float) -> bool:
    """Whether the search's first trial is a warm proposal at >= ``target`` samples/s."""
    first = search[0]
    speed = first.feasible_throughput
    return first.row.warm_from is not None and speed is not None and speed >= target


def one_neighbour(
    grid: Grid, label: str, neighbour: Grid, seeds: int, budget: int, earlier: int, work: Path
) -> tuple[list[str], str]:
    """The cold and warm rows for one neighbouring grid, and a note on the neighbour."""
    target = TARGET * grid.best_feasible(TOLERANCE)
    cold, warm = [], []
    for seed in range(seeds):
        folder = work / f"{grid.experiment}-{neighbour.space.name}-{seed}"
        shutil.rmtree(folder, ignore_errors=True)
        replay(neighbour, STRATEGY, seed, earlier, work=folder)
        source = f"sqlite:///{folder / 'replay.db'}:replay-{seed}"
        cold.append(replay(grid, STRATEGY, seed, budget))
        warm.append(replay(grid, STRATEGY, seed, budget, warm_start=source))
    first = sum(_answer_first(s, target) for s in warm)
    proposed = statistics.median(sum(t.row.warm_from is not None for t in s) for s in warm)
    rows = []
    for arm, searches in (("cold", cold), ("warm", warm)):
        _, reached = reach(searches, target, budget)
        volumes = [volume_cell(searches, grid, count) for count in (5, 10)]
        cells = [label, arm, *reached, *volumes]
        extra = f"{first} of {seeds} ({proposed:g} proposed)" if arm == "warm" else "-"
        rows.append("| " + " | ".join([*cells, extra]) + " |")
    best = neighbour.best_feasible(TOLERANCE)
    note = (
        f"{label}: {len(neighbour.entries)} of the grid's {len(grid.entries)} configurations; "
        f"its best feasible {best:,.0f} samples/s, {best / grid.best_feasible(TOLERANCE):.0%} "
        "of the whole grid's."
    )
    return rows, note


def one_experiment(experiment: str, seeds: int, budget: int, earlier: int, work: Path) -> list[str]:
    grid = Grid.load(grid_file(experiment))
    best = grid.best_feasible(TOLERANCE)
    lines = [
        f"### {experiment}",
        "",
        f"grid measured {grid.info.get('measured', '?')}: {len(grid.entries)} configurations; "
        f"best feasible {best:,.0f} samples/s ({best / grid.baseline_throughput.median:.2f}x "
        "the baseline).",
        "",
        "| earlier study searched | start | trials to 95%: median | worst | seconds to 95%: "
        "median | worst | HV@5 | HV@10 | first warm trial reaches 95% |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    notes = []
    for label, neighbour in neighbours(grid).items():
        rows, note = one_neighbour(grid, label, neighbour, seeds, budget, earlier, work)
        lines += rows
        notes.append(note)
    return [*lines, "", *(f"- {n}" for n in notes), ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="*", default=list(EXPERIMENTS))
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=30)
    parser.add_argument("--earlier-budget", type=int, default=15)
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune-warm-start"))
    args = parser.parse_args()
    sections = [
        f"Warm start replayed: {args.seeds} seeds; an earlier study of {args.earlier_budget} "
        f"trials on a neighbouring grid, then {args.budget} trials on the whole grid, cold and "
        "warm from it, same seed; target 95% of the whole grid's best feasible samples/s "
        "(tolerance 1.5); seconds are the live wall time of the new study's trials (the earlier "
        "study's not counted).",
        "",
    ]
    for experiment in args.experiments:
        sections += one_experiment(
            experiment, args.seeds, args.budget, args.earlier_budget, args.work
        )
    append_results(HERE / "results" / "warm_start.md", sections)


if __name__ == "__main__":
    main()
