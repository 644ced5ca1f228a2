"""A worker process with a fake runner, for the tests of several workers on one study.

``python -m tests.support.fake_worker STORAGE STUDY EVENTS SECONDS EXPERIMENT`` joins the study
running EXPERIMENT (the one it was made with; shared cores: the fake runner uses none) and runs it
to its target. Each run appends a JSON line to
the EVENTS file when it starts and when it ends (pid, "baseline_seed_<n>" or "trial_<n>", the
configuration); a trial sleeps SECONDS first, so the workers' trials overlap. Nothing is
trained; no TensorFlow is imported.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from autotune.config import RunSettings, TrialConfig
from autotune.store.result import RunResult
from autotune.study.placement import Placement
from tests.support.fake_trials import fake_result


def event_runner(events: Path, seconds: float):
    def run(
        reference: str, config: TrialConfig, settings: RunSettings, log_dir: Path | None
    ) -> RunResult:
        name = log_dir.name if log_dir is not None else "?"
        record = {"pid": os.getpid(), "run": name, "config": config.to_dict()}
        with open(events, "a", encoding="utf-8") as out:
            out.write(json.dumps({**record, "event": "start"}) + "\n")
        if name.startswith("trial_"):
            time.sleep(seconds)
        result = fake_result(config, settings, window_spread=0.01)
        with open(events, "a", encoding="utf-8") as out:
            out.write(json.dumps({**record, "event": "end"}) + "\n")
        return result

    return run


def read_events(events: Path) -> list[dict]:
    """The EVENTS file's lines, oldest first."""
    if not events.exists():
        return []
    return [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]


def main(storage: str, study_name: str, events: str, seconds: str, experiment: str) -> None:
    import optuna

    from autotune.study.workers import join, target_of

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    runner = event_runner(Path(events), float(seconds))
    study = join(storage, study_name, experiment, placement=Placement(shared=True), runner=runner)
    study.optimize(n_trials=target_of(study))


if __name__ == "__main__":
    main(*sys.argv[1:])
