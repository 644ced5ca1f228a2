"""Study wall time with 1, 2 and 3 local workers, on a Journal file and on PostgreSQL.

Each run is a fresh ``autotune run EXPERIMENT --space quick --trials N --confirm-top 0 --profile
off --workers K`` in an empty folder, timed as a whole (the baseline included); the stored study
then says when its trials ran (search: the first trial's start to the last trial's end), which
worker ran each, and what the study found. K workers split the usable cores into K disjoint core
sets; where K exceeds the cores, the workers share them (``--share-cores``), and their trials
slow each other. Results are printed as each run ends and appended to results/workers.md with
the machine, date, versions and command.

    python experiments/benchmarks/workers.py --postgres postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import optuna
from optuna.trial import TrialState
from provenance import append_results  # type: ignore[import-not-found]

from autotune.store.records import load_records
from autotune.store.schema import WORKER_ATTR

HERE = Path(__file__).resolve().parent
AUTOTUNE = [sys.executable, "-m", "autotune"]


def postgres_database(server: str) -> str:
    """A new empty database on ``server``; its URL."""
    import sqlalchemy

    base = sqlalchemy.engine.make_url(server)
    name = f"autotune_bench_{uuid.uuid4().hex[:10]}"
    engine = sqlalchemy.create_engine(base, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sqlalchemy.text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


def one_run(experiment: str, storage: str, workers: int, trials: int, folder: Path) -> dict:
    """Runs one study; its wall time (s), search time (s), trials per worker and answer."""
    command = [*AUTOTUNE, "run", experiment, "--space", "quick", "--storage", storage]
    command += ["--trials", str(trials), "--confirm-top", "0", "--profile", "off"]
    command += ["--workers", str(workers)]
    if workers > len(os.sched_getaffinity(0)):
        command.append("--share-cores")
    started = time.monotonic()
    completed = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if completed.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{completed.stdout}\n{completed.stderr}")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    opened = _optuna_storage(storage)
    (name,) = optuna.get_all_study_names(opened)
    study = optuna.load_study(study_name=name, storage=opened)
    done = [t for t in study.get_trials(deepcopy=False) if t.datetime_complete is not None]
    starts = [t.datetime_start for t in done if t.datetime_start is not None]
    ends = [t.datetime_complete for t in done if t.datetime_complete is not None]
    search = (max(ends) - min(starts)).total_seconds() if starts else 0.0
    per_worker: dict[int, int] = {}
    for trial in done:
        pid = (trial.user_attrs.get(WORKER_ATTR) or {}).get("pid", -1)
        per_worker[pid] = per_worker.get(pid, 0) + 1
    durations = [
        (t.datetime_complete - t.datetime_start).total_seconds()
        for t in done
        if t.datetime_start is not None and t.datetime_complete is not None
    ]
    records = load_records(storage, name)
    best = records.best(records.tolerance)
    running = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.RUNNING]
    return {
        "wall": wall,
        "search": search,
        "per_worker": sorted(per_worker.values(), reverse=True),
        "median_trial": statistics.median(durations) if durations else 0.0,
        "pruned": sum(t.state == TrialState.PRUNED for t in done),
        "finished": records.finished_count(),
        "left_running": len(running),
        "best": best.config.describe(),
        "speedup": best.speedup,
    }


def _optuna_storage(url: str) -> optuna.storages.BaseStorage:
    from autotune.store.storage import open_storage

    return open_storage(url, must_exist=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="digits_cnn")
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (optional)")
    args = parser.parse_args()
    counts = [int(k) for k in args.workers.split(",")]
    storages = ["journal"] + (["postgresql"] if args.postgres else [])
    header = (
        "| storage | workers | core sets | study wall (s) | search (s) | trials per worker | "
        "median trial (s) | pruned | finished / left running | best found |"
    )
    rows = [header, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    print(header, flush=True)
    cores = len(os.sched_getaffinity(0))
    for kind in storages:
        for workers in counts:
            with tempfile.TemporaryDirectory() as scratch:
                folder = Path(scratch)
                storage = (
                    f"journal:///{folder}/study.journal"
                    if kind == "journal"
                    else postgres_database(args.postgres)
                )
                result = one_run(args.experiment, storage, workers, args.trials, folder)
            sets = (
                f"shared {cores} cores"
                if workers > cores
                else f"{workers} x {cores // workers} core{'s' if cores // workers > 1 else ''}"
            )
            speed = f"{result['speedup']:.2f}x" if result["speedup"] else "baseline"
            row = (
                f"| {kind} | {workers} | {sets} | {result['wall']:.1f} | {result['search']:.1f} | "
                f"{result['per_worker']} | {result['median_trial']:.1f} | {result['pruned']} | "
                f"{result['finished']} / {result['left_running']} | {result['best']} ({speed}) |"
            )
            rows.append(row)
            print(row, flush=True)
    append_results(
        HERE / "results" / "workers.md",
        [
            f"{args.experiment}, quick space, {args.trials} trials, no confirmation, no "
            "profiles; each row a fresh study in an empty folder (baseline included in the wall "
            "time; search = first trial start to last trial end).",
            "",
            *rows,
            "",
        ],
    )


if __name__ == "__main__":
    main()
