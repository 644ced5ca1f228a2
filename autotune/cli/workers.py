"""``autotune worker``, and the options of ``autotune run`` that place its workers on this host.

``autotune worker EXPERIMENT --storage URL --study NAME`` joins a study that ``autotune run`` made
on a Journal file or PostgreSQL and runs its trials until the study holds its target. EXPERIMENT
(or ``--experiment``) is required: a worker runs only the experiment its operator names, and only
when it matches the study's stored one (its reference and its file's digest), never the code a
storage names.
``autotune run --workers K`` (or ``--devices 0,1,...``) starts K - 1 such workers beside itself,
each on its own core set or GPU (:mod:`autotune.study.placement`).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

from autotune.cli._errors import finite, handle_errors
from autotune.cli._options import quiet_optuna, seed_option
from autotune.study.placement import Placement, local_placements, parse_cpus, parse_devices

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

CPUS_OPTION = click.option(
    "--cpus",
    default=None,
    help="Cores this run's trials may use, such as 0-3,6 (default: every core this process "
    "may use). A CPU worker claims its cores on this host: two never share one unless "
    "--share-cores.",
)
SHARE_CORES_OPTION = click.option(
    "--share-cores",
    is_flag=True,
    help="Let workers on this host share cores (their trials slow each other: throughputs "
    "are then not comparable); recorded with each trial.",
)


def run_worker_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``autotune run``'s --workers, --devices, --cpus and --share-cores."""
    for option in (
        SHARE_CORES_OPTION,
        CPUS_OPTION,
        click.option(
            "--devices",
            default=None,
            help="One worker per GPU, such as 0,1,2,3 (CUDA_VISIBLE_DEVICES in its trials); "
            "recorded with each trial.",
        ),
        click.option(
            "--workers",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Workers on this host, each on its own share of the cores; more than one needs "
            "a Journal file or PostgreSQL storage.",
        ),
    ):
        command = option(command)
    return command


def run_placements(
    storage: str, workers: int, devices: str | None, cpus: str | None, share_cores: bool
) -> list[Placement]:
    """One placement per local worker of ``autotune run`` (the first is its own); ConfigError
    when the storage or the host cannot hold them."""
    from autotune.study.claims import check_workers

    device_ids = parse_devices(devices) if devices else None
    placements = local_placements(
        workers, device_ids, parse_cpus(cpus) if cpus else None, share_cores
    )
    check_workers(storage, len(placements))
    return placements


@click.command()
@click.argument("experiment", required=False)
@click.option(
    "--experiment",
    "experiment_option",
    default=None,
    help="The experiment to run, as EXPERIMENT (for a reference that starts with '-').",
)
@click.option(
    "--storage",
    required=True,
    help="The study's storage, shared by its workers: journal:///file.journal on one host, "
    "postgresql+psycopg://user@host/db across hosts.",
)
@click.option("--study", "study_name", required=True, help="The study to join.")
@click.option(
    "--device",
    default=None,
    help="The GPU this worker's trials run on (CUDA_VISIBLE_DEVICES), such as 0.",
)
@CPUS_OPTION
@SHARE_CORES_OPTION
@seed_option("Sampler seed, mixed with this worker's host and pid.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    callback=finite,
    default=None,
    help="Stop starting trials after this many seconds.",
)
@handle_errors
def worker(
    experiment: str | None,
    experiment_option: str | None,
    storage: str,
    study_name: str,
    device: str | None,
    cpus: str | None,
    share_cores: bool,
    seed: int,
    timeout: float | None,
) -> None:
    """Join a study on a shared storage and run EXPERIMENT's trials until it holds its target.

    EXPERIMENT is the one the study was made with, named as for 'autotune run' (a bundled
    name such as digits_cnn, path/to/file.py[:name] or module:name): a worker never runs the
    code a storage names, and refuses an experiment whose reference or file differs from the
    study's. 'autotune run' makes the study (and sets how many trials it runs); start one
    worker per host, or per GPU, then. A worker on other hardware than the study's is refused.
    """
    from autotune.study.workers import join, target_of
    from autotune.views.terminal import safe, trial_line

    if experiment is not None and experiment_option is not None:
        raise click.UsageError("name the experiment once: EXPERIMENT or --experiment")
    named = experiment if experiment is not None else experiment_option
    if named is None or not named.strip():
        raise click.UsageError(
            "name the experiment the study was made with (EXPERIMENT, as for 'autotune run'): "
            "a worker runs only the experiment its operator names"
        )
    quiet_optuna()
    console = Console()
    if device is not None:
        parse_devices(device, argument="device")
    placement = Placement(
        cpus=parse_cpus(cpus) if cpus else None, device=device, shared=share_cores
    )
    study = join(storage, study_name, named, placement=placement, seed=seed)
    target = target_of(study)
    me = f"{socket.gethostname()}:{os.getpid()}"
    console.print(
        f"worker {safe(me)} on {placement.describe()} joined study [bold]{safe(study.name)}[/]: "
        f"{study.finished_count()} of {target} trials finished"
    )
    memory = "memory" in study.objectives
    study.add_listener(lambda row: console.print(trial_line(row, memory)))
    study.ensure_baseline(
        on_wait=lambda: console.print("waiting for the baseline (another worker runs it)")
    )
    study.optimize(n_trials=target, timeout=timeout)
    console.print(f"worker {safe(me)} done: {study.finished_count()} of {target} trials finished")


__all__ = [
    "CPUS_OPTION",
    "SHARE_CORES_OPTION",
    "run_placements",
    "run_worker_options",
    "worker",
]
