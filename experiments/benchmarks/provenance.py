"""Where and how a benchmark ran: the lines every results file entry starts with."""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

from autotune.hardware import hardware, versions


def provenance_lines() -> list[str]:
    """Markdown bullet lines: machine, library versions, the command, the load average."""
    facts = hardware()
    return [
        f"- machine: {facts['cpu']}, {facts['logical_cores']} logical cores, "
        f"{facts['memory_bytes'] / 2**30:.0f} GiB, GPUs: {facts['gpus'] or 'none'}",
        f"- versions: {versions()}",
        f"- command: `python {' '.join(sys.argv)}`",
        f"- load average at the end (1/5/15 min): {os.getloadavg()}",
    ]


def append_results(output: Path, sections: list[str]) -> None:
    """Prints a results entry (a dated heading, :func:`provenance_lines`, then ``sections``'
    lines) and appends it to the markdown file ``output``."""
    lines = [f"## {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC", ""]
    lines += [*provenance_lines(), "", *sections]
    print("\n".join(lines))
    with output.open("a", encoding="utf-8") as results:
        results.write("\n".join(lines) + "\n")
    print(f"appended to {output}", file=sys.stderr)
