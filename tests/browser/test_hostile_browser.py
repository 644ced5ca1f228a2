"""Issue 13 in a real browser: a study whose stored strings are hostile (tests/support/
demo_study.py, ``build_hostile_study``: a name that closes <title> and opens a script, names and
a folder with event handlers, failure messages with a script and a ``javascript:`` link) opened
as the static report and as the live dashboard. No alert may open, no element the strings
describe may exist, and the names must show as text: the page title reads the study's name as
it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from autotune.views.report import FIGURE_IDS, PARETO_TRACE
from tests.support.demo_study import HOSTILE_STUDY, DemoStudy, build_hostile_study

pytestmark = pytest.mark.browser

#: Elements the hostile strings would create if they were read as HTML.
INJECTED_JS = """
return {
  images: document.querySelectorAll('img[src="x"], img[onerror]').length,
  handlers: document.querySelectorAll('svg[onload], b[onmouseover]').length,
  links: document.querySelectorAll('a[href^="javascript"]').length,
  title: document.title,
};
"""
#: Texts of the Pareto figure's annotations as drawn (the failed trials are listed there).
ANNOTATIONS_JS = """
const root = document.getElementById(arguments[0]);
const gd = root && (root.classList.contains('js-plotly-plot') ? root
                    : root.querySelector('.js-plotly-plot'));
return gd ? Array.from(gd.querySelectorAll('.annotation-text')).map(e => e.textContent) : [];
"""
#: Figure divs that have drawn their SVG.
DRAWN_JS = """
return arguments[0].filter(id => {
  const div = document.getElementById(id);
  return div && div.querySelector('.main-svg');
});
"""


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> DemoStudy:
    return build_hostile_study(tmp_path_factory.mktemp("hostile"))


def _no_alert(browser: Any) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        alert = browser.driver.switch_to.alert
    except NoAlertPresentException:
        return
    text = alert.text
    alert.dismiss()
    pytest.fail(f"a hostile string ran script: alert({text!r})")


def _assert_nothing_injected(browser: Any, title: str) -> None:
    _no_alert(browser)
    found = browser.driver.execute_script(INJECTED_JS)
    assert found == {"images": 0, "handlers": 0, "links": 0, "title": title}


def test_the_report_shows_hostile_strings_as_text(
    browser: Any, autotune_cli: Any, hostile: DemoStudy
) -> None:
    path = hostile.folder / "report.html"
    autotune_cli("report", "--storage", hostile.storage, "-o", str(path))

    browser.driver.get(Path(path).as_uri())
    browser.until(
        lambda d: len(d.execute_script(DRAWN_JS, list(FIGURE_IDS))) == len(FIGURE_IDS),
        "the hostile study's report figures did not all draw",
    )

    _assert_nothing_injected(browser, f"autotune report: {HOSTILE_STUDY}")
    notes = " ".join(browser.driver.execute_script(ANNOTATIONS_JS, "pareto-figure"))
    assert "<script>alert('failure')</script>" in notes  # shown as text by Plotly
    browser.assert_no_console_errors()


def test_the_dashboard_shows_hostile_strings_as_text(
    browser: Any, serve_dashboard: Any, hostile: DemoStudy, tmp_path: Path
) -> None:
    with serve_dashboard(hostile.storage, tmp_path / "dashboard.log") as url:
        browser.driver.get(url)
        browser.until(
            lambda d: (browser.trace("pareto-graph", PARETO_TRACE) or {}).get("drawn"),
            "the hostile study's Pareto figure did not draw",
        )

        _assert_nothing_injected(browser, f"autotune: {HOSTILE_STUDY}")
        from selenium.webdriver.common.by import By

        heading = browser.driver.find_element(By.TAG_NAME, "h2").text
        assert heading == f"autotune: {HOSTILE_STUDY}"
        notes = " ".join(browser.driver.execute_script(ANNOTATIONS_JS, "pareto-graph"))
        assert "<script>alert('failure')</script>" in notes
        browser.assert_no_console_errors()
