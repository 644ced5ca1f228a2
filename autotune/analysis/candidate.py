"""The records of a confirmation's candidates: what was measured of each (:class:`Candidate`),
what the confirmation says of it (:class:`Verdict`), and the paired ratio both use. No
TensorFlow here; the method is in :mod:`autotune.analysis.head_to_head`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from autotune.config import TrialConfig
from autotune.measure import Estimate, summarize


@dataclass(frozen=True)
class Candidate:
    """One confirmed candidate.

    Attributes:
        trial: the search trial it comes from.
        config: its configuration.
        samples_per_second: its median throughput (samples/s) in each completed round.
        baseline_samples_per_second: the baseline's median throughput (samples/s) measured for
            it in each of those rounds: beside it in one process, or the round's own baseline
            process; empty when stored before format 3 (the confirmation's rounds then).
        paired_rounds: how many of its rounds timed it beside the baseline in one process.
        fidelity: its fidelity distance by seed (seed 0 from the search; 1.0 = worse by as much
            as a seed re-run differs).
        failure: why it dropped out (a run failed), or None.
    """

    trial: int
    config: TrialConfig
    samples_per_second: tuple[float, ...] = ()
    fidelity: Mapping[int, float] = field(default_factory=dict)
    failure: str | None = None
    baseline_samples_per_second: tuple[float, ...] = ()
    paired_rounds: int = 0

    @property
    def paired_throughout(self) -> bool:
        """Whether it has rounds and every one timed it beside the baseline in one process."""
        return bool(self.samples_per_second) and self.paired_rounds == len(self.samples_per_second)

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "config": self.config.to_dict(),
            "samples_per_second": list(self.samples_per_second),
            "baseline_samples_per_second": list(self.baseline_samples_per_second),
            "paired_rounds": self.paired_rounds,
            "fidelity": {str(seed): value for seed, value in sorted(self.fidelity.items())},
            "failure": self.failure,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Candidate:
        return cls(
            trial=int(data["trial"]),
            config=TrialConfig.from_dict(data["config"], source="stored confirmation"),
            samples_per_second=tuple(float(v) for v in data.get("samples_per_second", [])),
            fidelity={int(k): float(v) for k, v in (data.get("fidelity") or {}).items()},
            failure=data.get("failure"),
            baseline_samples_per_second=tuple(
                float(v) for v in data.get("baseline_samples_per_second", [])
            ),
            paired_rounds=int(data.get("paired_rounds", 0)),
        )


@dataclass(frozen=True)
class Verdict:
    """What confirmation says of one candidate.

    Attributes:
        candidate: the candidate.
        ratio: its paired speed-up over the baseline (median and interval), None when it has
            no complete round.
        fidelity_mean, fidelity_low, fidelity_high: mean and range over its seeds (None
            without a curve).
        text: "faster beyond noise", "within noise of the baseline", "slower than the
            baseline", "over the fidelity tolerance" or "failed: ...".
        eligible: whether it may be recommended.
    """

    candidate: Candidate
    ratio: Estimate | None
    fidelity_mean: float | None
    fidelity_low: float | None
    fidelity_high: float | None
    text: str
    eligible: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial": self.candidate.trial,
            "config": self.candidate.config.to_dict(),
            "ratio": self.ratio.to_dict() if self.ratio else None,
            "fidelity": {
                "mean": self.fidelity_mean,
                "low": self.fidelity_low,
                "high": self.fidelity_high,
                "seeds": {str(k): v for k, v in sorted(self.candidate.fidelity.items())},
            },
            "samples_per_second": list(self.candidate.samples_per_second),
            "baseline_samples_per_second": list(self.candidate.baseline_samples_per_second),
            "paired_rounds": self.candidate.paired_rounds,
            "verdict": self.text,
        }


def paired_ratio(candidate: Sequence[float], baseline: Sequence[float]) -> Estimate:
    """The median of per-round ratios candidate/baseline (samples/s), with its order-statistic
    confidence interval; the rounds are paired by position."""
    if not candidate or len(candidate) != len(baseline):
        raise ValueError(
            "paired_ratio needs one baseline value per candidate round. Received: "
            f"{len(candidate)} candidate and {len(baseline)} baseline values"
        )
    if any(b <= 0 for b in baseline):
        raise ValueError(f"baseline samples/s must be > 0. Received: {list(baseline)}")
    return summarize([c / b for c, b in zip(candidate, baseline, strict=True)])


__all__ = ["Candidate", "Verdict", "paired_ratio"]
