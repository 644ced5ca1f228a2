"""The page header: the study's title and its facts (hardware, versions, tolerance in
noise-floor units, baseline throughput in samples/s, trial counts, the recommendation)."""

from __future__ import annotations

from typing import Any, NamedTuple

from autotune.measure import format_throughput
from autotune.store.records import StudyRecords
from autotune.store.throughput_only import throughput_only_text
from autotune.views.drift import drift_facts
from autotune.views.report.recipes import recommendation_info


class HeaderInfo(NamedTuple):
    """The page's title and its facts (label, value) in order."""

    title: str
    facts: list[tuple[str, str]]


def _hardware_text(hardware: dict[str, Any]) -> str:
    if not hardware:
        return "unknown"
    parts = [str(hardware.get("cpu", "?"))]
    if hardware.get("logical_cores"):
        parts.append(f"{hardware['logical_cores']} logical cores")
    if hardware.get("memory_bytes"):
        parts.append(f"{hardware['memory_bytes'] / 2**30:.0f} GiB memory")
    gpus = hardware.get("gpus") or []
    parts.append("GPUs: " + ", ".join(gpus) if gpus else "no GPU")
    return "; ".join(parts)


def header_info(records: StudyRecords) -> HeaderInfo:
    """Study, experiment, hardware, versions, tolerance, baseline throughput and trial counts."""
    baseline = records.baseline
    floor = baseline.noise_floor
    versions = ", ".join(f"{k} {v}" for k, v in sorted(records.versions.items()) if v)
    counts = records.counts()
    recommendation = recommendation_info(records, records.tolerance).text
    facts = [
        ("study", records.study_name),
        ("storage", records.storage),
        ("experiment", f"{records.experiment} ({records.experiment_reference})"),
        ("search space", str((records.info.get("space") or {}).get("name", "?"))),
        ("hardware", _hardware_text(records.hardware)),
        ("versions", versions or "unknown"),
        ("fidelity tolerance", f"{records.tolerance:g} (1.0 = worse by as much as a seed re-run)"),
        (
            "baseline",
            (baseline.config.describe() if baseline.config else "not run yet")
            + f": {format_throughput(baseline.throughput)}",
        ),
        (
            "seed noise floor",
            f"{floor.describe()}; seeds {sorted(baseline.seed_curves)}"
            if floor
            else "not measured yet",
        ),
        (
            "trials",
            ", ".join(f"{n} {state}" for state, n in sorted(counts.items())) or "none yet",
        ),
        ("recommendation", recommendation),
        (
            "confirmation",
            records.confirmation.summary(records.tolerance)
            if records.confirmation is not None
            else "not confirmed yet ('autotune run' confirms the top candidates at its end)",
        ),
        ("study created", str(records.info.get("created", "?"))),
        ("report made", records.read_at),
    ]
    facts += drift_facts(records)  # after the facts the drift qualifies
    if records.warm_start is not None:
        facts.append(("warm start", records.warm_start.summary()))
    if records.throughput_only is not None:
        facts.append(("warning", throughput_only_text(records.throughput_only)))
    if records.mismatches_allowed:
        facts.append(
            ("warning", f"resumed {len(records.mismatches_allowed)} time(s) with --allow-mismatch")
        )
    return HeaderInfo(f"autotune report: {records.study_name}", facts)
