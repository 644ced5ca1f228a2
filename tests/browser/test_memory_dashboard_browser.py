"""The dashboard of a three-objective study in a real browser: the memory view (throughput
against peak memory) draws the front, clicking one of its points selects that trial as a click
on the Pareto figure does, and a peak-memory limit typed into the page changes the
recommendation and draws its line.

The study (tests/support/memory_study.py): trial 0 (bf16 with XLA, 6000 samples/s, 214 MiB) is
the fastest; trial 1 (bf16 without XLA, 4000 samples/s, 164 MiB) the same curve, slower and
leaner; both are on the three-objective front.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from autotune.views.report import MEMORY_FRONT_TRACE, PARETO_TRACE
from tests.support.memory_study import MEMORY, NO_XLA, XLA, run_study

pytestmark = pytest.mark.browser

#: The memory view's shapes (the limit's line) and annotation texts.
LIMIT_JS = """
const gd = document.querySelector('#memory-graph .js-plotly-plot');
return {shapes: (gd._fullLayout.shapes || []).map(s => s.x0),
        notes: (gd._fullLayout.annotations || []).map(a => a.text)};
"""


@pytest.fixture(scope="module")
def page(
    browser: Any, serve_dashboard: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The memory study's dashboard, open with both figures drawn."""
    study = run_study(tmp_path_factory.mktemp("memory"), MEMORY)
    log = tmp_path_factory.mktemp("dashboard") / "dashboard.log"
    with serve_dashboard(study.storage_url, log) as url:
        browser.driver.get(url)
        for graph, uid in (("pareto-graph", PARETO_TRACE), ("memory-graph", MEMORY_FRONT_TRACE)):
            browser.until(
                lambda d, g=graph, u=uid: (browser.trace(g, u) or {}).get("drawn"),
                f"the dashboard's #{graph} did not draw its front",
            )
        yield url


def test_the_memory_view_draws_the_three_objective_front(browser: Any, page: str) -> None:
    trace = browser.trace("memory-graph", MEMORY_FRONT_TRACE)

    assert trace is not None and trace["drawn"] == 2
    assert trace["customdata"] == [f"trial:{NO_XLA}", f"trial:{XLA}"]  # least memory first
    assert browser.text("recommendation").startswith(f"Trial {XLA}:")
    browser.assert_no_console_errors()


def test_clicking_a_point_of_the_memory_view_selects_its_trial(browser: Any, page: str) -> None:
    trace = browser.trace("memory-graph", MEMORY_FRONT_TRACE)
    assert trace is not None
    browser.click_point(
        "memory-graph", MEMORY_FRONT_TRACE, trace["customdata"].index(f"trial:{NO_XLA}")
    )

    title = browser.until(
        lambda d: (t := browser.text("selection-title")).startswith(f"trial {NO_XLA} ") and t,
        f"clicking trial {NO_XLA}'s point of the memory view did not select it",
    )
    browser.until(
        lambda d: f'"trial": {NO_XLA}' in browser.text("recipe"),
        f"clicking trial {NO_XLA}'s point did not show its recipe",
    )

    assert "mixed_bfloat16 no-xla" in title
    browser.assert_no_console_errors()


def test_a_typed_memory_limit_changes_the_recommendation(browser: Any, page: str) -> None:
    from selenium.webdriver.common.keys import Keys

    box = browser.driver.find_element("id", "memory-limit")
    browser.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", box)
    box.send_keys("200", Keys.ENTER)

    lean = browser.until(
        lambda d: (t := browser.text("recommendation")).startswith(f"Trial {NO_XLA}:") and t,
        "a 200 MiB limit did not make the leaner trial the recommendation",
    )
    drawn = browser.until(
        lambda d: (s := d.execute_script(LIMIT_JS))["shapes"] == [200] and s,
        "the memory view did not draw the limit's line at 200 MiB",
    )
    box.clear()
    box.send_keys("150", Keys.ENTER)
    none = browser.until(
        lambda d: (t := browser.text("recommendation")).startswith("Keep the baseline") and t,
        "a 150 MiB limit did not make the baseline the recommendation",
    )

    assert "peak memory 164 <= 200 MiB" in lean
    assert "limit 200 MiB" in drawn["notes"]
    assert "and peak memory <= 150 MiB" in none
    browser.assert_no_console_errors()
