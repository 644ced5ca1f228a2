"""Anchors: the baseline configuration re-measured during the search, throughput only.

Machines drift (thermal state, other load, frequency scaling): the baseline's seed-0 throughput
measured at a study's start may be far from what the same configuration runs twenty minutes
later. So the study re-runs the baseline configuration every few trials or minutes
(:mod:`autotune.study.anchor`) and each trial's speed-up is read against the anchor nearest in
time to the trial's start, the start's own baseline counting as the first anchor. The Optuna
objective stays the trial's raw samples/s; anchors change the ratios, the early stop, the
structured start's decisions and what is shown.

Each anchor is one study user attribute, ``autotune_anchor:<started>:<worker>``
(:data:`ANCHOR_PREFIX`), written whole (so workers sharing a storage never overwrite each
other's): ``{"started", "ended"}`` (seconds since the epoch; ``ended`` None while it runs),
``"throughput"`` (an :class:`~autotune.measure.Estimate` dict, None while it runs or when it
failed) and ``"error"`` (why it failed, else None). A study stored before anchors existed has
none and reads as before: every trial against the start's baseline. No TensorFlow here.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autotune.measure import Estimate
from autotune.store.schema import BASELINE_KEY, BASELINE_SEEDS, INFO_KEY

#: The prefix of an anchor's study user attribute.
ANCHOR_PREFIX = "autotune_anchor:"


@dataclass(frozen=True)
class Anchor:
    """One re-measurement of the baseline configuration.

    Attributes:
        key: its study user attribute.
        started, ended: when it ran (seconds since the epoch; ``ended`` None while it runs).
        throughput: its samples/s estimate (None while it runs or when it failed).
        error: why it failed (None when it did not).
    """

    key: str
    started: float
    ended: float | None
    throughput: Estimate | None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "ended": self.ended,
            "throughput": self.throughput.to_dict() if self.throughput else None,
            "error": self.error,
        }


def anchor_of(key: str, value: Any) -> Anchor | None:
    """The anchor stored under ``key``; None when ``value`` cannot be read as one (a damaged or
    newer entry is left out, never an error: anchors only refine the comparison)."""
    try:
        started = float(value["started"])
        ended = None if value.get("ended") is None else float(value["ended"])
        throughput = value.get("throughput")
        estimate = Estimate(**throughput) if throughput is not None else None
        error = value.get("error")
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if not math.isfinite(started) or (estimate is not None and not estimate.median > 0):
        return None
    return Anchor(key, started, ended, estimate, None if error is None else str(error))


def epoch(value: dt.datetime | str | None) -> float | None:
    """Seconds since the epoch of a datetime or ISO 8601 string (naive ones are local time, as
    Optuna stores trial times); None for None or a string that is not a time."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            return None
    return value.timestamp() if value is not None else None


@dataclass(frozen=True)
class Drift:
    """The latest anchor against the start's baseline.

    Attributes:
        baseline: the start's baseline (seed 0) samples/s.
        latest: the latest anchor's samples/s.
        at: when the latest anchor started (seconds since the epoch).
        anchors: how many anchors were measured.
    """

    baseline: Estimate
    latest: Estimate
    at: float
    anchors: int

    @property
    def ratio(self) -> float:
        """The latest anchor's median over the baseline's (2.0: the baseline now runs twice
        as fast as at the start)."""
        return self.latest.median / self.baseline.median

    @property
    def beyond_noise(self) -> bool:
        """Whether the two confidence intervals do not overlap: a change the measurements'
        own noise cannot explain."""
        return self.latest.low > self.baseline.high or self.latest.high < self.baseline.low


@dataclass(frozen=True)
class Anchors:
    """The start's baseline and the anchors measured since, oldest first.

    Attributes:
        baseline: the start's baseline (seed 0) samples/s; None before it is measured.
        baseline_at: when it was measured (seconds since the epoch); None when unknown (a study
            stored before anchors existed), then it counts as earlier than any anchor.
        runs: every stored anchor, oldest first (running and failed ones included).
    """

    baseline: Estimate | None = None
    baseline_at: float | None = None
    runs: tuple[Anchor, ...] = ()

    @property
    def measured(self) -> tuple[Anchor, ...]:
        """The anchors with a throughput, oldest first."""
        return tuple(a for a in self.runs if a.throughput is not None)

    def at(self, when: float | None) -> Estimate | None:
        """The reference samples/s at ``when`` (seconds since the epoch): the measured anchor
        or start baseline nearest in time; the start's baseline when ``when`` is None."""
        measured = self.measured
        if when is None or not measured:
            return self.baseline
        candidates: list[tuple[float, Estimate]] = [
            (a.started, a.throughput) for a in measured if a.throughput is not None
        ]
        if self.baseline is not None:
            baseline_at = self.baseline_at
            if baseline_at is None:  # unknown: as early as possible, so used before the first
                baseline_at = min(when, measured[0].started)
            candidates.append((baseline_at, self.baseline))
        return min(candidates, key=lambda pair: (abs(when - pair[0]), -pair[0]))[1]

    def latest(self) -> Estimate | None:
        """The latest measured anchor's samples/s, else the start's baseline."""
        measured = self.measured
        return measured[-1].throughput if measured else self.baseline

    def ratio(self, throughput: Estimate | None, when: float | None) -> float | None:
        """``throughput``'s median over the reference's at ``when`` (:meth:`at`): the speed-up
        against the baseline measured nearest in time; None without both."""
        reference = self.at(when)
        if throughput is None or reference is None or not reference.median > 0:
            return None
        return throughput.median / reference.median

    def at_start_speed(self, samples_per_second: float, when: float | None) -> float:
        """``samples_per_second`` measured at ``when``, scaled to the start's conditions: times
        the start baseline's median over the reference's at ``when`` (unchanged without
        anchors)."""
        reference = self.at(when)
        if reference is None or self.baseline is None or not reference.median > 0:
            return samples_per_second
        return samples_per_second * self.baseline.median / reference.median

    def drift(self) -> Drift | None:
        """The latest anchor against the start's baseline; None before an anchor is measured."""
        measured = self.measured
        if self.baseline is None or not measured or measured[-1].throughput is None:
            return None
        last = measured[-1]
        assert last.throughput is not None
        return Drift(self.baseline, last.throughput, last.started, len(measured))


def _baseline(attrs: Mapping[str, Any]) -> tuple[Estimate | None, float | None]:
    """The start baseline's seed-0 samples/s and when it was measured: its stored
    ``measured_at``, else the study's creation time (a study stored before anchors existed)."""
    stored = attrs.get(BASELINE_KEY)
    if not isinstance(stored, dict):
        return None, None
    try:
        main = stored["runs"][str(BASELINE_SEEDS[0])]
        estimate = Estimate(**main["throughput"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None, None
    when = stored.get("measured_at")
    if not isinstance(when, (int, float)) or isinstance(when, bool):
        info = attrs.get(INFO_KEY)
        created = info.get("created") if isinstance(info, dict) else None
        when = epoch(created) if isinstance(created, str) else None
    return estimate, None if when is None else float(when)


def read_anchors(attrs: Mapping[str, Any]) -> Anchors:
    """The start's baseline and the anchors stored in a study's user attributes ``attrs``
    (readable ones only; none in a study stored before anchors existed)."""
    baseline, baseline_at = _baseline(attrs)
    runs = [
        anchor
        for key, value in attrs.items()
        if key.startswith(ANCHOR_PREFIX) and (anchor := anchor_of(key, value)) is not None
    ]
    runs.sort(key=lambda a: (a.started, a.key))
    return Anchors(baseline, baseline_at, tuple(runs))


__all__ = ["ANCHOR_PREFIX", "Anchor", "Anchors", "Drift", "anchor_of", "epoch", "read_anchors"]
