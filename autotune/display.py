"""Rich renderings of results for people. JSON output lives in the CLI; this is the table view."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from autotune.exceptions import TrialFailure
from autotune.measure import format_throughput
from autotune.result import RunResult

if TYPE_CHECKING:
    from autotune.recipe import Recipe
    from autotune.study import TrialRecord


def _bytes(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.0f} MiB"


def show_result(console: Console, result: RunResult) -> None:
    """Prints a measured trial: throughput, compile time, curve and effective settings."""
    summary = Table(title=f"Trial {result.config.describe()}", show_header=False)
    summary.add_column(style="bold")
    summary.add_column()
    summary.add_row("throughput", format_throughput(result.throughput))
    if result.throughput is not None:
        summary.add_row(
            "timed windows",
            f"{result.throughput.n} x {result.steps_per_window} steps "
            f"(+/-{result.throughput.relative_half_width:.1%})",
        )
        summary.add_row(
            "warm-up",
            f"{result.warmup_steps} steps; compile {result.compile_seconds:.2f} s; "
            f"steady step {result.steady_step_seconds * 1e3:.2f} ms",
        )
    if result.input_ablation is not None:
        ablation = result.input_ablation
        summary.add_row(
            "input pipeline",
            f"{ablation.verdict}: {ablation.input_fraction:.0%} of step time waiting for input "
            f"(ablation: {ablation.cached.median:,.0f} samples/s fed one cached batch)",
        )
    if result.stopped_early:
        summary.add_row("stopped early", result.stopped_early)
    for key in ("dtype_policy", "jit_compile", "loss_scaling", "learning_rate"):
        summary.add_row(key, str(result.effective.get(key)))
    if result.effective.get("jit_compile_requested") != result.effective.get("jit_compile"):
        summary.add_row("note", "jit_compile was requested but Keras turned it off")
    head = result.effective.get("output_dtype_found")
    fix = result.effective.get("head_fix")
    summary.add_row("output layer", f"{head}" + (f" -> float32 (fixed: {fix})" if fix else ""))
    pipeline = result.effective.get("pipeline", {})
    summary.add_row("pipeline", ", ".join(f"{k}={v}" for k, v in pipeline.items()))
    summary.add_row(
        "memory",
        f"host peak {_bytes(result.peak_host_bytes)}; device {_bytes(result.peak_device_bytes)}",
    )
    summary.add_row("phases", ", ".join(f"{k} {v:.1f} s" for k, v in result.phase_seconds.items()))
    console.print(summary)
    if result.curve:
        curve = Table(title="Validation curve")
        curve.add_column("samples seen", justify="right")
        curve.add_column("val loss", justify="right")
        for point in result.curve:
            curve.add_row(f"{point.samples:,}", f"{point.val_loss:.4f}")
        console.print(curve)
        if result.final_metrics:
            console.print(
                "final: " + ", ".join(f"{k}={v:.4f}" for k, v in result.final_metrics.items())
            )


def show_failure(console: Console, failure: TrialFailure) -> None:
    """Prints a failed trial: kind, message and the end of its log."""
    console.print(f"[bold red]trial failed[/] ({failure.kind}): {failure.message}")
    if failure.log_tail:
        console.print("[dim]last lines of the trial log:[/]")
        console.print(failure.log_tail, markup=False, highlight=False)


def trial_line(record: TrialRecord) -> str:
    """One line per finished trial: number, configuration, throughput with CI, fidelity, verdict."""
    config = record.config.describe() if record.config else "(no configuration)"
    head = f"trial {record.number:>3}  {config}"
    if record.state == "failed":
        return f"{head}  [red]failed ({record.failure_kind})[/]: {record.reason}"
    throughput = format_throughput(record.throughput) if record.throughput else ""
    if record.state == "pruned":
        return f"{head}  {throughput}  [yellow]pruned[/]: {record.reason}"
    verdict = (
        "[green]feasible[/]" if record.feasible else "[red]infeasible[/] (fidelity over tolerance)"
    )
    copy = f" (same as trial {record.duplicate_of})" if record.duplicate_of is not None else ""
    fidelity = f"fidelity {record.fidelity:.2f}" if record.fidelity is not None else ""
    ablation = (record.user_attrs.get("result") or {}).get("input_ablation")
    inputs = f"  {ablation['verdict']} ({ablation['input_fraction']:.0%})" if ablation else ""
    return f"{head}  {throughput}  {fidelity}  {verdict}{copy}{inputs}"


def baseline_line(seed: int, result: RunResult) -> str:
    """One line per baseline run."""
    what = format_throughput(result.throughput) if result.throughput else "curve only"
    losses = " ".join(f"{p.val_loss:.3f}" for p in result.curve)
    return f"baseline seed {seed}  {result.config.describe()}  {what}  val loss: {losses}"


def trials_table(records: list[TrialRecord], title: str) -> Table:
    """A table of trials: configuration, throughput with CI, fidelity and state."""
    table = Table(title=title)
    table.add_column("#", justify="right")
    table.add_column("configuration")
    table.add_column("samples/s (95% CI)", justify="right")
    table.add_column("fidelity", justify="right")
    table.add_column("state")
    for record in records:
        estimate = record.throughput
        rate = (
            f"{estimate.median:,.0f} ({estimate.low:,.0f}-{estimate.high:,.0f})"
            if estimate
            else "-"
        )
        fidelity = f"{record.fidelity:.2f}" if record.fidelity is not None else "-"
        state = record.state
        if record.state == "complete":
            state = "feasible" if record.feasible else "infeasible"
        elif record.state == "failed":
            state = f"failed: {record.failure_kind}"
        if record.duplicate_of is not None:
            state += f" (= #{record.duplicate_of})"
        config = record.config.describe() if record.config else "-"
        table.add_row(str(record.number), config, rate, fidelity, state)
    return table


def show_recipe(console: Console, recipe: Recipe) -> None:
    """Prints a recommended configuration with its measured speed-up and fidelity."""
    title = (
        "Baseline (no faster configuration)"
        if recipe.is_baseline
        else f"Best: trial {recipe.trial}"
    )
    table = Table(title=title, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in recipe.config.to_dict().items():
        table.add_row(key, str(value))
    if recipe.learning_rate is not None:
        table.add_row("learning_rate", f"{recipe.learning_rate:g}")
    if recipe.throughput:
        from autotune.measure import Estimate, format_throughput

        table.add_row("throughput", format_throughput(Estimate(**recipe.throughput)))
    if recipe.baseline_throughput:
        from autotune.measure import Estimate, format_throughput

        table.add_row("baseline", format_throughput(Estimate(**recipe.baseline_throughput)))
    if recipe.speedup is not None:
        table.add_row("speed-up", f"{recipe.speedup:.2f}x")
    if recipe.fidelity is not None:
        table.add_row("fidelity", f"{recipe.fidelity:.2f} (tolerance {recipe.tolerance:g})")
    console.print(table)
    if recipe.note:
        console.print(recipe.note)
