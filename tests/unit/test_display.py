"""Unit tests for autotune.views.terminal: the input verdict, profile and recompilation in the
lines of ``autotune run``, the table of ``autotune status`` and the output of ``autotune trial``,
rendered to text (no TensorFlow)."""

from __future__ import annotations

import dataclasses
import io

import pytest
from rich.console import Console

from autotune.config import RunSettings, TrialConfig
from autotune.store.records import TrialRow, profile_fields, profile_reruns
from autotune.store.result import RunResult
from autotune.store.schema import PROFILE_RERUN_PREFIX
from autotune.views.terminal import (
    RECOMPILED,
    breakdown_table,
    profile_line,
    show_result,
    trial_line,
    trials_table,
    verdict_of,
)
from tests.support.fake_trials import (
    ABLATION_INPUT,
    XPROF_STATEMENT,
    fake_ablation,
    fake_profile,
    fake_recompilation,
    profiled_result,
    speed_of,
)

XLA = TrialConfig(batch_size=32, precision="mixed_bfloat16", jit_compile=True)
PLAIN = TrialConfig(batch_size=64)
SETTINGS = RunSettings(curve=False)


def console() -> Console:
    return Console(record=True, width=200, file=io.StringIO())


def render(*things: object) -> str:
    console = Console(record=True, width=200, file=io.StringIO())
    for thing in things:
        console.print(thing)
    return console.export_text()


def result_of(config: TrialConfig, profile_dir: str | None = "/logs/trial_2") -> RunResult:
    return profiled_result(config, SETTINGS.replace(profile_dir=profile_dir))


def row_of(
    number: int, result: RunResult, reruns: dict | None = None, **changes: object
) -> TrialRow:
    data = result.to_dict()
    data.pop("config")
    values: dict = {
        "number": number,
        "state": "complete",
        "config": result.config,
        "throughput": result.throughput,
        "fidelity": 0.3,
        "feasible": True,
        "log_dir": f"/logs/trial_{number}",
        **profile_fields(data, result.config, (reruns or {}).get(number)),
    }
    values.update(changes)
    return TrialRow(**values)


# --------------------------------------------------------------------------------------------
# autotune run: one line per trial and per Pareto re-run
# --------------------------------------------------------------------------------------------


def test_trial_line_shows_the_verdict_with_both_figures_and_recompilation() -> None:
    line = render(trial_line(row_of(2, result_of(XLA))))

    assert "highly input-bound 37% (ablation; xprof 3%)" in line
    assert RECOMPILED in line
    assert "feasible" in line and "fidelity 0.30" in line


def test_trial_line_without_profile_or_recompilation() -> None:
    result = dataclasses.replace(result_of(PLAIN, None), recompilation=fake_recompilation(PLAIN))

    line = render(trial_line(row_of(0, result)))

    assert "highly input-bound 37% (ablation)" in line
    assert "xprof" not in line
    assert RECOMPILED not in line


def test_trial_line_of_a_bare_trial_has_no_verdict() -> None:
    bare = dataclasses.replace(result_of(PLAIN, None), input_ablation=None, recompilation=None)

    line = render(trial_line(row_of(0, bare)))

    assert "input-bound" not in line and RECOMPILED not in line


def test_trial_line_on_an_accelerator_uses_xprof() -> None:
    gpu = profiled_result(XLA, SETTINGS.replace(profile_dir="/logs/t"), device_type="GPU")

    assert verdict_of(gpu.to_dict()) == "not input-bound 3% (xprof; ablation 37%)"


def test_profile_line_of_a_rerun() -> None:
    result = result_of(XLA).to_dict()
    entry = {part: result[part] for part in ("profile", "input_ablation", "recompilation")}
    entry.update(profile_error=None, log_dir="/logs/trial_2")

    line = render(profile_line(2, entry))
    failed = render(profile_line(3, {"log_dir": "/x", "profile_error": "re-run failed (oom)"}))

    assert line.startswith("profile of trial   2 (Pareto re-run)")
    assert "highly input-bound 37% (ablation; xprof 3%)" in line
    assert "tensorboard --logdir /logs/trial_2" in line
    assert RECOMPILED in line
    assert "no profile: re-run failed (oom)" in failed


# --------------------------------------------------------------------------------------------
# autotune status: the trials table
# --------------------------------------------------------------------------------------------


def test_trials_table_shows_verdict_and_profile_folder() -> None:
    profiled = row_of(2, result_of(XLA))
    unprofiled = row_of(0, result_of(PLAIN, None))

    text = render(trials_table([profiled, unprofiled], "Trials"))

    assert "input" in text and "profile log dir" in text
    row_2 = next(line for line in text.splitlines() if "│ 2 " in line)
    row_0 = next(line for line in text.splitlines() if "│ 0 " in line)
    assert "highly input-bound 37% (ablation; xprof 3%)" in row_2
    assert "/logs/trial_2" in row_2 and RECOMPILED in row_2
    assert "highly input-bound 37% (ablation)" in row_0
    assert "/logs" not in row_0 and RECOMPILED not in row_0


def test_trials_table_takes_pareto_reruns_and_their_errors() -> None:
    unprofiled = result_of(PLAIN, None)
    rerun = result_of(PLAIN, "/logs/trial_0").to_dict()
    attrs = {
        f"{PROFILE_RERUN_PREFIX}0": {
            **{part: rerun[part] for part in ("profile", "input_ablation", "recompilation")},
            "profile_error": None,
            "log_dir": "/logs/trial_0",
        },
        f"{PROFILE_RERUN_PREFIX}1": {"log_dir": "/logs/trial_1", "profile_error": "oom"},
    }
    reruns = profile_reruns(attrs)
    rows = [row_of(0, unprofiled, reruns), row_of(1, unprofiled, reruns)]

    text = render(trials_table(rows, "Trials"))

    row_0 = next(line for line in text.splitlines() if "│ 0 " in line)
    row_1 = next(line for line in text.splitlines() if "│ 1 " in line)
    assert "(ablation; xprof 3%)" in row_0
    assert "/logs/trial_0 (re-run)" in row_0
    assert "none: oom" in row_1


# --------------------------------------------------------------------------------------------
# autotune trial: the whole result
# --------------------------------------------------------------------------------------------


def test_show_result_shows_the_profile() -> None:
    result = result_of(XLA)
    out = console()

    show_result(out, result)
    text = out.export_text()

    assert "highly input-bound 37% (ablation; xprof 3%)" in text
    assert "ablation: on a CPU, input work and training share the cores" in text
    assert f"{ABLATION_INPUT:.0%} of step time" in text
    assert "not input-bound: 3% of the profiled step waiting for input (CPU_ONLY, 10 steps)" in (
        text
    )
    assert XPROF_STATEMENT in text
    assert "model/dense/MatMul (MatMul, Host): 12.00 ms, 50%" in text
    assert "model/conv/Conv2D" in text and "IteratorGetNext" in text
    assert "model/dense/Relu" not in text  # only the top 3
    assert "16-bit" not in text  # none on a CPU
    assert "tensorboard --logdir /logs/trial_2" in text
    assert "4.0 s outside the timed windows" in text
    assert "the profiled window ran 50% slower than the timed ones" in text
    assert "XLA recompiled during the timed windows: 3 of 30 steps" in text
    assert "x[1]" in text
    assert "Step time in the profiled window (XProf)" in text
    assert "profile error" not in text


def test_show_result_on_an_accelerator_shows_the_16_bit_share() -> None:
    result = profiled_result(XLA, SETTINGS.replace(profile_dir="/logs/t"), device_type="GPU")
    out = console()

    show_result(out, result)
    text = out.export_text()

    assert "16-bit share" in text and "80% of device compute" in text
    assert "not input-bound 3% (xprof; ablation 37%)" in text


def test_show_result_says_why_a_profile_is_missing() -> None:
    result = dataclasses.replace(
        result_of(PLAIN, None), profile_error="the profiler could not start: busy"
    )
    out = console()

    show_result(out, result)
    text = out.export_text()

    assert "profile error" in text and "the profiler could not start: busy" in text
    assert "tensorboard" not in text and "recompil" not in text
    assert breakdown_table(result) is None


def test_breakdown_table_in_ms_share_and_scaled_to_the_timed_step() -> None:
    result = result_of(PLAIN, "/logs/p")
    timed = 1e3 * PLAIN.batch_size / speed_of(PLAIN)  # 32 ms; the profiled step is 64 ms

    text = render(breakdown_table(result))

    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines()]
    rows = {row[0]: row[1:] for row in cells if row}
    assert list(rows) == ["input", "host_compute", "device_compute", "compile", "other", "step"]
    assert rows["input"][:2] == ["1.920", "3%"]
    assert float(rows["input"][2]) == pytest.approx(0.03 * timed, abs=1e-3)
    assert float(rows["host_compute"][2]) == pytest.approx(0.9 * 0.97 * timed, abs=1e-3)
    assert rows["step"][:2] == ["64.000", "100%"]
    assert float(rows["step"][2]) == pytest.approx(timed)


def test_fake_ablation_matches_its_fraction() -> None:
    result = result_of(PLAIN, None)
    assert result.throughput is not None
    assert fake_ablation(result.throughput).input_fraction == pytest.approx(ABLATION_INPUT)
    assert fake_profile(PLAIN, "/l").input_fraction == pytest.approx(0.03)


# --------------------------------------------------------------------------------------------
# Hostile strings (issue 13): data is printed as text, never read as Rich markup or sent to the
# terminal as control codes
# --------------------------------------------------------------------------------------------

#: Rich markup that closes unopened tags (MarkupError before), opens a style, and an ESC code.
HOSTILE = ("exp[/v2]", "[bold]x", "[/data/x]", "red \x1b[31mred\x1b[0m", "bell\x07 cr\r", "a\\")
MESSAGE = "cannot read [/data/x] [bold]x exp[/v2] \x1b[31mred\x1b[0m"
SHOWN = "cannot read [/data/x] [bold]x exp[/v2] \\x1b[31mred\\x1b[0m"


def render_raw(*things: object) -> str:
    """What the terminal receives (styles on), to look for control codes the data sent."""
    out = io.StringIO()
    console = Console(
        file=out, width=300, force_terminal=True, color_system="standard", highlight=False
    )
    for thing in things:
        console.print(thing)
    return out.getvalue()


@pytest.mark.parametrize("text", HOSTILE)
def test_safe_prints_data_as_it_is_with_control_codes_made_visible(text: str) -> None:
    from autotune.views.terminal import plain, safe

    shown = render(f"[bold]{safe(text)}[/]").rstrip("\n")

    assert shown == plain(text)
    assert "\x1b" not in shown and "\r" not in shown and "\x07" not in shown
    assert plain("tab\tand\nnewline") == "tab\tand\nnewline"
    assert plain("\x1b[31m") == "\\x1b[31m"


def test_trial_line_of_a_failed_or_pruned_trial_with_markup_in_its_message() -> None:
    failed = row_of(
        5, result_of(PLAIN, None), state="failed", failure_kind="exception", reason=MESSAGE
    )
    pruned = row_of(4, result_of(PLAIN, None), state="pruned", reason=MESSAGE)

    failed_line, pruned_line = render(trial_line(failed)), render(trial_line(pruned))

    assert f"failed (exception): {SHOWN}" in failed_line
    assert f"pruned: {SHOWN}" in pruned_line


def test_trial_line_sends_no_escape_code_from_the_data() -> None:
    failed = row_of(
        5, result_of(PLAIN, None), state="failed", failure_kind="exception", reason="\x1b[2J"
    )

    raw = render_raw(trial_line(failed))

    assert "\x1b[2J" not in raw  # clear-screen, as the data had it
    assert "\\x1b[2J" in raw


def test_trials_table_and_profile_line_with_markup_in_errors_and_paths() -> None:
    failed = row_of(
        5, result_of(PLAIN, None), state="failed", failure_kind="exception", reason=MESSAGE
    )
    errored = row_of(
        2, result_of(XLA, None), profile_log_dir=None, profile_error=f"re-run failed: {MESSAGE}"
    )
    folder = row_of(3, result_of(XLA, "/logs/[/data/x]"), profile_log_dir="/logs/[/data/x]")

    table = render(trials_table([failed, errored, folder], "Trials"))
    line = render(profile_line(3, {"log_dir": "/x", "profile_error": MESSAGE}))

    assert "failed: exception" in table
    assert "re-run failed: cannot read [/data/x]" in table
    assert "/logs/[/data/x]" in table
    assert f"no profile: {SHOWN}" in line


def test_show_failure_prints_message_and_log_tail_as_text() -> None:
    from autotune.exceptions import TrialFailure
    from autotune.views.terminal import show_failure

    out = console()
    show_failure(out, TrialFailure("exception", MESSAGE, f"Traceback\n{MESSAGE}\n"))
    text = out.export_text()

    assert f"trial failed (exception): {SHOWN}" in text
    assert f"Traceback\n{SHOWN}" in text
    assert "\x1b" not in text


def test_show_result_and_show_recipe_print_stored_strings_as_text() -> None:
    from autotune.recipe import Recipe
    from autotune.views.terminal import show_recipe

    result = dataclasses.replace(
        result_of(XLA),
        profile_error=MESSAGE,
        stopped_early=MESSAGE,
        effective={**result_of(XLA).effective, "dtype_policy": "[bold]x", "head_fix": "[/v2]"},
    )
    out = console()
    show_result(out, result)
    recipe = Recipe(
        config=PLAIN,
        learning_rate=None,
        throughput=None,
        baseline_throughput=None,
        speedup=None,
        fidelity=None,
        tolerance=1.5,
        experiment="[/data/x]",
        study="exp[/v2]",
        storage="sqlite:///x.db",
        trial=None,
        note=MESSAGE,
    )
    show_recipe(out, recipe)
    text = out.export_text()

    assert text.count(SHOWN) == 3  # profile error, stopped early, the recipe's note
    assert "[bold]x" in text and "[/v2]" in text


def test_trial_line_shows_the_symmetric_fidelity_only_where_the_curve_is_better_in_part() -> None:
    row = row_of(0, result_of(PLAIN, None))
    better_in_part = dataclasses.replace(row, fidelity=0.02, fidelity_symmetric=0.45)
    worse_only = dataclasses.replace(row, fidelity=0.9, fidelity_symmetric=0.9)
    stored_before = dataclasses.replace(row, fidelity=0.9, fidelity_symmetric=None)

    assert "fidelity 0.02 (symmetric 0.45: better in part)" in render(trial_line(better_in_part))
    assert "symmetric" not in render(trial_line(worse_only))
    assert "symmetric" not in render(trial_line(stored_before))


def test_show_result_says_whose_training_step_ran() -> None:
    own = dataclasses.replace(
        result_of(XLA), effective={**result_of(XLA).effective, "train_step": "experiment"}
    )
    out = console()
    show_result(out, own)
    show_result(out, result_of(XLA))  # Keras's own step: no row
    text = out.export_text()

    assert text.count("training step") == 1
    assert "the experiment's own train_step" in text
