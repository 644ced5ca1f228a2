"""The Python API end to end: tune the digits CNN, show the Pareto front, save the best recipe.

python experiments/tune_from_python.py [--trials N] [--storage URL]
"""

from __future__ import annotations

import argparse

import autotune


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--storage", default="sqlite:///autotune_api.db")
    parser.add_argument("--recipe", default="recipe.json")
    args = parser.parse_args()

    study = autotune.Study("digits_cnn", space="quick", storage=args.storage)
    study.add_listener(lambda record: print(f"trial {record.number}: {record.state}", flush=True))
    study.optimize(n_trials=args.trials)
    for trial in study.pareto_front():
        assert trial.config is not None and trial.throughput is not None
        print(
            f"Pareto: trial {trial.number} {trial.config.describe()} "
            f"{trial.throughput.median:,.0f} samples/s, fidelity {trial.fidelity:.2f}"
        )
    recipe = study.best()
    recipe.save(args.recipe)
    print(f"best: {recipe.config.describe()}: {recipe.note} -> {args.recipe}")

    reopened = autotune.load_study(args.storage, study.name)
    assert reopened.finished_count() == study.finished_count()


if __name__ == "__main__":
    main()
