"""Fixtures shared by the records, report and dashboard tests: one fake stored study per module
(built by :func:`conftest_report.build_demo_study`; nothing is trained)."""

from __future__ import annotations

import pytest
from conftest_report import DemoStudy, build_demo_study

from autotune.records import StudyRecords, load_records


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoStudy:
    return build_demo_study(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def records(demo: DemoStudy) -> StudyRecords:
    return load_records(demo.storage)
