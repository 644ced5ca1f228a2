"""The storage contract: what an autotune study writes into its Optuna storage, under which keys.

The study writes these keys and the records read them; both import them from here, so neither
imports the other's internals. No TensorFlow, no Optuna objects.

Study user attributes:

- ``autotune_identity`` (:data:`IDENTITY_KEY`): what a study refuses to mix on resume
  (experiment, space digest, measurement digest, objectives, tolerance, hardware fingerprint,
  TensorFlow and Keras versions).
- ``autotune_info`` (:data:`INFO_KEY`): provenance (experiment reference, space, measurement
  settings, hardware, versions, creation time).
- ``autotune_baseline`` (:data:`BASELINE_KEY`): ``{"config", "runs": {seed: RunResult dict},
  "noise_floor"}``.
- ``autotune_mismatches_allowed`` (:data:`MISMATCHES_KEY`): resumes allowed despite a different
  identity, each ``{"when", "differences"}``.
- ``autotune_profile:<n>`` (:data:`PROFILE_RERUN_PREFIX`): trial n's Pareto profiling re-run,
  ``{"profile", "profile_error", "input_ablation", "recompilation", "log_dir"}``.

Trial user attributes: the keys named ``*_ATTR`` below.
"""

from __future__ import annotations

from typing import Literal

#: The objectives, in Optuna's order, and their directions.
OBJECTIVES = ("throughput", "fidelity")
DIRECTIONS: tuple[Literal["maximize", "minimize"], ...] = ("maximize", "minimize")
#: The baseline's seeds: seed 0 is measured and compared with; all three give the noise floor.
BASELINE_SEEDS = (0, 1, 2)

IDENTITY_KEY = "autotune_identity"
INFO_KEY = "autotune_info"
BASELINE_KEY = "autotune_baseline"
MISMATCHES_KEY = "autotune_mismatches_allowed"
PROFILE_RERUN_PREFIX = "autotune_profile:"

#: The trial's configuration (:meth:`autotune.config.TrialConfig.to_dict`).
CONFIG_ATTR = "config"
#: Its samples/s estimate (:meth:`autotune.measure.Estimate.to_dict`).
THROUGHPUT_ATTR = "throughput"
#: Its fidelity distance (noise-floor units).
FIDELITY_ATTR = "fidelity"
#: Its RunResult dict without the configuration.
RESULT_ATTR = "result"
#: ``{"kind", "message", "log_tail"}`` of a failed trial; None while it runs.
FAILURE_ATTR = "failure"
#: Why the trial was pruned.
PRUNED_REASON_ATTR = "pruned_reason"
#: The number of the earlier trial whose measurement a duplicate configuration reuses.
DUPLICATE_OF_ATTR = "duplicate_of"
#: ``{"host", "pid", "started"}`` of the worker process running the trial.
WORKER_ATTR = "worker"
#: The trial's log folder.
LOG_DIR_ATTR = "log_dir"

#: The failure kind of a trial whose worker stopped while it ran; such a trial is retried.
INTERRUPTED = "interrupted"
INTERRUPTED_FAILURE = {
    "kind": INTERRUPTED,
    "message": "the trial's worker stopped while it ran (killed, lost heartbeat or Ctrl-C)",
    "log_tail": "",
}

__all__ = [
    "BASELINE_KEY",
    "BASELINE_SEEDS",
    "CONFIG_ATTR",
    "DIRECTIONS",
    "DUPLICATE_OF_ATTR",
    "FAILURE_ATTR",
    "FIDELITY_ATTR",
    "IDENTITY_KEY",
    "INFO_KEY",
    "INTERRUPTED",
    "INTERRUPTED_FAILURE",
    "LOG_DIR_ATTR",
    "MISMATCHES_KEY",
    "OBJECTIVES",
    "PROFILE_RERUN_PREFIX",
    "PRUNED_REASON_ATTR",
    "RESULT_ATTR",
    "THROUGHPUT_ATTR",
    "WORKER_ATTR",
]
