"""``autotune trial``: one isolated, measured trial, printed or as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console

from autotune.cli._errors import finite, handle_errors
from autotune.cli._inputs import read_config
from autotune.cli._options import EXPERIMENT_ARGUMENT, seed_option
from autotune.config import RunSettings
from autotune.exceptions import TrialFailure
from autotune.settings import names


def config_help() -> str:
    """The help of ``--config``: its keys are the settings of the table."""
    return f"TrialConfig as JSON, or @file.json. Keys: {', '.join(names())}."


class _ConfigOption(click.Option):
    """``--config``, whose help lists the settings when it is shown."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = config_help()
        return super().get_help_record(ctx)


@click.command()
@EXPERIMENT_ARGUMENT
@click.option(
    "--config",
    "config_text",
    cls=_ConfigOption,
    default='{"batch_size": 32}',
    show_default=True,
)
@seed_option("Seed for weights and data order.")
@click.option(
    "--windows", type=click.IntRange(min=1), default=7, show_default=True, help="Timed windows."
)
@click.option(
    "--window-seconds",
    type=click.FloatRange(min=0, min_open=True),
    callback=finite,
    default=0.5,
    show_default=True,
    help="Target seconds per window.",
)
@click.option(
    "--curve-samples",
    type=int,
    default=None,
    help="Training examples in the fidelity curve (default: the experiment's).",
)
@click.option("--no-curve", is_flag=True, help="Measure throughput only.")
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    callback=finite,
    default=600.0,
    show_default=True,
    help="Seconds before the trial is stopped.",
)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep the trial's log in this folder.",
)
@click.option(
    "--profile-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Profile one steady window with the TensorBoard profiler into this folder and read it "
    "with XProf (tensorboard --logdir shows it).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@handle_errors
def trial(
    experiment: str,
    config_text: str,
    seed: int,
    windows: int,
    window_seconds: float,
    curve_samples: int | None,
    no_curve: bool,
    time_limit: float,
    log_dir: str | None,
    profile_dir: str | None,
    as_json: bool,
) -> None:
    """Run one isolated, measured trial of EXPERIMENT (default: the bundled digits CNN).

    EXPERIMENT: a bundled experiment (digits_cnn, tabular_mlp, transformer),
    path/file.py[:name] or module:name.

    Prints the throughput (median samples/s with its 95% CI, warm-up and compilation excluded),
    the compile time, the validation curve and the settings that took effect.
    """
    from autotune.study.checks import check_log_root
    from autotune.trial.isolation import run_isolated
    from autotune.views.terminal import show_failure, show_result

    config = read_config(config_text)
    for argument, folder in (("log_dir", log_dir), ("profile_dir", profile_dir)):
        if folder is not None:
            check_log_root(Path(folder).resolve(), argument=argument)
    settings = RunSettings(
        seed=seed,
        windows=windows,
        window_seconds=window_seconds,
        curve=not no_curve,
        curve_samples=curve_samples,
        time_limit_seconds=time_limit,
        profile_dir=str(Path(profile_dir).resolve()) if profile_dir else None,
    )
    console = Console(stderr=as_json)
    try:
        with console.status(f"measuring {config.describe()} ..."):
            result = run_isolated(experiment, config, settings, log_dir=log_dir)
    except TrialFailure as failure:
        if as_json:
            click.echo(json.dumps({"status": "failed", **failure.to_dict()}))
        else:
            show_failure(console, failure)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps({"status": "ok", "result": result.to_dict()}, indent=2))
    else:
        show_result(console, result)


__all__ = ["trial"]
