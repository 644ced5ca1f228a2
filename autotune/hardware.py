"""What machine and which libraries a result was measured with. No TensorFlow import here."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from functools import lru_cache
from importlib import metadata
from typing import Any

import psutil

LIBRARIES = (
    "tensorflow",
    "keras",
    "jax",
    "jaxlib",
    "numpy",
    "optuna",
    "tensorboard-plugin-profile",
    "xprof",
)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_flags() -> list[str]:
    """The CPU features that change which precision is fast (AMX, AVX-512 FP16/BF16)."""
    wanted = ("amx_bf16", "amx_tile", "avx512_bf16", "avx512_fp16", "avx512f", "avx2")
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    present = set(line.split(":", 1)[1].split())
                    return [flag for flag in wanted if flag in present]
    except OSError:
        pass
    return []


def _gpus() -> list[str]:
    """GPU names from nvidia-smi, or an empty list where there is none."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        listing = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in listing.splitlines() if line.strip()]


@lru_cache(maxsize=1)
def _machine() -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "cpu_features": _cpu_flags(),
        "logical_cores": os.cpu_count() or 1,
        "memory_bytes": psutil.virtual_memory().total,
        "gpus": _gpus(),
        "machine": platform.machine(),
        "system": platform.system(),
    }


def usable_cores() -> int:
    """The logical cores this process (and the trials it starts) may run on: its CPU affinity,
    which a worker's core set narrows (:mod:`autotune.study.placement`)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity on this system
        return os.cpu_count() or 1


def hardware() -> dict[str, Any]:
    """Machine facts: CPU model and features, logical cores, the cores this process may use,
    memory (bytes) and GPUs."""
    return {**_machine(), "usable_cores": usable_cores()}


def fingerprint(facts: dict[str, Any] | None = None) -> str:
    """A short stable hash of the hardware facts that decide which configuration is fastest:
    the usable cores count only where they are fewer than the machine's (a worker's core set),
    so a whole machine keeps the fingerprint it had before core sets existed."""
    facts = hardware() if facts is None else facts
    key = {k: facts[k] for k in ("cpu", "logical_cores", "gpus", "machine")}
    usable = facts.get("usable_cores", facts["logical_cores"])
    if usable != facts["logical_cores"]:
        key["usable_cores"] = usable
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def versions() -> dict[str, str]:
    """Versions of Python and the libraries a measurement depends on ('' when not installed)."""
    found = {"python": sys.version.split()[0]}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = ""
    return found
