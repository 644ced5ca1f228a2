"""What one trial costs, phase by phase, with the code before and after a change, and whether it
still measures the same throughput.

Each configuration runs as ``autotune trial EXPERIMENT --config ... --no-curve --json`` (the
default measurement: 7 timed windows of about 0.5 s and the input ablation), a fresh command each
time, with the ``before`` tree (git revision ``--before``, extracted under ``--work`` as
``time_to_answer.py`` does) and the ``after`` tree (the one this script is in) on
``PYTHONPATH``, the arms interleaved round by round (``--rounds``; the first arm alternates).
Reported per configuration and arm (medians over rounds): the steady call time, the warm-up's
calls and seconds, the ablation's pairs and seconds, the timed windows' seconds, the trial
process's phases in all, the command's wall time (its imports, the trial process's start and
end, and the phases), and the after/before ratio of samples/s paired by round (median,
order-statistic interval): one whose interval holds 1.00 says the change left the measurement
alone. Results are appended to results/trial_phases.md with the machine, date, versions and
command.

    python experiments/benchmarks/trial_phases.py --before REV [--rounds 3] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance import append_results  # type: ignore[import-not-found]
from time_to_answer import commit_of, source_tree  # type: ignore[import-not-found]

from autotune import TrialConfig
from autotune.analysis.candidate import paired_ratio
from autotune.analysis.head_to_head import ratio_text
from autotune.bundled import experiment_reference, load_experiment

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
#: (experiment, batch size as a multiple of its base, steps per execution, XLA)
CONFIGS = (
    ("digits_cnn", 1, 1, False),  # one step a call: nothing should change
    ("digits_cnn", 11, 64, False),
    ("tabular_mlp", 4, 64, False),
    ("transformer", 2, 64, False),
)


@dataclass
class Arm:
    """One arm's runs of one configuration: (result, wall seconds) per round."""

    runs: list[tuple[dict[str, Any], float]] = field(default_factory=list)

    def speeds(self) -> list[float]:
        return [result["throughput"]["median"] for result, _ in self.runs]

    def median(self, pick: str) -> float:
        values = []
        for result, wall in self.runs:
            phases = result.get("phase_seconds", {})
            if pick == "wall":
                values.append(wall)
            elif pick == "calls":
                values.append(result["warmup_steps"])
            elif pick == "pairs":
                values.append((result.get("input_ablation") or {}).get("pipeline", {}).get("n", 0))
            elif pick == "call":
                values.append(result["steady_step_seconds"])
            else:
                values.append(phases.get(pick, 0.0))
        return statistics.median(values)


def one_trial(
    tree: Path, name: str, config: TrialConfig, log: Path
) -> tuple[dict[str, Any], float]:
    """``autotune trial`` of ``config`` with ``tree``'s code: (its result, wall seconds)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "autotune", "trial", name, "--config", json.dumps(config.to_dict()),
         "--no-curve", "--json", "--log-dir", str(log)],
        capture_output=True, text=True, env=env, cwd=tree, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - started
    outcome = json.loads(done.stdout) if done.returncode == 0 else {}
    if outcome.get("status") != "ok":
        raise SystemExit(f"{tree.name} {name} {config.describe()}: {done.stdout[-2000:]}")
    return outcome["result"], wall


def one_config(
    name: str, factor: int, steps: int, xla: bool, trees: dict[str, Path], args: argparse.Namespace
) -> list[str]:
    """Both arms of one configuration, interleaved: its two table rows."""
    batch = load_experiment(experiment_reference(name)).base_batch_size * factor
    config = TrialConfig(batch_size=batch, steps_per_execution=steps, jit_compile=xla)
    arms = {arm: Arm() for arm in trees}
    for number in range(args.rounds):
        order = list(trees) if number % 2 == 0 else list(reversed(trees))
        for arm in order:
            log = (
                args.work / "logs" / name / f"bs{batch}_s{steps}_xla{int(xla)}" / f"{arm}_{number}"
            )
            arms[arm].runs.append(one_trial(trees[arm], name, config, log))
    ratio = paired_ratio(arms["after"].speeds(), arms["before"].speeds())
    rows = []
    for arm, runs in arms.items():
        rows.append(
            f"| {name} | `{config.describe()}` | {arm} | {runs.median('call'):.2f} | "
            f"{runs.median('calls'):.0f} | {runs.median('warmup'):.1f} | "
            f"{runs.median('windows'):.1f} | {runs.median('pairs'):.0f} | "
            f"{runs.median('ablation'):.1f} | {runs.median('total'):.1f} | "
            f"{runs.median('wall'):.1f} | {statistics.median(runs.speeds()):,.0f} | "
            f"{ratio_text(ratio) if arm == 'after' else ''} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="git revision of the 'before' arm")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune_trial_phases"))
    args = parser.parse_args()
    trees = {"before": source_tree(args.before, args.work), "after": ROOT}
    rows = [
        f"`before`: {commit_of(args.before)}; `after`: the working tree. "
        "`autotune trial ... --no-curve --json`, a fresh command each time, arms "
        f"interleaved, {args.rounds} rounds; medians over rounds; after/before paired by round.",
        "",
        "| experiment | configuration | arm | call (s) | warm-up calls | warm-up (s) "
        "| windows (s) | ablation pairs | ablation (s) | phases (s) | command (s) "
        "| samples/s | after / before |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, factor, steps, xla in CONFIGS:
        rows += one_config(name, factor, steps, xla, trees, args)
        print("\n".join(rows[-2:]), flush=True)
    append_results(HERE / "results" / "trial_phases.md", [*rows, ""])


if __name__ == "__main__":
    main()
