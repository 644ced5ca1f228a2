"""Pure computations on what a trial measured, with no TensorFlow and no storage: the XProf
profile's step-time breakdown (:mod:`~autotune.analysis.profile`), XLA recompilations seen in a
log (:mod:`~autotune.analysis.recompilation`), head-to-head confirmation statistics
(:mod:`~autotune.analysis.head_to_head`) and which settings carry a speed-up
(:mod:`~autotune.analysis.attribution`)."""
