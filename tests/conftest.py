"""Fixtures for every test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from autotune.study.placement import LOCK_FOLDER_ENV
from tests.support.postgres import fresh_database


@pytest.fixture(scope="session", autouse=True)
def session_host_locks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The host claims of module- and session-scoped fixtures' studies (made before any
    test's own :func:`host_locks`): a folder of the session's, never the machine's."""
    folder = tmp_path_factory.mktemp("session_host_locks")
    before = os.environ.get(LOCK_FOLDER_ENV)
    os.environ[LOCK_FOLDER_ENV] = str(folder)
    yield folder
    if before is None:
        os.environ.pop(LOCK_FOLDER_ENV, None)
    else:
        os.environ[LOCK_FOLDER_ENV] = before


@pytest.fixture(autouse=True)
def host_locks(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test its own folder of host claims (:mod:`autotune.study.placement`), inherited by the
    processes it starts: a test's studies never collide with another test's, or with a real
    study running on this machine."""
    folder = tmp_path_factory.mktemp("host_locks")
    monkeypatch.setenv(LOCK_FOLDER_ENV, str(folder))
    return folder


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """An empty PostgreSQL database for this test (:mod:`tests.support.postgres`)."""
    yield from fresh_database()
