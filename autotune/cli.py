"""The ``autotune`` command. Errors become a one-line message and an exit code:
2 for bad input (:class:`ConfigError`), 1 for a failed trial."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console

from autotune.config import RunSettings, TrialConfig
from autotune.exceptions import AutotuneError, ConfigError, TrialFailure

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_EXPERIMENT = str(Path(__file__).resolve().parent.parent / "experiments" / "digits_cnn.py")


def _handle_errors(command: F) -> F:
    """Turns autotune's errors into a message on stderr and the error's exit code."""

    @wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except AutotuneError as error:
            click.echo(f"autotune: error: {error}", err=True)
            sys.exit(error.exit_code)

    return wrapper  # type: ignore[return-value]


def _read_config(value: str) -> TrialConfig:
    """--config takes JSON text, or @path to a JSON file."""
    if value.startswith("@"):
        path = Path(value[1:])
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise ConfigError(
                f"--config file {str(path)!r} cannot be read: {error.strerror}"
            ) from error
        return TrialConfig.from_json(text, source=f"--config file {str(path)!r}")
    return TrialConfig.from_json(value, source="--config")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="autotune")
def main() -> None:
    """Find the fastest way to train a Keras model without changing what it learns."""


@main.command()
@click.argument("experiment", default=DEFAULT_EXPERIMENT)
@click.option(
    "--config",
    "config_text",
    default='{"batch_size": 32}',
    show_default=True,
    help="TrialConfig as JSON, or @file.json. Keys: batch_size, precision, jit_compile, "
    "prefetch, num_parallel_calls, shuffle_buffer.",
)
@click.option("--seed", default=0, show_default=True, help="Seed for weights and data order.")
@click.option("--windows", default=7, show_default=True, help="Timed windows.")
@click.option("--window-seconds", default=0.5, show_default=True, help="Target seconds per window.")
@click.option(
    "--curve-samples",
    type=int,
    default=None,
    help="Training examples in the fidelity curve (default: the experiment's).",
)
@click.option("--no-curve", is_flag=True, help="Measure throughput only.")
@click.option(
    "--time-limit", default=600.0, show_default=True, help="Seconds before the trial is stopped."
)
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep the trial's log in this folder.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@_handle_errors
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
    as_json: bool,
) -> None:
    """Run one isolated, measured trial of EXPERIMENT (path/file.py[:name] or module:name).

    Prints the throughput (median samples/s with its 95% CI, warm-up and compilation excluded),
    the compile time, the validation curve and the settings that took effect.
    """
    from autotune.display import show_failure, show_result
    from autotune.isolation import run_isolated

    config = _read_config(config_text)
    settings = RunSettings(
        seed=seed,
        windows=windows,
        window_seconds=window_seconds,
        curve=not no_curve,
        curve_samples=curve_samples,
        time_limit_seconds=time_limit,
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


if __name__ == "__main__":
    main()
