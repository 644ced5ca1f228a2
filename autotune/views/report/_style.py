"""What the report's figures share: point keys, colours, hover text and small drawing helpers.

A point's key ("baseline" or "trial:<number>") is its Plotly customdata, so the dashboard can map
a click back to a trial. Throughput in hover text is in samples/s. No Plotly here.
"""

from __future__ import annotations

import html
import re
from typing import Any

from autotune.float32_layers import layers_text
from autotune.lr_rules import rate_text
from autotune.measure import format_throughput
from autotune.store.records import StudyRecords, TrialRow

#: customdata key of the baseline's point; trials are "trial:<number>".
BASELINE_POINT = "baseline"

_COLORS = {
    "baseline": "#222222",
    "pareto": "#1f77b4",
    "dominated": "#9aa5b1",
    "infeasible": "#d62728",
    "pruned": "#ff7f0e",
    "tolerance": "#d62728",
    "chosen": "#2ca02c",
}


def point_key(number: int | None) -> str:
    """The customdata of a figure point: "baseline" or "trial:<number>"."""
    return BASELINE_POINT if number is None else f"trial:{number}"


def parse_point_key(key: object) -> int | None:
    """The trial number of a point key; None for the baseline. ValueError for anything else."""
    if key == BASELINE_POINT:
        return None
    if isinstance(key, str) and key.startswith("trial:") and key[6:].isdigit():
        return int(key[6:])
    raise ValueError(f"a point key is 'baseline' or 'trial:<number>'. Received: {key!r}")


def _config_lines(records: StudyRecords, row: TrialRow | None) -> list[str]:
    run = records.baseline if row is None else row
    lines = [f"{k} = {v}" for k, v in (run.config.to_dict().items() if run.config else ())]
    if run.learning_rate is not None:
        lines.append(f"learning_rate = {rate_text(run.learning_rate, run.effective)}")
    if (kept := layers_text(run.effective)) is not None:
        lines.append(f"float32 layers = {kept}")
    return lines


def _hover(records: StudyRecords, row: TrialRow | None) -> str:
    """Everything about a point, one fact a line (joined with <br> for Plotly)."""
    if row is None:
        lines = [
            "<b>baseline</b> (float32, no XLA)",
            format_throughput(records.baseline.throughput),
        ]
        lines.append("fidelity 0 (the reference curve)")
    else:
        lines = [f"<b>trial {row.number}</b> ({row.state})", format_throughput(row.throughput)]
        if row.fidelity is not None:
            lines.append(f"fidelity {row.fidelity:.3f} (tolerance {records.tolerance:g})")
        if row.reason:
            lines.append(html.escape(_shorten(row.reason, 90)))
        if row.warm_from is not None:
            lines.append(html.escape(_shorten(f"warm start: {row.warm_from[1]}", 90)))
    memory = (records.baseline if row is None else row).peak_memory_mib
    if records.has_memory and memory is not None:
        lines.append(f"peak memory {memory:,.0f} MiB")
    return "<br>".join([*lines, *_config_lines(records, row)])


def _shorten(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def trace_uid(text: str) -> str:
    """A Plotly trace uid from ``text``: plotly.js builds CSS selectors from uids when it
    replaces a trace, so anything but letters, digits, '-' and '_' becomes '-'."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", text)


def _empty_note(figure: Any, text: str) -> None:
    figure.add_annotation(
        text=text, xref="paper", yref="paper", x=0.5, y=0.5, showarrow=False, font={"size": 14}
    )
