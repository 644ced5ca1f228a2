"""The Python API end to end: tune the digits CNN, show the Pareto front, save the best recipe.

python experiments/tune_from_python.py [--trials N] [--storage URL] [--confirm-top K]
"""

from __future__ import annotations

import argparse

import autotune


class Printer(autotune.StudyCallback):
    """Prints each finished trial and the Pareto front (any ``on_*`` method may be left out)."""

    def on_trial_end(self, row: autotune.TrialRow) -> None:
        print(f"trial {row.number}: {row.state}", flush=True)

    def on_front(self, front: list[autotune.TrialRow]) -> None:
        for trial in front:
            assert trial.config is not None and trial.throughput is not None
            print(
                f"Pareto: trial {trial.number} {trial.config.describe()} "
                f"{trial.throughput.median:,.0f} samples/s, fidelity {trial.fidelity:.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--storage", default="sqlite:///autotune_api.db")
    parser.add_argument("--recipe", default="recipe.json")
    parser.add_argument("--confirm-top", type=int, default=1, help="0: recommend unconfirmed")
    args = parser.parse_args()

    study = autotune.Study("digits_cnn", space="quick", storage=args.storage)
    outcome = study.run(
        n_trials=args.trials, confirm_top=args.confirm_top, confirm_rounds=2, callbacks=[Printer()]
    )
    recipe = outcome.recipe
    recipe.save(args.recipe)
    print(f"best: {recipe.config.describe()}: {recipe.note} -> {args.recipe}")

    reopened = autotune.load_study(args.storage, study.name)
    assert reopened.finished_count() == study.finished_count()


if __name__ == "__main__":
    main()
