"""Real-browser tests of the static report and the live dashboard: headless Chromium driven by
Selenium, with Debian's ``/usr/bin/chromium`` and ``/usr/bin/chromedriver`` (nothing is
downloaded at run time: the driver's path is given, so Selenium Manager never runs).

Without the browser, the driver or Selenium the tests are skipped, unless the environment sets
``AUTOTUNE_REQUIRE_BROWSER=1`` (as ``.ci/run`` does): then they fail, so CI never skips them
silently. Screenshots go to ``test-artifacts/`` at the repository root (git-ignored).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
REQUIRE_ENV = "AUTOTUNE_REQUIRE_BROWSER"
#: Seconds any wait in the browser may take before the test fails.
TIMEOUT = 30.0


def _missing() -> str | None:
    """Why the browser tests cannot run here; None when they can."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (path.is_file() and os.access(path, os.X_OK)):
            return f"{path} is missing (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


def _skip_or_fail(reason: str) -> NoReturn:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but the browser tests cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser_ready() -> None:
    """Skips (or, with AUTOTUNE_REQUIRE_BROWSER=1, fails) when Chromium cannot be driven."""
    reason = _missing()
    if reason is not None:
        _skip_or_fail(reason)


#: The Plotly graph div at, or under, the element with id arguments[0] (null when not drawn).
_GRAPH_JS = """
const root = document.getElementById(arguments[0]);
const gd = !root ? null
    : root.classList.contains('js-plotly-plot') ? root : root.querySelector('.js-plotly-plot');
"""

#: Trace uid arguments[1]: its data, how many points the SVG shows for it, the annotations.
_TRACE_JS = (
    _GRAPH_JS
    + """
if (!gd || !gd.data || !gd._fullData) return null;
const index = gd.data.findIndex(t => t.uid === arguments[1]);
if (index < 0) return {missing: true, uids: gd.data.map(t => t.uid)};
const trace = gd.data[index];
const list = v => v == null ? [] : Array.from(v);
let drawn = null;
for (const group of gd.querySelectorAll('g.trace.scatter')) {
  const d = group.__data__;
  if (d && d[0] && d[0].trace && d[0].trace.uid === arguments[1]) {
    drawn = group.querySelectorAll('path.point').length;
  }
}
return {x: list(trace.x), y: list(trace.y), customdata: list(trace.customdata), drawn: drawn,
        annotations: ((gd.layout && gd.layout.annotations) || []).map(a => a.text || '')};
"""
)

#: Viewport coordinates of point arguments[2] of trace uid arguments[1].
_POINT_JS = (
    _GRAPH_JS
    + """
const trace = gd._fullData.find(t => t.uid === arguments[1]);
const layout = gd._fullLayout;
const xa = layout[trace.xaxis.replace('x', 'xaxis')];
const ya = layout[trace.yaxis.replace('y', 'yaxis')];
const box = gd.getBoundingClientRect();
return {x: box.left + xa._offset + xa.l2p(trace.x[arguments[2]]),
        y: box.top + ya._offset + ya.l2p(trace.y[arguments[2]])};
"""
)


class Browser:
    """A headless Chromium (Selenium WebDriver) with the helpers the browser tests share."""

    def __init__(self, driver: Any) -> None:
        self.driver = driver

    def until(self, condition: Any, message: str, timeout: float = TIMEOUT) -> Any:
        """Polls ``condition(driver)`` every 0.1 s until it is truthy and returns its value;
        raises AssertionError(``message``, with the last value seen) after ``timeout`` s. A
        JavaScript error while polling counts as "not yet" (a page still loading)."""
        from selenium.common.exceptions import JavascriptException, TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        last: list[Any] = [None]

        def check(driver: Any) -> Any:
            last[0] = condition(driver)
            return last[0]

        try:
            return WebDriverWait(
                self.driver, timeout, poll_frequency=0.1, ignored_exceptions=(JavascriptException,)
            ).until(check)
        except TimeoutException:
            seen = f"{message} (after {timeout:.0f} s; last seen: {last[0]!r})"
            raise AssertionError(seen) from None

    def console_errors(self) -> list[dict[str, Any]]:
        """SEVERE console entries since the last call (a missing favicon is not an error)."""
        return [
            entry
            for entry in self.driver.get_log("browser")
            if entry.get("level") == "SEVERE" and "favicon" not in entry.get("message", "")
        ]

    def assert_no_console_errors(self) -> None:
        errors = self.console_errors()
        assert not errors, "browser console errors:\n" + json.dumps(errors, indent=2)

    def text(self, element_id: str) -> str:
        from selenium.webdriver.common.by import By

        return str(self.driver.find_element(By.ID, element_id).text)

    def trace(self, graph_id: str, uid: str) -> dict[str, Any] | None:
        """Trace ``uid`` of the Plotly graph at or under element ``graph_id``: its x, y and
        customdata, the points the SVG draws for it (``drawn``) and the figure's annotation
        texts; None while the graph is not drawn yet."""
        result: dict[str, Any] | None = self.driver.execute_script(_TRACE_JS, graph_id, uid)
        if result is not None and result.get("missing"):
            raise AssertionError(f"no trace {uid!r} in #{graph_id}; its traces: {result['uids']}")
        return result

    def click_point(self, graph_id: str, uid: str, index: int) -> None:
        """Moves the mouse onto point ``index`` of trace ``uid`` and clicks, as a user would."""
        from selenium.webdriver.common.actions.action_builder import ActionBuilder

        self.driver.execute_script(
            "document.getElementById(arguments[0]).scrollIntoView({block: 'center'});", graph_id
        )
        where = self.driver.execute_script(_POINT_JS, graph_id, uid, index)
        builder = ActionBuilder(self.driver)
        builder.pointer_action.move_to_location(round(where["x"]), round(where["y"]))
        builder.pointer_action.pause(0.3)  # Plotly finds the hovered point first
        builder.pointer_action.click()
        builder.perform()

    def screenshot(self, name: str) -> Path:
        """The whole page, beyond the window, as PNG in test-artifacts/``name``."""
        ARTIFACTS.mkdir(exist_ok=True)
        metrics = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True, "clip": clip},
        )
        path = ARTIFACTS / name
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


@pytest.fixture(scope="module")
def browser(browser_ready: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    """A headless Chromium with a fresh profile and its console log recorded, for one module."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tmp_path_factory.mktemp("chromium-profile")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver's path is explicit: Selenium Manager (which downloads drivers) never runs.
    service = Service(str(CHROMEDRIVER), log_output=str(profile.parent / "chromedriver.log"))
    try:
        driver = webdriver.Chrome(service=service, options=options)
    except Exception as error:  # a broken install: skipped here, a failure in CI
        _skip_or_fail(f"headless Chromium did not start: {type(error).__name__}: {error}")
    driver.set_page_load_timeout(TIMEOUT)
    driver.set_script_timeout(TIMEOUT)
    try:
        yield Browser(driver)
    finally:
        driver.quit()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_autotune(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m autotune.cli ARGS``; fails the test, with the output, when it exits non-zero."""
    done = subprocess.run(
        [sys.executable, "-m", "autotune.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(
            f"autotune {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        )
    return done


@pytest.fixture(scope="session")
def autotune_cli() -> Any:
    """Runs ``python -m autotune.cli ARGS`` (see :func:`run_autotune`)."""
    return run_autotune


@contextlib.contextmanager
def _serve(storage: str, log: Path) -> Iterator[str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    command = [sys.executable, "-m", "autotune.cli", "dashboard", "--storage", storage]
    command += ["--port", str(port), "--host", "127.0.0.1"]
    with log.open("w", encoding="utf-8") as output:
        process = subprocess.Popen(command, cwd=REPO, stdout=output, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"autotune dashboard exited {process.returncode} before answering:\n"
                    + log.read_text(encoding="utf-8")
                )
            # refused, reset or timed out: not up yet
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(
                    f"autotune dashboard did not answer on {url} in {TIMEOUT:.0f} s:\n"
                    + log.read_text(encoding="utf-8")
                )
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="session")
def serve_dashboard() -> Any:
    """``with serve_dashboard(storage, log) as url:`` runs ``autotune dashboard`` on a free
    127.0.0.1 port until the block ends; ``url`` answers when the block starts."""
    return _serve
