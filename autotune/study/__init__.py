"""Studies: the search loop and what it delegates to.

:class:`Study` (:mod:`autotune.study.study`) orchestrates; the baseline and noise floor
(:mod:`~autotune.study.baseline`), the identity a study refuses to mix
(:mod:`~autotune.study.identity`), crash recovery (:mod:`~autotune.study.recovery`), outcomes
known before a trial runs (:mod:`~autotune.study.prediction`) and the Pareto front's profiling
re-runs (:mod:`~autotune.study.profiling`) each have a module. :meth:`Study.run` runs baseline ->
search -> confirmation (:mod:`~autotune.study.running`), reporting to
:class:`~autotune.study.callbacks.StudyCallback` objects. No TensorFlow here.
"""

from __future__ import annotations

from autotune.exceptions import StudyError
from autotune.store.storage import DEFAULT_STORAGE
from autotune.study.callbacks import CallbackList, StudyCallback, StudyOutcome
from autotune.study.loading import load_study
from autotune.study.study import DEFAULT_TOLERANCE, Study, TrialRunner, isolated_runner

__all__ = [
    "DEFAULT_STORAGE",
    "DEFAULT_TOLERANCE",
    "CallbackList",
    "Study",
    "StudyCallback",
    "StudyError",
    "StudyOutcome",
    "TrialRunner",
    "isolated_runner",
    "load_study",
]
