"""Trial processes started ahead (autotune.trial.isolation, ``prestart=True``): the next trial's
process imports its backend once the current run has nothing more to time (its untimed curve, or
its end when no curve follows), the next trial or round side by side runs in it, one that does
not suit is stopped first, and none is left behind."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from autotune import RunSettings, TrialConfig
from autotune.trial import isolation
from autotune.trial.isolation import (
    PRESTART_ENV,
    discard_spare,
    run_isolated,
    run_isolated_side_by_side,
)

pytestmark = pytest.mark.slow  # every test starts TensorFlow trial processes

CONFIG = TrialConfig(batch_size=32)


@pytest.fixture(autouse=True)
def no_spare_left() -> Iterator[None]:
    """Each test starts without a process started ahead, and leaves none alive behind it."""
    discard_spare()
    yield
    spare = isolation._spare
    discard_spare()
    assert spare is None or spare.process.poll() is not None


def spare_pid() -> int | None:
    spare = isolation._spare
    return spare.process.pid if spare is not None else None


def gone(pid: int) -> bool:
    with contextlib.suppress(psutil.NoSuchProcess):
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    return True


def test_the_next_trial_runs_in_the_process_started_during_the_curve(
    tiny_ref: Callable[..., str], settings: RunSettings, tmp_path: Path
) -> None:
    first = run_isolated(tiny_ref(), CONFIG, settings, log_dir=tmp_path / "a", prestart=True)
    ahead = spare_pid()
    assert ahead is not None, "the first trial's curve did not start the next process"
    assert psutil.Process(ahead).is_running()
    assert "--spare" in psutil.Process(ahead).cmdline()

    threads = TrialConfig(batch_size=32, intra_op_threads=1, inter_op_threads=1)
    second = run_isolated(tiny_ref(), threads, settings, log_dir=tmp_path / "b", prestart=True)

    assert gone(ahead)  # it ran the second trial and ended with it
    assert first.throughput is not None and second.throughput is not None
    assert len(second.curve) == settings.checkpoints
    # thread pools are still set in a process that imported TensorFlow ahead of its request
    assert (second.effective["intra_op_threads"], second.effective["inter_op_threads"]) == (1, 1)
    assert (tmp_path / "b" / "trial.log").stat().st_size > 0
    assert spare_pid() not in (None, ahead)  # the second trial's curve started the next one


def test_a_process_started_ahead_that_does_not_suit_is_stopped_first(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    run_isolated(tiny_ref(), CONFIG, settings, prestart=True)
    ahead = spare_pid()
    assert ahead is not None

    other = run_isolated(
        tiny_ref(), CONFIG, settings.replace(curve=False), env={"AUTOTUNE_TEST": "1"},
        prestart=True,
    )  # fmt: skip

    assert other.throughput is not None
    assert gone(ahead)  # another environment: not the process this trial needs
    # no curve: the next one starts once its last window is timed, with its environment
    spare = isolation._spare
    assert spare is not None and spare.process.pid != ahead
    assert spare.env["AUTOTUNE_TEST"] == "1"


def test_a_round_side_by_side_runs_in_the_process_started_ahead_and_starts_the_next(
    tiny_ref: Callable[..., str], settings: RunSettings
) -> None:
    run_isolated(tiny_ref(), CONFIG, settings.replace(curve=False), prestart=True)
    ahead = spare_pid()
    assert ahead is not None

    results = run_isolated_side_by_side(
        tiny_ref(), (CONFIG, TrialConfig(batch_size=64)), settings.replace(curve=False),
        pairs=2, prestart=True,
    )  # fmt: skip

    assert gone(ahead)  # the round ran in it
    assert [len(r.window_samples_per_second) for r in results] == [2, 2]
    assert spare_pid() not in (None, ahead)  # its last window timed, the next one started


def test_without_prestart_or_with_it_off_nothing_is_started_ahead(
    tiny_ref: Callable[..., str], settings: RunSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_isolated(tiny_ref(), CONFIG, settings)
    assert spare_pid() is None
    monkeypatch.setenv(PRESTART_ENV, "0")
    run_isolated(tiny_ref(), CONFIG, settings, prestart=True)
    assert spare_pid() is None


def test_a_process_started_ahead_exits_when_no_trial_comes() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "autotune.trial.process", "--spare", str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=isolation.child_environment(),
    )
    assert process.stdin is not None
    process.stdin.close()  # the parent gives it nothing: it preloads, then exits

    assert process.wait(timeout=120) == 0
