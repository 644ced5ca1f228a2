"""The baseline's drift during the search, as ``autotune status`` and the report show it: the
latest anchor (:mod:`autotune.store.anchors`) against the start's baseline, whether the change is
beyond the noise (their 95% intervals do not overlap), and a warning when comparisons span such
a change. Throughput in samples/s. Nothing is shown for a study without anchors."""

from __future__ import annotations

from autotune.measure import Estimate, format_throughput
from autotune.store.anchors import Anchor
from autotune.store.records import StudyRecords


def drift_facts(records: StudyRecords) -> list[tuple[str, str]]:
    """(label, text) pairs: the drift of the baseline (``baseline drift``) and, when some
    anchor differs from the start's baseline beyond the noise, a ``warning``; none without
    anchors."""
    anchors = records.anchors
    if not anchors.runs or anchors.baseline is None:
        return []
    drift = anchors.drift()
    failed = [a for a in anchors.runs if a.ended is not None and a.throughput is None]
    if drift is None:
        why = f" (last: {failed[-1].error})" if failed else " (one is running)"
        return [("baseline drift", f"{len(anchors.runs)} anchor(s) run, none measured{why}")]
    noise = "beyond the noise" if drift.beyond_noise else "within the noise"
    text = (
        f"the baseline now runs {format_throughput(drift.latest)} (latest of {drift.anchors} "
        f"anchor(s)), {drift.ratio:.2f}x the start's {format_throughput(drift.baseline)}: "
        f"{noise}; speed-ups are against the anchor nearest each trial"
    )
    if failed:
        text += f"; {len(failed)} anchor(s) failed"
    facts = [("baseline drift", text)]
    beyond = [
        a.throughput.median / anchors.baseline.median
        for a in anchors.measured
        if a.throughput is not None
        and (a.throughput.low > anchors.baseline.high or a.throughput.high < anchors.baseline.low)
    ]
    if beyond:
        ratios = [1.0, *beyond]
        facts.append(
            (
                "warning",
                f"the baseline changed beyond the noise during the search ({min(ratios):.2f}x-"
                f"{max(ratios):.2f}x the start's): raw samples/s of trials measured at different "
                "times are not comparable; compare their speed-ups (each against its nearest "
                "anchor) or the confirmation, which measures candidates and baseline together",
            )
        )
    return facts


def anchor_line(anchor: Anchor, baseline: Estimate | None) -> str:
    """One finished anchor as ``autotune run`` prints it: its samples/s against the start's
    baseline, within or beyond the noise, or why it failed."""
    if anchor.throughput is None:
        return f"anchor failed: {anchor.error or 'no throughput measured'}; the previous stays"
    text = f"anchor: the baseline runs {format_throughput(anchor.throughput)}"
    if baseline is None or not baseline.median > 0:
        return text
    measured = anchor.throughput
    beyond = measured.low > baseline.high or measured.high < baseline.low
    return (
        f"{text}, {measured.median / baseline.median:.2f}x the start's "
        f"{baseline.median:,.0f}: {'beyond' if beyond else 'within'} the noise"
    )


def drift_lines(records: StudyRecords) -> list[str]:
    """:func:`drift_facts` as lines of text ("baseline drift: ...", "warning: ...")."""
    return [f"{label}: {text}" for label, text in drift_facts(records)]


__all__ = ["anchor_line", "drift_facts", "drift_lines"]
