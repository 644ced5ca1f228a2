"""What a person reads of a stored study: the terminal (:mod:`~autotune.views.terminal`), the
HTML report (:mod:`~autotune.views.report`, one figure per module), the live dashboard
(:mod:`~autotune.views.dashboard`) and the JSON of ``--json`` (:mod:`~autotune.views.study_json`).
Views read records from :mod:`autotune.store` alone: they import nothing from ``study`` or
``trial``, and Plotly only behind :mod:`~autotune.views._plotly`."""
