"""Issue 13: the static report HTML-escapes every stored string. A study whose name closes the
page's <title> and opens a script, whose experiment and space names carry event handlers, whose
files lie in a folder named like a tag, and whose failed trials' messages hold a script, a
``javascript:`` link and terminal codes (tests/support/demo_study.py, ``build_hostile_study``)
makes a report where each of them is text: in the page (escaped) and in every figure (Plotly reads
figure text as HTML-like markup, so it is escaped there too)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from autotune.store.records import StudyRecords, load_records
from autotune.views.report import (
    breakdown_figure,
    breakdown_info,
    curves_figure,
    curves_info,
    header_info,
    history_figure,
    history_info,
    importance_figure,
    importance_info,
    pareto_figure,
    pareto_info,
    render_report,
)
from tests.support.demo_study import (
    FAILED,
    HOSTILE_EXPERIMENT,
    HOSTILE_FOLDER,
    HOSTILE_MESSAGE,
    HOSTILE_SPACE,
    HOSTILE_STUDY,
    build_hostile_study,
)

#: The hostile strings' tags as they would appear unescaped.
INJECTED = ("<script>alert", "<img src=x", "<svg onload", "<b onmouseover", "<a href='javascript")


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> StudyRecords:
    study = build_hostile_study(tmp_path_factory.mktemp("hostile"))
    return load_records(study.storage)


@pytest.fixture(scope="module")
def page(records: StudyRecords) -> str:
    return render_report(records)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def test_the_hostile_study_is_stored_as_it_was_named(records: StudyRecords) -> None:
    assert records.study_name == HOSTILE_STUDY
    assert records.experiment == HOSTILE_EXPERIMENT
    assert HOSTILE_FOLDER in records.experiment_reference
    assert [r.reason for r in records.trials if r.number in FAILED] == [HOSTILE_MESSAGE] * 2


def test_no_hostile_tag_reaches_the_page(page: str) -> None:
    for tag in INJECTED:
        assert tag not in page, tag
    head = page[: page.index("</head>")]  # (plotly.js holds an SVG <title> of its own)
    assert head.count("<title>") == 1 and head.count("</title>") == 1


def test_title_heading_and_facts_are_escaped_text(page: str, records: StudyRecords) -> None:
    title = re.search(r"<title>(.*?)</title>", page, re.S)
    heading = re.search(r"<h1>(.*?)</h1>", page, re.S)

    assert title is not None and heading is not None
    assert title.group(1) == heading.group(1) == html.escape(f"autotune report: {HOSTILE_STUDY}")
    facts = dict(header_info(records).facts)
    for label in ("study", "experiment", "search space"):
        assert f"<th>{label}</th><td>{html.escape(facts[label])}</td>" in page
    assert html.escape(HOSTILE_SPACE) in page
    assert html.escape(HOSTILE_FOLDER) in page  # the experiment file's path


def test_every_figure_escapes_stored_strings(records: StudyRecords) -> None:
    figures = [
        pareto_figure(pareto_info(records)),
        pareto_figure(pareto_info(records), 0.5),
        curves_figure(curves_info(records)),
        curves_figure(curves_info(records, [r.number for r in records.trials])),
        breakdown_figure(breakdown_info(records)),
        importance_figure(importance_info(records)),
        history_figure(history_info(records)),
    ]

    texts = [s for figure in figures for s in _strings(figure.to_plotly_json())]

    for tag in INJECTED:
        assert not [s for s in texts if tag in s], tag
    escaped = html.escape(" ".join(HOSTILE_MESSAGE.split()))[:60]
    assert any(escaped in s for s in texts), "the failed trials are listed, escaped"


def test_report_file_from_the_command_is_the_same_page(
    records: StudyRecords, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from autotune.cli import main

    output = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", "--storage", records.storage, "-o", str(output)])

    assert result.exit_code == 0, result.output
    assert f"study {HOSTILE_STUDY}," in result.output
    text = output.read_text(encoding="utf-8")
    for tag in INJECTED:
        assert tag not in text, tag
