"""Unit tests for Study.run (autotune.study.running) and its callback protocol
(autotune.study.callbacks): the order and arguments of the callbacks, resuming without running
anything again, arguments refused before anything runs, and the example script that uses it.

Nothing is trained: the fake runner makes a RunResult from the configuration
(tests/support/fake_trials.py).
"""

from __future__ import annotations

import runpy
import shutil
import sys
from pathlib import Path
from typing import Any

import optuna
import pytest

import autotune
import autotune.study.study
from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import ConfigError
from autotune.store.result import RunResult
from autotune.store.storage import open_storage
from autotune.study import CallbackList, Study, StudyCallback, StudyOutcome
from autotune.study.placement import Placement
from tests.support.fake_trials import (
    EXPERIMENT_SOURCE,
    FLOOR,
    SPACE,
    fake_result,
    profiled_result,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)

REPO = Path(__file__).resolve().parents[2]

#: Every hook of the protocol, in the order the class defines them.
HOOKS = [name for name in vars(StudyCallback) if name.startswith("on_")]


class Recorder(StudyCallback):
    """Records each callback as (hook name without ``on_``, arguments)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, tuple[Any, ...]]] = []

    def names(self) -> list[str]:
        return [name for name, _ in self.events]

    def args(self, name: str) -> list[tuple[Any, ...]]:
        return [args for event, args in self.events if event == name]


def _hook(name: str):
    def record(self: Recorder, *args: Any) -> None:
        self.events.append((name.removeprefix("on_"), args))

    return record


for _name in HOOKS:
    setattr(Recorder, _name, _hook(_name))


class FakeRunner:
    """A TrialRunner that records the configurations and seeds it ran."""

    def __init__(self, make=fake_result) -> None:
        self.calls: list[tuple[TrialConfig, RunSettings]] = []
        self.make = make

    def __call__(
        self, reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
    ) -> RunResult:
        self.calls.append((config, settings))
        return self.make(config, settings)


def params(precision: str = "float32", jit_compile: bool = False, batch_size: int = 32) -> dict:
    return {"precision": precision, "jit_compile": jit_compile, "batch_size": batch_size}


# Known scores (see tests/unit/test_study.py): A dominated, B infeasible, C and D the front.
A = params("float32", False, 64)  # 2000 samples/s, fidelity 0.9
B = params("float32", False, 256)  # 8000 samples/s, fidelity 2.7: infeasible
C = params("mixed_bfloat16", True, 32)  # 3000 samples/s, fidelity 0.3
D = params("mixed_bfloat16", True, 64)  # 6000 samples/s, fidelity 1.2


@pytest.fixture(scope="module")
def empty_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "empty.db"
    open_storage(f"sqlite:///{path}")
    return path


@pytest.fixture
def make_study(tmp_path: Path, empty_database: Path):
    """``make_study(runner, **kwargs)``: a Study of the fake experiment on this test's storage,
    started with the sampler's own draws."""
    experiment = tmp_path / "fake_experiment.py"
    experiment.write_text(EXPERIMENT_SOURCE, encoding="utf-8")
    shutil.copy(empty_database, tmp_path / "s.db")

    def make(runner: FakeRunner, **kwargs: Any) -> Study:
        kwargs.setdefault("start", "random")
        return Study(
            f"{experiment}:fake", SPACE, f"sqlite:///{tmp_path}/s.db", runner=runner, **kwargs
        )

    return make


def enqueue(study: Study, *configs: dict) -> None:
    for config in configs:
        study.optuna.enqueue_trial(config)


def test_every_hook_is_dispatched_by_callback_list() -> None:
    assert HOOKS and all(name in vars(CallbackList) for name in HOOKS)
    first, second = Recorder(), Recorder()
    both = CallbackList([first, second])

    both.on_confirm_progress("round 1/2: baseline 1,000 samples/s")
    both.on_baseline_wait()

    expected = [
        ("confirm_progress", ("round 1/2: baseline 1,000 samples/s",)),
        ("baseline_wait", ()),
    ]
    assert first.events == second.events == expected


def test_run_calls_the_callbacks_in_order_and_returns_the_confirmed_recipe(make_study) -> None:
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, A, B, C, D)
    recorder = Recorder()

    outcome = study.run(4, confirm_top=2, confirm_rounds=2, callbacks=[recorder])

    names = recorder.names()
    steps = names.count("confirm_progress")
    assert names == (
        ["baseline_run"] * 3 + ["baseline_end", "search_begin"] + ["trial_end"] * 4 + ["front"]
        + ["confirm_progress"] * steps + ["confirmation", "run_end"]
    )  # fmt: skip
    runs = recorder.args("baseline_run")
    assert [seed for seed, _ in runs] == [0, 1, 2]
    assert [result.throughput is not None for _, result in runs] == [True, False, False]
    [(noise,)] = recorder.args("baseline_end")
    assert noise.value == pytest.approx(FLOOR)
    assert recorder.args("search_begin") == [(0, 4)]
    rows = [row for (row,) in recorder.args("trial_end")]
    assert [(row.number, row.config.batch_size) for row in rows] == [
        (0, 64),
        (1, 256),
        (2, 32),
        (3, 64),
    ]
    assert all(row.state == "complete" for row in rows)
    [(front,)] = recorder.args("front")
    assert [row.number for row in front] == [3, 2]  # the feasible front, fastest first
    lines = [line for (line,) in recorder.args("confirm_progress")]
    assert len([line for line in lines if line.startswith("round ")]) == 2 * (2 + 1)
    assert [line.split(":")[0] for line in lines[:2]] == ["trial 3 seed 1", "trial 3 seed 2"]
    assert lines[2:8] == [
        "round 1/2: trial 3 6,000 samples/s",
        "round 1/2: trial 2 3,000 samples/s",
        "round 1/2: baseline 1,000 samples/s",
        "round 2/2: trial 3 6,000 samples/s",
        "round 2/2: trial 2 3,000 samples/s",
        "round 2/2: baseline 1,000 samples/s",
    ]
    [(confirmation,)] = recorder.args("confirmation")
    assert confirmation.complete and [c.trial for c in confirmation.candidates] == [3, 2]
    assert recorder.args("run_end") == [(outcome,)]
    assert isinstance(outcome, StudyOutcome)
    assert outcome.confirmation is confirmation
    assert outcome.front == tuple(front)
    assert outcome.recipe.trial == 3 and outcome.recipe.speedup == pytest.approx(6.0)
    assert outcome.recipe.note.startswith("confirmed: trial 3")
    assert not study._listeners  # the run's hooks are gone once it ends
    assert study._on_profile is None


def test_run_again_resumes_without_running_anything(make_study) -> None:
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, A, C, D)
    first = study.run(3, confirm_top=2, confirm_rounds=2)
    calls = len(runner.calls)
    recorder = Recorder()

    again = make_study(runner).run(3, confirm_top=2, confirm_rounds=2, callbacks=[recorder])

    assert len(runner.calls) == calls
    assert recorder.names() == [
        "baseline_end", "search_begin", "front", "confirmation", "run_end",
    ]  # fmt: skip
    assert recorder.args("search_begin") == [(3, 3)]
    assert (again.recipe.trial, again.recipe.note) == (first.recipe.trial, first.recipe.note)
    assert again.confirmation == first.confirmation


def test_more_trials_run_only_the_new_ones_and_confirm_again(make_study) -> None:
    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, A, C)
    study.run(2, confirm_top=1, confirm_rounds=2)
    runner.calls.clear()
    enqueue(study, D)
    recorder = Recorder()

    outcome = study.run(3, confirm_top=1, confirm_rounds=2, callbacks=[recorder])

    assert "baseline_run" not in recorder.names()
    assert [row.number for (row,) in recorder.args("trial_end")] == [2]
    assert recorder.args("search_begin") == [(2, 3)]
    assert outcome.confirmation is not None
    assert [c.trial for c in outcome.confirmation.candidates] == [2]  # D, the new fastest


def test_confirm_top_zero_recommends_unconfirmed(make_study) -> None:
    study = make_study(FakeRunner())
    enqueue(study, A, C)
    recorder = Recorder()

    outcome = study.run(2, confirm_top=0, callbacks=[recorder])

    assert "confirmation" not in recorder.names()
    assert "confirm_progress" not in recorder.names()
    assert outcome.confirmation is None
    assert outcome.recipe.trial == 1  # C, the fastest feasible trial
    assert not outcome.recipe.note.startswith("confirmed")


def test_pareto_profiles_reach_the_callbacks_and_the_old_listener(make_study) -> None:
    study = make_study(FakeRunner(make=profiled_result), profile_mode="pareto")
    enqueue(study, A, C, D)
    old: list[int] = []
    study.on_profile(lambda number, entry: old.append(number))
    recorder = Recorder()

    study.run(3, confirm_top=0, callbacks=[recorder])

    numbers = [number for number, _ in recorder.args("profile")]
    assert sorted(numbers) == sorted(old) == sorted(r.number for r in study.pareto_front())
    names = recorder.names()
    assert names.index("profile") > max(i for i, n in enumerate(names) if n == "trial_end")
    assert names.index("profile") < names.index("front")
    assert study._on_profile is not None and study._on_profile.__name__ == "<lambda>"


@pytest.mark.parametrize(
    ("kwargs", "argument", "says"),
    [
        ({"n_trials": -1}, None, "n_trials must be an integer >= 0"),
        ({"n_trials": 2, "confirm_top": -1}, "top", "must be an integer >= 0"),
        ({"n_trials": 2, "confirm_rounds": 1}, "rounds", "must be an integer >= 2"),
        ({"n_trials": 2, "max_memory_mib": 0}, "max_memory_mib", "must be a number of MiB > 0"),
        ({"n_trials": 2, "local_workers": [Placement(shared=True)]}, "storage", "2 workers"),
    ],
)
def test_bad_arguments_are_refused_before_anything_runs(make_study, kwargs, argument, says):
    runner = FakeRunner()
    study = make_study(runner)
    recorder = Recorder()

    with pytest.raises(ConfigError, match=says) as refused:
        study.run(**kwargs, callbacks=[recorder])

    assert refused.value.argument == argument
    assert runner.calls == [] and recorder.events == []


def test_a_callback_that_raises_stops_the_run_and_a_new_run_resumes(make_study) -> None:
    class Stop(Exception):
        pass

    class StopAfterFirstTrial(StudyCallback):
        def on_trial_end(self, row: autotune.TrialRow) -> None:
            raise Stop

    runner = FakeRunner()
    study = make_study(runner)
    enqueue(study, A, C)

    with pytest.raises(Stop):
        study.run(2, confirm_top=0, callbacks=[StopAfterFirstTrial()])

    assert study.finished_count() == 1 and not study._listeners
    recorder = Recorder()
    study.run(2, confirm_top=0, callbacks=[recorder])
    assert [row.number for (row,) in recorder.args("trial_end")] == [1]


def test_the_example_script_tunes_through_study_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(autotune.study.study, "isolated_runner", FakeRunner())
    monkeypatch.chdir(tmp_path)
    recipe = tmp_path / "recipe.json"
    argv = ["tune_from_python.py", "--trials", "3", "--storage", f"sqlite:///{tmp_path}/api.db"]
    monkeypatch.setattr(sys, "argv", [*argv, "--recipe", str(recipe)])

    runpy.run_path(str(REPO / "experiments" / "tune_from_python.py"), run_name="__main__")

    printed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in printed[:3]] == ["trial 0", "trial 1", "trial 2"]
    assert any(line.startswith("Pareto: trial ") for line in printed)
    assert printed[-1].startswith("best: ") and printed[-1].endswith(f"-> {recipe}")
    assert autotune.Recipe.load(recipe).config is not None
