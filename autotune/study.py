"""The study: Optuna wiring only. Baseline first, then trials scored on throughput and fidelity.

A study runs the experiment's baseline (float32, no XLA, base batch size, pipeline defaults) with
three seeds, so the seed noise floor of the validation curve is known, then asks Optuna for
configurations. Each trial is measured in its own process; its throughput (samples/s, maximised)
and fidelity distance (minimised) are the two named objectives, and ``fidelity - tolerance <= 0``
is an Optuna constraint. A trial confidently slower than the baseline is stopped before its curve
and recorded as pruned; a trial whose batch size is at least one that ran out of memory with the
same precision and XLA setting is pruned without running. Running the same study again resumes
it. No TensorFlow here: trials run through :mod:`autotune.isolation`.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime as dt
import hashlib
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import optuna
import psutil
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import FrozenTrial, TrialState

from autotune import hardware
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import AutotuneError, ConfigError, TrialFailure
from autotune.experiment import Experiment, load_experiment, reference_of
from autotune.fidelity import NoiseFloor, fidelity_distance, noise_floor
from autotune.measure import Estimate
from autotune.profile import check_mode
from autotune.recipe import Recipe
from autotune.result import RunResult
from autotune.space import SearchSpace, resolve_space, space_from_dict
from autotune.storage import DEFAULT_STORAGE, open_storage, pick_study_name, quiet_experimental

if TYPE_CHECKING:
    from autotune.records import StudyRecords

OBJECTIVES = ("throughput", "fidelity")
DIRECTIONS: tuple[Literal["maximize", "minimize"], ...] = ("maximize", "minimize")
BASELINE_SEEDS = (0, 1, 2)
DEFAULT_TOLERANCE = 1.5
MAX_CONSECUTIVE_FAILURES = 5
INTERRUPTED = "interrupted"
#: A RUNNING trial without a worker record this old was left by a worker killed while Optuna
#: created it (seconds).
UNRECORDED_WORKER_SECONDS = 10.0
INTERRUPTED_FAILURE = {
    "kind": INTERRUPTED,
    "message": "the trial's worker stopped while it ran (killed, lost heartbeat or Ctrl-C)",
    "log_tail": "",
}
IDENTITY_KEY = "autotune_identity"
INFO_KEY = "autotune_info"
BASELINE_KEY = "autotune_baseline"

#: Runs one trial: (experiment reference, config, settings, log folder) -> RunResult.
TrialRunner = Callable[[str, TrialConfig, RunSettings, Path | None], RunResult]


class StudyError(AutotuneError):
    """The study cannot go on (its baseline failed, too many trials failed in a row)."""


def isolated_runner(
    reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
) -> RunResult:
    """The real runner: one trial in a fresh process (imports the isolation module lazily)."""
    from autotune.isolation import run_isolated

    return run_isolated(reference, config, settings, log_dir=log_dir)


class _RetryInterrupted(RetryHeartbeatStaleTrialCallback):
    """Queues an interrupted trial once more with the same parameters (Optuna's retry callback
    with ``max_retry=1``); the retry starts without the interrupted trial's failure record.

    Optuna calls it for trials whose heartbeat went stale; :meth:`Study.optimize` calls it for
    trials interrupted on this host (worker killed, Ctrl-C)."""

    def __init__(self) -> None:
        with quiet_experimental():
            super().__init__(max_retry=1)

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        trial.user_attrs["failure"] = None
        super().__call__(study, trial)


@dataclass(frozen=True)
class TrialRecord:
    """One trial as a study reports it (plain data, no Optuna objects).

    Attributes:
        number: Optuna trial number.
        state: "complete", "pruned", "failed", "running" or "waiting".
        config: the configuration (None if the trial failed before drawing one).
        throughput: samples/s estimate, when measured.
        fidelity: fidelity distance (1.0 = as different as a seed re-run), when measured.
        feasible: fidelity within the tolerance (None when there is no fidelity).
        reason: why the trial was pruned or failed.
        failure_kind: the failure's kind for failed trials.
        duplicate_of: the trial whose measurement this one reuses.
        user_attrs: everything stored with the trial.
    """

    number: int
    state: str
    config: TrialConfig | None
    throughput: Estimate | None
    fidelity: float | None
    feasible: bool | None
    reason: str | None = None
    failure_kind: str | None = None
    duplicate_of: int | None = None
    user_attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def counts(self) -> bool:
        """Whether the trial counts as finished (interrupted ones are retried instead)."""
        return self.state in ("complete", "pruned") or (
            self.state == "failed" and self.failure_kind != INTERRUPTED
        )


def record_of(trial: FrozenTrial) -> TrialRecord:
    """A :class:`TrialRecord` from an Optuna trial."""
    attrs = dict(trial.user_attrs)
    config = TrialConfig.from_dict(attrs["config"]) if attrs.get("config") else None
    throughput = Estimate(**attrs["throughput"]) if attrs.get("throughput") else None
    fidelity = attrs.get("fidelity")
    constraints = trial.constraints
    feasible = all(v <= 0 for v in constraints.values()) if constraints else None
    failure = None
    if trial.state == TrialState.FAIL:
        # A failed trial without autotune's record never finished its objective: its worker was
        # killed, lost its heartbeat or was stopped by Ctrl-C. It is retried, not counted.
        failure = attrs.get("failure") or INTERRUPTED_FAILURE
    reason = attrs.get("pruned_reason") if trial.state == TrialState.PRUNED else None
    if failure is not None:
        reason = failure["message"]
    return TrialRecord(
        number=trial.number,
        state={
            TrialState.COMPLETE: "complete",
            TrialState.PRUNED: "pruned",
            TrialState.FAIL: "failed",
            TrialState.RUNNING: "running",
            TrialState.WAITING: "waiting",
        }[trial.state],
        config=config,
        throughput=throughput,
        fidelity=fidelity,
        feasible=feasible,
        reason=reason,
        failure_kind=failure["kind"] if failure else None,
        duplicate_of=attrs.get("duplicate_of"),
        user_attrs=attrs,
    )


#: RunSettings fields that a study sets per run; the others decide how every trial is measured.
PER_RUN_SETTINGS = (
    "seed",
    "measure_throughput",
    "curve",
    "stop_below_samples_per_second",
    "profile_dir",
    "profile_steps",
)


def _measurement(settings: RunSettings) -> dict[str, Any]:
    return {k: v for k, v in settings.to_dict().items() if k not in PER_RUN_SETTINGS}


def _identity(
    experiment: Experiment, space: SearchSpace, tolerance: float, settings: RunSettings
) -> dict[str, Any]:
    versions = hardware.versions()
    measurement = json.dumps(_measurement(settings), sort_keys=True).encode()
    return {
        "experiment": experiment.name,
        "space": space.digest(),
        "measurement": hashlib.sha256(measurement).hexdigest()[:16],
        "objectives": [f"{name}:{d}" for name, d in zip(OBJECTIVES, DIRECTIONS, strict=True)],
        "tolerance": tolerance,
        "hardware": hardware.fingerprint(),
        "tensorflow": versions.get("tensorflow", ""),
        "keras": versions.get("keras", ""),
    }


def _differences(stored: dict[str, Any], current: dict[str, Any]) -> list[str]:
    return [
        f"{key}: stored {stored.get(key)!r}, now {current.get(key)!r}"
        for key in sorted(set(stored) | set(current))
        if stored.get(key) != current.get(key)
    ]


class Study:
    """A multi-objective search over an experiment's performance settings, stored in Optuna.

    Args:
        experiment: an :class:`Experiment` (defined at the top level of a module or file) or a
            reference such as ``"experiments/digits_cnn.py"``.
        space: a :class:`SearchSpace`, a TOML file path or a bundled space's name ("quick").
        storage: an Optuna storage URL; SQLite by default.
        study_name: defaults to "<experiment>-<space>".
        tolerance: largest fidelity distance a configuration may have, in units of the seed
            noise floor (1.0 = as different as a re-run with another seed).
        settings: measurement settings; the space's [measure] overrides apply on top.
        read_only: open a stored study to read it (what ``load_study`` does): an identity that
            differs (another machine, other library versions) is neither refused nor recorded
            until :meth:`optimize` is called, which then refuses it.
        allow_mismatch: resume even if the stored study was made with another experiment,
            space, objectives, tolerance, hardware or library versions.
        seed: seed of the sampler; on resume it is offset by the trials already stored, so the
            sampler does not replay its earlier draws.
        runner: runs one trial; the default runs it in a fresh process.
        log_root: folder for per-trial logs and profiles; defaults to ``autotune_logs/<study>``
            beside an SQLite database, else in the current folder. ``tensorboard --logdir`` on it
            shows each profiled trial as a run (``trial_<n>``, ``baseline_seed_0``).
        profile: "all" profiles one steady window of every trial and of the baseline; "pareto"
            re-runs the Pareto-front trials with profiling when :meth:`optimize` ends (see
            :meth:`profile_pareto`); "off" never profiles. Profiling happens after the timed
            windows, so it never changes a throughput figure; it is not part of the study's
            identity and may differ between runs of the same study.
        max_consecutive_failures: stop after this many failed trials in a row.
    """

    def __init__(
        self,
        experiment: Experiment | str,
        space: SearchSpace | str | Path = "quick",
        storage: str = DEFAULT_STORAGE,
        study_name: str | None = None,
        *,
        tolerance: float = DEFAULT_TOLERANCE,
        settings: RunSettings | None = None,
        allow_mismatch: bool = False,
        read_only: bool = False,
        seed: int = 0,
        runner: TrialRunner | None = None,
        log_root: str | Path | None = None,
        profile: str = "all",
        max_consecutive_failures: int = MAX_CONSECUTIVE_FAILURES,
    ) -> None:
        self.profile = check_mode(profile)
        if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or tolerance <= 0:
            raise ConfigError(f"tolerance must be a number > 0. Received: tolerance={tolerance!r}")
        self.reference = reference_of(experiment)
        self.experiment = load_experiment(experiment) if isinstance(experiment, str) else experiment
        self.space = resolve_space(space)
        self.settings = self.space.run_settings(settings)
        self.tolerance = float(tolerance)
        self.storage_url = storage
        self.name = study_name or f"{self.experiment.name}-{self.space.name}"
        self.runner: TrialRunner = runner or isolated_runner
        self.max_consecutive_failures = max_consecutive_failures
        self._storage = open_storage(storage, stale_trial_callback=_RetryInterrupted())
        existing = self._load_existing()
        with quiet_experimental():
            sampler = optuna.samplers.TPESampler(
                seed=seed + (len(existing.trials) if existing else 0),
                n_startup_trials=5,
                multivariate=True,
                group=True,
            )
            self.optuna = optuna.create_study(
                storage=self._storage,
                study_name=self.name,
                directions=list(DIRECTIONS),
                sampler=sampler,
                load_if_exists=True,
            )
        self.read_only = read_only
        self._check_identity(allow_mismatch or read_only, is_new=existing is None)
        if log_root is None:
            from autotune.storage import sqlite_path

            database = sqlite_path(storage)
            parent = database.resolve().parent if database else Path.cwd()
            log_root = parent / "autotune_logs" / self.name
        self.log_root = Path(log_root).resolve()
        self._listeners: list[Callable[[TrialRecord], None]] = []
        self._on_profile: Callable[[int, dict[str, Any]], None] | None = None

    # ----------------------------------------------------------------- identity and storage
    def _load_existing(self) -> optuna.Study | None:
        try:
            return optuna.load_study(study_name=self.name, storage=self._storage)
        except KeyError:
            return None

    def _check_identity(self, allow_mismatch: bool, is_new: bool) -> None:
        current = _identity(self.experiment, self.space, self.tolerance, self.settings)
        attrs = self.optuna.user_attrs
        if is_new or IDENTITY_KEY not in attrs:
            with quiet_experimental():
                self.optuna.set_metric_names(list(OBJECTIVES))
            self.optuna.set_user_attr(IDENTITY_KEY, current)
            self.optuna.set_user_attr(
                INFO_KEY,
                {
                    "experiment_reference": self.reference,
                    "space": self.space.to_dict(),
                    "space_source": self.space.source,
                    "settings": _measurement(self.settings),
                    "hardware": hardware.hardware(),
                    "versions": hardware.versions(),
                    "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                },
            )
            return
        differences = _differences(attrs[IDENTITY_KEY], current)
        if differences and not allow_mismatch:
            raise ConfigError(
                f"study {self.name!r} in {self.storage_url!r} was made with different settings "
                f"({'; '.join(differences)}); resuming would mix incomparable results. Use "
                "another --study name, or --allow-mismatch to resume anyway"
            )
        if differences and not self.read_only:
            overrides = list(attrs.get("autotune_mismatches_allowed", []))
            overrides.append(
                {"when": dt.datetime.now(dt.timezone.utc).isoformat(), "differences": differences}
            )
            self.optuna.set_user_attr("autotune_mismatches_allowed", overrides)

    # ----------------------------------------------------------------- events
    def add_listener(self, listener: Callable[[TrialRecord], None]) -> None:
        """Calls ``listener`` with a :class:`TrialRecord` after every finished trial."""
        self._listeners.append(listener)

    def on_profile(self, listener: Callable[[int, dict[str, Any]], None]) -> None:
        """Calls ``listener(trial_number, entry)`` for each Pareto re-run profile stored by
        :meth:`optimize` in "pareto" mode."""
        self._on_profile = listener

    # ----------------------------------------------------------------- baseline
    @property
    def baseline_config(self) -> TrialConfig:
        return TrialConfig.baseline(self.experiment.base_batch_size)

    def _baseline_attrs(self) -> dict[str, Any]:
        return dict(self.optuna.user_attrs.get(BASELINE_KEY) or {"runs": {}})

    def ensure_baseline(self, on_run: Callable[[int, RunResult], None] | None = None) -> None:
        """Runs the baseline seeds not stored yet (seed 0 with throughput, others curve only)
        and stores the noise floor. Each run is stored as soon as it ends."""
        stored = self._baseline_attrs()
        runs: dict[str, Any] = dict(stored.get("runs", {}))
        for seed in BASELINE_SEEDS:
            if str(seed) in runs:
                continue
            log_dir = self.log_root / f"baseline_seed_{seed}"
            settings = self.settings.replace(
                seed=seed,
                measure_throughput=seed == BASELINE_SEEDS[0],
                curve=True,
                stop_below_samples_per_second=None,
                profile_dir=self._profile_dir(log_dir),
            )
            try:
                result = self.runner(self.reference, self.baseline_config, settings, log_dir)
            except TrialFailure as failure:
                raise StudyError(
                    f"the baseline (seed {seed}) failed ({failure.kind}): {failure.message}; "
                    f"a study needs a working baseline. Its log: {log_dir / 'trial.log'}\n"
                    f"{failure.log_tail}"
                ) from failure
            runs[str(seed)] = result.to_dict()
            stored["runs"] = runs
            stored["config"] = self.baseline_config.to_dict()
            self.optuna.set_user_attr(BASELINE_KEY, stored)
            if on_run is not None:
                on_run(seed, result)
        if "noise_floor" not in stored:
            curves = [self._curve(runs[str(seed)]) for seed in BASELINE_SEEDS]
            stored["noise_floor"] = noise_floor(curves).to_dict()
            self.optuna.set_user_attr(BASELINE_KEY, stored)

    @staticmethod
    def _curve(result: dict[str, Any]) -> list[tuple[float, float]]:
        return [(p["samples"], p["val_loss"]) for p in result["curve"]]

    def baseline(self) -> dict[str, Any]:
        """The stored baseline: config, per-seed results, noise floor (empty before it runs)."""
        return self._baseline_attrs()

    def _baseline_parts(self) -> tuple[Estimate, list[tuple[float, float]], NoiseFloor]:
        stored = self._baseline_attrs()
        main = stored["runs"][str(BASELINE_SEEDS[0])]
        floor = stored["noise_floor"]
        return (
            Estimate(**main["throughput"]),
            self._curve(main),
            NoiseFloor(floor["value"], floor["measured"], tuple(floor["pairs"])),
        )

    # ----------------------------------------------------------------- trials
    def records(self) -> list[TrialRecord]:
        """Every trial of the study, oldest first."""
        return [record_of(t) for t in self.optuna.get_trials(deepcopy=False)]

    def finished_count(self) -> int:
        """Trials that count towards ``n_trials``: complete, pruned, and failed except those
        interrupted (an interrupted trial is retried instead). The baseline runs do not count."""
        return sum(record.counts for record in self.records())

    def _fail_orphans(self) -> None:
        """Fails RUNNING trials whose worker process on this host is gone (killed mid-trial),
        and those that never recorded a worker (killed between Optuna creating the trial and
        the objective's first line; a live worker records itself within milliseconds), without
        waiting for the heartbeat's grace period."""
        host = socket.gethostname()
        now = dt.datetime.now()
        for trial in self.optuna.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            worker = trial.user_attrs.get("worker")
            if worker is None:
                started = trial.datetime_start or now
                if (now - started).total_seconds() < UNRECORDED_WORKER_SECONDS:
                    continue
            elif worker.get("host") != host or _alive(worker):
                continue
            with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
                self._storage.set_trial_user_attr(trial._trial_id, "failure", INTERRUPTED_FAILURE)
                self._storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL)

    def _retry_interrupted(self) -> None:
        """Queues one retry, with the same parameters, of each interrupted trial that has none
        (a retry that is interrupted again is not retried: ``max_retry=1``)."""
        trials = self.optuna.get_trials(deepcopy=False)
        retried = {n for t in trials for n in t.system_attrs.get("retry_history", [])}
        callback = _RetryInterrupted()
        for trial in trials:
            if trial.number in retried or trial.state != TrialState.FAIL:
                continue
            if record_of(trial).failure_kind == INTERRUPTED:
                callback(self.optuna, copy.deepcopy(trial))

    def _twin(self, number: int, config: TrialConfig) -> FrozenTrial | None:
        """A finished trial that already measured ``config`` (complete or pruned)."""
        wanted = config.to_dict()
        for trial in self.optuna.get_trials(
            deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)
        ):
            if trial.number != number and trial.user_attrs.get("config") == wanted:
                return trial
        return None

    def _oom_bound(self, config: TrialConfig) -> FrozenTrial | None:
        """A failed trial that ran out of memory at a batch size <= config's, with the same
        precision and jit_compile."""
        for trial in self.optuna.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
            failure = trial.user_attrs.get("failure") or {}
            other = trial.user_attrs.get("config")
            if failure.get("kind") != "oom" or not other:
                continue
            if (
                other["precision"] == config.precision
                and other["jit_compile"] == config.jit_compile
                and other["batch_size"] <= config.batch_size
            ):
                return trial
        return None

    def _objective(self, trial: optuna.Trial) -> tuple[float, float]:
        trial.set_user_attr("worker", _this_worker())  # first: see _fail_orphans
        trial.set_user_attr("failure", None)
        config = self.space.sample(trial, self.experiment.base_batch_size)
        trial.set_user_attr("config", config.to_dict())

        twin = self._twin(trial.number, config)
        if twin is not None:
            trial.set_user_attr("duplicate_of", twin.number)
            if twin.state == TrialState.PRUNED:
                earlier = twin.user_attrs.get("pruned_reason")
                reason = f"same configuration as trial {twin.number}: {earlier}"
                trial.set_user_attr("pruned_reason", reason)
                raise optuna.TrialPruned(reason)
            for key in ("throughput", "fidelity", "result"):
                trial.set_user_attr(key, twin.user_attrs.get(key))
            for key, value in twin.constraints.items():
                trial.set_constraint(key, value)
            throughput, fidelity = twin.values
            return throughput, fidelity

        oom = self._oom_bound(config)
        if oom is not None:
            reason = (
                f"predicted out of memory: trial {oom.number} ran out of memory at batch_size="
                f"{oom.user_attrs['config']['batch_size']} with the same precision and jit_compile"
            )
            trial.set_user_attr("pruned_reason", reason)
            raise optuna.TrialPruned(reason)

        baseline_throughput, baseline_curve, floor = self._baseline_parts()
        log_dir = self.log_root / f"trial_{trial.number}"
        settings = self.settings.replace(
            seed=BASELINE_SEEDS[0],
            stop_below_samples_per_second=baseline_throughput.low,
            profile_dir=self._profile_dir(log_dir),
        )
        trial.set_user_attr("log_dir", str(log_dir))
        try:
            result = self.runner(self.reference, config, settings, log_dir)
        except TrialFailure as failure:
            trial.set_user_attr("failure", failure.to_dict())
            raise
        except ConfigError as error:  # the experiment is broken: recorded, then the study stops
            trial.set_user_attr(
                "failure", {"kind": "exception", "message": str(error), "log_tail": ""}
            )
            raise
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the trial process is already stopped
            trial.set_user_attr("failure", INTERRUPTED_FAILURE)
            raise
        trial.set_user_attr("result", _compact(result))
        if result.throughput is not None:
            trial.set_user_attr("throughput", result.throughput.to_dict())
        if result.stopped_early is not None or result.throughput is None:
            reason = result.stopped_early or "throughput was not measured"
            trial.set_user_attr("pruned_reason", reason)
            raise optuna.TrialPruned(reason)
        try:
            fidelity = fidelity_distance(
                [(p.samples, p.val_loss) for p in result.curve], baseline_curve, floor
            )
        except ValueError as error:
            unscored = TrialFailure("exception", f"fidelity cannot be computed: {error}")
            trial.set_user_attr("failure", unscored.to_dict())
            raise unscored from error
        trial.set_user_attr("fidelity", fidelity)
        trial.set_constraint("fidelity", fidelity - self.tolerance)
        return result.throughput.median, fidelity

    def optimize(self, n_trials: int | None = None, timeout: float | None = None) -> None:
        """Runs the baseline if needed, then trials until the study holds ``n_trials`` finished
        trials (baseline runs not counted) or ``timeout`` seconds have passed.

        Running it again with the same ``n_trials`` completes the remainder: completed trials
        are kept, configurations already measured are not re-run, and a trial interrupted by a
        crash of this process is failed and retried once with the same parameters.
        """
        if n_trials is not None and (not isinstance(n_trials, int) or n_trials < 0):
            raise ConfigError(f"n_trials must be an integer >= 0. Received: n_trials={n_trials!r}")
        if n_trials is None and timeout is None:
            raise ConfigError("give n_trials or timeout (or both); otherwise the study never ends")
        if self.read_only:  # opened to read; adding trials needs the same identity
            self.read_only = False
            self._check_identity(allow_mismatch=False, is_new=False)
        started = time.monotonic()
        self._fail_orphans()
        self._retry_interrupted()
        self.ensure_baseline()
        consecutive_failures = 0
        finished: list[FrozenTrial] = []
        while n_trials is None or self.finished_count() < n_trials:
            if timeout is not None and time.monotonic() - started >= timeout:
                break
            if self._exhausted():
                break
            finished.clear()
            with quiet_experimental():
                self.optuna.optimize(
                    self._objective,
                    n_trials=1,
                    catch=(TrialFailure,),
                    callbacks=[lambda _study, trial: finished.append(trial)],
                    gc_after_trial=False,
                )
            for trial in finished:
                record = record_of(trial)
                consecutive_failures = consecutive_failures + 1 if record.state == "failed" else 0
                for listener in self._listeners:
                    listener(record)
                if consecutive_failures >= self.max_consecutive_failures:
                    raise StudyError(
                        f"{consecutive_failures} trials in a row failed (last: trial "
                        f"{record.number}, {record.failure_kind}: {record.reason}); stopping. "
                        "Check the experiment with 'autotune trial'"
                    )
        if self.profile == "pareto":
            self.profile_pareto(on_profile=self._on_profile)

    def _profile_dir(self, log_dir: Path) -> str | None:
        return str(log_dir) if self.profile == "all" else None

    def profile_pareto(
        self, on_profile: Callable[[int, dict[str, Any]], None] | None = None
    ) -> dict[int, dict[str, Any]]:
        """Re-runs each Pareto-front trial that has no profile yet, with profiling and without
        its curve, and stores what the profile says in the study (``autotune_profile:<n>``); the
        trial's own throughput and fidelity stay as measured. A re-run that fails is stored with
        its failure and not retried; it never stops the study.

        Returns the stored entries by trial number; ``on_profile(number, entry)`` is called as
        each is stored.
        """
        from autotune.records import PROFILE_RERUN_PREFIX

        stored: dict[int, dict[str, Any]] = {}
        attrs = self.optuna.user_attrs
        for record in self.pareto_front():
            key = f"{PROFILE_RERUN_PREFIX}{record.number}"
            result = record.user_attrs.get("result") or {}
            if record.config is None or result.get("profile") or key in attrs:
                continue
            log_dir = self.log_root / f"trial_{record.number}"
            settings = self.settings.replace(
                seed=BASELINE_SEEDS[0],
                curve=False,
                stop_below_samples_per_second=None,
                profile_dir=str(log_dir),
            )
            entry: dict[str, Any] = {"log_dir": str(log_dir)}
            try:
                rerun = self.runner(self.reference, record.config, settings, log_dir / "rerun")
            except TrialFailure as failure:
                entry["profile_error"] = (
                    f"the profiling re-run failed ({failure.kind}): {failure.message}"
                )
            else:
                data = rerun.to_dict()
                for part in ("profile", "profile_error", "input_ablation", "recompilation"):
                    entry[part] = data.get(part)
            self.optuna.set_user_attr(key, entry)
            stored[record.number] = entry
            if on_profile is not None:
                on_profile(record.number, entry)
        return stored

    def _exhausted(self) -> bool:
        measured = {
            tuple(sorted(r.config.to_dict().items()))
            for r in self.records()
            if r.config is not None and r.counts
        }
        return len(measured) >= self.space.size()

    # ----------------------------------------------------------------- results
    def pareto_front(self) -> list[TrialRecord]:
        """Feasible trials that neither another trial nor the baseline beats on both throughput
        and fidelity, fastest first (see :func:`autotune.records.pareto_front`)."""
        numbers = [row.number for row in self._stored().pareto()]
        by_number = {record.number: record for record in self.records()}
        return [by_number[number] for number in numbers]

    def best(self, max_fidelity: float | None = None) -> Recipe:
        """The fastest measured configuration with fidelity <= ``max_fidelity`` (default: the
        study's tolerance) that beats the baseline; the baseline itself, with a note saying so,
        when none does."""
        limit = self.tolerance if max_fidelity is None else max_fidelity
        stored = self._stored()
        best = stored.fastest_within(limit)
        if best is not None:
            return stored.recipe(best, limit)
        within = sum(
            1 for r in stored.trials if r.scored and r.fidelity is not None and r.fidelity <= limit
        )
        return dataclasses.replace(
            stored.recipe(None),
            note=f"no trial was faster than the baseline with fidelity <= {limit:g} "
            f"({within} within the limit); keep the baseline configuration",
        )

    def _stored(self) -> StudyRecords:
        from autotune.records import read_records

        return read_records(self._storage, self.storage_url, self.name)


def _this_worker() -> dict[str, Any]:
    me = psutil.Process()
    return {"host": socket.gethostname(), "pid": me.pid, "started": me.create_time()}


def _alive(worker: dict[str, Any]) -> bool:
    """Whether the worker process (pid and start time) still runs on this host."""
    try:
        process = psutil.Process(int(worker.get("pid", -1)))
        return abs(process.create_time() - float(worker.get("started", 0))) < 1.0
    except (psutil.Error, ValueError):
        return False


def _compact(result: RunResult) -> dict[str, Any]:
    """What a trial keeps of its RunResult in the storage (everything but the config, which is
    stored on its own)."""
    data = result.to_dict()
    data.pop("config", None)
    return data


def load_study(
    storage: str = DEFAULT_STORAGE,
    study_name: str | None = None,
    *,
    runner: TrialRunner | None = None,
) -> Study:
    """Opens a stored study with the experiment and space it was made with.

    With ``study_name`` None, the storage must hold exactly one study.
    """
    probe = open_storage(storage, must_exist=True)
    name = pick_study_name(probe, storage, study_name)
    stored = optuna.load_study(study_name=name, storage=probe)
    info = stored.user_attrs.get(INFO_KEY)
    identity = stored.user_attrs.get(IDENTITY_KEY)
    if not info or not identity:
        raise ConfigError(f"--study {name!r} in {storage!r} was not made by autotune")
    space = space_from_dict(info["space"], source=info.get("space_source", "<stored space>"))
    return Study(
        info["experiment_reference"],
        space,
        storage,
        name,
        tolerance=identity["tolerance"],
        settings=RunSettings().replace(**info.get("settings", {})),
        runner=runner,
        read_only=True,
    )


__all__ = [
    "DEFAULT_STORAGE",
    "OBJECTIVES",
    "Study",
    "StudyError",
    "TrialRecord",
    "load_study",
]
