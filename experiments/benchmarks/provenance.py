"""Where and how a benchmark ran: the lines every results file entry starts with."""

from __future__ import annotations

import os
import sys

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
