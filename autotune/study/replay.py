"""Replaying search strategies against a measured grid, without training.

A :class:`Grid` is every configuration of a small space measured once by a live study: each
one's full :class:`~autotune.store.result.RunResult` (a stopped one with its stop), its failure, and
its wall time in that study, process start included; plus the study's baseline (three seeds,
the noise floor). :func:`replay` runs a real :class:`~autotune.study.Study` over the grid's
space with a :class:`TableRunner` that answers each trial from the table instead of training,
so everything but the measurement is the study's own: the structured start, the sampler and how
it ranks stopped trials, the scoring, duplicates. Each replayed trial costs what it cost live
(its grid wall time, when the runner was called) plus the tuner's own time in the replay.

:func:`trials_to_target` and :func:`hypervolume_fraction` score a replay, and
:func:`check_predictions` checks its fidelity predictions against the grid; the benchmark
``experiments/benchmarks/search_replay.py`` runs many seeds of several strategies
(:data:`STRATEGIES`). No TensorFlow here.
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import optuna

from autotune.config import RunSettings, TrialConfig, read_json_object
from autotune.exceptions import ConfigError, TrialFailure
from autotune.fidelity import NoiseFloor, fidelity_distance
from autotune.measure import Estimate
from autotune.space import SearchSpace, space_from_dict
from autotune.store import writer
from autotune.store.predicted import BASELINE_NUMBER, predicted_from
from autotune.store.result import RunResult
from autotune.store.schema import TrialRow
from autotune.study import Study
from autotune.study.fidelity_prediction import Measured, noise_margin, predict
from autotune.study.placement import Placement

#: The grid file layout this module reads.
GRID_SCHEMA = "autotune.search_grid/1"

#: A strategy: (start mode, sampler for a seed, or None for the study's own sampler).
Strategy = tuple[str, Callable[[int], optuna.samplers.BaseSampler] | None]


def _nsga2(seed: int) -> optuna.samplers.BaseSampler:
    # Optuna's default population (50) is larger than the budgets replayed: it would be random
    # search throughout. A population of 8 gives it generations to work with.
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=8)


def _gp(seed: int) -> optuna.samplers.BaseSampler:
    return optuna.samplers.GPSampler(seed=seed)


#: The strategies the benchmark compares: the study's own set-up (structured start, its TPE),
#: Optuna's default TPE, NSGA-II, GP (needs PyTorch) and random search, each on a random start.
STRATEGIES: dict[str, Strategy] = {
    "autotune": ("structured", None),
    "tpe": ("random", lambda seed: optuna.samplers.TPESampler(seed=seed)),
    "nsga2": ("random", _nsga2),
    "gp": ("random", _gp),
    "random": ("random", lambda seed: optuna.samplers.RandomSampler(seed=seed)),
}


def _key(config: TrialConfig | Mapping[str, Any]) -> str:
    data = config.to_dict() if isinstance(config, TrialConfig) else dict(config)
    return json.dumps(data, sort_keys=True)


@dataclass(frozen=True)
class GridEntry:
    """One measured configuration of a grid.

    Attributes:
        config: the configuration.
        state: "complete", "pruned" (stopped early) or "failed".
        wall_seconds: its trial's wall time in the live study (seconds, process start
            included): what running it again costs.
        result: what the trial measured (None for a failed one).
        failure: a failed trial's kind and message.
    """

    config: TrialConfig
    state: str
    wall_seconds: float
    result: RunResult | None = None
    failure: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Grid:
    """A measured grid: its space, the baseline record the study stored, one entry per
    configuration."""

    experiment: str
    space: SearchSpace
    baseline: Mapping[str, Any]
    entries: tuple[GridEntry, ...]
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if set(self.baseline.get("runs", {})) != {"0", "1", "2"} or (
            "noise_floor" not in self.baseline
        ):
            raise ConfigError(
                f"grid of {self.experiment!r}: its baseline must hold seeds 0, 1 and 2 and the "
                f"noise floor. Received runs {sorted(self.baseline.get('runs', {}))}"
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "grid") -> Grid:
        if data.get("schema") != GRID_SCHEMA:
            raise ConfigError(
                f"{source}: schema must be {GRID_SCHEMA!r}. Received: {data.get('schema')!r}"
            )
        entries = []
        for index, raw in enumerate(data["configs"]):
            result = raw.get("result")
            if result is not None and raw["state"] != "failed":
                result = RunResult.from_dict({"hardware": {}, "versions": {}, **result})
            entries.append(
                GridEntry(
                    config=TrialConfig.from_dict(raw["config"], f"{source}: configs[{index}]"),
                    state=raw["state"],
                    wall_seconds=float(raw["wall_seconds"]),
                    result=result if raw["state"] != "failed" else None,
                    failure=raw.get("failure"),
                )
            )
        info = {k: data[k] for k in ("measured", "command", "machine", "versions") if k in data}
        return cls(
            experiment=data["experiment"],
            space=space_from_dict(_space_toml(data["space"]), source),
            baseline=data["baseline"],
            entries=tuple(entries),
            info=info,
        )

    @classmethod
    def load(cls, path: str | Path) -> Grid:
        """Reads a grid file (see ``experiments/benchmarks/search_grid.py``)."""
        path = Path(path)
        return cls.from_dict(read_json_object(path, f"grid file {str(path)!r}"), str(path))

    def to_dict(self) -> dict[str, Any]:
        """The grid file's content (:meth:`from_dict` reads it back)."""
        configs = []
        for entry in self.entries:
            result = entry.result.to_dict() if entry.result is not None else None
            if result is not None:  # kept once, in ``machine`` and ``versions``
                result.pop("hardware", None)
                result.pop("versions", None)
            configs.append(
                {
                    "config": entry.config.to_dict(),
                    "state": entry.state,
                    "wall_seconds": entry.wall_seconds,
                    "result": result,
                    "failure": dict(entry.failure) if entry.failure is not None else None,
                }
            )
        return {
            "schema": GRID_SCHEMA,
            "experiment": self.experiment,
            "space": self.space.to_dict(),
            **dict(self.info),
            "baseline": dict(self.baseline),
            "configs": configs,
        }

    def entry(self, config: TrialConfig) -> GridEntry | None:
        return self._by_key.get(_key(config))

    @cached_property
    def _by_key(self) -> dict[str, GridEntry]:
        return {_key(e.config): e for e in self.entries}

    @property
    def baseline_config(self) -> TrialConfig:
        return TrialConfig.from_dict(self.baseline["config"], "grid baseline")

    @property
    def baseline_throughput(self) -> Estimate:
        return Estimate(**self.baseline["runs"]["0"]["throughput"])

    def scores(self) -> dict[str, tuple[float, float]]:
        """(samples/s, fidelity) of every complete entry but the baseline's own configuration
        (a study measures that as its baseline, never as a trial), scored as the study scores
        it."""
        main = self.baseline["runs"]["0"]
        baseline_curve = [(p["samples"], p["val_loss"]) for p in main["curve"]]
        floor = NoiseFloor.from_dict(self.baseline["noise_floor"])
        scores = {}
        for entry in self.entries:
            result = entry.result
            if entry.state != "complete" or result is None or result.throughput is None:
                continue
            if entry.config == self.baseline_config:
                continue
            curve = [(p.samples, p.val_loss) for p in result.curve]
            fidelity = fidelity_distance(curve, baseline_curve, floor)
            scores[_key(entry.config)] = (result.throughput.median, fidelity)
        return scores

    def best_feasible(self, tolerance: float) -> float:
        """The fastest feasible entry's samples/s (the baseline's when none is feasible)."""
        feasible = [t for t, f in self.scores().values() if f <= tolerance]
        return max(feasible, default=self.baseline_throughput.median)


def _space_toml(space: Mapping[str, Any]) -> dict[str, Any]:
    """A space's :meth:`SearchSpace.to_dict` as the TOML tables :func:`space_from_dict` reads."""
    return {
        "name": space["name"],
        "parameters": dict(space["parameters"]),
        "measure": dict(space.get("measure", {})),
    }


class TableRunner:
    """A study's runner that answers from a grid: the baseline's stored seed runs, each
    configuration's stored result or failure. ``calls`` lists the configurations it answered
    for trials, with their live wall time (seconds)."""

    def __init__(self, grid: Grid) -> None:
        self.grid = grid
        self.calls: list[tuple[TrialConfig, float]] = []

    def __call__(
        self, reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
    ) -> RunResult:
        is_baseline_run = settings.stop_below_samples_per_second is None and settings.curve
        if is_baseline_run and config == self.grid.baseline_config:
            return RunResult.from_dict(
                {"hardware": {}, "versions": {}, **self.grid.baseline["runs"][str(settings.seed)]}
            )
        entry = self.grid.entry(config)
        if entry is None:
            raise ConfigError(f"grid of {self.grid.experiment!r} has no {config.describe()}")
        self.calls.append((config, entry.wall_seconds))
        if entry.state == "failed" or entry.result is None:
            failure = entry.failure or {}
            raise TrialFailure(
                failure.get("kind", "exception"), failure.get("message", "failed in the grid")
            )
        return entry.result


@dataclass(frozen=True)
class ReplayedTrial:
    """One trial of a replayed study.

    Attributes:
        row: the trial as the study stored it.
        measured: whether it ran (its runner was called), not reused or predicted.
        cost_seconds: what it would have cost live: its grid wall time when it ran, plus the
            replay's own time for it (the tuner, the storage).
    """

    row: TrialRow
    measured: bool
    cost_seconds: float

    @property
    def feasible_throughput(self) -> float | None:
        """Its samples/s if it is complete and feasible, else None."""
        row = self.row
        if row.state == "complete" and row.feasible and row.throughput is not None:
            return row.throughput.median
        return None


def replay(
    grid: Grid,
    strategy: str,
    seed: int,
    budget: int,
    *,
    reference: str | None = None,
    tolerance: float = 1.5,
    work: Path | None = None,
    predict_fidelity: bool = True,
    warm_start: str | None = None,
) -> list[ReplayedTrial]:
    """Replays one search of ``budget`` trials with ``strategy`` (a name in
    :data:`STRATEGIES`) and ``seed`` against ``grid``. ``reference`` is the experiment (default:
    the bundled one the grid is named after); ``work`` a folder for the replay's storage and
    logs (default: a temporary one, removed); ``predict_fidelity`` False measures every proposal,
    one the measured trials rule out too (the method before the fidelity prediction);
    ``warm_start`` starts the study warm from an earlier one ("STORAGE[:STUDY]"). Raises
    ImportError for a strategy whose sampler needs a library not installed (GP: PyTorch)."""
    if strategy not in STRATEGIES:
        raise ConfigError(f"strategy must be one of {list(STRATEGIES)}. Received: {strategy!r}")
    start, make_sampler = STRATEGIES[strategy]
    sampler = make_sampler(seed) if make_sampler else None
    if strategy == "gp" and importlib.util.find_spec("torch") is None:
        # GPSampler would fail later, inside a trial, and the study would record a failure.
        raise ImportError("Optuna's GPSampler needs PyTorch, which is not installed")
    run = (grid, start, sampler, seed, budget, reference, tolerance)
    if work is None:
        with tempfile.TemporaryDirectory(prefix="autotune_replay_") as folder:
            return _replay(*run, Path(folder), predict_fidelity, warm_start)
    return _replay(*run, work, predict_fidelity, warm_start)


def _replay(
    grid: Grid,
    start: str,
    sampler: optuna.samplers.BaseSampler | None,
    seed: int,
    budget: int,
    reference: str | None,
    tolerance: float,
    work: Path,
    predict_fidelity: bool,
    warm_start: str | None = None,
) -> list[ReplayedTrial]:
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    runner = TableRunner(grid)
    work.mkdir(parents=True, exist_ok=True)
    study = Study(
        reference or grid.experiment,
        grid.space,
        f"sqlite:///{work / 'replay.db'}",
        f"replay-{seed}",
        tolerance=tolerance,
        seed=seed,
        start=start,
        sampler=sampler,
        runner=runner,
        log_root=work / "logs",
        profile_mode="off",
        max_consecutive_failures=budget + 1,
        placement=Placement(shared=True),  # a table answers: no core to claim from real trials
        warm_start=warm_start,
    )
    if study.experiment.base_batch_size != grid.baseline_config.batch_size:
        raise ConfigError(
            f"grid of {grid.experiment!r} was measured at base batch size "
            f"{grid.baseline_config.batch_size}; the experiment's is "
            f"{study.experiment.base_batch_size}"
        )
    trials: list[ReplayedTrial] = []
    clock = {"last": time.monotonic(), "calls": 0}

    def record(row: TrialRow) -> None:
        now = time.monotonic()
        measured = len(runner.calls) > clock["calls"]
        live = runner.calls[-1][1] if measured else 0.0
        trials.append(ReplayedTrial(row, measured, live + now - clock["last"]))
        clock.update(last=now, calls=len(runner.calls))

    study.anchor_every = None  # a grid was measured once: there is no drift to anchor
    writer.write_fidelity_prediction(study.optuna, predict_fidelity)
    study.add_listener(record)
    study.ensure_baseline()
    clock["last"] = time.monotonic()
    study.optimize(n_trials=budget)
    return trials


def trials_to_target(trials: Sequence[ReplayedTrial], target: float) -> int | None:
    """How many trials a search ran until one was feasible at >= ``target`` samples/s (None
    if none was). Every trial counts, a repeat of a measured configuration too."""
    for count, trial in enumerate(trials, start=1):
        throughput = trial.feasible_throughput
        if throughput is not None and throughput >= target:
            return count
    return None


@dataclass(frozen=True)
class PredictionCheck:
    """A replay's fidelity predictions checked against its grid.

    Attributes:
        proposals: the replay's trials.
        predicted: trials skipped as predicted infeasible (no process run).
        wrong: of those, the ones the grid measured feasible (fidelity within the tolerance).
        unverified: of those, the ones the grid has no fidelity for (stopped early or failed).
        ruled_out_run: trials run although the complete trials before them (and the baseline)
            already predicted them infeasible: proposals spent on what was known.
    """

    proposals: int
    predicted: int
    wrong: int
    unverified: int
    ruled_out_run: int


def check_predictions(
    trials: Sequence[ReplayedTrial], grid: Grid, tolerance: float = 1.5
) -> PredictionCheck:
    """Checks ``trials``' fidelity predictions against ``grid``'s measured fidelities, and counts
    the trials run where the trials before them (by the same rule,
    :func:`autotune.study.fidelity_prediction.predict`) had already ruled them out."""
    scores = grid.scores()
    margin = noise_margin(NoiseFloor.from_dict(grid.baseline["noise_floor"]))
    known = [Measured(BASELINE_NUMBER, grid.baseline_config, 0.0)]
    predicted = wrong = unverified = ruled_out_run = 0
    for trial in trials:
        row = trial.row
        if row.config is None:
            continue
        if predicted_from(row.user_attrs) is not None:
            predicted += 1
            score = scores.get(_key(row.config))
            if score is None:
                unverified += 1
            elif score[1] <= tolerance:
                wrong += 1
            continue
        if trial.measured and predict(known, row.config, tolerance, margin) is not None:
            ruled_out_run += 1
        if row.state == "complete" and row.fidelity is not None:
            known.append(Measured(row.number, row.config, row.fidelity))
    return PredictionCheck(len(trials), predicted, wrong, unverified, ruled_out_run)


def seconds_to(trials: Sequence[ReplayedTrial], count: int) -> float:
    """The live cost (seconds) of the first ``count`` trials."""
    return sum(t.cost_seconds for t in trials[:count])


def hypervolume(points: Sequence[tuple[float, float]], reference: tuple[float, float]) -> float:
    """The area that ``points`` (samples/s maximised, fidelity minimised) dominate beyond
    ``reference`` (samples/s, fidelity): points not better than it on both count for nothing.
    Units: samples/s x fidelity."""
    ref_speed, ref_fidelity = reference
    area, lowest = 0.0, ref_fidelity
    for speed, fidelity in sorted(points, key=lambda p: (-p[0], p[1])):
        if speed > ref_speed and fidelity < lowest:
            area += (speed - ref_speed) * (lowest - fidelity)
            lowest = fidelity
    return area


def hypervolume_fraction(
    trials: Sequence[ReplayedTrial], grid: Grid, count: int, tolerance: float = 1.5
) -> float | None:
    """The hypervolume of the first ``count`` trials' feasible points as a fraction of the
    grid's, both from the reference point (baseline samples/s, ``tolerance``); None when no
    grid configuration beats that point."""
    reference = (grid.baseline_throughput.median, tolerance)
    whole = hypervolume(list(grid.scores().values()), reference)
    if whole <= 0:
        return None
    found = [
        (t.row.throughput.median, t.row.fidelity)
        for t in trials[:count]
        if t.feasible_throughput is not None
        and t.row.throughput is not None
        and t.row.fidelity is not None
        and t.row.config != grid.baseline_config
    ]
    return hypervolume(found, reference) / whole


__all__ = [
    "GRID_SCHEMA",
    "STRATEGIES",
    "Grid",
    "GridEntry",
    "PredictionCheck",
    "ReplayedTrial",
    "TableRunner",
    "check_predictions",
    "hypervolume",
    "hypervolume_fraction",
    "replay",
    "seconds_to",
    "trials_to_target",
]
