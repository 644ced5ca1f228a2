"""Fixtures for every test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from autotune.placement import LOCK_FOLDER_ENV
from tests.support.postgres import fresh_database


@pytest.fixture(autouse=True)
def host_locks(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own folder of host claims (:mod:`autotune.placement`), inherited by the
    processes it starts: a test's studies never collide with another test's, or with a real
    study running on this machine."""
    folder = tmp_path_factory.mktemp("host_locks")
    monkeypatch.setenv(LOCK_FOLDER_ENV, str(folder))
    return folder


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """An empty PostgreSQL database for this test (:mod:`tests.support.postgres`)."""
    yield from fresh_database()
