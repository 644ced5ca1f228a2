"""A three-objective study (throughput, fidelity, peak memory) run with the fake runner
(tests/support/fake_trials.py: XLA is faster at the same curve but needs 50 MiB more), for the
unit tests of the memory objective and the dashboard's memory view in a browser."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from autotune.config import RunSettings, TrialConfig
from autotune.store.result import RunResult
from autotune.study import Study
from tests.support.demo_study import params, write_experiment
from tests.support.fake_trials import SPACE, fake_result

MEMORY = "throughput,fidelity,memory"
#: bf16 XLA at 64 (6000 samples/s, 214 MiB), the same without XLA (4000, 164 MiB: the same
#: curve, slower, leaner), float32 at 128 (4000 samples/s, 356 MiB, over the tolerance) and a
#: repeat of the first.
TRIALS = [
    params("mixed_bfloat16", True, 64),
    params("mixed_bfloat16", False, 64),
    params("float32", False, 128),
    params("mixed_bfloat16", True, 64),
]
XLA, NO_XLA, FLOAT32, REPEAT = 0, 1, 2, 3


def fake_runner(
    reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
) -> RunResult:
    return fake_result(config, settings, window_spread=0.01)


def run_study(folder: Path, objectives: str | None, trials: list[dict[str, Any]] = TRIALS) -> Study:
    """The study of ``trials`` (enqueued in order) on SQLite in ``folder``."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    folder.mkdir(parents=True, exist_ok=True)
    study = Study(
        write_experiment(folder),
        SPACE,
        f"sqlite:///{folder / 'study.db'}",
        runner=fake_runner,
        profile_mode="off",
        objectives=objectives,
    )
    for config in trials:
        study.optuna.enqueue_trial(config)
    study.optimize(n_trials=len(trials))
    return study
