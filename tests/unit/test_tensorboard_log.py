"""The study as TensorBoard runs (autotune.study.tensorboard_log), read back with TensorBoard's own
readers: the event multiplexer and the HParams plugin's request handlers (in a fresh interpreter,
tests.support.tensorboard_reader), and the raw records here. No TensorFlow anywhere."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tensorboard.compat.proto import event_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata

from autotune.config import TrialConfig
from autotune.space import Choice, IntRange, SearchSpace
from autotune.store.result import CurvePoint
from autotune.study.tensorboard_log import (
    FIDELITY_TAG,
    THROUGHPUT_TAG,
    VALIDATION_LOSS_TAG,
    write_baseline,
    write_study_config,
    write_trial,
)
from tests.support.tensorboard_reader import read_in_fresh_interpreter

ROOT = Path(__file__).resolve().parents[2]
SPACE = SearchSpace(
    "fake",
    {
        "precision": Choice(("float32", "mixed_bfloat16")),
        "jit_compile": Choice((False, True)),
        "batch_size": IntRange(64, 256, 16),
        "prefetch": IntRange(1, 4),
        "num_parallel_calls": Choice(("autotune", 1, 4)),
    },
)
BASELINE = TrialConfig.baseline(32)  # outside the space's batch-size range on purpose
TRIALS = {
    0: TrialConfig(64, "float32", jit_compile=True, prefetch=2),
    1: TrialConfig(128, "mixed_bfloat16", num_parallel_calls=4),
    2: TrialConfig(256, "mixed_bfloat16", jit_compile=True, prefetch=4, num_parallel_calls=1),
}
THROUGHPUT = {0: 1500.0, 1: 2500.0, 2: 4000.0}
FIDELITY = {0: 0.25, 1: 0.75, 2: 3.5}
SAMPLES = [500, 1000, 1500, 2000]


def curve(offset: float) -> list[tuple[int, float]]:
    return [(samples, 2.0 - samples / 1000 + offset) for samples in SAMPLES]


def write_fake_study(root: Path) -> None:
    """The study config, trials 0-2 and baseline seeds 0-2 (throughput on seed 0 only)."""
    write_study_config(root, SPACE, BASELINE)
    for number, config in TRIALS.items():
        points = curve(0.1 * number)
        write_trial(
            root / f"trial_{number}", number, config, THROUGHPUT[number], FIDELITY[number], points
        )
    for seed in (0, 1, 2):
        points = [CurvePoint(s, v) for s, v in curve(0.01 * seed)]
        throughput = 1000.0 if seed == 0 else None
        write_baseline(root / f"baseline_seed_{seed}", seed, BASELINE, throughput, points)


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What TensorBoard reads from the fake study (tests.support.tensorboard_reader)."""
    root = tmp_path_factory.mktemp("autotune_logs") / "study-0123456789ab"
    write_fake_study(root)
    return read_in_fresh_interpreter(root)


def groups(seen: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {group["name"]: group for group in seen["session_groups"].get("sessionGroups", [])}


def metric_values(group: dict[str, Any]) -> dict[str, float]:
    # MessageToDict leaves out a value of 0.0 (proto3 default)
    return {m["name"]["tag"]: m.get("value", 0.0) for m in group.get("metricValues", [])}


def events(path: Path) -> list[Any]:
    """The Event protos of one event file (TFRecord framing: length, crc, data, crc)."""
    data = path.read_bytes()
    found, offset = [], 0
    while offset < len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        found.append(event_pb2.Event.FromString(data[offset + 12 : offset + 12 + length]))
        offset += 12 + length + 4
    return found


# --------------------------------------------------------------------------------------------
# What TensorBoard shows
# --------------------------------------------------------------------------------------------


def test_each_trial_and_baseline_seed_is_a_run_named_like_its_profile_folder(
    seen: dict[str, Any],
) -> None:
    assert not seen["tensorflow_loaded"]
    assert set(seen["scalars"]) == {
        "trial_0",
        "trial_1",
        "trial_2",
        "baseline_seed_0",
        "baseline_seed_1",
        "baseline_seed_2",
    }


def test_the_curves_are_scalars_with_samples_seen_as_steps(seen: dict[str, Any]) -> None:
    for number in TRIALS:
        points = seen["scalars"][f"trial_{number}"][VALIDATION_LOSS_TAG]
        assert [step for step, _ in points] == SAMPLES
        assert [value for _, value in points] == pytest.approx(
            [v for _, v in curve(0.1 * number)], rel=1e-6
        )
    seed_2 = seen["scalars"]["baseline_seed_2"]
    assert [s for s, _ in seed_2[VALIDATION_LOSS_TAG]] == SAMPLES
    assert seed_2[VALIDATION_LOSS_TAG][0][1] == pytest.approx(1.52, rel=1e-6)
    assert seen["scalars"]["trial_2"][THROUGHPUT_TAG] == [[0, 4000.0]]
    assert seen["scalars"]["trial_2"][FIDELITY_TAG] == [[0, 3.5]]
    assert THROUGHPUT_TAG in seen["scalars"]["baseline_seed_0"]
    assert THROUGHPUT_TAG not in seed_2 and FIDELITY_TAG not in seed_2


def test_the_experiment_lists_the_searched_settings_with_their_domains(
    seen: dict[str, Any],
) -> None:
    infos = {info["name"]: info for info in seen["experiment"]["hparamInfos"]}

    assert set(infos) == {*SPACE.parameters, "role"}
    assert infos["precision"]["domainDiscrete"] == ["float32", "mixed_bfloat16"]
    assert infos["jit_compile"]["domainDiscrete"] == [False, True]
    assert infos["jit_compile"]["type"] == "DATA_TYPE_BOOL"
    # widened to hold the baseline's batch size 32, so its rows pass the default filters
    assert infos["batch_size"]["domainInterval"] == {"minValue": 32.0, "maxValue": 256.0}
    assert infos["batch_size"]["type"] == "DATA_TYPE_FLOAT64"
    # tunable settings are strings: 'autotune' and counts share one hparam
    assert infos["prefetch"]["domainDiscrete"] == ["1", "2", "3", "4", "autotune"]
    assert infos["num_parallel_calls"]["domainDiscrete"] == ["1", "4", "autotune"]
    assert infos["role"]["domainDiscrete"] == ["baseline", "trial"]
    metrics = [info["name"]["tag"] for info in seen["experiment"]["metricInfos"]]
    assert metrics == [THROUGHPUT_TAG, FIDELITY_TAG, VALIDATION_LOSS_TAG]


def test_the_hparams_plugin_lists_every_run_as_a_session_with_its_values_and_metrics(
    seen: dict[str, Any],
) -> None:
    found = groups(seen)

    assert seen["session_groups"]["totalSize"] == 6
    assert set(found) == set(seen["scalars"])
    for name, group in found.items():
        assert [session["name"] for session in group["sessions"]] == [name]
    trial_1 = found["trial_1"]
    assert trial_1["hparams"] == {
        "batch_size": 128.0,
        "precision": "mixed_bfloat16",
        "jit_compile": False,
        "prefetch": "autotune",
        "num_parallel_calls": "4",
        "shuffle_buffer": 1024.0,
        "steps_per_execution": 1.0,
        "intra_op_threads": 0.0,
        "inter_op_threads": 0.0,
        "private_threadpool_size": 0.0,
        "backend": "tensorflow",
        "lr_rule": "experiment",
        "float32_layers": "none",
        "role": "trial",
    }
    assert metric_values(trial_1) == pytest.approx(
        {THROUGHPUT_TAG: 2500.0, FIDELITY_TAG: 0.75, VALIDATION_LOSS_TAG: 0.1}, rel=1e-6
    )
    baseline = found["baseline_seed_0"]
    assert baseline["hparams"]["role"] == "baseline"
    assert baseline["hparams"]["batch_size"] == 32.0
    assert metric_values(baseline) == pytest.approx(
        {THROUGHPUT_TAG: 1000.0, VALIDATION_LOSS_TAG: 0.0}, abs=1e-6
    )
    assert set(metric_values(found["baseline_seed_1"])) == {VALIDATION_LOSS_TAG}


# --------------------------------------------------------------------------------------------
# The files
# --------------------------------------------------------------------------------------------


def test_writing_again_replaces_a_runs_file_instead_of_adding_one(tmp_path: Path) -> None:
    write_study_config(tmp_path, SPACE, BASELINE)
    write_study_config(tmp_path, SPACE, BASELINE)  # a resumed study
    folder = tmp_path / "trial_3"
    write_trial(folder, 3, TRIALS[0], 10.0, None, [(100, 1.0)])
    write_trial(folder, 3, TRIALS[0], 20.0, 0.5, [(100, 1.0), (200, 0.5)])

    study_files = [p.name for p in tmp_path.iterdir() if p.is_file()]
    trial_files = sorted(p.name for p in folder.iterdir())
    assert study_files == ["events.out.tfevents.autotune.study"]
    assert trial_files == ["events.out.tfevents.autotune.trial"]
    written = events(folder / trial_files[0])
    assert written[0].file_version == "brain.Event:2"
    values = {(v.tag, e.step): v.tensor.float_val[0] for e in written[2:] for v in e.summary.value}
    assert values == {
        (VALIDATION_LOSS_TAG, 100): 1.0,
        (VALIDATION_LOSS_TAG, 200): 0.5,
        (THROUGHPUT_TAG, 0): 20.0,
        (FIDELITY_TAG, 0): 0.5,
    }
    start = written[1].summary.value[0]
    assert start.tag == hparams_metadata.SESSION_START_INFO_TAG
    info = hparams_metadata.parse_session_start_info_plugin_data(start.metadata.plugin_data.content)
    assert info.group_name == "trial_3"
    assert info.hparams["prefetch"].string_value == "2"


def test_a_large_tunable_range_gets_no_domain(tmp_path: Path) -> None:
    wide = SearchSpace("wide", {"prefetch": IntRange(1, 1000)})
    write_study_config(tmp_path, wide, BASELINE)

    written = events(tmp_path / "events.out.tfevents.autotune.study")
    experiment = hparams_metadata.parse_experiment_plugin_data(
        written[1].summary.value[0].metadata.plugin_data.content
    )
    prefetch = next(info for info in experiment.hparam_infos if info.name == "prefetch")
    assert not prefetch.HasField("domain_discrete") and not prefetch.HasField("domain_interval")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"throughput": float("nan")}, "throughput_samples_per_second must be a finite number > 0"),
        ({"throughput": 0.0}, "throughput_samples_per_second must be a finite number > 0"),
        ({"fidelity": float("inf")}, "fidelity must be a finite number >= 0. Received: inf"),
        ({"curve": [(100, float("nan"))]}, "curve[0] val_loss must be a finite number"),
        ({"curve": [(100, 1.0), (-1, 1.0)]}, "curve[1] samples must be a finite number >= 0"),
        ({"curve": [(10.5, 1.0)]}, "curve[0] samples must be a whole number"),
        ({"curve": [(1, 2, 3)]}, "curve[0] must be a CurvePoint or a (samples, val_loss) pair"),
        ({"curve": "loss"}, "curve must be a sequence"),
        ({"config": {"batch_size": 8}}, "config must be a TrialConfig"),
        ({"number": -1}, "number must be an integer >= 0. Received: number=-1"),
    ],
)
def test_bad_values_raise_value_error_naming_them(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    arguments: dict[str, Any] = {
        "number": 0,
        "config": TRIALS[0],
        "throughput": 1.0,
        "fidelity": 0.0,
        "curve": [(1, 1.0)],
    }
    arguments.update(change)

    with pytest.raises(ValueError, match="^" + re.escape(message)):
        write_trial(
            tmp_path / "trial",
            arguments["number"],
            arguments["config"],
            arguments["throughput"],
            arguments["fidelity"],
            arguments["curve"],
        )
    assert not (tmp_path / "trial").exists()


def test_bad_seed_and_space_raise_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        write_baseline(tmp_path, True, BASELINE, None, [])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="space must be a SearchSpace"):
        write_study_config(tmp_path, "quick", BASELINE)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="baseline must be a TrialConfig"):
        write_study_config(tmp_path, SPACE, None)  # type: ignore[arg-type]


def test_an_unwritable_folder_raises_os_error_naming_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "trial_0"
    blocker.write_text("a file where the run folder should be")

    with pytest.raises(OSError, match=r"TensorBoard trial events cannot be written to .*trial_0"):
        write_trial(blocker, 0, TRIALS[0], 1.0, 0.0, [(1, 1.0)])
    assert [p.name for p in tmp_path.iterdir()] == ["trial_0"]


def test_writing_a_study_loads_no_tensorflow(tmp_path: Path) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from tests.unit.test_tensorboard_log import write_fake_study
        write_fake_study(Path({str(tmp_path)!r}))
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras"))
        print("loaded:", loaded)
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr
    assert "loaded: []" in completed.stdout
    assert (tmp_path / "trial_2" / "events.out.tfevents.autotune.trial").is_file()
