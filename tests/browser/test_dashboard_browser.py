"""The live dashboard in a real browser: `autotune dashboard` serving a fake stored study on a
free local port, driven by headless Chromium. The Pareto figure must draw with one point per
Pareto trial, the tolerance slider must change the recommendation, clicking a point must show
its recipe, and a trial stored while the page is open must appear without a reload.

The fake study (tests/support/demo_study.py; tolerance 1.5, baseline 1000 samples/s): trial 2
(3000 samples/s, fidelity 0.3) and trial 3 (6000, 1.2) are the Pareto front, trial 1 (8000, 2.7)
is infeasible. The slider runs from 0 to 4.5: at 0 nothing beats the baseline within the
tolerance, at 4.5 trial 1 is the fastest within it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autotune.store.records import load_records
from autotune.study import Study
from autotune.views.report import PARETO_TRACE, header_info, point_key
from tests.support.demo_study import SPACE, DemoStudy, build_demo_study, fake_runner, params

pytestmark = pytest.mark.browser

SLIDER_THUMB = (  # Dash >= 4 draws a Radix slider; Dash 3 an rc-slider
    "#tolerance-slider [role='slider'], #tolerance-slider .rc-slider-handle"
)
#: A configuration the fake study has not run: float32 with XLA at batch size 32 trains the
#: baseline's curve (fidelity 0) 1.5x as fast, so it joins the Pareto front.
NEW_TRIAL = params("float32", True, 32)
READ_CLIPBOARD = """
const done = arguments[0];
navigator.clipboard.readText().then(done, error => done('clipboard: ' + error));
"""
#: What #selection-curve draws: its title and the trials in its legend.
DRAWN_CURVE_JS = """
const gd = document.querySelector('#selection-curve .js-plotly-plot');
return {title: (gd.querySelector('.gtitle') || {}).textContent || '',
        trials: Array.from(gd.querySelectorAll('.legendtext')).map(e => e.textContent)
                     .filter(text => text.startsWith('trial '))};
"""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoStudy:
    return build_demo_study(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def page(
    browser: Any, serve_dashboard: Any, demo: DemoStudy, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The demo study's dashboard, open in the browser with its Pareto figure drawn."""
    log = tmp_path_factory.mktemp("dashboard") / "dashboard.log"
    with serve_dashboard(demo.storage, log) as url:
        open_dashboard(browser, url)
        yield url


@pytest.fixture(autouse=True)
def own_console(browser: Any) -> None:
    """Each test answers for the console messages logged while it runs, not before."""
    browser.console_errors()


def open_dashboard(browser: Any, url: str) -> None:
    browser.driver.get(url)
    browser.until(
        lambda d: (browser.trace("pareto-graph", PARETO_TRACE) or {}).get("drawn"),
        "the dashboard's Pareto figure (#pareto-graph) did not draw its Pareto points",
    )


def pareto_keys(browser: Any) -> list[str]:
    trace = browser.trace("pareto-graph", PARETO_TRACE)
    assert trace is not None
    assert len(trace["customdata"]) == len(trace["x"]) == trace["drawn"]
    return sorted(trace["customdata"])


def test_the_pareto_figure_draws_one_point_per_pareto_trial(
    browser: Any, page: str, demo: DemoStudy
) -> None:
    front = load_records(demo.storage).pareto()

    assert pareto_keys(browser) == sorted(point_key(r.number) for r in front)
    assert len(front) == 2
    assert browser.text("recommendation").startswith("Trial 3:")
    browser.assert_no_console_errors()


def test_the_tolerance_slider_changes_the_recommendation(browser: Any, page: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    thumb = browser.driver.find_element(By.CSS_SELECTOR, SLIDER_THUMB)
    browser.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", thumb)

    thumb.send_keys(Keys.HOME)  # tolerance 0: no trial is as faithful as the baseline
    tight = browser.until(
        lambda d: (t := browser.text("recommendation")).startswith("Keep the baseline") and t,
        "at tolerance 0 the recommendation did not become the baseline",
    )
    wait_for_chosen_line(browser, "chosen 0.00")
    thumb.send_keys(Keys.END)  # tolerance 4.5: the infeasible 8000 samples/s trial 1 fits
    loose = browser.until(
        lambda d: (t := browser.text("recommendation")).startswith("Trial 1:") and t,
        "at tolerance 4.5 the recommendation did not become trial 1",
    )
    wait_for_chosen_line(browser, "chosen 4.50")

    assert "fidelity <= 0.00" in tight
    assert "fidelity 2.70 <= 4.50" in loose
    assert thumb.get_attribute("aria-valuenow") == "4.5"
    browser.assert_no_console_errors()


X_RANGE_JS = """
const gd = document.querySelector('#pareto-graph .js-plotly-plot');
return Array.from(gd._fullLayout.xaxis.range);
"""


def test_the_chosen_tolerance_line_is_inside_the_figure(browser: Any, page: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.driver.find_element(By.CSS_SELECTOR, SLIDER_THUMB).send_keys(Keys.END)
    wait_for_chosen_line(browser, "chosen 4.50")
    low, high = browser.driver.execute_script(X_RANGE_JS)

    assert low <= 4.5 <= high, f"the line at 4.5 is outside the x axis range [{low}, {high}]"


def wait_for_chosen_line(browser: Any, text: str) -> None:
    """Waits until the Pareto figure's dotted line for the slider's tolerance says ``text``."""

    def chosen(driver: Any) -> list[str]:
        trace = browser.trace("pareto-graph", PARETO_TRACE) or {}
        return [a for a in trace.get("annotations", []) if a.startswith("chosen")]

    browser.until(lambda d: chosen(d) == [text], f"the Pareto figure did not draw {text!r}")


def select_point(browser: Any, number: int) -> str:
    """Clicks trial ``number``'s point of the Pareto figure; waits for and returns the title
    of what the page then shows."""
    trace = browser.trace("pareto-graph", PARETO_TRACE)
    assert trace is not None
    browser.click_point("pareto-graph", PARETO_TRACE, trace["customdata"].index(f"trial:{number}"))
    return str(
        browser.until(
            lambda d: (t := browser.text("selection-title")).startswith(f"trial {number} ") and t,
            f"clicking trial {number}'s point did not select it",
        )
    )


def test_clicking_a_pareto_point_shows_its_recipe(browser: Any, page: str) -> None:
    title = select_point(browser, 2)  # the page first shows trial 3, the recommendation
    text = browser.until(
        lambda d: '"trial": 2' in (t := browser.text("recipe")) and t,
        "clicking trial 2's point did not show its recipe",
    )
    browser.driver.execute_cdp_cmd(
        "Browser.grantPermissions",
        {
            "origin": page.rstrip("/"),
            "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"],
        },
    )
    browser.driver.find_element("id", "copy-recipe").click()
    copied = browser.until(
        lambda d: '"trial": 2' in (c := d.execute_async_script(READ_CLIPBOARD)) and c,
        "the copy button did not put the recipe on the clipboard",
    )
    recipe = json.loads(text)
    browser.screenshot("dashboard.png")

    assert "mixed_bfloat16" in title
    assert json.loads(copied) == recipe
    assert recipe["trial"] == 2
    assert recipe["config"]["batch_size"] == 32
    assert recipe["config"]["precision"] == "mixed_bfloat16"
    # Console errors of the click: test_clicking_a_point_redraws_its_validation_curve.


def test_clicking_a_point_redraws_its_validation_curve(browser: Any, page: str) -> None:
    for number in (3, 2):
        heading = select_point(browser, number)
        # the title and the figure come in the same callback answer: drawing takes < 1 s
        drawn = browser.until(
            lambda d, n=number: (
                (s := d.execute_script(DRAWN_CURVE_JS))["trials"] == [f"trial {n}"] and s
            ),
            f"#selection-curve did not redraw with trial {number}'s curve",
            timeout=8,
        )

        assert drawn["title"].startswith(f"Validation curve: {heading}")
    browser.assert_no_console_errors()


def test_a_trial_stored_while_the_page_is_open_appears(
    browser: Any, serve_dashboard: Any, tmp_path: Path
) -> None:
    demo = build_demo_study(tmp_path / "study")
    with serve_dashboard(demo.storage, tmp_path / "dashboard.log") as url:
        open_dashboard(browser, url)
        before = pareto_keys(browser)

        writer = Study(demo.experiment_ref, SPACE, demo.storage, runner=fake_runner)
        writer.optuna.enqueue_trial(NEW_TRIAL)
        writer.optimize(n_trials=writer.finished_count() + 1)
        records = load_records(demo.storage)
        new = records.trials[-1]
        facts = dict(header_info(records).facts)["trials"]

        after = browser.until(
            lambda d: (keys := pareto_keys(browser)) != before and keys,
            f"trial {new.number} did not appear in the Pareto figure without a reload",
            timeout=15,
        )
        browser.until(
            lambda d: facts in browser.text("study-facts"),
            f"the study facts did not update to {facts!r}",
            timeout=15,
        )

    assert new.config is not None and new.config.jit_compile and new.state == "complete"
    assert after == sorted([*before, point_key(new.number)])
    assert after == sorted(point_key(r.number) for r in records.pareto())
    browser.assert_no_console_errors()
