"""Issue 28, classes 1, 3, 5 and 6: storages that a damaged file, another name, a read or a
silent server cannot break (DESIGN guarantees 13 and 14).

1. A Journal file cut off mid-line, or holding a line that is not an Optuna record, is refused
   by every command before anything is appended to it, in one line naming the file and how to
   recover; the file is left byte for byte as it was.
3. The one-process-per-SQLite-study lock works on the file: a symbolic link, a relative path or
   a hard link to a study's database is the same study.
5. Reading commands never write: an empty file or an unrelated SQLite database is refused, not
   given Optuna's tables.
6. A PostgreSQL server that accepts and never answers fails the command within the connect
   timeout, in one line naming the storage.

The studies are tiny fake-runner studies made in-process; the commands run as subprocesses.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from autotune.study import Study
from autotune.study.run_lock import hold
from tests.support.demo_study import fake_runner, write_experiment
from tests.support.fake_trials import SPACE
from tests.support.reliability import Sandbox, one_line_error

#: tests.support.fake_trials.SPACE as a space file's parameters.
SPACE_TABLE = {
    "precision": ["float32", "mixed_bfloat16", "mixed_float16"],
    "jit_compile": [False, True],
    "batch_size": [16, 32, 64, 128, 256, 512],
}
READ_COMMANDS = (
    ("status",),
    ("best",),
    ("export", "-o", "recipe.json"),
    ("report", "-o", "report.html"),
)
#: The dashboard opens the storage before it listens: a refused storage never serves.
REFUSING_COMMANDS = (*READ_COMMANDS, ("dashboard", "--host", "127.0.0.1", "--port", "9"))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _make_study(storage: str, folder: Path, trials: int = 2) -> str:
    """A fake-runner study of ``trials`` trials in ``storage``; its experiment reference."""
    reference = write_experiment(folder)
    study = Study(reference, SPACE, storage, "s", runner=fake_runner, seed=0)
    study.optimize(n_trials=trials)
    return reference


# ------------------------------------------------------------------------------------------
# 1. A damaged Journal file
# ------------------------------------------------------------------------------------------


def _cut(data: bytes) -> bytes:
    return data[:-40]


def _unknown_op_code(data: bytes) -> bytes:
    return data + json.dumps({"op_code": 99, "worker_id": "x"}).encode() + b"\n"


def _a_string(data: bytes) -> bytes:
    return data + b'"just a string"\n'


def _a_list(data: bytes) -> bytes:
    return data + b"[1, 2, 3]\n"


DAMAGES = {
    "cut-off": (_cut, "is cut off"),
    "unknown-op-code": (_unknown_op_code, "has the unknown op_code 99"),
    "string": (_a_string, "is a JSON str, not a record"),
    "list": (_a_list, "is a JSON list, not a record"),
}


def _worker_command(reference: str) -> tuple[str, ...]:
    """``autotune worker`` on study "s", naming the experiment when the command takes one."""
    from autotune.cli import main

    worker = main.commands["worker"]  # type: ignore[attr-defined]
    options = {option for param in worker.params for option in getattr(param, "opts", ())}
    named = ("--experiment", reference) if "--experiment" in options else ()
    return ("worker", "--study", "s", *named)


@pytest.fixture
def journal_study(sandbox: Sandbox) -> tuple[Path, str, str]:
    """A Journal study of 2 trials: the file, its URL and its experiment reference."""
    path = sandbox.root / "study.journal"
    url = f"journal:///{path}"
    return path, url, _make_study(url, sandbox.root)


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_journal_is_refused_by_every_command_and_left_as_it_was(
    sandbox: Sandbox, journal_study: tuple[Path, str, str], damage: str
) -> None:
    path, url, reference = journal_study
    change, problem = DAMAGES[damage]
    path.write_bytes(change(path.read_bytes()))
    before = _digest(path)
    space = sandbox.write_space("s", SPACE_TABLE)
    commands = [
        *REFUSING_COMMANDS,
        ("run", reference, "--space", str(space), "--study", "s", "--trials", "1"),
        _worker_command(reference),
    ]

    for command in commands:
        done = sandbox.cli(*command, "--storage", url, timeout=60)

        assert done.returncode == 2, (command, done.stdout + done.stderr)
        line = one_line_error(done.stderr)
        assert f"the Journal file {str(path)!r} is damaged" in line, (command, line)
        assert problem in line, (command, line)
        assert "autotune does not write to it" in line
        assert _digest(path) == before, f"autotune {command[0]} changed the Journal file"


def test_the_recovery_a_cut_off_journal_names_opens_it_again(
    sandbox: Sandbox, journal_study: tuple[Path, str, str]
) -> None:
    path, url, _ = journal_study
    whole = path.read_bytes()
    path.write_bytes(_cut(whole))
    line = one_line_error(sandbox.cli("status", "--storage", url).stderr)
    size = int(line.split("truncate -s ", 1)[1].split()[0])

    os.truncate(path, size)  # what the message says to do

    assert sandbox.cli("status", "--storage", url).returncode == 0
    assert whole.startswith(path.read_bytes())


# ------------------------------------------------------------------------------------------
# 3. The run lock knows the file, not its name
# ------------------------------------------------------------------------------------------

HOLDER = """
import sys, time
from autotune.study.run_lock import hold
with hold(sys.argv[1], "first"):
    print("holding", flush=True)
    time.sleep(60)
"""


@contextlib.contextmanager
def _held_by_another_process(sandbox: Sandbox, storage: str) -> Iterator[None]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, storage],
        cwd=sandbox.root,
        env=sandbox.env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "holding"
        yield
    finally:
        process.kill()
        process.wait(10)


@pytest.mark.parametrize("alias", ["symlink", "relative", "hardlink"])
def test_another_name_for_a_held_sqlite_study_is_refused(
    sandbox: Sandbox, alias: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox.db.write_bytes(b"")  # the file exists, as it does once a study opened it
    if alias == "symlink":
        other = sandbox.root / "link.db"
        other.symlink_to(sandbox.db)
        name = f"sqlite:///{other}"
    elif alias == "hardlink":
        other = sandbox.root / "sub" / "hard.db"
        other.parent.mkdir()
        os.link(sandbox.db, other)
        name = f"sqlite:///{other}"
    else:
        monkeypatch.chdir(sandbox.root)
        name = "sqlite:///./study.db"

    with _held_by_another_process(sandbox, sandbox.storage):
        from autotune.exceptions import StudyError

        with pytest.raises(StudyError, match="is in use by"), hold(name, "second"):
            pass  # pragma: no cover - the lock must be refused


def test_the_same_process_may_hold_one_study_under_two_names(sandbox: Sandbox) -> None:
    sandbox.db.write_bytes(b"")
    link = sandbox.root / "link.db"
    link.symlink_to(sandbox.db)

    with hold(sandbox.storage, "outer"), hold(f"sqlite:///{link}", "inner"):
        pass  # re-entrant: no StudyError


# ------------------------------------------------------------------------------------------
# 5. Reading commands never write
# ------------------------------------------------------------------------------------------


def _unrelated_database(path: Path) -> None:
    import sqlite3

    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (text TEXT)")
    connection.execute("INSERT INTO notes VALUES ('mine')")
    connection.commit()
    connection.close()


@pytest.mark.parametrize("kind", ["empty", "unrelated"])
def test_reading_commands_refuse_what_is_not_a_study_and_leave_it_as_it_was(
    sandbox: Sandbox, kind: str
) -> None:
    if kind == "empty":
        sandbox.db.write_bytes(b"")
    else:
        _unrelated_database(sandbox.db)
    before = sandbox.db_digest()

    for command in REFUSING_COMMANDS:
        done = sandbox.cli(*command, "--storage", sandbox.storage, timeout=60)

        assert done.returncode == 2, (command, done.stdout + done.stderr)
        line = one_line_error(done.stderr)
        assert "is not an autotune/Optuna study storage" in line, (command, line)
        assert sandbox.db_digest() == before, f"autotune {command[0]} wrote to {kind} file"
    assert sorted(p.name for p in sandbox.root.glob("study.db*")) == ["study.db"]


def test_reading_a_healthy_study_leaves_it_byte_identical(sandbox: Sandbox) -> None:
    _make_study(sandbox.storage, sandbox.root)
    before = sandbox.db_digest()

    for command in READ_COMMANDS:
        done = sandbox.cli(*command, "--storage", sandbox.storage)
        assert done.returncode == 0, (command, done.stdout + done.stderr)

    assert sandbox.db_digest() == before


# ------------------------------------------------------------------------------------------
# 6. A network storage that never answers
# ------------------------------------------------------------------------------------------


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A loopback TCP server that accepts connections and never says a word; its port."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                connection, _ = server.accept()
                accepted.append(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for connection in accepted:
            connection.close()
        server.close()


@pytest.mark.parametrize("command", ["status", "best"])
def test_a_server_that_never_answers_fails_within_the_connect_timeout(
    sandbox: Sandbox, silent_server: int, command: str
) -> None:
    url = f"postgresql+psycopg://nobody@127.0.0.1:{silent_server}/db"
    started = time.monotonic()

    done = sandbox.cli(command, "--storage", url, timeout=60, AUTOTUNE_CONNECT_TIMEOUT="2")

    elapsed = time.monotonic() - started
    assert done.returncode == 2, done.stdout + done.stderr
    line = one_line_error(done.stderr)
    assert f"127.0.0.1:{silent_server}" in line, line
    assert elapsed < 20, f"took {elapsed:.0f} s with a 2 s connect timeout"


def test_the_connect_timeout_has_a_default_of_seconds_and_refuses_nonsense(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from autotune.exceptions import ConfigError
    from autotune.store.storage import CONNECT_TIMEOUT_VARIABLE, connect_args

    monkeypatch.delenv(CONNECT_TIMEOUT_VARIABLE, raising=False)
    assert 1 <= connect_args("postgresql://u@h/db")["connect_timeout"] <= 30
    monkeypatch.setenv(CONNECT_TIMEOUT_VARIABLE, "3")
    assert connect_args("postgresql+psycopg://u@h/db") == {"connect_timeout": 3}
    for bad in ("nan", "0", "-1", "x", "inf"):
        monkeypatch.setenv(CONNECT_TIMEOUT_VARIABLE, bad)
        with pytest.raises(ConfigError, match=CONNECT_TIMEOUT_VARIABLE):
            connect_args("postgresql://u@h/db")
