"""Benchmark: the loss-scale record of a float16 trial with XLA (issue 26 item 3).

Runs ``autotune trial EXPERIMENT --config {"precision": "mixed_float16", "jit_compile": true}``
(the base batch size) with the code of ``--revision`` in a fresh process per experiment and
reports what the trial recorded: throughput (samples/s, median and CI), whether it stopped early
or failed and why, and at each curve checkpoint the validation loss, the loss scale and the
optimizer steps skipped so far (a collapsing scale is its own failure kind, ``loss_scale``).
Results are appended to results/loss_scale.md with the machine, date, versions and command.

    python experiments/benchmarks/loss_scale.py [--experiments digits_cnn ...] [--revision HEAD]
        [--work /tmp/autotune-loss-scale]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from provenance import append_results  # type: ignore[import-not-found]
from time_to_answer import _autotune, commit_of, source_tree  # type: ignore[import-not-found]

HERE = Path(__file__).resolve().parent
CONFIG = {"precision": "mixed_float16", "jit_compile": True}


def _throughput(result: dict[str, Any]) -> str:
    estimate = result.get("throughput")
    if not estimate:
        return "-"
    return f"{estimate['median']:,.0f} ({estimate['low']:,.0f}-{estimate['high']:,.0f})"


def one_experiment(experiment: str, source: Path, args: argparse.Namespace) -> list[str]:
    """One float16 XLA trial of ``experiment``: its results section."""
    from autotune.bundled import load_experiment

    base = load_experiment(experiment).base_batch_size
    config = {"batch_size": base, **CONFIG}
    folder = args.work / experiment
    folder.mkdir(parents=True, exist_ok=True)
    run = _autotune(source, folder, "trial", experiment, "--config", json.dumps(config), "--json")
    (folder / "trial.log").write_text(run.stdout + run.stderr, encoding="utf-8")
    head = [f"### {experiment}", "", f"`{json.dumps(config)}`, code of {commit_of(args.revision)}."]
    if run.returncode != 0 or not run.stdout.strip():
        return [*head, "", f"The trial failed (exit {run.returncode}): see {folder}/trial.log.", ""]
    answer = json.loads(run.stdout)
    if answer.get("status") != "ok":
        kind, message = answer.get("kind"), answer.get("message")
        return [*head, "", f"The trial failed ({kind}): {message}", ""]
    result = answer["result"]
    rows = [
        f"| {p['samples']:,} | {p['val_loss']:.4f} | {p.get('loss_scale')} | "
        f"{p.get('skipped_steps')} |"
        for p in result.get("curve") or []
    ]
    effective = result.get("effective") or {}
    return [
        *head,
        "",
        f"- throughput {_throughput(result)} samples/s; loss scaling "
        f"{effective.get('loss_scaling')}; jit_compile {effective.get('jit_compile')}; "
        f"stopped early: {result.get('stopped_early') or 'no'}",
        "",
        "| samples seen | val loss | loss scale | steps skipped |",
        "| ---: | ---: | ---: | ---: |",
        *rows,
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--experiments", nargs="+", default=["digits_cnn", "tabular_mlp", "transformer"]
    )
    parser.add_argument("--revision", default="HEAD", help="the commit whose code runs")
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune-loss-scale"))
    parser.add_argument("--output", type=Path, default=HERE / "results" / "loss_scale.md")
    args = parser.parse_args()
    args.revision = commit_of(args.revision)  # fixed now: HEAD moves while the arms run
    source = source_tree(args.revision, args.work)
    sections: list[str] = []
    for experiment in args.experiments:
        sections += one_experiment(experiment, source, args)
        print("\n".join(sections[-12:]), flush=True)
    append_results(args.output, sections)


if __name__ == "__main__":
    main()
