"""Fixtures of the reliability tests. The helpers they share (:class:`Sandbox`, the fixture
experiment's references, waiting and reading the storage) are in tests/support/reliability.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.reliability import Sandbox, kill_strays, wait_until


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    """This test's sandbox; the test fails if a process it started outlives it."""
    box = Sandbox(tmp_path)
    yield box
    # A process may need a moment to go after its parent was killed; the tests that care wait.
    if not wait_until(lambda: not box.stray_processes(), 3):
        leftover = kill_strays(box)
        assert not leftover, f"processes left behind by the test: {leftover}"
