"""A proposal's fidelity predicted from the learning configurations measured so far: one the
measured trials already rule out is skipped, recorded as infeasible for the sampler.

Fidelity is a property of what the model learns, so it depends on the settings that change the
curve (:attr:`autotune.settings.Setting.changes_learning`: batch size, precision, XLA, the
backend, ...), never on the pipeline or steps per execution. Two rules, both among measured
configurations whose learning settings equal the proposal's but for the batch size:

- **the same curve**: a measured trial with the proposal's batch size trains the very curve the
  proposal would be scored with (:func:`autotune.study.prediction.learning_twin`), so a fidelity
  over the tolerance there is the proposal's, exactly;
- **a larger batch**: a measured trial at a smaller batch size was infeasible *beyond the noise*
  (its fidelity over the tolerance by more than :func:`noise_margin`, how far a re-run with
  another seed could move it), and fidelity was measured rising with batch size in that family
  (a smaller batch, the baseline included, measured lower). At a fixed number of training
  samples a larger batch takes fewer, larger steps, so its curve lags further; the proposal is
  predicted at least as far off. A family whose measured fidelity *falls* with batch size by
  more than the noise (a learning-rate rule that over-corrects, say) predicts nothing.

Thread pools (:data:`NOISE_LEVEL`) count as learning settings for curve reuse (a different
reduction order gives a different curve), but they change it no more than a seed re-run does, so
here a configuration that differs from a measured one only in them (and the batch size) belongs
to its family: at the same batch size it is predicted infeasible only beyond the noise, like a
larger batch.

What would make it wrong: a fidelity that falls with batch size without this study having
measured the fall (a non-monotone curve, e.g. a learning rate scaled with the batch so that one
larger batch matches the baseline better), or a seed noise at the larger batch well above the
baseline's (the margin assumes the trial's own seed spread is the baseline's). The benchmark
(``experiments/benchmarks/search_replay.py``) counts the predictions its measured grids say were
wrong. A skipped trial is stored PRUNED with the reason ("predicted infeasible: ...; predicted
from trials 2, 5"), the trials it was predicted from (:mod:`autotune.store.predicted`) and a
violated ``fidelity`` constraint (the measured fidelity over the tolerance), so TPE ranks it
with the infeasible trials; it counts towards ``n_trials`` like a trial predicted out of memory.
No TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NoReturn

import optuna
from optuna.trial import TrialState

from autotune import settings
from autotune.analysis.attribution import changed_settings, same_curve
from autotune.config import TrialConfig
from autotune.fidelity import NoiseFloor
from autotune.store import writer
from autotune.store.predicted import BASELINE_NUMBER, PREDICTION_OFF_KEY, sources_text
from autotune.store.schema import BASELINE_KEY, CONFIG_ATTR, FIDELITY_ATTR
from autotune.study.optuna_tools import set_constraints
from autotune.study.scoring import prune

#: Settings that change a curve only at the level of a seed re-run: the thread pools (the
#: settings table's threads group) change the order of floating-point reductions (and tf.data's
#: pool not even that), never which examples are seen or how the weights are updated.
NOISE_LEVEL = settings.in_group(settings.THREADS)
#: The smallest margin (fidelity units, i.e. seed noise floors) by which a smaller batch's
#: fidelity must exceed the tolerance to rule out a larger batch: one seed re-run's distance.
MIN_NOISE_MARGIN = 1.0


@dataclass(frozen=True)
class Measured:
    """A measured learning configuration: a complete trial's (or the baseline's, number -1)
    configuration and its one-sided fidelity."""

    number: int
    config: TrialConfig
    fidelity: float

    @property
    def name(self) -> str:
        return "the baseline" if self.number == BASELINE_NUMBER else f"trial {self.number}"

    def describe(self) -> str:
        """'trial 4 (batch_size=128, fidelity 3.83)'."""
        return f"{self.name} (batch_size={self.config.batch_size}, fidelity {self.fidelity:.2f})"


@dataclass(frozen=True)
class Prediction:
    """Why a proposal is predicted infeasible.

    Attributes:
        evidence: the measured configuration over the tolerance it is predicted from.
        rise_from: a smaller batch of the same family that measured a lower fidelity (the rise
            with batch size); None when ``evidence`` has the proposal's batch size.
        same_curve: ``evidence`` trains the proposal's very curve (it differs in curve-neutral
            settings alone); False when it differs in :data:`NOISE_LEVEL` settings too.
        tolerance: the study's tolerance (fidelity units).
        margin: the noise margin the evidence exceeded the tolerance by (fidelity units).
    """

    evidence: Measured
    rise_from: Measured | None
    tolerance: float
    margin: float
    same_curve: bool = True

    @property
    def numbers(self) -> tuple[int, ...]:
        """The trials (-1: the baseline) it is predicted from, oldest first."""
        sources = [self.evidence] if self.rise_from is None else [self.rise_from, self.evidence]
        return tuple(sorted(m.number for m in sources))

    @property
    def violation(self) -> float:
        """The ``fidelity`` constraint it is recorded with: the evidence's fidelity over the
        tolerance (> 0), a lower bound of the proposal's."""
        return self.evidence.fidelity - self.tolerance

    def reason(self) -> str:
        """'predicted infeasible: ...; predicted from trials 2, 5'."""
        if self.rise_from is None and self.same_curve:
            why = (
                f"{self.evidence.describe()} trained the same curve (the same learning "
                f"settings), over the tolerance {self.tolerance:g}"
            )
        elif self.rise_from is None:
            why = (
                f"{self.evidence.describe()} learned with the same settings but for thread "
                f"pools (a difference at the level of a seed re-run), over the tolerance "
                f"{self.tolerance:g} by more than the noise ({self.margin:.2f})"
            )
        else:
            why = (
                f"at the same learning settings fidelity rose with batch size, from "
                f"{self.rise_from.describe()} to {self.evidence.describe()}, over the "
                f"tolerance {self.tolerance:g} by more than the noise ({self.margin:.2f}); a "
                "larger batch learns further off"
            )
        return f"predicted infeasible: {why}; predicted from {sources_text(self.numbers)}"


def noise_margin(floor: NoiseFloor) -> float:
    """How far a re-run with another seed could move a measured fidelity (fidelity units): the
    largest distance between two of the baseline's seed curves over the floor (the one-sided
    fidelity moves by at most the distance between the two curves), at least
    :data:`MIN_NOISE_MARGIN`."""
    largest = max(floor.pairs, default=floor.value)
    return max(MIN_NOISE_MARGIN, largest / floor.value)


def same_but_batch(a: TrialConfig, b: TrialConfig) -> bool:
    """Whether ``a`` and ``b`` learn with the same settings but for the batch size and the
    :data:`NOISE_LEVEL` thread pools (the curve-neutral settings as
    :func:`~autotune.analysis.attribution.same_curve` reads them from the settings table)."""
    free = {*settings.curve_neutral(), *NOISE_LEVEL, "batch_size"}
    return all(s in free for s in changed_settings(a, b))


def falls_with_batch(family: Sequence[Measured], margin: float) -> bool:
    """Whether a larger batch of ``family`` measured a fidelity lower than a smaller one's by
    more than ``margin``: the rise with batch size is contradicted."""
    return any(
        a.config.batch_size < b.config.batch_size and b.fidelity < a.fidelity - margin
        for a in family
        for b in family
    )


def predict(
    measured: Iterable[Measured], config: TrialConfig, tolerance: float, margin: float
) -> Prediction | None:
    """Why ``config`` is predicted infeasible from the ``measured`` configurations (see the
    module's rules), or None when they do not rule it out."""
    family = [m for m in measured if same_but_batch(m.config, config)]
    twins = [m for m in family if same_curve(m.config, config)]
    if twins:  # its curve is known: the fidelity is exactly that
        lowest = min(twins, key=lambda m: (m.fidelity, m.number))
        return Prediction(lowest, None, tolerance, margin) if lowest.fidelity > tolerance else None
    near = [m for m in family if m.config.batch_size == config.batch_size]
    if near:  # its curve within a seed's noise of theirs
        lowest = min(near, key=lambda m: (m.fidelity, m.number))
        if lowest.fidelity > tolerance + margin:
            return Prediction(lowest, None, tolerance, margin, same_curve=False)
        return None
    if falls_with_batch(family, margin):
        return None
    for evidence in sorted(family, key=lambda m: (-m.fidelity, m.number)):
        if not (
            evidence.config.batch_size < config.batch_size
            and evidence.fidelity > tolerance + margin
        ):
            continue
        lower = [
            m
            for m in family
            if m.config.batch_size < evidence.config.batch_size and m.fidelity < evidence.fidelity
        ]
        if lower:
            rise = max(lower, key=lambda m: (m.config.batch_size, -m.number))
            return Prediction(evidence, rise, tolerance, margin)
    return None


def measured_configs(study: optuna.Study) -> list[Measured]:
    """The study's measured learning configurations: the baseline (fidelity 0 by definition)
    and every complete trial with a configuration and a fidelity."""
    baseline = study.user_attrs.get(BASELINE_KEY) or {}
    found = []
    if isinstance(baseline, dict) and baseline.get("config"):
        found.append(Measured(BASELINE_NUMBER, TrialConfig.from_dict(baseline["config"]), 0.0))
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        config, fidelity = trial.user_attrs.get(CONFIG_ATTR), trial.user_attrs.get(FIDELITY_ATTR)
        if config and isinstance(fidelity, (int, float)) and not isinstance(fidelity, bool):
            found.append(Measured(trial.number, TrialConfig.from_dict(config), float(fidelity)))
    return found


def enabled(study: optuna.Study) -> bool:
    """Whether ``study`` skips proposals predicted infeasible (on unless stored off)."""
    return study.user_attrs.get(PREDICTION_OFF_KEY) is not True


def predicted_infeasible(
    study: optuna.Study, config: TrialConfig, tolerance: float
) -> Prediction | None:
    """Why ``config`` is predicted infeasible from what ``study`` measured, or None (also when
    the prediction is off, or before the baseline's noise floor is stored)."""
    baseline = study.user_attrs.get(BASELINE_KEY) or {}
    floor = baseline.get("noise_floor") if isinstance(baseline, dict) else None
    if not floor or not enabled(study):
        return None
    margin = noise_margin(NoiseFloor.from_dict(floor))
    return predict(measured_configs(study), config, tolerance, margin)


def prune_predicted(trial: optuna.Trial, prediction: Prediction) -> NoReturn:
    """Skips the trial as predicted infeasible: stores the trials it is predicted from and a
    violated ``fidelity`` constraint, and prunes it with the reason (raises TrialPruned)."""
    writer.write_predicted_from(trial, prediction.numbers)
    set_constraints(trial, {"fidelity": prediction.violation})
    prune(trial, prediction.reason())


__all__ = [
    "MIN_NOISE_MARGIN",
    "NOISE_LEVEL",
    "Measured",
    "Prediction",
    "enabled",
    "falls_with_batch",
    "measured_configs",
    "noise_margin",
    "predict",
    "predicted_infeasible",
    "prune_predicted",
    "same_but_batch",
]
