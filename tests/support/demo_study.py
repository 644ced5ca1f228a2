"""A small stored study for the tests of records, report and dashboard, made with a fake runner.

The test files import :func:`build_demo_study` and wrap it in fixtures (tests/unit/conftest.py
has the shared ones). Nothing is trained; no TensorFlow is imported. With
``runner=profiling_runner`` the trials also carry an input ablation (37% input), a recompilation
check (flagged with XLA) and, as the ``profile`` mode asks, a fake CPU profile (XProf: 3% input,
a window twice as slow as the timed ones); ``failing_rerun_runner`` fails every profiling re-run.

The fake world (noise floor 0.04/3, tolerance 1.5, baseline 1000 samples/s at batch size 32):

=====  =========================  ===========  ========  ==========================
trial  configuration              samples/s    fidelity  outcome
=====  =========================  ===========  ========  ==========================
0      float32 bs=64              2000         0.9       feasible, dominated by 2
1      float32 bs=256             8000         2.7       infeasible
2      bf16 xla bs=32             3000         0.3       Pareto
3      bf16 xla bs=64             6000         1.2       Pareto
4      float16 bs=32              10           -         pruned (slower)
5      float32 bs=512             -            -         failed (oom)
6      bf16 xla bs=32             3000         0.3       repeat of trial 2
7      bf16 no-xla bs=16          -            -         failed (exception)
=====  =========================  ===========  ========  ==========================
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import TrialFailure
from autotune.space import SearchSpace
from autotune.store.result import RunResult
from autotune.study import Study, TrialRunner
from tests.support.fake_trials import EXPERIMENT_SOURCE, SPACE, fake_result, profiled_result


def params(precision: str = "float32", jit_compile: bool = False, batch_size: int = 32) -> dict:
    return {"precision": precision, "jit_compile": jit_compile, "batch_size": batch_size}


TRIALS = [
    params("float32", False, 64),
    params("float32", False, 256),
    params("mixed_bfloat16", True, 32),
    params("mixed_bfloat16", True, 64),
    params("mixed_float16", False, 32),
    params("float32", False, 512),
    params("mixed_bfloat16", True, 32),
    params("mixed_bfloat16", False, 16),
]
PARETO = [3, 2]
DOMINATED = [0]
INFEASIBLE = [1]
PRUNED = [4]
FAILED = [5, 7]
REPEATS = {6: 2}


def fake_runner(
    reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
) -> RunResult:
    if config.batch_size >= 512:
        raise TrialFailure("oom", f"out of memory at batch_size={config.batch_size}")
    if config.batch_size == 16:
        raise TrialFailure("exception", "the fake runner failed", "last lines of the log")
    return fake_result(config, settings, window_spread=0.01)


def profiling_runner(
    reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
) -> RunResult:
    """:func:`fake_runner` whose trials also carry an input ablation, a recompilation check
    (flagged with XLA) and, when ``settings.profile_dir`` is set, a CPU profile read by XProf
    (see :func:`tests.support.fake_trials.profiled_result`)."""
    fake_runner(reference, config, settings, log_dir)  # the same failures
    return profiled_result(config, settings, window_spread=0.01)


def failing_rerun_runner(
    reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
) -> RunResult:
    """:func:`profiling_runner` whose profiling re-runs (no curve, a profile folder) run out of
    memory."""
    if settings.profile_dir is not None and not settings.curve:
        raise TrialFailure("oom", "out of memory while profiling")
    return profiling_runner(reference, config, settings, log_dir)


@dataclass(frozen=True)
class DemoStudy:
    """Where a demo study was stored."""

    storage: str
    name: str
    experiment_ref: str
    folder: Path


def write_experiment(folder: Path) -> str:
    path = folder / "fake_experiment.py"
    path.write_text(EXPERIMENT_SOURCE, encoding="utf-8")
    return f"{path}:fake"


def fake_study(
    folder: Path, runner: TrialRunner, space: SearchSpace = SPACE, **kwargs: object
) -> Study:
    """A study of ``space`` (default: the fake space) in ``folder/s.db`` run by ``runner``: the
    sampler's own start (no structured start), no profiles; ``kwargs`` go to :class:`Study`."""
    return Study(
        write_experiment(folder), space, f"sqlite:///{folder / 's.db'}", runner=runner, seed=0,
        start="random", profile_mode="off", **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip


def build_demo_study(
    folder: Path,
    trials: list[dict] | None = None,
    name: str | None = None,
    runner: TrialRunner = fake_runner,
    profile_mode: str = "all",
) -> DemoStudy:
    """Stores a study of ``trials`` (default :data:`TRIALS`, in order) in ``folder/study.db``,
    run by ``runner`` in ``profile_mode`` ("pareto" re-runs the Pareto trials at the end)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    folder.mkdir(parents=True, exist_ok=True)
    reference = write_experiment(folder)
    storage = f"sqlite:///{folder / 'study.db'}"
    study = Study(reference, SPACE, storage, name, runner=runner, seed=0, profile_mode=profile_mode)
    chosen = TRIALS if trials is None else trials
    for config in chosen:
        study.optuna.enqueue_trial(config)
    study.optimize(n_trials=len(chosen))
    return DemoStudy(storage, study.name, reference, folder)


# ------------------------------------------------------------------------------------------
# A study whose every stored string is hostile (issue 13: markup and script injection)
# ------------------------------------------------------------------------------------------

#: Closes the page's <title> and runs script; also Rich markup that closes no open tag.
HOSTILE_STUDY = "</title><script>alert('study')</script>exp[/v2][bold]x"
#: The experiment's name: an HTML event handler and Rich markup.
HOSTILE_EXPERIMENT = "<img src=x onerror=alert('experiment')>[/data/x]"
#: The search space's name.
HOSTILE_SPACE = "<b onmouseover=alert('space')>sp</b>[red]"
#: A folder name for the experiment and space files (their paths are stored and shown).
HOSTILE_FOLDER = "<svg onload=alert('path')>[bold]"
#: A failure message: Rich markup, a Plotly link tag, a script and terminal control codes.
HOSTILE_MESSAGE = (
    "cannot read [/data/x] <a href='javascript:alert(1)'>link</a> "
    "<script>alert('failure')</script> \x1b[31mred\x1b[0m"
)
#: Every hostile string above, for tests that look for any of them unescaped.
HOSTILE_STRINGS = (
    HOSTILE_STUDY,
    HOSTILE_EXPERIMENT,
    HOSTILE_SPACE,
    HOSTILE_FOLDER,
    HOSTILE_MESSAGE,
)


def hostile_runner(
    reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
) -> RunResult:
    """:func:`profiling_runner` whose batch-size-16 and -512 trials fail with
    :data:`HOSTILE_MESSAGE` (and a log tail of it)."""
    if config.batch_size in (16, 512):
        raise TrialFailure("exception", HOSTILE_MESSAGE, f"log tail: {HOSTILE_MESSAGE}")
    return profiling_runner(reference, config, settings, log_dir)


def build_hostile_study(folder: Path) -> DemoStudy:
    """:func:`build_demo_study`'s trials, stored under hostile names: study
    :data:`HOSTILE_STUDY`, experiment :data:`HOSTILE_EXPERIMENT`, space :data:`HOSTILE_SPACE`
    loaded from a TOML file, both files in a folder named :data:`HOSTILE_FOLDER`, and the failed
    trials' messages :data:`HOSTILE_MESSAGE`."""
    import json

    import optuna

    from autotune.space import load_space

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    files = folder / HOSTILE_FOLDER
    files.mkdir(parents=True, exist_ok=True)
    experiment = files / "hostile_experiment.py"
    experiment.write_text(
        EXPERIMENT_SOURCE.replace('name="fake"', f"name={HOSTILE_EXPERIMENT!r}"), encoding="utf-8"
    )
    reference = f"{experiment}:fake"
    space_file = files / "hostile_space.toml"
    space_file.write_text(
        f"name = {json.dumps(HOSTILE_SPACE)}\n\n[parameters]\n"
        'precision = ["float32", "mixed_bfloat16", "mixed_float16"]\n'
        "jit_compile = [false, true]\n"
        "batch_size = [16, 32, 64, 128, 256, 512]\n",
        encoding="utf-8",
    )
    storage = f"sqlite:///{folder / 'hostile.db'}"
    study = Study(
        reference,
        load_space(space_file),
        storage,
        HOSTILE_STUDY,
        runner=hostile_runner,
        seed=0,
        profile_mode="all",
    )
    for config in TRIALS:
        study.optuna.enqueue_trial(config)
    study.optimize(n_trials=len(TRIALS))
    return DemoStudy(storage, study.name, reference, folder)
