"""The static report in a real browser: `autotune report` on a fake stored study, opened from
file:// in headless Chromium. Every figure must draw, the console must stay clean, the page must
load nothing from the network, and the Pareto trace must hold one point per Pareto trial."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autotune.store.records import load_records
from autotune.views.report import FIGURE_IDS, PARETO_TRACE, point_key
from tests.support.demo_study import PARETO, DemoStudy, build_demo_study

pytestmark = pytest.mark.browser

#: Figure divs that have drawn their SVG (Plotly adds .main-svg when it renders).
DRAWN_JS = """
return arguments[0].filter(id => {
  const div = document.getElementById(id);
  return div && div.querySelector('.main-svg');
});
"""

#: Every resource the page loaded that did not come from the file itself.
REMOTE_JS = """
return performance.getEntriesByType('resource').map(e => e.name)
  .filter(name => !name.startsWith('file:') && !name.startsWith('data:'));
"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoStudy:
    return build_demo_study(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def report(browser: Any, autotune_cli: Any, demo: DemoStudy) -> Path:
    """The report of the demo study, written by the command and open in the browser."""
    path = demo.folder / "report.html"
    done = autotune_cli("report", "--storage", demo.storage, "-o", str(path))
    assert "2 on the Pareto front" in done.stdout
    browser.driver.get(path.as_uri())
    browser.until(
        lambda d: len(d.execute_script(DRAWN_JS, list(FIGURE_IDS))) == len(FIGURE_IDS),
        f"the report's figures {FIGURE_IDS} did not all draw (no .main-svg)",
    )
    return path


def test_every_figure_draws_without_console_errors(browser: Any, report: Path) -> None:
    drawn = browser.driver.execute_script(DRAWN_JS, list(FIGURE_IDS))

    assert drawn == list(FIGURE_IDS)
    browser.assert_no_console_errors()
    assert browser.driver.execute_script(REMOTE_JS) == [], "the report must work offline"


def test_the_pareto_trace_has_one_point_per_pareto_trial(
    browser: Any, report: Path, demo: DemoStudy
) -> None:
    front = load_records(demo.storage).pareto()

    trace = browser.trace("pareto-figure", PARETO_TRACE)

    assert len(front) == len(PARETO) == 2
    assert trace is not None
    assert len(trace["x"]) == len(trace["y"]) == len(front)
    assert sorted(trace["customdata"]) == sorted(point_key(r.number) for r in front)
    assert trace["drawn"] == len(front), "points drawn in the SVG for the Pareto trace"
    assert sorted(trace["y"]) == sorted(r.throughput.median for r in front if r.throughput)
    for row in front:  # the table of Pareto trials, with their recipes
        assert str(row.number) in browser.text(f"pareto-trial-{row.number}")


def test_screenshot_of_the_report(browser: Any, report: Path) -> None:
    path = browser.screenshot("report.png")

    assert path.stat().st_size > 10_000
    browser.assert_no_console_errors()
