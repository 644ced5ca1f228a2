"""Fixtures shared by the records, report and dashboard tests: one fake stored study per module
(built by :func:`tests.support.demo_study.build_demo_study`; nothing is trained)."""

from __future__ import annotations

import pytest

from autotune.store.records import StudyRecords, load_records
from tests.support.demo_study import DemoStudy, build_demo_study, profiling_runner


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoStudy:
    return build_demo_study(tmp_path_factory.mktemp("demo"))


@pytest.fixture(scope="module")
def records(demo: DemoStudy) -> StudyRecords:
    return load_records(demo.storage)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> StudyRecords:
    """The demo study with every trial (and the baseline) profiled on the fake CPU."""
    folder = tmp_path_factory.mktemp("profiled")
    return load_records(build_demo_study(folder, runner=profiling_runner).storage)


@pytest.fixture(scope="module")
def reprofiled(tmp_path_factory: pytest.TempPathFactory) -> StudyRecords:
    """The demo study in "pareto" mode: only the Pareto trials profiled, by a re-run."""
    folder = tmp_path_factory.mktemp("pareto")
    demo = build_demo_study(folder, runner=profiling_runner, profile_mode="pareto")
    return load_records(demo.storage)
