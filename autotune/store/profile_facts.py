"""What a stored run's profile, input ablation and recompilation check say, as plain facts.

A trial row and the baseline carry these :class:`ProfileFacts`: the step time split into parts
(milliseconds per step), the input verdict with its source, the XProf profile summary, where the
profile came from (the run itself or the study's Pareto re-run) and whether XLA recompiled while
timed. Built from stored dicts only: no TensorFlow, no Optuna.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from autotune.analysis.profile import BREAKDOWN_COMPONENTS, input_verdict
from autotune.config import TrialConfig
from autotune.measure import Estimate, InputAblation

#: Components of a step-time breakdown, in drawing order (milliseconds per step). A profiled
#: run has XProf's input, host_compute, device_compute, compile and other; a run with only an
#: input ablation has input and compute.
STEP_BREAKDOWN_COMPONENTS = (
    "input",
    "host_compute",
    "device_compute",
    "compute",
    "compile",
    "other",
)


#: Where a run's profile came from: its own measurement or a profiling re-run.
PROFILE_SOURCES = ("trial", "rerun")


@dataclass(frozen=True, kw_only=True)
class ProfileFacts:
    """What a run's profile, input ablation and recompilation check say (see
    :func:`profile_fields`); the baseline and every trial row carry them.

    Attributes:
        breakdown: step-time breakdown in milliseconds per :data:`STEP_BREAKDOWN_COMPONENTS`
            key (see :func:`step_breakdown`): XProf's proportions scaled to the timed step time
            when the run was profiled, else the input ablation's input and compute; None when
            neither was measured.
        verdict: the input verdict (:meth:`autotune.analysis.profile.Verdict.to_dict`: verdict,
            input_fraction, source "xprof" or "ablation", why); None when neither was measured.
        profile: the profile as XProf read it
        (:meth:`autotune.analysis.profile.ProfileSummary.to_dict`),
            from the run or its Pareto re-run; None when not profiled.
        input_ablation: the input ablation (:meth:`autotune.measure.InputAblation.to_dict`).
        profile_source: "trial" when the run profiled itself, "rerun" when the profile came
            from the study's Pareto re-run (``autotune_profile:<n>``), None without a profile.
        profile_log_dir: the profile's TensorBoard folder (``tensorboard --logdir`` shows it).
        profile_error: why a profile that was asked for is missing.
        recompilation: XLA recompilation seen in the timed windows
            (:meth:`autotune.analysis.recompilation.Recompilation.to_dict`, with "flagged" and
            "message"); None when not checked.
    """

    breakdown: dict[str, float] | None = None
    verdict: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None
    input_ablation: dict[str, Any] | None = None
    profile_source: str | None = None
    profile_log_dir: str | None = None
    profile_error: str | None = None
    recompilation: dict[str, Any] | None = None

    @property
    def verdict_text(self) -> str:
        """'highly input-bound 37% (ablation; xprof 3%)', or "" when not measured."""
        return verdict_text(self.verdict, self.profile, self.input_ablation)

    @property
    def recompiled(self) -> bool:
        """Whether XLA recompiled during the timed windows."""
        return bool(self.recompilation and self.recompilation.get("flagged"))


def step_ms_of(config: TrialConfig | None, throughput: Estimate | None) -> float | None:
    if config is None or throughput is None or throughput.median <= 0:
        return None
    return 1e3 * config.batch_size / throughput.median


def step_breakdown(
    result: Mapping[str, Any], config: TrialConfig | None
) -> dict[str, float] | None:
    """A stored result's step time split into parts (milliseconds per step); None when it has
    neither a profile nor an input ablation.

    With a profile, XProf's :data:`autotune.analysis.profile.BREAKDOWN_COMPONENTS` (input,
    host_compute, device_compute, compile, other) scaled so they sum to the timed step time (batch
    size / median throughput): the profiler slows the profiled window down (by 20-50% on the digits
    CNN on a CPU), so only its proportions are kept. Without a throughput they stay as
    profiled. Without a profile, the input ablation's input and compute.
    """
    profile = result.get("profile")
    breakdown: Mapping[str, Any] = (profile or {}).get("breakdown_ms") or {}
    parts = {k: float(breakdown.get(k) or 0.0) for k in BREAKDOWN_COMPONENTS}
    total = sum(parts.values())
    if total > 0:
        step_ms = step_ms_of(config, estimate_of(result.get("throughput")))
        scale = 1.0 if step_ms is None else step_ms / total
        return {k: v * scale for k, v in parts.items()}
    ablation = result.get("input_ablation")
    if not ablation or config is None:
        return None
    return InputAblation.from_dict(dict(ablation)).step_milliseconds(config.batch_size)


def breakdown_source(breakdown: Mapping[str, float] | None) -> str | None:
    """Where a :func:`step_breakdown` came from: "xprof", "ablation" or None."""
    if not breakdown:
        return None
    return "ablation" if "compute" in breakdown else "xprof"


def estimate_of(data: Any) -> Estimate | None:
    return Estimate(**data) if isinstance(data, dict) else None


def merge_profile_rerun(
    result: Mapping[str, Any], rerun: Mapping[str, Any] | None
) -> tuple[dict[str, Any], str | None]:
    """A stored result with its Pareto re-run (``autotune_profile:<n>``) merged in, and where
    its profile came from ("trial", "rerun" or None).

    A result with its own profile keeps it. Otherwise it takes the re-run's profile (or, when
    the re-run has none, its profile_error), and its input_ablation and recompilation where the
    result has none of its own. Throughput, fidelity and everything else stay the trial's.
    """
    merged = dict(result)
    if merged.get("profile"):
        return merged, "trial"
    if not rerun:
        return merged, None
    source = None
    if rerun.get("profile"):
        merged["profile"] = rerun["profile"]
        merged["profile_error"] = None
        source = "rerun"
    elif rerun.get("profile_error") and not merged.get("profile_error"):
        merged["profile_error"] = rerun["profile_error"]
    for part in ("input_ablation", "recompilation"):
        if not merged.get(part) and rerun.get(part):
            merged[part] = rerun[part]
    return merged, source


def verdict_text(
    verdict: Mapping[str, Any] | None,
    xprof: Mapping[str, Any] | None,
    ablation: Mapping[str, Any] | None,
) -> str:
    """'highly input-bound 37% (ablation; xprof 3%)': the verdict, its input share and source,
    then the other source's share when both were measured; "" without a verdict."""
    if not verdict:
        return ""
    source = str(verdict.get("source", ""))
    other = ablation if source == "xprof" else xprof
    other_name = "ablation" if source == "xprof" else "xprof"
    beside = ""
    if other and isinstance(other.get("input_fraction"), (int, float)):
        beside = f"; {other_name} {float(other['input_fraction']):.0%}"
    return f"{verdict['verdict']} {float(verdict['input_fraction']):.0%} ({source}{beside})"


def profile_fields(
    result: Mapping[str, Any], config: TrialConfig | None, rerun: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The :class:`ProfileFacts` fields of a :class:`TrialRow` or :class:`BaselineRecord` from a
    stored result and its Pareto re-run: breakdown, verdict, profile, input_ablation,
    profile_source, profile_log_dir, profile_error and recompilation."""
    merged, source = merge_profile_rerun(result, rerun)
    profile = merged.get("profile") or None
    ablation = merged.get("input_ablation") or None
    verdict = input_verdict(profile, ablation)
    log_dir = None
    if profile:
        log_dir = profile.get("log_dir") or (rerun or {}).get("log_dir")
    return {
        "breakdown": step_breakdown(merged, config),
        "verdict": verdict.to_dict() if verdict else None,
        "profile": dict(profile) if profile else None,
        "input_ablation": dict(ablation) if ablation else None,
        "profile_source": source,
        "profile_log_dir": str(log_dir) if log_dir else None,
        "profile_error": merged.get("profile_error") or None,
        "recompilation": dict(merged["recompilation"]) if merged.get("recompilation") else None,
    }


def rerun_for(
    number: int, duplicate_of: int | None, reruns: Mapping[int, Mapping[str, Any]] | None
) -> Mapping[str, Any] | None:
    """Trial ``number``'s Pareto re-run in ``reruns``, else that of the trial it duplicates
    (``duplicate_of``)."""
    if not reruns:
        return None
    rerun = reruns.get(number)
    if rerun is None and duplicate_of is not None:
        rerun = reruns.get(duplicate_of)
    return rerun


__all__ = [
    "PROFILE_SOURCES",
    "STEP_BREAKDOWN_COMPONENTS",
    "ProfileFacts",
    "breakdown_source",
    "estimate_of",
    "merge_profile_rerun",
    "profile_fields",
    "rerun_for",
    "step_breakdown",
    "step_ms_of",
    "verdict_text",
]
