"""The ``autotune`` command. Errors become a one-line message and an exit code (see
:mod:`autotune.cli._errors`): 2 for bad input, 1 for a failed trial."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from autotune.analysis.head_to_head import DEFAULT_ROUNDS, DEFAULT_TOP
from autotune.analysis.profile import PROFILE_MODES
from autotune.cli._errors import FLAGS, OneLineErrors, error_message, finite, handle_errors
from autotune.cli._inputs import check_listen
from autotune.cli._options import (
    EXPERIMENT_ARGUMENT,
    MAX_FIDELITY_OPTION,
    MAX_MEMORY_OPTION,
    OBJECTIVES_OPTION,
    PLOTLY_JS_OPTION,
    START_OPTION,
    STORAGE_OPTION,
    STUDY_OPTION,
    quiet_optuna,
    read_records,
    seed_option,
)
from autotune.cli.export import export
from autotune.cli.trial import trial
from autotune.cli.workers import run_placements, run_worker_options, worker
from autotune.store.anchors import read_anchors
from autotune.study.callbacks import StudyCallback
from autotune.views.drift import anchor_line
from autotune.views.terminal import baseline_line, profile_line, safe, trial_line, trials_table

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from autotune.fidelity import NoiseFloor
    from autotune.store.records import StudyRecords, TrialRow
    from autotune.store.result import RunResult
    from autotune.study import Study


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="autotune")
def main() -> None:
    """Find the fastest way to train a Keras model without changing what it learns."""


@main.command()
@EXPERIMENT_ARGUMENT
@click.option(
    "--space",
    default="quick",
    show_default=True,
    help="Search-space TOML file, or a bundled space: quick, cpu, gpu, input, keras3.",
)
@STORAGE_OPTION
@STUDY_OPTION
@click.option(
    "--trials",
    "n_trials",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Finished trials the study should hold in the end (the three baseline runs do "
    "not count); running the same command again completes the remainder.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    callback=finite,
    default=None,
    help="Stop starting trials after this many seconds.",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0, min_open=True),
    callback=finite,
    default=1.5,
    show_default=True,
    help="Largest fidelity distance accepted, in units of the seed noise floor.",
)
@seed_option("Sampler seed.")
@START_OPTION
@click.option(
    "--allow-mismatch",
    is_flag=True,
    help="Resume a study made with another experiment, space, tolerance or machine.",
)
@click.option(
    "--profile",
    type=click.Choice(PROFILE_MODES),
    default="all",
    show_default=True,
    help="Profile one steady window of every trial (all), re-run the Pareto-front trials with "
    "profiling at the end (pareto), or never (off). Profiles go to autotune_logs/<study>-<hash>/ "
    "beside the database: tensorboard --logdir shows them.",
)
@click.option(
    "--confirm-top",
    type=click.IntRange(min=0),
    default=DEFAULT_TOP,
    show_default=True,
    help="Confirm this many of the fastest feasible Pareto trials head to head with the "
    "baseline before recommending one (0: recommend unconfirmed).",
)
@click.option(
    "--confirm-rounds",
    type=click.IntRange(min=2),
    default=DEFAULT_ROUNDS,
    show_default=True,
    help="Interleaved rounds of the confirmation at most (a fresh process per candidate and "
    "round); the rounds stop once no verdict can change.",
)
@click.option(
    "--confirm-paired/--confirm-unpaired",
    default=True,
    show_default=True,
    help="Time a confirmation round's candidates beside the baseline in one process (those "
    "that share its backend and thread pools), or each in a fresh process of its own.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the study as JSON at the end (schema autotune.study/1; progress goes to stderr).",
)
@click.option(
    "--throughput-only",
    is_flag=True,
    help="Go on when the baseline's validation curve does not move beyond its seeds' spread "
    "(the fidelity check cannot see drift; without this the study stops before searching); "
    "every view then marks the study as throughput only.",
)
@click.option(
    "--warm-start",
    metavar="STORAGE[:STUDY]",
    default=None,
    help="Start a new study from an earlier one (another model version, machine or space): "
    "its answer and Pareto front are measured again here first. STUDY may be left out when "
    "STORAGE holds one study.",
)
@OBJECTIVES_OPTION
@MAX_MEMORY_OPTION
@run_worker_options
@handle_errors
def run(
    experiment: str,
    space: str,
    storage: str,
    study_name: str | None,
    n_trials: int,
    timeout: float | None,
    tolerance: float,
    seed: int,
    start: str,
    allow_mismatch: bool,
    profile: str,
    confirm_top: int,
    confirm_rounds: int,
    confirm_paired: bool,
    as_json: bool,
    throughput_only: bool,
    warm_start: str | None,
    objectives: str | None,
    max_memory: float | None,
    workers: int,
    devices: str | None,
    cpus: str | None,
    share_cores: bool,
) -> None:
    """Tune EXPERIMENT (default: the bundled digits CNN) and store the study in --storage.

    EXPERIMENT: a bundled experiment (digits_cnn, tabular_mlp, transformer),
    path/file.py[:name] or module:name.

    With no arguments it tunes the bundled digits CNN with the quick space into ./autotune.db
    in a few minutes on a 2-core CPU. The same command again resumes the study.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from autotune.study import Study
    from autotune.views.terminal import show_confirmation, show_recipe

    quiet_optuna()
    console = Console(stderr=as_json)
    placements = run_placements(storage, workers, devices, cpus, share_cores)
    study = Study(
        experiment,
        space,
        storage,
        study_name,
        tolerance=tolerance,
        seed=seed,
        start=start,
        allow_mismatch=allow_mismatch,
        profile_mode=profile,
        placement=placements[0],
        objectives=objectives,
        throughput_only=throughput_only,
        warm_start=warm_start,
    )
    done = study.finished_count()
    console.print(
        f"study [bold]{safe(study.name)}[/] in {safe(storage)}: {done} of {n_trials} trials "
        f"finished; space {safe(study.space.name)} ({study.space.size():,} configurations); "
        f"{len(placements)} worker{'s' if len(placements) > 1 else ''} on "
        + ", ".join(p.describe() for p in placements)
    )
    if study.warm_start is not None:
        console.print(safe(study.warm_start.summary()))
        for proposal in study.warm_start.proposals:
            console.print(safe(f"  {proposal.describe(study.warm_start.study)}"))
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        outcome = study.run(
            n_trials,
            timeout=timeout,
            confirm_top=confirm_top,
            confirm_rounds=confirm_rounds,
            confirm_paired=confirm_paired,
            max_memory_mib=max_memory,
            local_workers=placements[1:],
            callbacks=[
                RunProgress(progress, study, n_trials, confirm_top, confirm_rounds, confirm_paired)
            ],
        )
    if outcome.confirmation is not None:
        show_confirmation(console, outcome.confirmation, study.tolerance)
    show_recipe(console, outcome.recipe)
    if as_json:
        _print_json(read_records(study.storage_url, study.name))


#: A confirmation round's line for one model measured (not a note such as a failed group's).
ROUND_LINE = re.compile(r"round \d+/\d+: (trial \d+|baseline) ")


class RunProgress(StudyCallback):
    """``autotune run``'s terminal view of :meth:`Study.run`: a transient progress bar per step
    (baseline, trials, confirmation) and one line per baseline run, trial, profile and
    confirmation step."""

    def __init__(
        self,
        progress: Progress,
        study: Study,
        n_trials: int,
        top: int,
        rounds: int,
        paired: bool = False,
    ) -> None:
        self.progress = progress
        self.print = progress.console.print
        self.study = study
        self.n_trials = n_trials
        self.top = top
        self.rounds = rounds
        self.paired = paired and study.pair_runner is not None
        self.memory = "memory" in study.objectives
        self.baseline_task = progress.add_task("baseline", total=3)
        self.trials_task: TaskID | None = None
        self.confirm_task: TaskID | None = None
        self.anchors_shown = {a.key for a in read_anchors(study.optuna.user_attrs).runs}

    def on_baseline_wait(self) -> None:
        self.print("waiting for the baseline (another worker runs it)")

    def on_baseline_run(self, seed: int, result: RunResult) -> None:
        self.print(baseline_line(seed, result))
        self.progress.advance(self.baseline_task)

    def on_baseline_end(self, noise_floor: NoiseFloor) -> None:
        self.progress.update(self.baseline_task, completed=3, visible=False)
        self.print(f"seed noise floor: {noise_floor.describe()}")

    def on_search_begin(self, finished: int, n_trials: int | None) -> None:
        done = min(finished, self.n_trials)
        self.trials_task = self.progress.add_task("trials", total=self.n_trials, completed=done)

    def on_trial_end(self, row: TrialRow) -> None:  # every worker's, as they finish
        anchors = read_anchors(self.study.optuna.user_attrs)  # any run since the last trial
        for anchor in anchors.runs:
            if anchor.ended is not None and anchor.key not in self.anchors_shown:
                self.anchors_shown.add(anchor.key)
                self.print(safe(anchor_line(anchor, anchors.baseline)))
        self.print(trial_line(row, self.memory))
        if self.trials_task is not None:
            done = min(self.study.finished_count(), self.n_trials)
            self.progress.update(self.trials_task, completed=done)

    def on_profile(self, number: int, entry: dict[str, Any]) -> None:
        self.print(profile_line(number, entry))

    def on_worker_failure(self, line: str) -> None:
        self.print(safe(line), style="red")

    def on_front(self, front: list[TrialRow]) -> None:
        if front:
            width = self.progress.console.width
            self.print(trials_table(front, "Pareto front (feasible trials)", width))
        # a round's lines: one per candidate, and the baseline's when it runs alone
        total = self.rounds * (min(len(front), self.top) + (not self.paired))
        self.confirm_task = self.progress.add_task("confirmation", total=total)

    def on_confirm_progress(self, line: str) -> None:
        self.print(f"confirm {safe(line)}")
        if ROUND_LINE.match(line) and self.confirm_task is not None:
            self.progress.advance(self.confirm_task)


def _print_json(records: StudyRecords) -> None:
    from autotune.views.study_json import study_json

    click.echo(json.dumps(study_json(records), indent=2, sort_keys=True))


@main.command()
@STORAGE_OPTION
@STUDY_OPTION
@click.option(
    "--json", "as_json", is_flag=True, help="Print the study as JSON (schema autotune.study/1)."
)
@handle_errors
def status(storage: str, study_name: str | None, as_json: bool) -> None:
    """Show a stored study: baseline, noise floor, every trial, the confirmation and the
    recommendation (the one 'best' prints; reads the storage only)."""
    from autotune.store.throughput_only import throughput_only_text
    from autotune.views.drift import drift_lines
    from autotune.views.terminal import format_throughput, safe, show_confirmation, trials_table

    records = read_records(storage, study_name)
    if as_json:
        _print_json(records)
        return
    console = Console()
    baseline = records.baseline
    console.print(f"study [bold]{safe(records.study_name)}[/] in {safe(storage)}")
    if baseline.throughput is not None:
        console.print(f"baseline: {format_throughput(baseline.throughput)}")
    if baseline.noise_floor is not None:
        console.print(f"seed noise floor: {baseline.noise_floor.describe()}")
    for line in drift_lines(records):  # the anchors: the baseline measured during the search
        console.print(safe(line))
    if records.throughput_only is not None:
        console.print(safe(f"warning: {throughput_only_text(records.throughput_only)}"))
    if records.warm_start is not None:
        console.print(safe(records.warm_start.summary()))
    counts = records.counts()
    console.print(
        f"{records.finished_count()} finished trials; "
        + ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    )
    if records.trials:
        table = trials_table(list(records.trials), "Trials", console.width, records.has_memory)
        console.print(table)
    confirmation = records.confirmation
    if confirmation is not None:
        show_confirmation(console, confirmation, records.tolerance)
        console.print(f"confirmed answer: {safe(confirmation.summary(records.tolerance))}")
    else:
        console.print("not confirmed yet: 'autotune run' confirms the top candidates at its end")
    if baseline.config is not None and baseline.throughput is not None:
        from autotune.store.recommendation import recommend

        console.print(f"recommendation: {safe(recommend(records).text)}")


@main.command()
@STORAGE_OPTION
@STUDY_OPTION
@MAX_FIDELITY_OPTION
@MAX_MEMORY_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print the recipe as JSON.")
@handle_errors
def best(
    storage: str,
    study_name: str | None,
    max_fidelity: float | None,
    max_memory: float | None,
    as_json: bool,
) -> None:
    """Print the recommended configuration within the fidelity tolerance (and --max-memory).

    After a confirmation: the confirmed winner, its speed-up and the throughputs of the
    confirmation's rounds; before one, the fastest trial, its figures marked as the search
    phase's (unconfirmed).
    """
    from autotune.views.terminal import show_recipe

    recipe = read_records(storage, study_name).best(max_fidelity, max_memory)
    if as_json:
        click.echo(json.dumps(recipe.to_dict(), indent=2, sort_keys=True))
    else:
        show_recipe(Console(), recipe)


@main.command()
@STORAGE_OPTION
@STUDY_OPTION
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default="report.html",
    show_default=True,
    help="Where to write the report (one HTML file; it works offline unless --plotly-js cdn; "
    "'-': standard output).",
)
@PLOTLY_JS_OPTION
@handle_errors
def report(storage: str, study_name: str | None, output: str, plotly_js: str) -> None:
    """Write a study's report: Pareto front, curves, step times, importance, history, recipes.

    Reads the storage only; the experiment is not loaded and TensorFlow is not imported.
    """
    from autotune.outputs import is_stdout
    from autotune.views.report import write_report
    from autotune.views.terminal import plain

    records = read_records(storage, study_name)
    path = write_report(records, output, plotly_js)
    front = len(records.pareto())
    click.echo(
        f"wrote {'standard output' if is_stdout(output) else path}: study "
        f"{plain(records.study_name)}, {len(records.trials)} trials, {front} on the Pareto front",
        err=is_stdout(output),
    )


@main.command()
@STORAGE_OPTION
@STUDY_OPTION
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8050, show_default=True, help="HTTP port."
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (127.0.0.1: this machine only).",
)
@handle_errors
def dashboard(storage: str, study_name: str | None, port: int, host: str) -> None:
    """Serve a live dashboard of a study, re-read every 2 s while it runs (Ctrl-C stops it).

    A fidelity-tolerance slider shows what 'best' recommends at it, with the same figures;
    clicking a point of the Pareto figure shows its curve, step time and recipe JSON.
    """
    from autotune.views.dashboard import create_app, exposure_warning

    quiet_optuna()
    app = create_app(storage, study_name, host=host, port=port)
    check_listen(host, port)
    warning = exposure_warning(host, port)
    if warning:
        Console(stderr=True).print(warning, style="bold red", markup=False, highlight=False)
    click.echo(f"autotune dashboard of {storage} on http://{host}:{port}/ (Ctrl-C stops it)")
    try:
        app.run(host=host, port=port, debug=False)
    except KeyboardInterrupt:
        return


main.add_command(export)
main.add_command(trial)
main.add_command(worker)

__all__ = ["FLAGS", "error_message", "main"]


if __name__ == "__main__":
    main()
