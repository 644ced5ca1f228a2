"""The replay benchmark's grid: every configuration of a small space measured once, live.

For one bundled experiment the grid is precision (float32, mixed_bfloat16, mixed_float16) x XLA
(off, on) x batch size (1, 2, 4 and 8 times the experiment's base), the other settings at the
baseline's values: 24 configurations, small enough to measure in minutes, large enough to hold
the traps seen on CPUs (float16 without XLA is tens of times slower; bfloat16 with XLA can be
slower than the baseline; large batches learn differently per sample). Where a newer knob
decided the answer on an experiment, its grid crosses it in too (:data:`EXTRA_KNOBS`): on the
digits CNN and the tabular MLP steps per execution 1 and 64 (64 steps per call carried their
best confirmed ratio, results/new_knobs.md) and the Keras backend (JAX ran them 1.3-3.3x the
baseline where TensorFlow with XLA ran 0.5-2.2x, results/backends.md): 72 configurations each,
a JAX configuration having one XLA value (``jax.jit``). Not on the transformer, whose answer was
its batch size alone.

It is measured by an autotune study of that space with every configuration enqueued, so each one
is measured exactly as a live study measures it: the same baseline (three seeds, the noise
floor), the same early stops against the baseline's lower bound, the same curve and fidelity,
and the measurement settings of the ``cpu`` space, profiling off. What is kept per
configuration is the trial's full result and its wall time in the study (process start
included): what the trial would cost again, live. Written as JSON under ``data/search_grid/``
with the machine, date, versions and command; :func:`load_grid` reads it back.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from autotune import Study, TrialConfig
from autotune.bundled import experiment_reference, load_experiment, resolve_space
from autotune.hardware import hardware, versions
from autotune.space import Choice, SearchSpace
from autotune.store.result import RunResult
from autotune.store.schema import CONFIG_ATTR, FAILURE_ATTR, RESULT_ATTR
from autotune.study.replay import GRID_SCHEMA, Grid, GridEntry

HERE = Path(__file__).resolve().parent
GRID_FOLDER = HERE / "data" / "search_grid"
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
BATCH_FACTORS = (1, 2, 4, 8)
#: Knobs crossed into an experiment's grid besides precision x XLA x batch size, with their values.
EXTRA_KNOBS: dict[str, dict[str, tuple[Any, ...]]] = {
    "digits_cnn": {"steps_per_execution": (1, 64), "backend": ("tensorflow", "jax")},
    "tabular_mlp": {"steps_per_execution": (1, 64), "backend": ("tensorflow", "jax")},
}
__all__ = [
    "EXTRA_KNOBS",
    "GRID_SCHEMA",
    "grid_file",
    "grid_params",
    "grid_space",
    "grid_values",
    "measure_grid",
    "write_grid",
]


def grid_values(experiment: str, base_batch_size: int) -> dict[str, tuple[Any, ...]]:
    """Each parameter of ``experiment``'s grid with its values, in the space's order."""
    return {
        "precision": PRECISIONS,
        "jit_compile": (False, True),
        "batch_size": tuple(base_batch_size * f for f in BATCH_FACTORS),
        **EXTRA_KNOBS.get(experiment, {}),
    }


def grid_params(experiment: str, base_batch_size: int) -> list[dict[str, Any]]:
    """Every configuration of ``experiment``'s grid as a trial's parameters, once each: a JAX
    configuration without ``jit_compile`` (it always compiles with ``jax.jit``, and the space
    does not draw it there)."""
    values = grid_values(experiment, base_batch_size)
    configs: list[dict[str, Any]] = []
    for combo in itertools.product(*values.values()):
        params = dict(zip(values, combo, strict=True))
        if params.get("backend") == "jax":
            del params["jit_compile"]
        if params not in configs:
            configs.append(params)
    return configs


def grid_space(experiment: str, base_batch_size: int) -> SearchSpace:
    """The grid's space for ``experiment``, whose baseline batch size is ``base_batch_size``,
    measured with the ``cpu`` space's settings."""
    values = grid_values(experiment, base_batch_size)
    return SearchSpace(
        "grid",
        {name: Choice(choices) for name, choices in values.items()},
        measure=dict(resolve_space("cpu").measure),
        description=f"The replay benchmark's grid: {' x '.join(values)}.",
    )


def grid_file(experiment: str, folder: Path = GRID_FOLDER) -> Path:
    return folder / f"{experiment}.json"


def measure_grid(experiment: str, work: Path, folder: Path = GRID_FOLDER) -> Path:
    """Measures every configuration of ``experiment``'s grid in a fresh study under ``work``
    and writes the grid file; returns its path."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    reference = experiment_reference(experiment)
    base = load_experiment(reference).base_batch_size
    work.mkdir(parents=True, exist_ok=True)
    storage = f"sqlite:///{work / f'{experiment}_grid.db'}"
    study = Study(
        reference, grid_space(experiment, base), storage, f"{experiment}-grid", profile_mode="off"
    )
    configs = grid_params(experiment, base)
    stored = {json.dumps(t.params, sort_keys=True) for t in study.optuna.trials}
    for params in configs:
        if json.dumps(params, sort_keys=True) not in stored:
            study.optuna.enqueue_trial(params)
    started = dt.datetime.now(dt.timezone.utc)
    study.optimize(n_trials=len(configs))
    return write_grid(study, experiment, started, folder)


def write_grid(study: Study, experiment: str, started: dt.datetime, folder: Path) -> Path:
    """The grid file of a measured grid study (:meth:`autotune.study.replay.Grid.to_dict`)."""
    entries = []
    for trial in study.optuna.get_trials(
        states=(TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
    ):
        assert trial.datetime_start is not None and trial.datetime_complete is not None
        stored = trial.user_attrs.get(RESULT_ATTR)
        config = trial.user_attrs[CONFIG_ATTR]
        result = None
        if stored is not None and trial.state != TrialState.FAIL:
            result = RunResult.from_dict({**stored, "config": config})
        wall = (trial.datetime_complete - trial.datetime_start).total_seconds()
        entries.append(
            GridEntry(
                config=TrialConfig.from_dict(config),
                state=trial.state.name.lower().replace("fail", "failed"),
                wall_seconds=round(wall, 3),
                result=result,
                failure=trial.user_attrs.get(FAILURE_ATTR),
            )
        )
    info = {
        "measured": started.isoformat(timespec="seconds"),
        "command": "python " + " ".join(sys.argv),
        "machine": hardware(),
        "versions": versions(),
    }
    grid = Grid(experiment, study.space, study.baseline(), tuple(entries), info)
    folder.mkdir(parents=True, exist_ok=True)
    path = grid_file(experiment, folder)
    path.write_text(json.dumps(grid.to_dict(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


if __name__ == "__main__":  # measure grids only: python search_grid.py EXPERIMENT... --work DIR
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("experiments", nargs="+")
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune_search_grid"))
    args = parser.parse_args()
    for name in args.experiments:
        print(f"{name}: grid written to {measure_grid(name, args.work)}", flush=True)
