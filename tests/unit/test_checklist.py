"""autotune.study.checklist: the practitioner's checklist configuration for the hardware."""

from __future__ import annotations

import pytest

from autotune.config import AUTOTUNE, TrialConfig
from autotune.study.checklist import checklist_config, checklist_precision

AMX_CPU = {"cpu_features": ["amx_bf16", "avx512f"], "gpus": []}
PLAIN_CPU = {"cpu_features": ["avx2"], "gpus": []}
GPU = {"cpu_features": ["avx2"], "gpus": ["NVIDIA H200, 143771 MiB"]}


@pytest.mark.parametrize(
    ("hardware", "precision"),
    [(AMX_CPU, "mixed_bfloat16"), (PLAIN_CPU, "float32"), (GPU, "mixed_float16"), ({}, "float32")],
)
def test_the_precision_is_the_one_the_hardware_has_fast_units_for(hardware, precision):
    assert checklist_precision(hardware) == precision


@pytest.mark.parametrize(("base", "batch"), [(32, 64), (64, 128), (24, 48), (8, 16), (100, 208)])
def test_the_batch_is_doubled_and_rounded_to_16_with_xla_and_autotune(base, batch):
    assert checklist_config(base, AMX_CPU) == TrialConfig(
        batch_size=batch,
        precision="mixed_bfloat16",
        jit_compile=True,
        prefetch=AUTOTUNE,
        num_parallel_calls=AUTOTUNE,
    )
