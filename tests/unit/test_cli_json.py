"""Scripts can read every command: ``status --json`` and ``run --json`` print the study in the
documented schema (autotune.views.study_json), ``run --json`` keeps stdout for the JSON alone, and
``status`` stays readable at 80 columns. Nothing is trained: the demo study's fake runner."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner

import autotune.study.study
from autotune.cli import main
from autotune.store.records import load_records
from autotune.study import load_study
from autotune.views.study_json import SCHEMA
from tests.support.demo_study import (
    FAILED,
    PARETO,
    DemoStudy,
    build_demo_study,
    fake_runner,
    write_experiment,
)

TOP_KEYS = {
    "schema", "study", "storage", "experiment", "experiment_reference", "tolerance",
    "objectives", "fidelity_definition", "baseline", "finished", "counts", "trials", "pareto_front",
    "confirmation", "recommendation", "throughput_only", "anchors", "drift", "warm_start",
}  # fmt: skip
TRIAL_KEYS = {
    "number", "state", "config", "throughput", "fidelity", "fidelity_symmetric",
    "peak_memory_mib", "feasible", "failure_kind", "reason", "duplicate_of", "log_dir",
    "warm_from",
}  # fmt: skip


@pytest.fixture(scope="module")
def confirmed(tmp_path_factory: pytest.TempPathFactory) -> DemoStudy:
    demo = build_demo_study(tmp_path_factory.mktemp("confirmed"))
    load_study(demo.storage, runner=fake_runner).confirm(top=3, rounds=6)
    return demo


def invoke(*args: str, columns: int = 200) -> tuple[str, str]:
    runner = CliRunner(env={"COLUMNS": str(columns)})
    done = runner.invoke(main, list(args), catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.stdout, done.stderr


def test_status_json_is_the_study_in_the_documented_schema(confirmed: DemoStudy) -> None:
    stdout, _ = invoke("status", "--json", "--storage", confirmed.storage)
    study = json.loads(stdout)
    records = load_records(confirmed.storage)

    assert set(study) == TOP_KEYS
    assert study["schema"] == SCHEMA
    assert study["study"] == records.study_name
    assert study["fidelity_definition"] == records.identity["fidelity"]
    assert study["objectives"] == ["throughput", "fidelity"]
    assert study["baseline"]["throughput"]["median"] == pytest.approx(1000, rel=0.05)
    assert study["baseline"]["noise_floor"]["loss_floor"] > 0
    assert [t["number"] for t in study["trials"]] == [t.number for t in records.trials]
    assert all(set(t) == TRIAL_KEYS for t in study["trials"])
    failed = [t for t in study["trials"] if t["number"] in FAILED]
    assert {t["failure_kind"] for t in failed} == {"oom", "exception"}
    assert study["pareto_front"] == PARETO
    assert study["finished"] == records.finished_count()
    assert study["confirmation"]["answer"].startswith("trial 3: 6.00x the baseline")
    assert study["recommendation"]["trial"] == 3


def test_run_json_prints_only_the_study_on_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(autotune.study.study, "isolated_runner", fake_runner)
    monkeypatch.chdir(tmp_path)
    reference = write_experiment(tmp_path)
    storage = f"sqlite:///{tmp_path / 'study.db'}"

    stdout, stderr = invoke(
        "run", reference, "--space", "quick", "--trials", "3", "--storage", storage,
        "--profile", "off", "--confirm-top", "1", "--confirm-rounds", "2", "--json",
    )  # fmt: skip

    study = json.loads(stdout)  # nothing else on stdout
    assert set(study) == TOP_KEYS
    assert study["finished"] == 3
    assert study["confirmation"] is not None or study["pareto_front"] == []
    assert "trial   0" in stderr and "seed noise floor" in stderr


def test_status_stays_readable_at_80_columns(confirmed: DemoStudy) -> None:
    stdout, _ = invoke("status", "--storage", confirmed.storage, columns=80)
    lines = stdout.splitlines()

    assert max(len(line) for line in lines) <= 80
    assert "…" not in stdout  # folded, never cut off
    assert "mixed_bfloat16" in stdout and "infeasible" in stdout
    assert "profile log dir" not in stdout  # only on wide terminals
    wide, _ = invoke("status", "--storage", confirmed.storage, columns=200)
    assert "profile log dir" in wide


@pytest.mark.parametrize(("start", "probes"), [("structured", True), ("random", False)])
def test_run_start_option_chooses_how_a_new_study_begins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: str, probes: bool
) -> None:
    monkeypatch.setattr(autotune.study.study, "isolated_runner", fake_runner)
    monkeypatch.chdir(tmp_path)
    reference = write_experiment(tmp_path)
    storage = f"sqlite:///{tmp_path / 'study.db'}"

    invoke(
        "run", reference, "--space", "quick", "--trials", "2", "--storage", storage,
        "--profile", "off", "--confirm-top", "0", "--start", start,
    )  # fmt: skip

    stored = optuna.load_study(study_name="fake-quick", storage=storage)
    configs = stored.user_attrs["autotune_start"]
    assert bool(configs) is probes
    if probes:  # the first trials are the first probes, in order
        assert [t.user_attrs["config"] for t in stored.trials] == configs[:2]
