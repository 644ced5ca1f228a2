"""The arguments and options that several ``autotune`` commands share, defined once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from autotune.bundled import DEFAULT_EXPERIMENT
from autotune.cli._errors import finite
from autotune.config import LIMITS
from autotune.store.storage import DEFAULT_STORAGE
from autotune.views.report.page import PLOTLY_JS

if TYPE_CHECKING:
    from autotune.store.records import StudyRecords

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

#: EXPERIMENT: a bundled experiment's name, a file or a module; the digits CNN by default.
EXPERIMENT_ARGUMENT = click.argument("experiment", default=DEFAULT_EXPERIMENT)


def seed_option(help_text: str) -> Decorator:
    """``--seed``: an integer numpy accepts as a seed (0 to 2**32 - 1), default 0."""
    return click.option(
        "--seed",
        type=click.IntRange(0, LIMITS["seed"]),
        default=0,
        show_default=True,
        help=help_text,
    )


MAX_FIDELITY_OPTION = click.option(
    "--max-fidelity",
    type=click.FloatRange(min=0),
    callback=finite,
    default=None,
    help="Largest fidelity distance accepted (default: the study's tolerance).",
)
MAX_MEMORY_OPTION = click.option(
    "--max-memory",
    "max_memory",
    type=click.FloatRange(min=0, min_open=True),
    callback=finite,
    default=None,
    help="Largest peak memory (MiB; the device's on a GPU, else the trial process's) a "
    "recommended configuration may use: a limit, never a weight against speed.",
)
OBJECTIVES_OPTION = click.option(
    "--objectives",
    default=None,
    help="A new study's objectives: throughput,fidelity (the default) or "
    "throughput,fidelity,memory (peak memory, MiB, minimised). A stored study keeps its own.",
)
STORAGE_OPTION = click.option(
    "--storage",
    default=DEFAULT_STORAGE,
    show_default=True,
    help="Optuna storage URL: sqlite:///file.db, or postgresql://... for many workers.",
)
STUDY_OPTION = click.option(
    "--study",
    "study_name",
    default=None,
    help="Study name (default for run: <experiment>-<space>; otherwise the storage's only study).",
)
START_OPTION = click.option(
    "--start",
    type=click.Choice(["structured", "random"]),
    default="structured",
    show_default=True,
    help="How a new study begins: the baseline's one-factor neighbours, the checklist "
    "configuration and their combination (structured), or the sampler's own draws (random). "
    "A stored study keeps its start.",
)
PLOTLY_JS_OPTION = click.option(
    "--plotly-js",
    type=click.Choice(PLOTLY_JS),
    default="inline",
    show_default=True,
    help="inline: embed plotly.js (about 4.8 MB; the file works offline). cdn: load it from "
    "Plotly's CDN (tens of kB for a small study; drawing the figures needs the network).",
)


def quiet_optuna() -> None:
    """Only Optuna's errors on the console: autotune prints its own progress."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)


def read_records(storage: str, study_name: str | None) -> StudyRecords:
    """The stored study, read from the storage alone: no experiment is imported, no user code
    runs and TensorFlow is not loaded, so a shared or moved database is safe to open."""
    from autotune.store.records import load_records

    quiet_optuna()
    return load_records(storage, study_name)


__all__ = [
    "EXPERIMENT_ARGUMENT",
    "MAX_FIDELITY_OPTION",
    "MAX_MEMORY_OPTION",
    "OBJECTIVES_OPTION",
    "PLOTLY_JS_OPTION",
    "START_OPTION",
    "STORAGE_OPTION",
    "STUDY_OPTION",
    "quiet_optuna",
    "read_records",
    "seed_option",
]
