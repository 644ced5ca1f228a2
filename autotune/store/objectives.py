"""The objectives a study can optimise: throughput and fidelity always, peak memory on request.

A study scores every trial on throughput (samples/s, maximised) and fidelity (noise-floor
units, minimised). ``memory`` adds a third objective: the trial's peak memory in MiB (minimised),
the peak device memory on a GPU, else the peak resident memory of the trial process (both
measured by every trial; :class:`autotune.store.result.RunResult`). Memory never weighs against
speed in the recommendation: it enters as a limit (``max_memory_mib``) that a recommended
configuration must stay within. A study's objectives are fixed when it is made (Optuna stores
its directions). No TensorFlow here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from autotune.exceptions import ConfigError

THROUGHPUT, FIDELITY, MEMORY = "throughput", "fidelity", "memory"
#: Every objective and its direction, in the order a study stores them.
DIRECTION_OF: dict[str, Literal["maximize", "minimize"]] = {
    THROUGHPUT: "maximize",
    FIDELITY: "minimize",
    MEMORY: "minimize",
}
#: The objectives of a study made without ``objectives``.
DEFAULT_OBJECTIVES = (THROUGHPUT, FIDELITY)
MIB = 2**20


def parse_objectives(
    value: str | Sequence[str] | None, argument: str = "objectives"
) -> tuple[str, ...] | None:
    """``value`` ("throughput,fidelity,memory" or a sequence of names) as the study's objective
    names in their stored order; None for None (the study's own, or the default). Raises
    ConfigError naming ``argument`` for an unknown, repeated or missing objective."""
    if value is None:
        return None
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else list(value)
    unknown = [n for n in names if n not in DIRECTION_OF]
    problem = ""
    if unknown:
        problem = f"unknown objective(s) {', '.join(map(repr, unknown))}"
    elif len(set(names)) != len(names):
        problem = "an objective is repeated"
    elif not {THROUGHPUT, FIDELITY} <= set(names):
        problem = "throughput and fidelity are always objectives"
    if problem:
        raise ConfigError(
            f"{problem}; choose 'throughput,fidelity' or 'throughput,fidelity,memory'. "
            f"Received: {value!r}",
            argument=argument,
        )
    return tuple(n for n in DIRECTION_OF if n in names)


def directions(objectives: Sequence[str]) -> list[Literal["maximize", "minimize"]]:
    """Optuna's directions for ``objectives``, in their order."""
    return [DIRECTION_OF[name] for name in objectives]


def described(objectives: Sequence[str]) -> list[str]:
    """``name:direction`` for each objective (what a study's identity records)."""
    return [f"{name}:{DIRECTION_OF[name]}" for name in objectives]


def peak_memory_bytes(host_bytes: int | None, device_bytes: int | None) -> int | None:
    """The memory objective's measurement (bytes): the peak device memory where a GPU was
    used, else the peak resident memory of the trial process; None when neither is known
    (a trial stored before memory was recorded reads 0 on the host)."""
    if device_bytes is not None:
        return int(device_bytes)
    return int(host_bytes) if host_bytes else None


def check_memory_limit(limit_mib: float | None, argument: str = "max_memory_mib") -> float | None:
    """``limit_mib`` (MiB) when it is a finite number > 0, or None; else ConfigError naming
    ``argument``."""
    if limit_mib is None:
        return None
    if isinstance(limit_mib, bool) or not isinstance(limit_mib, int | float):
        raise ConfigError(
            f"must be a number of MiB > 0. Received: {limit_mib!r}", argument=argument
        )
    if not 0 < float(limit_mib) < float("inf"):
        raise ConfigError(
            f"must be a number of MiB > 0. Received: {limit_mib!r}", argument=argument
        )
    return float(limit_mib)


__all__ = [
    "DEFAULT_OBJECTIVES",
    "DIRECTION_OF",
    "FIDELITY",
    "MEMORY",
    "MIB",
    "THROUGHPUT",
    "check_memory_limit",
    "described",
    "directions",
    "parse_objectives",
    "peak_memory_bytes",
]
