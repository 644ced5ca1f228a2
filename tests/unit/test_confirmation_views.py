"""A confirmed study as every view shows it: ``status``, ``best --json``, ``export``, the report's
header and the dashboard's facts (the demo study of tests/support/demo_study.py, confirmed with
its fake runner; nothing is trained)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from autotune.cli import main
from autotune.store.records import load_records
from autotune.study import load_study
from autotune.views.dashboard import Dashboard
from autotune.views.report import header_info
from tests.support.demo_study import DemoStudy, build_demo_study, fake_runner


@pytest.fixture(scope="module")
def confirmed(tmp_path_factory: pytest.TempPathFactory) -> DemoStudy:
    demo = build_demo_study(tmp_path_factory.mktemp("confirmed"))
    study = load_study(demo.storage, runner=fake_runner)
    study.confirm(top=3, rounds=6)
    return demo


@pytest.fixture(scope="module")
def unconfirmed(tmp_path_factory: pytest.TempPathFactory) -> DemoStudy:
    return build_demo_study(tmp_path_factory.mktemp("unconfirmed"))


# A clear 6x stops after 5 of at most 6 rounds (every ratio above 1 from the first look on).
ANSWER = (
    "trial 3: 6.00x the baseline (94% CI 6.00-6.00, 5 of at most 6 rounds head to head; faster "
    "beyond noise at 96.9% one-sided)"
)
CARRIED = "speed-up carried by batch_size, precision, jit_compile"


def cli(demo: DemoStudy, *args: str) -> str:
    runner = CliRunner(env={"COLUMNS": "200"})
    done = runner.invoke(main, [*args, "--storage", demo.storage], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return done.output


def test_status_shows_the_confirmation_table_and_the_answer(confirmed: DemoStudy) -> None:
    output = cli(confirmed, "status")

    joined = " ".join(output.split())
    # 5 rounds of 2 candidates and the baseline, trial 3's two extra curves (trial 2 is slower:
    # its curves could not change the answer), 5 attribution rounds of the winner and 3 reversions
    assert (
        "Confirmation: 5 of at most 6 rounds head to head, seeds [0, 1, 2]; 37 processes; "
        "faster beyond noise at 96.9% one-sided" in joined
    )
    assert "6.00x (94% CI 6.00-6.00)" in joined and "3.00x (94% CI 3.00-3.00)" in joined
    assert "faster beyond noise; not curved (a faster candidate won)" in joined
    assert (
        "Where trial 3's speed-up comes from (5 rounds, each setting reverted alone until "
        "settled)" in joined
    )
    assert output.count("carries the speed-up: kept") == 3  # batch size, precision, XLA
    assert f"confirmed answer: {ANSWER}" in " ".join(output.split())
    assert CARRIED in " ".join(output.split())


def test_status_says_when_nothing_is_confirmed_yet(unconfirmed: DemoStudy) -> None:
    assert "not confirmed yet" in cli(unconfirmed, "status")


def test_best_json_carries_the_ratio_its_interval_and_the_rounds(confirmed: DemoStudy) -> None:
    recipe = json.loads(cli(confirmed, "best", "--json"))

    assert recipe["trial"] == 3
    confirmation = recipe["confirmation"]
    assert confirmation["rounds"] == 6 and confirmation["completed_rounds"] == 5
    assert confirmation["sequential"] is True and confirmation["processes"] == 37
    assert confirmation["one_sided_coverage"] == pytest.approx(1 - 2**-5)
    assert confirmation["ratio"]["median"] == pytest.approx(6.0)
    assert (confirmation["ratio"]["low"], confirmation["ratio"]["high"]) == pytest.approx((6, 6))
    assert confirmation["ratio"]["n"] == 5 and confirmation["ratio"]["confidence"] < 0.95
    assert confirmation["baseline_samples_per_second"] == [1000.0] * 5
    assert [c["trial"] for c in confirmation["candidates"]] == [3, 2]
    assert [row["setting"] for row in confirmation["attribution"]] == [
        "batch_size", "precision", "jit_compile",
    ]  # fmt: skip
    assert all(row["carries"] for row in confirmation["attribution"])
    assert confirmation["minimal"] is False
    assert recipe["note"].startswith(f"confirmed: {ANSWER}")


def test_best_shows_the_confirmed_speed_up(confirmed: DemoStudy, unconfirmed: DemoStudy) -> None:
    shown = " ".join(cli(confirmed, "best").split())
    plain = " ".join(cli(unconfirmed, "best").split())

    assert (
        "6.00x (CI 6.00-6.00, confirmed over 5 of at most 6 rounds head to head, 37 processes)"
        in shown
    )
    assert "(not confirmed head to head)" in plain


def test_export_writes_the_confirmation_into_the_recipe(
    confirmed: DemoStudy, tmp_path: Path
) -> None:
    cli(confirmed, "export", "-o", str(tmp_path / "r.json"))

    saved = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert saved["confirmation"]["ratio"]["median"] == pytest.approx(6.0)


def test_the_report_header_and_the_dashboard_show_the_answer(
    confirmed: DemoStudy, unconfirmed: DemoStudy
) -> None:
    facts = dict(header_info(load_records(confirmed.storage)).facts)
    assert facts["confirmation"].startswith(ANSWER)
    assert (
        "not confirmed yet"
        in dict(header_info(load_records(unconfirmed.storage)).facts)["confirmation"]
    )

    dashboard = Dashboard(confirmed.storage)
    assert f"confirmation: {ANSWER}" in dashboard.facts_text()
