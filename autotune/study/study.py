"""The study: orchestration only. Baseline first, then trials scored on throughput and fidelity.

A study runs the experiment's baseline (:mod:`autotune.study.baseline`), then asks Optuna for
configurations. Each trial is measured in its own process; its throughput (samples/s, maximised)
and fidelity distance (minimised) are the named objectives, peak memory (MiB, minimised) a third
on request (:mod:`autotune.store.objectives`), and ``fidelity - tolerance <= 0`` is an Optuna
constraint. The first trials are an earlier study's answer where it starts warm
(:mod:`autotune.study.warm_start`), then a structured start (:mod:`autotune.study.search`). A
trial confidently slower than the baseline is stopped before its curve and recorded as pruned,
with a violated constraint so the sampler ranks it as dominated (:mod:`autotune.study.scoring`); a
duplicate reuses its measurement, one predicted to run out of memory
(:mod:`autotune.study.prediction`) or infeasible (:mod:`autotune.study.fidelity_prediction`) is
pruned without running. Running it again resumes it (:mod:`autotune.study.identity`,
:mod:`autotune.study.recovery`); several workers may share it (:mod:`autotune.study.claims`,
:mod:`autotune.study.placement`). No TensorFlow here: trials run through :mod:`autotune.trial`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial

from autotune import hardware
from autotune.analysis.head_to_head import DEFAULT_ROUNDS, DEFAULT_TOP, EXTRA_SEEDS, Confirmation
from autotune.analysis.profile import check_mode
from autotune.bundled import load_experiment, reference_of, resolve_space
from autotune.config import RunSettings, TrialConfig, is_positive_finite
from autotune.exceptions import ConfigError, StudyError, TrialFailure
from autotune.experiment import Experiment
from autotune.recipe import Recipe
from autotune.space import SearchSpace
from autotune.store import writer
from autotune.store.log_folders import default_log_root
from autotune.store.objectives import DEFAULT_OBJECTIVES, check_memory_limit, parse_objectives
from autotune.store.records import StudyRecords, read_records
from autotune.store.result import RunResult
from autotune.store.schema import BASELINE_SEEDS, IDENTITY_KEY, TrialRow, profile_reruns, row_of
from autotune.store.storage import DEFAULT_STORAGE, check_url, open_storage, quiet_experimental
from autotune.study import (
    anchor,
    baseline,
    board,
    checks,
    claims,
    confirming,
    fidelity_prediction,
    identity,
    prediction,
    recovery,
    run_lock,
    runners,
    running,
    scoring,
    search,
    turns,
)
from autotune.study import warm_start as warming
from autotune.study.optuna_tools import set_constraints
from autotune.study.placement import HostClaim, Placement
from autotune.study.profiling import ProfileListener, profile_front
from autotune.study.runners import PairRunner, TrialRunner, isolated_runner
from autotune.study.start import (
    check_start,
    enqueue_next,
    record_start,
    space_params,
    structured_start,
)
from autotune.study.storage_guard import StorageGuard

DEFAULT_TOLERANCE = 1.5
MAX_CONSECUTIVE_FAILURES = 5
#: Seconds a worker waits, when the trials running elsewhere fill the target, before it looks
#: again (one of them may fail as interrupted and need a retry).
WAIT_SECONDS = 1.0


class Study:
    """A multi-objective search over an experiment's performance settings, stored in Optuna.

    Args:
        experiment: an :class:`Experiment` (defined at the top level of a module or file) or a
            reference: a bundled experiment's name ("digits_cnn") or "my_model.py:experiment".
        space: a :class:`SearchSpace`, a TOML file path or a bundled space's name ("quick").
        storage: an Optuna storage URL: SQLite by default; a Journal file or PostgreSQL for
            several workers (:mod:`autotune.store.storage`).
        study_name: defaults to "<experiment>-<space>".
        tolerance: largest fidelity distance a configuration may have, in units of the seed
            noise floor (1.0 = as different as a re-run with another seed).
        settings: measurement settings; the space's [measure] overrides apply on top.
        read_only: open a stored study to read it (``load_study``): an identity that differs
            is neither refused nor recorded until :meth:`optimize`, which then refuses it.
        allow_mismatch: resume even if the stored study was made with another experiment,
            space, objectives, tolerance, hardware or library versions.
        seed: seed of the sampler, offset on resume by the trials stored (no replayed draws).
        start: "structured" (default) begins a new study with the baseline's one-factor
            neighbours and the checklist configuration, "random" with the sampler's own draws
            (see :mod:`autotune.study.search`). A stored study keeps the start it was made with.
        sampler: an Optuna sampler to use instead of autotune's TPE (``seed`` is then unused).
        runner: runs one trial; the default runs it in a fresh process.
        pair_runner: times configurations side by side in one process (a confirmation round's
            candidates and the baseline); the default does so with the default runner, none
            with another (fresh processes then).
        log_root: folder for per-trial logs and profiles; defaults to
            ``autotune_logs/<study key>`` beside a database file, else in the current folder
            (:func:`autotune.store.log_folders.study_key`). ``tensorboard --logdir`` on it shows
            each profiled trial as a run (``trial_<n>``, ``baseline_seed_0``).
        profile_mode: "all" profiles one steady window of every trial and of the baseline;
            "pareto" re-runs the Pareto-front trials with profiling when :meth:`optimize` ends
            (see :meth:`profile_pareto`); "off" never profiles. Profiling happens after the
            timed windows, so it never changes a throughput figure (nor the identity).
        max_consecutive_failures: stop after this many failed trials in a row.
        placement: the cores or GPU this process and its trials run on, claimed on this host
            while trials run (:mod:`autotune.study.placement`); default: every usable core.
        objectives: "throughput,fidelity" (the default) or "throughput,fidelity,memory": peak
            memory (MiB) as a third objective (:mod:`autotune.store.objectives`). A stored study
            keeps the objectives it was made with; a different value is refused.
        throughput_only: go on when the baseline's curve does not move beyond its seeds'
            spread (the fidelity check cannot see), marked so everywhere; otherwise such a
            study stops before searching (:func:`autotune.study.baseline.check_curve_signal`).
        warm_start: "STORAGE[:STUDY]": an earlier study whose answer and front a new study
            measures first (:mod:`~autotune.study.warm_start`); a stored one keeps its own.
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
        start: str = "structured",
        sampler: optuna.samplers.BaseSampler | None = None,
        runner: TrialRunner | None = None,
        pair_runner: PairRunner | None = None,
        log_root: str | Path | None = None,
        profile_mode: str = "all",
        max_consecutive_failures: int = MAX_CONSECUTIVE_FAILURES,
        placement: Placement | None = None,
        objectives: str | Sequence[str] | None = None,
        throughput_only: bool = False,
        warm_start: str | None = None,
    ) -> None:
        self.profile_mode = check_mode(profile_mode)
        self.throughput_only = throughput_only
        if not is_positive_finite(tolerance):
            raise ConfigError(
                f"must be a finite number > 0. Received: {tolerance!r}", argument="tolerance"
            )
        self.seed = checks.check_seed(seed)
        requested = parse_objectives(objectives)
        start_mode = check_start(start)
        if study_name is not None:
            checks.check_study_name(study_name)
        self.reference = reference_of(experiment)
        self.experiment = load_experiment(experiment) if isinstance(experiment, str) else experiment
        self.space = checks.check_backends(resolve_space(space), self.experiment)
        self.settings = self.space.run_settings(settings)
        self.tolerance = float(tolerance)
        self.storage_url = storage
        self.name = study_name or checks.check_study_name(
            f"{self.experiment.name}-{self.space.name}"
        )
        self.runner: TrialRunner = runner or isolated_runner
        real = self.runner is runners.isolated_runner
        self.pair_runner = pair_runner or (runners.isolated_pair_runner if real else None)
        self.max_consecutive_failures = max_consecutive_failures
        check_url(storage)
        self.placement = placement or Placement()
        self.placement.apply()  # before the identity: a core set is part of the fingerprint
        self.log_root = Path(log_root or default_log_root(storage, self.name)).resolve()
        if not read_only:
            checks.check_log_root(self.log_root)
        self._storage = open_storage(storage, stale_trial_callback=recovery.RetryInterrupted())
        self._guard = StorageGuard(storage)
        base = self.experiment.base_batch_size
        warm = warm_start and warming.prepare(warm_start, self, requested)  # before create
        self.optuna, is_new = search.create(
            self._storage,
            self.name,
            seed,
            sampler,
            known=[space_params(self.space, TrialConfig.baseline(base))],
            objectives=requested or DEFAULT_OBJECTIVES,
        )
        self.objectives = identity.objectives_of(self.optuna, requested, is_new)
        self.read_only = read_only
        self._identity(allow_mismatch or read_only, is_new=is_new)
        if is_new:
            starts = structured_start(self.space, base, hardware.hardware())
            record_start(self.optuna, starts if start_mode == "structured" else [])
        self.warm_start = warming.settle(self.optuna, warm or None, is_new)
        self._listeners: list[Callable[[TrialRow], None]] = []
        self._on_profile: ProfileListener | None = None
        self._proposal = claims.Claim(storage, self.name, "proposal")
        self._host = HostClaim(self.placement, self.name)

    # ----------------------------------------------------------------- storage and identity
    def _identity(self, allow_mismatch: bool, is_new: bool) -> None:
        current = identity.identity(
            self.experiment, self.space, self.tolerance, self.settings, self.objectives
        )
        if is_new or IDENTITY_KEY not in self.optuna.user_attrs:
            identity.record(
                self.optuna,
                current,
                reference=self.reference,
                space=self.space,
                settings=self.settings,
            )
            return
        identity.check(
            self.optuna,
            current,
            storage_url=self.storage_url,
            allow_mismatch=allow_mismatch,
            ledger=not self.read_only,
        )

    # ----------------------------------------------------------------- events
    def add_listener(self, listener: Callable[[TrialRow], None]) -> None:
        """Calls ``listener(row)`` after each trial this process finishes (see also :meth:`run`)."""
        self._listeners.append(listener)

    def on_profile(self, listener: ProfileListener) -> None:
        """Calls ``listener(trial_number, entry)`` for each Pareto re-run profile stored by
        :meth:`optimize` in "pareto" mode."""
        self._on_profile = listener

    # ----------------------------------------------------------------- baseline
    @property
    def baseline_config(self) -> TrialConfig:
        return TrialConfig.baseline(self.experiment.base_batch_size)

    def ensure_baseline(
        self,
        on_run: Callable[[int, RunResult], None] | None = None,
        on_wait: Callable[[], None] | None = None,
    ) -> None:
        """Runs the baseline seeds not stored yet (seed 0 with throughput, others curve only),
        stores the noise floor and stops a study whose curve cannot show drift unless it is
        ``throughput_only``. Each run is stored as soon as it ends. Under the study's baseline
        claim: while another worker runs it, this one waits (``on_wait`` once), then reads it."""
        claim = claims.Claim(self.storage_url, self.name, "baseline")
        with run_lock.hold(self.storage_url, self.name):
            try:
                claim.acquire(on_wait)
                with self._host:
                    config = self.baseline_config.to_dict()
                    baseline.ensure(self.optuna, config, self._run_baseline, on_run)
                baseline.check_curve_signal(self.optuna, accept=self.throughput_only)
            finally:
                claim.close()

    def _run_baseline(self, seed: int) -> RunResult:
        log_dir = self.log_root / f"baseline_seed_{seed}"
        settings = self.settings.replace(profile_dir=self._profile_dir(log_dir))
        return baseline.run_seed(self._run, self.baseline_config, settings, seed, log_dir)

    def _run(self, config: TrialConfig, settings: RunSettings, log_dir: Path) -> RunResult:
        return self.runner(self.reference, config, settings, log_dir)

    def baseline(self) -> dict[str, Any]:
        """The stored baseline: config, per-seed results, noise floor (empty before it runs)."""
        return baseline.stored(self.optuna)

    def _profile_dir(self, log_dir: Path) -> str | None:
        return str(log_dir) if self.profile_mode == "all" else None

    # ----------------------------------------------------------------- one trial
    def _objective(self, trial: optuna.Trial) -> tuple[float, ...]:
        worker = recovery.this_worker() | {"shared": self.placement.shared}
        writer.mark_running(trial, worker)  # first: see fail_orphans
        config = self.space.sample(trial, self.experiment.base_batch_size)
        writer.write_config(trial, config)
        self._proposal.release()  # the configuration is claimed: the next worker may propose
        with recovery.KeepAlive(self.optuna, trial):
            return self._measured(trial, config)

    def _measured(self, trial: optuna.Trial, config: TrialConfig) -> tuple[float, ...]:
        duplicate = prediction.measured_duplicate(self.optuna, trial.number, config)
        if duplicate is not None:
            return scoring.reuse(trial, duplicate)
        oom = prediction.out_of_memory_at_most(self.optuna, config)
        if oom is not None:
            scoring.prune_predicted_oom(trial, prediction.predicted_oom_reason(oom))
        skip = fidelity_prediction.predicted_infeasible(self.optuna, config, self.tolerance)
        if skip is not None:  # the measured trials rule it out: not run
            fidelity_prediction.prune_predicted(trial, skip)
        twin = prediction.learning_twin(self.optuna, trial.number, config)
        result = self._measure(trial, config, curve=twin is None)
        return self._score(trial, scoring.with_twin_curve(trial, result, twin))

    def _measure(self, trial: optuna.Trial, config: TrialConfig, curve: bool) -> RunResult:
        """Runs the trial with the early stop at the latest anchor's lower bound (and its curve
        if ``curve``); records a failure with its kind before it propagates."""
        baseline_throughput = anchor.current(self.optuna)
        log_dir = self.log_root / f"trial_{trial.number}"
        settings = self.settings.replace(
            seed=BASELINE_SEEDS[0],
            stop_below_samples_per_second=baseline_throughput.low,
            profile_dir=self._profile_dir(log_dir),
            curve=self.settings.curve and curve,
        )
        writer.write_log_dir(trial, str(log_dir))
        with scoring.failure_recorded(trial):
            return self.runner(self.reference, config, settings, log_dir)

    def _score(self, trial: optuna.Trial, result: RunResult) -> tuple[float, ...]:
        """Stores the result and returns its objectives (throughput median, fidelity and, when
        asked, peak memory); prunes a trial stopped early or without a throughput."""
        writer.write_result(trial, result)
        log_dir = self.log_root / f"trial_{trial.number}"
        _, baseline_curve, floor = baseline.reference(self.optuna)
        if result.stopped_early is not None or result.throughput is None:
            board.trial_run(log_dir, trial.number, result, fidelity=None)
            scoring.prune_slower(
                trial,
                result.stopped_early or "throughput was not measured",
                result.throughput.median if result.stopped_early and result.throughput else None,
                anchor.reference_at(self.optuna, trial.datetime_start).low,
            )
        with scoring.failure_recorded(trial):
            fidelity = scoring.score_fidelity(trial, result, baseline_curve, floor)
            values = scoring.objective_values(result, fidelity, self.objectives)
        board.trial_run(log_dir, trial.number, result, fidelity)
        set_constraints(trial, {"fidelity": fidelity - self.tolerance})
        return values

    # ----------------------------------------------------------------- the loop
    run = running.run  # baseline -> search -> confirmation, with callbacks (see there)
    anchor_every: anchor.Every | None = anchor.DEFAULT_EVERY  # re-measuring the baseline

    def optimize(self, n_trials: int | None = None, timeout: float | None = None) -> None:
        """Runs the baseline if needed, then trials until the study holds ``n_trials`` finished
        trials (baseline runs not counted) or ``timeout`` seconds have passed.

        Running it again with the same ``n_trials`` completes the remainder: measured trials
        are kept, and one interrupted by a crash is failed and retried once as it was. Another
        process running trials on the same SQLite study is refused (:mod:`~.run_lock`); on a
        Journal file or PostgreSQL, workers share the study and its ``n_trials`` (stored for
        ``autotune worker``), each trial running elsewhere counting towards it.
        """
        checks.check_budget(n_trials, timeout)
        if self.read_only:  # opened to read; adding trials needs the same identity
            self.read_only = False
            self._identity(allow_mismatch=False, is_new=False)
        if n_trials is not None:  # what workers joining later run towards (autotune worker)
            writer.write_target(self.optuna, n_trials)
        with run_lock.hold(self.storage_url, self.name), self._host:
            try:
                self._optimize(n_trials, timeout, time.monotonic())
            finally:
                self._proposal.close()

    def _optimize(self, n_trials: int | None, timeout: float | None, started: float) -> None:
        self.ensure_baseline()
        board.study_config(self.log_root, self.space, self.baseline_config)
        consecutive_failures = 0
        while True:
            if timeout is not None and time.monotonic() - started >= timeout:
                break
            self._guard.run(lambda: anchor.run_if_due(self, n_trials))
            turn = self._guard.run(lambda: self._run_one(n_trials))
            if turn is None:  # the target is reached, counting the trials other workers run
                break
            for row in turn:
                consecutive_failures = consecutive_failures + 1 if row.state == "failed" else 0
                for listener in self._listeners:
                    listener(row)
                if consecutive_failures >= self.max_consecutive_failures:
                    raise StudyError(
                        f"{consecutive_failures} trials in a row failed (last: trial "
                        f"{row.number}, {row.failure_kind}: {row.reason}); stopping. "
                        "Check the experiment with 'autotune trial'"
                    )
        if self.profile_mode == "pareto":
            self.profile_pareto(on_profile=self._on_profile)

    def _run_one(self, n_trials: int | None) -> list[TrialRow] | None:
        """Runs one Optuna trial; returns the trials that finished (one, or none when stopped
        or while other workers' trials fill the target), None once the target is reached.
        Under the study's proposal claim (:mod:`~autotune.study.claims`), released once the
        new trial's configuration is stored, dead workers' trials are failed and retried, the
        trials counted (:mod:`~autotune.study.turns`), the start's next probe enqueued and the
        trial proposed: no two workers start one configuration or exceed ``n_trials``."""
        finished: list[FrozenTrial] = []
        with self._proposal:
            recovery.fail_orphans(self.optuna, self._storage)
            recovery.retry_interrupted(self.optuna)
            turn = turns.next_turn(self._stored(), n_trials, self.space, self.baseline_config)
            if turn == "done":
                return None
            if turn == "wait":
                self._proposal.release()
                time.sleep(WAIT_SECONDS)
                return []
            enqueue_next(self.optuna, self.space, self.tolerance)
            with quiet_experimental():
                self.optuna.optimize(
                    self._objective,
                    n_trials=1,
                    catch=(TrialFailure,),
                    callbacks=[lambda _study, trial: finished.append(trial)],
                    gc_after_trial=False,
                )
        return [row_of(trial) for trial in finished]

    def profile_pareto(
        self, on_profile: ProfileListener | None = None
    ) -> dict[int, dict[str, Any]]:
        """Re-runs each Pareto-front trial that has no profile yet, with profiling and without
        its curve, and stores what the profile says in the study (``autotune_profile:<n>``); the
        trial's own throughput and fidelity stay as measured. A re-run that fails is stored with
        its failure and not retried; it never stops the study.

        Returns the stored entries by trial number; ``on_profile(number, entry)`` is called as
        each is stored.
        """
        front = self.pareto_front()
        return profile_front(
            self.optuna, front, self._run, self.settings, self.log_root, on_profile
        )

    # ----------------------------------------------------------------- confirmation
    def confirm(
        self,
        top: int = DEFAULT_TOP,
        rounds: int = DEFAULT_ROUNDS,
        extra_seeds: Sequence[int] = EXTRA_SEEDS,
        on_progress: Callable[[str], None] | None = None,
        max_memory_mib: float | None = None,
        paired: bool = True,
    ) -> Confirmation | None:
        """Re-measures the ``top`` fastest feasible Pareto trials (faster than the baseline;
        with ``max_memory_mib``, within that peak memory, MiB) head to head with the baseline,
        ``rounds`` interleaved rounds of fresh processes (with ``paired``, a round's candidates
        beside the baseline in one where they can share it), and trains each one's curve with
        ``extra_seeds`` (:mod:`autotune.analysis.head_to_head`). Stored as it goes: one done for
        the same candidates is returned, one cut short resumes; ``top`` 0: None."""
        limit = check_memory_limit(max_memory_mib)
        seeds = confirming.check_plan(top, rounds, extra_seeds)
        if top == 0:
            return None
        with run_lock.hold(self.storage_url, self.name), self._host:
            self.ensure_baseline()
            return confirming.confirm(
                self.optuna,
                self._stored(),
                (top, rounds, seeds),
                self._run,
                self.settings,
                self.log_root,
                on_progress,
                limit,
                partial(self.pair_runner, self.reference) if paired and self.pair_runner else None,
            )

    # ----------------------------------------------------------------- queries
    def records(self) -> list[TrialRow]:
        """Every trial of the study, oldest first, with its Pareto re-run profile merged in."""
        reruns = profile_reruns(self.optuna.user_attrs)
        return [row_of(t, reruns) for t in self.optuna.get_trials(deepcopy=False)]

    def finished_count(self) -> int:
        """Trials that count towards ``n_trials``: complete, pruned, and failed except those
        interrupted (an interrupted trial is retried instead). The baseline runs do not count."""
        return self._stored().finished_count()

    def pareto_front(self) -> list[TrialRow]:
        """Feasible trials that neither another trial nor the baseline beats on both throughput
        and fidelity, fastest first (see :func:`autotune.store.records.pareto_front`)."""
        return self._stored().pareto()

    def best(
        self, max_fidelity: float | None = None, max_memory_mib: float | None = None
    ) -> Recipe:
        """The fastest configuration with fidelity <= ``max_fidelity`` (default: the study's
        tolerance) and peak memory <= ``max_memory_mib`` (MiB; default: no limit) that beats
        the baseline, confirmed where it can be
        (:meth:`~autotune.store.records.StudyRecords.best`)."""
        limit = self.tolerance if max_fidelity is None else max_fidelity
        return self._stored().best(limit, check_memory_limit(max_memory_mib))

    def _stored(self) -> StudyRecords:
        return read_records(self._storage, self.storage_url, self.name)


__all__ = ["DEFAULT_TOLERANCE", "PairRunner", "Study", "TrialRunner", "isolated_runner"]
