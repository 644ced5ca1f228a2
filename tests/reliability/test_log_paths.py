"""Issue 13, item 7: names that become paths. A study's logs go to
``autotune_logs/<study key>/`` beside its database, where the key is a slug of the name and a hash
of the storage and the name (autotune.store.log_folders): a name such as ``../../x``, an absolute
path or 500 characters (more than a file name may have) never writes outside that folder, two
databases in one folder with the same study name never share one, and a ``trial.log`` used again is
appended to, never truncated.

The study is the real ``autotune run`` command with trials of the misbehave experiment that fail
while loading (no TensorFlow); its baseline is stored beforehand by the fake-runner driver."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from optuna.trial import TrialState

from autotune.store.log_folders import LOG_FOLDER, study_key
from autotune.store.schema import LOG_DIR_ATTR
from tests.support.reliability import MISBEHAVE, TINY_MEASURE, Sandbox, stored_trials

USED_AGAIN = "this log is used again"


def _files(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file() or p.is_symlink()}


def _seed_and_run(sandbox: Sandbox, storage: str, name: str, fault: str) -> None:
    """Makes study ``name`` in ``storage`` (fake baseline) and runs one trial of it that fails
    with ``fault``."""
    space = sandbox.write_space("paths", {"batch_size": [40]}, TINY_MEASURE)
    args = ["seed", storage, str(space), "--experiment", MISBEHAVE, "--study", name]
    seeded = sandbox.driver(*args, timeout=120)
    assert seeded.returncode == 0, seeded.stdout + seeded.stderr
    run = sandbox.cli(
        "run", MISBEHAVE, "--space", str(space), "--storage", storage, "--study", name,
        "--trials", "1", faults={40: fault}, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize("kind", ["parent_relative", "absolute", "500_characters"])
def test_a_study_name_that_looks_like_a_path_keeps_its_logs_inside_the_log_root(
    sandbox: Sandbox, kind: str
) -> None:
    database = sandbox.root / "data" / "study.db"
    database.parent.mkdir()
    storage = f"sqlite:///{database}"
    escaped = sandbox.root / "escaped"
    name = {
        "parent_relative": "../../escaped",  # autotune_logs/../../escaped: sandbox/escaped
        "absolute": str(escaped),
        "500_characters": "n" * 500,  # a file name stops at 255 bytes
    }[kind]
    before = _files(sandbox.root)

    _seed_and_run(sandbox, storage, name, "exit@load")

    folder = database.parent / LOG_FOLDER / study_key(storage, name)
    test_files = (sandbox.markers, sandbox.tmp)
    made = {
        p
        for p in _files(sandbox.root) - before
        if p.suffix not in (".txt", ".toml") and not any(p.is_relative_to(f) for f in test_files)
    }
    made -= {database, database.with_name("study.db-journal"), database.with_name("study.db.lock")}
    assert made, "the trial wrote no log"
    outside = sorted(str(p) for p in made if not p.is_relative_to(folder))
    assert not outside, f"written outside {folder}: {outside}"
    assert not escaped.exists()
    (trial,) = stored_trials(storage)
    assert trial.state == TrialState.FAIL
    assert trial.user_attrs[LOG_DIR_ATTR] == str(folder / "trial_0")
    assert "misbehave: exit" in (folder / "trial_0" / "trial.log").read_text()


def test_two_databases_in_one_folder_with_one_study_name_keep_their_logs_apart(
    sandbox: Sandbox,
) -> None:
    storages = [f"sqlite:///{sandbox.root / 'a.db'}", f"sqlite:///{sandbox.root / 'b.db'}"]
    for storage, fault in zip(storages, ["exit@load", "segfault@load"], strict=True):
        _seed_and_run(sandbox, storage, "shared", fault)

    logs = [Path(stored_trials(s)[0].user_attrs[LOG_DIR_ATTR]) / "trial.log" for s in storages]
    assert logs[0] != logs[1]
    assert all(log.parent.parent.parent == sandbox.root / LOG_FOLDER for log in logs)
    first, second = (log.read_text() for log in logs)
    assert "misbehave: exit" in first and "misbehave: segfault" not in first
    assert "misbehave: segfault" in second and "misbehave: exit" not in second
    assert USED_AGAIN not in first + second


def test_a_log_folder_used_again_is_appended_to_never_truncated(sandbox: Sandbox) -> None:
    folder = sandbox.root / "log"
    outcomes = []
    for fault in ("exit@load", "segfault@load"):
        done = sandbox.cli(
            "trial", MISBEHAVE, "--config", '{"batch_size": 40}', "--log-dir", str(folder),
            "--json", faults={40: fault}, timeout=120,
        )  # fmt: skip
        assert done.returncode == 1, done.stdout + done.stderr
        outcomes.append(json.loads(done.stdout))

    text = (folder / "trial.log").read_text()
    first, marker, second = (
        text.index("misbehave: exit"),
        text.index(USED_AGAIN),
        text.index("misbehave: segfault"),
    )
    assert first < marker < second, text
    assert [o["kind"] for o in outcomes] == ["exit", "signal"]
    assert "misbehave: segfault" in outcomes[1]["log_tail"]
    assert "misbehave: exit" not in outcomes[1]["log_tail"], "the tail is this trial's own"
