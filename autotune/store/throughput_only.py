"""The stored mark of a throughput-only study, and reading it back.

A study whose baseline curve does not move beyond its seeds' spread
(:mod:`autotune.analysis.curve_signal`) cannot check fidelity: it stops before searching unless
the user accepts a throughput-only study. An accepted one stores, under
:data:`THROUGHPUT_ONLY_KEY`, why its fidelity check cannot see (a string: the curve's movement
and spread); every view marks such a study, and its fidelity figures are no check of what the
model learns. No TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Study attribute: why the fidelity check of an accepted throughput-only study cannot see.
THROUGHPUT_ONLY_KEY = "autotune_throughput_only"


def throughput_only_reason(user_attrs: Mapping[str, Any]) -> str | None:
    """Why the study is throughput only, or None for a study whose fidelity check can see (or
    one stored before the check existed)."""
    value = user_attrs.get(THROUGHPUT_ONLY_KEY)
    return value if isinstance(value, str) and value else None


def throughput_only_text(reason: str) -> str:
    """The mark every view shows for a throughput-only study."""
    return (
        f"throughput only: the fidelity check cannot see ({reason}); fidelity figures here do "
        "not check what the model learns"
    )


__all__ = ["THROUGHPUT_ONLY_KEY", "throughput_only_reason", "throughput_only_text"]
