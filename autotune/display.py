"""Rich renderings of results for people. JSON output lives in the CLI; this is the table view."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from autotune.exceptions import TrialFailure
from autotune.measure import Estimate
from autotune.result import RunResult


def format_throughput(estimate: Estimate | None) -> str:
    """'15,174 samples/s (95% CI 15,057-18,602, n=7)'; the CI's actual coverage when under 95%."""
    if estimate is None:
        return "not measured"
    level = f"{estimate.confidence:.0%}" if estimate.confidence < 0.95 else "95%"
    return (
        f"{estimate.median:,.0f} samples/s ({level} CI {estimate.low:,.0f}-{estimate.high:,.0f}, "
        f"n={estimate.n})"
    )


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
