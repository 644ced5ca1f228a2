"""Tests of autotune.trial.isolation.run_isolated: a real trial process per test, one purpose-built
broken experiment per failure kind (tests/fixtures/experiments/faulty.py), and no process left
behind by any of them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from autotune import ConfigError, RunResult, RunSettings, TrialConfig, TrialFailure
from autotune.bundled import load_experiment
from autotune.trial.isolation import run_isolated

pytestmark = pytest.mark.slow  # every test starts a TensorFlow trial process

TRIAL_MODULE = "autotune.trial.process"
GRANDCHILD_TOKEN = "autotune-test-grandchild"  # as in faulty.py
SLOW_EXIT_SECONDS = 60  # as in faulty.py
CONFIG = TrialConfig(batch_size=32)


@dataclass(frozen=True)
class Seen:
    pid: int
    ppid: int
    pgid: int
    created: float
    cmdline: str


class DescendantWatcher:
    """Records every descendant of this process (pid, process group, command line) while running."""

    def __init__(self) -> None:
        self.seen: dict[int, Seen] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> DescendantWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _poll(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            with contextlib.suppress(psutil.Error):
                for process in me.children(recursive=True):
                    # Seen again while it changes: between fork and exec a child still has its
                    # parent's command line (and, before setsid, its process group). A zombie's
                    # command line is empty: keep what it ran.
                    with contextlib.suppress(psutil.Error, OSError):
                        cmdline = " ".join(process.cmdline())
                        if cmdline:
                            self.seen[process.pid] = Seen(
                                process.pid,
                                process.ppid(),
                                os.getpgid(process.pid),
                                process.create_time(),
                                cmdline,
                            )
            self._stop.wait(0.05)

    def trial_processes(self) -> list[Seen]:
        """This process's trial processes (not their own children, which share their command
        line between fork and exec)."""
        return [
            s for s in self.seen.values() if TRIAL_MODULE in s.cmdline and s.ppid == os.getpid()
        ]


def _alive(pid: int, created: float | None = None) -> bool:
    """Whether ``pid`` runs (a zombie is dead; a reused pid is not the process we saw)."""
    try:
        process = psutil.Process(pid)
        if created is not None and abs(process.create_time() - created) > 0.01:
            return False
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _group_members(pgid: int) -> list[psutil.Process]:
    members = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                members.append(process)
    return members


def _wait_until(predicate: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.fixture(autouse=True)
def watcher() -> Iterator[DescendantWatcher]:
    """Watches each test's processes and fails it if any of them outlives it."""
    with DescendantWatcher() as watching:
        yield watching
    # A process killed a moment ago may still be exiting (many threads, large mappings): grant
    # it two seconds; one still running after that has outlived the test.
    _wait_until(lambda: not any(_alive(s.pid, s.created) for s in watching.seen.values()), 2)
    leftover = [s for s in watching.seen.values() if _alive(s.pid, s.created)]
    for stray in leftover:  # do not leak them into later tests
        with contextlib.suppress(ProcessLookupError):
            os.kill(stray.pid, signal.SIGKILL)
    assert not leftover, f"processes the test started are still alive after it: {leftover}"


def _failure(reference: str, settings: RunSettings, config: TrialConfig = CONFIG) -> TrialFailure:
    with pytest.raises(TrialFailure) as caught:
        run_isolated(reference, config, settings)
    return caught.value


# --- a trial that works ------------------------------------------------------------------------


def test_run_isolated_returns_a_run_result(
    tiny_ref: Callable[..., str], settings: RunSettings, tmp_path: Path, watcher: DescendantWatcher
) -> None:
    experiment = load_experiment(tiny_ref())  # an object: run_isolated finds its reference
    result = run_isolated(experiment, CONFIG, settings, log_dir=tmp_path / "logs")
    assert isinstance(result, RunResult)
    assert result.config == CONFIG
    assert result.throughput is not None and result.throughput.median > 0
    assert [p.samples for p in result.curve] == sorted({p.samples for p in result.curve})
    assert len(result.curve) == settings.checkpoints
    assert result.effective["dtype_policy"] == "float32"
    assert result.effective["pipeline"]["drop_remainder"] is True
    assert result.peak_host_bytes > 0
    assert (tmp_path / "logs" / "trial.log").is_file()
    children = watcher.trial_processes()
    assert len(children) == 1
    assert children[0].pgid == children[0].pid  # its own process group
    assert children[0].pid != os.getpid()


def test_a_trial_ends_when_its_result_is_written_not_when_its_process_exits(
    faulty_ref: Callable[[str], str], settings: RunSettings, watcher: DescendantWatcher
) -> None:
    """The process's teardown (here an exit handler that sleeps a minute; with TensorFlow
    loaded, its finalisers) is not waited for: the parent takes the result and kills it."""
    started = time.monotonic()
    result = run_isolated(faulty_ref("slow_exit"), CONFIG, settings)
    assert time.monotonic() - started < SLOW_EXIT_SECONDS / 2
    assert result.throughput is not None and len(result.curve) == settings.checkpoints
    (child,) = watcher.trial_processes()
    assert _wait_until(lambda: not _alive(child.pid, child.created), 2)


# --- one test per failure kind -----------------------------------------------------------------


def test_segfault_is_a_signal(faulty_ref: Callable[[str], str], settings: RunSettings) -> None:
    failure = _failure(faulty_ref("segfault"), settings)
    assert failure.kind == "signal"
    assert "SIGSEGV" in failure.message


@pytest.mark.parametrize("name", ["hang", "hang_with_grandchild"])
def test_hang_is_a_timeout_and_its_process_group_is_killed(
    faulty_ref: Callable[[str], str],
    settings: RunSettings,
    watcher: DescendantWatcher,
    name: str,
) -> None:
    limit = 8
    started = time.monotonic()
    failure = _failure(faulty_ref(name), settings.replace(time_limit_seconds=limit))
    elapsed = time.monotonic() - started
    assert failure.kind == "timeout"
    assert elapsed < limit + 5
    assert f"{limit} s" in failure.message

    (child,) = watcher.trial_processes()
    assert not _alive(child.pid, child.created)
    assert _wait_until(lambda: not _group_members(child.pgid), 2), _group_members(child.pgid)
    if name == "hang_with_grandchild":
        grandchildren = [s for s in watcher.seen.values() if GRANDCHILD_TOKEN in s.cmdline]
        assert grandchildren, "the fixture should have started a grandchild"
        assert all(s.pgid == child.pgid for s in grandchildren)
        assert _wait_until(lambda: not any(_alive(s.pid, s.created) for s in grandchildren), 2)
    request_file = child.cmdline.split()[-3]  # ... autotune.trial.process REQUEST RESULT PARENT_PID
    assert request_file.endswith("request.json")
    leftovers = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            cmdline = " ".join(process.cmdline())
            if request_file in cmdline and process.status() != psutil.STATUS_ZOMBIE:
                leftovers.append(cmdline)
    assert not leftovers


def test_unbounded_allocation_is_oom(
    faulty_ref: Callable[[str], str], settings: RunSettings
) -> None:
    failure = _failure(faulty_ref("allocate"), settings.replace(memory_limit_bytes=2 * 2**30))
    assert failure.kind == "oom"
    assert "memory limit of 2.00 GiB" in failure.message


def test_exception_is_reported_with_its_traceback(
    faulty_ref: Callable[[str], str], settings: RunSettings
) -> None:
    failure = _failure(faulty_ref("raises"), settings)
    assert failure.kind == "exception"
    assert "boom" in failure.message
    assert "RuntimeError" in failure.message
    assert "Traceback (most recent call last)" in failure.log_tail
    assert 'raise RuntimeError("boom")' in failure.log_tail
    assert "RuntimeError: boom" in failure.log_tail


def test_nan_loss_is_nan(faulty_ref: Callable[[str], str], settings: RunSettings) -> None:
    failure = _failure(faulty_ref("nan"), settings)
    assert failure.kind == "nan"
    assert "nan" in failure.message


def test_exit_without_result_is_exit(
    faulty_ref: Callable[[str], str], settings: RunSettings
) -> None:
    failure = _failure(faulty_ref("exits"), settings)
    assert failure.kind == "exit"
    assert "code 3" in failure.message


def test_xla_failure_is_xla_compile(
    faulty_ref: Callable[[str], str], settings: RunSettings
) -> None:
    config = TrialConfig(batch_size=32, jit_compile=True)
    failure = _failure(faulty_ref("xla"), settings, config)
    assert failure.kind == "xla_compile"
    assert "XLA" in failure.message


def test_model_returning_none_is_a_config_error(
    faulty_ref: Callable[[str], str], settings: RunSettings
) -> None:
    with pytest.raises(ConfigError, match=r"model\(\) returned None") as caught:
        run_isolated(faulty_ref("returns_none"), CONFIG, settings)
    assert not isinstance(caught.value, TrialFailure)


def test_output_label_shape_mismatch_is_a_config_error(
    faulty_ref: Callable[[str], str], settings: RunSettings
) -> None:
    with pytest.raises(ConfigError, match="shape") as caught:
        run_isolated(faulty_ref("shape_mismatch"), CONFIG, settings)
    assert "(32, 3)" in str(caught.value)
    assert "(32, 10)" in str(caught.value)


def test_unknown_experiment_name_is_a_config_error(
    faulty_ref: Callable[[str], str], settings: RunSettings
) -> None:
    with pytest.raises(ConfigError, match="no name 'missing'"):
        run_isolated(faulty_ref("missing"), CONFIG, settings)


# --- the trial process dies with its parent ----------------------------------------------------

PARENT_SCRIPT = textwrap.dedent(
    """
    import sys
    from autotune import RunSettings, TrialConfig
    from autotune.trial.isolation import run_isolated

    run_isolated(sys.argv[1], TrialConfig(batch_size=32), RunSettings(time_limit_seconds=120))
    """
)


@contextlib.contextmanager
def _parent_running(reference: str, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A Python process that calls run_isolated(reference) and hangs with it; killed at exit."""
    script = tmp_path / "parent.py"
    script.write_text(PARENT_SCRIPT, encoding="utf-8")
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # its trial directory is never cleaned up
    parent = subprocess.Popen(
        [sys.executable, str(script), reference],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        yield parent
    finally:
        with contextlib.suppress(ProcessLookupError):
            parent.kill()
        parent.wait()


def _trial_child_of(parent: subprocess.Popen[bytes]) -> psutil.Process:
    """Waits for the parent's trial process and until it is well into its start (TensorFlow is
    loading: several threads), so PR_SET_PDEATHSIG is in force."""
    found: list[psutil.Process] = []

    def started() -> bool:
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(parent.pid).children():
                if TRIAL_MODULE in " ".join(child.cmdline()) and child.num_threads() > 1:
                    found.append(child)
                    return True
        return False

    assert _wait_until(started, 60), "the parent never started a trial process"
    return found[0]


def test_killing_the_parent_kills_the_trial_process(
    faulty_ref: Callable[[str], str], tmp_path: Path
) -> None:
    with _parent_running(faulty_ref("hang"), tmp_path) as parent:
        child = _trial_child_of(parent)
        created = child.create_time()
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert _wait_until(lambda: not _alive(child.pid, created), 5), "trial outlived its parent"


def test_killing_the_parent_kills_the_trials_own_children(
    faulty_ref: Callable[[str], str], tmp_path: Path, watcher: DescendantWatcher
) -> None:
    grandchildren: list[Seen] = []
    try:
        with _parent_running(faulty_ref("hang_with_grandchild"), tmp_path) as parent:
            trial = _trial_child_of(parent)
            trial_created = trial.create_time()

            def grandchild_seen() -> bool:
                grandchildren[:] = [
                    s for s in watcher.seen.values() if GRANDCHILD_TOKEN in s.cmdline
                ]
                return bool(grandchildren)

            assert _wait_until(grandchild_seen, 60)
            parent.send_signal(signal.SIGKILL)
            parent.wait()
        assert _wait_until(lambda: not any(_alive(s.pid, s.created) for s in grandchildren), 5), (
            "the trial's own child outlived the parent"
        )
        # The trial kills its children first and then its group, itself included; a process with
        # TensorFlow's mappings takes a moment to exit, so wait for it too rather than race it.
        assert _wait_until(lambda: not _alive(trial.pid, trial_created), 5), (
            "the trial outlived its parent"
        )
    finally:
        for stray in grandchildren:
            if _alive(stray.pid, stray.created):
                os.kill(stray.pid, signal.SIGKILL)
