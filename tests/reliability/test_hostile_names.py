"""Issue 13, items 3 and 4: stored strings are data, never markup. A study, experiment or space
whose name holds Rich markup (``exp[/v2]``, ``[bold]x``) or HTML (``</title><script>``), and a
trial failure whose message holds ``[/data/x]``, HTML and a terminal escape sequence, go through
the real ``autotune`` command: ``run``'s listener and ``status`` print them as text (no
MarkupError, no raw ESC), ``report`` and ``dashboard`` HTML-escape them, and the dashboard
answers 400 to a request whose Host header names another site (DNS rebinding)."""

from __future__ import annotations

import contextlib
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support.demo_study import HOSTILE_SPACE, HOSTILE_STUDY
from tests.support.reliability import MISBEHAVE_FILE, Sandbox, wait_until

#: The experiment's name (the study is named "<experiment>-<space>").
EXPERIMENT_NAME = HOSTILE_STUDY
STUDY_NAME = f"{EXPERIMENT_NAME}-{HOSTILE_SPACE}"
#: What every trial raises when it builds its model (only trial processes build one here: the
#: baseline is stored by the fake-runner driver).
FAILURE = "cannot read [/data/x] <script>alert('failure')</script> \x1b[31mred\x1b[0m"
#: A tag that would run script, as it would appear unescaped.
INJECTED = ("<script>alert(", "<img src=x", "<b onmouseover")

EXPERIMENT_SOURCE = f'''
"""The misbehave experiment under a hostile name; every trial fails building its model."""
import dataclasses
import sys

sys.path.insert(0, {str(MISBEHAVE_FILE.parent)!r})
import misbehave  # noqa: E402


def model():
    raise RuntimeError({FAILURE!r})


hostile = dataclasses.replace(misbehave.misbehave, name={EXPERIMENT_NAME!r}, model=model)
'''


def _hostile_study(box: Sandbox) -> tuple[str, Path]:
    """The experiment reference and space file of a study named :data:`STUDY_NAME`, with its
    (fake) baseline stored."""
    experiment = box.root / "hostile_experiment.py"
    experiment.write_text(EXPERIMENT_SOURCE, encoding="utf-8")
    reference = f"{experiment}:hostile"
    space = box.write_space(HOSTILE_SPACE, {"batch_size": [40, 48, 56]}, file="hostile.toml")
    box.seed_study(space, experiment=reference)
    return reference, space


def _no_raw_control(text: str) -> None:
    # Output to a pipe has no styling, so any ESC came from the data.
    assert "\x1b" not in text, text
    assert "MarkupError" not in text, text


@pytest.mark.slow
def test_run_status_best_and_report_print_hostile_names_and_messages_as_text(
    sandbox: Sandbox,
) -> None:
    reference, space = _hostile_study(sandbox)

    run = sandbox.cli(
        "run", reference, "--space", str(space), "--storage", sandbox.storage,
        "--trials", "2", "--profile", "off", timeout=300,
    )  # fmt: skip

    assert run.returncode == 0, run.stdout + run.stderr
    _no_raw_control(run.stdout + run.stderr)
    trials = sandbox.trials()
    assert [t.user_attrs["failure"]["kind"] for t in trials] == ["exception", "exception"]
    assert all("[/data/x]" in t.user_attrs["failure"]["message"] for t in trials)
    out = " ".join(run.stdout.split())  # Rich may wrap long lines
    assert f"study {STUDY_NAME} in" in out
    assert out.count("failed (exception)") == 2, run.stdout
    assert "cannot read [/data/x] <script>alert('failure')</script> \\x1b[31mred" in out

    status = sandbox.cli("status", "--storage", sandbox.storage)
    assert status.returncode == 0, status.stdout + status.stderr
    _no_raw_control(status.stdout + status.stderr)
    assert f"study {STUDY_NAME} in" in " ".join(status.stdout.split())
    assert "failed: exception" in status.stdout

    best = sandbox.cli("best", "--storage", sandbox.storage)
    assert best.returncode == 0, best.stdout + best.stderr
    _no_raw_control(best.stdout + best.stderr)

    report = sandbox.cli("report", "--storage", sandbox.storage, "-o", "report.html")
    assert report.returncode == 0, report.stdout + report.stderr
    page = (sandbox.root / "report.html").read_text(encoding="utf-8")
    for tag in INJECTED:
        assert tag not in page, tag
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    assert title is not None
    assert title.group(1) == "autotune report: " + _html(STUDY_NAME)
    # The failed trials listed under the Pareto figure (Plotly's JSON writes "/" as \\u002f).
    assert "[\\u002fdata\\u002fx] &lt;script&gt;alert(&#x27;failure&#x27;)" in page


def _html(text: str) -> str:
    import html

    return html.escape(text)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str, host: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_dashboard_escapes_the_title_and_refuses_foreign_host_headers(sandbox: Sandbox) -> None:
    _hostile_study(sandbox)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    server = sandbox.start_cli(
        "dashboard", "--storage", sandbox.storage, "--host", "127.0.0.1", "--port", str(port)
    )
    try:

        def answers() -> bool:
            with contextlib.suppress(OSError):
                return _get(url)[0] == 200
            return False

        assert wait_until(answers, 60, every=0.2), sandbox.output(server)
        status, index = _get(url)
        assert status == 200
        title = re.search(r"<title>(.*?)</title>", index, re.S)
        assert title is not None, index
        assert title.group(1) == _html(f"autotune: {STUDY_NAME}")
        for tag in INJECTED:
            assert tag not in index, tag
        assert _get(url, f"localhost:{port}")[0] == 200
        assert _get(url + "_dash-layout", f"127.0.0.1:{port}")[0] == 200
        refused, text = _get(url, f"attacker.example:{port}")
        assert refused == 400
        assert "Host header" in text
        assert _get(url + "_dash-layout", "attacker.example")[0] == 400
        assert _get(url, f"127.0.0.1:{port + 1}")[0] == 400
        assert "WARNING: the dashboard listens" not in sandbox.output(server)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


@pytest.mark.parametrize("host", ["0.0.0.0"])
def test_dashboard_beyond_localhost_warns_loudly(sandbox: Sandbox, host: str) -> None:
    _hostile_study(sandbox)
    port = _free_port()
    server = sandbox.start_cli(
        "dashboard", "--storage", sandbox.storage, "--host", host, "--port", str(port)
    )
    url = f"http://127.0.0.1:{port}/"
    try:

        def answers() -> bool:
            with contextlib.suppress(OSError):
                return _get(url)[0] == 200
            return False

        assert wait_until(answers, 60, every=0.2), sandbox.output(server)
        time.sleep(0.2)
        output = " ".join(sandbox.output(server).split())
        assert "WARNING: the dashboard listens on every address of this machine" in output
        assert "anyone who can reach that port sees the whole study" in output
        assert _get(url, f"{socket.gethostname()}:{port}")[0] == 200
        assert _get(url, f"attacker.example:{port}")[0] == 400
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)
