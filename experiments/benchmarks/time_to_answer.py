"""Time to a trustworthy answer: a whole `autotune run` (baseline, search, confirmation) with
the code before and after a change, side by side, for each bundled experiment.

For each experiment, each arm runs the command a user runs,
``autotune run EXPERIMENT --space SPACE --trials N --profile off``, in a fresh SQLite file, as a
subprocess whose ``PYTHONPATH`` is the arm's source tree: ``before`` is the tree of git revision
``--before`` (extracted with ``git archive`` under ``--work``; the default is the commit before
issue 25's changes), ``after`` the tree this script is in, or that of ``--after`` (so the tree
can change while the benchmark runs). The arms alternate which goes first
from one experiment to the next, so a drift of the machine does not favour one. Each arm reports
its wall time to the confirmed answer (the command's whole run), its processes (one per
``trial.log`` its runs wrote: baseline seeds, trials, confirmation rounds, seed curves,
attribution), the seconds its trials stopped early took (a share of the wall time: the target is
at most 5%), and its answer (``autotune best --json``): the recommended configuration and its
confirmed speed-up with the interval. Each experiment's result is appended to
results/time_to_answer.md as soon as both its arms ran, with the machine, date, versions and
command.

    python experiments/benchmarks/time_to_answer.py [--experiments tabular_mlp ...]
        [--space cpu] [--trials 15] [--before bd20a05] [--after HEAD] [--arms after]

(``--arms after`` runs one arm alone, for a change measured against an earlier entry's arms.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import optuna
from provenance import append_results  # type: ignore[import-not-found]

from autotune.config import TrialConfig

HERE = Path(__file__).resolve().parent
REPOSITORY = HERE.parents[1]
EXPERIMENTS = ("digits_cnn", "tabular_mlp", "transformer")  # bundled: autotune/bundled/
#: The last commit before issue 25 (time to a trustworthy answer) changed the method.
BEFORE = "bd20a05"


@dataclass(frozen=True)
class ArmRun:
    """One arm's whole run of one experiment."""

    arm: str
    wall_seconds: float
    processes: int
    answer: dict[str, Any]
    stopped_seconds: float  # trials stopped early (pruned after running)
    stopped: int


def commit_of(revision: str) -> str:
    """The short hash of git ``revision`` (HEAD today is not HEAD tomorrow)."""
    return subprocess.run(
        ["git", "-C", str(REPOSITORY), "rev-parse", "--short", revision],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def source_tree(revision: str, work: Path) -> Path:
    """The package tree of git ``revision``, extracted (once) under ``work``."""
    target = work / f"src-{commit_of(revision)}"
    if not (target / "autotune").is_dir():
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(REPOSITORY), "archive", revision],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def _autotune(source: Path, folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(source)}
    return subprocess.run(
        [sys.executable, "-m", "autotune", *args],
        cwd=folder,
        env=env,
        text=True,
        capture_output=True,
        check=False,
    )


def run_arm(arm: str, source: Path, experiment: str, args: argparse.Namespace) -> ArmRun:
    """``autotune run`` of ``experiment`` with ``source``'s code in a fresh folder."""
    folder = args.work / experiment / arm
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    storage = f"sqlite:///{folder / 'study.db'}"
    started = time.perf_counter()
    run = _autotune(
        source, folder, "run", experiment, "--space", args.space, "--trials", str(args.trials),
        "--profile", "off", "--storage", storage, "--seed", str(args.seed),
    )  # fmt: skip
    wall = time.perf_counter() - started
    (folder / "run.log").write_text(run.stdout + run.stderr, encoding="utf-8")
    if run.returncode != 0:
        raise SystemExit(f"{arm} {experiment}: autotune run exited {run.returncode}: see {folder}")
    best = _autotune(source, folder, "best", "--storage", storage, "--json")
    if best.returncode != 0:
        raise SystemExit(f"{arm} {experiment}: autotune best failed: {best.stderr[-2000:]}")
    processes = sum(1 for _ in folder.rglob("trial.log"))
    stopped = stopped_trials(storage)
    return ArmRun(
        arm, wall, processes, json.loads(best.stdout), sum(stopped, timedelta()).total_seconds(),
        len(stopped),
    )  # fmt: skip


def stopped_trials(storage: str) -> list[timedelta]:
    """How long each trial stopped early ran (pruned trials that ran a process; one skipped as
    predicted infeasible or out of memory ran none and took no measurable time)."""
    (summary,) = optuna.get_all_study_summaries(storage)
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    return [
        trial.datetime_complete - trial.datetime_start
        for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.PRUNED,))
        if trial.datetime_start and trial.datetime_complete and trial.user_attrs.get("log_dir")
    ]


def answer_text(answer: dict[str, Any]) -> str:
    """The recommendation and its confirmed speed-up (or the note when there is none)."""
    settings = TrialConfig.from_dict(answer["config"]).describe()
    confirmation = answer.get("confirmation") or {}
    ratio = confirmation.get("ratio") or {}
    if ratio:
        speed = (
            f"{ratio['median']:.2f}x (CI {ratio['low']:.2f}-{ratio['high']:.2f}, "
            f"{ratio.get('n', '?')} rounds)"
        )
    elif answer.get("trial") is None:
        speed = "the baseline (nothing beat it beyond noise)"
    else:
        speed = f"{answer.get('speedup') or 0:.2f}x (unconfirmed)"
    return f"{speed}: `{settings}`"


def one_experiment(
    index: int, experiment: str, sources: dict[str, Path], args: argparse.Namespace
) -> list[str]:
    """Both arms of ``experiment``, the first arm alternating with ``index``: its section."""
    order = list(sources) if index % 2 == 0 else list(reversed(sources))
    order = [arm for arm in order if arm in args.arms]
    runs = {arm: run_arm(arm, sources[arm], experiment, args) for arm in order}
    lines = [
        f"### {experiment}",
        "",
        f"{args.trials} trials of the `{args.space}` space, profiling off; arms run in the "
        f"order {', '.join(order)}.",
        "",
        "| arm | wall time to the answer (s) | processes | trials stopped early (s, share) "
        "| answer |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for run in runs.values():
        stopped = (
            f"{run.stopped}: {run.stopped_seconds:,.0f} s, "
            f"{run.stopped_seconds / run.wall_seconds:.1%}"
        )
        lines.append(
            f"| {run.arm} | {run.wall_seconds:,.0f} | {run.processes} | {stopped} "
            f"| {answer_text(run.answer)} |"
        )
    lines.append("")
    if len(runs) == 2:
        before, after = runs["before"], runs["after"]
        lines += [
            f"After / before: {before.wall_seconds / after.wall_seconds:.2f}x shorter, "
            f"{before.processes} -> {after.processes} processes.",
            "",
        ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", nargs="*", default=list(EXPERIMENTS))
    parser.add_argument("--space", default="cpu")
    parser.add_argument("--trials", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--before", default=BEFORE, help="git revision of the 'before' arm")
    parser.add_argument("--after", help="git revision of the 'after' arm (the working tree)")
    parser.add_argument("--work", type=Path, default=Path("benchmark_runs/time_to_answer"))
    parser.add_argument("--output", type=Path, default=HERE / "results" / "time_to_answer.md")
    parser.add_argument(
        "--arms",
        nargs="+",
        choices=("before", "after"),
        default=["before", "after"],
        help="the arms to run (one alone: no ratio; compare it with an earlier entry)",
    )
    args = parser.parse_args()
    args.work = args.work.resolve()
    after = source_tree(args.after, args.work) if args.after else REPOSITORY
    sources = {"before": source_tree(args.before, args.work), "after": after}
    after_name = commit_of(args.after) if args.after else "the working tree"
    arms = f"`before`: {commit_of(args.before)}; `after`: {after_name}."
    for index, experiment in enumerate(args.experiments):  # one entry each: a long run may stop
        append_results(args.output, [arms, "", *one_experiment(index, experiment, sources, args)])


if __name__ == "__main__":
    main()
