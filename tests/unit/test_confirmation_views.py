"""A confirmed study as every view shows it: ``status``, ``best --json``, ``export``, the report's
header and the dashboard's facts (the demo study of tests/support/demo_study.py, confirmed with
its fake runner; nothing is trained)."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

from autotune.cli import main
from autotune.config import RunSettings, TrialConfig
from autotune.measure import summarize
from autotune.store.recommendation import recommend
from autotune.store.records import load_records
from autotune.store.result import RunResult
from autotune.study import load_study
from autotune.views.dashboard import Dashboard, selection_info
from autotune.views.report import header_info
from autotune.views.terminal import show_recipe
from tests.support.demo_study import TRIALS, DemoStudy, build_demo_study, fake_runner
from tests.support.fake_trials import BASE_SPEED, speed_of


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
    # its curves could not change the answer), 5 attribution rounds of the winner and 2
    # reversions (the third, the batch size reverted, is trial 2: its rounds are the batch
    # size's attribution)
    assert (
        "Confirmation: 5 of at most 6 rounds head to head, seeds [0, 1, 2]; 32 processes; "
        "faster beyond noise at 96.9% one-sided" in joined
    )
    assert "6.00x (94% CI 6.00-6.00)" in joined and "3.00x (94% CI 3.00-3.00)" in joined
    assert "faster beyond noise; not curved (a faster candidate won)" in joined
    assert (
        "Where trial 3's speed-up comes from (5 rounds, each setting reverted alone until "
        "settled; batch_size from the confirmation's rounds)" in joined
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
    assert confirmation["sequential"] is True and confirmation["processes"] == 32
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
        "6.00x (94% CI 6.00-6.00), confirmed over 5 of at most 6 rounds head to head, "
        "32 processes" in shown
    )
    assert "(search phase, unconfirmed)" in plain


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


# --------------------------------------------------------------------------------------------
# One truth on screen (issue 25): a baseline that ran faster during the confirmation than at the
# study's start. Every screen must give the confirmation's speed-up with the throughputs of its
# rounds, never the search's 6,000 samples/s over the start's 1,000 (6.00x).
# --------------------------------------------------------------------------------------------

#: How much faster the baseline runs in the confirmation than at the study's start.
DRIFT = 2.5


def is_baseline_config(config: TrialConfig) -> bool:
    return (config.precision, config.jit_compile, config.batch_size) == ("float32", False, 32)


def drifting_runner(
    reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
) -> RunResult:
    """:func:`fake_runner` whose baseline runs :data:`DRIFT` times faster in speed-only runs
    (the confirmation's rounds) than in the study's own baseline runs."""
    result = fake_runner(reference, config, settings, log_dir)
    if settings.curve or result.throughput is None or not is_baseline_config(config):
        return result
    windows = [w * DRIFT for w in result.window_samples_per_second]
    return dataclasses.replace(
        result, throughput=summarize(windows), window_samples_per_second=windows
    )


@dataclasses.dataclass(frozen=True)
class Drifted:
    demo: DemoStudy
    final_box: str  # what 'autotune run' prints at its end (show_recipe of the run's recipe)


@pytest.fixture(scope="module")
def drifted(tmp_path_factory: pytest.TempPathFactory) -> Drifted:
    demo = build_demo_study(tmp_path_factory.mktemp("drifted"))
    study = load_study(demo.storage, runner=drifting_runner, read_only=False)
    outcome = study.run(len(TRIALS), confirm_top=3, confirm_rounds=6)
    console = Console(record=True, width=200, file=io.StringIO())
    show_recipe(console, outcome.recipe)
    return Drifted(demo, console.export_text())


def flat(text: str) -> str:
    """``text`` on one line, without a table's box-drawing characters."""
    return " ".join(re.sub("[\u2500-\u257f]", " ", text).split())


def expected_figures() -> tuple[str, str, str]:
    """The winner's (trial 3's) speed-up and samples/s, and the baseline's, as the
    confirmation measured them in the fake world."""
    winner = speed_of(TrialConfig.from_dict(TRIALS[3], source="test"))
    baseline = BASE_SPEED * DRIFT
    return f"{winner / baseline:.2f}x", f"{winner:,.0f}", f"{baseline:,.0f}"


def test_every_screen_gives_the_confirmed_speed_up_with_the_rounds_throughputs(
    drifted: Drifted,
) -> None:
    speedup, winner, baseline = expected_figures()
    records = load_records(drifted.demo.storage)
    recommendation = recommend(records)
    recipe = json.loads(cli(drifted.demo, "best", "--json"))
    shown = flat(cli(drifted.demo, "best"))
    status = flat(cli(drifted.demo, "status"))
    header = dict(header_info(records).facts)["recommendation"]
    dashboard = Dashboard(drifted.demo.storage)

    assert recommendation.confirmed and recommendation.number == 3
    # best --json: the confirmation's figures, the search's kept beside them as provenance
    assert recipe["trial"] == 3
    assert f"{recipe['speedup']:.2f}x" == speedup
    assert f"{recipe['throughput']['median']:,.0f}" == winner
    assert f"{recipe['baseline_throughput']['median']:,.0f}" == baseline
    rounds = recipe["confirmation"]["completed_rounds"]  # sequential: at most 6
    assert 2 <= rounds <= 6
    assert recipe["throughput"]["n"] == recipe["baseline_throughput"]["n"] == rounds
    assert recipe["confirmation"]["search_baseline_throughput"]["median"] == BASE_SPEED
    # the final box of 'autotune run' and 'autotune best' print the same table
    assert flat(drifted.final_box) == shown
    assert "Best: trial 3 (confirmed head to head)" in shown
    assert f"throughput {winner} samples/s" in shown
    assert f"baseline {baseline} samples/s" in shown
    assert f"median of the confirmation's {rounds} rounds" in shown
    assert f"speed-up {speedup} (" in shown
    assert "1,000 samples/s" not in shown and "6.00x" not in shown  # the search's stale ratio
    # the report header, the dashboard and status give the same sentence
    assert header == recommendation.text
    assert dashboard.recommend(None) == header
    assert f"recommendation: {header}" in status
    for figure in (speedup, f"{winner} against the baseline's {baseline} samples/s"):
        assert figure in header
    assert "6.00x" not in header and "unconfirmed" not in header
    # the dashboard's first selection is the recommended recipe itself
    selected = selection_info(records, None)
    assert selected is not None
    shown_recipe = json.loads(selected.recipe_json)
    assert {k: v for k, v in shown_recipe.items() if k != "created"} == {
        k: v for k, v in recipe.items() if k != "created"
    }


def test_every_screen_says_when_the_figures_are_unconfirmed(unconfirmed: DemoStudy) -> None:
    records = load_records(unconfirmed.storage)
    header = dict(header_info(records).facts)["recommendation"]
    shown = flat(cli(unconfirmed, "best"))
    status = flat(cli(unconfirmed, "status"))

    assert header.startswith("Trial 3:") and header.endswith("(search phase, unconfirmed).")
    assert "6.00x the baseline's 1,000 samples/s" in header
    assert Dashboard(unconfirmed.storage).recommend(None) == header
    assert f"recommendation: {header}" in status
    assert "Best: trial 3 (search phase, unconfirmed)" in shown
    assert "speed-up 6.00x (search phase, unconfirmed)" in shown
    assert "baseline 1,000 samples/s" in shown and "measured at the study's start" in shown
    assert json.loads(cli(unconfirmed, "best", "--json"))["confirmation"] is None
