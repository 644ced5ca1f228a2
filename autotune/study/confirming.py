"""Running a study's confirmation (the method is in :mod:`autotune.analysis.head_to_head`).

The candidates are the top feasible Pareto trials, fastest first. Each round runs every candidate
still measured (:meth:`Confirmation.active`: the rounds are sequential and stop once the decision is
settled) in a fresh process measuring throughput only (no curve, no ablation, no profile): all of
them beside the baseline in one process, windows taken in turn, when a pair runner is given and they
share what a process fixes (backend, thread pools; see :mod:`autotune.study.confirm_runs`); else
alone, and the round then runs the baseline in a process of its own too. The confirmation is stored
after each round, so a resumed study continues with the next round and one already done is never
repeated. A round cut short is run again whole. Before the first round, every candidate whose mean
fidelity over the seeds could be over the tolerance (given the seeds' noise) has its extra seed
curves trained first (:meth:`Confirmation.first_curve`): one over the tolerance on them cannot win,
and no round then times it. After the rounds, the curves of the candidates that could win are
trained with the extra seeds, fastest first until one is within the tolerance, one stored run at a
time. A candidate whose run fails drops out with the failure recorded; a failed baseline run stops
the confirmation (the same command resumes it). Every process started is counted
(:attr:`Confirmation.processes`).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from pathlib import Path

import optuna

from autotune.analysis.attribution import (
    CURVE_NEUTRAL,
    Attribution,
    changed_settings,
    reverted,
    same_curve,
    with_known_reversions,
)
from autotune.analysis.head_to_head import Candidate, Confirmation
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import StudyError, TrialFailure
from autotune.fidelity import NoiseFloor, fidelity_distance
from autotune.store import writer
from autotune.store.records import StudyRecords
from autotune.store.result import CurvePoint, RunResult
from autotune.study.confirm_plan import (
    candidates_of,
    check_plan,
    curve_settings,
    speed_settings,
    start,
)
from autotune.study.confirm_runs import (
    Beside,
    ConfirmPairRunner,
    ConfirmRunner,
    ConfirmRuns,
    ProgressListener,
    failure_text,
    speeds_beside,
)
from autotune.study.fidelity_prediction import noise_margin


def _points(curve: Sequence[CurvePoint]) -> list[tuple[float, float]]:
    return [(p.samples, p.val_loss) for p in curve]


def confirm(
    study: optuna.Study,
    records: StudyRecords,
    plan: tuple[int, int, Sequence[int]],
    run: ConfirmRunner,
    settings: RunSettings,
    log_root: Path,
    on_progress: ProgressListener | None = None,
    max_memory_mib: float | None = None,
    run_pair: ConfirmPairRunner | None = None,
) -> Confirmation:
    """Starts, resumes or returns the confirmation of ``plan`` (top, rounds, seeds) of the
    candidates within ``max_memory_mib`` (MiB, no limit when None): one done before for the
    same candidates is stored as it is and returned. With ``run_pair``, a round's candidates are
    timed beside the baseline in one process where they can be (:mod:`.confirm_runs`)."""
    confirmation = start(records, *plan, max_memory_mib=max_memory_mib)
    if confirmation.complete:  # done before, or nothing feasible to confirm
        writer.write_confirmation(study, confirmation)
        return confirmation
    confirmer = Confirmer(study, records, run, log_root, on_progress, run_pair)
    return confirmer(confirmation, settings)


class Confirmer:
    """Runs a :class:`Confirmation` to the end, storing it in ``study`` as it goes."""

    def __init__(
        self,
        study: optuna.Study,
        records: StudyRecords,
        run: ConfirmRunner,
        log_root: Path,
        on_progress: ProgressListener | None = None,
        run_pair: ConfirmPairRunner | None = None,
    ) -> None:
        self.study = study
        self.records = records
        self.tolerance = records.tolerance
        self.log_root = log_root / "confirmation"
        self.on_progress = on_progress or (lambda line: None)
        self.runs = ConfirmRuns(run, run_pair, self.on_progress)

    def __call__(self, confirmation: Confirmation, settings: RunSettings) -> Confirmation:
        self.runs.processes = confirmation.process_count
        self._store(confirmation)
        floor = self.records.baseline.noise_floor  # None: the curves fail, as they would later
        while floor is not None and (curve := confirmation.first_curve(noise_margin(floor))):
            confirmation = self._seed_curve(confirmation, *curve, settings)
            self._store(confirmation)
        while not confirmation.rounds_done:
            confirmation = self._round(confirmation, speed_settings(settings))
            self._store(confirmation)
        while (curve := confirmation.next_curve()) is not None:
            confirmation = self._seed_curve(confirmation, *curve, settings)
            self._store(confirmation)
        if not confirmation.attribution_done:
            confirmation = self._attribute(confirmation, settings)
            confirmation = dataclasses.replace(confirmation, attribution_done=True)
            self._store(confirmation)
        return self._counted(confirmation)

    def _counted(self, confirmation: Confirmation) -> Confirmation:
        if confirmation.processes is None and not confirmation.sequential:
            return confirmation  # format 1: counted from its measurements
        return dataclasses.replace(confirmation, processes=self.runs.processes)

    # ------------------------------------------------------------- attribution, minimal recipe
    def _attribute(self, confirmation: Confirmation, settings: RunSettings) -> Confirmation:
        """Attributes the winner's speed-up to its settings and confirms its minimal recipe
        (see :mod:`autotune.analysis.attribution`); nothing to do without a winner, or for one that
        differs from the baseline in a single setting (that setting carries it)."""
        winner = confirmation.winner(self.tolerance)
        base = confirmation.baseline_config
        if winner is None:
            return confirmation
        best = winner.candidate
        changed = changed_settings(best.config, base)
        if len(changed) < 2:
            return confirmation
        attribution = confirmation.attribution
        if attribution is None or attribution.trial != best.trial:
            rounds = confirmation.rounds if confirmation.sequential else None
            drifts = self._drifting_reversions(best.config, base, changed)
            attribution = with_known_reversions(
                Attribution(best.trial, changed, rounds=rounds, drifts=drifts),
                best, confirmation.candidates, base,
                {c.trial: confirmation.baseline_for(c) for c in confirmation.candidates},
            )  # fmt: skip
            confirmation = dataclasses.replace(
                confirmation, attribution=attribution, minimal=None,
                minimal_baseline_samples_per_second=(),
            )  # fmt: skip
        speed = speed_settings(settings)
        while attribution.completed_rounds < confirmation.rounds and attribution.measuring():
            attribution = self._attribution_round(attribution, best.config, base, speed)
            confirmation = dataclasses.replace(confirmation, attribution=attribution)
            self._store(confirmation)
        minimal_config = attribution.minimal(best.config, base)
        if minimal_config in (best.config, base):  # nothing to drop, or no one setting matters
            return confirmation
        if confirmation.minimal is None:
            confirmation = _begin_minimal(confirmation, best, minimal_config)
            self._store(confirmation)
        return self._confirm_minimal(confirmation, settings)

    def _drifting_reversions(
        self, winner: TrialConfig, base: TrialConfig, changed: tuple[str, ...]
    ) -> dict[str, int]:
        """The learning settings of ``changed`` whose reversion trains a curve a trial of the
        search measured over the tolerance: {setting: that trial's number}."""
        measured = [
            row
            for row in self.records.trials
            if row.config is not None and row.fidelity is not None and row.fidelity > self.tolerance
        ]
        drifts: dict[str, int] = {}
        for setting in changed:
            if setting in CURVE_NEUTRAL:
                continue
            config = reverted(winner, base, setting)
            row = next((r for r in measured if r.config and same_curve(r.config, config)), None)
            if row is not None:
                drifts[setting] = row.number
        return drifts

    def _attribution_round(
        self,
        attribution: Attribution,
        winner: TrialConfig,
        base: TrialConfig,
        settings: RunSettings,
    ) -> Attribution:
        """One round: the unsettled reversions that can share a process with the winner timed
        beside it in one process, the others alone against a winner process of the round's own.
        The round's winner speed is that process's, or the median of those timed beside."""
        number = attribution.completed_rounds + 1
        where = f"attribution round {number}"
        folder = self.log_root / f"attribution_{number}_trial_{attribution.trial}"
        measuring = attribution.measuring()
        configs = {s: reverted(winner, base, s) for s in measuring}
        beside = [s for s in measuring if self.runs.pairs(configs[s], winner)]
        alone: float | None = None
        if len(beside) < len(measuring):
            alone = self._winner_alone(attribution, winner, settings, folder, where)
        folders = {s: folder.with_name(folder.name + f"_{s}") for s in measuring}
        timed = self.runs.beside(
            [configs[s] for s in beside], winner, settings, [folders[s] for s in beside], number,
            where,
        )  # fmt: skip
        outcomes: dict[str, Beside] = dict(zip(beside, timed, strict=True))
        speeds = dict(attribution.reverted_samples_per_second)
        winners: dict[str, tuple[float, ...]] = {}
        failed, paired = list(attribution.failed), list(attribution.paired)
        for setting in measuring:
            try:
                if setting in outcomes:
                    value, with_winner = speeds_beside(outcomes[setting])
                else:
                    assert alone is not None
                    value = self.runs.speed_alone(configs[setting], settings, folders[setting])
                    with_winner = alone
            except TrialFailure as failure:  # a failed pair too: keeping the setting is safe
                self.on_progress(f"{where}: without {setting}: failed ({failure.kind})")
                failed.append(setting)
                continue
            text = f", the winner beside it {with_winner:,.0f}" if setting in outcomes else ""
            self.on_progress(f"{where}: without {setting}: {value:,.0f} samples/s{text}")
            runs = speeds.get(setting, ())
            own = attribution.winner_for(setting)[: len(runs)]  # stored before pairing: kept
            speeds[setting], winners[setting] = (*runs, value), (*own, with_winner)
            if setting in outcomes and setting not in paired:
                paired.append(setting)
        if alone is None and winners:  # every reversion ran beside the winner
            alone = statistics.median(w[-1] for w in winners.values())
        if alone is None:  # every pair failed: the round still needs a winner speed
            alone = self._winner_alone(attribution, winner, settings, folder, where)
        return dataclasses.replace(
            attribution,
            winner_samples_per_second=(*attribution.winner_samples_per_second, alone),
            reverted_samples_per_second=speeds,
            winner_beside={**attribution.winner_beside, **winners},
            failed=tuple(failed),
            paired=tuple(paired),
        )

    def _winner_alone(
        self,
        attribution: Attribution,
        winner: TrialConfig,
        settings: RunSettings,
        folder: Path,
        where: str,
    ) -> float:
        """The winner alone in a fresh process (samples/s); StudyError when it fails."""
        try:
            speed = self.runs.speed_alone(winner, settings, folder)
        except TrialFailure as failure:
            raise StudyError(
                f"trial {attribution.trial} failed in {where} ({failure_text(failure)}); the "
                "rounds done are stored: run the same command again to resume"
            ) from failure
        self.on_progress(f"{where}: trial {attribution.trial} {speed:,.0f} samples/s")
        return speed

    def _confirm_minimal(self, confirmation: Confirmation, settings: RunSettings) -> Confirmation:
        """The minimal recipe against the baseline, round by round, then its curve seeds."""
        speed = speed_settings(settings)
        base = confirmation.baseline_config
        minimal = confirmation.minimal
        while minimal is not None and self._measuring_minimal(confirmation, minimal):
            number = len(confirmation.minimal_baseline_samples_per_second) + 1
            folder = self.log_root / f"minimal_{number}"
            paired = self.runs.pairs(minimal.config, base)
            try:
                if paired:
                    (outcome,) = self.runs.beside([minimal.config], base, speed, [folder], number)
                    value, baseline = speeds_beside(outcome)
                else:
                    value = self.runs.speed_alone(minimal.config, speed, folder)
                    baseline = self.runs.speed_alone(
                        base, speed, folder.with_name(f"{folder.name}_base")
                    )
            except TrialFailure as failure:
                minimal = dataclasses.replace(minimal, failure=failure_text(failure))
                confirmation = dataclasses.replace(confirmation, minimal=minimal)
                self._store(confirmation)
                break
            self.on_progress(
                f"minimal round {number}/{confirmation.rounds}: {value:,.0f} against the "
                f"baseline's {baseline:,.0f} samples/s"
            )
            minimal = dataclasses.replace(
                minimal,
                samples_per_second=(*minimal.samples_per_second, value),
                paired_rounds=minimal.paired_rounds + paired,
            )
            confirmation = dataclasses.replace(
                confirmation,
                minimal=minimal,
                minimal_baseline_samples_per_second=(
                    *confirmation.minimal_baseline_samples_per_second, baseline,
                ),
            )  # fmt: skip
            self._store(confirmation)
        for seed in confirmation.seeds:
            minimal = confirmation.minimal
            if minimal is None or minimal.failure is not None or seed in minimal.fidelity:
                continue
            if confirmation.sequential and not confirmation.passes(
                minimal, confirmation.minimal_baseline_samples_per_second
            ):
                break  # not faster beyond noise: the winner is recommended, no curve needed
            folder = self.log_root / f"minimal_seed_{seed}"
            updated = self._curve(confirmation, minimal, seed, settings, folder)
            confirmation = dataclasses.replace(confirmation, minimal=updated)
            self._store(confirmation)
        return confirmation

    @staticmethod
    def _measuring_minimal(confirmation: Confirmation, minimal: Candidate) -> bool:
        """Whether the minimal recipe's next round could change its verdict (never for one
        over the tolerance on its seeds: a candidate dropped before the rounds, say)."""
        base = confirmation.minimal_baseline_samples_per_second
        out = minimal.failure is not None or confirmation.over_tolerance(minimal)
        if out or len(base) >= confirmation.rounds:
            return False
        return not base or not confirmation.sequential or confirmation.running(minimal, base)

    def _store(self, confirmation: Confirmation) -> None:
        writer.write_confirmation(self.study, self._counted(confirmation))

    def _round(self, confirmation: Confirmation, settings: RunSettings) -> Confirmation:
        """One round: the active candidates that can share a process with the baseline timed
        beside it, all in one process (:meth:`ConfirmRuns.beside`), the others alone; then the
        baseline in a process of its own when a candidate ran alone (or none gave a baseline
        speed). Each candidate keeps the baseline speed measured beside it."""
        number = confirmation.completed_rounds + 1
        where = f"round {number}/{confirmation.rounds}"
        base = confirmation.baseline_config
        measured: dict[int, tuple[float, float | None]] = {}  # trial: (speed, baseline beside)
        failed: dict[int, str] = {}
        trials = confirmation.active()
        active = [c for c in confirmation.candidates if c.trial in trials]
        folders = {c.trial: self.log_root / f"round_{number}_trial_{c.trial}" for c in active}
        group = [c for c in active if self.runs.pairs(c.config, base)]
        timed = self.runs.beside(
            [c.config for c in group], base, settings, [folders[c.trial] for c in group], number,
            where,
        )  # fmt: skip
        outcomes: dict[int, Beside] = {c.trial: t for c, t in zip(group, timed, strict=True)}
        for candidate in active:
            folder = folders[candidate.trial]
            try:
                if candidate.trial in outcomes:
                    pair = speeds_beside(outcomes[candidate.trial])
                    measured[candidate.trial] = pair
                    text = f"{pair[0]:,.0f} samples/s, the baseline beside it {pair[1]:,.0f}"
                else:
                    speed = self.runs.speed_alone(candidate.config, settings, folder)
                    measured[candidate.trial], text = (speed, None), f"{speed:,.0f} samples/s"
            except TrialFailure as failure:
                self.on_progress(f"{where}: trial {candidate.trial} failed ({failure.kind})")
                failed[candidate.trial] = failure_text(failure)
                continue
            self.on_progress(f"{where}: trial {candidate.trial} {text}")
        beside_speeds = [b for _, b in measured.values() if b is not None]
        if len(beside_speeds) < len(measured) or not beside_speeds:
            baseline = self._round_baseline(confirmation, settings, number, where)
        else:
            baseline = statistics.median(beside_speeds)
        updated = []
        for candidate in confirmation.candidates:
            if candidate.trial in failed:
                candidate = dataclasses.replace(candidate, failure=failed[candidate.trial])
            elif candidate.trial in measured:
                speed, beside = measured[candidate.trial]
                n = len(candidate.samples_per_second)  # stored before format 3: the rounds'
                own = tuple(confirmation.baseline_for(candidate)[:n])
                candidate = dataclasses.replace(
                    candidate,
                    samples_per_second=(*candidate.samples_per_second, speed),
                    baseline_samples_per_second=(*own, baseline if beside is None else beside),
                    paired_rounds=candidate.paired_rounds + (beside is not None),
                )
            updated.append(candidate)
        return dataclasses.replace(
            confirmation,
            baseline_samples_per_second=(*confirmation.baseline_samples_per_second, baseline),
            candidates=tuple(updated),
        )

    def _round_baseline(
        self, confirmation: Confirmation, settings: RunSettings, number: int, where: str
    ) -> float:
        """The baseline alone in a fresh process (samples/s); StudyError when it fails."""
        try:
            folder = self.log_root / f"round_{number}_baseline"
            baseline = self.runs.speed_alone(confirmation.baseline_config, settings, folder)
        except TrialFailure as failure:
            raise StudyError(
                f"the baseline's confirmation run failed in {where} ({failure_text(failure)}); "
                "the rounds done are stored: run the same command again to resume"
            ) from failure
        self.on_progress(f"{where}: baseline {baseline:,.0f} samples/s")
        return baseline

    def _seed_curve(
        self, confirmation: Confirmation, trial: int, seed: int, settings: RunSettings
    ) -> Confirmation:
        candidate = next(c for c in confirmation.candidates if c.trial == trial)
        folder = self.log_root / f"trial_{trial}_seed_{seed}"
        changed = self._curve(confirmation, candidate, seed, settings, folder)
        return dataclasses.replace(
            confirmation,
            candidates=tuple(changed if c.trial == trial else c for c in confirmation.candidates),
        )

    def _curve(
        self,
        confirmation: Confirmation,
        candidate: Candidate,
        seed: int,
        settings: RunSettings,
        folder: Path,
    ) -> Candidate:
        """``candidate`` with its fidelity for ``seed`` (its curve trained with that seed and
        compared with the baseline's curve of the same seed), or with the failure. A curve
        known without training it (:meth:`Confirmation.known_curve`) is not trained again."""
        floor = self.records.baseline.noise_floor
        reference = self.records.baseline.seed_curves.get(seed)
        what = f"trial {candidate.trial} seed {seed}"
        try:
            if floor is None or not reference:
                raise TrialFailure("exception", f"the baseline has no curve for seed {seed}")
            known = confirmation.known_curve(candidate, seed)
            if known is not None:
                source, value = known
                if value is None:  # the baseline's own curve, against itself
                    value = fidelity_distance(_points(reference), _points(reference), floor)
                self.on_progress(
                    f"{what}: fidelity {value:.2f} (the curve of {source}: they differ only in "
                    "settings that do not change what the model learns)"
                )
                return dataclasses.replace(candidate, fidelity={**candidate.fidelity, seed: value})
            result = self.runs.alone(candidate.config, curve_settings(settings, seed), folder)
            value = _fidelity(result, reference, floor)
        except TrialFailure as failure:
            self.on_progress(f"{what}: failed ({failure.kind})")
            return dataclasses.replace(candidate, failure=failure_text(failure))
        self.on_progress(f"{what}: fidelity {value:.2f}")
        return dataclasses.replace(candidate, fidelity={**candidate.fidelity, seed: value})


def _begin_minimal(
    confirmation: Confirmation, best: Candidate, config: TrialConfig
) -> Confirmation:
    """``confirmation`` with the minimal recipe ``config`` of the winner ``best`` to confirm.
    A candidate of that configuration measured in the rounds lends it its rounds, the baseline
    beside them and its curves: they are the measurement a minimal round makes (head to head
    with the baseline, round by round), so more are run only where its verdict is still open.
    Otherwise it starts with the winner's curves where it trains the same curve."""
    known = next(
        (c for c in confirmation.candidates if c.config == config and c.failure is None), None
    )
    if known is None:
        fidelity = dict(best.fidelity) if same_curve(config, best.config) else {}
        minimal = Candidate(trial=best.trial, config=config, fidelity=fidelity)
        return dataclasses.replace(confirmation, minimal=minimal)
    rounds = len(known.samples_per_second)
    return dataclasses.replace(
        confirmation,
        minimal=dataclasses.replace(known, trial=best.trial, baseline_samples_per_second=()),
        minimal_baseline_samples_per_second=tuple(confirmation.baseline_for(known)[:rounds]),
    )


def _fidelity(result: RunResult, reference: Sequence[CurvePoint], floor: NoiseFloor) -> float:
    if not result.curve:
        raise TrialFailure("exception", "the run trained no curve")
    return fidelity_distance(_points(result.curve), _points(reference), floor)


__all__ = [
    "ConfirmPairRunner",
    "ConfirmRunner",
    "Confirmer",
    "ProgressListener",
    "candidates_of",
    "check_plan",
    "confirm",
    "curve_settings",
    "speed_settings",
    "start",
]
