"""Benchmark: the remedies at a larger batch and a lower precision (issue 26), with and without.

Runs ``autotune run EXPERIMENT --space cpu`` twice from fresh folders with the same seed and
trial budget: once on the bundled ``cpu`` space, once on the same space with ``lr_rule`` added
(``--rules``) and, with ``--float32-layers``, ``float32_layers`` too (written to the work folder
as a space file). For each arm: the largest feasible batch size, the number of feasible
configurations (scored trials within the tolerance, duplicates left out), how many of them train
under a rule other than the experiment's or with float32 layers, the trials spent on either, the
wall time, and the answer (``autotune best --json``: the recommended configuration and its
confirmed speed-up with the interval). Results are appended to results/lr_rule.md with the
machine, date, versions and command.

    python experiments/benchmarks/lr_rule.py [--experiments digits_cnn ...] [--trials 15]
        [--rules experiment,sqrt,sqrt_warmup,linear_warmup]
        [--float32-layers none,norms,norms+attention] [--revision HEAD]
        [--work /tmp/autotune-lr-rule]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import tomllib
from provenance import append_results  # type: ignore[import-not-found]
from time_to_answer import (  # type: ignore[import-not-found]
    answer_text,
    commit_of,
    run_arm,
    source_tree,
)

from autotune.bundled import resolve_space
from autotune.space import Choice
from autotune.store.records import load_records

HERE = Path(__file__).resolve().parent
RULES = "experiment,sqrt,sqrt_warmup,linear_warmup"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def space_with_rules(folder: Path, rules: list[str], float32_layers: list[str]) -> Path:
    """The bundled ``cpu`` space with ``lr_rule`` searched over ``rules`` (and, where given,
    ``float32_layers`` over ``float32_layers``), as a space file."""
    cpu = resolve_space("cpu")
    added = "lr_rule" + (" and float32_layers" if float32_layers else "")
    lines = ['name = "cpu-remedies"', f'description = "{cpu.description} And {added}."', ""]
    lines.append("[parameters]")
    for name, parameter in cpu.parameters.items():
        if isinstance(parameter, Choice):
            lines.append(f"{name} = [{', '.join(_toml_value(v) for v in parameter.values)}]")
        else:
            low, high, step = parameter.low, parameter.high, parameter.multiple_of
            lines.append(f"{name} = {{ low = {low}, high = {high}, multiple_of = {step} }}")
    lines.append(f"lr_rule = [{', '.join(_toml_value(r) for r in rules)}]")
    if float32_layers:
        values = ", ".join(_toml_value(v) for v in float32_layers)
        lines.append(f"float32_layers = [{values}]")
    lines += ["", "[measure]", *(f"{k} = {_toml_value(v)}" for k, v in cpu.measure.items())]
    path = folder / "cpu-remedies.toml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tomllib.loads(path.read_text(encoding="utf-8"))  # a file the study can read
    return path


def arm_facts(storage: str) -> dict[str, Any]:
    """What the remedies changed in one arm's stored study."""
    records = load_records(storage)
    feasible = records.within(records.tolerance)

    def remedied(row: Any) -> bool:
        config = row.config
        return config is not None and (
            config.lr_rule != "experiment" or config.float32_layers != "none"
        )

    return {
        "largest": max((r.config.batch_size for r in feasible if r.config), default=None),
        "feasible": len(feasible),
        "feasible_remedied": sum(1 for r in feasible if remedied(r)),
        "remedy_trials": sum(1 for r in records.trials if remedied(r)),
        "base": records.baseline.config.batch_size if records.baseline.config else None,
    }


def one_experiment(
    experiment: str, source: Path, space_file: Path, args: argparse.Namespace
) -> list[str]:
    """Both arms of ``experiment``, with the package tree ``source``: its results section."""
    rows = []
    remedies = "lr_rule" + (" + float32_layers" if args.float32_layers else "")
    for arm, space in (("without", "cpu"), (f"with {remedies}", str(space_file))):
        args.space = space
        slug = arm.replace(" + ", "-").replace(" ", "-")
        run = run_arm(slug, source, experiment, args)
        folder = args.work / experiment / slug
        facts = arm_facts(f"sqlite:///{folder / 'study.db'}")
        rows.append(
            f"| {arm} | {facts['largest']} (base {facts['base']}) | {facts['feasible']} | "
            f"{facts['feasible_remedied']} | {facts['remedy_trials']} | {run.wall_seconds:,.0f} | "
            f"{answer_text(run.answer)} |"
        )
        print(rows[-1], flush=True)
    return [
        f"### {experiment}",
        "",
        f"{args.trials} trials, seed {args.seed}, profiling off, code of "
        f"{commit_of(args.revision)}; rules searched: {args.rules}; float32 layers searched: "
        f"{args.float32_layers or 'no'}.",
        "",
        "| arm | largest feasible batch | feasible configurations | of them remedied (another "
        "rule or float32 layers) | trials remedied | wall (s) | answer |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        *rows,
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", nargs="+", default=["digits_cnn"])
    parser.add_argument("--trials", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rules", default=RULES)
    parser.add_argument(
        "--float32-layers", default="", help="values to search too, e.g. none,norms,norms+attention"
    )
    parser.add_argument("--revision", default="HEAD", help="the commit whose code both arms run")
    parser.add_argument("--work", type=Path, default=Path("/tmp/autotune-lr-rule"))
    parser.add_argument("--output", type=Path, default=HERE / "results" / "lr_rule.md")
    args = parser.parse_args()
    args.revision = commit_of(args.revision)  # fixed now: HEAD moves while the arms run
    layers = [v for v in args.float32_layers.split(",") if v]
    space_file = space_with_rules(args.work, args.rules.split(","), layers)
    source = source_tree(args.revision, args.work)  # the working tree may change meanwhile
    for experiment in args.experiments:
        append_results(args.output, one_experiment(experiment, source, space_file, args))


if __name__ == "__main__":
    main()
