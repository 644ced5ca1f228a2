"""Shared helpers of the reliability tests (the guarantees listed in docs/reliability.md).

Every test works in a :class:`Sandbox`: its own folder, SQLite storage, temporary folder for
trial processes (``TMPDIR``) and marker folder, so the processes it starts can be told apart
from other people's on a shared machine. After each test, any process started under the
sandbox that is still alive fails the test (and is killed).

Two kinds of subject: the real ``autotune`` command (``python -m autotune.cli``) with the
misbehaving fixture experiment (tests/fixtures/experiments/misbehave.py), and, where a
guarantee is about the study and its storage rather than the trial process, a study driven by a
fake runner (tests/fixtures/drivers/fake_study.py) that can be killed at any moment cheaply.

The test modules import these helpers from here; the ``sandbox`` fixture, which gives each test
its :class:`Sandbox` and fails it on a process left behind, is in tests/reliability/conftest.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import optuna
import psutil
from optuna.trial import FrozenTrial

optuna.logging.set_verbosity(optuna.logging.ERROR)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
MISBEHAVE_FILE = FIXTURES / "experiments" / "misbehave.py"
MISBEHAVE = f"{MISBEHAVE_FILE}:misbehave"
MISBEHAVE_OTHER = f"{MISBEHAVE_FILE}:misbehave_other"
DRIVER = FIXTURES / "drivers" / "fake_study.py"
TRIAL_MODULE = "autotune.trial.process"
CHILD_TOKEN = "autotune-test-misbehave-child"  # as in misbehave.py

#: Tiny measurement settings for real TensorFlow trials of the misbehave experiment.
TINY_MEASURE: dict[str, Any] = {
    "warmup_max_steps": 20,
    "windows": 2,
    "window_seconds": 0.02,
    "checkpoints": 2,
    "curve_samples": 256,
    "time_limit_seconds": 60,
}

#: A large space for fake-runner studies: random draws rarely collide by chance.
FAKE_SPACE = {
    "precision": ["float32", "mixed_bfloat16", "mixed_float16"],
    "jit_compile": [False, True],
    "batch_size": {"low": 16, "high": 4096, "multiple_of": 16},
}


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(value)


def space_text(name: str, parameters: Mapping[str, Any], measure: Mapping[str, Any] | None) -> str:
    lines = [f"name = {_toml(name)}", "", "[parameters]"]
    lines += [f"{key} = {_toml(value)}" for key, value in parameters.items()]
    if measure:
        lines += ["", "[measure]"] + [f"{key} = {_toml(value)}" for key, value in measure.items()]
    return "\n".join(lines) + "\n"


def wait_until(predicate: Callable[[], Any], seconds: float, every: float = 0.05) -> Any:
    """The predicate's first truthy value within ``seconds``, else its last value."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    return predicate()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie is dead)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def group_members(pgid: int) -> list[int]:
    members = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                members.append(process.pid)
    return members


def one_line_error(stderr: str) -> str:
    """The error line of a failed command; fails unless stderr is exactly one such line."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("autotune: error:"), lines[0]
    return lines[0]


def stored_trials(storage: str) -> list[FrozenTrial]:
    """Every trial of the storage's only study, read with plain Optuna."""
    names = optuna.get_all_study_names(storage)
    assert len(names) == 1, names
    return optuna.load_study(study_name=names[0], storage=storage).get_trials(deepcopy=False)


def lineage(trial: FrozenTrial) -> int:
    """The number of the first trial of a retry lineage (Optuna's 'failed_trial')."""
    return int(trial.system_attrs.get("failed_trial", trial.number))


def snapshot(trial: FrozenTrial) -> str:
    """Everything stored about a trial, as text: equal text means an intact trial."""
    return json.dumps(
        {
            "state": trial.state.name,
            "values": trial.values,
            "params": trial.params,
            "user_attrs": trial.user_attrs,
            "system_attrs": trial.system_attrs,
            "start": str(trial.datetime_start),
            "complete": str(trial.datetime_complete),
        },
        sort_keys=True,
    )


def _reset_sigint() -> None:
    """A terminal's child gets Ctrl-C as KeyboardInterrupt even when pytest ignores SIGINT."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Sandbox:
    """One test's folder, storage and process environment."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"
        self.markers = root / "markers"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.markers.mkdir(exist_ok=True)
        self.db = root / "study.db"
        self.storage = f"sqlite:///{self.db}"
        self.calls = root / "calls.jsonl"
        self._outputs = 0

    # ------------------------------------------------------------------ environment and files
    def env(self, faults: Mapping[int, str] | None = None, **extra: str) -> dict[str, str]:
        env = {
            **os.environ,
            "TMPDIR": str(self.tmp),
            "AUTOTUNE_TEST_MARKERS": str(self.markers),
            "AUTOTUNE_TEST_FAULTS": json.dumps({str(k): v for k, v in (faults or {}).items()}),
            "PYTHONUNBUFFERED": "1",
            "COLUMNS": "200",
        }
        for key in ("FAKE_HOLD_TRIAL", "FAKE_PAUSE_IN_SAMPLE"):
            env.pop(key, None)
        env.update(extra)
        return env

    def write_space(
        self,
        name: str,
        parameters: Mapping[str, Any],
        measure: Mapping[str, Any] | None = None,
        file: str | None = None,
    ) -> Path:
        path = self.root / (file or f"{name}.toml")
        path.write_text(space_text(name, parameters, measure), encoding="utf-8")
        return path

    def db_digest(self) -> str:
        return hashlib.sha256(self.db.read_bytes()).hexdigest()

    # ------------------------------------------------------------------ commands
    def cli(
        self,
        *args: str,
        faults: Mapping[int, str] | None = None,
        timeout: float = 300,
        **env: str,
    ) -> subprocess.CompletedProcess[str]:
        """Runs ``python -m autotune.cli ARGS`` in the sandbox (``env``: more environment
        variables) and waits for it."""
        return subprocess.run(
            [sys.executable, "-m", "autotune.cli", *args],
            cwd=self.root,
            env=self.env(faults, **env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def _start(self, command: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
        self._outputs += 1
        out = open(self.root / f"out{self._outputs}.txt", "w+", encoding="utf-8")  # noqa: SIM115
        process = subprocess.Popen(
            command,
            cwd=self.root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_reset_sigint,
        )
        process.output_file = out  # type: ignore[attr-defined]
        return process

    @staticmethod
    def output(process: subprocess.Popen[str]) -> str:
        handle = process.output_file  # type: ignore[attr-defined]
        handle.flush()
        handle.seek(0)
        return str(handle.read())

    def start_cli(
        self, *args: str, faults: Mapping[int, str] | None = None
    ) -> subprocess.Popen[str]:
        """Starts ``python -m autotune.cli ARGS`` (stdout and stderr into a file)."""
        return self._start([sys.executable, "-m", "autotune.cli", *args], self.env(faults))

    def driver(
        self, *args: str, timeout: float = 300, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """Runs the fake-runner driver and waits for it."""
        return subprocess.run(
            [sys.executable, str(DRIVER), *args],
            cwd=self.root,
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def start_driver(self, *args: str, **env: str) -> subprocess.Popen[str]:
        return self._start([sys.executable, str(DRIVER), *args], self.env(**env))

    def seed_study(
        self,
        space: Path,
        *,
        experiment: str = MISBEHAVE,
        enqueue: Sequence[Mapping[str, Any]] = (),
        baseline: bool = True,
    ) -> None:
        """Makes the study ``autotune run EXPERIMENT --space SPACE`` would make, with a fake
        baseline stored (so the command goes straight to trials) and ``enqueue`` queued."""
        args = ["seed", self.storage, str(space), "--experiment", experiment]
        args += [f"--enqueue={json.dumps(params)}" for params in enqueue]
        if not baseline:
            args.append("--no-baseline")
        done = self.driver(*args, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr

    # ------------------------------------------------------------------ observing
    def markers_seen(self) -> list[dict[str, Any]]:
        found = []
        for path in sorted(self.markers.glob("*.json")):
            with contextlib.suppress(OSError, ValueError):
                found.append(json.loads(path.read_text(encoding="utf-8")))
        return sorted(found, key=lambda m: m["time"])

    def wait_for_marker(self, seconds: float, after: int = 0) -> dict[str, Any]:
        """The (after+1)-th trial to start misbehaving; fails after ``seconds``."""
        found = wait_until(lambda: len(self.markers_seen()) > after, seconds, every=0.1)
        assert found, f"no trial started misbehaving within {seconds} s"
        return self.markers_seen()[after]

    def call_events(self) -> list[dict[str, Any]]:
        if not self.calls.exists():
            return []
        events = []
        for line in self.calls.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):  # a line being written
                events.append(json.loads(line))
        return events

    def trials(self) -> list[FrozenTrial]:
        return stored_trials(self.storage)

    def stray_processes(self) -> list[psutil.Process]:
        """Live processes started under this sandbox (by command line or TMPDIR)."""
        mark = str(self.root) + os.sep
        strays = []
        for process in psutil.process_iter():
            if process.pid == os.getpid():
                continue
            with contextlib.suppress(psutil.Error, OSError):
                if process.status() == psutil.STATUS_ZOMBIE:
                    continue
                if mark in " ".join(process.cmdline()) or process.environ().get(
                    "TMPDIR", ""
                ).startswith(mark):
                    strays.append(process)
        return strays


def kill_strays(sandbox: Sandbox) -> list[str]:
    strays = sandbox.stray_processes()
    described = []
    for process in strays:
        with contextlib.suppress(psutil.Error):
            described.append(f"{process.pid}: {' '.join(process.cmdline())[:200]}")
            process.kill()
    return described


def wait_for_call(
    box: Sandbox, pid: int, predicate: Callable[[list[dict[str, Any]]], Any], seconds: float
) -> Any:
    """Waits until ``predicate(events of process pid)`` is truthy and returns its value."""

    def check() -> Any:
        return predicate([e for e in box.call_events() if e.get("pid") == pid])

    value = wait_until(check, seconds, every=0.02)
    assert value, f"the driver (pid {pid}) did not get there within {seconds} s"
    return value


def trial_starts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "start" and e["trial"]]


def cli_with_env(
    box: Sandbox,
    *args: str,
    faults: Mapping[int, str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m autotune.cli ARGS`` in the sandbox, as :meth:`Sandbox.cli` does, with
    ``env`` added to its environment (for example ``AUTOTUNE_TRIAL_LOG_LIMIT``)."""
    return subprocess.run(
        [sys.executable, "-m", "autotune.cli", *args],
        cwd=box.root,
        env=box.env(faults, **dict(env or {})),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def wait_or_kill(process: subprocess.Popen[str], seconds: float) -> subprocess.Popen[str]:
    """Waits at most ``seconds`` for ``process`` to exit; kills it if it has not (its exit code
    is then -9)."""
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return process
