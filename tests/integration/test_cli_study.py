"""The study from the command line, end to end, with real trials of the tiny experiment:
run -> status -> best -> export -> run again (resumes, measures nothing twice)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from autotune.study import load_study

TINY = str(Path(__file__).resolve().parents[1] / "fixtures" / "experiments" / "tiny.py") + ":tiny"

SPACE = """
name = "tiny"
[parameters]
precision = ["float32", "mixed_bfloat16"]
batch_size = [32, 64]
[measure]
warmup_max_steps = 40
windows = 6
window_seconds = 0.05
checkpoints = 3
curve_samples = 1024
time_limit_seconds = 120
"""


def autotune(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs the CLI; a wide console, so table cells are not cut short."""
    return subprocess.run(
        [sys.executable, "-m", "autotune.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "300"},
    )


@pytest.mark.slow
def test_run_status_best_export_and_resume(tmp_path: Path) -> None:
    space = tmp_path / "tiny.toml"
    space.write_text(SPACE)
    storage = f"sqlite:///{tmp_path / 'study.db'}"

    confirm = ("--confirm-top", "1", "--confirm-rounds", "2")
    first = autotune(
        "run", TINY, "--space", str(space), "--storage", storage, "--trials", "3", *confirm,
        cwd=tmp_path,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr + first.stdout
    assert first.stdout.count("baseline seed") == 3
    assert first.stdout.count("trial ") >= 3
    front = load_study(storage).pareto_front()
    # the fastest feasible trial, confirmed head to head with the baseline in sequential rounds
    # that stop once the verdict cannot change: one or both of the two rounds, each one process
    # timing the candidate beside the baseline
    completed = re.search(
        r"Confirmation: (\d) of at most 2 rounds head to head in one process each", first.stdout
    )
    if front:
        assert completed and completed[1] in ("1", "2"), first.stdout
        rounds = int(completed[1])
        assert first.stdout.count("confirm round ") == rounds
        assert first.stdout.count("samples/s, the baseline beside it ") == rounds
        assert f"confirm round {rounds}/2: trial {front[0].number} " in first.stdout
        assert "seeds [0, 1, 2]" in first.stdout
    else:
        assert "confirm round" not in first.stdout and completed is None

    status = autotune("status", "--storage", storage, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "3 finished trials" in status.stdout
    assert "seed noise floor" in status.stdout

    best = autotune("best", "--storage", storage, "--json", cwd=tmp_path)
    assert best.returncode == 0, best.stderr
    recipe = json.loads(best.stdout)
    assert recipe["config"]["precision"] in ("float32", "mixed_bfloat16")
    assert recipe["baseline_throughput"]["median"] > 0
    assert recipe["confirmation"]["rounds"] == 2
    assert recipe["note"].startswith("confirmed: ")
    beaten = "ratio" in recipe["confirmation"]  # a candidate beat the baseline beyond noise
    if beaten:
        assert recipe["confirmation"]["ratio"]["low"] > 1.0
    if front:
        assert recipe["confirmation"]["completed_rounds"] == rounds
        # seed curves (seeds 1 and 2) are trained only for a candidate faster beyond noise
        (candidate,) = recipe["confirmation"]["candidates"]
        measured_seeds = set(candidate["fidelity"]["seeds"]) - {"0"}
        seed_curves = first.stdout.count(f"confirm trial {front[0].number} seed ")
        assert seed_curves == len(measured_seeds), first.stdout
        assert measured_seeds == ({"1", "2"} if beaten else measured_seeds)

    exported = autotune(
        "export", "--storage", storage, "-o", str(tmp_path / "r.json"), cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
    assert json.loads((tmp_path / "r.json").read_text())["config"] == recipe["config"]

    again = autotune(
        "run", TINY, "--space", str(space), "--storage", storage, "--trials", "3", *confirm,
        cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "confirm round" not in again.stdout  # the stored confirmation is not repeated
    assert "3 of 3 trials finished" in again.stdout
    assert "baseline seed" not in again.stdout  # the stored baseline is reused
    assert not re.search(r"^trial +\d+ ", again.stdout, re.MULTILINE)  # nothing measured again

    other = autotune(
        "run",
        TINY,
        "--space",
        str(space),
        "--storage",
        storage,
        "--trials",
        "3",
        "--tolerance",
        "3",
        cwd=tmp_path,
    )
    assert other.returncode == 2
    assert "tolerance" in other.stderr and "--allow-mismatch" in other.stderr

    logs = tmp_path / "autotune_logs"
    assert any(logs.rglob("trial.log")), "each trial keeps its log next to the database"
    # --profile all (the default): every trial's profile is a run for tensorboard --logdir
    # (a trial stopped early or repeating an earlier one runs no profiled window)
    study_logs = next(logs.iterdir())
    assert list((study_logs / "baseline_seed_0").glob("plugins/profile/*/*.xplane.pb"))
    assert list(study_logs.glob("trial_*/plugins/profile/*/*.xplane.pb"))
    assert "input-bound" in status.stdout


@pytest.mark.slow
def test_profile_off_leaves_no_profiles_and_pareto_profiles_the_front_afterwards(
    tmp_path: Path,
) -> None:
    space = tmp_path / "tiny.toml"
    space.write_text(SPACE)
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    common = ("run", TINY, "--space", str(space), "--storage", storage, "--trials", "2")
    common += ("--confirm-top", "0")

    off = autotune(*common, "--profile", "off", cwd=tmp_path)

    assert off.returncode == 0, off.stderr + off.stdout
    logs = tmp_path / "autotune_logs"
    assert any(logs.rglob("trial.log"))
    assert not list(logs.rglob("plugins")), "profiling off writes no profile"

    pareto = autotune(*common, "--profile", "pareto", cwd=tmp_path)

    assert pareto.returncode == 0, pareto.stderr + pareto.stdout
    profiled = sorted(p.parents[3].name for p in logs.rglob("*.xplane.pb"))
    front = [row.number for row in load_study(storage).pareto_front()]
    assert profiled == sorted(f"trial_{n}" for n in front), pareto.stdout
    assert pareto.stdout.count("(Pareto re-run)") == len(front)
    status = autotune("status", "--storage", storage, cwd=tmp_path)
    assert ("(re-run)" in status.stdout) == bool(front)


def test_unknown_study_is_a_clear_error(tmp_path: Path) -> None:
    missing = autotune("status", "--storage", f"sqlite:///{tmp_path / 'none.db'}", cwd=tmp_path)
    assert missing.returncode == 2
    assert "does not exist" in missing.stderr
