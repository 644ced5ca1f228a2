"""The study writes its TensorBoard view as it runs (autotune.study.board): the demo study's log
folder, read back by TensorBoard's own readers, holds the baseline seeds and every measured
trial with the objectives the storage holds; a folder that cannot be written warns and the
study goes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autotune.config import RunSettings, TrialConfig
from autotune.store.log_folders import default_log_root
from autotune.store.records import StudyRecords
from autotune.study import board
from tests.support.demo_study import FAILED, PRUNED, REPEATS, DemoStudy
from tests.support.fake_trials import fake_result
from tests.support.tensorboard_reader import read_in_fresh_interpreter


@pytest.fixture(scope="module")
def seen(demo: DemoStudy) -> dict[str, Any]:
    return read_in_fresh_interpreter(log_root(demo))


def log_root(demo: DemoStudy) -> Path:
    return default_log_root(demo.storage, demo.name)


def test_every_measured_trial_and_baseline_seed_is_a_run(seen, records: StudyRecords) -> None:
    unmeasured = {*FAILED, *REPEATS}  # a duplicate reuses its twin's run
    measured = {f"trial_{t.number}" for t in records.trials if t.number not in unmeasured}
    baselines = {f"baseline_seed_{seed}" for seed in (0, 1, 2)}

    assert measured | baselines <= set(seen["scalars"])
    assert not {f"trial_{n}" for n in unmeasured} & set(seen["scalars"])


def test_runs_carry_the_stored_objectives_and_curves(seen, records: StudyRecords) -> None:
    groups = {g["name"]: g for g in seen["session_groups"].get("sessionGroups", [])}
    for trial in records.trials:
        if not trial.scored or trial.duplicate_of is not None:
            continue
        scalars = seen["scalars"][f"trial_{trial.number}"]
        assert scalars["objective/fidelity"][0][1] == pytest.approx(trial.fidelity, rel=1e-6)
        assert scalars["objective/throughput"][0][1] == pytest.approx(
            trial.throughput.median, rel=1e-6
        )
        assert [s for s, _ in scalars["validation/loss"]] == [p.samples for p in trial.curve]
        assert f"trial_{trial.number}" in groups
    pruned = seen["scalars"][f"trial_{PRUNED[0]}"]
    assert "objective/fidelity" not in pruned and "objective/throughput" in pruned


def test_a_folder_that_cannot_be_written_warns_and_raises_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder", encoding="utf-8")
    result = fake_result(TrialConfig.baseline(32), RunSettings())

    with pytest.warns(RuntimeWarning, match="TensorBoard: trial 3 in .* not written"):
        board.trial_run(blocker / "trial_3", 3, result, fidelity=0.5)
