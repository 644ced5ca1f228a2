"""The practitioner's checklist configuration: what a careful engineer sets without measuring.

The precision policy the hardware has fast units for (``mixed_bfloat16`` on a CPU with AMX or
AVX-512 BF16, ``mixed_float16`` on a GPU, float32 otherwise), XLA on, the batch size doubled and
rounded to a multiple of 16, and tf.data's AUTOTUNE for prefetch and parallel calls. A study's
answer is worth what it adds over this. No TensorFlow here: it reads hardware facts
(:func:`autotune.hardware.hardware`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from autotune.config import AUTOTUNE, Precision, TrialConfig

#: CPU features that make bfloat16 matrix maths fast (Linux /proc/cpuinfo flag names).
BF16_CPU_FEATURES = ("amx_bf16", "avx512_bf16")


def checklist_precision(hardware: Mapping[str, Any]) -> Precision:
    """mixed_float16 with a GPU, mixed_bfloat16 on a CPU with fast bfloat16, else float32."""
    if hardware.get("gpus"):
        return "mixed_float16"
    features = set(hardware.get("cpu_features") or ())
    if features & set(BF16_CPU_FEATURES):
        return "mixed_bfloat16"
    return "float32"


def checklist_config(base_batch_size: int, hardware: Mapping[str, Any]) -> TrialConfig:
    """The checklist configuration for an experiment whose baseline batch size is
    ``base_batch_size``, on the machine ``hardware`` describes."""
    return TrialConfig(
        batch_size=max(16, math.floor(2 * base_batch_size / 16 + 0.5) * 16),  # half up
        precision=checklist_precision(hardware),
        jit_compile=True,
        prefetch=AUTOTUNE,
        num_parallel_calls=AUTOTUNE,
    )


__all__ = ["BF16_CPU_FEATURES", "checklist_config", "checklist_precision"]
