"""Which of a confirmed winner's settings carry its speed-up, and the minimal recipe.

A search reports whatever values its trials happened to draw: a winner may set ``prefetch=1``
or ``shuffle_buffer=4096`` for no measurable reason, and a recipe should not tell a user to change
what does not matter. So each setting in which the winner differs from the baseline is reverted
alone (the winner with that one setting at the baseline's value) and measured head to head with
the winner, round by round in fresh processes: a round's reversions beside the winner in one
process where they share what a process fixes (:func:`autotune.trial.runner.run_side_by_side`),
else each alone. A setting **carries** the speed-up when reverting it is slower beyond noise (the
paired ratio reverted/winner lies wholly below 1); otherwise its effect is within noise and the
minimal recipe keeps the baseline's value for it. The minimal recipe is then confirmed against
the baseline like any candidate before it is recommended (see
:mod:`autotune.analysis.head_to_head`). No TensorFlow here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autotune import settings
from autotune.analysis import sequential
from autotune.analysis.candidate import Candidate
from autotune.config import TrialConfig
from autotune.measure import Estimate, summarize

#: The performance settings of a configuration, in the order they are reported: those of
#: :data:`autotune.settings.SETTINGS` (read from it when settings are compared).
SETTINGS = settings.names()
#: Settings that change how fast steps run, never which examples they see or in what order: the
#: map is deterministic at any parallelism, prefetch only buffers (:mod:`autotune.trial.pipeline`)
#: and a trial's curve is trained one step per call whatever ``steps_per_execution`` is
#: (:mod:`autotune.trial.runner`). Configurations that differ in these alone train the same
#: curve (the study trains it once: :func:`autotune.study.prediction.learning_twin`). They are
#: the settings the table marks as not changing what the model learns
#: (:attr:`autotune.settings.Setting.changes_learning`).
CURVE_NEUTRAL = settings.curve_neutral()


def changed_settings(config: TrialConfig, baseline: TrialConfig) -> tuple[str, ...]:
    """The settings in which ``config`` differs from ``baseline``, in table order.

    On the JAX backend ``jit_compile`` is not a setting of its own (JAX trains through
    ``jax.jit``): a JAX configuration against a TensorFlow one differs in ``backend`` there."""
    tied = config.backend == "jax" and baseline.backend != "jax"
    return tuple(
        s
        for s in settings.names()
        if getattr(config, s) != getattr(baseline, s) and not (tied and s == "jit_compile")
    )


def reverted(config: TrialConfig, baseline: TrialConfig, *settings: str) -> TrialConfig:
    """``config`` with ``settings`` at the baseline's values. A JAX configuration's backend
    reverted keeps its XLA compilation (TensorFlow with ``jit_compile``), so the backend alone
    changes."""
    return dataclasses.replace(config, **{s: getattr(baseline, s) for s in settings})


def same_curve(a: TrialConfig, b: TrialConfig) -> bool:
    """Whether ``a`` and ``b`` train the same curve (they differ only in curve-neutral settings)."""
    neutral = settings.curve_neutral()
    return all(s in neutral for s in changed_settings(a, b))


@dataclass(frozen=True)
class Attribution:
    """The winner and each of its one-setting reversions, measured head to head.

    Attributes:
        trial: the winning trial.
        settings: the settings in which it differs from the baseline.
        winner_samples_per_second: the winner's median throughput in each round.
        reverted_samples_per_second: each reversion's median throughput in each round.
        failed: settings whose reversion failed to run (they carry the speed-up: the winner
            cannot do without them).
        rounds: the most rounds, sequential; None (stored before): every setting every round.
        drifts: settings kept without measuring them, because reverting one trains a curve the
            search measured over the fidelity tolerance: {setting: that trial's number}. Such
            a reversion could never become the recipe (a larger batch without its
            learning-rate rule, say), so it is not timed.
        winner_beside: the winner's samples/s timed beside each reversion in its process,
            round by round (a round the reversion ran alone holds that round's winner process);
            a setting absent (stored before pairing) pairs with
            :attr:`winner_samples_per_second`.
        paired: the settings whose reversion was timed beside the winner in one process.
        known: the settings whose reversion is a confirmation candidate: its rounds and the
            winner's, measured in the same confirmation rounds, are taken as they are
            (:func:`with_known_reversions`), never measured again.
    """

    trial: int
    settings: tuple[str, ...]
    winner_samples_per_second: tuple[float, ...] = ()
    reverted_samples_per_second: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    failed: tuple[str, ...] = ()
    rounds: int | None = None
    drifts: Mapping[str, int] = field(default_factory=dict)
    winner_beside: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    paired: tuple[str, ...] = ()
    known: tuple[str, ...] = ()

    @property
    def completed_rounds(self) -> int:
        return len(self.winner_samples_per_second)

    def winner_for(self, setting: str) -> tuple[float, ...]:
        """The winner's samples/s each reversion of ``setting`` is compared with, by round."""
        return self.winner_beside.get(setting, self.winner_samples_per_second)

    def ratio(self, setting: str) -> Estimate | None:
        """samples/s with ``setting`` reverted over the winner's, paired by round (median and
        interval; its rounds are the first ones when sequential); None before a round."""
        runs = self.reverted_samples_per_second.get(setting, ())
        if setting in self.failed or not runs:
            return None
        if self.rounds is None and len(runs) != self.completed_rounds:
            return None
        return summarize([r / w for r, w in zip(runs, self.winner_for(setting), strict=False)])

    def _speed_ups(self, setting: str) -> list[float]:
        runs = self.reverted_samples_per_second.get(setting, ())
        return [w / r for w, r in zip(self.winner_for(setting), runs, strict=False) if r > 0]

    def carries(self, setting: str) -> bool:
        """Whether reverting ``setting`` is slower beyond noise (unmeasured, or not settled
        yet: it carries), or drifts (:attr:`drifts`: it is kept for what the model learns)."""
        if setting in self.drifts:
            return True
        ratio = self.ratio(setting)
        if ratio is None:
            return True
        if self.rounds is None:
            return ratio.high < 1.0
        gains = self._speed_ups(setting)
        return sequential.passes(gains, self.rounds) or sequential.can_pass(gains, self.rounds)

    def measuring(self) -> tuple[str, ...]:
        """The settings the next round measures: measured every round so far, and not settled."""
        if self.rounds is None:
            return tuple(s for s in self.settings if s not in self.failed and s not in self.drifts)
        done = self.completed_rounds
        if done >= self.rounds:
            return ()
        return tuple(
            s
            for s in self.settings
            if s not in self.failed
            and s not in self.drifts
            and len(self.reverted_samples_per_second.get(s, ())) == done
            and (done == 0 or sequential.open_verdict(self._speed_ups(s), self.rounds))
        )

    def within_noise(self) -> tuple[str, ...]:
        return tuple(s for s in self.settings if not self.carries(s))

    def minimal(self, winner: TrialConfig, baseline: TrialConfig) -> TrialConfig:
        """The winner with every setting whose effect is within noise at the baseline's value."""
        return reverted(winner, baseline, *self.within_noise())

    def describe(self) -> str:
        """'carried by batch_size, precision; within noise: prefetch (reverted)'; settings
        kept because reverting them drifts: '; kept for fidelity: lr_rule'."""
        carried = [s for s in self.settings if self.carries(s) and s not in self.drifts]
        text = f"carried by {', '.join(carried) or 'no one setting alone'}"
        if self.drifts:
            text += f"; kept for fidelity: {', '.join(self.drifts)}"
        quiet = self.within_noise()
        if quiet:
            text += f"; within noise: {', '.join(quiet)}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "settings": list(self.settings),
            "winner_samples_per_second": list(self.winner_samples_per_second),
            "reverted_samples_per_second": {
                k: list(v) for k, v in self.reverted_samples_per_second.items()
            },
            "failed": list(self.failed),
            "rounds": self.rounds,
            "drifts": dict(self.drifts),
            "winner_beside": {k: list(v) for k, v in self.winner_beside.items()},
            "paired": list(self.paired),
            "known": list(self.known),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Attribution:
        return cls(
            trial=int(data["trial"]),
            settings=tuple(str(s) for s in data["settings"]),
            winner_samples_per_second=tuple(float(v) for v in data["winner_samples_per_second"]),
            reverted_samples_per_second={
                str(k): tuple(float(x) for x in v)
                for k, v in (data.get("reverted_samples_per_second") or {}).items()
            },
            failed=tuple(str(s) for s in data.get("failed", [])),
            rounds=int(data["rounds"]) if data.get("rounds") is not None else None,
            drifts={str(k): int(v) for k, v in (data.get("drifts") or {}).items()},
            winner_beside={
                str(k): tuple(float(x) for x in v)
                for k, v in (data.get("winner_beside") or {}).items()
            },
            paired=tuple(str(s) for s in data.get("paired", [])),
            known=tuple(str(s) for s in data.get("known", [])),
        )

    def rows(self) -> list[dict[str, Any]]:
        """Per setting: the reverted/winner ratio and whether the setting carries the speed-up."""
        return [
            {
                "setting": s,
                "ratio_when_reverted": (r.to_dict() if (r := self.ratio(s)) else None),
                "carries": self.carries(s),
                "drifts_in_trial": self.drifts.get(s),
            }
            for s in self.settings
        ]


def with_known_reversions(
    attribution: Attribution,
    winner: Candidate,
    candidates: Sequence[Candidate],
    baseline: TrialConfig,
    baselines: Mapping[int, Sequence[float]],
) -> Attribution:
    """``attribution`` (sequential, nothing measured yet) with each reversion that is one of
    the confirmation's ``candidates`` taken from its rounds: the candidate's samples/s and the
    winner's in the rounds both ran (the first ones: a candidate only ever drops out), each
    round's ratio the candidate's over the winner's in units of the baseline each was measured
    beside (``baselines``: {trial: the baseline's samples/s per round}; one and the same where
    both shared the round's process). What the rounds left open stays open, so the setting is
    kept (:meth:`Attribution.carries`)."""
    if attribution.rounds is None or attribution.completed_rounds:
        return attribution
    speeds, winners, known = {}, {}, []
    for setting in attribution.settings:
        config = reverted(winner.config, baseline, setting)
        match = next((c for c in candidates if c.config == config and c.failure is None), None)
        if setting in attribution.drifts or match is None:
            continue
        mine, theirs = baselines[match.trial], baselines[winner.trial]
        n = min(len(match.samples_per_second), len(winner.samples_per_second), len(mine))
        if n and len(theirs) >= n:
            speeds[setting] = tuple(match.samples_per_second[:n])
            winners[setting] = tuple(  # the winner's speed beside the candidate's baseline
                w * m / t for w, m, t in zip(winner.samples_per_second, mine, theirs, strict=False)
            )[:n]
            known.append(setting)
    return dataclasses.replace(
        attribution,
        reverted_samples_per_second=speeds,
        winner_beside=winners,
        known=tuple(known),
    )


__all__ = [
    "CURVE_NEUTRAL",
    "SETTINGS",
    "Attribution",
    "changed_settings",
    "reverted",
    "same_curve",
    "with_known_reversions",
]
