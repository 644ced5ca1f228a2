"""Runs one trial in a fresh process with a time and memory limit, and classifies how it ended.

The trial process is started with ``subprocess`` (a fresh interpreter: never a fork of a process
that imported TensorFlow), in its own process group, and dies with its parent. Everything fixed at
process start (environment such as ``KERAS_BACKEND``, ``TF_CPP_MIN_LOG_LEVEL``, ``XLA_FLAGS``) is
set in :func:`child_environment`, the one place a trial process is configured.

A study's runs (``prestart=True``: its trials, baseline runs, anchors, seed curves and
confirmation rounds) save the next process's start: once a run has nothing more to time (its
untimed curve begins, or its last window is timed when no curve follows), the parent starts the
next trial process ahead, which imports the Keras backend (a few seconds: most of a trial's time
outside its phases) while the curve trains or the run ends and its result is stored, then waits
for its request (:class:`Spare`). The next run takes it when its environment is the same, or it
is stopped first: its import never overlaps a timed phase of another process, since every run
of a study either takes it or stops it before its own process starts.
``AUTOTUNE_PRESTART=0`` turns this off.

A trial ends once its process has written its outcome (or exited): the parent does not wait for
the interpreter's teardown, which with TensorFlow loaded would compete with the next process's
import. When a trial ends, everything it started goes with it: its process group, its
descendants (the trial process is a child subreaper, so orphans stay among them) and any process
carrying its environment token (:data:`TOKEN_ENV`), which finds a process that left the group
with ``setsid`` even after its parent died. Its output goes through a pipe into a capped log
(:mod:`autotune.trial.trial_log`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import site
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from autotune.bundled import reference_of
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ConfigError, TrialFailure
from autotune.experiment import Experiment
from autotune.store.result import RunResult
from autotune.trial.trial_log import LOG_TAIL_LINES as LOG_TAIL_LINES
from autotune.trial.trial_log import LogCopier, log_limit
from autotune.trial.trial_log import log_tail as log_tail

POLL_SECONDS = 0.1
DEFAULT_MEMORY_FRACTION = 0.8
#: Environment variable holding a token unique to one trial process; every process it starts
#: inherits it, so the parent can find them all when the trial ends.
TOKEN_ENV = "AUTOTUNE_TRIAL_TOKEN"
KILL_ROUNDS = 5
#: Set to "0" to start every trial process when its trial starts (no process started ahead).
PRESTART_ENV = "AUTOTUNE_PRESTART"


def child_environment(
    extra: Mapping[str, str] | None = None, backend: str = "tensorflow"
) -> dict[str, str]:
    """The environment of a trial process: the caller's, plus autotune's fixed settings, among
    them ``KERAS_BACKEND`` (the trial's ``backend``, whatever the caller's environment says).

    ``extra`` overrides anything (for example ``CUDA_VISIBLE_DEVICES`` or ``XLA_FLAGS``).
    """
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["KERAS_BACKEND"] = backend
    env["PYTHONUNBUFFERED"] = "1"
    source_root = _source_root()
    if source_root is not None:
        paths = (source_root, env.get("PYTHONPATH", ""))
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.update(extra or {})
    return env


def _source_root() -> str | None:
    """The folder holding the ``autotune`` package the parent imported, when the child needs it
    on its path (a checkout run without installing); None for an installed package, which the
    child's interpreter finds by itself (putting site-packages on PYTHONPATH would put it before
    the standard library)."""
    root = Path(__file__).resolve().parents[2]  # <root>/autotune/trial/isolation.py
    installed = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    installed |= {*site.getsitepackages(), site.getusersitepackages()}
    if any(Path(folder).resolve() == root for folder in installed if folder):
        return None
    return str(root)


def _tree_rss(process: psutil.Process) -> int:
    """Resident memory (bytes) of a process and all its descendants."""
    total = 0
    with contextlib.suppress(psutil.Error):
        for member in [process, *process.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += member.memory_info().rss
    return total


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _descendants(pid: int) -> list[psutil.Process]:
    with contextlib.suppress(psutil.Error):
        return list(psutil.Process(pid).children(recursive=True))
    return []


def token_carriers(token: str, since: float) -> list[psutil.Process]:
    """Live processes, started at or after ``since`` (seconds since the epoch, as
    ``time.time()``), whose environment holds ``TOKEN_ENV=token``: a trial process and all it
    started, in its group or not, unless one cleared its environment."""
    found = []
    me = os.getpid()
    for process in psutil.process_iter(["create_time"]):
        with contextlib.suppress(psutil.Error, OSError):
            if process.pid == me or (process.info["create_time"] or 0) < since - 1:
                continue
            if process.environ().get(TOKEN_ENV) != token:
                continue
            if process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
    return found


def kill_trial(pid: int, token: str, since: float) -> None:
    """SIGKILLs the trial process ``pid``, its process group, its descendants and every
    process carrying its token (see :func:`token_carriers`), until none of them is left."""
    for _ in range(KILL_ROUNDS):
        victims = {p.pid: p for p in [*_descendants(pid), *token_carriers(token, since)]}
        _kill_group(pid)
        for victim in victims.values():
            with contextlib.suppress(psutil.Error):
                victim.kill()  # psutil checks the pid still names the same process
        if not victims:
            return
        time.sleep(0.02)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# ------------------------------------------------------------------ processes started ahead
@dataclass
class Spare:
    """A trial process started ahead of its trial (``python -m autotune.trial.process --spare``):
    it imports the Keras backend, then waits for a request line on its stdin."""

    process: subprocess.Popen[bytes]
    read_fd: int  # its stdout and stderr: the log of the trial that takes it
    env: dict[str, str]  # its environment without its token
    token: str
    since: float

    def suits(self, env: Mapping[str, str]) -> bool:
        """Whether it is alive and was started with ``env`` (fixed at process start)."""
        return self.process.poll() is None and self.env == dict(env)

    def hand(self, request_path: Path, result_path: Path) -> bool:
        """Gives it its request; False when it can no longer take one."""
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(f"{request_path}\t{result_path}\n".encode())
            stdin.close()
        except OSError:  # it died
            return False
        return True

    def stop(self) -> None:
        """Stops it and everything it started; its log goes nowhere."""
        kill_trial(self.process.pid, self.token, self.since)
        self.process.wait()
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        with contextlib.suppress(OSError):
            os.close(self.read_fd)


_spare: Spare | None = None


def prestart_enabled() -> bool:
    """Whether trial processes may be started ahead (:data:`PRESTART_ENV` is not "0")."""
    return os.environ.get(PRESTART_ENV, "1").strip() != "0"


def start_spare(env: Mapping[str, str]) -> None:
    """Starts a process ahead for the next trial, with ``env`` (its token added); nothing when
    one is waiting already or starting ahead is off."""
    global _spare
    if _spare is not None or not prestart_enabled():
        return
    try:
        process, read_fd, token, since = _launch(["--spare", str(os.getpid())], env, True)
    except OSError:  # the trial then starts its own process, as without this
        return
    _spare = Spare(process, read_fd, dict(env), token, since)


def take_spare(env: Mapping[str, str]) -> Spare | None:
    """The process started ahead, when it suits ``env``; one that does not is stopped first."""
    global _spare
    spare, _spare = _spare, None
    if spare is None:
        return None
    if spare.suits(env):
        return spare
    spare.stop()
    return None


def discard_spare() -> None:
    """Stops a process started ahead that no trial took (at exit, too)."""
    global _spare
    spare, _spare = _spare, None
    if spare is not None:
        spare.stop()


atexit.register(discard_spare)


def run_isolated(
    experiment: Experiment | str,
    config: TrialConfig,
    settings: RunSettings,
    *,
    log_dir: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    log_limit_bytes: int | None = None,
    prestart: bool = False,
) -> RunResult:
    """Runs one trial in a fresh process and returns its :class:`RunResult`.

    The trial's log (its stdout and stderr) is written to ``log_dir/trial.log`` when ``log_dir`` is
    given (appended to, after a marker line, when the file exists), else kept in memory only. Past
    ``log_limit_bytes`` (default ``$AUTOTUNE_TRIAL_LOG_LIMIT``, else 64 MiB) the middle of the
    output is dropped (see :mod:`autotune.trial.trial_log`). A log that cannot be written (a full
    disk) costs the trial its log file, never its result. With ``prestart`` the trial takes the
    process started ahead when it suits it, and starts one for the next trial once its own
    timing is over (see the module's docstring).

    Raises:
        TrialFailure: the trial failed; ``kind`` says how (signal, exit, timeout, oom,
            xla_compile, nan, loss_scale, exception) and ``log_tail`` holds the end of its log.
        ConfigError: the experiment cannot be loaded or built (not worth retrying).
    """
    request: dict[str, Any] = {
        "experiment": reference_of(experiment),
        "config": config.to_dict(),
        "settings": settings.to_dict(),
    }
    outcome = _run_request(request, config, settings, log_dir, env, log_limit_bytes, prestart)
    return RunResult.from_dict(outcome["result"])


def run_isolated_pair(
    experiment: Experiment | str,
    candidate: TrialConfig,
    baseline: TrialConfig,
    settings: RunSettings,
    *,
    pairs: int,
    log_dir: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[RunResult, RunResult]:
    """Times ``candidate`` and ``baseline`` side by side in one fresh process
    (:func:`run_isolated_side_by_side`); returns (candidate's result, baseline's)."""
    first, second = run_isolated_side_by_side(
        experiment, (candidate, baseline), settings, pairs=pairs, log_dir=log_dir, env=env
    )
    return first, second


def run_isolated_side_by_side(
    experiment: Experiment | str,
    configs: Sequence[TrialConfig],
    settings: RunSettings,
    *,
    pairs: int,
    log_dir: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    prestart: bool = False,
) -> tuple[RunResult, ...]:
    """Times ``configs`` (two or more) side by side in one fresh process, ``pairs`` rounds of
    windows in turn (:func:`autotune.trial.runner.run_side_by_side`), throughput only; their
    results in the same order. The process runs on the first's backend and thread pools, which
    the others must share (ConfigError otherwise). Logs, limits, failures and ``prestart`` as
    :func:`run_isolated` (with ``prestart``, the next process starts once the last window is
    timed)."""
    first, *others = configs
    request: dict[str, Any] = {
        "experiment": reference_of(experiment),
        "config": first.to_dict(),
        "settings": settings.to_dict(),
        "beside": [c.to_dict() for c in others],
        "pairs": pairs,
    }
    outcome = _run_request(request, first, settings, log_dir, env, None, prestart)
    beside = [RunResult.from_dict(r) for r in outcome["beside"]]
    return (RunResult.from_dict(outcome["result"]), *beside)


def _run_request(
    request: dict[str, Any],
    config: TrialConfig,
    settings: RunSettings,
    log_dir: Path | str | None,
    env: Mapping[str, str] | None,
    log_limit_bytes: int | None,
    prestart: bool,
) -> dict[str, Any]:
    """Runs ``request`` in a trial process for ``config`` (see :func:`run_isolated`); returns
    its outcome of status "ok"."""
    memory_limit = settings.memory_limit_bytes or int(
        psutil.virtual_memory().total * DEFAULT_MEMORY_FRACTION
    )
    limit = log_limit(log_limit_bytes)
    with _scratch() as workdir:
        request_path, result_path = workdir / "request.json", workdir / "result.json"
        marker = workdir / "untimed" if prestart else None
        if marker is not None:
            request["untimed_marker"] = str(marker)
        try:
            request_path.write_text(json.dumps(request), encoding="utf-8")
        except OSError as error:
            raise TrialFailure(
                "exception", f"the trial's request could not be written: {error}"
            ) from error
        child_env = child_environment(env, config.backend)
        spare = take_spare(child_env) if prestart else None
        if spare is not None and spare.hand(request_path, result_path):
            process, read_fd, token, since = spare.process, spare.read_fd, spare.token, spare.since
        else:
            if spare is not None:
                spare.stop()
            process, read_fd, token, since = _start(request_path, result_path, child_env)
        log = LogCopier(
            read_fd, Path(log_dir) / "trial.log" if log_dir is not None else None, limit
        )
        log.start()
        stopped: tuple[str, str] | None = None
        untimed = _Untimed(marker, lambda: start_spare(child_env))
        try:
            stopped = _watch(
                process, settings.time_limit_seconds, memory_limit, token, since, untimed,
                result_path,
            )  # fmt: skip
        finally:  # on any exit path, including KeyboardInterrupt
            kill_trial(process.pid, token, since)
            process.wait()
            log.finish()
        return _outcome(process.returncode, stopped, result_path, log.tail())


def _start(
    request_path: Path, result_path: Path, env: Mapping[str, str]
) -> tuple[subprocess.Popen[bytes], int, str, float]:
    """A fresh trial process for the request: (process, its output's read end, token, start)."""
    arguments = [str(request_path), str(result_path), str(os.getpid())]
    return _launch(arguments, env, False)


def _launch(
    arguments: list[str], env: Mapping[str, str], stdin_pipe: bool
) -> tuple[subprocess.Popen[bytes], int, str, float]:
    """``python -m autotune.trial.process ARGUMENTS`` in a session of its own, with ``env`` and a
    fresh token, its output into a pipe (its stdin a pipe with ``stdin_pipe``, else closed):
    (process, the output's read end, token, start time). A failed start closes the pipe and
    raises."""
    token = uuid.uuid4().hex
    read_fd, write_fd = os.pipe()
    since = time.time()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "autotune.trial.process", *arguments],
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=write_fd,
            stderr=subprocess.STDOUT,
            env={**env, TOKEN_ENV: token},
            start_new_session=True,
        )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    return process, read_fd, token, since


@dataclass
class _Untimed:
    """Calls ``then`` once, when the trial creates ``marker`` (its timing is over)."""

    marker: Path | None
    then: Callable[[], None]

    def check(self) -> None:
        if self.marker is not None and self.marker.exists():
            self.marker = None
            self.then()


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    """A temporary folder for the request and the result, removed afterwards; a trial that
    cannot have one (a full or missing temporary folder) fails."""
    try:
        folder = tempfile.TemporaryDirectory(prefix="autotune-trial-", ignore_cleanup_errors=True)
    except OSError as error:
        raise TrialFailure(
            "exception", f"no temporary folder for the trial in {tempfile.gettempdir()!r}: {error}"
        ) from error
    with folder as scratch:
        yield Path(scratch)


def _watch(
    process: subprocess.Popen[bytes],
    time_limit: float,
    memory_limit: int,
    token: str,
    since: float,
    untimed: _Untimed,
    result_path: Path,
) -> tuple[str, str] | None:
    """Waits for the trial process until it has written its outcome to ``result_path`` (its
    interpreter's teardown, a second or more with TensorFlow loaded, is left to the kill that
    follows: nothing of the trial happens after it) or has exited; stops it past its limits.
    Returns (kind, why) if stopped."""
    watched = psutil.Process(process.pid)
    deadline = time.monotonic() + time_limit
    while process.poll() is None:
        untimed.check()
        if result_path.exists():  # written whole (os.replace): the trial is over
            break
        if time.monotonic() > deadline:
            kill_trial(process.pid, token, since)
            return "timeout", f"trial ran past its time limit of {time_limit:g} s and was stopped"
        rss = _tree_rss(watched)
        if rss > memory_limit:
            kill_trial(process.pid, token, since)
            return "oom", (
                f"trial used {rss / 2**30:.2f} GiB, over its memory limit of "
                f"{memory_limit / 2**30:.2f} GiB, and was stopped"
            )
        time.sleep(POLL_SECONDS)
    untimed.check()  # a run that ended between two looks: its result is stored meanwhile
    return None


def _outcome(
    returncode: int, stopped: tuple[str, str] | None, result_path: Path, tail: str
) -> dict[str, Any]:
    """The trial process's outcome of status "ok"; TrialFailure or ConfigError otherwise."""
    if stopped is not None:
        raise TrialFailure(stopped[0], stopped[1], tail)  # type: ignore[arg-type]
    if result_path.exists():
        outcome: dict[str, Any] = json.loads(result_path.read_text(encoding="utf-8"))
        if outcome["status"] == "ok":
            return outcome
        if outcome["status"] == "config_error":
            raise ConfigError(outcome["message"])
        raise TrialFailure(outcome["kind"], outcome["message"], tail)
    if returncode < 0:
        name = _signal_name(-returncode)
        hint = " (possibly the kernel's out-of-memory killer)" if name == "SIGKILL" else ""
        raise TrialFailure("signal", f"trial process was killed by {name}{hint}", tail)
    raise TrialFailure(
        "exit", f"trial process exited with code {returncode} without reporting a result", tail
    )
