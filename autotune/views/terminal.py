"""Rich renderings of results for people. JSON output lives in the CLI; this is the table view.

Every string that comes from data (study, experiment and space names, failure messages and log
tails, paths, effective settings) goes through :func:`safe` before it joins Rich markup, or
:func:`plain` where it is printed without markup: a name such as ``exp[/v2]`` is text, never a
closing tag (Rich raises MarkupError on those), and a control character such as ESC is shown as
``\\x1b``, never sent to the terminal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.markup import escape as _escape_markup
from rich.table import Table

from autotune.analysis.head_to_head import Confirmation, ratio_text
from autotune.analysis.profile import BREAKDOWN_COMPONENTS, input_verdict
from autotune.exceptions import TrialFailure
from autotune.float32_layers import layers_text
from autotune.lr_rules import rate_text
from autotune.measure import format_throughput
from autotune.store.predicted import predicted_from
from autotune.store.result import CurvePoint, RunResult
from autotune.store.schema import CURVE_FROM_ATTR

if TYPE_CHECKING:
    from autotune.recipe import Recipe
    from autotune.store.records import TrialRow

#: Operations listed by :func:`show_result`, the most self time first.
TOP_OPS_SHOWN = 3
#: What :func:`trial_line` and :func:`trials_table` say when XLA recompiled while timed.
RECOMPILED = "XLA RECOMPILED"


#: C0 and C1 control characters but tab and newline: ESC starts terminal escape sequences.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def plain(text: object) -> str:
    """``str(text)`` with each control character (but tab and newline) written as ``\\xNN``,
    so printing it cannot move the cursor, recolour or retitle the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def safe(text: object) -> str:
    """``str(text)`` ready to join Rich markup: control characters as with :func:`plain` and
    every "[" that could open a tag escaped, so Rich prints it as it is."""
    return _escape_markup(plain(text))


def _bytes(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.0f} MiB"


def verdict_of(result: Mapping[str, Any]) -> str:
    """A stored result's input verdict with its share and source, and the other source's share
    when both were measured: 'highly input-bound 37% (ablation; xprof 3%)'; "" when neither
    was."""
    from autotune.store.records import verdict_text

    profile, ablation = result.get("profile"), result.get("input_ablation")
    verdict = input_verdict(profile, ablation)
    return verdict_text(verdict.to_dict() if verdict else None, profile, ablation)


def _recompiled(result: Mapping[str, Any]) -> bool:
    return bool((result.get("recompilation") or {}).get("flagged"))


def _profile_rows(summary: Table, result: RunResult) -> None:
    """The input verdict, XProf's statement and top operations, profiling cost, profile error
    and recompilation message of ``result``, as rows of ``summary``."""
    data = result.to_dict()
    verdict = input_verdict(data["profile"], data["input_ablation"])
    if verdict is not None:
        summary.add_row("input verdict", safe(verdict_of(data)))
        summary.add_row("verdict from", safe(f"{verdict.source}: {verdict.why}"))
    if result.input_ablation is not None:
        ablation = result.input_ablation
        summary.add_row(
            "input ablation",
            f"{ablation.verdict}: {ablation.input_fraction:.0%} of step time "
            f"({ablation.cached.median:,.0f} samples/s fed one cached batch against "
            f"{ablation.pipeline.median:,.0f} through the pipeline)",
        )
    profile = result.profile
    if profile is not None:
        summary.add_row(
            "xprof",
            safe(
                f"{profile.verdict}: {profile.input_fraction:.0%} of the profiled step waiting "
                f"for input ({profile.device_type or 'unknown device'}, {profile.steps} steps)"
            ),
        )
        if profile.statement:
            summary.add_row("xprof says", safe(profile.statement))
        if profile.top_ops:
            summary.add_row(
                "top ops",
                safe(
                    "\n".join(
                        f"{op.name} ({op.type}, {op.host_or_device}): {op.self_ms:,.2f} ms, "
                        f"{op.fraction:.0%}"
                        for op in profile.top_ops[:TOP_OPS_SHOWN]
                    )
                ),
            )
        if profile.sixteen_bit_fraction is not None:
            summary.add_row("16-bit share", f"{profile.sixteen_bit_fraction:.0%} of device compute")
        summary.add_row("profile", safe(f"tensorboard --logdir {profile.log_dir}"))
        cost = f"{profile.capture_seconds:.1f} s outside the timed windows"
        slowdown = (
            profile.slowdown(result.throughput.median) if result.throughput is not None else None
        )
        if slowdown is not None:
            pace = "slower" if slowdown >= 0 else "faster"
            cost += f"; the profiled window ran {abs(slowdown):.0%} {pace} than the timed ones"
        summary.add_row("profiling cost", cost)
    if result.profile_error:
        summary.add_row("profile error", f"[red]{safe(result.profile_error)}[/]")
    if result.recompilation is not None and result.recompilation.message:
        style = "red" if result.recompilation.flagged else "yellow"
        summary.add_row("recompilation", f"[{style}]{safe(result.recompilation.message)}[/]")


def breakdown_table(result: RunResult) -> Table | None:
    """XProf's step-time breakdown of ``result``'s profiled window: milliseconds per step and
    share for each component, and the same scaled to the timed step time (batch size / median
    throughput); None when the trial was not profiled."""
    from autotune.store.records import step_breakdown

    profile = result.profile
    if profile is None:
        return None
    scaled = step_breakdown(result.to_dict(), result.config) if result.throughput else None
    table = Table(title="Step time in the profiled window (XProf)")
    table.add_column("component")
    table.add_column("ms per step", justify="right")
    table.add_column("share", justify="right")
    table.add_column("scaled to timed step (ms)", justify="right")
    for name in BREAKDOWN_COMPONENTS:
        value = profile.breakdown_ms.get(name, 0.0)
        share = value / profile.step_ms if profile.step_ms > 0 else 0.0
        timed = f"{scaled[name]:,.3f}" if scaled else "-"
        table.add_row(name, f"{value:,.3f}", f"{share:.0%}", timed)
    timed_step = (
        f"{result.config.batch_size / result.throughput.median * 1e3:,.3f}"
        if result.throughput and result.throughput.median > 0
        else "-"
    )
    table.add_row("[bold]step[/]", f"{profile.step_ms:,.3f}", "100%", timed_step)
    return table


#: Whose training step a trial ran (its effective ``train_step``), where it was not Keras's.
STEP_SOURCES = {
    "experiment": "the experiment's own train_step",
    "model": "the model's own train_step (through fit)",
}


def show_result(console: Console, result: RunResult) -> None:
    """Prints a measured trial: throughput, compile time, input verdict, profile (breakdown,
    top operations, log folder, cost), recompilation, curve and effective settings."""
    summary = Table(title=f"Trial {safe(result.config.describe())}", show_header=False)
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
    _profile_rows(summary, result)
    if result.stopped_early:
        summary.add_row("stopped early", safe(result.stopped_early))
    for key in ("dtype_policy", "jit_compile", "loss_scaling", "learning_rate"):
        summary.add_row(key, safe(result.effective.get(key)))
    if result.effective.get("jit_compile_requested") != result.effective.get("jit_compile"):
        summary.add_row("note", "jit_compile was requested but Keras turned it off")
    head = result.effective.get("output_dtype_found")
    fix = result.effective.get("head_fix")
    summary.add_row(
        "output layer", safe(f"{head}" + (f" -> float32 (fixed: {fix})" if fix else ""))
    )
    if (kept := layers_text(result.effective)) is not None:
        summary.add_row("float32 layers", safe(kept))
    step = STEP_SOURCES.get(str(result.effective.get("train_step")))
    if step is not None:
        summary.add_row("training step", step)
    pipeline = result.effective.get("pipeline", {})
    summary.add_row("pipeline", safe(", ".join(f"{k}={v}" for k, v in pipeline.items())))
    summary.add_row(
        "memory",
        f"host peak {_bytes(result.peak_host_bytes)}; device {_bytes(result.peak_device_bytes)}",
    )
    summary.add_row(
        "phases", safe(", ".join(f"{k} {v:.1f} s" for k, v in result.phase_seconds.items()))
    )
    console.print(summary)
    breakdown = breakdown_table(result)
    if breakdown is not None:
        console.print(breakdown)
    if result.curve:
        curve = Table(title="Validation curve")
        curve.add_column("samples seen", justify="right")
        curve.add_column("val loss", justify="right")
        scaled = any(point.loss_scale is not None for point in result.curve)
        if scaled:  # mixed_float16: the loss scale's health beside the curve
            curve.add_column("loss scale", justify="right")
            curve.add_column("steps skipped", justify="right")
        for point in result.curve:
            cells = [f"{point.samples:,}", f"{point.val_loss:.4f}"]
            if scaled:
                cells += [f"{point.loss_scale or 0:g}", str(point.skipped_steps or 0)]
            curve.add_row(*cells)
        console.print(curve)
        if result.final_metrics:
            console.print(
                "final: " + safe(", ".join(f"{k}={v:.4f}" for k, v in result.final_metrics.items()))
            )


def show_failure(console: Console, failure: TrialFailure) -> None:
    """Prints a failed trial: kind, message and the end of its log."""
    console.print(f"[bold red]trial failed[/] ({safe(failure.kind)}): {safe(failure.message)}")
    if failure.log_tail:
        console.print("[dim]last lines of the trial log:[/]")
        console.print(plain(failure.log_tail), markup=False, highlight=False)


def _peak(row: TrialRow) -> str:
    return "-" if row.peak_memory_mib is None else f"{row.peak_memory_mib:,.0f} MiB"


def trial_line(row: TrialRow, memory: bool = False) -> str:
    """One line per finished trial: number, configuration, throughput with CI, fidelity (and,
    with ``memory``, in a study with the memory objective, the peak memory), feasibility, input
    verdict with its source ('highly input-bound 37% (ablation; xprof 3%)') and XLA RECOMPILED
    when XLA recompiled while timed."""
    config = row.config.describe() if row.config else "(no configuration)"
    head = f"trial {row.number:>3}  {safe(config)}"
    if row.state == "failed":
        return f"{head}  [red]failed ({safe(row.failure_kind)})[/]: {safe(row.reason)}"
    throughput = format_throughput(row.throughput) if row.throughput else ""
    if row.state == "pruned" and predicted_from(row.user_attrs) is not None:
        return f"{head}  [magenta]skipped, not run[/]: {safe(row.reason)}"
    if row.state == "pruned":
        return f"{head}  {throughput}  [yellow]pruned[/]: {safe(row.reason)}"
    verdict = (
        "[green]feasible[/]" if row.feasible else "[red]infeasible[/] (fidelity over tolerance)"
    )
    copy = f" (same as trial {row.duplicate_of})" if row.duplicate_of is not None else ""
    fidelity = f"fidelity {row.fidelity:.2f}" if row.fidelity is not None else ""
    twin = row.user_attrs.get(CURVE_FROM_ATTR)
    if twin and row.duplicate_of is None:
        fidelity += f" (curve of {safe(str(twin))}: same but for the pipeline)"
    symmetric = row.fidelity_symmetric
    if row.fidelity is not None and symmetric is not None and symmetric - row.fidelity >= 0.005:
        fidelity += f" (symmetric {symmetric:.2f}: better in part)"
    if memory:
        fidelity += f"  peak {_peak(row)}"
    inputs = f"  {safe(row.verdict_text)}" if row.verdict_text else ""
    recompiled = f"  [bold red]{RECOMPILED}[/]" if row.recompiled else ""
    scale = f"  {loss_scale_text(row.curve)}" if loss_scale_text(row.curve) else ""
    return f"{head}  {throughput}  {fidelity}  {verdict}{copy}{inputs}{recompiled}{scale}"


def loss_scale_text(curve: Sequence[CurvePoint]) -> str:
    """'loss scale 32768 -> 4096, 3 steps skipped' for a curve trained under loss scaling (its
    first and last checkpoints); empty without."""
    scaled = [p for p in curve if p.loss_scale is not None]
    if not scaled:
        return ""
    return (
        f"loss scale {scaled[0].loss_scale:g} -> {scaled[-1].loss_scale:g}, "
        f"{scaled[-1].skipped_steps or 0} steps skipped"
    )


def profile_line(number: int, entry: Mapping[str, Any]) -> str:
    """One line per Pareto re-run profile (``autotune_profile:<n>``): its input verdict and
    where the profile is, or why there is none."""
    head = f"profile of trial {number:>3} (Pareto re-run)"
    if not entry.get("profile"):
        why = entry.get("profile_error") or "no profile"
        return f"{head}  [red]no profile[/]: {safe(str(why))}"
    inputs = verdict_of(entry) or "-"
    recompiled = f"  [bold red]{RECOMPILED}[/]" if _recompiled(entry) else ""
    log_dir = entry["profile"].get("log_dir") or entry.get("log_dir")
    return f"{head}  {safe(inputs)}{recompiled}  " + safe(f"tensorboard --logdir {log_dir}")


def baseline_line(seed: int, result: RunResult) -> str:
    """One line per baseline run."""
    what = format_throughput(result.throughput) if result.throughput else "curve only"
    losses = " ".join(f"{p.val_loss:.3f}" for p in result.curve)
    return f"baseline seed {seed}  {safe(result.config.describe())}  {what}  val loss: {losses}"


#: Below this terminal width (columns) :func:`trials_table` leaves out the profile's folder and
#: the input verdict's source, so the table stays readable at 80 columns.
WIDE_TABLE = 120


def trials_table(
    rows: list[TrialRow], title: str, width: int | None = None, memory: bool = False
) -> Table:
    """A table of trials: configuration, throughput with CI, fidelity (with ``memory``, in a
    study with the memory objective, then the peak memory), state, input verdict (with its
    source and both figures) and the profile's log folder. A trial whose profile
    came from the study's Pareto re-run
    (:attr:`~autotune.store.records.ProfileFacts.profile_source`) is marked "(re-run)". For a
    terminal ``width`` under :data:`WIDE_TABLE` columns the folder and the verdict's source are
    left out (``status --json`` and the report show them).
    """
    wide = width is None or width >= WIDE_TABLE
    between = " " if wide else "\n"  # the CI under the median in a narrow table
    table = Table(title=title) if wide else Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1))
    table.add_column("#", justify="right")
    table.add_column("configuration", min_width=None if wide else 17, overflow="fold")
    table.add_column(
        "samples/s (95% CI)", justify="right", min_width=None if wide else 15, overflow="fold"
    )
    table.add_column("fidelity", justify="right")
    if memory:
        table.add_column("peak memory", justify="right")
    table.add_column("state", max_width=None if wide else 10, overflow="fold")
    table.add_column("input", max_width=None if wide else 12, overflow="fold")
    if wide:
        table.add_column("profile log dir")
    for row in rows:
        estimate = row.throughput
        rate = (
            f"{estimate.median:,.0f}{between}({estimate.low:,.0f}-{estimate.high:,.0f})"
            if estimate
            else "-"
        )
        fidelity = f"{row.fidelity:.2f}" if row.fidelity is not None else "-"
        state = row.state
        if row.state == "complete":
            state = "feasible" if row.feasible else "infeasible"
        elif row.state == "failed":
            state = f"failed: {safe(row.failure_kind)}"
        if row.duplicate_of is not None:
            state += f" (= #{row.duplicate_of})"
        if row.warm_from is not None:
            state += f" (warm: earlier #{row.warm_from[0]})"
        if row.recompiled:
            state += f" [bold red]{RECOMPILED}[/]"
        if row.profile_log_dir:
            rerun_mark = " (re-run)" if row.profile_source == "rerun" else ""
            where = safe(row.profile_log_dir + rerun_mark)
        elif row.profile_error:
            where = f"[red]none[/]: {safe(row.profile_error)}"
        else:
            where = "-"
        config = safe(row.config.describe()) if row.config else "-"
        verdict = row.verdict_text or "-"
        if not wide:
            verdict = verdict.split(" (")[0]
        cells = [str(row.number), config, rate, fidelity, *([_peak(row)] if memory else [])]
        cells += [state, safe(verdict)]
        table.add_row(*cells, *([where] if wide else []))
    return table


def show_recipe(console: Console, recipe: Recipe) -> None:
    """Prints a recommended configuration with its speed-up and the throughputs that produced
    it (the confirmation's rounds, or the search phase's, said to be unconfirmed) and its
    fidelity (see :func:`autotune.store.recommendation.figures_of`)."""
    from autotune.store.recommendation import UNCONFIRMED, figures_of

    figures = figures_of(recipe)
    if recipe.is_baseline:
        title = "Baseline (no faster configuration)"
    else:
        minimal = ", minimal recipe" if (recipe.confirmation or {}).get("minimal") else ""
        how = "confirmed head to head" if figures.confirmed else UNCONFIRMED
        title = f"Best: trial {recipe.trial} ({how}{minimal})"
    table = Table(title=title, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in recipe.config.to_dict().items():
        table.add_row(safe(key), safe(value))
    if recipe.learning_rate is not None:
        table.add_row("learning_rate", rate_text(recipe.learning_rate, recipe.effective))
    if (kept := layers_text(recipe.effective)) is not None:
        table.add_row("float32 layers", safe(kept))
    if figures.throughput is not None:
        table.add_row("throughput", figures.throughput_text())
    if figures.baseline is not None and not recipe.is_baseline:
        table.add_row("baseline", figures.baseline_text())
    table.add_row("speed-up", figures.speedup_text())
    if recipe.fidelity is not None:
        seeds = (recipe.confirmation or {}).get("seeds") if figures.confirmed else None
        over = f", mean over seeds {seeds}" if seeds and not recipe.is_baseline else ""
        table.add_row("fidelity", f"{recipe.fidelity:.2f} (tolerance {recipe.tolerance:g}{over})")
    console.print(table)
    if recipe.note:
        console.print(safe(recipe.note))


def confirmation_table(confirmation: Confirmation, tolerance: float) -> Table:
    """Every confirmed candidate: its paired speed-up over the baseline with its interval, its
    fidelity over seeds (mean and range) and the verdict."""
    paired = " in one process each" if confirmation.paired else ""
    table = Table(
        title=f"Confirmation: {confirmation.completed_rounds} of at most {confirmation.rounds} "
        f"rounds head to head{paired}, seeds {list(confirmation.seeds)}; "
        f"{confirmation.process_count} processes; faster beyond noise at "
        f"{confirmation.one_sided_coverage:.1%} one-sided"
    )
    for name in ("#", "configuration", "speed-up (CI)", "fidelity (range)", "verdict"):
        table.add_column(name, justify="right" if name == "#" else "left", overflow="fold")
    for verdict in confirmation.verdicts(tolerance):
        fidelity = (
            f"{verdict.fidelity_mean:.2f} ({verdict.fidelity_low:.2f}-{verdict.fidelity_high:.2f})"
            if verdict.fidelity_mean is not None
            else "-"
        )
        table.add_row(
            str(verdict.candidate.trial),
            safe(verdict.candidate.config.describe()),
            ratio_text(verdict.ratio),
            fidelity,
            safe(verdict.text),
        )
    return table


def attribution_table(confirmation: Confirmation) -> Table | None:
    """Which of the winner's settings carry its speed-up: the speed with each one reverted to
    the baseline's value, over the winner's (paired by round); None without an attribution."""
    attribution = confirmation.attribution
    if attribution is None:
        return None
    measured = [
        s
        for s in attribution.settings
        if attribution.reverted_samples_per_second.get(s) and s not in attribution.known
    ]
    paired = [s for s in measured if s in attribution.paired]
    beside = (
        ""
        if not paired
        else ", beside the winner in one process"
        if len(paired) == len(measured)
        else f", {', '.join(paired)} beside the winner in one process"
    )
    rounds = (
        f"{attribution.completed_rounds} rounds, each setting reverted alone until settled{beside}"
        if attribution.completed_rounds
        else "no rounds of its own"
    )
    if attribution.known:
        rounds += f"; {', '.join(attribution.known)} from the confirmation's rounds"
    table = Table(title=f"Where trial {attribution.trial}'s speed-up comes from ({rounds})")
    for name in ("setting", "speed with it reverted (CI)", "verdict"):
        table.add_column(name, overflow="fold")
    for setting in attribution.settings:
        ratio = attribution.ratio(setting)
        drifted = attribution.drifts.get(setting)
        verdict = (
            f"kept: without it the curve drifts (trial {drifted})"
            if drifted is not None
            else "failed without it: kept"
            if setting in attribution.failed
            else "carries the speed-up: kept"
            if attribution.carries(setting)
            else "within noise: baseline value"
        )
        table.add_row(setting, ratio_text(ratio), verdict)
    return table


def show_confirmation(console: Console, confirmation: Confirmation, tolerance: float) -> None:
    """Prints the confirmation's candidates and, when there is one, its attribution."""
    if confirmation.candidates:
        console.print(confirmation_table(confirmation, tolerance))
    attributed = attribution_table(confirmation)
    if attributed is not None:
        console.print(attributed)
