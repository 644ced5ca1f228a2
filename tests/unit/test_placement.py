"""Unit tests for autotune.study.placement: core sets, GPUs, and the host's claims on them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from autotune.exceptions import ConfigError, StudyError
from autotune.study.placement import (
    HostClaim,
    Placement,
    format_cpus,
    local_placements,
    parse_cpus,
    parse_devices,
    split_cores,
    usable_cpus,
)

REPO = Path(__file__).resolve().parents[2]
CORES = os.cpu_count() or 1


@pytest.mark.parametrize(
    ("text", "cores"),
    [("0", (0,)), ("0-1", (0, 1)), ("1,0", (0, 1)), ("0,0-1", (0, 1)), (" 0 ", (0,))],
)
def test_core_sets_parse_as_sorted_cores(text, cores):
    if max(cores) >= CORES:
        pytest.skip(f"needs {max(cores) + 1} cores")
    assert parse_cpus(text) == cores


@pytest.mark.parametrize("text", ["", "a", "0-", "-1", "1-0", "0;1", "0.5"])
def test_a_malformed_core_set_is_refused_naming_the_option(text):
    with pytest.raises(ConfigError) as info:
        parse_cpus(text)

    assert info.value.argument == "cpus"


def test_a_core_the_machine_does_not_have_is_refused():
    with pytest.raises(ConfigError, match=f"names cores \\[{CORES}\\].*it has 0-{CORES - 1}"):
        parse_cpus(str(CORES))


@pytest.mark.parametrize(
    ("cores", "text"), [((0,), "0"), ((0, 1, 2, 5), "0-2,5"), ((3, 4, 7, 8), "3-4,7-8")]
)
def test_core_sets_format_as_ranges(cores, text):
    assert format_cpus(cores) == text


def test_devices_are_distinct_ids():
    assert parse_devices("0,1, 2") == ("0", "1", "2")
    for bad in ("0,0", "0,,1", "gpu 0"):
        with pytest.raises(ConfigError, match="distinct GPU ids"):
            parse_devices(bad)


def test_cores_split_into_disjoint_equal_sets():
    assert split_cores(2, (0, 1, 2, 3, 4)) == [(0, 1), (2, 3)]
    assert split_cores(1, (0, 1)) == [(0, 1)]


def test_more_workers_than_cores_is_refused_with_the_way_out():
    with pytest.raises(ConfigError) as info:
        split_cores(3, (0, 1))

    message = str(info.value)
    assert "3 CPU workers need 3 disjoint core sets" in message and "2 cores (0-1)" in message
    assert "--share-cores" in message and info.value.argument == "workers"


def test_local_placements_give_a_gpu_each_or_a_core_set_each():
    assert local_placements(1, ("0", "1")) == [Placement(device="0"), Placement(device="1")]
    assert local_placements(2, cpus=(0, 1)) == [Placement(cpus=(0,)), Placement(cpus=(1,))]
    shared = local_placements(3, cpus=(0, 1), shared=True)
    assert shared == [Placement(cpus=(0, 1), shared=True)] * 3
    with pytest.raises(ConfigError, match="3 workers and 2 devices"):
        local_placements(3, ("0", "1"))


def test_placements_claim_their_cores_or_their_gpu():
    assert Placement(cpus=(0, 2)).resources() == ["cpu-0", "cpu-2"]
    assert Placement(device="1").resources() == ["gpu-1"]
    assert Placement(shared=True).resources() == []
    assert Placement().resources() == [f"cpu-{c}" for c in usable_cpus()]
    assert Placement(cpus=(0, 1, 2)).describe() == "cores 0-2"
    assert Placement(device="3").describe() == "GPU 3"


def test_a_second_worker_on_the_same_cores_is_refused_naming_the_holder():
    with (
        HostClaim(Placement(cpus=(0,)), "first-study"),
        pytest.raises(StudyError) as info,
        HostClaim(Placement(), "second-study"),
    ):
        pass

    message = str(info.value)
    assert "core 0 is already running trials for pid" in message
    assert "'first-study'" in message and "--cpus" in message


def test_disjoint_core_sets_and_distinct_gpus_run_side_by_side():
    if CORES < 2:
        pytest.skip("needs two cores")
    with HostClaim(Placement(cpus=(0,)), "a"), HostClaim(Placement(cpus=(1,)), "b"):
        pass
    with (
        HostClaim(Placement(device="0"), "a"),
        HostClaim(Placement(device="1"), "b"),
        pytest.raises(StudyError, match="GPU 0 is already running trials"),
        HostClaim(Placement(device="0"), "c"),
    ):
        pass


def test_a_claim_is_released_when_its_block_ends_and_is_reentrant():
    claim = HostClaim(Placement(cpus=(0,)), "a")
    with claim, claim:  # the study holds it around the baseline inside optimize
        pass
    with HostClaim(Placement(cpus=(0,)), "b"):
        pass


def test_shared_placements_claim_nothing():
    with HostClaim(Placement(cpus=(0,)), "a"), HostClaim(Placement(shared=True), "b"):
        pass


def test_a_claim_ends_with_its_process(tmp_path):
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from autotune.study.placement import HostClaim, Placement\n"
            "with HostClaim(Placement(cpus=(0,)), 'held'):\n"
            "    print('held', flush=True); time.sleep(60)",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with (
            pytest.raises(StudyError, match=f"pid {holder.pid}"),
            HostClaim(Placement(cpus=(0,)), "mine"),
        ):
            pass
    finally:
        holder.kill()
        holder.wait()
    with HostClaim(Placement(cpus=(0,)), "mine"):
        pass


def test_applying_a_placement_pins_the_process_and_its_children():
    child = "import os; print(sorted(os.sched_getaffinity(0)), os.environ['CUDA_VISIBLE_DEVICES'])"
    code = (
        "import subprocess, sys; from autotune.study.placement import Placement\n"
        "Placement(cpus=(0,), device='7').apply()\n"
        f"print(subprocess.run([sys.executable, '-c', {child!r}], capture_output=True, "
        "text=True).stdout)"
    )

    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )

    assert completed.stdout.strip() == "[0] 7"
